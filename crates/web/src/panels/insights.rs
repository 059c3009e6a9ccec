//! The Insights tab: iterations, growth per iteration, findings (each one highlights its
//! allocations when clicked) and out-of-memory explanations.

use std::fmt::Write;

use memviz_core::analysis::growth::{BoundarySource, Edge};
use memviz_core::analysis::oom::OomReport;
use memviz_core::analysis::{signed_size_text, site_label, size_text};
use memviz_core::describe::utc_time;
use memviz_core::format::plural;
use memviz_core::snapshot::Snapshot;

use memviz_core::analysis::fragmentation::{step_of_row, FragSeries, TrackValues};
use plotters::style::RGBAColor;
use wasm_bindgen::JsCast;
use web_sys::{HtmlCanvasElement, HtmlElement};

use super::{chart, entry_link, esc, rich, Analysis};
use crate::input::Surface;
use crate::paint::Frame;
use memviz_view::axis;
use memviz_view::state::{OpenFile, Target, ViewState};

/// `97.5 MiB (102228128 bytes)`.
pub fn sz(bytes: u64) -> String {
    format!("{} ({bytes} bytes)", size_text(bytes))
}

/// Writes the tab.
#[allow(clippy::too_many_lines)] // the tab as one HTML string, section by section
pub fn html(snap: &Snapshot, a: &Analysis, s: &mut String) {
    let i = &a.insights;
    let list = &i.iterations.list;
    let problems = i.findings.iter().filter(|f| f.problem).count();
    let notes = i.findings.len() - problems;
    let _ = write!(
        s,
        "<p class=\"an-verdict {}\" data-problems=\"{problems}\" data-notes=\"{notes}\">{}{}</p>",
        if problems > 0 { "bad" } else { "good" },
        if problems > 0 { format!("{} found", plural(problems, "problem")) } else { "No problem found".to_string() },
        if notes > 0 { format!(" · {}", plural(notes, "note")) } else { String::new() }
    );
    // Iterations.
    s.push_str("<h3>Iterations</h3><p class=\"an-iterations\">");
    match &i.iterations.source {
        None => s.push_str("None found (no repeated annotation, no periodic shape of the live-bytes curve)."),
        Some(BoundarySource::Annotation { family, edge }) => {
            let _ = write!(
                s,
                "{} iterations, {} of the <code>{}</code> annotations.",
                list.len(),
                if *edge == Edge::Start { "from the starts" } else { "ending at the ends" },
                esc(family)
            );
        }
        Some(BoundarySource::Periodic { period_rows, score }) => {
            let _ = write!(
                s,
                "{} iterations from the periodic live-bytes curve, about {period_rows} entries each (autocorrelation {score:.2}).",
                list.len()
            );
        }
    }
    s.push_str("</p>");
    if !list.is_empty() {
        s.push_str("<table class=\"an-table an-iters\"><thead><tr><th class=\"num\">#</th><th>label</th><th class=\"num\">entries</th><th class=\"num\">peak</th><th class=\"num\">end</th></tr></thead><tbody>");
        for it in list.iter().take(30) {
            let _ = write!(
                s,
                "<tr class=\"an-it\" data-act=\"iteration\" data-rows=\"{},{}\" data-key=\"iteration:{}\" title=\"Click to zoom the timeline to this iteration\"><td class=\"num\">{}</td><td class=\"site\" title=\"{}\">{}</td><td class=\"num\">{}..{}</td><td class=\"num\" title=\"{} bytes\">{}</td><td class=\"num\" title=\"{} bytes\">{}</td></tr>",
                it.start_row,
                it.end_row,
                it.index,
                it.index + 1,
                esc(&it.label),
                esc(&it.label),
                // The whole row zooms to the iteration: its entries are not links of their own.
                it.start_row,
                it.end_row,
                it.peak_bytes,
                size_text(it.peak_bytes),
                it.end_bytes,
                size_text(it.end_bytes)
            );
        }
        s.push_str("</tbody></table>");
    }
    // Growth.
    if let Some(g) = &i.growth {
        s.push_str("<h3>Growth</h3>");
        if g.significant {
            let _ = write!(
                s,
                "<p class=\"an-growth bad\">Growth: <b title=\"{} bytes per iteration\">{} per iteration</b></p><table class=\"an-table an-nums an-growth-lines\" data-by=\"{}\"><thead><tr><th class=\"site\">{}</th><th class=\"num\">per iteration</th><th class=\"num\">at the end</th></tr></thead><tbody>",
                g.bytes_per_iteration,
                signed_size_text(i128::from(g.bytes_per_iteration)),
                esc(&a.grouping.as_ref().map_or_else(|| "user-line".to_string(), |g| g.by.slug())),
                esc(&a.grouping.as_ref().map_or_else(|| "your line".to_string(), |g| g.by.title()))
            );
            // By the Live set's grouping (the group-by menu there chooses it).
            for (k, n) in a.growth_groups.iter().enumerate().take(10) {
                let b = n.growth.bytes_per_iteration;
                let end = n.growth.end_bytes.last().copied().unwrap_or(0);
                let _ = write!(
                    s,
                    "<tr class=\"an-growing\" data-act=\"growth\" data-i=\"{k}\" data-key=\"growth:{k}\" data-bytes=\"{b}\" title=\"Click to highlight these allocations\"><td class=\"site\" title=\"{}\">{}</td><td class=\"num\" title=\"{b} bytes\">{}</td><td class=\"num\" title=\"{end} bytes\">{}</td></tr>",
                    esc(&n.label),
                    esc(&n.label),
                    signed_size_text(i128::from(b)),
                    size_text(end)
                );
            }
            s.push_str("</tbody></table><table class=\"an-table\"><thead><tr><th>bytes/iteration</th><th>innermost frame</th></tr></thead><tbody>");
            for st in g.stacks.iter().take(10) {
                let _ = write!(
                    s,
                    "<tr class=\"an-growing-frame\"><td title=\"{} bytes\">{}</td><td>{}</td></tr>",
                    st.bytes_per_iteration,
                    signed_size_text(i128::from(st.bytes_per_iteration)),
                    esc(&site_label(snap, st.stack))
                );
            }
            s.push_str("</tbody></table>");
        } else {
            let _ = write!(
                s,
                "<p class=\"an-growth\">No steady growth (trend of live bytes at iteration ends: <span title=\"{} bytes per iteration\">{} per iteration</span>).</p>",
                g.bytes_per_iteration,
                signed_size_text(i128::from(g.bytes_per_iteration))
            );
        }
    }
    // Findings.
    s.push_str("<h3>Findings</h3>");
    if i.findings.is_empty() {
        s.push_str("<p>No findings (too few iterations to judge growth; no out-of-memory entries).</p>");
    }
    for (k, f) in i.findings.iter().enumerate() {
        let _ = write!(
            s,
            "<div class=\"finding {}\" data-act=\"finding\" data-i=\"{k}\" data-key=\"finding:{k}\" data-kind=\"{}\" data-elements=\"{}\" title=\"Click to highlight its {} allocations on the timeline\"><div class=\"f-title\"><span class=\"badge\">{}</span> {}</div>",
            if f.problem { "problem" } else { "note" },
            f.kind,
            f.elements.len(),
            f.elements.len(),
            if f.problem { "problem" } else { "note" },
            rich(&f.title)
        );
        // An out-of-memory card's evidence and suggestions are its explanation's, written once
        // there (below the findings).
        if f.kind == "oom" {
            s.push_str("<p class=\"f-see\">What happened and what to try: in its explanation below.</p>");
        } else {
            if !f.details.is_empty() {
                s.push_str("<ul>");
                for d in &f.details {
                    let _ = write!(s, "<li>{}</li>", rich(d));
                }
                s.push_str("</ul>");
            }
            for t in &f.suggestions {
                let _ = write!(s, "<p class=\"try\">Try: {}</p>", rich(t));
            }
        }
        s.push_str("</div>");
    }
    for (k, o) in i.ooms.iter().enumerate() {
        oom_html(snap, o, k, s);
    }
    frag_html(&a.fragmentation, s);
}

