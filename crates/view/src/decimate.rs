//! Polyline decimation for drawing: at most two vertices per device-pixel column.
//!
//! Within one column only the vertical extent is visible, so each column keeps its lowest and
//! highest vertex (in the order they occur). The very first and last vertex are kept exactly, so
//! shapes still start and end where they should.

/// Appends the decimated form of `points` (x, y in device pixels, x non-decreasing) to `out`.
pub fn decimate_into(points: impl IntoIterator<Item = (f64, f64)>, out: &mut Vec<(f64, f64)>) {
    let mut it = points.into_iter();
    let Some(first) = it.next() else { return };
    out.push(first);
    let mut col = first.0.floor();
    // Lowest and highest vertex of the current column, with their order of occurrence.
    let (mut lo, mut hi) = ((first, 0usize), (first, 0usize));
    let mut last = first;
    for (i, p) in it.enumerate() {
        let i = i + 1;
        let c = p.0.floor();
        if c != col {
            push_extremes(out, lo, hi);
            col = c;
            lo = (p, i);
            hi = (p, i);
        } else {
            if p.1 < lo.0 .1 {
                lo = (p, i);
            }
            if p.1 > hi.0 .1 {
                hi = (p, i);
            }
        }
        last = p;
    }
    push_extremes(out, lo, hi);
    push_new(out, last);
}

fn push_extremes(out: &mut Vec<(f64, f64)>, lo: ((f64, f64), usize), hi: ((f64, f64), usize)) {
    let (a, b) = if lo.1 <= hi.1 { (lo.0, hi.0) } else { (hi.0, lo.0) };
    push_new(out, a);
    push_new(out, b);
}

fn push_new(out: &mut Vec<(f64, f64)>, p: (f64, f64)) {
    if out.last() != Some(&p) {
        out.push(p);
    }
}

/// Decimates into a new vector.
pub fn decimate(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len().min(4096));
    decimate_into(points.iter().copied(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_short_lines_as_they_are() {
        let pts = [(0.0, 5.0), (10.0, 5.0), (20.0, 7.0)];
        assert_eq!(decimate(&pts), pts.to_vec());
        assert!(decimate(&[]).is_empty());
        assert_eq!(decimate(&[(1.0, 1.0)]), vec![(1.0, 1.0)]);
    }

    #[test]
    fn at_most_two_per_column_plus_ends() {
        // 10,000 points over 100 columns, zig-zagging.
        let pts: Vec<(f64, f64)> =
            (0..10_000).map(|i| (i as f64 / 100.0, if i % 2 == 0 { 0.0 } else { 50.0 + (i % 7) as f64 })).collect();
        let d = decimate(&pts);
        assert!(d.len() <= 2 * 100 + 2, "{} vertices", d.len());
        assert_eq!(d.first(), pts.first());
        assert_eq!(d.last(), pts.last());
        // Each column keeps its full vertical extent.
        for c in 0..100 {
            let col: Vec<f64> = d.iter().filter(|p| p.0.floor() as i32 == c).map(|p| p.1).collect();
            let min = col.iter().copied().fold(f64::INFINITY, f64::min);
            let max = col.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(min, 0.0, "column {c}");
            assert!(max >= 50.0, "column {c}");
        }
        // x never goes backwards.
        assert!(d.windows(2).all(|w| w[1].0 >= w[0].0));
    }
}
