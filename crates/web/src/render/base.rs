//! The timeline's base layer: axes, grid, bands (rasterized, [`PlotPixels`]), annotations and
//! OOM markers, exactly or stretched from the held copies while a zoom goes on.

use super::{
    band_edge, crisp, draw_annotations, held_what, is_small, shown_what, view_edges, Frame, FrameInfo, HeldWhat,
    Holding, PaintMemo, Palette, ViewEdges, FONT, SMALL_FONT,
};
use crate::canvas::{fit_canvas, put_pixels};
use memviz_view::axis;
use memviz_view::model::column_envelopes;
use memviz_view::path;
use memviz_view::raster::Raster;
use memviz_view::state::OpenFile;
use memviz_view::viewport::{clamp_px, PlotRect, Viewport};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, Path2d};

/// Draws everything of the timeline that does not depend on the pointer.
///
/// `file` is drawn on `canvas` of `css` size (CSS px) at `dpr`, in the colours of `pal`.
#[allow(clippy::too_many_lines)] // one exact frame of the base layer, step by step
pub fn draw_timeline_base(
    file: Option<&OpenFile>,
    pal: &Palette,
    css: (f64, f64),
    dpr: f64,
    (canvas, ctx): (&HtmlCanvasElement, &CanvasRenderingContext2d),
    holding: Option<Holding<'_>>,
    pixels: &mut Option<PlotPixels>,
) -> FrameInfo {
    let mut info = FrameInfo::default();
    // With no file the canvas shows nothing: it keeps no pixels, so that the page's size changes
    // (the status line coming with a load) reallocate nothing while a file loads.
    let Some(f) = file else {
        fit_canvas(canvas, 0.0, 0.0, dpr);
        ctx.clear_rect(0.0, 0.0, 1.0, 1.0);
        return info;
    };
    let (w, h) = css;
    fit_canvas(canvas, w, h, dpr);
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, w, h);
    let rect = f.plot_rect(css);
    let v = &f.viewport;
    let xm = f.xmap();
    // A moment (no history) is one column with no x axis; an empty layout has no ticks.
    let kind = plot_kind(f);

    let (y_step, mut y_ticks) = axis::byte_ticks(v.y_max_bytes, ((rect.height_px / 56.0) as usize).clamp(2, 10));
    // Time ticks on the time axis; else round trace entries, each at its step (the steps are
    // only where the layout draws an entry).
    let x_target = ((rect.width_px / 120.0) as usize).clamp(2, 14);
    let mut x_ticks: Vec<(f64, String)> = if xm.is_time() {
        let (x_step, ticks) = axis::x_ticks(v.x0, v.x1, x_target, true);
        ticks.into_iter().map(|t| (t, axis::time_label(t, x_step))).collect()
    } else {
        memviz_view::entries::entry_ticks(&f.plot.layout, v.x0, v.x1, x_target)
            .into_iter()
            .map(|(step, entry)| (step, entry.to_string()))
            .collect()
    };
    if kind != PlotKind::Timeline {
        x_ticks.clear();
    }
    if kind == PlotKind::Empty {
        y_ticks.clear();
    }

    // The bands, rasterized into the plot area's pixels and put there in one call.
    let left_dev = rect.left_px * dpr;
    let width_dev = rect.width_px * dpr;
    let bottom_dev = rect.bottom_px() * dpr;
    let (ox, oy) = (left_dev.round(), (rect.top_px * dpr).round());
    let (_, _, rw, rh) = raster_area(&rect, dpr);
    let x_dev_of_pos = |pos: f64| v.x_px(&rect, pos) * dpr;
    let area = (ox, oy, rw as f64, rh as f64);
    match holding {
        Some(h) if h.preview => {
            draw_held(ctx, &h, v, area, left_dev, width_dev);
            info.preview = true;
        }
        _ => {
            let pixels = pixels.get_or_insert_with(|| compute_plot(f, pal, rect, dpr));
            put_plot(&mut info, ctx, rect, dpr, pixels);
            if let Some(h) = holding {
                // Before the grid and the markers are drawn, so that a stretched copy has none.
                let plot = &h.plots[usize::from(v.x0 <= 0.0 && v.x1 >= v.full_x1)];
                if plot.has_room() {
                    plot.keep(canvas, area, h.what, (v.x0, v.x1));
                } else {
                    info.hold_later = true;
                }
            }
        }
    }

    // The grid, behind what is drawn.
    let _ = ctx.set_global_composite_operation("destination-over");
    ctx.set_stroke_style_str(pal.grid);
    ctx.set_line_width(1.0);
    ctx.begin_path();
    for &t in &y_ticks {
        let y = crisp(v.y_px(&rect, t), dpr);
        ctx.move_to(rect.left_px, y);
        ctx.line_to(rect.right_px(), y);
    }
    for &(t, _) in &x_ticks {
        let x = crisp(v.x_px(&rect, t), dpr);
        ctx.move_to(x, rect.top_px);
        ctx.line_to(x, rect.bottom_px());
    }
    ctx.stroke();
    let _ = ctx.set_global_composite_operation("source-over");

    // The plot, in device pixels, clipped to the plot area.
    ctx.save();
    ctx.begin_path();
    ctx.rect(rect.left_px, rect.top_px, rect.width_px, rect.height_px);
    ctx.clip();
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);

    // 4. OOM markers.
    ctx.set_stroke_style_str(pal.oom);
    ctx.set_line_width(1.5 * dpr);
    ctx.begin_path();
    for o in &f.plot.ooms {
        let x = clamp_px(x_dev_of_pos(xm.pos(o.step)), left_dev + dpr, left_dev + width_dev - dpr);
        ctx.move_to(x, rect.top_px * dpr);
        ctx.line_to(x, bottom_dev);
    }
    ctx.stroke();
    ctx.restore();

    // Axes.
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    ctx.set_stroke_style_str(pal.axis);
    ctx.set_line_width(1.0);
    ctx.begin_path();
    let bx = crisp(rect.left_px, dpr);
    let by = crisp(rect.bottom_px(), dpr);
    ctx.move_to(bx, rect.top_px);
    ctx.line_to(bx, by);
    ctx.line_to(rect.right_px(), by);
    for &t in &y_ticks {
        let y = crisp(v.y_px(&rect, t), dpr);
        ctx.move_to(bx - 4.0, y);
        ctx.line_to(bx, y);
    }
    for &(t, _) in &x_ticks {
        let x = crisp(v.x_px(&rect, t), dpr);
        ctx.move_to(x, by);
        ctx.line_to(x, by + 4.0);
    }
    ctx.stroke();
    ctx.set_fill_style_str(pal.text);
    ctx.set_font(FONT);
    ctx.set_text_align("right");
    ctx.set_text_baseline("middle");
    for (&t, label) in y_ticks.iter().zip(axis::byte_axis_labels(y_step, &y_ticks)) {
        let _ = ctx.fill_text(&label, rect.left_px - 7.0, v.y_px(&rect, t));
    }
    ctx.set_text_align("center");
    ctx.set_text_baseline("top");
    let mut last_right = f64::NEG_INFINITY;
    for (t, label) in x_ticks {
        let width = ctx.measure_text(&label).map_or(40.0, |m| m.width());
        let x = clamp_px(v.x_px(&rect, t), width / 2.0 + 2.0, w - width / 2.0 - 2.0);
        if x - width / 2.0 < last_right + 10.0 {
            continue;
        }
        last_right = x + width / 2.0;
        let _ = ctx.fill_text(&label, x, by + 7.0);
        info.x_labels.push(label);
    }
    ctx.set_fill_style_str(pal.muted);
    match kind {
        PlotKind::Timeline => {
            ctx.set_text_align("right");
            let title = if xm.is_time() { "time since the first event" } else { "trace entry" };
            let _ = ctx.fill_text(title, rect.right_px(), by + 26.0);
        }
        PlotKind::Moment => {
            ctx.set_text_align("center");
            let _ = ctx.fill_text("the snapshot's moment", rect.left_px + rect.width_px / 2.0, by + 7.0);
            let _ = ctx.fill_text("(no history recorded)", rect.left_px + rect.width_px / 2.0, by + 24.0);
        }
        PlotKind::Empty => {
            ctx.set_text_align("center");
            ctx.set_text_baseline("middle");
            let text = match f.plot.layout.options.mode {
                memviz_core::timeline::Mode::MappedPages => "No mapped pages to draw",
                memviz_core::timeline::Mode::Segments => "No segments to draw",
                memviz_core::timeline::Mode::Allocations => "No allocations to draw",
            };
            let _ = ctx.fill_text(text, rect.left_px + rect.width_px / 2.0, rect.top_px + rect.height_px / 2.0);
        }
    }

    // Annotation strip.
    draw_annotations(ctx, f, pal, &rect, &xm);

    // OOM labels.
    ctx.set_font(SMALL_FONT);
    ctx.set_text_baseline("top");
    for o in &f.plot.ooms {
        let x = v.x_px(&rect, xm.pos(o.step));
        if x < rect.left_px - 1.0 || x > rect.right_px() + 1.0 {
            continue;
        }
        info.oom_x_px.push(x);
        let label = "OOM";
        let tw = ctx.measure_text(label).map_or(24.0, |m| m.width());
        let lx = if x + 4.0 + tw > rect.right_px() { x - 4.0 - tw } else { x + 4.0 };
        ctx.set_fill_style_str(pal.label_back);
        ctx.fill_rect(lx - 2.0, rect.top_px + 3.0, tw + 4.0, 14.0);
        ctx.set_fill_style_str(pal.oom);
        ctx.set_text_align("left");
        let _ = ctx.fill_text(label, lx, rect.top_px + 4.0);
    }
    info
}

