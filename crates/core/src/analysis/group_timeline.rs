//! Bytes per group over time: the live bytes of each of the largest groups of a [`Grouping`]
//! (and of the rest, as "other") at sampled trace entries, as a [`CategoryTimeline`], so
//! "forward against backward" or "layer 3" reads over the whole run as the categories do. One
//! sweep over the entries; each sample is the entry of its slice with the highest total, so the
//! peak is always a sample.

use super::categories::CategoryTimeline;
use super::grouping::Grouping;
use super::Replay;
use crate::snapshot::Snapshot;

/// Live bytes of the `max_groups` groups that allocate the most (then "other") at no more than
/// `max_points` entries of device `device_pos` of `snap`, whose lifetimes `replay` holds.
pub fn group_timeline(
    snap: &Snapshot,
    device_pos: usize,
    replay: &Replay,
    grouping: &Grouping,
    max_points: usize,
    max_groups: usize,
) -> CategoryTimeline {
    let (colour, legend) = grouping.colours(replay, max_groups);
    let columns = legend.len().max(1);
    let column_of = |life: usize| -> usize {
        let g = grouping.group_of(life as u32).unwrap_or(u32::MAX);
        usize::from(colour.get(g as usize).copied().unwrap_or(u8::MAX)).min(columns - 1)
    };
    let rows = replay.rows;
    // Changes by row: (row, column, bytes, added).
    let mut changes: Vec<(u32, usize, u64, bool)> = Vec::with_capacity(replay.lives.len() * 2);
    let mut live = vec![0u64; columns];
    for (i, l) in replay.lives.iter().enumerate() {
        let c = column_of(i);
        match l.alloc_row {
            Some(a) => changes.push((a, c, l.size_bytes, true)),
            None if l.live_after(None) => live[c] = live[c].saturating_add(l.size_bytes),
            None => {}
        }
        if let Some(f) = l.free_row {
            changes.push((f, c, l.size_bytes, false));
        }
    }
    changes.sort_unstable_by_key(|c| c.0);
    let slice = rows.div_ceil(max_points.max(1)).max(1);
    let trace = snap.devices.get(device_pos).map(|d| &d.trace);
    let mut out = CategoryTimeline {
        categories: legend.into_iter().map(|(name, _)| name).collect(),
        times_us: Vec::new(),
        rows: Vec::new(),
        bytes: Vec::new(),
        inferred: false,
        source: format!("allocations grouped by {}", grouping.by.title()),
    };
    let mut best: Option<(u32, u64, Vec<u64>)> = None;
    let mut k = 0;
    for row in 0..rows as u32 {
        while let Some(&(r, c, bytes, added)) = changes.get(k).filter(|x| x.0 == row) {
            debug_assert_eq!(r, row);
            if let Some(x) = live.get_mut(c) {
                *x = if added { x.saturating_add(bytes) } else { x.saturating_sub(bytes) };
            }
            k += 1;
        }
        let total = live.iter().fold(0u64, |a, &b| a.saturating_add(b));
        if best.as_ref().is_none_or(|b| total > b.1) {
            best = Some((row, total, live.clone()));
        }
        let last_of_slice = (row as usize + 1) % slice == 0 || row as usize + 1 == rows;
        if last_of_slice {
            if let Some((r, _, v)) = best.take() {
                out.times_us.push(trace.and_then(|t| t.time_us_at(r as usize)));
                out.rows.push(Some(r));
                out.bytes.push(v);
            }
        }
    }
    out
}
