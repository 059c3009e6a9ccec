//! The analysis panel's charts (fragmentation over time, compared curves, memory by category),
//! drawn with plotters on a `<canvas>`.
//!
//! Charts are drawn in device pixels: the canvas' backing store is its CSS box times
//! devicePixelRatio, and font sizes and line widths are scaled by it, so the charts stay sharp on
//! HiDPI screens. Byte axes tick at powers of two (0, 256 MiB, 512 MiB, ...) and are labelled like
//! the timeline's axis. A chart whose pointer marker moves often keeps a copy of itself without the
//! marker ([`Layered`]), so moving the marker does not lay the chart out again.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, Document, HtmlCanvasElement};

use memviz_view::axis::{byte_axis_unit, byte_label_in};
pub use memviz_view::chart::{binary_ticks, stairs, Area};

/// Coordinates of a chart: x in the caller's unit, y in bytes, both with chosen ticks.
pub type Coord = Cartesian2d<Ticked, Ticked>;

/// A linear axis over `[lo, hi]` whose ticks are chosen by the caller (binary ones for bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ticked {
    /// The axis `[lo, hi]` with the ticks inside it.
    pub fn new(lo: f64, hi: f64, ticks: &[f64]) -> Ticked {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let ticks = ticks.iter().copied().filter(|t| (lo..=hi).contains(t)).collect();
        Ticked { lo, hi, ticks }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let share = (value - self.lo) / (self.hi - self.lo);
        // Float-to-int casts saturate, so far-away points stay far away.
        (f64::from(limit.0) + share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}
/// A chart being drawn.
pub type Chart<'a> = ChartContext<'a, CanvasBackend, Coord>;

/// Font of tick labels, CSS px.
const LABEL_FONT_PX: f64 = 10.0;
/// Font family of the labels (the page's).
const FONT_FAMILY: &str = "system-ui, sans-serif";
/// Width of the y labels' area, CSS px.
const Y_LABELS_PX: f64 = 60.0;
/// Height of the x labels' area, CSS px.
const X_LABELS_PX: f64 = 16.0;
/// Margin around the plot (room for the last x label), CSS px.
const MARGIN_PX: f64 = 6.0;

/// A colour from `0xRRGGBB`.
pub const fn rgb(hex: u32) -> RGBColor {
    RGBColor((hex >> 16) as u8, (hex >> 8) as u8, hex as u8)
}

/// Sizes a canvas' backing store to its CSS box times `dpr` (`fallback_css` when it is not laid
/// out) and returns the CSS size.
pub fn fit(canvas: &HtmlCanvasElement, fallback_css: (f64, f64), dpr: f64) -> (f64, f64) {
    let css = (f64::from(canvas.client_width()), f64::from(canvas.client_height()));
    let css = if css.0 > 0.0 && css.1 > 0.0 { css } else { fallback_css };
    let w = (css.0 * dpr).round().max(1.0) as u32;
    let h = (css.1 * dpr).round().max(1.0) as u32;
    // Setting the size clears the canvas even when it is unchanged.
    canvas.set_width(w);
    canvas.set_height(h);
    css
}

/// The axes of a chart.
pub struct Axes<'a> {
    /// x range.
    pub x: Range<f64>,
    /// x ticks.
    pub x_ticks: Vec<f64>,
    /// Label of an x tick.
    pub x_label: &'a dyn Fn(f64) -> String,
    /// Highest bytes to show.
    pub max_bytes: u64,
    /// y ticks at most.
    pub y_ticks: usize,
}

/// Pens of one chart: sizes given in CSS px, drawn in device px.
#[derive(Clone, Copy, Debug)]
pub struct Pen {
    /// devicePixelRatio.
    pub dpr: f64,
}

impl Pen {
    /// A stroke of `width_css` CSS px.
    pub fn stroke(&self, colour: RGBColor, width_css: f64) -> ShapeStyle {
        colour.stroke_width((width_css * self.dpr).round().max(1.0) as u32)
    }

    /// A line through points.
    pub fn line(&self, chart: &mut Chart<'_>, points: Vec<(f64, f64)>, colour: RGBColor, width_css: f64) {
        if points.len() < 2 {
            return;
        }
        let _ = chart.draw_series(std::iter::once(PathElement::new(points, self.stroke(colour, width_css))));
    }

    /// The area between an upper and a lower line over the same x values, filled.
    pub fn band(&self, chart: &mut Chart<'_>, upper: &[(f64, f64)], lower: &[(f64, f64)], fill: RGBAColor) {
        if upper.len() < 2 {
            return;
        }
        let outline: Vec<(f64, f64)> = upper.iter().chain(lower.iter().rev()).copied().collect();
        let _ = chart.draw_series(std::iter::once(Polygon::new(outline, fill.filled())));
    }

    /// A vertical line over the whole plot at x.
    pub fn vline(&self, chart: &mut Chart<'_>, x: f64, colour: RGBColor, width_css: f64) {
        let y = chart.y_range();
        self.line(chart, vec![(x, y.start), (x, y.end)], colour, width_css);
    }
}