/// What the timeline's plot area shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotKind {
    /// Bands over steps or time.
    Timeline,
    /// No history: one column of what was live when the snapshot was taken, no x axis.
    Moment,
    /// Nothing to draw (no allocation, segment or mapped range): no ticks, a line saying so.
    Empty,
}

/// What the plot area of `f` shows.
pub fn plot_kind(f: &OpenFile) -> PlotKind {
    if f.plot.layout.elements.is_empty() {
        PlotKind::Empty
    } else if f.is_moment() {
        PlotKind::Moment
    } else {
        PlotKind::Timeline
    }
}

impl PlotKind {
    /// Its name in `#plot[data-kind]`.
    pub fn name(self) -> &'static str {
        match self {
            PlotKind::Timeline => "timeline",
            PlotKind::Moment => "moment",
            PlotKind::Empty => "empty",
        }
    }
}

/// Stretches the held copies into window `v` of the plot area `area` (device px: x, y, width,
/// height; the plot's own left edge and width in device px are `left_dev`, `width_dev`): the
/// copy of the whole window first, the last exact frame over it.
pub(crate) fn draw_held(
    ctx: &CanvasRenderingContext2d,
    h: &Holding<'_>,
    v: &Viewport,
    area: (f64, f64, f64, f64),
    left_dev: f64,
    width_dev: f64,
) {
    let (ox, oy, w, hgt) = area;
    ctx.save();
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    ctx.begin_path();
    ctx.rect(ox, oy, w, hgt);
    ctx.clip();
    // Nearest-pixel stretching: the copy shows for a few frames only, and smoothing it was most
    // of the browser's work on such a frame.
    ctx.set_image_smoothing_enabled(false);
    // Where each copy goes: x and width on the canvas (device px).
    let placed = [&h.plots[1], &h.plots[0]].map(|p| {
        p.shows(&h.what).map(|(x0, x1)| {
            // Column k of the copy showed position x0 + (ox + k - left_dev) / width_dev * (x1 - x0).
            let r = (x1 - x0) / v.width();
            let dx = left_dev + (x0 - v.x0) / v.width() * width_dev + (ox - left_dev) * r;
            (p, dx, f64::from(p.canvas.width()) * r)
        })
    });
    // The whole window's copy is only needed where the last exact frame does not reach.
    let covered = placed[1].is_some_and(|(_, dx, dw)| dx <= ox && dx + dw >= ox + w);
    for (p, dx, dw) in placed.into_iter().skip(usize::from(covered)).flatten() {
        let (pw, ph) = (f64::from(p.canvas.width()), f64::from(p.canvas.height()));
        let _ = ctx.draw_image_with_html_canvas_element_and_sw_and_sh_and_dx_and_dy_and_dw_and_dh(
            &p.canvas, 0.0, 0.0, pw, ph, dx, oy, dw, hgt,
        );
    }
    ctx.restore();
}

