//! The timeline's bands rasterized in WebAssembly: a pixel buffer of the plot area that the page
//! puts on the canvas in one call.
//!
//! Thousands of band polygons cost a canvas two calls into JavaScript per vertex and then a
//! rasterization pass per path when the frame is committed (about 13 ms per frame for a
//! million-entry snapshot on headless Chromium's software canvas). Bands never overlap: a level
//! stretch of a band is a rectangle filled in whole-row runs, a sloped one a span per pixel
//! column, so this raster touches each pixel about once. Edges are anti-aliased by coverage: the
//! top and bottom row of a band by the part of them it covers, its first and last column by the
//! part of the column it lives in.
//!
//! No DOM here: the buffer is plain memory, tested natively.

/// An opaque colour, as red, green and blue.
pub type Rgb = [u8; 3];

/// `#rrggbb` as [`Rgb`]; anything else is black.
pub const fn rgb(hex: &str) -> Rgb {
    const fn digit(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => 0,
        }
    }
    let b = hex.as_bytes();
    if b.len() != 7 || b[0] != b'#' {
        return [0, 0, 0];
    }
    [digit(b[1]) * 16 + digit(b[2]), digit(b[3]) * 16 + digit(b[4]), digit(b[5]) * 16 + digit(b[6])]
}

/// Straight (not premultiplied) RGBA pixels, row by row, each a little-endian `u32`: as
/// `ImageData` takes them once seen as bytes.
#[derive(Clone, Debug, Default)]
pub struct Raster {
    width_px: usize,
    height_px: usize,
    pixels: Vec<u32>,
}

/// Coverage below which a pixel is left alone, and above which it is painted solid.
const FAINT: f32 = 1.0 / 512.0;
const SOLID: f32 = 1.0 - 1.0 / 512.0;

fn solid(c: Rgb) -> u32 {
    u32::from_le_bytes([c[0], c[1], c[2], 255])
}

/// `c` at opacity `a` over the pixel `dst` (both straight alpha).
fn over(dst: u32, c: Rgb, a: f32) -> u32 {
    let [dr, dg, db, da] = dst.to_le_bytes();
    if da == 0 {
        return u32::from_le_bytes([c[0], c[1], c[2], (a * 255.0 + 0.5) as u8]);
    }
    if da == 255 {
        // Over an opaque pixel (the usual case: bands lie on the area under the stack).
        let k = (a * 256.0) as u32;
        let mix = |s: u8, d: u8| ((u32::from(s) * k + u32::from(d) * (256 - k)) >> 8) as u8;
        return u32::from_le_bytes([mix(c[0], dr), mix(c[1], dg), mix(c[2], db), 255]);
    }
    let da = f32::from(da) / 255.0;
    let out_a = a + da * (1.0 - a);
    if out_a <= 0.0 {
        return dst;
    }
    let k = da * (1.0 - a);
    let mix = |s: u8, d: u8| ((f32::from(s) * a + f32::from(d) * k) / out_a + 0.5) as u8;
    u32::from_le_bytes([mix(c[0], dr), mix(c[1], dg), mix(c[2], db), (out_a * 255.0 + 0.5) as u8])
}

fn paint(px: &mut u32, c: Rgb, a: f32) {
    if a >= SOLID {
        *px = solid(c);
    } else if a >= FAINT {
        *px = over(*px, c, a);
    }
}

impl Raster {
    /// A transparent raster of `width_px` x `height_px`.
    pub fn new(width_px: usize, height_px: usize) -> Raster {
        Raster { width_px, height_px, pixels: vec![0; width_px.saturating_mul(height_px)] }
    }

    /// Width in pixels.
    pub fn width_px(&self) -> usize {
        self.width_px
    }

    /// Height in pixels.
    pub fn height_px(&self) -> usize {
        self.height_px
    }

    /// The pixel at (`x`, `y`) as RGBA, transparent outside.
    pub fn pixel(&self, x: usize, y: usize) -> [u8; 4] {
        if x >= self.width_px || y >= self.height_px {
            return [0; 4];
        }
        self.pixels.get(y * self.width_px + x).map_or([0; 4], |p| p.to_le_bytes())
    }

    /// The pixels, row by row.
    pub fn rows(&self) -> &[u32] {
        &self.pixels
    }

