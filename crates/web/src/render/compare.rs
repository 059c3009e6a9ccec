//! The Compare view's charts (`#cmp-plot-a`, `#cmp-diff`, `#cmp-plot-b`,
//! [`crate::compare_view`]): each file's Active Memory Timeline drawn on the aligned axis
//! ([`memviz_view::state::compare_view::aligned_map`]) with one height for both and where the two
//! part marked ([`memviz_view::state::compare_view::parting_elements`]), the two totals
//! per pixel column with their difference shaded and each iteration's peak difference, the cursor
//! in all three (on a canvas over each chart: a move of the cursor redraws no chart), and the
//! readout under them. Reads the state and the comparison only.

use memviz_core::analysis::compare::Comparison;
use memviz_core::analysis::{signed_size_text, size_text};
use memviz_core::plot::TimeMap;
use memviz_view::axis;
use memviz_view::state::compare_view::{aligned_domain, aligned_map, window_in, OnTimeline};
use memviz_view::state::OpenFile;
use memviz_view::viewport::{fit_y, PlotRect, Viewport};
use memviz_view::xmap::XMap;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, HtmlElement};

use super::base::{compute_plot_of, put_plot};
use super::FrameInfo;
use crate::canvas::fit_canvas;
use crate::compare_view::{BOTTOM_PX, LEFT_PX, RIGHT_PX, TOP_PX};
use crate::dom::find;
use crate::paint::Frame;

/// The difference chart's room below for the x axis's labels.
const AXIS_PX: f64 = 20.0;
/// Colours of A and B (their curves, the names above their timelines).
const A_COLOUR: &str = "#4e79a7";
const B_COLOUR: &str = "#f28e2b";

/// What the charts were drawn from last (nothing is drawn again for a frame that changes none
/// of it).
#[derive(Default)]
pub struct Memo {
    drawn: Option<String>,
    /// The cursor drawn over them, and the timeline under the pointer.
    cursor: Option<(f64, Option<OnTimeline>)>,
    /// Copies of the charts of the last exact frame, what they were drawn from but the window,
    /// and the window they show: while the wheel turns, frames stretch them.
    held: Vec<HtmlCanvasElement>,
    held_of: Option<(String, (f64, f64))>,
}

/// One side: its file, and how its steps map to the aligned axis.
struct Side<'a> {
    file: &'a OpenFile,
    map: TimeMap,
}

impl Side<'_> {
    /// Highest live bytes between two aligned positions.
    fn max_between(&self, x0: f64, x1: f64) -> u64 {
        let m = XMap::time(&self.map);
        self.file.plot.layout.max_live_between(m.step(x0), m.step(x1))
    }

    /// Live bytes at an aligned position.
    fn at(&self, x: f64) -> u64 {
        self.file.plot.layout.live_bytes_at(XMap::time(&self.map).step(x))
    }
}

