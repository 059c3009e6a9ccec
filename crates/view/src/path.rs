//! A band's polygon ([`band_polygon`]) and its SVG path data ([`SvgPath`]); SVG path data for the timeline's filled outlines (the summarized band, the area under the
//! drawn stack), and the numbers of any path data (the hovered band's outline too), written with
//! integer arithmetic: two decimals through `core::fmt` (`{:.2}`) take its exact float path,
//! which was up to 2.3 ms of a 35-41 ms load of a small file in the page.

use std::fmt::Write as _;

/// Appends `v` with two decimals, as `{:.2}` writes it but for the last digit of a value
/// halfway between two (`-12.5` → `-12.50`); a non-finite value as `0.00`. Values beyond ±1e13
/// are written as ±1e13.
pub fn push_num(d: &mut String, v: f64) {
    push_fixed(d, v, 2);
}

/// Appends `v` with `decimals` decimals (at most 6), as `{:.N}` writes it but for the last digit
/// of a value halfway between two; a non-finite value as zero. Values beyond ±1e15 / 10^decimals
/// are written as that bound.
pub fn push_fixed(d: &mut String, v: f64, decimals: u32) {
    let decimals = decimals.min(6);
    let scale = 10u64.pow(decimals);
    let scaled = if v.is_finite() { (v * scale as f64).round().clamp(-1e15, 1e15) } else { 0.0 };
    // In range for i64 (clamped above), so the cast is exact.
    let c = scaled as i64;
    if c < 0 {
        d.push('-');
    }
    let a = c.unsigned_abs();
    let _ = write!(d, "{}", a / scale);
    if decimals > 0 {
        let _ = write!(d, ".{:0width$}", a % scale, width = decimals as usize);
    }
}

/// Appends a move to `(x, y)`: `Mx y`.
pub fn move_to(d: &mut String, x: f64, y: f64) {
    d.push('M');
    push_point(d, x, y);
}

/// Appends a line to `(x, y)`: `Lx y`.
pub fn line_to(d: &mut String, x: f64, y: f64) {
    d.push('L');
    push_point(d, x, y);
}

/// Appends a horizontal line to `x`: `Hx`.
pub fn h_to(d: &mut String, x: f64) {
    d.push('H');
    push_num(d, x);
}

/// Closes the path: `Z`.
pub fn close(d: &mut String) {
    d.push('Z');
}

fn push_point(d: &mut String, x: f64, y: f64) {
    push_num(d, x);
    d.push(' ');
    push_num(d, y);
}

/// A band's polygon as the points a path goes through: its lower edge left to right, then its
/// upper edge (`height_dev` above) back. Every band's polygon winds the same way, so a path of
/// several is filled where any of them is. Empty for an empty edge.
pub fn band_polygon(edge: &[(f64, f64)], height_dev: f64) -> impl Iterator<Item = (f64, f64)> + '_ {
    edge.iter().copied().chain(edge.iter().rev().map(move |&(x, y)| (x, y - height_dev)))
}

/// An SVG path's data with one decimal (device px, as on the canvas) and the box around its
/// points.
#[derive(Clone, Debug, Default)]
pub struct SvgPath {
    d: String,
    /// `(x0, y0, x1, y1)` of the points so far.
    bounds: Option<(f64, f64, f64, f64)>,
}

impl SvgPath {
    /// Begins a subpath at `(x, y)`.
    pub fn move_to(&mut self, x: f64, y: f64) {
        self.point('M', x, y);
    }

    /// A line to `(x, y)`.
    pub fn line_to(&mut self, x: f64, y: f64) {
        self.point('L', x, y);
    }

    /// Closes the subpath.
    pub fn close(&mut self) {
        self.d.push('Z');
    }

    fn point(&mut self, op: char, x: f64, y: f64) {
        self.d.push(op);
        push_fixed(&mut self.d, x, 1);
        self.d.push(' ');
        push_fixed(&mut self.d, y, 1);
        self.bounds =
            Some(self.bounds.map_or((x, y, x, y), |(x0, y0, x1, y1)| (x0.min(x), y0.min(y), x1.max(x), y1.max(y))));
    }

