//! What is drawn over the base layer (hover and pin outlines), the annotation strip and the
//! minimap.

use super::{
    annotation_x_px, colour_of_name, is_small, plot_kind, Frame, FrameInfo, Palette, PlotDev, PlotKind, SvgPath,
    ANNOTATION_ROW_PX, SMALL_FONT, TOP_PX,
};
use crate::canvas::fit_canvas;
use memviz_core::format::human_size;
use memviz_view::state::{Drag, OpenFile, Target};
use memviz_view::viewport::{clamp_px, PlotRect};
use memviz_view::xmap::XMap;
use web_sys::CanvasRenderingContext2d;

/// Draws what the pointer points at over the base layer: outlines of the hovered and pinned
/// allocations, the hovered annotation's region, the hovered OOM marker.
pub(crate) fn draw_timeline_overlay(fr: &Frame<'_>, drawn: &FrameInfo, ctx: &CanvasRenderingContext2d) {
    let Some(f) = fr.file() else { return };
    let dpr = fr.state.dpr();
    let rect = fr.plot_rect();
    let v = &f.viewport;
    let xm = f.xmap();
    let pal = fr.palette();
    let plot = PlotDev::new(f, rect, dpr).reusing(drawn);
    ctx.save();
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    let hover = if hover_on_svg(fr) { None } else { fr.state.hover() };
    for (t, pinned) in [(fr.state.pinned(), true), (hover, false)] {
        match t {
            Some(Target::Element(e)) => {
                if let Some(b) = plot.layout.element(e).and_then(|el| el.band) {
                    plot.clip(ctx);
                    // A pinned band is filled in a colour no band has, within a dark rim, and
                    // drawn at least 3 px tall, so even a thin one stands out; a hovered one is
                    // outlined.
                    ctx.set_fill_style_str(pal.pinned_fill);
                    plot.trace_bands(ctx, &[b], |_| {
                        if pinned {
                            ctx.set_stroke_style_str(pal.pinned_stroke);
                            ctx.set_line_width(5.0 * dpr);
                            ctx.stroke();
                            ctx.set_stroke_style_str(pal.pinned_fill);
                            ctx.set_line_width(3.0 * dpr);
                            ctx.stroke();
                            ctx.fill();
                        } else {
                            ctx.set_stroke_style_str(pal.outline);
                            ctx.set_line_width(1.5 * dpr);
                            ctx.stroke();
                        }
                    });
                    ctx.restore();
                }
            }
            Some(Target::Annotation(i)) => {
                if let (Some(a), Some(&row)) = (f.plot.annotations.get(i), f.plot.annotation_rows.get(i)) {
                    let (x0, x1) = annotation_x_px(a, f.plot.time.as_ref(), &xm, v, &rect);
                    let (x0, x1) = (x0.max(rect.left_px), x1.min(rect.right_px()).max(x0.max(rect.left_px) + 1.0));
                    ctx.set_fill_style_str(pal.region);
                    ctx.fill_rect(x0 * dpr, rect.top_px * dpr, (x1 - x0) * dpr, rect.height_px * dpr);
                    let y = TOP_PX + row as f64 * ANNOTATION_ROW_PX;
                    ctx.set_stroke_style_str(pal.bands[colour_of_name(&a.name)]);
                    ctx.set_line_width(2.0 * dpr);
                    ctx.stroke_rect(
                        (x0 + 1.0) * dpr,
                        (y + 1.0) * dpr,
                        (x1 - x0 - 2.0).max(0.5) * dpr,
                        (ANNOTATION_ROW_PX - 4.0) * dpr,
                    );
                }
            }
            Some(Target::Oom(i)) => {
                if let Some(o) = f.plot.ooms.get(i) {
                    let x = clamp_px(v.x_px(&rect, xm.pos(o.step)), rect.left_px + 1.0, rect.right_px() - 1.0) * dpr;
                    ctx.set_stroke_style_str(pal.oom);
                    ctx.set_line_width(3.5 * dpr);
                    ctx.begin_path();
                    ctx.move_to(x, rect.top_px * dpr);
                    ctx.line_to(x, rect.bottom_px() * dpr);
                    ctx.stroke();
                }
            }
            Some(Target::Summarized) | None => {}
        }
    }
    ctx.restore();
}