/// Draws the three charts and the readout when the view is shown; whether it is (the timeline's
/// canvases are then hidden and not drawn).
pub fn draw(fr: &Frame<'_>, memo: &mut Memo) -> bool {
    if !fr.state.compare_shown() {
        memo.drawn = None;
        return false;
    }
    let doc = &fr.ui.document;
    let (Some(c), Some((ia, ib))) = (fr.derived.view_comparison_of(fr.state), fr.state.compare_pair()) else {
        return true;
    };
    let (Some(fa), Some(fb)) = (fr.state.files().get(ia), fr.state.files().get(ib)) else { return true };
    let cv = fr.state.compare_view();
    let domain = aligned_domain(c);
    let (x0, x1) = window_in(cv.window(), domain);
    let cursor = cv.cursor().map(|s| domain.0 + s * (domain.1 - domain.0));
    let canvases: Vec<Option<HtmlCanvasElement>> =
        ["cmp-plot-a", "cmp-diff", "cmp-plot-b"].iter().map(|id| find(doc, id)).collect();
    let sizes: Vec<(f64, f64)> = canvases
        .iter()
        .map(|c| c.as_ref().map_or((0.0, 0.0), |c| (f64::from(c.client_width()), f64::from(c.client_height()))))
        .collect();
    let picked = fr.derived.view_picked_of(fr.state);
    // What the charts are drawn from but the window.
    let base = format!(
        "{ia}/{ib}/{}/{sizes:?}/{}/{:?}/{:?}/{}",
        fr.state.generation(),
        fr.state.dpr(),
        fr.state.theme().theme(),
        fr.state.compare_picked(),
        picked.is_some()
    );
    let key = format!("{base}/{x0}/{x1}");
    let sides = [
        Side { file: fa, map: aligned_map(c, &c.a_iterations, &fa.plot.layout) },
        Side { file: fb, map: aligned_map(c, &c.b_iterations, &fb.plot.layout) },
    ];
    let dpr = fr.state.dpr();
    let pal = fr.palette();
    let iterations = matches!(c.alignment, memviz_core::analysis::compare::Alignment::Iterations { .. });
    let overlays: Vec<Option<HtmlCanvasElement>> =
        ["cmp-plot-a-cursor", "cmp-diff-cursor", "cmp-plot-b-cursor"].iter().map(|id| find(doc, id)).collect();
    let same_charts = memo.drawn.as_deref() == Some(key.as_str());
    let top = sides.iter().map(|s| s.max_between(x0, x1)).max().unwrap_or(0);
    let pointer = cursor.map(|x| (x, cv.on()));
    if !same_charts || memo.cursor != pointer {
        // The cursor alone, on the canvases over the charts.
        memo.cursor = pointer;
        for (k, overlay) in overlays.iter().enumerate() {
            let Some(overlay) = overlay else { continue };
            fit_canvas(overlay, sizes[k].0, sizes[k].1, dpr);
            let Some(ctx) = context(overlay) else { continue };
            ctx.clear_rect(0.0, 0.0, f64::from(overlay.width()), f64::from(overlay.height()));
            draw_cursor(&ctx, cursor, (x0, x1), chart_rect(k, sizes[k]), dpr, pal);
        }
        write_readout(fr, &sides, cursor, iterations);
        write_hover(fr, c, &sides, pointer, fit_y(top as f64));
    }
    if same_charts {
        return true;
    }
    let parting = fr.derived.view_parting_of(fr.state);
    // While the wheel turns, the last exact charts stretched to the window; exact once it rests.
    let held_window = memo.held_of.as_ref().filter(|(b, _)| *b == base).map(|h| h.1);
    if let Some(from) = held_window.filter(|_| cv.previewing(fr.ui.now_ms())) {
        for (k, canvas) in canvases.iter().enumerate() {
            let (Some(canvas), Some(held)) = (canvas, memo.held.get(k)) else { continue };
            let Some(ctx) = context(canvas) else { continue };
            stretch(&ctx, held, chart_rect(k, sizes[k]), from, (x0, x1), dpr);
        }
        memo.drawn = Some(format!("preview/{key}"));
        write_attributes(doc, (x0, x1), domain, parting.as_deref(), [fa, fb], false);
        return true;
    }
    memo.drawn = Some(key);
    for (k, canvas) in canvases.iter().enumerate() {
        let Some(canvas) = canvas else { continue };
        let (w, h) = sizes[k];
        if w < 1.0 || h < 1.0 {
            continue;
        }
        fit_canvas(canvas, w, h, dpr);
        let Some(ctx) = context(canvas) else { continue };
        let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
        ctx.clear_rect(0.0, 0.0, w * dpr, h * dpr);
        let rect = chart_rect(k, (w, h));
        match k {
            1 => draw_difference(&ctx, c, &sides, (x0, x1), rect, dpr, pal),
            _ => {
                let side = &sides[k / 2];
                let marks = parting.as_ref().map_or(&[][..], |m| m[k / 2].as_slice());
                let picks = picked.as_ref().map_or(&[][..], |m| m.elements[k / 2].as_slice());
                draw_timeline(&ctx, side, [marks, picks], (x0, x1, domain.1), top, rect, dpr, pal);
                let name = format!("{} {}", if k == 0 { "A" } else { "B" }, side.file.name);
                label(&ctx, dpr, &name, LEFT_PX, TOP_PX - 5.0, if k == 0 { A_COLOUR } else { B_COLOUR });
            }
        }
    }
    write_attributes(doc, (x0, x1), domain, parting.as_deref(), [fa, fb], true);
    hold(doc, &canvases, memo);
    memo.held_of = Some((base, (x0, x1)));
    true
}

