//! The rank overview's overlaid curves made readable (`#ranks-overlay`): a byte axis and an
//! iteration (or trace entry) axis, one colour and dash per rank, a curve that several ranks
//! share drawn in their colours in turn (so equal curves stay apart), a legend that names the ranks whose curves are the same, a readout of every rank's
//! bytes in the column under the pointer (shown by the style sheet on hover: no script), and
//! each outlier's reason in words. Attributes only (the page's Content-Security-Policy allows
//! no inline styles: colours and dashes are SVG presentation attributes).

use std::fmt::Write as _;

use memviz_core::format::{escape_html as esc, human_size};

use crate::axis;
use crate::ranks::{stack_differences, RankEntry, Run};

/// The overlay's size (its SVG units, CSS px at full width) and its plot area's margins.
const OVERLAY_PX: (f64, f64) = (900.0, 200.0);
const LEFT_PX: f64 = 66.0;
const RIGHT_PX: f64 = 10.0;
const TOP_PX: f64 = 8.0;
const BOTTOM_PX: f64 = 24.0;
/// Columns the readout is read in.
const COLUMNS: usize = 60;
/// Ranks a column's readout lists by name (the rest are counted).
const READOUT_RANKS: usize = 12;
/// Colours of the curves (Tableau 10), then dashes for the next ones.
const COLOURS: [&str; 8] = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7"];
const DASHES: [&str; 4] = ["", "6 3", "2 2", "8 2 2 2"];
/// The outliers' colour.
const OUTLIER_COLOUR: &str = "#e15759";

/// Colour and dash of rank entry `i` (`outlier`: the outliers' colour).
pub fn stroke_of(i: usize, outlier: bool) -> (&'static str, &'static str) {
    if outlier {
        // One colour for every outlier: their dashes tell them apart.
        return (OUTLIER_COLOUR, DASHES[i % DASHES.len()]);
    }
    (COLOURS[i % COLOURS.len()], DASHES[(i / COLOURS.len()) % DASHES.len()])
}

/// Length of each rank's turn along a curve that several ranks share.
const SEGMENT_PX: f64 = 5.0;

/// Where entry `i` takes its turn along a curve it shares with others: (its place, how many share
/// it), for a dash pattern that leaves each of them a segment in turn, so a curve shared by five
/// ranks shows five colours; `None` for a curve of its own.
pub fn interleaved(groups: &[Vec<usize>], i: usize) -> Option<(usize, usize)> {
    let g = groups.iter().find(|g| g.contains(&i)).filter(|g| g.len() > 1)?;
    Some((g.iter().position(|&k| k == i)?, g.len()))
}