/// Chart size when the canvas is not laid out, CSS px.
const FRAG_CSS_PX: (f64, f64) = (390.0, 120.0);
/// Memory reserved but not allocated: red, faint over either theme's background.
const UNUSED: RGBAColor = RGBAColor(214, 39, 40, 0.22);

fn frag_html(fs: &FragSeries, s: &mut String) {
    let m = fs.max_unused.as_ref();
    let _ = write!(
        s,
        "<h3>Fragmentation over time</h3><p class=\"an-frag-summary\">{}</p><canvas class=\"an-frag\" data-points=\"{}\" data-max-unused-row=\"{}\" data-max-unused-bytes=\"{}\" aria-label=\"Reserved, allocated and largest free block over the timeline's visible window\"></canvas><p class=\"an-legend\"><span class=\"sw reserved\"></span>reserved <span class=\"sw allocated\"></span>allocated <span class=\"sw unused\"></span>reserved − allocated <span class=\"sw largest\"></span>largest free block (x: the timeline's visible window; red line: the most reserved but unallocated)</p><p class=\"an-legend an-frag-at\">Point at the timeline to read the values after an entry.</p>",
        esc(&fs.summary()),
        fs.points.len(),
        m.and_then(|p| p.row).map_or(-1, i64::from),
        m.map_or(0, |p| p.unused_bytes())
    );
}