    /// The path data and the box around it, if it has a point.
    pub fn finish(self) -> Option<(String, (f64, f64, f64, f64))> {
        Some((self.d, self.bounds?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(v: f64) -> String {
        let mut s = String::new();
        push_num(&mut s, v);
        s
    }

    #[test]
    fn numbers_are_written_as_two_decimals() {
        for (v, want) in [
            (0.0, "0.00"),
            (1.0, "1.00"),
            (-1.5, "-1.50"),
            (12.345, "12.35"),
            (0.004, "0.00"),
            (-0.004, "0.00"),
            (-0.006, "-0.01"),
            (1279.999, "1280.00"),
            (1e7, "10000000.00"),
            (-1e7, "-10000000.00"),
            (f64::NAN, "0.00"),
            (f64::INFINITY, "0.00"),
        ] {
            assert_eq!(num(v), want, "{v}");
        }
    }

    #[test]
    fn numbers_agree_with_core_formatting_away_from_halves() {
        // Pixel coordinates as the plot makes them: every one within half a hundredth, and the
        // same text as `{:.2}` unless the value is within a rounding error of a halfway point.
        for i in -200_000..200_000 {
            let v = f64::from(i) * 0.0137 + 0.000_3;
            let ours = num(v);
            let back: f64 = ours.parse().expect("a number");
            assert!((back - v).abs() <= 0.005 + 1e-9, "{v} -> {ours}");
            assert!(ours.split('.').nth(1).is_some_and(|f| f.len() == 2), "{ours}");
            if ours != format!("{v:.2}") {
                let frac = (v.abs() * 100.0).fract();
                assert!((frac - 0.5).abs() < 1e-6, "{v}: {ours} against {v:.2}");
            }
        }
    }

    #[test]
    fn other_precisions_agree_with_core_formatting() {
        for v in [0.0, 3.0, -2.25, 40.55, 1279.96, -0.04, 123_456.789] {
            for decimals in [0u32, 1, 3] {
                let mut s = String::new();
                push_fixed(&mut s, v, decimals);
                let back: f64 = s.parse().expect("a number");
                assert!((back - v).abs() <= 0.5 / 10f64.powi(decimals as i32) + 1e-9, "{v} ({decimals}) -> {s}");
                assert_eq!(s.split('.').nth(1).map_or(0, str::len), decimals as usize, "{s}");
            }
        }
        let mut s = String::new();
        push_fixed(&mut s, 40.5, 1);
        assert_eq!(s, "40.5");
    }

    #[test]
    fn a_path_is_its_commands_in_order() {
        let mut d = String::new();
        move_to(&mut d, 10.0, 20.5);
        line_to(&mut d, 11.0, 3.25);
        h_to(&mut d, 12.0);
        close(&mut d);
        assert_eq!(d, "M10.00 20.50L11.00 3.25H12.00Z");
    }

    #[test]
    fn a_band_traced_as_svg_path_data_and_its_box() {
        let mut path = SvgPath::default();
        let edge = [(10.0, 50.0), (20.0, 40.5), (30.0, 40.5)];
        for (i, (x, y)) in band_polygon(&edge, 5.0).enumerate() {
            if i == 0 {
                path.move_to(x, y);
            } else {
                path.line_to(x, y);
            }
        }
        path.close();
        let (d, bounds) = path.finish().expect("points");
        assert_eq!(d, "M10.0 50.0L20.0 40.5L30.0 40.5L30.0 35.5L20.0 35.5L10.0 45.0Z");
        assert_eq!(bounds, (10.0, 35.5, 30.0, 50.0));
        assert!(SvgPath::default().finish().is_none(), "no point, no box");
        assert_eq!(band_polygon(&[], 5.0).count(), 0);
    }
}