/// Entries whose curves are the same (same samples on the same axis), each group in index order,
/// groups in order of their first entry.
pub fn same_curves(run: &Run) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, e) in run.ranks.iter().enumerate() {
        let Some(d) = e.digest() else { continue };
        let same = groups.iter_mut().find(|g| {
            run.ranks.get(g[0]).and_then(RankEntry::digest).is_some_and(|o| {
                o.curve == d.curve && o.iteration_starts == d.iteration_starts && o.entries == d.entries
            })
        });
        match same {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// Each entry's highest bytes per readout column of the shared x domain (a column without a
/// sample keeps the bytes of the one before it); `None` for entries not read.
pub fn column_bytes(run: &Run, columns: usize) -> Vec<Option<Vec<u64>>> {
    let by_it = run.by_iteration();
    let (x0, x1) = run.x_domain();
    let width = (x1 - x0).max(f64::MIN_POSITIVE);
    run.ranks
        .iter()
        .map(|e| {
            let d = e.digest()?;
            let mut out: Vec<Option<u64>> = vec![None; columns];
            for &(entry, bytes) in &d.curve {
                let x = Run::x_of(d, entry, by_it);
                let c = (((x - x0) / width) * columns as f64).floor().clamp(0.0, (columns - 1) as f64) as usize;
                out[c] = Some(out[c].map_or(bytes, |b: u64| b.max(bytes)));
            }
            let mut last = 0;
            Some(
                out.into_iter()
                    .map(|b| {
                        last = b.unwrap_or(last);
                        last
                    })
                    .collect(),
            )
        })
        .collect()
}

/// The x axis's label of position `x` of the shared domain.
fn x_label(x: f64, by_iteration: bool) -> String {
    if by_iteration {
        // Iteration k (0-based) spans [k, k + 1): its name is k + 1.
        format!("iteration {:.1}", x + 1.0)
    } else {
        format!("entry {}", axis::step_label(x))
    }
}

/// The axes: byte ticks with grid lines, and iteration or entry ticks.
fn axes_markup(run: &Run, s: &mut String, pw: f64, ph: f64) {
    let top = run.curve_scale_bytes().max(1) as f64;
    let (step, ticks) = axis::byte_ticks(top, 6);
    let labels = axis::byte_axis_labels(step, &ticks);
    s.push_str("<g class=\"axis y-axis\">");
    for (t, label) in ticks.iter().zip(&labels) {
        let y = TOP_PX + ph - t / top * ph;
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{LEFT_PX}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT_PX + pw,
            LEFT_PX - 6.0,
            y + 4.0,
            esc(label)
        );
    }
    s.push_str("</g><g class=\"axis x-axis\">");
    let by_it = run.by_iteration();
    let (x0, x1) = run.x_domain();
    let (_, xt) = axis::x_ticks(x0, x1, 8, false);
    for t in xt {
        let x = LEFT_PX + (t - x0) / (x1 - x0).max(f64::MIN_POSITIVE) * pw;
        let label = if by_it { format!("{}", t.round() as i64 + 1) } else { axis::step_label(t) };
        let _ = write!(
            s,
            "<line class=\"tick\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            TOP_PX + ph,
            TOP_PX + ph + 4.0,
            TOP_PX + ph + 16.0,
            esc(&label)
        );
    }
    let _ = write!(
        s,
        "<text class=\"axis-name\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text></g>",
        LEFT_PX + pw,
        TOP_PX + ph + 16.0 - 14.0,
        if by_it { "iteration →" } else { "trace entry →" }
    );
}

/// The readout columns, over the curves: each a transparent rectangle and, shown on hover, a
/// cursor line and every rank's highest bytes in the column, largest first.
fn readout_markup(run: &Run, s: &mut String, pw: f64, ph: f64) {
    let bytes = column_bytes(run, COLUMNS);
    let (x0, x1) = run.x_domain();
    let by_it = run.by_iteration();
    let cw = pw / COLUMNS as f64;
    for c in 0..COLUMNS {
        let x = LEFT_PX + c as f64 * cw;
        let mut at: Vec<(u64, usize)> =
            bytes.iter().enumerate().filter_map(|(i, b)| Some((*b.as_ref()?.get(c)?, i))).collect();
        at.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let data: Vec<String> = at.iter().map(|(b, i)| format!("{i}:{b}")).collect();
        let pos = x0 + (c as f64 + 0.5) / COLUMNS as f64 * (x1 - x0);
        let _ = write!(
            s,
            "<g class=\"col\" data-column=\"{c}\" data-bytes=\"{}\"><rect class=\"col-hit\" x=\"{x:.1}\" y=\"{TOP_PX}\" \
             width=\"{cw:.2}\" height=\"{ph:.1}\"/><g class=\"readout\"><line class=\"cursor\" x1=\"{:.1}\" x2=\"{:.1}\" \
             y1=\"{TOP_PX}\" y2=\"{:.1}\"/>",
            data.join(","),
            x + cw / 2.0,
            x + cw / 2.0,
            TOP_PX + ph
        );
        let lines = at.len().min(READOUT_RANKS) + 1 + usize::from(at.len() > READOUT_RANKS);
        let box_w = 210.0;
        let bx =
            if x + cw / 2.0 + 8.0 + box_w > LEFT_PX + pw { x + cw / 2.0 - 8.0 - box_w } else { x + cw / 2.0 + 8.0 };
        let _ = write!(
            s,
            "<rect class=\"readout-box\" x=\"{bx:.1}\" y=\"{TOP_PX}\" width=\"{box_w}\" height=\"{:.1}\"/>\
             <text class=\"readout-head\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            lines as f64 * 13.0 + 6.0,
            bx + 6.0,
            TOP_PX + 13.0,
            esc(&x_label(pos, by_it))
        );
        for (k, (b, i)) in at.iter().take(READOUT_RANKS).enumerate() {
            let Some(e) = run.ranks.get(*i) else { continue };
            let (colour, _) = stroke_of(*i, !run.reasons_of(*i).is_empty());
            let y = TOP_PX + 13.0 * (k as f64 + 2.0);
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{y:.1}\"><tspan fill=\"{colour}\">■</tspan> {} · {}</text>",
                bx + 6.0,
                esc(&e.label()),
                esc(&human_size(*b as f64))
            );
        }
        if at.len() > READOUT_RANKS {
            let y = TOP_PX + 13.0 * (READOUT_RANKS as f64 + 2.0);
            let _ =
                write!(s, "<text x=\"{:.1}\" y=\"{y:.1}\">… and {} more</text>", bx + 6.0, at.len() - READOUT_RANKS);
        }
        s.push_str("</g></g>");
    }
}