    /// Paints the rectangle `[left, right) x [top, bottom)` (fractional pixels; y down), the
    /// pixels it covers in part at the part they are covered.
    pub fn rect(&mut self, left: f64, right: f64, top: f64, bottom: f64, c: Rgb) {
        let (w, h) = (self.width_px, self.height_px);
        let (left, right) = (left.max(0.0), right.min(w as f64));
        let (top, bottom) = (top.max(0.0), bottom.min(h as f64));
        // (NaN fails these too.)
        if !(right > left && bottom > top) {
            return;
        }
        let (c0, c1) = (left as usize, (right.ceil() as usize).min(w));
        let (r0, r1) = (top as usize, (bottom.ceil() as usize).min(h));
        let cover = |i: usize, lo: f64, hi: f64| ((i as f64 + 1.0).min(hi) - (i as f64).max(lo)) as f32;
        let (cover_first, cover_last) = (cover(c0, left, right), cover(c1 - 1, left, right));
        // Columns covered whole, and the partly covered ones at either end.
        let full_from = if cover_first >= SOLID { c0 } else { c0 + 1 };
        let full_to = if cover_last >= SOLID || c1 - 1 < full_from { c1 } else { c1 - 1 }.max(full_from);
        let first_part = (full_from > c0).then_some((c0, cover_first));
        let last_part = (full_to < c1 && c1 > full_from).then_some((c1 - 1, cover_last));
        // The first row painted solid; the later ones are copies of its run.
        let mut solid_row: Option<usize> = None;
        for row in r0..r1 {
            let cy = cover(row, top, bottom);
            if cy >= SOLID && full_to > full_from {
                if let Some(src) = solid_row {
                    self.pixels.copy_within(src * w + full_from..src * w + full_to, row * w + full_from);
                    if first_part.is_none() && last_part.is_none() {
                        continue;
                    }
                }
            }
            let Some(line) = self.pixels.get_mut(row * w..(row + 1) * w) else {
                continue;
            };
            if let Some(run) = line.get_mut(full_from..full_to) {
                if cy >= SOLID {
                    if solid_row.is_none() {
                        run.fill(solid(c));
                        solid_row = Some(row);
                    }
                } else if cy >= FAINT {
                    // Runs of equal pixels are the rule (what lies under a band's edge): blend
                    // each distinct one once.
                    let (mut was, mut became) = (None, 0);
                    for px in run {
                        if was != Some(*px) {
                            was = Some(*px);
                            became = over(*px, c, cy);
                        }
                        *px = became;
                    }
                }
            }
            for (x, cx) in [first_part, last_part].into_iter().flatten() {
                if let Some(px) = line.get_mut(x) {
                    paint(px, c, cx * cy);
                }
            }
        }
    }

    /// Fills a band: `edge` is its lower edge as (x, y) vertices with ascending x, linear in
    /// between; the band reaches `height_px` above it. A level stretch of the edge is a
    /// rectangle; a sloped one is painted column by column at the edge's height in the middle of
    /// the column. Inner vertices are rounded to column boundaries, so no column is painted
    /// twice; the band's first and last column are covered by the part of them it lives in.
    pub fn band(&mut self, edge: &[(f64, f64)], height_px: f64, c: Rgb) {
        let n = edge.len();
        if n < 2 {
            return;
        }
        for k in 0..n - 1 {
            let ((xa, ya), (xb, yb)) = (edge[k], edge[k + 1]);
            let left = if k == 0 { xa } else { xa.round() };
            let right = if k + 2 == n { xb } else { xb.round() };
            // Nothing to cover unless right lies beyond left (NaN included).
            if right.partial_cmp(&left) != Some(std::cmp::Ordering::Greater) {
                continue;
            }
            if ya == yb {
                self.rect(left, right, ya - height_px, ya, c);
                continue;
            }
            let first = left.max(0.0).floor() as usize;
            let last = (right.ceil().max(0.0) as usize).min(self.width_px);
            for x in first..last {
                let x_mid = crate::viewport::clamp_px(x as f64 + 0.5, xa, xb);
                let y = if xb > xa { ya + (yb - ya) * (x_mid - xa) / (xb - xa) } else { ya };
                self.rect(left.max(x as f64), right.min(x as f64 + 1.0), y - height_px, y, c);
            }
        }
    }