/// Draws a chart on a canvas already sized by [`fit`]: the theme's background, grid lines at the
/// byte ticks, axes and labels (in `pal`'s chart colours), then `series` clipped to the plot
/// area. Returns the plot area.
pub fn draw(
    canvas: &HtmlCanvasElement,
    dpr: f64,
    pal: &crate::paint::Palette,
    axes: &Axes<'_>,
    series: impl FnOnce(&mut Chart<'_>, Pen),
) -> Option<Area> {
    let ctx: CanvasRenderingContext2d = canvas.get_context("2d").ok()??.dyn_into().ok()?;
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    let backend = CanvasBackend::with_canvas_object(canvas.clone())?;
    let root = backend.into_drawing_area();
    let (ink, grid) = (rgb(pal.chart_ink), rgb(pal.chart_grid));
    root.fill(&rgb(pal.chart_back)).ok()?;
    let px = |css: f64| (css * dpr).round() as i32;
    let y_ticks = binary_ticks(axes.max_bytes.max(1), axes.y_ticks);
    let y_top = (axes.max_bytes.max(1) as f64 * 1.04).max(1.0);
    let y_ticks: Vec<f64> = y_ticks.iter().map(|&b| b as f64).collect();
    let x_axis = Ticked::new(axes.x.start, axes.x.end, &axes.x_ticks);
    let (x0, x1) = (x_axis.lo, x_axis.hi);
    let mut chart = ChartBuilder::on(&root)
        .margin_top(px(MARGIN_PX))
        .margin_right(px(MARGIN_PX * 3.0))
        .x_label_area_size(px(X_LABELS_PX))
        .y_label_area_size(px(Y_LABELS_PX))
        .build_cartesian_2d(x_axis, Ticked::new(0.0, y_top, &y_ticks))
        .ok()?;
    let font = (FONT_FAMILY, LABEL_FONT_PX * dpr).into_font().color(&ink);
    let x_label = |x: &f64| (axes.x_label)(*x);
    // All y labels in one unit.
    let y_step = y_ticks.get(1).copied().unwrap_or(1.0);
    let y_unit = byte_axis_unit(y_step, y_ticks.iter().copied().fold(0.0, f64::max));
    let y_label = |b: &f64| byte_label_in(*b, y_unit);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .bold_line_style(grid.stroke_width(px(1.0).max(1) as u32))
        .light_line_style(TRANSPARENT)
        .axis_style(ink.mix(0.6).stroke_width(px(1.0).max(1) as u32))
        .set_all_tick_mark_size(px(3.0))
        .label_style(font)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .draw()
        .ok()?;
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    ctx.save();
    ctx.begin_path();
    ctx.rect(f64::from(xs.start), f64::from(ys.start), f64::from(xs.end - xs.start), f64::from(ys.end - ys.start));
    ctx.clip();
    series(&mut chart, Pen { dpr });
    ctx.restore();
    Some(Area {
        left_px: f64::from(xs.start) / dpr,
        right_px: f64::from(xs.end) / dpr,
        top_px: f64::from(ys.start) / dpr,
        bottom_px: f64::from(ys.end) / dpr,
        x0,
        x1,
    })
}

/// Draws a vertical marker over a drawn chart's plot area at x.
pub fn marker(canvas: &HtmlCanvasElement, dpr: f64, area: &Area, x: f64, colour: RGBColor) {
    let x_px = area.px_of(x);
    if !area.contains_x(x_px) {
        return;
    }
    let Some(mut backend) = CanvasBackend::with_canvas_object(canvas.clone()) else {
        return;
    };
    let dev = |css: f64| (css * dpr).round() as i32;
    let style = Pen { dpr }.stroke(colour, 1.0);
    let _ = backend.draw_line((dev(x_px), dev(area.top_px)), (dev(x_px), dev(area.bottom_px)), &style);
}

/// A copy of a chart without its marker, to draw the marker elsewhere without drawing the chart
/// again.
#[derive(Default)]
pub struct Layered {
    base: Option<HtmlCanvasElement>,
}

impl Layered {
    /// Keeps a copy of the canvas as it is now.
    pub fn keep(&mut self, document: &Document, canvas: &HtmlCanvasElement) {
        if self.base.is_none() {
            self.base = document.create_element("canvas").ok().and_then(|c| c.dyn_into::<HtmlCanvasElement>().ok());
        }
        let Some(base) = &self.base else { return };
        base.set_width(canvas.width());
        base.set_height(canvas.height());
        if let Some(ctx) = context(base) {
            let _ = ctx.draw_image_with_html_canvas_element(canvas, 0.0, 0.0);
        }
    }

    /// Puts the kept copy back on the canvas; false when there is none of its size.
    pub fn restore(&self, canvas: &HtmlCanvasElement) -> bool {
        let Some(base) = &self.base else { return false };
        if base.width() != canvas.width() || base.height() != canvas.height() {
            return false;
        }
        let Some(ctx) = context(canvas) else {
            return false;
        };
        let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
        ctx.clear_rect(0.0, 0.0, f64::from(canvas.width()), f64::from(canvas.height()));
        ctx.draw_image_with_html_canvas_element(base, 0.0, 0.0).is_ok()
    }
}

fn context(canvas: &HtmlCanvasElement) -> Option<CanvasRenderingContext2d> {
    canvas.get_context("2d").ok()??.dyn_into().ok()
}
