//! The Compare tab: the file shown (A) against another open file (B). Both total curves on one x
//! axis (aligned by iteration when both have iterations) and, at matched points (both peaks, each
//! iteration's peak, the end), the source lines holding more live bytes in one file than in the
//! other, in both directions; or, compared by the Live set's grouping, the groups holding more,
//! each row a handle on A's allocations of its group. When the files were recorded with different settings, a warning
//! above the results says how (and whether stacks were matched on their Python frames only).

use std::fmt::Write;

use memviz_core::analysis::compare::{self, Alignment, StackDiff};
use memviz_core::analysis::{signed_size_text, size_text};
use web_sys::HtmlCanvasElement;

use super::{chart, entry_link, esc};
use crate::paint::Frame;

/// Chart size when the canvas is not laid out, CSS px.
const CHART_CSS_PX: (f64, f64) = (390.0, 130.0);

/// Which table of which point rows are in: a row by source line marks its allocations in both
/// timelines of the Compare view; a row of a grouped comparison highlights A's allocations of
/// its group.
pub struct Rows<'a> {
    /// The matched point (index into the comparison's points).
    pub point: usize,
    /// The "More in B" table (else "More in A").
    pub more_in_b: bool,
    /// The grouping's title, when grouped.
    pub grouped: Option<&'a str>,
    /// The row picked for the Compare view, if of this table.
    pub picked: Option<usize>,
}

/// One table of differences.
pub fn diff_rows(title: &str, class: &str, diffs: &[StackDiff], rows: &Rows<'_>, s: &mut String) {
    let column = rows.grouped.unwrap_or("site");
    let _ = write!(
        s,
        "<h4>{title}</h4><table class=\"an-table an-nums {class}\"><thead><tr><th class=\"num\">B − A</th><th class=\"num\">A</th><th class=\"num\">B</th><th class=\"site\">{}</th></tr></thead><tbody>",
        esc(column)
    );
    if diffs.is_empty() {
        s.push_str("<tr><td colspan=\"4\">none</td></tr>");
    }
    let (point, side) = (rows.point, if rows.more_in_b { 'b' } else { 'a' });
    for (i, d) in diffs.iter().enumerate() {
        let handle = match rows.grouped {
            Some(_) => format!(
                " data-act=\"cmp-group\" data-point=\"{point}\" data-side=\"{side}\" data-i=\"{i}\" data-key=\"cmp:{point}:{side}:{i}\" title=\"Click to highlight A's allocations of this group\""
            ),
            None => format!(
                " data-act=\"cmp-row\" data-point=\"{point}\" data-side=\"{side}\" data-i=\"{i}\"{} title=\"Click to mark these allocations on both timelines of the Compare view (again: unmark)\"",
                if rows.picked == Some(i) { " data-picked=\"1\"" } else { "" }
            ),
        };
        let _ = write!(
            s,
            "<tr class=\"cmp-diff\" data-delta-bytes=\"{}\" data-a-bytes=\"{}\" data-b-bytes=\"{}\"{handle}><td class=\"num\" title=\"{} bytes\">{}</td><td class=\"num\" title=\"{} bytes, {} allocations\">{}</td><td class=\"num\" title=\"{} bytes, {} allocations\">{}</td><td class=\"site\" title=\"{}\">{}</td></tr>",
            d.delta(),
            d.a_bytes,
            d.b_bytes,
            d.delta(),
            signed_size_text(d.delta()),
            d.a_bytes,
            d.a_count,
            size_text(d.a_bytes),
            d.b_bytes,
            d.b_count,
            size_text(d.b_bytes),
            esc(&d.key),
            esc(&d.site)
        );
    }
    s.push_str("</tbody></table>");
}

