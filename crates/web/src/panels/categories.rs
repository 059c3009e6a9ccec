//! Memory by category. Two sources: the profiler's `export_memory_timeline` output, shown as a
//! stacked category timeline over the plot, and, for snapshots, categories inferred from stacks,
//! lifetimes and annotations, which can colour the timeline's allocations (the Categories tab).

use std::fmt::Write;

use memviz_core::analysis::categories::Category;
use memviz_core::analysis::size_text;
use memviz_core::timeline::Mode;
use plotters::style::{Color, RGBColor};
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, HtmlElement};

use super::{chart, esc};
use memviz_view::state::{CHART_LEFT_PX, CHART_RIGHT_PX};

use crate::input::{bind, wheel_delta_px, Binding, Input};
use crate::paint::{Frame, FrameInfo};
use memviz_view::state::panels::Action;
use memviz_view::state::panels::Profile;
use memviz_view::state::PageInput;
use web_sys::{KeyboardEvent, MouseEvent, PointerEvent, WheelEvent};

/// Colour of the line at the peak (the pointer's marker is the ink's).
const PEAK_LINE: u32 = 0xd62728;

/// Size of the stacked chart when it is not laid out, CSS px.
const CHART_CSS_PX: (f64, f64) = (600.0, 320.0);
/// Colours of the categories, in order (the swatches `.sw.cat-N` in style.css): ColorBrewer's
/// Dark2, unlike the Tableau colours of the timeline's ordinary bands, so a coloured timeline is
/// told from a plain one at a glance; the eighth (`unknown`) is grey.
pub const COLOURS: [u32; 9] =
    [0x1b9e77, 0xd95f02, 0x7570b3, 0xe7298a, 0x66a61e, 0xe6ab02, 0xa6761d, 0x666666, 0x1f78b4];

/// Colour of category `k` (index into the timeline's categories), as CSS.
fn colour(k: usize) -> String {
    format!("#{:06x}", COLOURS[k % COLOURS.len()])
}

/// Colour of category `k`, for charts.
fn chart_colour(k: usize) -> RGBColor {
    chart::rgb(COLOURS[k % COLOURS.len()])
}

fn category_index(c: Category) -> usize {
    Category::ALL.iter().position(|&x| x == c).unwrap_or(Category::ALL.len() - 1)
}

/// What the profiler timeline's element shows now.
#[derive(Default)]
pub struct Memo {
    /// (profile, pointer x, chart width in device px, window) drawn.
    written: Option<(usize, Option<f64>, u32, usize)>,
    /// The chart without its marker, and its plot area.
    layer: chart::Layered,
    area: Option<chart::Area>,
    /// The line saying what was joined with the snapshot shown, as written.
    join_line: Option<String>,
}

/// The line that says what the profile shown was joined with, and how many matched.
fn join_line(fr: &Frame<'_>, p: &memviz_view::state::panels::Profile) -> Option<String> {
    let (f, c) = (fr.file()?, fr.derived.categories_of(fr.state)?);
    let note = c.notes.first().filter(|_| p.is_profilers() && c.matched.iter().any(|&m| m))?;
    Some(format!("Joined with {}: {note}.", f.name))
}

fn legend(names: &[String], inferred: bool, s: &mut String) {
    s.push_str("<p class=\"cat-legend an-legend\">");
    for (k, n) in names.iter().enumerate() {
        let _ = write!(s, "<span class=\"cat-key\"><span class=\"sw cat-{}\"></span>{}</span> ", k % 9, esc(n));
    }
    if inferred {
        s.push_str("<span class=\"cat-inferred\">(categories inferred from stacks, lifetimes and annotations, not recorded)</span>");
    }
    s.push_str("</p>");
}