/// The plot area of one exact frame, computed but not yet on the canvas: the bands' pixels and
/// the outlines filled behind them. Computing it is most of an exact frame's work, so it can be
/// done in a task of its own ([`prepare_plot`]) and the frame only puts it on the canvas.
pub struct PlotPixels {
    raster: Raster,
    /// Path strings (device px) of the summarized band's outline, if it shows, and of the area
    /// under the drawn stack.
    summarized_path: Option<String>,
    stack_path: String,
    /// Their colours.
    fills: (&'static str, &'static str),
    bands_drawn: usize,
    vertices_drawn: usize,
    edges: std::rc::Rc<ViewEdges>,
}

/// What the plot area of the file shown is of: what a held copy would be of, and the window
/// `(x0, x1)`, bit for bit.
pub type PixelsKey = (HeldWhat, u64, u64);

/// The key of the plot area of the file shown, in its window.
pub(crate) fn pixels_key(fr: &Frame<'_>) -> Option<PixelsKey> {
    let v = &fr.file()?.viewport;
    Some((shown_what(fr)?, v.x0.to_bits(), v.x1.to_bits()))
}

/// Computes the plot area of the next exact frame now and keeps it for that frame, when the
/// timeline is what the page shows and not small (a small one's is computed in its frame).
pub fn prepare_plot(fr: &Frame<'_>, memo: &mut PaintMemo) {
    let (Some(f), Some(key)) = (fr.file().filter(|f| !is_small(f)), pixels_key(fr)) else { return };
    if fr.state.view().is_panel() || memo.prepared.as_ref().is_some_and(|p| p.0 == key) {
        return;
    }
    let rect = f.plot_rect(fr.state.plot_css());
    let pixels = compute_plot(f, fr.palette(), rect, fr.state.dpr());
    memo.prepared = Some((key, pixels));
}