/// Writes the tab.
pub fn html(fr: &Frame<'_>, s: &mut String) {
    let Some(cur) = fr.state.current() else { return };
    if fr.state.files().len() < 2 {
        s.push_str("<p class=\"cmp-none\">Open a second snapshot to compare it with this one.</p>");
        return;
    }
    let other = fr.state.analysis().compare_other(fr.state.current(), fr.state.files().len());
    let name = |i: usize| fr.state.files().get(i).map_or(String::new(), |f| esc(&f.name));
    let _ = write!(
        s,
        "<p class=\"cmp-files\"><span class=\"sw cmp-a\"></span>A: <b>{}</b><br>Compare with B:</p><div class=\"cmp-select\">",
        name(cur)
    );
    for i in (0..fr.state.files().len()).filter(|&i| i != cur) {
        let _ = write!(
            s,
            "<button type=\"button\" class=\"cmp-other{}\" data-act=\"compare-with\" data-i=\"{i}\">{}</button>",
            if Some(i) == other { " current" } else { "" },
            name(i)
        );
    }
    s.push_str("</div>");
    // Compared by stack, or by the grouping of the Live set's tables.
    let by = &fr.state.analysis().group_by;
    let on = fr.state.analysis().compare_by_group;
    let _ = write!(
        s,
        "<p><button type=\"button\" class=\"cmp-by-group{}\" data-act=\"cmp-by-group\" aria-pressed=\"{on}\" data-by=\"{}\" title=\"Group both files' live bytes as the Live set's tables do (its menu chooses how)\">Compare by {}</button></p>",
        if on { " current" } else { "" },
        esc(&by.slug()),
        esc(&by.title())
    );
    let Some(c) = fr.derived.comparison_of(fr.state) else { return };
    let align = match &c.alignment {
        Alignment::Iterations { a, b } => {
            format!("Aligned by iteration ({a} iterations in A, {b} in B; x: iterations both have).")
        }
        Alignment::Proportion => {
            "Aligned by position in the trace (no iterations in both; x: share of the trace).".to_string()
        }
    };
    let b_name = other.map_or(String::new(), name);
    if !c.recording_differences.is_empty() {
        let _ = write!(
            s,
            "<div class=\"cmp-warn\" role=\"note\" data-python-only=\"{}\"><b>The two files were recorded with different settings</b>, so some differences below may come from the recording, not the run:<ul>{}</ul>{}</div>",
            c.python_frames_only,
            c.recording_differences.iter().map(|d| format!("<li>{}</li>", esc(d))).collect::<String>(),
            if c.python_frames_only {
                "<p>Stacks are matched on their Python frames only: what has C++ frames alone in one file and no frames in the other is listed as <code>&lt;no Python frames&gt;</code> in both.</p>"
            } else {
                ""
            }
        );
    }
    let _ = write!(
        s,
        "<p class=\"cmp-align\">{}</p><canvas class=\"cmp-chart\" data-points=\"{}\" aria-label=\"Total live bytes of A and B on one x axis\"></canvas><p class=\"an-legend cmp-legend\"><span class=\"sw cmp-a\"></span>A: {} <span class=\"sw cmp-b\"></span>B: {} (total live bytes, the highest per slice of x)</p>",
        esc(&align),
        c.curve.len(),
        name(cur),
        b_name
    );
    for (k, p) in c.points.iter().enumerate() {
        let delta = i128::from(p.b_bytes) - i128::from(p.a_bytes);
        // A is the file shown: its entries are links to the cursor; B's are of the other file.
        let at_a = |r: Option<u32>| r.map_or("before the trace".to_string(), |r| entry_link(r, &format!("entry {r}")));
        let at_b = |r: Option<u32>| r.map_or("before the trace".to_string(), |r| format!("B's entry {r}"));
        let _ = write!(
            s,
            "<details class=\"cmp-point\" data-label=\"{}\" data-a-bytes=\"{}\" data-b-bytes=\"{}\" data-delta-bytes=\"{delta}\"{}><summary>At {}: A {} ({}), B {} ({}); <b>B − A = {} ({delta} bytes)</b></summary>",
            esc(&p.label),
            p.a_bytes,
            p.b_bytes,
            if k == 0 { " open" } else { "" },
            esc(&p.label),
            size_text(p.a_bytes),
            at_a(p.a_row),
            size_text(p.b_bytes),
            at_b(p.b_row),
            signed_size_text(delta)
        );
        let title = by.title();
        let picked = fr.state.compare_picked().filter(|r| r.point == k && !on);
        for (name, class, diffs, more_in_b) in
            [("More in B", "cmp-more-b", &p.more_in_b, true), ("More in A", "cmp-more-a", &p.more_in_a, false)]
        {
            let rows = Rows {
                point: k,
                more_in_b,
                grouped: on.then_some(title.as_str()),
                picked: picked.filter(|r| r.more_in_b == more_in_b).map(|r| r.i),
            };
            diff_rows(name, class, diffs, &rows, s);
        }
        s.push_str("</details>");
    }
}

/// Draws both total curves on the tab's canvas.
pub fn draw(fr: &Frame<'_>, canvas: &HtmlCanvasElement) {
    let dpr = fr.state.dpr();
    let Some(c) = fr.derived.comparison_of(fr.state) else { return };
    chart::fit(canvas, CHART_CSS_PX, dpr);
    let max_bytes = c.curve.iter().map(|p| p.a_bytes.max(p.b_bytes)).max().unwrap_or(0);
    let iterations = match c.alignment {
        Alignment::Iterations { a, b } => Some(a.min(b).max(1)),
        Alignment::Proportion => None,
    };
    let x_max = iterations.map_or(1.0, |n| n as f64);
    // Iteration k (from 0) spans x in [k, k + 1); ticks at iteration starts, thinned to about 6.
    let ticks: Vec<f64> = match iterations {
        Some(n) => {
            let every = n.div_ceil(6).max(1);
            (0..n).step_by(every).map(|k| k as f64).collect()
        }
        None => (0..=4).map(|k| f64::from(k) / 4.0).collect(),
    };
    let label = move |x: f64| match iterations {
        Some(_) => format!("it. {}", x.round() as usize + 1),
        None => format!("{:.0}%", x * 100.0),
    };
    // Each point is the highest live bytes over a slice of x: drawn at the slice's middle.
    let half = x_max / c.curve.len().max(1) as f64 / 2.0;
    let curve = |pick: fn(&compare::CurvePoint) -> u64| -> Vec<(f64, f64)> {
        c.curve.iter().map(|p| (p.x + half, pick(p) as f64)).collect()
    };
    let axes = chart::Axes { x: 0.0..x_max, x_ticks: ticks, x_label: &label, max_bytes, y_ticks: 4 };
    let (a_rgb, b_rgb) = (chart::rgb(fr.palette().series[0]), chart::rgb(fr.palette().series[2]));
    chart::draw(canvas, dpr, fr.palette(), &axes, |ch, pen| {
        pen.line(ch, curve(|p| p.a_bytes), a_rgb, 2.0);
        pen.line(ch, curve(|p| p.b_bytes), b_rgb, 2.0);
    });
}