/// Whether the hovered band's outline goes to `#plot-hover` rather than the canvas: over a small
/// timeline (drawn whole on one canvas, see [`super::draw`]), so that a hover draws no canvas
/// again (each new frame of a canvas took about 3 MB more of the compositor's memory, and a few ms).
pub(crate) fn hover_on_svg(fr: &Frame<'_>) -> bool {
    matches!(fr.state.hover(), Some(Target::Element(_)))
        && fr.state.hover() != fr.state.pinned()
        && !fr.state.view().is_panel()
        && fr.file().is_some_and(is_small)
}

/// The hovered band's outline for `#plot-hover`: its path data (device px, as on the canvas),
/// the SVG's `viewBox` (the path's box and the stroke around it, clipped to the plot area) and
/// its place over the plot (that box in CSS px: left, top, width, height).
pub(crate) fn hover_outline(fr: &Frame<'_>, drawn: &FrameInfo) -> Option<(String, String, [f64; 4])> {
    let Some(Target::Element(e)) = fr.state.hover() else { return None };
    let f = fr.file()?;
    let b = f.plot.layout.element(e)?.band?;
    let dpr = fr.state.dpr();
    let rect = fr.plot_rect();
    let path = SvgPath::default();
    PlotDev::new(f, rect, dpr).reusing(drawn).trace_bands(&path, &[b], |_| {});
    let (d, (x0, y0, x1, y1)) = path.finish()?;
    let m = 2.0 * dpr;
    let x0 = (x0 - m).max(rect.left_px * dpr).floor();
    let y0 = (y0 - m).max(rect.top_px * dpr).floor();
    let x1 = (x1 + m).min(rect.right_px() * dpr).ceil();
    let y1 = (y1 + m).min(rect.bottom_px() * dpr).ceil();
    if x1 <= x0 || y1 <= y0 {
        return None;
    }
    let view_box = format!("{x0} {y0} {} {}", x1 - x0, y1 - y0);
    Some((d, view_box, [x0 / dpr, y0 / dpr, (x1 - x0) / dpr, (y1 - y0) / dpr]))
}

/// Letters of a name an annotation's label shows at least (else it shows none).
const MIN_LABEL_CHARS: usize = 6;

