//! The rank overview of a training run (`#ranks`): a line saying how ranks were told apart, a
//! progress line per rank while they are read, a bar per rank (peak allocated over peak
//! reserved, outliers marked with their reasons), the ranks' curves overlaid and as small
//! multiples, and what differs between each outlier and the median rank (the top stacks at both
//! peaks here; in full, by core's compare, once both are opened with [`PageInput::CompareRank`]). Its
//! bindings turn a click on a rank into [`PageInput::FocusRank`]; painting writes SVG markup (attributes only: the
//! page's Content-Security-Policy allows no inline styles) when the run's generation changed,
//! and marks `memviz:ranks-ready` once every rank's bar is shown. Geometry, outliers and focus
//! are [`memviz_view::ranks`].

use memviz_view::state::PageInput;
use std::fmt::Write as _;

use memviz_core::format::{escape_html as esc, human_size};
use memviz_core::ranks::{StackBytes, MOMENT_STACKS};
use memviz_view::ranks::{stack_differences, RankStatus, Run};
use wasm_bindgen::JsCast;
use web_sys::Element;

use crate::input::{bind, Binding, Input};
use crate::paint::Frame;

/// What the overview wrote last.
#[derive(Default)]
pub struct Memo {
    /// What was painted last.
    painted: Option<Painted>,
    /// The run whose `memviz:ranks-ready` was marked (runs are numbered by the page).
    ready_marked: Option<u64>,
}

/// Width and height of one small multiple, and of the overlay (CSS px of the SVG's own units).
const MULTIPLE_PX: (f64, f64) = (220.0, 60.0);
const OVERLAY_PX: (f64, f64) = (900.0, 180.0);
/// Height of one bar row, and the bars' length at most.
const BAR_ROW_PX: f64 = 22.0;
const BAR_LABEL_PX: f64 = 150.0;
const BAR_PX: f64 = 560.0;

/// Bytes in binary units.
fn size(bytes: u64) -> String {
    human_size(bytes as f64)
}

/// What a click on the overview asks: to compare a rank with the median one (a button's
/// `data-compare`), else to focus the rank of the nearest element with a `data-index`.
fn clicked(e: &web_sys::MouseEvent) -> Option<Input> {
    let el: Element = e.target()?.dyn_into().ok()?;
    if let Some(b) = el.closest("[data-compare]").ok()? {
        return b.get_attribute("data-compare")?.parse().ok().map(PageInput::CompareRank).map(Input::Page);
    }
    el.closest("[data-index]")
        .ok()??
        .get_attribute("data-index")?
        .parse()
        .ok()
        .map(PageInput::FocusRank)
        .map(Input::Page)
}

/// A click on a rank's bar or curve focuses it; the toolbar's button shows or leaves the overview.
pub fn bindings(document: &web_sys::Document) -> Vec<Binding> {
    let mut l = Vec::new();
    if let Some(r) = document.get_element_by_id("ranks") {
        l.push(bind(r.as_ref(), "click", clicked));
    }
    if let Some(b) = document.get_element_by_id("ranks-toggle") {
        l.push(bind(b.as_ref(), "click", |_: &web_sys::Event| Some(Input::Page(PageInput::ToggleOverview))));
    }
    l
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

/// The curves overlaid, and one small multiple per rank.
fn curves_markup(run: &Run, outliers: &[(usize, Vec<&'static str>)]) -> String {
    let by = if run.by_iteration() { "iteration" } else { "trace entry" };
    let (ow, oh) = OVERLAY_PX;
    let mut s = format!(
        "<p class=\"ranks-caption\">Live bytes of every rank, aligned by {by} (highest {}).</p>\
         <svg id=\"ranks-overlay\" data-aligned-by=\"{by}\" viewBox=\"0 0 {ow} {oh}\" width=\"{ow}\" height=\"{oh}\">",
        size(run.curve_scale_bytes())
    );
    for i in 0..run.ranks.len() {
        let class = if outliers.iter().any(|o| o.0 == i) { "curve outlier" } else { "curve" };
        let _ = write!(
            s,
            "<polyline class=\"{class}\" data-index=\"{i}\" points=\"{}\"/>",
            points(&run.curve_px(i, ow, oh))
        );
    }
    s.push_str("</svg><div id=\"ranks-multiples\">");
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
        let (at, matched) = match memviz_view::ranks::matched_iteration(d, md) {
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

/// What [`sync`] painted from: the run's (generation, focused, overview shown), and the count
/// of full models in the page.
type Painted = (Option<(u64, Option<usize>, bool)>, usize);

/// Brings `#ranks` and the toolbar's button in line with the state (nothing when it is as
/// painted, so a frame of the timeline costs no DOM call here).
pub fn sync(fr: &Frame<'_>, memo: &mut Memo) {
    let doc = &fr.ui.document;
    let run = fr.state.run();
    let key: Painted = (run.map(|r| (r.generation, r.focused, r.overview)), fr.state.files().len());
    if memo.painted == Some(key) {
        return;
    }
    let before = memo.painted.replace(key);
    let _ = fr.ui.main.set_attribute("data-resident-models", &key.1.to_string());
    let shown = fr.state.overview_shown();
    let classes = fr.ui.main.class_list();
    let _ = if shown { classes.add_1("ranks-shown") } else { classes.remove_1("ranks-shown") };
    if let Some(b) = doc.get_element_by_id("ranks-toggle") {
        let _ = if run.is_some() { b.remove_attribute("hidden") } else { b.set_attribute("hidden", "") };
        b.set_text_content(Some(if shown { "Timeline" } else { "Ranks" }));
    }
    let Some(section) = doc.get_element_by_id("ranks") else { return };
    let Some(run) = run else {
        if before.is_some_and(|b| b.0.is_some()) {
            section.set_inner_html("");
        }
        return;
    };
    let was = before.and_then(|b| b.0);
    if was.map(|w| (w.0, w.1)) != Some((run.generation, run.focused)) {
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
        section.set_inner_html(&html);
        let _ = section.set_attribute("data-all-read", if run.all_done() { "1" } else { "0" });
    }
    if run.all_done() && memo.ready_marked != Some(run.id) {
        memo.ready_marked = Some(run.id);
        fr.ui.mark("memviz:ranks-ready");
    }
}