/// Writes the Categories tab (snapshots).
pub fn html(fr: &Frame<'_>, s: &mut String) {
    let st = &fr.state.analysis().categories;
    let on = st.colour_inferred;
    let c = fr.derived.categories_of(fr.state);
    let joined = c.is_some_and(|c| c.matched.iter().any(|&m| m));
    let _ = write!(
        s,
        "<p><button type=\"button\" class=\"cat-colour{}\" data-act=\"cat-colour\" aria-pressed=\"{on}\">Colour by category ({})</button>",
        if on { " current" } else { "" },
        if joined { "the profiler's where matched" } else { "inferred" }
    );
    if st.chart_hidden && st.profile.is_some() {
        let _ = write!(s, " <button type=\"button\" data-act=\"cat-show-chart\">Show the profiler's chart</button>");
    }
    s.push_str("</p>");
    // The Live set's grouping over time, drawn in the chart above the tab.
    let _ = write!(
        s,
        "<p><button type=\"button\" data-act=\"group-timeline\" title=\"Each group's live bytes over the trace (the Live set's menu chooses the grouping)\">Chart by {} over time</button></p>",
        esc(&fr.state.analysis().group_by.title())
    );
    let Some(c) = c else { return };
    let names: Vec<String> = Category::ALL.iter().map(|c| c.name().replace('_', " ")).collect();
    legend(&names, c.timeline.inferred && !joined, s);
    // Categories with bytes at the peak, largest first, all in the unit of the largest.
    let mut rows: Vec<(Category, u64)> = c.at_peak.iter().copied().filter(|&(_, b)| b > 0).collect();
    rows.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    let total: u64 = rows.iter().map(|r| r.1).sum();
    let unit = SizeUnit::of(rows.first().map_or(0, |r| r.1));
    s.push_str("<h4>At the peak</h4><table class=\"an-table an-nums cat-at-peak\"><thead><tr><th class=\"site\">category</th><th class=\"num\">bytes</th><th class=\"num\">share</th></tr></thead><tbody>");
    for (cat, b) in &rows {
        let _ = write!(
            s,
            "<tr data-category=\"{}\" data-bytes=\"{b}\" data-act=\"category\" data-i=\"{}\" data-key=\"category:{}\" title=\"Click to highlight these allocations\"><td class=\"site\"><span class=\"sw cat-{}\"></span>{}</td><td class=\"num\" title=\"{b} bytes\">{}</td><td class=\"num\">{:.1}%</td></tr>",
            cat.name(),
            category_index(*cat),
            cat.name(),
            category_index(*cat) % COLOURS.len(),
            esc(&cat.name().replace('_', " ")),
            unit.text(*b),
            *b as f64 * 100.0 / total.max(1) as f64
        );
    }
    if rows.is_empty() {
        s.push_str("<tr><td colspan=\"3\">nothing live at the peak</td></tr>");
    }
    s.push_str("</tbody></table>");
    if !c.notes.is_empty() {
        s.push_str("<ul class=\"cat-notes\">");
        for n in &c.notes {
            let _ = write!(s, "<li>{}</li>", esc(n));
        }
        s.push_str("</ul>");
    }
}

/// One binary unit for a column of sizes: that of the largest, so the column reads alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SizeUnit(u32);

