//! Where things are on the timeline's canvases, in CSS px: margins, the plot area, the
//! annotation strip's rows and an annotation's extent. Shared by drawing and hit testing.

use memviz_core::plot::{AnnotationSpan, TimeMap};

use crate::viewport::{PlotRect, Viewport};
use crate::xmap::XMap;

/// Left margin of both canvases (room for y labels), CSS px.
pub const LEFT_PX: f64 = 84.0;
/// Right margin, CSS px.
pub const RIGHT_PX: f64 = 20.0;
/// Bottom margin of the plot (tick labels and the axis title), CSS px.
pub const BOTTOM_PX: f64 = 46.0;
/// Height of one annotation row, CSS px.
pub const ANNOTATION_ROW_PX: f64 = 17.0;
/// Top margin above the annotation strip, CSS px.
pub const TOP_PX: f64 = 10.0;

/// The plot area of the main canvas for a canvas of `css_w` × `css_h` and an annotation strip of
/// `annotation_rows` rows.
pub fn plot_rect(css_w: f64, css_h: f64, annotation_rows: usize) -> PlotRect {
    let strip = if annotation_rows > 0 { annotation_rows as f64 * ANNOTATION_ROW_PX + 6.0 } else { 0.0 };
    let top = TOP_PX + strip;
    PlotRect {
        left_px: LEFT_PX,
        top_px: top,
        width_px: (css_w - LEFT_PX - RIGHT_PX).max(10.0),
        height_px: (css_h - top - BOTTOM_PX).max(10.0),
    }
}

/// The plot area of the minimap (aligned with the main plot).
pub fn minimap_rect(css_w: f64, css_h: f64) -> PlotRect {
    PlotRect {
        left_px: LEFT_PX,
        top_px: 3.0,
        width_px: (css_w - LEFT_PX - RIGHT_PX).max(10.0),
        height_px: (css_h - 6.0).max(4.0),
    }
}

/// The annotation row at a y pixel, if the strip has one there.
pub fn annotation_row_at(y_px: f64, rows: usize) -> Option<usize> {
    let r = ((y_px - TOP_PX) / ANNOTATION_ROW_PX).floor();
    (r >= 0.0 && (r as usize) < rows).then_some(r as usize)
}

/// x extent (CSS px, unclipped) of an annotation.
pub fn annotation_x_px(
    a: &AnnotationSpan,
    time: Option<&TimeMap>,
    xm: &XMap<'_>,
    v: &Viewport,
    rect: &PlotRect,
) -> (f64, f64) {
    let (p0, p1) = match (xm.is_time(), time) {
        (true, Some(t)) => ((a.start_us - t.t0_us) as f64, (a.end_us - t.t0_us) as f64),
        _ => (a.start_step, a.end_step),
    };
    (v.x_px(rect, p0), v.x_px(rect, p1))
}