/// What the fragmentation chart shows, apart from its marker.
#[derive(Clone, Debug, PartialEq)]
struct FragKey {
    file: (usize, usize),
    generation: usize,
    window: (f64, f64),
    time_axis: bool,
    dpr: f64,
}

impl FragKey {
    /// Whether `other` differs from this key in its window alone.
    fn same_but_window(&self, other: &FragKey) -> bool {
        FragKey { window: other.window, ..*self } == *other
    }
}

/// How long a new window alone may wait for the chart, ms: while a zoom or pan goes on, the chart
/// follows at about this pace (drawing it costs as much as the timeline's own frame), and it
/// shows the last window once the input stops.
const FRAG_WINDOW_REDRAW_MS: f64 = 200.0;

/// The fragmentation chart as drawn.
#[derive(Default)]
pub struct FragChart {
    key: Option<FragKey>,
    /// (x, step) of the marker drawn.
    marker: Option<Option<(f64, f64)>>,
    area: Option<chart::Area>,
    layer: chart::Layered,
    /// When a new window was first left undrawn (`performance.now()`, ms), while one is.
    window_deferred_since_ms: Option<f64>,
}

impl FragChart {
    /// Forgets what was drawn (the canvas was replaced).
    pub fn reset(&mut self) {
        self.key = None;
        self.marker = None;
        self.window_deferred_since_ms = None;
    }

    /// Whether drawing for `key` waits (only the window changed, and the first such change is
    /// younger than [`FRAG_WINDOW_REDRAW_MS`]); asks for the frame that draws it.
    fn defers(&mut self, key: &FragKey, now_ms: f64) -> bool {
        if !self.key.as_ref().is_some_and(|k| k.same_but_window(key)) {
            self.window_deferred_since_ms = None;
            return false;
        }
        let since_ms = *self.window_deferred_since_ms.get_or_insert(now_ms);
        let left_ms = FRAG_WINDOW_REDRAW_MS - (now_ms - since_ms);
        if left_ms <= 0.0 {
            self.window_deferred_since_ms = None;
            return false;
        }
        if since_ms == now_ms {
            crate::tasks::redraw_after(left_ms.ceil() as i32 + 1);
        }
        true
    }
}

/// The step the user points at on the timeline, or the pinned allocation's alloc: (x position,
/// step).
fn marker_of(state: &ViewState, f: &OpenFile) -> Option<(f64, f64)> {
    let xm = f.xmap();
    if state.hover().is_some() && state.drag().is_none() {
        if let Some((Surface::Plot, x_px, _)) = state.last_pointer() {
            let pos = f.viewport.pos_at(&state.plot_rect(), x_px);
            return Some((pos, xm.step(pos)));
        }
    }
    match state.pinned() {
        Some(Target::Element(e)) => {
            // Its alloc, when the trace has it.
            let el = f.plot.layout.element(e)?;
            el.alloc_row?;
            let step = f64::from(el.alloc_step);
            Some((xm.pos(step), step))
        }
        _ => None,
    }
}