/// Copies the charts just drawn exactly, for the frames of a wheel to stretch.
fn hold(doc: &web_sys::Document, canvases: &[Option<HtmlCanvasElement>], memo: &mut Memo) {
    while memo.held.len() < canvases.len() {
        let Some(c) = doc.create_element("canvas").ok().and_then(|c| c.dyn_into::<HtmlCanvasElement>().ok()) else {
            return;
        };
        memo.held.push(c);
    }
    for (canvas, held) in canvases.iter().zip(&memo.held) {
        let Some(canvas) = canvas else { continue };
        if held.width() != canvas.width() || held.height() != canvas.height() {
            held.set_width(canvas.width());
            held.set_height(canvas.height());
        }
        if let Some(ctx) = context(held) {
            ctx.clear_rect(0.0, 0.0, f64::from(held.width()), f64::from(held.height()));
            let _ = ctx.draw_image_with_html_canvas_element(canvas, 0.0, 0.0);
        }
    }
}

/// Draws a held chart that showed window `from` as if it showed `to`: the left margin (the byte
/// axis) as it was, the rest stretched along x (nearest pixel: it shows for a few frames).
fn stretch(
    ctx: &CanvasRenderingContext2d,
    held: &HtmlCanvasElement,
    rect: PlotRect,
    from: (f64, f64),
    to: (f64, f64),
    dpr: f64,
) {
    let (w, h) = (f64::from(held.width()), f64::from(held.height()));
    let (left, width) = (rect.left_px * dpr, rect.width_px * dpr);
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, w, h);
    ctx.set_image_smoothing_enabled(false);
    let _ = ctx.draw_image_with_html_canvas_element_and_sw_and_sh_and_dx_and_dy_and_dw_and_dh(
        held, 0.0, 0.0, left, h, 0.0, 0.0, left, h,
    );
    let span = (to.1 - to.0).max(f64::MIN_POSITIVE);
    let dx = left + (from.0 - to.0) / span * width;
    let dw = (from.1 - from.0) / span * width;
    ctx.save();
    ctx.begin_path();
    ctx.rect(left, 0.0, width, h);
    ctx.clip();
    let _ = ctx.draw_image_with_html_canvas_element_and_sw_and_sh_and_dx_and_dy_and_dw_and_dh(
        held, left, 0.0, width, h, dx, 0.0, dw, h,
    );
    ctx.restore();
    ctx.set_image_smoothing_enabled(true);
}

/// The view's numbers for tests and tools: the window, the domain, the marks, what Detail
/// follows, and whether the charts were drawn exactly (else stretched from the last exact ones).
fn write_attributes(
    doc: &web_sys::Document,
    (x0, x1): (f64, f64),
    domain: (f64, f64),
    parting: Option<&[Vec<memviz_core::timeline::ElementIndex>; 2]>,
    [fa, fb]: [&OpenFile; 2],
    exact: bool,
) {
    let Some(s) = doc.get_element_by_id("compare") else { return };
    let _ = s.set_attribute("data-drawn", if exact { "exact" } else { "stretched" });
    let _ = s.set_attribute("data-window", &format!("{x0:.6},{x1:.6}"));
    let _ = s.set_attribute("data-domain", &format!("{},{}", domain.0, domain.1));
    let counts = parting.map_or((0, 0), |m| (m[0].len(), m[1].len()));
    let _ = s.set_attribute("data-parting", &format!("{},{}", counts.0, counts.1));
    // What each timeline's Detail follows: its rows of the window, or `-` for the whole trace.
    let focus = |f: &OpenFile| {
        let o = &f.plot.layout.options;
        let rows = o.focus_rows.map_or_else(|| "-".to_string(), |(a, b)| format!("{a}-{b}"));
        format!("{}:{rows}", o.max_entries)
    };
    let _ = s.set_attribute("data-focus", &format!("{},{}", focus(fa), focus(fb)));
}

fn context(canvas: &HtmlCanvasElement) -> Option<CanvasRenderingContext2d> {
    canvas.get_context("2d").ok().flatten().and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
}

/// The plot area of chart `k` (0: A, 1: the totals, 2: B) of `(w, h)` CSS px.
fn chart_rect(k: usize, (w, h): (f64, f64)) -> PlotRect {
    let bottom = if k == 1 { BOTTOM_PX + AXIS_PX } else { BOTTOM_PX };
    PlotRect {
        left_px: LEFT_PX,
        top_px: TOP_PX,
        width_px: (w - LEFT_PX - RIGHT_PX).max(1.0),
        height_px: (h - TOP_PX - bottom).max(1.0),
    }
}