    /// Fills under a stepped top: column `i` from `tops[i]` down to the bottom, runs of equal
    /// tops at once.
    pub fn area_under(&mut self, tops: &[f64], c: Rgb) {
        let bottom = self.height_px as f64;
        let mut i = 0;
        while i < tops.len() {
            let top = tops[i];
            let mut j = i + 1;
            while j < tops.len() && tops[j] == top {
                j += 1;
            }
            self.rect(i as f64, j as f64, top, bottom, c);
            i = j;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const RED: Rgb = [255, 0, 0];
    const BLUE: Rgb = [0, 0, 255];

    #[test]
    fn hex_colours_parse() {
        assert_eq!(rgb("#4e79a7"), [0x4e, 0x79, 0xa7]);
        assert_eq!(rgb("#FFFFFF"), [255, 255, 255]);
        assert_eq!(rgb("red"), [0, 0, 0]);
    }

    #[test]
    fn rectangles_cover_whole_pixels_solid_and_edges_in_part() {
        let mut r = Raster::new(4, 10);
        r.rect(1.0, 2.0, 2.5, 6.0, RED);
        assert_eq!(r.pixel(1, 1), [0; 4]);
        let top = r.pixel(1, 2);
        assert_eq!(&top[..3], &[255, 0, 0]);
        assert!((126..=129).contains(&top[3]), "half-covered top pixel: {top:?}");
        for y in 3..6 {
            assert_eq!(r.pixel(1, y), [255, 0, 0, 255]);
        }
        assert_eq!(r.pixel(1, 6), [0; 4]);
        assert_eq!(r.pixel(0, 4), [0; 4]);
        assert_eq!(r.pixel(2, 4), [0; 4]);
        // Out of bounds is clipped, not a panic.
        r.rect(9.0, 10.0, 0.0, 100.0, RED);
        r.rect(-3.0, 1.0, -5.0, 100.0, RED);
        assert_eq!(r.pixel(0, 9), [255, 0, 0, 255]);
    }

    #[test]
    fn adjacent_rectangles_leave_no_gap_and_blend_at_the_seam() {
        let mut r = Raster::new(1, 10);
        // As under the bands of a timeline: the area under the stack first.
        r.area_under(&[1.0], [200, 200, 200]);
        r.rect(0.0, 1.0, 4.5, 8.0, RED);
        r.rect(0.0, 1.0, 1.0, 4.5, BLUE);
        let seam = r.pixel(0, 4);
        assert_eq!(seam[3], 255, "the seam is fully covered: {seam:?}");
        assert!(seam[0] > 100 && seam[2] > 100, "the seam mixes both: {seam:?}");
        assert_eq!(r.pixel(0, 3), [0, 0, 255, 255]);
        assert_eq!(r.pixel(0, 5), [255, 0, 0, 255]);
        assert_eq!(r.pixel(0, 9), [200, 200, 200, 255]);
        // Partly covered columns: a quarter and three quarters of column 1 side by side combine
        // as opacities (as on a canvas): 0.25 + 0.75 x 0.75.
        let mut s = Raster::new(3, 1);
        s.rect(0.5, 1.25, 0.0, 1.0, RED);
        s.rect(1.25, 3.0, 0.0, 1.0, RED);
        assert_eq!(s.pixel(1, 0)[3], 207, "two parts of one column: {:?}", s.pixel(1, 0));
        assert_eq!(s.pixel(2, 0), [255, 0, 0, 255]);
    }

    #[test]
    fn bands_follow_their_edge_and_cover_their_columns() {
        let mut r = Raster::new(10, 20);
        // From x 2.5 to 7.0, the lower edge rising from y 18 to y 8 between x 4 and 6.
        r.band(&[(2.5, 18.0), (4.0, 18.0), (6.0, 8.0), (7.0, 8.0)], 2.0, RED);
        assert_eq!(r.pixel(1, 17), [0; 4]);
        let first = r.pixel(2, 17);
        assert!((126..=129).contains(&first[3]), "half a column: {first:?}");
        assert_eq!(r.pixel(3, 17), [255, 0, 0, 255]);
        assert_eq!(r.pixel(3, 15), [0; 4]);
        // Column 5 is sampled at x 5.5, where the edge is at y 10.5.
        assert_eq!(r.pixel(5, 9), [255, 0, 0, 255]);
        assert_eq!(r.pixel(5, 17), [0; 4]);
        assert_eq!(r.pixel(6, 7), [255, 0, 0, 255]);
        assert_eq!(r.pixel(7, 7), [0; 4]);
        // A band narrower than a column shows faintly rather than not at all.
        let mut thin = Raster::new(4, 4);
        thin.band(&[(1.2, 3.0), (1.4, 3.0)], 2.0, BLUE);
        let p = thin.pixel(1, 2);
        assert!(p[3] > 20 && p[3] < 80, "a fifth of a column: {p:?}");
    }

    #[test]
    fn rows_come_out_row_major() {
        let mut r = Raster::new(40, 3);
        r.rect(37.0, 38.0, 1.0, 2.0, RED);
        let bytes: &[u8] = bytemuck::cast_slice(r.rows());
        assert_eq!(bytes.len(), 40 * 3 * 4);
        let at = (40 + 37) * 4;
        assert_eq!(&bytes[at..at + 4], &[255, 0, 0, 255]);
        assert_eq!(bytes.iter().filter(|&&b| b != 0).count(), 2);
    }

    #[test]
    fn bands_paint_each_column_once() {
        // Level, sloped and level again, with inner vertices off column boundaries: every column
        // of the band's middle is opaque (painted once, not blended with itself).
        let mut r = Raster::new(12, 30);
        r.band(&[(0.0, 20.0), (3.3, 20.0), (6.6, 10.0), (12.0, 10.0)], 4.0, BLUE);
        for x in 0..12 {
            let column: Vec<[u8; 4]> = (0..30).map(|y| r.pixel(x, y)).collect();
            let painted: f64 = column.iter().map(|p| f64::from(p[3]) / 255.0).sum();
            assert!((painted - 4.0).abs() < 0.05, "column {x} painted {painted} px, not 4: {column:?}");
        }
    }
}
