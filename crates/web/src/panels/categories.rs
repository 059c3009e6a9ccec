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
use crate::paint::{Frame, FrameInfo};
use memviz_view::state::panels::Profile;

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
    /// (profile, pointer x, chart width in device px) drawn.
    written: Option<(usize, Option<f64>, u32)>,
    /// The chart without its marker, and its plot area.
    layer: chart::Layered,
    area: Option<chart::Area>,
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
    let on = fr.state.analysis().categories.colour_inferred;
    let _ = write!(
        s,
        "<p><button type=\"button\" class=\"cat-colour{}\" data-act=\"cat-colour\" aria-pressed=\"{on}\">Colour by category (inferred)</button></p>",
        if on { " current" } else { "" }
    );
    // The Live set's grouping over time, drawn in the chart above the tab.
    let _ = write!(
        s,
        "<p><button type=\"button\" data-act=\"group-timeline\" title=\"Each group's live bytes over the trace (the Live set's menu chooses the grouping)\">Chart by {} over time</button></p>",
        esc(&fr.state.analysis().group_by.title())
    );
    let Some(c) = fr.derived.categories_of(fr.state) else { return };
    let names: Vec<String> = Category::ALL.iter().map(|c| c.name().replace('_', " ")).collect();
    legend(&names, c.timeline.inferred, s);
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
    Some(format!("Category (inferred): {}", cat.name().replace('_', " ")))
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
    let written = memo.written;
    if written.map(|w| w.0) != Some(st.profile_seq) {
        el.set_hidden(st.profile.is_none());
        let mut s = String::new();
        if let Some(p) = &st.profile {
            let t0 = p.timeline.times_us.iter().flatten().next().copied().unwrap_or(0);
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
                    p.peak_time_us.map_or(String::new(), |t| format!(" at t = {}", time_text(t - t0)))
                );
            }
            s.push_str("<canvas class=\"cat-chart\" aria-label=\"Bytes per category over time\"></canvas>");
            legend(&p.timeline.categories, p.timeline.inferred, &mut s);
            s.push_str("<p class=\"cat-hover\">Point at the chart to read the bytes of each category.</p>");
        }
        el.set_inner_html(&s);
    }
    // The chart is as wide as the page: it is drawn again when that changes (or the pixel ratio).
    let width_dev = el
        .query_selector("canvas.cat-chart")
        .ok()
        .flatten()
        .map_or(0, |c| (f64::from(c.client_width()) * fr.state.dpr()).round() as u32);
    let want = (st.profile_seq, st.hover_x_px, width_dev);
    if written != Some(want) {
        if let Some(p) = &st.profile {
            let same_chart = written.map(|w| (w.0, w.2)) == Some((st.profile_seq, width_dev));
            draw_profile(fr, memo, &el, p, st.hover_x_px, same_chart);
        }
        memo.written = Some(want);
    }
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
    let n = tl.bytes.len();
    let times: Vec<f64> =
        (0..n).map(|i| tl.times_us.get(i).copied().flatten().map_or(i as f64, |t| t as f64)).collect();
    let t0 = times.first().copied().unwrap_or(0.0);
    let t1 = times.last().copied().unwrap_or(1.0).max(t0 + 1.0);
    let restored = same_chart && memo.area.is_some() && memo.layer.restore(&canvas);
    if !restored {
        chart::fit(&canvas, CHART_CSS_PX, dpr);
        let max_bytes = (0..n).map(|i| tl.total_at(i)).max().unwrap_or(0);
        let (_, ticks) = memviz_view::axis::linear_ticks(0.0, t1 - t0, 6);
        let label = |x: f64| time_text(x as i64);
        let axes = chart::Axes { x: 0.0..t1 - t0, x_ticks: ticks, x_label: &label, max_bytes, y_ticks: 6 };
        let area = chart::draw(&canvas, dpr, fr.palette(), &axes, |c, pen| {
            // Bands, bottom to top.
            let mut below: Vec<(f64, f64)> = times.iter().map(|&t| (t - t0, 0.0)).collect();
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
        });
        memo.area = area;
        memo.layer.keep(&fr.ui.document, &canvas);
    }
    // What the pointer is over.
    let (Some(hx), Some(area)) = (hover_x_px, memo.area) else {
        return;
    };
    if n == 0 || !area.contains_x(hx) {
        return;
    }
    let t = t0 + area.x_at(hx);
    let i = times.partition_point(|&v| v < t).min(n - 1);
    let i = if i > 0 && (times[i] - t).abs() > (t - times[i - 1]).abs() { i - 1 } else { i };
    chart::marker(&canvas, dpr, &area, times[i] - t0, chart::rgb(fr.palette().chart_marker));
    let mut s = format!("t = {}: ", time_text((times[i] - t0) as i64));
    for (k, name) in tl.categories.iter().enumerate() {
        let b = tl.bytes.get(i).and_then(|r| r.get(k)).copied().unwrap_or(0);
        let _ = write!(s, "{name} {} ({b} bytes); ", size_text(b));
    }
    let total = tl.total_at(i);
    let _ = write!(s, "total {} ({total} bytes)", size_text(total));
    if let Ok(Some(r)) = el.query_selector(".cat-hover") {
        r.set_text_content(Some(&s));
        let _ = r.set_attribute("data-total-bytes", &total.to_string());
    }
}