/// Draws the fragmentation chart for the timeline's visible window when the window changed (a
/// moving window at most every `FRAG_WINDOW_REDRAW_MS`), and its marker at the step the user
/// points at (called by each frame while the tab is shown).
#[allow(clippy::too_many_lines)] // one chart and its readout; moves into a paint module with the panel state
pub fn sync_fragmentation(fr: &Frame<'_>, st: &mut FragChart, panel: &HtmlElement) {
    let Some(f) = fr.file() else { return };
    let Some(canvas) =
        panel.query_selector("canvas.an-frag").ok().flatten().and_then(|c| c.dyn_into::<HtmlCanvasElement>().ok())
    else {
        return;
    };
    let xm = f.xmap();
    let v = &f.viewport;
    let key = FragKey {
        file: (fr.state.current().unwrap_or(0), f.plot.device_pos),
        generation: fr.state.generation(),
        window: (v.x0, v.x1),
        time_axis: xm.is_time(),
        dpr: fr.state.dpr(),
    };
    let marker = marker_of(fr.state, f);
    let mut drawn = false;
    if st.key.as_ref() != Some(&key) {
        // A marker over the axes of the old window would be misplaced: it waits as well.
        if st.defers(&key, fr.ui.now_ms()) {
            return;
        }
        let Some(a) = fr.derived.analysis_of(fr.state) else {
            return;
        };
        let dpr = fr.state.dpr();
        chart::fit(&canvas, FRAG_CSS_PX, dpr);
        let layout = &f.plot.layout;
        let (s0, s1) = (xm.step(v.x0), xm.step(v.x1));
        let columns = (FRAG_CSS_PX.0 * dpr) as usize;
        let points = a.frag_track.window(layout, s0, s1, columns);
        let xs: Vec<f64> = points.iter().map(|p| xm.pos(p.step)).collect();
        let series = |value: &dyn Fn(&TrackValues) -> u64| -> Vec<(f64, f64)> {
            xs.iter().zip(&points).map(|(&x, p)| (x, value(&p.values) as f64)).collect()
        };
        let max_bytes = points.iter().map(|p| p.values.reserved_bytes.max(p.values.allocated_bytes)).max().unwrap_or(0);
        let time = xm.is_time();
        // As on the timeline: time, or trace entries at their steps.
        let (x_step, ticks) = if time {
            axis::x_ticks(v.x0, v.x1, 4, true)
        } else {
            (1.0, memviz_view::entries::entry_ticks(layout, s0, s1, 4).into_iter().map(|t| t.0).collect())
        };
        let label = move |x: f64| {
            if time {
                axis::time_label(x, x_step)
            } else {
                memviz_view::entries::entry_at_step(layout, x).map_or_else(String::new, |e| e.to_string())
            }
        };
        let worst_x = a.fragmentation.max_unused.and_then(|m| m.row).map(|r| xm.pos(step_of_row(layout, Some(r))));
        let axes = chart::Axes { x: v.x0..v.x1, x_ticks: ticks, x_label: &label, max_bytes, y_ticks: 4 };
        let (x0, x1) = (v.x0, v.x1);
        let s = fr.palette().series;
        let (reserved_rgb, allocated_rgb) = (chart::rgb(s[0]), chart::rgb(s[1]));
        let (largest_rgb, worst_rgb) = (chart::rgb(s[2]), chart::rgb(s[3]));
        st.area = chart::draw(&canvas, dpr, fr.palette(), &axes, |c, pen| {
            // Each value holds until the next entry.
            let stairs = |value: &dyn Fn(&TrackValues) -> u64| chart::stairs(&series(value), x0, x1);
            let reserved = stairs(&|t| t.reserved_bytes);
            let allocated = stairs(&|t| t.allocated_bytes.min(t.reserved_bytes));
            pen.band(c, &reserved, &allocated, UNUSED);
            pen.line(c, reserved, reserved_rgb, 1.5);
            pen.line(c, stairs(&|t| t.allocated_bytes), allocated_rgb, 1.2);
            pen.line(c, stairs(&|t| t.largest_free_bytes), largest_rgb, 1.2);
            if let Some(x) = worst_x.filter(|x| (x0..=x1).contains(x)) {
                pen.vline(c, x, worst_rgb, 1.0);
            }
        });
        let _ = canvas.set_attribute("data-window-points", &points.len().to_string());
        // The window as the timeline's `data-view` gives it, and in steps.
        let _ = canvas.set_attribute("data-window", &format!("{:.3},{:.3}", v.x0, v.x1));
        let _ = canvas.set_attribute("data-window-steps", &format!("{s0:.0},{s1:.0}"));
        st.layer.keep(&fr.ui.document, &canvas);
        st.key = Some(key);
        drawn = true;
    }
    if drawn || st.marker != Some(marker) {
        if !drawn && !st.layer.restore(&canvas) {
            st.reset();
            return;
        }
        let text = match (marker, fr.derived.analysis_of(fr.state)) {
            (Some((x, step)), Some(a)) => {
                if let Some(area) = &st.area {
                    chart::marker(&canvas, fr.state.dpr(), area, x, chart::rgb(fr.palette().chart_marker));
                }
                a.frag_track
                    .at_step(&f.plot.layout, step)
                    .map(|p| {
                        let t = p.values;
                        let _ = canvas.set_attribute("data-marker-step", &format!("{step:.0}"));
                        let _ = canvas.set_attribute("data-marker-unused-bytes", &t.unused_bytes().to_string());
                        format!(
                            "{}: reserved {}, allocated {}, reserved − allocated {}, largest free block {}",
                            p.row.map_or_else(|| "Before the first entry".to_string(), |r| format!("After entry {r}")),
                            size_text(t.reserved_bytes),
                            size_text(t.allocated_bytes),
                            size_text(t.unused_bytes()),
                            size_text(t.largest_free_bytes)
                        )
                    })
                    .unwrap_or_default()
            }
            _ => {
                let _ = canvas.remove_attribute("data-marker-step");
                let _ = canvas.remove_attribute("data-marker-unused-bytes");
                "Point at the timeline to read the values after an entry.".to_string()
            }
        };
        if let Ok(Some(el)) = panel.query_selector(".an-frag-at") {
            el.set_text_content(Some(&text));
        }
        st.marker = Some(marker);
    }
}