/// The plot area's origin and size in device px (whole pixels).
pub(crate) fn raster_area(rect: &PlotRect, dpr: f64) -> (f64, f64, usize, usize) {
    let left_dev = rect.left_px * dpr;
    let (ox, oy) = (left_dev.round(), (rect.top_px * dpr).round());
    let w = ((left_dev + rect.width_px * dpr).round() - ox).max(0.0) as usize;
    let h = ((rect.bottom_px() * dpr).round() - oy).max(0.0) as usize;
    (ox, oy, w, h)
}

/// Computes the plot area exactly: the bands rasterized, and the outlines of the summarized
/// band and of the area under the drawn stack.
pub(crate) fn compute_plot(f: &OpenFile, pal: &Palette, rect: PlotRect, dpr: f64) -> PlotPixels {
    compute_plot_of(&f.plot.layout, f.xmap(), &f.viewport, pal, rect, dpr)
}

/// [`compute_plot`] of any layout, on any x axis and window (the Compare view draws two files
/// on its aligned axis).
pub(crate) fn compute_plot_of(
    layout: &memviz_core::timeline::Layout,
    xm: memviz_view::xmap::XMap<'_>,
    v: &Viewport,
    pal: &Palette,
    rect: PlotRect,
    dpr: f64,
) -> PlotPixels {
    let (ox, oy, rw, rh) = raster_area(&rect, dpr);
    let mut raster = Raster::new(rw, rh);
    let left_dev = rect.left_px * dpr;
    let width_dev = rect.width_px * dpr;
    let bottom_dev = rect.bottom_px() * dpr;
    let y_dev = |bytes: f64| v.y_px(&rect, bytes) * dpr;
    let x_dev_of_pos = |pos: f64| v.x_px(&rect, pos) * dpr;
    // In the raster's pixels.
    let to_px = |step: f64, off: f64| (x_dev_of_pos(xm.pos(step)) - ox, y_dev(off) - oy);
    let cols = width_dev.ceil().max(1.0) as usize;
    let bounds: Vec<f64> = (0..=cols).map(|c| xm.step(v.x0 + v.width() * (c as f64 / width_dev).min(1.0))).collect();
    let envs = column_envelopes(layout, &bounds);

    // Bands at least half a device pixel tall that overlap the view.
    let s_left = xm.step(v.x0);
    let s_right = xm.step(v.x1);
    let px_per_byte_dev = v.px_per_byte(&rect) * dpr;
    let min_size = 0.5 / px_per_byte_dev;
    let mut edge: Vec<(f64, f64)> = Vec::new();
    let mut bands = layout.bands_overlapping(s_left.floor().max(0.0) as u32, s_right.ceil().max(0.0) as u32);
    bands.retain(|&b| layout.band_size(b) as f64 >= min_size);
    let edges = view_edges(layout, &bands, s_left, s_right, width_dev);
    let (layout_key, window) = ViewEdges::key(layout, s_left, s_right, width_dev);
    let (mut bands_drawn, mut vertices_drawn) = (0, 0);
    for (i, &band) in edges.bands.iter().enumerate() {
        band_edge(layout, &edges, i, s_left, s_right, &to_px, &mut edge);
        if edge.len() < 2 {
            continue;
        }
        let colour = pal.bands_rgb[(layout.band_element[band as usize] % 10) as usize];
        raster.band(&edge, layout.band_size(band) as f64 * px_per_byte_dev, colour);
        bands_drawn += 1;
        vertices_drawn += edge.len() * 2;
    }

    // A number a path string can hold (a canvas skips a non-finite point; a path string with
    // one is not drawn at all).
    let fin = |v: f64| if v.is_finite() { v.clamp(-1e7, 1e7) } else { bottom_dev };
    let summarized_path = envs.iter().any(|e| e.total_max_bytes > e.drawn_at_peak_bytes).then(|| {
        let mut d = String::with_capacity(envs.len() * 48);
        for (c, e) in envs.iter().enumerate() {
            let (x, y) = (left_dev + c as f64, fin(y_dev(e.total_max_bytes)));
            if c == 0 {
                path::move_to(&mut d, x, y);
            } else {
                path::line_to(&mut d, x, y);
            }
            path::h_to(&mut d, x + 1.0);
        }
        for (c, e) in envs.iter().enumerate().rev() {
            let (x, y) = (left_dev + c as f64, fin(y_dev(e.drawn_at_peak_bytes)));
            path::line_to(&mut d, x + 1.0, y);
            path::h_to(&mut d, x);
        }
        path::close(&mut d);
        d
    });
    let mut stack_path = String::with_capacity(envs.len() * 24);
    path::move_to(&mut stack_path, left_dev, bottom_dev);
    for (c, e) in envs.iter().enumerate() {
        let (x, y) = (left_dev + c as f64, fin(y_dev(e.drawn_max_bytes)));
        path::line_to(&mut stack_path, x, y);
        path::h_to(&mut stack_path, x + 1.0);
    }
    path::line_to(&mut stack_path, left_dev + cols as f64, bottom_dev);
    path::close(&mut stack_path);
    PlotPixels {
        raster,
        summarized_path,
        stack_path,
        fills: (pal.summarized, pal.stack),
        bands_drawn,
        vertices_drawn,
        edges: std::rc::Rc::new(ViewEdges { layout: layout_key, window, min_size_bytes: min_size, edges }),
    }
}