/// The overlay: axes, one curve per rank (outliers drawn thicker, on top of the others), the
/// readout columns; the legend after it.
pub fn overlay_markup(run: &Run, outliers: &[(usize, Vec<&'static str>)]) -> String {
    let by = if run.by_iteration() { "iteration" } else { "trace entry" };
    let (ow, oh) = OVERLAY_PX;
    let (pw, ph) = (ow - LEFT_PX - RIGHT_PX, oh - TOP_PX - BOTTOM_PX);
    let mut s = format!(
        "<p class=\"ranks-caption\">Live bytes of every rank, aligned by {by} (highest {}). Point at the chart to \
         read every rank's bytes there; click a rank below to open its timeline.</p>\
         <svg id=\"ranks-overlay\" data-aligned-by=\"{by}\" viewBox=\"0 0 {ow} {oh}\" width=\"{ow}\" height=\"{oh}\">",
        human_size(run.curve_scale_bytes() as f64)
    );
    axes_markup(run, &mut s, pw, ph);
    let is_outlier = |i: usize| outliers.iter().any(|o| o.0 == i);
    let groups = same_curves(run);
    let _ = write!(s, "<g class=\"curves\" transform=\"translate({LEFT_PX} {TOP_PX})\">");
    // Outliers last: on top of the others.
    let order = (0..run.ranks.len()).filter(|&i| !is_outlier(i)).chain((0..run.ranks.len()).filter(|&i| is_outlier(i)));
    for i in order {
        let outlier = is_outlier(i);
        let (colour, dash) = stroke_of(i, outlier);
        let class = if outlier { "curve outlier" } else { "curve" };
        let dash = match interleaved(&groups, i) {
            Some((k, n)) => format!(
                " stroke-dasharray=\"{SEGMENT_PX} {}\" stroke-dashoffset=\"{}\"",
                SEGMENT_PX * (n - 1) as f64,
                SEGMENT_PX * k as f64
            ),
            None if dash.is_empty() => String::new(),
            None => format!(" stroke-dasharray=\"{dash}\""),
        };
        let mut pts = String::new();
        for (x, y) in run.curve_px(i, pw, ph) {
            let _ = write!(pts, "{x:.1},{y:.1} ");
        }
        let _ =
            write!(s, "<polyline class=\"{class}\" data-index=\"{i}\" stroke=\"{colour}\"{dash} points=\"{pts}\"/>");
    }
    s.push_str("</g>");
    // Over the curves, so that the readout shows above them wherever the pointer is.
    readout_markup(run, &mut s, pw, ph);
    s.push_str("</svg>");
    s.push_str(&legend_markup(run, outliers));
    s
}

/// The legend: each rank's colour and dash, its peak, the ranks whose curve it shares, and why
/// an outlier is one, in words.
fn legend_markup(run: &Run, outliers: &[(usize, Vec<&'static str>)]) -> String {
    let groups = same_curves(run);
    let mut s = String::from("<ul id=\"ranks-legend\">");
    for (i, e) in run.ranks.iter().enumerate() {
        let Some(d) = e.digest() else { continue };
        let reasons = outliers.iter().find(|o| o.0 == i).map(|o| o.1.clone()).unwrap_or_default();
        let (colour, dash) = stroke_of(i, !reasons.is_empty());
        let dash = if dash.is_empty() { String::new() } else { format!(" stroke-dasharray=\"{dash}\"") };
        let same: Vec<String> = groups
            .iter()
            .find(|g| g.contains(&i))
            .map(|g| g.iter().filter(|&&k| k != i).filter_map(|&k| Some(run.ranks.get(k)?.label())).collect())
            .unwrap_or_default();
        let same_text = match same.len() {
            0 => String::new(),
            1..=4 => format!(" · the same curve as {}", esc(&same.join(", "))),
            n => format!(" · the same curve as {n} other ranks"),
        };
        let why =
            if reasons.is_empty() { String::new() } else { format!(" · {}", esc(&outlier_why(run, i, &reasons))) };
        let _ = write!(
            s,
            "<li data-index=\"{i}\" class=\"{}\" data-same-as=\"{}\"><svg viewBox=\"0 0 26 8\" width=\"26\" height=\"8\">\
             <line x1=\"0\" y1=\"4\" x2=\"26\" y2=\"4\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/></svg>{} · peak {}{same_text}{why}</li>",
            if reasons.is_empty() { "" } else { "outlier" },
            same.len(),
            esc(&e.label()),
            esc(&human_size(d.peak_allocated_bytes as f64)),
        );
    }
    s.push_str("</ul>");
    s
}

/// Why entry `i` is an outlier, in words: its peak against the median rank's, and the stack
/// that differs most at the matched moment.
pub fn outlier_why(run: &Run, i: usize, reasons: &[&'static str]) -> String {
    let (Some(e), Some(m)) = (run.ranks.get(i), run.median_of(i).and_then(|m| run.ranks.get(m))) else {
        return format!("an outlier: {}", reasons.join(", "));
    };
    let (Some(d), Some(md)) = (e.digest(), m.digest()) else {
        return format!("an outlier: {}", reasons.join(", "));
    };
    let ratio = d.peak_allocated_bytes as f64 / (md.peak_allocated_bytes.max(1)) as f64;
    let mut s = format!(
        "an outlier ({}): peak {}, {ratio:.1}× the median {}'s {}",
        reasons.join(", "),
        human_size(d.peak_allocated_bytes as f64),
        m.label(),
        human_size(md.peak_allocated_bytes as f64)
    );
    let largest = stack_differences(d, md)
        .into_iter()
        .filter_map(|r| Some((r.delta_bytes()?, r.label)))
        .max_by_key(|p| p.0.abs());
    if let Some((delta, label)) = largest.filter(|p| p.0 != 0) {
        let sign = if delta >= 0 { "+" } else { "−" };
        let _ = write!(
            s,
            "; the largest difference at its peak: {sign}{} at {label}",
            human_size(delta.unsigned_abs() as f64)
        );
    }
    s
}

#[cfg(test)]
#[path = "ranks_chart_tests.rs"]
mod tests;