pub(crate) fn draw_annotations(
    ctx: &CanvasRenderingContext2d,
    f: &OpenFile,
    pal: &Palette,
    rect: &PlotRect,
    xm: &XMap<'_>,
) {
    let v = &f.viewport;
    ctx.set_font(SMALL_FONT);
    ctx.set_text_align("left");
    ctx.set_text_baseline("middle");
    ctx.set_line_width(1.0);
    // Boxes of one colour that touch within a pixel on a row are drawn as one (thousands of
    // annotations in view would otherwise cost a few canvas calls each): per row, the run
    // being gathered, as (x0, x1, colour).
    // A run that gathered boxes of several colours is drawn in a neutral one.
    let mut runs: Vec<Option<(f64, f64, Option<usize>)>> = Vec::new();
    let draw_box = |(x0, x1, c): (f64, f64, Option<usize>), row: usize| {
        let y = TOP_PX + row as f64 * ANNOTATION_ROW_PX;
        ctx.set_fill_style_str(c.map_or(pal.mixed_annotations_fill, |c| pal.bands[c]));
        ctx.set_global_alpha(if c.is_some() { pal.annotation_alpha } else { 1.0 });
        ctx.fill_rect(x0, y, x1 - x0, ANNOTATION_ROW_PX - 2.0);
        ctx.set_global_alpha(1.0);
        ctx.set_stroke_style_str(c.map_or(pal.mixed_annotations_stroke, |c| pal.bands[c]));
        ctx.stroke_rect(x0 + 0.5, y + 0.5, (x1 - x0 - 1.0).max(0.5), ANNOTATION_ROW_PX - 3.0);
    };
    for (i, a) in f.plot.annotations.iter().enumerate() {
        let Some(&row) = f.plot.annotation_rows.get(i) else {
            continue;
        };
        let (x0, x1) = annotation_x_px(a, f.plot.time.as_ref(), xm, v, rect);
        if x1 < rect.left_px || x0 > rect.right_px() {
            continue;
        }
        let (cx0, cx1) = (x0.max(rect.left_px), x1.min(rect.right_px()).max(x0.max(rect.left_px) + 1.0));
        let c = colour_of_name(&a.name);
        let room = cx1 - cx0 - 6.0;
        if runs.len() <= row {
            runs.resize(row + 1, None);
        }
        let Some(slot) = runs.get_mut(row) else { continue };
        if room <= 14.0 {
            // Too narrow for a label: joins the row's run when it touches it and is of its
            // colour, or narrower than a pixel (whose colour no one could tell apart), so a row
            // costs at most a box per pixel however many annotations it holds.
            match slot {
                Some((_, end, rc)) if cx0 <= *end + 1.0 && (*rc == Some(c) || x1 - x0 < 1.0) => {
                    *end = end.max(cx1);
                    if *rc != Some(c) {
                        *rc = None;
                    }
                }
                _ => {
                    if let Some(run) = slot.replace((cx0, cx1, Some(c))) {
                        draw_box(run, row);
                    }
                }
            }
            continue;
        }
        if let Some(run) = slot.take() {
            draw_box(run, row);
        }
        draw_box((cx0, cx1, Some(c)), row);
        let y = TOP_PX + row as f64 * ANNOTATION_ROW_PX;
        ctx.save();
        ctx.begin_path();
        ctx.rect(cx0, y, cx1 - cx0, ANNOTATION_ROW_PX);
        ctx.clip();
        ctx.set_fill_style_str(pal.text);
        // A label cut to a few letters ("O…", "Opti…") says nothing: such a box stays unlabelled
        // (hovering it names it, a click zooms to it).
        let label = fit_text(ctx, &a.name, room);
        if label == a.name || label.chars().count() > MIN_LABEL_CHARS {
            let _ = ctx.fill_text(&label, cx0 + 3.0, y + (ANNOTATION_ROW_PX - 2.0) / 2.0 + 0.5);
        }
        ctx.restore();
    }
    for (row, run) in runs.into_iter().enumerate() {
        if let Some(run) = run {
            draw_box(run, row);
        }
    }
}