/// The cursor's line over a chart, where it is in the window.
fn draw_cursor(
    ctx: &CanvasRenderingContext2d,
    cursor: Option<f64>,
    (x0, x1): (f64, f64),
    rect: PlotRect,
    dpr: f64,
    pal: &memviz_view::theme::Palette,
) {
    let Some(x) = cursor.filter(|x| (x0..=x1).contains(x)) else { return };
    let px = rect.left_px + (x - x0) / (x1 - x0).max(f64::MIN_POSITIVE) * rect.width_px;
    ctx.set_stroke_style_str(pal.text);
    ctx.set_line_width(dpr);
    ctx.begin_path();
    ctx.move_to(px * dpr, rect.top_px * dpr);
    ctx.line_to(px * dpr, rect.bottom_px() * dpr);
    ctx.stroke();
}

fn label(ctx: &CanvasRenderingContext2d, dpr: f64, text: &str, x: f64, y: f64, colour: &str) {
    ctx.set_font(&format!("{}px system-ui, sans-serif", 12.0 * dpr));
    ctx.set_fill_style_str(colour);
    let _ = ctx.fill_text(text, x * dpr, y * dpr);
}

/// The readout under the charts: the cursor's place, both files' live bytes there, B − A; in
/// `#cmp-readout` with its numbers in data attributes.
fn write_readout(fr: &Frame<'_>, sides: &[Side<'_>; 2], cursor: Option<f64>, iterations: bool) {
    let Some(p) = find::<HtmlElement>(&fr.ui.document, "cmp-readout") else { return };
    let Some(x) = cursor else {
        p.set_text_content(Some("Point at a chart to read both files at the same aligned moment."));
        let _ = p.remove_attribute("data-x");
        return;
    };
    let (a, b) = (sides[0].at(x), sides[1].at(x));
    let steps = [XMap::time(&sides[0].map).step(x), XMap::time(&sides[1].map).step(x)];
    let at = if iterations { format!("iteration {:.2}", x + 1.0) } else { format!("{:.1}% of each trace", x * 100.0) };
    p.set_text_content(Some(&format!(
        "{at} · A {} (step {:.0}) · B {} (step {:.0}) · B − A {}",
        size_text(a),
        steps[0],
        size_text(b),
        steps[1],
        signed_size_text(i128::from(b) - i128::from(a))
    )));
    let _ = p.set_attribute("data-x", &format!("{x:.6}"));
    let _ = p.set_attribute("data-a-bytes", &a.to_string());
    let _ = p.set_attribute("data-b-bytes", &b.to_string());
    let _ = p.set_attribute("data-steps", &format!("{:.3},{:.3}", steps[0], steps[1]));
}

