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

/// Width of the one column a snapshot without history is drawn as: a third of the plot area,
/// between these, CSS px.
pub const MOMENT_WIDTH_PX: (f64, f64) = (80.0, 320.0);

/// The plot area of a snapshot without history (one moment): a column in the middle of the
/// plot area `rect`, as tall as it, so its y axis stands beside the column.
pub fn moment_rect(rect: PlotRect) -> PlotRect {
    let width_px = (rect.width_px / 3.0).clamp(MOMENT_WIDTH_PX.0, MOMENT_WIDTH_PX.1).min(rect.width_px);
    PlotRect { left_px: rect.left_px + (rect.width_px - width_px) / 2.0, width_px, ..rect }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plot_area_leaves_the_margins_and_the_annotation_strip() {
        let r = plot_rect(1000.0, 500.0, 0);
        assert_eq!((r.left_px, r.top_px), (LEFT_PX, TOP_PX));
        assert_eq!(r.width_px, 1000.0 - LEFT_PX - RIGHT_PX);
        assert_eq!(r.bottom_px(), 500.0 - BOTTOM_PX);
        let a = plot_rect(1000.0, 500.0, 2);
        assert_eq!(a.top_px, TOP_PX + 2.0 * ANNOTATION_ROW_PX + 6.0);
        assert_eq!(a.bottom_px(), r.bottom_px(), "the strip takes room from the top only");
    }

    #[test]
    fn a_moment_is_a_column_in_the_middle() {
        let r = plot_rect(900.0, 500.0, 0);
        let m = moment_rect(r);
        assert_eq!((m.top_px, m.height_px), (r.top_px, r.height_px));
        assert!((m.left_px - r.left_px - (r.right_px() - m.right_px())).abs() < 1e-9, "centred: {m:?}");
        assert!((m.width_px - r.width_px / 3.0).abs() < 1e-9);
        assert_eq!(moment_rect(plot_rect(200.0, 100.0, 0)).width_px, MOMENT_WIDTH_PX.0);
        assert_eq!(moment_rect(plot_rect(4000.0, 100.0, 0)).width_px, MOMENT_WIDTH_PX.1);
        let tiny = moment_rect(plot_rect(0.0, 0.0, 0));
        assert!(tiny.width_px > 0.0 && tiny.width_px <= plot_rect(0.0, 0.0, 0).width_px);
    }

    #[test]
    fn a_canvas_without_size_still_has_a_plot_area() {
        let r = plot_rect(0.0, 0.0, 3);
        assert!(r.width_px > 0.0 && r.height_px > 0.0);
        let m = minimap_rect(0.0, 0.0);
        assert!(m.width_px > 0.0 && m.height_px > 0.0);
    }

    #[test]
    fn the_minimap_lines_up_with_the_plot() {
        let (p, m) = (plot_rect(900.0, 400.0, 1), minimap_rect(900.0, 60.0));
        assert_eq!((p.left_px, p.width_px), (m.left_px, m.width_px));
    }

    #[test]
    fn annotation_rows_are_found_by_y() {
        assert_eq!(annotation_row_at(TOP_PX + 1.0, 3), Some(0));
        assert_eq!(annotation_row_at(TOP_PX + ANNOTATION_ROW_PX + 1.0, 3), Some(1));
        assert_eq!(annotation_row_at(TOP_PX + 3.0 * ANNOTATION_ROW_PX + 1.0, 3), None);
        assert_eq!(annotation_row_at(TOP_PX - 1.0, 3), None);
        assert_eq!(annotation_row_at(TOP_PX + 1.0, 0), None);
    }

    #[test]
    fn an_annotation_spans_its_steps_or_its_times() {
        let a = AnnotationSpan {
            name: "step".into(),
            start_step: 10.0,
            end_step: 30.0,
            start_us: 1_100,
            end_us: 1_400,
            metadata_rows: None,
        };
        let r = PlotRect { left_px: 0.0, top_px: 0.0, width_px: 100.0, height_px: 10.0 };
        let v = Viewport::new(100.0, 1.0, 1.0);
        assert_eq!(annotation_x_px(&a, None, &XMap::steps(), &v, &r), (10.0, 30.0));
        let t = TimeMap::from_knots(vec![0.0, 100.0], vec![0.0, 1000.0], 1_000);
        let vt = Viewport::new(1000.0, 1.0, 1.0);
        assert_eq!(annotation_x_px(&a, Some(&t), &XMap::time(&t), &vt, &r), (10.0, 40.0));
    }
}
