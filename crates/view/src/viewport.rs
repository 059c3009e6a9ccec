//! Viewport math: which window of the timeline is visible and where it lands on the canvas.
//!
//! x is a *position*: an event step, or µs since the first event when the x axis shows time
//! (see [`crate::xmap::XMap`]). y is bytes, from 0 at the bottom to `y_max_bytes` at the top.
//! Pixel values are CSS pixels; the canvas scales them by `devicePixelRatio` when drawing.

/// The plot area inside a canvas, in CSS pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlotRect {
    /// Left edge.
    pub left_px: f64,
    /// Top edge.
    pub top_px: f64,
    /// Width.
    pub width_px: f64,
    /// Height.
    pub height_px: f64,
}

impl PlotRect {
    /// Right edge.
    pub fn right_px(&self) -> f64 {
        self.left_px + self.width_px
    }

    /// Bottom edge.
    pub fn bottom_px(&self) -> f64 {
        self.top_px + self.height_px
    }

    /// Whether a point lies inside (edges included).
    pub fn contains(&self, x_px: f64, y_px: f64) -> bool {
        x_px >= self.left_px && x_px <= self.right_px() && y_px >= self.top_px && y_px <= self.bottom_px()
    }
}

/// The visible window of the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viewport {
    /// First visible position.
    pub x0: f64,
    /// Last visible position.
    pub x1: f64,
    /// Bytes at the top of the plot.
    pub y_max_bytes: f64,
    /// The whole x domain is `[0, full_x1]`.
    pub full_x1: f64,
    /// `y_max_bytes` when nothing is zoomed.
    pub full_y_max_bytes: f64,
    /// Narrowest window allowed (positions).
    pub min_width: f64,
}

/// `v` kept within `[lo, hi]`, without `f64::clamp`'s panic when the bounds cross or are NaN
/// (as they do for a canvas measured while hidden): crossed bounds give `hi`, a NaN value `lo`,
/// a NaN bound is no bound.
pub fn clamp_px(v: f64, lo: f64, hi: f64) -> f64 {
    let v = if v >= lo || lo.is_nan() { v } else { lo };
    if v <= hi || hi.is_nan() {
        v
    } else {
        hi
    }
}

/// Room left above the highest point when the y axis is fitted to a peak.
pub const Y_HEADROOM: f64 = 1.05;

impl Viewport {
    /// A viewport showing everything: x in `[0, full_x1]`, y up to `peak_bytes` plus headroom.
    pub fn new(full_x1: f64, peak_bytes: f64, min_width: f64) -> Viewport {
        let full_x1 = if full_x1.is_finite() && full_x1 > 0.0 { full_x1 } else { 1.0 };
        let full_y = fit_y(peak_bytes);
        Viewport {
            x0: 0.0,
            x1: full_x1,
            y_max_bytes: full_y,
            full_x1,
            full_y_max_bytes: full_y,
            min_width: clamp_px(min_width, 1e-9, full_x1),
        }
    }

    /// Width of the window.
    pub fn width(&self) -> f64 {
        self.x1 - self.x0
    }

    /// Whether the whole domain is visible.
    pub fn is_full(&self) -> bool {
        self.x0 <= 0.0 && self.x1 >= self.full_x1 && self.y_max_bytes == self.full_y_max_bytes
    }

    /// x pixel of a position.
    pub fn x_px(&self, rect: &PlotRect, pos: f64) -> f64 {
        rect.left_px + (pos - self.x0) / self.width() * rect.width_px
    }

    /// Position at an x pixel.
    pub fn pos_at(&self, rect: &PlotRect, x_px: f64) -> f64 {
        self.x0 + (x_px - rect.left_px) / rect.width_px.max(1e-9) * self.width()
    }

    /// y pixel of a byte count.
    pub fn y_px(&self, rect: &PlotRect, bytes: f64) -> f64 {
        rect.bottom_px() - bytes / self.y_max_bytes * rect.height_px
    }

    /// Bytes at a y pixel.
    pub fn bytes_at(&self, rect: &PlotRect, y_px: f64) -> f64 {
        (rect.bottom_px() - y_px) / rect.height_px.max(1e-9) * self.y_max_bytes
    }

    /// Pixels per byte (for level of detail: how tall a band is on screen).
    pub fn px_per_byte(&self, rect: &PlotRect) -> f64 {
        rect.height_px / self.y_max_bytes
    }

    /// Zooms x by `factor` (< 1 zooms in) keeping `anchor` (a position) where it is on screen.
    pub fn zoom_x(&mut self, anchor: f64, factor: f64) {
        if !factor.is_finite() || factor <= 0.0 {
            return;
        }
        let anchor = clamp_px(anchor, self.x0, self.x1);
        let w = clamp_px(self.width() * factor, self.min_width, self.full_x1);
        let frac = if self.width() > 0.0 { (anchor - self.x0) / self.width() } else { 0.5 };
        self.x0 = anchor - frac * w;
        self.x1 = self.x0 + w;
        self.clamp();
    }

