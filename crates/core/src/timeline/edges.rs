//! [`Layout::band_edges`]: the lower edges of chosen bands at sample steps, in one sweep with a
//! Fenwick tree over stack positions.

use super::{BandEdges, Layout, SLIDE_STEPS};

/// The edge of one band while [`Layout::band_edges`] sweeps.
struct EdgeTrack {
    band: u32,
    vertices: Vec<(f64, f64)>,
    pending: Option<(f64, f64)>,
    last_below: f64,
}
impl Layout {
    /// Lower edges of the bands `wanted` (ascending band indices) at the steps `samples`
    /// (ascending), in one sweep: the bands below each one are kept in a Fenwick tree indexed by
    /// stack position, so the cost is O(B + bands starting or ending in the window + vertices x
    /// log B), never O(events x live). A band gets a vertex at every sample within its life
    /// (`start <= step <= end`; at `end` the offset is the limit from the left); bands with no
    /// sample in their life are left out (narrower than a sample).
    pub fn band_edges(&self, wanted: &[u32], samples: &[f64]) -> BandEdges {
        let mut out = BandEdges::default();
        // Only bands below the highest wanted one matter.
        let nb = wanted.iter().max().map_or(0, |&b| (b as usize + 1).min(self.band_element.len()));
        let Some(&x0) = samples.first() else { return out };
        if nb == 0 {
            return out;
        }
        // The stack just at x0.
        let mut sliding: Vec<u32> = Vec::new();
        let mut values = vec![0u64; nb];
        for (b, v) in values.iter_mut().enumerate() {
            // (bands at or above nb are never queried)
            let (start, end) = (f64::from(self.band_start[b]), f64::from(self.band_end[b]));
            if start <= x0 && x0 < end {
                *v = self.band_size(b as u32);
            } else if start <= x0 && self.band_slides[b] && x0 < end + f64::from(SLIDE_STEPS) {
                sliding.push(b as u32);
            }
        }
        let mut fen = crate::fenwick::Fenwick::from_values(values);
        let mut next_start = self.band_start[..nb].partition_point(|&s| f64::from(s) <= x0);
        let mut next_end = self.bands_by_end.partition_point(|&b| f64::from(self.band_end[b as usize]) <= x0);
        let mut next_wanted = 0usize;
        // One track per wanted band that has started: its vertices so far, and the last sample
        // of a run at one offset (written only when the offset changes or the band ends, so runs
        // cost two vertices).
        let mut tracks: Vec<EdgeTrack> = Vec::new();
        let mut active: Vec<usize> = Vec::new();
        for &x in samples {
            while next_start < nb && f64::from(self.band_start[next_start]) <= x {
                fen.add(next_start, self.band_size(next_start as u32));
                next_start += 1;
            }
            // The lowest stack position whose contribution changed since the last sample: the
            // bands above it may have moved, the ones at or below it have not.
            let mut lowest_change = usize::MAX;
            while let Some(&b) = self.bands_by_end.get(next_end) {
                let bi = b as usize;
                // Bands live at the end of the trace are not freed there: at the last step they
                // keep their place, so the stack's right edge is level (and a snapshot without
                // history, one step wide, is a level column). They sort last.
                let end = self.band_end[bi];
                if f64::from(end) > x || end == self.steps {
                    break;
                }
                next_end += 1;
                if bi >= nb {
                    continue;
                }
                lowest_change = lowest_change.min(bi);
                // Bands that start and end between two samples were never added.
                if bi < next_start && f64::from(self.band_end[bi]) > x0 {
                    fen.add(bi, 0u64.wrapping_sub(self.band_size(b)));
                }
                if self.band_slides[bi] {
                    sliding.push(b);
                }
            }
            for &c in &sliding {
                lowest_change = lowest_change.min(c as usize);
            }
            sliding.retain(|&c| self.band_weight(c, x) > 0.0);
            while let Some(&b) = wanted.get(next_wanted) {
                if f64::from(self.band_start.get(b as usize).copied().unwrap_or(u32::MAX)) > x {
                    break;
                }
                active.push(tracks.len());
                tracks.push(EdgeTrack { band: b, vertices: Vec::new(), pending: None, last_below: f64::NAN });
                next_wanted += 1;
            }
            active.retain(|&t| {
                let Some(tr) = tracks.get_mut(t) else { return false };
                let b = tr.band;
                let end = self.band_end.get(b as usize).copied().map_or(0.0, f64::from);
                if end < x {
                    tr.vertices.extend(tr.pending.take());
                    return false;
                }
                let fresh = tr.vertices.is_empty();
                let below = if !fresh && lowest_change >= b as usize {
                    tr.last_below
                } else {
                    fen.prefix(b as usize) as f64
                        + sliding
                            .iter()
                            .filter(|&&c| c < b)
                            .map(|&c| self.band_weight(c, x) * self.band_size(c) as f64)
                            .sum::<f64>()
                };
                if !fresh && below == tr.last_below {
                    tr.pending = Some((x, below));
                } else {
                    tr.vertices.extend(tr.pending.take());
                    tr.vertices.push((x, below));
                    tr.last_below = below;
                }
                true
            });
        }
        for tr in tracks {
            let mut vertices = tr.vertices;
            vertices.extend(tr.pending);
            if vertices.is_empty() {
                continue;
            }
            out.bands.push(tr.band);
            out.starts.push(out.vertices.len() as u32);
            out.vertices.extend(vertices);
        }
        out.starts.push(out.vertices.len() as u32);
        out
    }
}
