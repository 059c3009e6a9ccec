//! Bytes per group over time: the live bytes of each of the largest groups of a [`Grouping`]
//! (and of the rest, as "other") at sampled trace entries, as a [`CategoryTimeline`], so
//! "forward against backward" or "layer 3" reads over the whole run as the categories do. One
//! sweep over the entries; each sample is the entry of its slice with the highest total, so the
//! peak is always a sample. [`GroupCurve`] is one group's exact bytes after any entry, read in
//! O(log n) (what the page shows at the pointer while a group is highlighted).

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

/// The live bytes of one group after every trace entry where they change: the change rows
/// ascending and the bytes after each, so the bytes at any entry are one binary search away.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupCurve {
    /// Group id ([`Grouping::labels`]).
    pub group: u32,
    /// Bytes live before the first entry.
    before_bytes: u64,
    /// Rows where the group's bytes change, ascending, each once.
    rows: Vec<u32>,
    /// Bytes live just after each of `rows`.
    bytes_after: Vec<u64>,
}

impl GroupCurve {
    /// The curve of group `group` of `grouping`, whose lifetimes `replay` holds.
    pub fn build(replay: &Replay, grouping: &Grouping, group: u32) -> GroupCurve {
        let mut before_bytes = 0u64;
        // (row, signed change); bytes stay within u64, so the running sum is done in i128.
        let mut changes: Vec<(u32, i128)> = Vec::new();
        for (i, l) in replay.lives.iter().enumerate() {
            if grouping.group_of(i as u32) != Some(group) {
                continue;
            }
            match l.alloc_row {
                Some(a) => changes.push((a, i128::from(l.size_bytes))),
                None => before_bytes = before_bytes.saturating_add(l.size_bytes),
            }
            if let Some(f) = l.free_row {
                changes.push((f, -i128::from(l.size_bytes)));
            }
        }
        changes.sort_unstable_by_key(|c| c.0);
        let mut rows = Vec::new();
        let mut bytes_after = Vec::new();
        let mut live = i128::from(before_bytes);
        for run in changes.chunk_by(|a, b| a.0 == b.0) {
            live += run.iter().map(|c| c.1).sum::<i128>();
            rows.push(run[0].0);
            bytes_after.push(u64::try_from(live.max(0)).unwrap_or(u64::MAX));
        }
        GroupCurve { group, before_bytes, rows, bytes_after }
    }

    /// Bytes of the group live just after trace row `row` (`None`: before the first entry).
    pub fn bytes_after(&self, row: Option<u32>) -> u64 {
        let Some(row) = row else { return self.before_bytes };
        match self.rows.partition_point(|&r| r <= row) {
            0 => self.before_bytes,
            i => self.bytes_after.get(i - 1).copied().unwrap_or(0),
        }
    }

    /// The most bytes the group holds at once, and the first row where it does (`None`: before
    /// the first entry).
    pub fn peak(&self) -> (u64, Option<u32>) {
        let mut best = (self.before_bytes, None);
        for (&r, &b) in self.rows.iter().zip(&self.bytes_after) {
            if b > best.0 {
                best = (b, Some(r));
            }
        }
        best
    }
}