/// What is under the pointer over a timeline (`#cmp-hover`): an allocation's stack and what the
/// other file holds from its source line at the same aligned moment; with its numbers in data
/// attributes. `y_max` is the timelines' shared height in bytes.
fn write_hover(
    fr: &Frame<'_>,
    c: &Comparison,
    sides: &[Side<'_>; 2],
    pointer: Option<(f64, Option<OnTimeline>)>,
    y_max: f64,
) {
    use memviz_core::timeline::Hit;
    use memviz_view::state::compare_view::{element_site, elements_of_site};
    let Some(p) = find::<HtmlElement>(&fr.ui.document, "cmp-hover") else { return };
    for a in ["data-side", "data-bytes", "data-other-count", "data-other-bytes", "data-site"] {
        let _ = p.remove_attribute(a);
    }
    let hint = "Point at an allocation in either timeline: its stack, and what the other file holds from its source line at the same moment.";
    let Some((x, Some(on))) = pointer else {
        p.set_text_content(Some(hint));
        return;
    };
    let (me, other) = if on.b { (&sides[1], &sides[0]) } else { (&sides[0], &sides[1]) };
    let (names, l) = (if on.b { ("B", "A") } else { ("A", "B") }, &me.file.plot.layout);
    let step = XMap::time(&me.map).step(x);
    let text = match l.hit_test(step, on.up * y_max) {
        Some(Hit::Element(e)) => {
            let Some(el) = l.element(e) else { return };
            let site = element_site(c, &me.file.snap, el);
            let other_step = XMap::time(&other.map).step(x);
            let other_layout = &other.file.plot.layout;
            let row = other_layout.row_at(other_step);
            let (found, bytes) = elements_of_site(&other.file.snap, other_layout, row, &site, c.python_frames_only);
            let _ = p.set_attribute("data-side", &names.0.to_lowercase());
            let _ = p.set_attribute("data-bytes", &el.size_bytes.to_string());
            let _ = p.set_attribute("data-other-count", &found.len().to_string());
            let _ = p.set_attribute("data-other-bytes", &bytes.to_string());
            let _ = p.set_attribute("data-site", &site);
            let counterpart = if found.is_empty() {
                format!("{} at the same moment (step {other_step:.0}): nothing live from {site}", names.1)
            } else {
                format!(
                    "{} at the same moment (step {other_step:.0}): {} from {site} in {} allocation{}",
                    names.1,
                    size_text(bytes),
                    found.len(),
                    if found.len() == 1 { "" } else { "s" }
                )
            };
            let described = memviz_core::describe::element_text(&me.file.snap, me.file.plot.device_pos, l, e);
            // The allocation's first line, what the other file holds, then the rest (its stack).
            let (head, rest) = described.split_once('\n').unwrap_or((described.as_str(), ""));
            format!("{}: {head}\n{counterpart}\n{rest}", names.0)
        }
        Some(Hit::Summarized) => format!(
            "{}: small allocations, summarized at this zoom (raise Detail in the timeline to draw them one by one)",
            names.0
        ),
        None => hint.to_string(),
    };
    if p.text_content().as_deref() != Some(text.as_str()) {
        p.set_text_content(Some(&text));
    }
}

/// One file's timeline on the aligned axis, with its byte axis; `top` the shared height; `marks`
/// where the files part and a picked row's allocations.
#[allow(clippy::too_many_arguments)] // one chart's inputs: its side, window, height, marks and page
fn draw_timeline(
    ctx: &CanvasRenderingContext2d,
    side: &Side<'_>,
    marks: [&[memviz_core::timeline::ElementIndex]; 2],
    (x0, x1, end): (f64, f64, f64),
    top: u64,
    rect: PlotRect,
    dpr: f64,
    pal: &memviz_view::theme::Palette,
) {
    let mut v = Viewport::new(end, top as f64, 1e-9);
    v.x0 = x0;
    v.x1 = x1;
    v.y_max_bytes = fit_y(top as f64);
    let layout = &side.file.plot.layout;
    let pixels = compute_plot_of(layout, XMap::time(&side.map), &v, pal, rect, dpr);
    let mut info = FrameInfo::default();
    put_plot(&mut info, ctx, rect, dpr, &pixels);
    // Where the two part in the highlight's colour, a picked row's allocations in the pin's.
    let colours = [(pal.highlight_fill, pal.highlight_stroke), (pal.pinned_fill, pal.pinned_stroke)];
    for (marks, (fill, stroke)) in marks.iter().zip(colours) {
        let bands: Vec<u32> = marks.iter().filter_map(|&e| layout.element(e).and_then(|el| el.band)).collect();
        if bands.is_empty() {
            continue;
        }
        let plot = crate::paint::edges::PlotDev::of(layout, XMap::time(&side.map), &v, rect, dpr).reusing(&info);
        plot.clip(ctx);
        ctx.set_fill_style_str(fill);
        ctx.set_stroke_style_str(stroke);
        ctx.set_line_width(if stroke == pal.pinned_stroke { dpr } else { 0.5 * dpr });
        plot.trace_bands(ctx, &bands, |_| {
            ctx.fill();
            ctx.stroke();
        });
        ctx.restore();
    }
    byte_axis(ctx, rect, v.y_max_bytes, dpr, pal);
}

/// Byte ticks and labels on the left of a chart whose top is `y_max` bytes.
fn byte_axis(ctx: &CanvasRenderingContext2d, rect: PlotRect, y_max: f64, dpr: f64, pal: &memviz_view::theme::Palette) {
    let (step, ticks) = axis::byte_ticks(y_max, 4);
    let labels = axis::byte_axis_labels(step, &ticks);
    ctx.set_font(&format!("{}px system-ui, sans-serif", 11.0 * dpr));
    ctx.set_text_align("right");
    for (t, l) in ticks.iter().zip(&labels) {
        let y = rect.bottom_px() - t / y_max.max(1.0) * rect.height_px;
        ctx.set_fill_style_str(pal.muted);
        let _ = ctx.fill_text(l, (rect.left_px - 6.0) * dpr, (y + 4.0) * dpr);
        ctx.set_stroke_style_str(pal.grid);
        ctx.set_line_width(dpr);
        ctx.begin_path();
        ctx.move_to(rect.left_px * dpr, y * dpr);
        ctx.line_to(rect.right_px() * dpr, y * dpr);
        ctx.stroke();
    }
    ctx.set_text_align("left");
}

/// Both totals per pixel column of the window, the difference shaded (B above A in B's colour,
/// below in A's), the iterations' edges and each one's peak difference, and the x axis.
fn draw_difference(
    ctx: &CanvasRenderingContext2d,
    c: &Comparison,
    sides: &[Side<'_>; 2],
    (x0, x1): (f64, f64),
    rect: PlotRect,
    dpr: f64,
    pal: &memviz_view::theme::Palette,
) {
    let cols = rect.width_px.ceil().max(1.0) as usize;
    let per = (x1 - x0) / cols as f64;
    let totals: Vec<(u64, u64)> = (0..cols)
        .map(|k| {
            let (a, b) = (x0 + k as f64 * per, x0 + (k + 1) as f64 * per);
            (sides[0].max_between(a, b), sides[1].max_between(a, b))
        })
        .collect();
    let top = fit_y(totals.iter().map(|t| t.0.max(t.1)).max().unwrap_or(0) as f64);
    let y = |bytes: u64| (rect.bottom_px() - bytes as f64 / top.max(1.0) * rect.height_px) * dpr;
    for (k, &(a, b)) in totals.iter().enumerate() {
        if a == b {
            continue;
        }
        ctx.set_fill_style_str(if b > a { "rgba(242, 142, 43, 0.35)" } else { "rgba(78, 121, 167, 0.35)" });
        let (lo, hi) = (y(a.min(b)), y(a.max(b)));
        ctx.fill_rect((rect.left_px + k as f64) * dpr, hi, dpr, lo - hi);
    }
    for (colour, pick) in [(A_COLOUR, 0), (B_COLOUR, 1)] {
        ctx.set_stroke_style_str(colour);
        ctx.set_line_width(1.5 * dpr);
        ctx.begin_path();
        for (k, t) in totals.iter().enumerate() {
            let px = (rect.left_px + k as f64 + 0.5) * dpr;
            let v = if pick == 0 { t.0 } else { t.1 };
            if k == 0 {
                ctx.move_to(px, y(v));
            } else {
                ctx.line_to(px, y(v));
            }
        }
        ctx.stroke();
    }
    byte_axis(ctx, rect, top, dpr, pal);
    let x_px = |x: f64| rect.left_px + (x - x0) / (x1 - x0).max(f64::MIN_POSITIVE) * rect.width_px;
    ctx.set_font(&format!("{}px system-ui, sans-serif", 11.0 * dpr));
    // Each iteration's edge and, where there is room, its peak difference.
    for p in c.iteration_peaks() {
        let (s, e) = ((p.iteration - 1) as f64, p.iteration as f64);
        if e < x0 || s > x1 {
            continue;
        }
        ctx.set_stroke_style_str(pal.axis);
        ctx.set_line_width(dpr);
        let _ = ctx.set_line_dash(&js_sys::Array::of2(&(3.0 * dpr).into(), &(3.0 * dpr).into()));
        ctx.begin_path();
        ctx.move_to(x_px(s).max(rect.left_px) * dpr, rect.top_px * dpr);
        ctx.line_to(x_px(s).max(rect.left_px) * dpr, rect.bottom_px() * dpr);
        ctx.stroke();
        let _ = ctx.set_line_dash(&js_sys::Array::new());
        let (l, r) = (x_px(s).max(rect.left_px), x_px(e).min(rect.right_px()));
        let d = i128::from(p.peak_b_bytes) - i128::from(p.peak_a_bytes);
        // The whole label where it fits, the difference alone where less room is left.
        let text = match r - l {
            w if w > 170.0 => Some(format!("it. {}: peak B − A {}", p.iteration, signed_size_text(d))),
            w if w > 64.0 => Some(signed_size_text(d)),
            _ => None,
        };
        if let Some(text) = text {
            ctx.set_fill_style_str(pal.text);
            ctx.set_text_align("center");
            let _ = ctx.fill_text(&text, (l + r) / 2.0 * dpr, (rect.top_px - 5.0) * dpr);
            ctx.set_text_align("left");
        }
    }
    // The x axis: iterations (1-based names) or the share of the trace.
    let iterations = matches!(c.alignment, memviz_core::analysis::compare::Alignment::Iterations { .. });
    let (tick_step, ticks) = axis::linear_ticks(x0, x1, (rect.width_px / 90.0).max(2.0) as usize);
    // As many decimals as the ticks' step has (4.36, not 4.359999999999999).
    let decimals = (-tick_step.log10().floor()).clamp(0.0, 9.0) as usize;
    ctx.set_fill_style_str(pal.muted);
    ctx.set_text_align("center");
    let name_px = 80.0;
    for t in ticks.into_iter().filter(|&t| x_px(t) < rect.right_px() - name_px) {
        let text = if iterations {
            format!("{:.*}", decimals, t + 1.0)
        } else {
            format!("{:.*}%", decimals.saturating_sub(2), t * 100.0)
        };
        let _ = ctx.fill_text(&text, x_px(t) * dpr, (rect.bottom_px() + 14.0) * dpr);
    }
    ctx.set_text_align("right");
    let name = if iterations { "iteration →" } else { "share of the trace →" };
    let _ = ctx.fill_text(name, rect.right_px() * dpr, (rect.bottom_px() + 14.0) * dpr);
    ctx.set_text_align("left");
}

/// Height of the exported image's title (the two files and the verdict), CSS px.
const EXPORT_TITLE_PX: f64 = 58.0;

/// The Compare view as one image: the two files' names and the verdict over the three charts as
/// drawn (at the screen's density), on the theme's background.
pub fn export_compare_png(fr: &Frame<'_>) -> Result<HtmlCanvasElement, wasm_bindgen::JsValue> {
    let no = |why: &str| wasm_bindgen::JsValue::from_str(why);
    let doc = &fr.ui.document;
    let (Some((ia, ib)), Some(c)) = (fr.state.compare_pair(), fr.derived.view_comparison_of(fr.state)) else {
        return Err(no("the comparison is not ready"));
    };
    let (Some(fa), Some(fb)) = (fr.state.files().get(ia), fr.state.files().get(ib)) else {
        return Err(no("a file of the pair is closed"));
    };
    let charts: Vec<HtmlCanvasElement> =
        ["cmp-plot-a", "cmp-diff", "cmp-plot-b"].iter().filter_map(|id| find(doc, id)).collect();
    let w = charts.iter().map(|c| f64::from(c.client_width())).fold(0.0, f64::max);
    let heights: Vec<f64> = charts.iter().map(|c| f64::from(c.client_height())).collect();
    if w < 1.0 || heights.iter().any(|&h| h < 1.0) {
        return Err(no("the Compare view is not shown"));
    }
    let dpr = fr.state.dpr();
    let total = EXPORT_TITLE_PX + heights.iter().sum::<f64>();
    let out: HtmlCanvasElement = doc.create_element("canvas")?.dyn_into().map_err(|_| no("no canvas element"))?;
    out.set_width((w * dpr).round() as u32);
    out.set_height((total * dpr).round() as u32);
    let ctx = crate::dom::context_2d(&out)?;
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    let pal = fr.palette();
    ctx.set_fill_style_str(pal.background);
    ctx.fill_rect(0.0, 0.0, w, total);
    ctx.set_text_baseline("top");
    ctx.set_font("bold 14px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif");
    ctx.set_fill_style_str(pal.text);
    let _ = ctx.fill_text(&format!("A {} · B {}", fa.name, fb.name), 10.0, 6.0);
    ctx.set_font(crate::paint::FONT);
    // The verdict, on as many lines as it takes (two at most).
    let verdict = c.verdict();
    let mut lines: Vec<String> = vec![String::new()];
    for word in verdict.split(' ') {
        let last = lines.last_mut().map_or(String::new(), |l| format!("{l} {word}"));
        if ctx.measure_text(last.trim()).map_or(0.0, |m| m.width()) > w - 20.0 && lines.len() < 2 {
            lines.push(word.to_string());
        } else if let Some(l) = lines.last_mut() {
            *l = last.trim().to_string();
        }
    }
    for (k, l) in lines.iter().enumerate() {
        let _ = ctx.fill_text(l, 10.0, 24.0 + 15.0 * k as f64);
    }
    let mut y = EXPORT_TITLE_PX;
    for (chart, h) in charts.iter().zip(&heights) {
        let _ =
            ctx.draw_image_with_html_canvas_element_and_dw_and_dh(chart, 0.0, y, f64::from(chart.client_width()), *h);
        y += h;
    }
    Ok(out)
}