/// Makes the held copy of the plot area that the exact frame shown kept in `memo.prepared` for
/// it, having no held canvas then (a file's first frame: allocating one there and copying was
/// 3 ms of a 1M-entry load's first frame).
pub fn hold_prepared(fr: &Frame<'_>, memo: &mut PaintMemo) {
    let (Some(f), Some(what), Some(key)) = (fr.file(), held_what(fr), pixels_key(fr)) else { return };
    // Only the plot area of the view shown; one computed ahead for another view stays.
    if memo.prepared.as_ref().is_none_or(|p| p.0 != key) {
        return;
    }
    let Some((_, p)) = memo.prepared.take() else { return };
    let v = &f.viewport;
    let plot = &fr.ui.held[usize::from(v.x0 <= 0.0 && v.x1 >= v.full_x1)];
    if plot.shows(&what) == Some((v.x0, v.x1)) {
        return;
    }
    let (ox, oy, _, _) = raster_area(&f.plot_rect(fr.state.plot_css()), fr.state.dpr());
    let size = (p.raster.width_px() as u32, p.raster.height_px() as u32);
    plot.keep_drawn(size, what, (v.x0, v.x1), |ctx| {
        put_pixels(ctx, bytemuck::cast_slice(p.raster.rows()), size, (0.0, 0.0));
        ctx.save();
        let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, -ox, -oy);
        fill_outlines(ctx, &p);
        ctx.restore();
    });
}

