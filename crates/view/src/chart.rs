//! The geometry of the analysis panel's charts, without drawing: byte ticks at powers of two,
//! step lines cut to a window, and the plot area's mapping between x and CSS px.

/// Byte ticks from 0 for `[0, max_bytes]`: multiples of the smallest power of two that gives at
/// most `max_ticks` steps (`0, 128 MiB, 256 MiB, 384 MiB` for 456 MiB and 4).
pub fn binary_ticks(max_bytes: u64, max_ticks: usize) -> Vec<u64> {
    let max_ticks = max_ticks.max(1) as u64;
    let mut step: u64 = 1;
    while max_bytes / step > max_ticks && step < (1 << 62) {
        step <<= 1;
    }
    (0..=max_bytes / step).map(|k| k * step).collect()
}

/// A step line through values that each hold until the next point, cut to `[x0, x1]`: the value
/// in effect at `x0` starts it and the last value holds to `x1`. (Plotters moves points outside the
/// plot onto its edge, which would draw the steps outside the window along the edges.)
pub fn stairs(points: &[(f64, f64)], x0: f64, x1: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2 + 2);
    let mut held: Option<f64> = None;
    for &(x, y) in points {
        if x <= x0 {
            held = Some(y);
            continue;
        }
        if out.is_empty() {
            if let Some(h) = held {
                out.push((x0, h));
            }
        }
        if x >= x1 {
            break;
        }
        if let Some(h) = held {
            out.push((x, h));
        }
        out.push((x, y));
        held = Some(y);
    }
    if let Some(h) = held {
        if out.is_empty() {
            out.push((x0, h));
        }
        out.push((x1, h));
    }
    out
}

/// The plot area of a drawn chart, CSS px from the canvas' top left corner, and its x range.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Area {
    /// Left edge.
    pub left_px: f64,
    /// Right edge.
    pub right_px: f64,
    /// Top edge.
    pub top_px: f64,
    /// Bottom edge.
    pub bottom_px: f64,
    /// x at the left edge.
    pub x0: f64,
    /// x at the right edge.
    pub x1: f64,
}

impl Area {
    /// x at a horizontal position (CSS px).
    pub fn x_at(&self, x_px: f64) -> f64 {
        let w = (self.right_px - self.left_px).max(1e-9);
        self.x0 + (x_px - self.left_px) / w * (self.x1 - self.x0)
    }

    /// Horizontal position (CSS px) of x.
    pub fn px_of(&self, x: f64) -> f64 {
        let span = self.x1 - self.x0;
        if span.abs() < 1e-12 {
            return self.left_px;
        }
        self.left_px + (x - self.x0) / span * (self.right_px - self.left_px)
    }

    /// Whether a horizontal position (CSS px) is over the plot.
    pub fn contains_x(&self, x_px: f64) -> bool {
        x_px >= self.left_px && x_px <= self.right_px
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axis::byte_label_in;

    #[test]
    fn byte_ticks_are_powers_of_two() {
        const MIB: u64 = 1 << 20;
        assert_eq!(binary_ticks(456 * MIB, 4), [0, 128 * MIB, 256 * MIB, 384 * MIB]);
        assert_eq!(binary_ticks(1100 * MIB, 4), [0, 256 * MIB, 512 * MIB, 768 * MIB, 1024 * MIB]);
        let labels: Vec<String> =
            binary_ticks(2600 * MIB, 4).iter().map(|&b| byte_label_in(b as f64, 1073741824.0)).collect();
        assert_eq!(labels, ["0", "1 GiB", "2 GiB"]);
        assert_eq!(binary_ticks(0, 4), [0]);
        assert_eq!(binary_ticks(3, 4), [0, 1, 2, 3]);
        assert!(binary_ticks(u64::MAX, 4).len() <= 5);
        for max in [1, 1000, 5 * MIB + 3, 123_456_789_012] {
            let t = binary_ticks(max, 5);
            assert!(t.len() >= 2 && t.len() <= 6, "{max}: {t:?}");
            assert!(t.iter().all(|&b| b <= max));
            assert!(t[1].is_power_of_two());
        }
    }

    #[test]
    fn stairs_are_cut_to_the_window() {
        let pts = [(0.0, 1.0), (5.0, 2.0), (12.0, 3.0), (20.0, 4.0), (31.0, 5.0)];
        assert_eq!(
            stairs(&pts, 10.0, 30.0),
            [(10.0, 2.0), (12.0, 2.0), (12.0, 3.0), (20.0, 3.0), (20.0, 4.0), (30.0, 4.0)]
        );
        assert_eq!(stairs(&pts, 21.0, 25.0), [(21.0, 4.0), (25.0, 4.0)]);
        assert_eq!(stairs(&pts[3..], 0.0, 40.0), [(20.0, 4.0), (31.0, 4.0), (31.0, 5.0), (40.0, 5.0)]);
        assert!(stairs(&[], 0.0, 1.0).is_empty());
    }

    #[test]
    fn area_maps_both_ways() {
        let a = Area { left_px: 60.0, right_px: 360.0, top_px: 6.0, bottom_px: 100.0, x0: 1000.0, x1: 4000.0 };
        assert_eq!(a.px_of(2500.0), 210.0);
        assert_eq!(a.x_at(210.0), 2500.0);
        assert!(a.contains_x(60.0) && !a.contains_x(59.0));
    }
}
