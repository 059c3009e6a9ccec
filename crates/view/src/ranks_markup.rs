//! The rank overview's markup (`#ranks`), written from a [`Run`]: a progress line per rank
//! while they are read, a bar per rank (peak allocated over peak reserved, outliers marked with
//! their reasons), the ranks' curves overlaid and as small multiples, and what differs between
//! each outlier and the median rank. Attributes only (the page's Content-Security-Policy allows
//! no inline styles); `data-index` names the rank a click focuses, `data-compare` the outlier a
//! button compares with the median.

use std::fmt::Write as _;

use memviz_core::format::{escape_html as esc, human_size};
use memviz_core::ranks::{StackBytes, MOMENT_STACKS};

use crate::ranks::{stack_differences, RankStatus, Run};

/// Width and height of one small multiple (CSS px of the SVG's own units).
const MULTIPLE_PX: (f64, f64) = (220.0, 60.0);
/// Height of one bar row, and the bars' length at most.
const BAR_ROW_PX: f64 = 22.0;
const BAR_LABEL_PX: f64 = 150.0;
const BAR_PX: f64 = 560.0;

/// Bytes in binary units.
fn size(bytes: u64) -> String {
    human_size(bytes as f64)
}

/// The polyline's points of a curve.
fn points(pts: &[(f64, f64)]) -> String {
    let mut s = String::new();
    for (x, y) in pts {
        let _ = write!(s, "{x:.1},{y:.1} ");
    }
    s
}

/// The progress lines, while ranks are being read.
fn progress_markup(run: &Run) -> String {
    let mut s = String::from("<ol id=\"ranks-progress\">");
    for (i, e) in run.ranks.iter().enumerate() {
        let state = match &e.status {
            RankStatus::Waiting => "waiting".to_string(),
            RankStatus::Reading(f) => format!("reading {:.0}%", f * 100.0),
            RankStatus::Done(_) => "read".to_string(),
            RankStatus::Failed(why) => format!("failed: {why}"),
        };
        let _ = write!(
            s,
            "<li data-index=\"{i}\" data-state=\"{}\">{} · {} · {}</li>",
            match e.status {
                RankStatus::Waiting => "waiting",
                RankStatus::Reading(_) => "reading",
                RankStatus::Done(_) => "done",
                RankStatus::Failed(_) => "failed",
            },
            esc(&e.label()),
            esc(&e.path),
            esc(&state)
        );
    }
    s.push_str("</ol>");
    s
}