/// Fills the outlines of a plot area (device px) behind what the canvas holds: the summarized
/// band on top of the drawn stack, and the area under the drawn stack.
fn fill_outlines(ctx: &CanvasRenderingContext2d, p: &PlotPixels) {
    let _ = ctx.set_global_composite_operation("destination-over");
    // Each outline goes to the canvas as one path string: one call instead of two per column.
    let fill_outline = |colour: &str, d: &str| {
        if let Ok(path) = Path2d::new_with_path_string(d) {
            ctx.set_fill_style_str(colour);
            ctx.fill_with_path_2d(&path);
        }
    };
    if let Some(d) = &p.summarized_path {
        fill_outline(p.fills.0, d);
    }
    fill_outline(p.fills.1, &p.stack_path);
}

/// Puts a computed plot area on the canvas: the bands' pixels, and behind them (each behind what
/// is drawn before it) the summarized band on top of the drawn stack and the area under the
/// drawn stack (where bands are too thin to draw one by one).
pub(crate) fn put_plot(info: &mut FrameInfo, ctx: &CanvasRenderingContext2d, rect: PlotRect, dpr: f64, p: &PlotPixels) {
    let (ox, oy, _, _) = raster_area(&rect, dpr);
    let raster = &p.raster;
    if raster.width_px() > 0 && raster.height_px() > 0 {
        put_pixels(
            ctx,
            bytemuck::cast_slice(raster.rows()),
            (raster.width_px() as u32, raster.height_px() as u32),
            (ox, oy),
        );
    }
    ctx.save();
    ctx.begin_path();
    ctx.rect(rect.left_px, rect.top_px, rect.width_px, rect.height_px);
    ctx.clip();
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    fill_outlines(ctx, p);
    ctx.restore();
    info.bands_drawn = p.bands_drawn;
    info.vertices_drawn = p.vertices_drawn;
    info.edges = Some(std::rc::Rc::clone(&p.edges));
}