/// `text`, shortened with "…" to fit `max_px`.
pub(crate) fn fit_text(ctx: &CanvasRenderingContext2d, text: &str, max_px: f64) -> String {
    let width = |s: &str| ctx.measure_text(s).map_or(s.len() as f64 * 6.0, |m| m.width());
    if width(text) <= max_px {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let (mut lo, mut hi) = (0usize, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let s: String = chars[..mid].iter().collect::<String>() + "…";
        if width(&s) <= max_px {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 {
        String::new()
    } else {
        chars[..lo].iter().collect::<String>() + "…"
    }
}

/// A coordinate that lands a 1 px line on whole device pixels.
pub(crate) fn crisp(x_css: f64, dpr: f64) -> f64 {
    ((x_css * dpr).floor() + 0.5) / dpr
}

pub(crate) fn draw_minimap(fr: &Frame<'_>) {
    let ui = &fr.ui;
    let ctx = &ui.minimap_ctx;
    let dpr = fr.state.dpr();
    let Some(f) = fr.file() else {
        // It keeps its size for the next file (see [`super::size_ahead`]), and shows nothing.
        let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
        ctx.clear_rect(0.0, 0.0, f64::from(ui.minimap.width()), f64::from(ui.minimap.height()));
        return;
    };
    let (w, h) = fr.state.minimap_css();
    fit_canvas(&ui.minimap, w, h, dpr);
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, w, h);
    let pal = fr.palette();
    let rect = fr.minimap_rect();
    let v = &f.viewport;
    let xm = f.xmap();
    ctx.set_fill_style_str(pal.minimap_back);
    ctx.fill_rect(rect.left_px, rect.top_px, rect.width_px, rect.height_px);
    let kind = plot_kind(f);
    if kind != PlotKind::Timeline {
        // No run to give an overview of.
        ctx.set_fill_style_str(pal.muted);
        ctx.set_font(SMALL_FONT);
        ctx.set_text_align("center");
        ctx.set_text_baseline("middle");
        let text = if kind == PlotKind::Moment { "no history: no overview" } else { "nothing to show" };
        let _ = ctx.fill_text(text, rect.left_px + rect.width_px / 2.0, rect.top_px + rect.height_px / 2.0);
        return;
    }
    // Total memory over the whole run.
    let peak = fr.derived.minimap_cols.iter().copied().fold(1.0f64, f64::max);
    let n = fr.derived.minimap_cols.len().max(1) as f64;
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    let (l, b, wd, hd) = (rect.left_px * dpr, rect.bottom_px() * dpr, rect.width_px * dpr, rect.height_px * dpr);
    ctx.set_fill_style_str(pal.bands[0]);
    ctx.begin_path();
    ctx.move_to(l, b);
    for (c, &m) in fr.derived.minimap_cols.iter().enumerate() {
        let y = b - m / peak * hd;
        let x0 = l + c as f64 * wd / n;
        ctx.line_to(x0, y);
        ctx.line_to(x0 + wd / n, y);
    }
    ctx.line_to(l + wd, b);
    ctx.close_path();
    ctx.fill();
    ctx.set_stroke_style_str(pal.oom);
    ctx.set_line_width(1.5 * dpr);
    for o in &f.plot.ooms {
        let x = clamp_px(l + xm.pos(o.step) / v.full_x1 * wd, l + dpr, l + wd - dpr);
        ctx.begin_path();
        ctx.move_to(x, rect.top_px * dpr);
        ctx.line_to(x, b);
        ctx.stroke();
    }
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    // The window: everything outside it dimmed.
    let px = |pos: f64| rect.left_px + pos / v.full_x1 * rect.width_px;
    let (x0, x1) = (px(v.x0), px(v.x1).max(px(v.x0) + 1.0));
    ctx.set_fill_style_str(pal.minimap_dim);
    ctx.fill_rect(rect.left_px, rect.top_px, x0 - rect.left_px, rect.height_px);
    ctx.fill_rect(x1, rect.top_px, rect.right_px() - x1, rect.height_px);
    ctx.set_stroke_style_str(pal.minimap_window);
    ctx.set_line_width(1.0);
    ctx.stroke_rect(x0 + 0.5, rect.top_px + 0.5, (x1 - x0 - 1.0).max(0.5), rect.height_px - 1.0);
    if let Some(Drag::Brush { start, end, .. }) = fr.state.drag() {
        let (a, b) = (px(start.min(end)), px(start.max(end)));
        ctx.set_fill_style_str(pal.brush);
        ctx.fill_rect(a, rect.top_px, (b - a).max(1.0), rect.height_px);
        ctx.set_stroke_style_str(pal.bands[0]);
        ctx.stroke_rect(a + 0.5, rect.top_px + 0.5, (b - a - 1.0).max(0.5), rect.height_px - 1.0);
    }
    // Scale: the run's peak.
    ctx.set_fill_style_str(pal.muted);
    ctx.set_font(SMALL_FONT);
    ctx.set_text_align("right");
    ctx.set_text_baseline("top");
    let _ = ctx.fill_text(&human_size(peak), rect.left_px - 7.0, rect.top_px);
    ctx.set_text_baseline("bottom");
    let _ = ctx.fill_text("overview", rect.left_px - 7.0, rect.bottom_px());
}