impl SizeUnit {
    const NAMES: [&'static str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];

    fn of(max_bytes: u64) -> SizeUnit {
        let mut k = 0u32;
        while (k as usize) + 1 < Self::NAMES.len() && max_bytes >= 1u64 << (10 * (k + 1)) {
            k += 1;
        }
        SizeUnit(k)
    }

    fn text(self, bytes: u64) -> String {
        let name = Self::NAMES.get(self.0 as usize).copied().unwrap_or("B");
        if self.0 == 0 {
            return format!("{bytes} B");
        }
        let x = bytes as f64 / (1u64 << (10 * self.0)) as f64;
        if bytes > 0 && x < 0.005 {
            return format!("< 0.01 {name}");
        }
        format!("{x:.2} {name}")
    }
}

/// The line the stack text starts with while the timeline is coloured by category: the
/// category of allocation element `e` and its colour's name in the legend.
pub fn category_line(fr: &Frame<'_>, e: memviz_core::timeline::ElementIndex) -> Option<String> {
    if !fr.state.analysis().categories.colour_inferred || fr.state.view().mode() != Mode::Allocations {
        return None;
    }
    let c = fr.derived.categories_of(fr.state)?;
    let cat = c.per_element.get(e.as_usize())?;
    let from = if c.matched.get(e.as_usize()) == Some(&true) { "the profiler's" } else { "inferred" };
    Some(format!("Category ({from}): {}", cat.name().replace('_', " ")))
}

/// Paints the visible allocations of the timeline in their inferred category's colour.
pub fn draw_colours(fr: &Frame<'_>, drawn: &FrameInfo, ctx: &CanvasRenderingContext2d) {
    if !fr.state.analysis().categories.colour_inferred || fr.state.view().mode() != Mode::Allocations {
        return;
    }
    let Some(f) = fr.file() else { return };
    let Some(c) = fr.derived.categories_of(fr.state) else { return };
    let plot = crate::paint::edges::PlotDev::new(f, fr.plot_rect(), fr.state.dpr()).reusing(drawn);
    let layout = plot.layout;
    plot.clip(ctx);
    let min_size = 0.5 / plot.px_per_byte_dev;
    let mut bands = layout.bands_overlapping(plot.s_left.floor().max(0.0) as u32, plot.s_right.ceil().max(0.0) as u32);
    bands.retain(|&b| layout.band_size(b) as f64 >= min_size);
    let cat_of = |b: u32| {
        layout
            .band_element
            .get(b as usize)
            .and_then(|&e| c.per_element.get(e as usize))
            .map_or(Category::ALL.len() - 1, |&x| category_index(x))
    };
    // One pass per category, so the fill style changes once per category.
    bands.sort_unstable_by_key(|&b| (cat_of(b), b));
    for group in bands.chunk_by(|&a, &b| cat_of(a) == cat_of(b)) {
        if let Some(&first) = group.first() {
            ctx.set_fill_style_str(&colour(cat_of(first)));
            plot.trace_bands(ctx, group, |_| ctx.fill());
        }
    }
    ctx.restore();
}

fn time_text(us: i64) -> String {
    let a = us.unsigned_abs();
    if a >= 10_000_000 {
        format!("{:.2} s", us as f64 / 1e6)
    } else {
        format!("{:.1} ms", us as f64 / 1e3)
    }
}

/// Brings the profile timeline's element in line with the state.
pub fn sync_profile(fr: &Frame<'_>, memo: &mut Memo) {
    let st = &fr.state.analysis().categories;
    let Some(el) = fr.ui.document.get_element_by_id("cat-timeline") else {
        return;
    };
    let Ok(el) = el.dyn_into::<HtmlElement>() else {
        return;
    };
    let join = st.profile.as_ref().and_then(|p| join_line(fr, p));
    let written = memo.written.filter(|_| memo.join_line == join);
    if written.map(|w| w.0) != Some(st.profile_seq) {
        el.set_hidden(st.profile.is_none() || st.chart_hidden);
        let mut s = String::new();
        if let Some(p) = &st.profile {
            let _ = write!(
                s,
                "<div class=\"cat-head\"><b>Memory by {}</b> · {} <span class=\"cat-src\">({}, {} points)</span><button type=\"button\" class=\"an-close\" data-act=\"cat-close\" title=\"Close\">×</button></div>",
                // The grouping's chart (Derived::group_timeline_of) or a profiler's categories.
                if p.timeline.source.starts_with("allocations grouped by") { "group" } else { "category" },
                esc(&p.name),
                esc(&p.timeline.source),
                p.points
            );
            if let Some((_, peak)) = p.peak {
                let _ = write!(
                    s,
                    "<p class=\"cat-peak\" data-peak-bytes=\"{peak}\">Peak: <b>{} ({peak} bytes)</b>{}</p>",
                    size_text(peak),
                    p.peak.filter(|_| p.peak_time_us.is_some()).map_or(String::new(), |(i, _)| format!(
                        " at t = {} (the red line on the chart)",
                        time_text(p.x_of(i) as i64)
                    ))
                );
            }
            // Joined with the snapshot shown: how many matched, and the way to its timeline.
            if let Some(line) = &join {
                let _ = write!(
                    s,
                    "<p class=\"cat-join\">{} <button type=\"button\" data-act=\"cat-show-timeline\">Colour its timeline by category</button></p>",
                    esc(line)
                );
            }
            s.push_str("<p class=\"cat-window\"></p>");
            // The regions of the snapshot shown (the same run's steps and record_function ranges).
            s.push_str("<div class=\"cat-phases\" hidden></div>");
            s.push_str(
                "<canvas class=\"cat-chart\" tabindex=\"0\" aria-label=\"Bytes per category over time\"></canvas>",
            );
            s.push_str("<canvas class=\"cat-mini\" title=\"The whole timeline: click or drag to move the window\" aria-label=\"The whole timeline and the window shown\"></canvas>");
            legend(&p.timeline.categories, p.timeline.inferred, &mut s);
            s.push_str("<div class=\"cat-hover\">Point at the chart to read the bytes of each category.</div>");
        }
        el.set_inner_html(&s);
        memo.join_line = join;
    }
    // A zoom or pan rewrites the window's line and draws the chart again; the canvas stays (and
    // keeps the keyboard's focus).
    if written.map(|w| (w.0, w.3)) != Some((st.profile_seq, st.window_seq)) {
        if let Some(p) = &st.profile {
            write_window(&el, p);
            write_phases(fr, &el, p);
        }
    }
    // The chart is as wide as the page: it is drawn again when that changes (or the pixel ratio).
    let width_dev = el
        .query_selector("canvas.cat-chart")
        .ok()
        .flatten()
        .map_or(0, |c| (f64::from(c.client_width()) * fr.state.dpr()).round() as u32);
    let want = (st.profile_seq, st.hover_x_px, width_dev, st.window_seq);
    if written != Some(want) {
        if let Some(p) = &st.profile {
            let same_chart = written.map(|w| (w.0, w.2, w.3)) == Some((st.profile_seq, width_dev, st.window_seq));
            draw_profile(fr, memo, &el, p, st.hover_x_px, same_chart);
        }
        memo.written = Some(want);
    }
}

/// Regions drawn at most (the strip stays light on a long run).
const MAX_PHASES: usize = 400;
/// Height of a row of regions, CSS px.
const PHASE_ROW_PX: usize = 18;

/// Writes the strip of the shown file's regions in the chart's window, over its plot area.
fn write_phases(fr: &Frame<'_>, el: &HtmlElement, p: &memviz_view::state::panels::Profile) {
    let Ok(Some(strip)) = el.query_selector(".cat-phases") else { return };
    let Ok(strip) = strip.dyn_into::<HtmlElement>() else { return };
    let phases = fr.file().map(|f| p.phases(&f.plot.annotations, &f.plot.annotation_rows)).unwrap_or_default();
    let (left, sides) = (CHART_LEFT_PX, CHART_LEFT_PX + CHART_RIGHT_PX);
    let mut s = String::new();
    let mut rows = 0;
    let shown = phases.get(..phases.len().min(MAX_PHASES)).unwrap_or_default();
    for x in shown {
        rows = rows.max(x.row + 1);
        let _ = write!(
            s,
            "<span class=\"cat-phase\" data-start-us=\"{}\" data-end-us=\"{}\" title=\"{}\">{}</span>",
            x.start_us,
            x.end_us,
            esc(&x.name),
            esc(&x.name)
        );
    }
    strip.set_inner_html(&s);
    // Placed through the CSSOM: the page's policy refuses style attributes in markup.
    let children = strip.children();
    for (k, x) in shown.iter().enumerate() {
        let Some(span) = children.item(k as u32).and_then(|c| c.dyn_into::<HtmlElement>().ok()) else { continue };
        let style = span.style();
        let _ = style.set_property("left", &format!("calc({left}px + (100% - {sides}px) * {:.6})", x.from));
        let _ = style.set_property("width", &format!("calc((100% - {sides}px) * {:.6})", (x.to - x.from).max(0.0)));
        let _ = style.set_property("top", &format!("{}px", x.row * PHASE_ROW_PX));
    }
    let _ = strip.style().set_property("height", &format!("{}px", rows * PHASE_ROW_PX));
    strip.set_hidden(phases.is_empty());
}

/// Draws the stacked chart (unless `same_chart` and its copy can be put back) and the pointer's
/// marker with the bytes of each category there.
fn draw_profile(
    fr: &Frame<'_>,
    memo: &mut Memo,
    el: &HtmlElement,
    p: &Profile,
    hover_x_px: Option<f64>,
    same_chart: bool,
) {
    let Ok(Some(canvas)) = el.query_selector("canvas.cat-chart") else {
        return;
    };
    let Ok(canvas) = canvas.dyn_into::<HtmlCanvasElement>() else {
        return;
    };
    let dpr = fr.state.dpr();
    let tl = &p.timeline;
    let n = tl.bytes.len().min(p.shown_x.len());
    let times = &p.shown_x[..n];
    let (t0, t1) = p.window();
    let t1 = t1.max(t0 + 1.0);
    let restored = same_chart && memo.area.is_some() && memo.layer.restore(&canvas);
    if !restored {
        chart::fit(&canvas, CHART_CSS_PX, dpr);
        let max_bytes = (0..n).map(|i| tl.total_at(i)).max().unwrap_or(0);
        let (_, ticks) = memviz_view::axis::linear_ticks(t0, t1, 6);
        let label = |x: f64| time_text(x as i64);
        let axes = chart::Axes { x: t0..t1, x_ticks: ticks, x_label: &label, max_bytes, y_ticks: 6 };
        let peak_x = p.peak.map(|(i, _)| p.x_of(i)).filter(|x| (t0..=t1).contains(x));
        let area = chart::draw(&canvas, dpr, fr.palette(), &axes, |c, pen| {
            // Bands, bottom to top.
            let mut below: Vec<(f64, f64)> = times.iter().map(|&t| (t, 0.0)).collect();
            for k in 0..tl.categories.len() {
                let above: Vec<(f64, f64)> = below
                    .iter()
                    .enumerate()
                    .map(|(i, &(x, y))| {
                        let b = tl.bytes.get(i).and_then(|r| r.get(k)).copied().unwrap_or(0);
                        (x, y + b as f64)
                    })
                    .collect();
                if above.iter().zip(&below).any(|(a, b)| a.1 > b.1) {
                    pen.band(c, &above, &below, chart_colour(k).to_rgba());
                }
                below = above;
            }
            // The peak of the whole timeline, where it is in the window.
            if let Some(x) = peak_x {
                pen.vline(c, x, chart::rgb(PEAK_LINE), 1.5);
            }
        });
        memo.area = area;
        memo.layer.keep(&fr.ui.document, &canvas);
        draw_minimap(fr, el, p);
    }
    // What the pointer is over.
    let (Some(hx), Some(area)) = (hover_x_px, memo.area) else {
        return;
    };
    if n == 0 || !area.contains_x(hx) {
        return;
    }
    // The bytes in force at the pointer's time, from the whole timeline (the drawn points keep
    // only each bucket's highest).
    let t = area.x_at(hx);
    let Some(i) = p.point_at(t) else { return };
    chart::marker(&canvas, dpr, &area, t, chart::rgb(fr.palette().chart_marker));
    let total = p.full.total_at(i);
    let s = hover_table(&p.full.categories, p.full.bytes.get(i).map_or(&[][..], Vec::as_slice), total, t);
    if let Ok(Some(r)) = el.query_selector(".cat-hover") {
        r.set_inner_html(&s);
        let _ = r.set_attribute("data-total-bytes", &total.to_string());
    }
}

/// Height of the minimap under the chart, CSS px.
const MINIMAP_CSS_PX: f64 = 36.0;

/// Draws the minimap: the whole timeline's total, lined up with the chart's plot area, and the
/// window shown (the rest dimmed).
fn draw_minimap(fr: &Frame<'_>, el: &HtmlElement, p: &Profile) {
    let Ok(Some(c)) = el.query_selector("canvas.cat-mini") else { return };
    let Ok(c) = c.dyn_into::<HtmlCanvasElement>() else { return };
    let dpr = fr.state.dpr();
    let (w, h) = chart::fit(&c, (CHART_CSS_PX.0, MINIMAP_CSS_PX), dpr);
    let Some(ctx) = c.get_context("2d").ok().flatten().and_then(|x| x.dyn_into::<CanvasRenderingContext2d>().ok())
    else {
        return;
    };
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    let pal = fr.palette();
    let (left, width) = (CHART_LEFT_PX, (w - CHART_LEFT_PX - CHART_RIGHT_PX).max(1.0));
    ctx.set_fill_style_str(pal.minimap_back);
    ctx.fill_rect(left, 0.0, width, h);
    let over = p.overview((width * dpr).round().max(2.0) as usize);
    let max = over.iter().map(|o| o.1).max().unwrap_or(0).max(1) as f64;
    let span = p.span();
    let x = |v: f64| left + v / span * width;
    let y = |b: u64| h - 1.0 - b as f64 / max * (h - 3.0);
    // A staircase, as the chart's bands.
    ctx.begin_path();
    ctx.move_to(left, h);
    let mut last = 0;
    for &(vx, b) in &over {
        ctx.line_to(x(vx), y(last));
        ctx.line_to(x(vx), y(b));
        last = b;
    }
    ctx.line_to(left + width, y(last));
    ctx.line_to(left + width, h);
    ctx.close_path();
    ctx.set_fill_style_str(pal.bands[0]);
    ctx.fill();
    let (x0, x1) = p.window();
    let (a, b) = (x(x0), x(x1).max(x(x0) + 1.0));
    ctx.set_fill_style_str(pal.minimap_dim);
    ctx.fill_rect(left, 0.0, a - left, h);
    ctx.fill_rect(b, 0.0, left + width - b, h);
    ctx.set_stroke_style_str(pal.minimap_window);
    ctx.set_line_width(1.0);
    ctx.stroke_rect(a + 0.5, 0.5, (b - a - 1.0).max(0.5), h - 1.0);
    let _ = c.set_attribute("data-x0", &x0.to_string());
    let _ = c.set_attribute("data-x1", &x1.to_string());
}

/// The pointer's reading: its time, then a row per category with bytes (a swatch before the
/// name) and share of the total, and the total.
fn hover_table(categories: &[String], bytes: &[u64], total: u64, x: f64) -> String {
    let mut s =
        format!("<p class=\"cat-hover-at\">t = {}</p><table class=\"cat-hover-table\"><tbody>", time_text(x as i64));
    for (k, name) in categories.iter().enumerate() {
        let b = bytes.get(k).copied().unwrap_or(0);
        let share = if total == 0 { 0.0 } else { b as f64 * 100.0 / total as f64 };
        let _ = write!(
            s,
            "<tr data-bytes=\"{b}\"><td><span class=\"sw cat-{}\"></span>{}</td><td class=\"num\" title=\"{b} bytes\">{}</td><td class=\"num\">{share:.1}%</td></tr>",
            k % 9,
            esc(name),
            size_text(b)
        );
    }
    let _ = write!(
        s,
        "<tr class=\"cat-total\"><td>total</td><td class=\"num\" title=\"{total} bytes\">{}</td><td></td></tr></tbody></table>",
        size_text(total)
    );
    s
}

/// The line that says which part of the timeline the chart shows, and the window on the canvas
/// (`data-x0`, `data-x1`: µs since the first point).
fn write_window(el: &HtmlElement, p: &Profile) {
    let (x0, x1) = p.window();
    let shown = if p.is_whole() {
        "the whole timeline".to_string()
    } else {
        format!(
            "t = {} to {} of {} · double-click or 0 for all",
            time_text(x0 as i64),
            time_text(x1 as i64),
            time_text(p.span() as i64)
        )
    };
    if let Ok(Some(line)) = el.query_selector(".cat-window") {
        line.set_text_content(Some(&format!("Showing {shown} · wheel to zoom, drag or ← → to pan")));
    }
    if let Ok(Some(c)) = el.query_selector("canvas.cat-chart") {
        let _ = c.set_attribute("data-x0", &x0.to_string());
        let _ = c.set_attribute("data-x1", &x1.to_string());
    }
}

/// The chart canvas an event happened on, if it did.
fn chart_of(e: &web_sys::Event) -> Option<HtmlElement> {
    let el: HtmlElement = e.target()?.dyn_into().ok()?;
    el.class_list().contains("cat-chart").then_some(el)
}

/// The minimap an event happened on, if it did.
fn minimap_of(e: &web_sys::Event) -> Option<HtmlElement> {
    let el: HtmlElement = e.target()?.dyn_into().ok()?;
    el.class_list().contains("cat-mini").then_some(el)
}

/// The window centred at a pointer on the minimap.
fn minimap_at(c: &HtmlElement, e: &MouseEvent) -> Option<Input> {
    analysis(Action::CategoryMinimap { x_px: f64::from(e.offset_x()), width_px: f64::from(c.client_width()) })
}

fn analysis(a: Action) -> Option<Input> {
    Some(Input::Page(PageInput::Analysis(a)))
}

/// The chart's zoom and pan: the wheel zooms at the pointer, a drag pans, a click or drag on the
/// minimap moves the window there, a double click shows the whole timeline, and on the focused chart `+` `-` zoom, `←` `→` pan and `0` shows all.
pub fn chart_bindings(target: &web_sys::EventTarget) -> Vec<Binding> {
    vec![
        bind(target, "wheel", |e: &WheelEvent| {
            let c = chart_of(e)?;
            e.prevent_default();
            let dy = if e.delta_y() != 0.0 { e.delta_y() } else { e.delta_x() };
            analysis(Action::CategoryWheel {
                x_px: f64::from(e.offset_x()),
                width_px: f64::from(c.client_width()),
                delta_y_px: wheel_delta_px(dy, e.delta_mode()),
            })
        }),
        bind(target, "pointerdown", |e: &PointerEvent| {
            if let Some(m) = minimap_of(e) {
                let _ = m.set_pointer_capture(e.pointer_id());
                // The keys keep acting on the chart the minimap moves.
                e.prevent_default();
                let chart = m.parent_element().and_then(|p| p.query_selector("canvas.cat-chart").ok().flatten());
                if let Some(c) = chart.and_then(|c| c.dyn_into::<HtmlElement>().ok()) {
                    let _ = c.focus();
                }
                return minimap_at(&m, e);
            }
            let c = chart_of(e)?;
            let _ = c.set_pointer_capture(e.pointer_id());
            let _ = c.focus();
            None
        }),
        bind(target, "pointermove", |e: &PointerEvent| {
            if let Some(m) = minimap_of(e).filter(|_| e.buttons() & 1 == 1) {
                return minimap_at(&m, e);
            }
            let c = chart_of(e).filter(|_| e.buttons() & 1 == 1 && e.movement_x() != 0)?;
            analysis(Action::CategoryDrag { dx_px: f64::from(e.movement_x()), width_px: f64::from(c.client_width()) })
        }),
        bind(target, "dblclick", |e: &MouseEvent| {
            chart_of(e)?;
            analysis(Action::CategoryWhole)
        }),
        bind(target, "keydown", |e: &KeyboardEvent| {
            chart_of(e)?;
            let k = match e.key().as_str() {
                "+" | "=" => '+',
                "-" => '-',
                "ArrowLeft" => '←',
                "ArrowRight" => '→',
                "0" => '0',
                _ => return None,
            };
            // The page's own keys (and its scrolling) leave a key the chart took.
            e.prevent_default();
            e.stop_propagation();
            analysis(Action::CategoryKey(k))
        }),
    ]
}