/// One out-of-memory explanation.
fn oom_html(snap: &Snapshot, o: &OomReport, k: usize, s: &mut String) {
    let _ = write!(
        s,
        "<section class=\"oom\" data-i=\"{k}\"><h3>Out of memory at {}{}</h3><table class=\"an-kv\">",
        entry_link(o.row, &format!("entry {}", o.row)),
        o.time_us.map_or(String::new(), |t| format!(" ({})", esc(&utc_time(t))))
    );
    let mut kv = |k: &str, v: String| {
        let _ = write!(s, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    };
    kv("requested", sz(o.requested_bytes));
    if let Some(df) = o.device_free_bytes {
        kv("device free", sz(df));
    }
    kv("reserved", sz(o.reserved_bytes));
    kv("allocated", format!("{} (blocks {})", sz(o.allocated_bytes), size_text(o.allocated_block_bytes)));
    kv("free in segments", sz(o.free_in_segments_bytes));
    kv("largest free block", format!("{} on the request's stream", sz(o.largest_free_bytes)));
    kv("requested from", site_label(snap, o.stack));
    s.push_str("</table>");
    if !o.pools.is_empty() {
        s.push_str("<h4>Free space by stream and pool</h4><table class=\"an-table\"><thead><tr><th>stream</th><th>pool</th><th>segments</th><th>reserved</th><th>free</th><th>largest free</th></tr></thead><tbody>");
        for p in &o.pools {
            let pool = snap.pools.get(p.pool as usize).map_or_else(String::new, |x| format!("({}, {})", x.0, x.1));
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td title=\"{} bytes\">{}</td></tr>",
                p.stream,
                esc(&pool),
                p.segments,
                size_text(p.reserved_bytes),
                size_text(p.free_bytes),
                p.largest_free_bytes,
                size_text(p.largest_free_bytes)
            );
        }
        s.push_str("</tbody></table>");
    }
    s.push_str("<h4>What happened</h4><ul>");
    for d in &o.diagnosis {
        let _ = write!(s, "<li>{}</li>", rich(d));
    }
    let _ = write!(
        s,
        "</ul><h4 class=\"clickable\" data-act=\"oom\" data-i=\"{k}\" data-key=\"oom:{k}\" title=\"Click to highlight them on the timeline\">Top holders ({} allocations)</h4><table class=\"an-table\"><thead><tr><th>bytes</th><th>count</th><th>site</th></tr></thead><tbody>",
        o.holders.count
    );
    for g in o.holders.by_site.iter().take(5) {
        let _ = write!(
            s,
            "<tr><td title=\"{} bytes\">{}</td><td>{}</td><td>{}</td></tr>",
            g.bytes,
            size_text(g.bytes),
            g.count,
            esc(&g.label)
        );
    }
    s.push_str("</tbody></table><h4>What to try</h4><ul class=\"try\">");
    for t in &o.suggestions {
        let _ = write!(s, "<li>{}</li>", rich(t));
    }
    s.push_str("</ul></section>");
}