/// A bar per rank: peak allocated (dark) over peak reserved (light), outliers' reasons after.
fn bars_markup(run: &Run, outliers: &[(usize, Vec<&'static str>)]) -> String {
    let h = BAR_ROW_PX * run.ranks.len() as f64;
    let w = BAR_LABEL_PX + BAR_PX + 260.0;
    let mut s = format!("<svg id=\"ranks-bars\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"list\">");
    for (i, e) in run.ranks.iter().enumerate() {
        let y = BAR_ROW_PX * i as f64;
        let reasons = outliers.iter().find(|o| o.0 == i).map(|o| o.1.join(",")).unwrap_or_default();
        let (a, r) = run.bar_shares(i);
        let (pa, pr) = e.digest().map_or((0, 0), |d| (d.peak_allocated_bytes, d.peak_reserved_bytes));
        let focused = if run.focused == Some(i) { " focused" } else { "" };
        let outlier = if reasons.is_empty() { "" } else { " outlier" };
        let _ = write!(
            s,
            "<g class=\"rank-bar{focused}{outlier}\" role=\"listitem\" data-index=\"{i}\" data-rank=\"{}\" \
             data-peak-allocated-bytes=\"{pa}\" data-peak-reserved-bytes=\"{pr}\" data-outlier=\"{reasons}\">\
             <title>{}: peak allocated {}, peak reserved {}</title>\
             <rect class=\"hit\" x=\"0\" y=\"{y}\" width=\"{w}\" height=\"{BAR_ROW_PX}\"/>\
             <text class=\"label\" x=\"4\" y=\"{}\">{}</text>\
             <rect class=\"reserved\" x=\"{BAR_LABEL_PX}\" y=\"{}\" width=\"{:.1}\" height=\"{}\"/>\
             <rect class=\"allocated\" x=\"{BAR_LABEL_PX}\" y=\"{}\" width=\"{:.1}\" height=\"{}\"/>\
             <text class=\"value\" x=\"{}\" y=\"{}\">{} / {}{}</text></g>",
            e.rank,
            esc(&e.label()),
            size(pa),
            size(pr),
            y + 15.0,
            esc(&e.label()),
            y + 3.0,
            r * BAR_PX,
            BAR_ROW_PX - 6.0,
            y + 6.0,
            a * BAR_PX,
            BAR_ROW_PX - 12.0,
            BAR_LABEL_PX + BAR_PX + 8.0,
            y + 15.0,
            size(pa),
            size(pr),
            if reasons.is_empty() { String::new() } else { format!(" · {}", reasons.replace(',', ", ")) },
        );
    }
    s.push_str("</svg>");
    s
}

/// The curves overlaid ([`crate::ranks_chart`]), and one small multiple per rank.
fn curves_markup(run: &Run, outliers: &[(usize, Vec<&'static str>)]) -> String {
    let mut s = crate::ranks_chart::overlay_markup(run, outliers);
    s.push_str("<div id=\"ranks-multiples\">");
    let (mw, mh) = MULTIPLE_PX;
    for (i, e) in run.ranks.iter().enumerate() {
        let class = if outliers.iter().any(|o| o.0 == i) { "multiple outlier" } else { "multiple" };
        let _ = write!(
            s,
            "<figure class=\"{class}\" data-index=\"{i}\"><svg viewBox=\"0 0 {mw} {mh}\" width=\"{mw}\" height=\"{mh}\">\
             <polyline class=\"curve\" points=\"{}\"/></svg><figcaption>{}</figcaption></figure>",
            points(&run.curve_px(i, mw, mh)),
            esc(&e.label())
        );
    }
    s.push_str("</div>");
    s
}

/// A side's bytes of one stack: exact, or "≤ bound" where its digest did not keep the stack.
fn stack_bytes_cell(b: StackBytes) -> String {
    match b {
        StackBytes::Exact(v) => format!("<td data-bytes=\"{v}\">{}</td>", size(v)),
        StackBytes::AtMost(v) => format!(
            "<td data-at-most-bytes=\"{v}\" title=\"Not among the {MOMENT_STACKS} largest stacks kept for this rank's \
             moment: at most the largest one left out\">≤ {}</td>",
            size(v)
        ),
    }
}

/// For each outlier, the stacks live at its peak against the median rank's at the matched
/// moment (the peak of the same iteration, else its own peak): the outlier minus the median,
/// as Compare's B − A with the median as A.
fn differs_markup(run: &Run, outliers: &[(usize, Vec<&'static str>)]) -> String {
    let mut s = String::from("<div id=\"ranks-differs\">");
    for (i, reasons) in outliers {
        let (Some(e), Some(m)) = (run.ranks.get(*i), run.median_of(*i).and_then(|m| run.ranks.get(m))) else {
            continue;
        };
        let (Some(d), Some(md)) = (e.digest(), m.digest()) else { continue };
        let (at, matched) = match crate::ranks::matched_iteration(d, md) {
            Some(k) => (
                format!(
                    "at {}'s peak and the median's peak in the same iteration (iteration {})",
                    esc(&e.label()),
                    k + 1
                ),
                k + 1,
            ),
            None => ("at their peaks".to_string(), 0),
        };
        let _ = write!(
            s,
            "<section class=\"differs\" data-rank=\"{}\" data-matched-iteration=\"{matched}\"><h3>What differs: {} ({}) \
             against {}, the median, {at}</h3><button type=\"button\" data-compare=\"{i}\">Compare the two in full \
             (Insights, Compare: A the median, B {}, matched by iteration)</button><table><tr><th>stack</th><th>{}</th><th>{}</th>\
             <th>difference ({} − median)</th></tr>",
            e.rank,
            esc(&e.label()),
            esc(&reasons.join(", ")),
            esc(&m.label()),
            esc(&e.label()),
            esc(&e.label()),
            esc(&m.label()),
            esc(&e.label())
        );
        let rows = stack_differences(d, md);
        if rows.is_empty() {
            let _ = write!(
                s,
                "<tr class=\"differs-none\"><td colspan=\"4\">Their peaks hold the same bytes for every stack: {} is an \
                 outlier for {}, not for what is live at its peak. Compare the two in full to see every moment.</td></tr>",
                esc(&e.label()),
                esc(&reasons.join(", "))
            );
        }
        for r in rows {
            let delta = match r.delta_bytes() {
                Some(d) => format!(
                    "<td data-delta-bytes=\"{d}\">{}{}</td>",
                    if d >= 0 { "+" } else { "−" },
                    size(d.unsigned_abs().try_into().unwrap_or(u64::MAX))
                ),
                None => "<td title=\"One side did not keep this stack: its bytes are a bound\">?</td>".to_string(),
            };
            let _ = write!(
                s,
                "<tr data-label=\"{}\"><td>{}</td>{}{}{delta}</tr>",
                esc(&r.label),
                esc(&r.label),
                stack_bytes_cell(r.outlier),
                stack_bytes_cell(r.median),
            );
        }
        s.push_str("</table></section>");
    }
    s.push_str("</div>");
    s
}

/// The whole overview of `run`: how ranks were told apart, the progress, the bars, and once every
/// rank is read, the curves and what differs.
pub fn overview_html(run: &Run) -> String {
    let outliers = run.outliers();
    let mut html = format!(
        "<p id=\"ranks-rule\" data-rule=\"{}\">{} ranks · {} · {} of {} read</p>",
        run.rule.name(),
        run.ranks.len(),
        esc(run.rule_text()),
        run.done_count(),
        run.ranks.len()
    );
    html.push_str(&progress_markup(run));
    html.push_str(&bars_markup(run, &outliers));
    html.push_str("<p class=\"ranks-caption\">Click a rank, or press [ and ], to open its timeline.</p>");
    if run.all_done() {
        html.push_str(&curves_markup(run, &outliers));
        html.push_str(&differs_markup(run, &outliers));
    } else {
        // Drawn once, when every rank is in: the outliers are only known then.
        html.push_str("<p class=\"ranks-caption\">The curves and what differs follow once every rank is read.</p>");
    }
    html
}

#[cfg(test)]
#[path = "ranks_markup_tests.rs"]
mod tests;