    /// Moves the window by `delta` positions (positive: to the right), keeping its width.
    pub fn pan(&mut self, delta: f64) {
        if !delta.is_finite() {
            return;
        }
        let w = self.width();
        self.x0 += delta;
        self.x1 = self.x0 + w;
        self.clamp();
    }

    /// Shows `[a, b]` (in either order), widened to the minimum width if needed.
    pub fn set_window(&mut self, a: f64, b: f64) {
        let (mut a, mut b) = if a <= b { (a, b) } else { (b, a) };
        if b - a < self.min_width {
            let mid = (a + b) / 2.0;
            a = mid - self.min_width / 2.0;
            b = mid + self.min_width / 2.0;
        }
        self.x0 = a;
        self.x1 = b;
        self.clamp();
    }

    /// Fits the y axis to a peak (bytes).
    pub fn fit_y(&mut self, peak_bytes: f64) {
        self.y_max_bytes = fit_y(peak_bytes);
    }

    /// Back to the whole domain and the full y range.
    pub fn reset(&mut self) {
        self.x0 = 0.0;
        self.x1 = self.full_x1;
        self.y_max_bytes = self.full_y_max_bytes;
    }

    fn clamp(&mut self) {
        let w = clamp_px(self.width(), self.min_width, self.full_x1);
        if self.x0 < 0.0 {
            self.x0 = 0.0;
        }
        if self.x0 + w > self.full_x1 {
            self.x0 = self.full_x1 - w;
        }
        self.x1 = self.x0 + w;
    }
}

/// y maximum that shows `peak_bytes` with headroom (at least 1 byte).
pub fn fit_y(peak_bytes: f64) -> f64 {
    if peak_bytes.is_finite() && peak_bytes > 0.0 {
        peak_bytes * Y_HEADROOM
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECT: PlotRect = PlotRect { left_px: 50.0, top_px: 10.0, width_px: 1000.0, height_px: 400.0 };

    #[test]
    fn clamp_px_never_panics() {
        assert_eq!(clamp_px(3.0, 0.0, 10.0), 3.0);
        assert_eq!(clamp_px(-3.0, 0.0, 10.0), 0.0);
        assert_eq!(clamp_px(13.0, 0.0, 10.0), 10.0);
        // A label clamp on a canvas measured while hidden: [w/2 + 2, 0 - w/2 - 2].
        assert_eq!(clamp_px(50.0, 5.8, -5.8), -5.8);
        assert_eq!(clamp_px(f64::NAN, 0.0, 1.0), 0.0);
        assert_eq!(clamp_px(0.5, f64::NAN, f64::NAN), 0.5);
        let mut v = Viewport::new(0.0, 0.0, f64::NAN);
        v.zoom_x(f64::NAN, 0.5);
        v.pan(1.0);
        assert!(v.x0 <= v.x1);
    }

    #[test]
    fn pixels_and_positions_round_trip() {
        let v = Viewport::new(2000.0, 100.0, 2.0);
        assert_eq!(v.x_px(&RECT, 0.0), 50.0);
        assert_eq!(v.x_px(&RECT, 2000.0), 1050.0);
        assert!((v.pos_at(&RECT, 550.0) - 1000.0).abs() < 1e-9);
        assert_eq!(v.y_px(&RECT, 0.0), 410.0);
        assert!((v.bytes_at(&RECT, v.y_px(&RECT, 42.0)) - 42.0).abs() < 1e-9);
    }

    #[test]
    fn zoom_keeps_the_anchor_in_place() {
        let mut v = Viewport::new(1000.0, 1.0, 2.0);
        let x = v.x_px(&RECT, 250.0);
        v.zoom_x(250.0, 0.5);
        assert!((v.width() - 500.0).abs() < 1e-9);
        assert!((v.x_px(&RECT, 250.0) - x).abs() < 1e-9);
        // Zooming out past the domain clamps to it.
        v.zoom_x(250.0, 100.0);
        assert_eq!((v.x0, v.x1), (0.0, 1000.0));
        // Never narrower than the minimum.
        v.zoom_x(500.0, 1e-9);
        assert!((v.width() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn pan_stays_inside_the_domain() {
        let mut v = Viewport::new(1000.0, 1.0, 2.0);
        v.set_window(100.0, 200.0);
        v.pan(-500.0);
        assert_eq!((v.x0, v.x1), (0.0, 100.0));
        v.pan(5000.0);
        assert_eq!((v.x0, v.x1), (900.0, 1000.0));
        v.set_window(300.0, 300.0);
        assert_eq!((v.x0, v.x1), (299.0, 301.0));
        v.reset();
        assert!(v.is_full());
    }
}
