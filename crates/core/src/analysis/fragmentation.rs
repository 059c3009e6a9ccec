//! Fragmentation over time: reserved minus allocated bytes, free bytes inside segments and the
//! largest free block after every trace entry, sampled to at most N points for drawing.
//!
//! The allocator state is replayed forward from the state before the first entry (as
//! [`crate::state::History`] reconstructs it). Free ranges are kept in an ordered map with a
//! multiset of their sizes; each entry recomputes only the free ranges around the address range
//! it touches, so a whole trace costs O(n log n), not O(events × segments).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde_json::{json, Value};

use super::{size_text, Replay};
use crate::snapshot::{Action, Snapshot};
use crate::state::{rounded_size, AllocatorState, FreeRange, History};
use crate::timeline::Layout;

/// Free ranges of an allocator state, kept up to date event by event.
#[derive(Clone, Debug)]
pub struct FreeTracker {
    /// The replayed state (segments and live blocks).
    pub state: AllocatorState,
    free: BTreeMap<u64, FreeRange>,
    sizes: BTreeMap<u64, u32>,
    free_bytes: u64,
    reserved_bytes: u64,
    allocated_bytes: u64,
}

impl FreeTracker {
    /// Starts from a state.
    pub fn new(state: AllocatorState) -> FreeTracker {
        let mut t = FreeTracker {
            free: BTreeMap::new(),
            sizes: BTreeMap::new(),
            free_bytes: 0,
            reserved_bytes: state.reserved_bytes(),
            allocated_bytes: state.allocated_bytes(),
            state,
        };
        for f in t.state.free_ranges() {
            t.add_free(f);
        }
        t
    }

    fn add_free(&mut self, f: FreeRange) {
        if f.size_bytes == 0 {
            return;
        }
        *self.sizes.entry(f.size_bytes).or_default() += 1;
        self.free_bytes = self.free_bytes.saturating_add(f.size_bytes);
        if let Some(old) = self.free.insert(f.addr, f) {
            self.drop_size(old.size_bytes);
        }
    }

    fn drop_size(&mut self, size: u64) {
        if let Some(c) = self.sizes.get_mut(&size) {
            *c -= 1;
            if *c == 0 {
                self.sizes.remove(&size);
            }
        }
        self.free_bytes = self.free_bytes.saturating_sub(size);
    }

    /// Recomputes the free ranges touching `[lo, hi)` from the current segments and blocks.
    fn recompute(&mut self, lo: u64, hi: u64) {
        let (mut l, mut r) = (u128::from(lo), u128::from(hi));
        // Free ranges touching or overlapping [lo, hi): the one before lo, then those starting up to hi.
        let mut gone: Vec<u64> = Vec::new();
        if let Some((&a, f)) = self.free.range(..lo).next_back() {
            if u128::from(a) + u128::from(f.size_bytes) >= l {
                gone.push(a);
            }
        }
        gone.extend(self.free.range(lo..=hi).map(|(&a, _)| a));
        for a in gone {
            if let Some(f) = self.free.remove(&a) {
                l = l.min(u128::from(f.addr));
                r = r.max(u128::from(f.addr) + u128::from(f.size_bytes));
                self.drop_size(f.size_bytes);
            }
        }
        // Segments overlapping [l, r): the one holding l, then those starting inside.
        let l64 = l.min(u128::from(u64::MAX)) as u64;
        let r64 = r.min(u128::from(u64::MAX)) as u64;
        let mut segs: Vec<(u64, u64, u32, u32)> = Vec::new();
        if let Some((_, s)) = self.state.segments.range(..=l64).next_back() {
            if u128::from(s.addr) + u128::from(s.size_bytes) > l {
                segs.push((s.addr, s.size_bytes, s.stream, s.pool));
            }
        }
        let first = segs.first().map(|s| s.0);
        let more: Vec<(u64, u64, u32, u32)> = self
            .state
            .segments
            .range(l64..r64)
            .filter(|(&a, _)| Some(a) != first)
            .map(|(_, s)| (s.addr, s.size_bytes, s.stream, s.pool))
            .collect();
        segs.extend(more);
        let mut found = Vec::new();
        for (sa, ss, stream, pool) in segs {
            let s_end = u128::from(sa) + u128::from(ss);
            let cs = l.max(u128::from(sa));
            let ce = r.min(s_end);
            if cs >= ce {
                continue;
            }
            // Cursor: the end of the last block of this segment that starts before cs.
            let mut cursor = cs;
            let cs64 = cs as u64;
            if let Some((&ba, b)) = self.state.blocks.range(sa..cs64).next_back() {
                cursor = cursor.max(u128::from(ba) + u128::from(b.size_bytes));
            }
            for (&ba, b) in self.state.blocks.range(cs64..) {
                let ba128 = u128::from(ba);
                if ba128 >= ce {
                    break;
                }
                if ba128 > cursor {
                    found.push(FreeRange { addr: cursor as u64, size_bytes: (ba128 - cursor) as u64, stream, pool });
                }
                cursor = cursor.max(ba128 + u128::from(b.size_bytes));
            }
            if ce > cursor {
                found.push(FreeRange { addr: cursor as u64, size_bytes: (ce - cursor) as u64, stream, pool });
            }
        }
        for f in found {
            self.add_free(f);
        }
    }

    /// Applies one trace entry (an alloc's block gets the rounded requested size).
    pub fn apply(&mut self, action: Action, addr: u64, size: u64, stream: u32, stack: u32) {
        self.apply_sized(action, addr, size, stream, stack, None);
    }

    /// Applies one trace entry; `block_bytes` is the allocator's real block size of an alloc when
    /// known (from the final segments, for allocations still live there).
    pub fn apply_sized(
        &mut self,
        action: Action,
        addr: u64,
        size: u64,
        stream: u32,
        stack: u32,
        block_bytes: Option<u64>,
    ) {
        let end = |a: u64, s: u64| a.saturating_add(s);
        match action {
            Action::Alloc | Action::FreeCompleted | Action::Free => {
                let before = self.state.blocks.get(&addr).map(|b| (b.size_bytes, b.requested_bytes));
                self.state.apply(action, addr, size, stream, stack);
                if let (Action::Alloc, Some(real), Some(b)) = (action, block_bytes, self.state.blocks.get_mut(&addr)) {
                    b.size_bytes = real;
                }
                let after = self.state.blocks.get(&addr).map(|b| (b.size_bytes, b.requested_bytes));
                self.allocated_bytes = self
                    .allocated_bytes
                    .saturating_sub(before.map_or(0, |b| b.1))
                    .saturating_add(after.map_or(0, |b| b.1));
                let extent = before.map_or(0, |b| b.0).max(after.map_or(0, |b| b.0)).max(if action == Action::Alloc {
                    rounded_size(size)
                } else {
                    0
                });
                let extent = extent.max(block_bytes.unwrap_or(0));
                if before != after {
                    self.recompute(addr, end(addr, extent));
                }
            }
            Action::SegmentAlloc | Action::SegmentFree | Action::SegmentMap | Action::SegmentUnmap => {
                let old = self.state.segments.get(&addr).map_or(0, |s| s.size_bytes);
                self.state.apply(action, addr, size, stream, stack);
                self.reserved_bytes = self.state.reserved_bytes();
                self.recompute(addr, end(addr, size.max(old)));
            }
            _ => {}
        }
    }

    /// Segment bytes.
    pub fn reserved_bytes(&self) -> u64 {
        self.reserved_bytes
    }

    /// Live requested bytes in blocks.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated_bytes
    }

    /// Free bytes inside segments.
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Largest free block.
    pub fn largest_free_bytes(&self) -> u64 {
        self.sizes.keys().next_back().copied().unwrap_or(0)
    }

    /// Current free ranges, by address.
    pub fn free_ranges(&self) -> Vec<FreeRange> {
        self.free.values().copied().collect()
    }
}

/// The allocator's memory just after one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FragPoint {
    /// Trace row (`None`: before the first entry).
    pub row: Option<u32>,
    /// Time of the row.
    pub time_us: Option<i64>,
    /// Segment bytes.
    pub reserved_bytes: u64,
    /// Live requested bytes in blocks.
    pub allocated_bytes: u64,
    /// Free bytes inside segments (rounded block sizes taken out).
    pub free_bytes: u64,
    /// Largest free block.
    pub largest_free_bytes: u64,
}

impl FragPoint {
    /// Reserved minus allocated (cached plus rounding).
    pub fn unused_bytes(&self) -> u64 {
        self.reserved_bytes.saturating_sub(self.allocated_bytes)
    }

    /// Share of free bytes outside the largest free block (0: one free block; near 1: shattered).
    pub fn fragmentation(&self) -> f64 {
        if self.free_bytes == 0 {
            0.0
        } else {
            1.0 - self.largest_free_bytes as f64 / self.free_bytes as f64
        }
    }
}

/// Fragmentation over a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct FragSeries {
    /// Device index.
    pub device: i64,
    /// Entries in the trace.
    pub entries: usize,
    /// Sampled points: the state before the first entry, then for each bucket of entries the one
    /// with the most reserved-but-unallocated bytes (ties: the first), then the last entry.
    pub points: Vec<FragPoint>,
    /// The moment with the most reserved-but-unallocated bytes.
    pub max_unused: Option<FragPoint>,
    /// The moment with the most free bytes outside the largest free block.
    pub max_scattered: Option<FragPoint>,
}

/// Fragmentation after every entry of device `device_pos`, sampled to at most `max_points` points.
pub fn fragmentation_series(snap: &Snapshot, device_pos: usize, max_points: usize) -> FragSeries {
    replay_series(snap, device_pos, max_points, None)
}

/// [`fragmentation_series`] and, from the same replay, the values after every entry
/// ([`FragTrack`]), for drawing any window of the trace at full resolution.
pub fn fragmentation_with_track(snap: &Snapshot, device_pos: usize, max_points: usize) -> (FragSeries, FragTrack) {
    let mut track = FragTrack::default();
    let series = replay_series(snap, device_pos, max_points, Some(&mut track));
    (series, track)
}

fn replay_series(
    snap: &Snapshot,
    device_pos: usize,
    max_points: usize,
    mut track: Option<&mut FragTrack>,
) -> FragSeries {
    let device = snap.devices.get(device_pos).map_or(0, |d| d.index);
    let history = History::build(snap, device_pos);
    let mut tr = FreeTracker::new(history.initial().clone());
    let Some(dev) = snap.devices.get(device_pos) else {
        return FragSeries { device, entries: 0, points: Vec::new(), max_unused: None, max_scattered: None };
    };
    let t = &dev.trace;
    let n = t.len();
    let real = final_block_sizes(snap, device_pos);
    let point = |tr: &FreeTracker, row: Option<u32>| FragPoint {
        row,
        time_us: row.and_then(|r| t.time_us_at(r as usize)),
        reserved_bytes: tr.reserved_bytes(),
        allocated_bytes: tr.allocated_bytes(),
        free_bytes: tr.free_bytes(),
        largest_free_bytes: tr.largest_free_bytes(),
    };
    let first = point(&tr, None);
    if let Some(k) = track.as_deref_mut() {
        k.initial = TrackValues::of(&first);
        k.values.reserve_exact(n);
    }
    let mut points = vec![first];
    let mut max_unused = first;
    let mut max_scattered = first;
    let buckets = max_points.saturating_sub(2).max(1);
    let per = n.div_ceil(buckets).max(1);
    let mut best: Option<FragPoint> = None;
    for row in 0..n {
        let (Some(&a), Some(&addr), Some(&size), Some(&stream), Some(&stack)) =
            (t.action.get(row), t.addr.get(row), t.size_bytes.get(row), t.stream.get(row), t.stack.get(row))
        else {
            if let Some(k) = track.as_deref_mut() {
                let last = k.values.last().copied().unwrap_or(k.initial);
                k.values.push(last);
            }
            continue;
        };
        tr.apply_sized(a, addr, size, stream, stack, real.get(&(row as u32)).copied());
        let p = point(&tr, Some(row as u32));
        if let Some(k) = track.as_deref_mut() {
            k.values.push(TrackValues::of(&p));
        }
        if p.unused_bytes() > max_unused.unused_bytes() {
            max_unused = p;
        }
        if p.free_bytes.saturating_sub(p.largest_free_bytes)
            > max_scattered.free_bytes.saturating_sub(max_scattered.largest_free_bytes)
        {
            max_scattered = p;
        }
        if best.is_none_or(|b| p.unused_bytes() > b.unused_bytes()) {
            best = Some(p);
        }
        if (row + 1) % per == 0 || row + 1 == n {
            if let Some(b) = best.take() {
                if row + 1 == n && b.row != p.row {
                    points.push(b);
                    points.push(p);
                } else {
                    points.push(b);
                }
            }
        }
    }
    if max_points > 0 && points.len() > max_points {
        points.truncate(max_points);
    }
    FragSeries { device, entries: n, points, max_unused: Some(max_unused), max_scattered: Some(max_scattered) }
}

/// Reserved, allocated and largest free bytes at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrackValues {
    /// Segment bytes.
    pub reserved_bytes: u64,
    /// Live requested bytes in blocks.
    pub allocated_bytes: u64,
    /// Largest free block.
    pub largest_free_bytes: u64,
}

impl TrackValues {
    fn of(p: &FragPoint) -> TrackValues {
        TrackValues {
            reserved_bytes: p.reserved_bytes,
            allocated_bytes: p.allocated_bytes,
            largest_free_bytes: p.largest_free_bytes,
        }
    }

    /// Reserved minus allocated.
    pub fn unused_bytes(&self) -> u64 {
        self.reserved_bytes.saturating_sub(self.allocated_bytes)
    }
}

/// Reserved, allocated and largest free bytes after every entry of one device.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FragTrack {
    /// Before the first entry.
    pub initial: TrackValues,
    /// After each entry, by trace row.
    pub values: Vec<TrackValues>,
}

/// A moment of a [`FragTrack`] placed on the x axis of a timeline layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepPoint {
    /// Layout step (event steps of the Active Memory Timeline).
    pub step: f64,
    /// Trace row (`None`: before the first entry).
    pub row: Option<u32>,
    /// The values just after the row.
    pub values: TrackValues,
}

/// Layout step of a trace row: its event's step, or for a row that is not an event of the layout
/// (segment actions, `oom`), the step of the next event.
pub fn step_of_row(layout: &Layout, row: Option<u32>) -> f64 {
    match row {
        None => 0.0,
        Some(r) => f64::from(layout.step_of_row(r).unwrap_or_else(|| layout.step_for_row(r))),
    }
}

impl FragTrack {
    /// Entries in the trace.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the trace has no entries.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Values after a row (`None`: before the first entry); `None` past the end.
    pub fn at_row(&self, row: Option<u32>) -> Option<TrackValues> {
        match row {
            None => Some(self.initial),
            Some(r) => self.values.get(r as usize).copied(),
        }
    }

    fn step_point(&self, layout: &Layout, row: Option<u32>) -> Option<StepPoint> {
        Some(StepPoint { step: step_of_row(layout, row), row, values: self.at_row(row)? })
    }

    /// The moment shown at a layout step: after the last event at or before it.
    pub fn at_step(&self, layout: &Layout, step: f64) -> Option<StepPoint> {
        let row = layout.row_at(step);
        let values = self.at_row(row)?;
        Some(StepPoint { step, row, values })
    }

    /// The points to draw for the layout steps `[s0, s1]`: every row when they are few, else per
    /// column of rows the ones with the least and the most reserved-but-unallocated bytes, in row
    /// order; the last point before the window and the first after it are included, so lines
    /// reach the edges.
    pub fn window(&self, layout: &Layout, s0: f64, s1: f64, columns: usize) -> Vec<StepPoint> {
        let n = self.values.len() as i64;
        // Rows as i64, -1 for the state before the first entry.
        let first = layout.row_at(s0).map_or(-1, i64::from).min(n - 1);
        let mut last = layout.row_at(s1).map_or(-1, i64::from).clamp(first, n - 1);
        // Rows after the last event in the window that are placed at or before s1, then one more.
        let mut guard = 0;
        while last + 1 < n && guard < 4096 && step_of_row(layout, u32::try_from(last + 1).ok()) <= s1 {
            last += 1;
            guard += 1;
        }
        if last + 1 < n {
            last += 1;
        }
        let row_of = |r: i64| u32::try_from(r).ok();
        let unused = |r: i64| self.at_row(row_of(r)).map_or(0, |v| v.unused_bytes());
        let count = (last - first + 1).max(0) as usize;
        let columns = columns.max(1);
        let mut rows: Vec<i64> = Vec::new();
        if count <= 2 * columns {
            rows.extend(first..=last);
        } else {
            rows.push(first);
            for c in 0..columns {
                let a = first + (count * c / columns) as i64;
                let b = (first + (count * (c + 1) / columns) as i64).min(last + 1);
                if a >= b {
                    continue;
                }
                let (mut lo, mut hi) = (a, a);
                let (mut lo_bytes, mut hi_bytes) = (unused(a), unused(a));
                for r in a + 1..b {
                    let u = unused(r);
                    if u < lo_bytes {
                        (lo, lo_bytes) = (r, u);
                    }
                    if u > hi_bytes {
                        (hi, hi_bytes) = (r, u);
                    }
                }
                let (p, q) = (lo.min(hi), lo.max(hi));
                rows.push(p);
                if q != p {
                    rows.push(q);
                }
            }
            rows.push(last);
            rows.dedup();
        }
        rows.into_iter().filter_map(|r| self.step_point(layout, row_of(r))).collect()
    }
}

/// Real block sizes of the allocs whose blocks are still live in the final segments, by alloc
/// row: the same block sizes [`History`] gives when it undoes the trace from the final state.
pub fn final_block_sizes(snap: &Snapshot, device_pos: usize) -> FxHashMap<u32, u64> {
    let mut out = FxHashMap::default();
    let Some(dev) = snap.devices.get(device_pos) else { return out };
    let t = &dev.trace;
    let mut open: FxHashMap<u64, u32> = FxHashMap::default();
    for row in 0..t.len() {
        let (Some(&a), Some(&addr)) = (t.action.get(row), t.addr.get(row)) else { continue };
        match a {
            Action::Alloc => {
                open.insert(addr, row as u32);
            }
            Action::FreeCompleted | Action::Free => {
                open.remove(&addr);
            }
            _ => {}
        }
    }
    let fin = AllocatorState::from_snapshot(snap, device_pos);
    for (addr, row) in open {
        if let Some(b) = fin.blocks.get(&addr) {
            out.insert(row, b.size_bytes);
        }
    }
    out
}

fn point_json(p: &FragPoint) -> Value {
    json!({
        "entry": p.row,
        "time_us": p.time_us,
        "reserved_bytes": p.reserved_bytes,
        "allocated_bytes": p.allocated_bytes,
        "unused_bytes": p.unused_bytes(),
        "free_bytes": p.free_bytes,
        "largest_free_bytes": p.largest_free_bytes,
        "fragmentation": p.fragmentation(),
    })
}

impl FragSeries {
    /// JSON for the page and `memviz fragmentation --json`.
    pub fn to_json(&self) -> Value {
        json!({
            "device": self.device,
            "entries": self.entries,
            "max_unused": self.max_unused.as_ref().map(point_json),
            "max_scattered": self.max_scattered.as_ref().map(point_json),
            "points": self.points.iter().map(point_json).collect::<Vec<_>>(),
        })
    }

    /// One line about the worst moment.
    pub fn summary(&self) -> String {
        match &self.max_unused {
            Some(p) if p.reserved_bytes > 0 => format!(
                "most reserved but unallocated: {} of {} reserved{} (free inside segments {}, largest free block {})",
                size_text(p.unused_bytes()),
                size_text(p.reserved_bytes),
                p.row.map_or_else(|| " before the first entry".to_string(), |r| format!(" at entry {r}")),
                size_text(p.free_bytes),
                size_text(p.largest_free_bytes)
            ),
            _ => "no segments reserved".into(),
        }
    }
}

/// Reserved minus allocated at the peak of live bytes (for quick summaries).
pub fn unused_at_peak(snap: &Snapshot, replay: &Replay) -> Option<FragPoint> {
    unused_at_peak_with(snap, replay, &History::build(snap, replay.device_pos))
}

/// [`unused_at_peak`] from a history already built.
pub fn unused_at_peak_with(snap: &Snapshot, replay: &Replay, history: &History) -> Option<FragPoint> {
    let st = history.state_after(snap, replay.peak_row.map(|r| r as usize));
    let tr = FreeTracker::new(st);
    Some(FragPoint {
        row: replay.peak_row,
        time_us: super::time_of_row(snap, replay.device_pos, replay.peak_row),
        reserved_bytes: tr.reserved_bytes(),
        allocated_bytes: tr.allocated_bytes(),
        free_bytes: tr.free_bytes(),
        largest_free_bytes: tr.largest_free_bytes(),
    })
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::analysis::test_util::fixture;

    fn sorted(mut v: Vec<FreeRange>) -> Vec<(u64, u64)> {
        v.sort_by_key(|f| f.addr);
        v.into_iter().map(|f| (f.addr, f.size_bytes)).collect()
    }

    #[test]
    fn incremental_free_ranges_equal_recomputed_ones() {
        for name in [
            "resnet50_fixed.pickle",
            "oom.pickle",
            "expandable_segments.pickle",
            "multistream.pickle",
            "growth_leak.pickle",
            "gpt_amp_annotated.pickle",
        ] {
            let snap = fixture(name);
            for pos in 0..snap.devices.len() {
                let h = History::build(&snap, pos);
                let mut tr = FreeTracker::new(h.initial().clone());
                let t = &snap.devices[pos].trace;
                let stride = (t.len() / 300).max(1);
                for k in 0..t.len() {
                    tr.apply(t.action[k], t.addr[k], t.size_bytes[k], t.stream[k], t.stack[k]);
                    if k % stride == 0 || k + 1 == t.len() {
                        let want = sorted(tr.state.free_ranges());
                        assert_eq!(sorted(tr.free_ranges()), want, "{name} after entry {k}");
                        assert_eq!(tr.largest_free_bytes(), want.iter().map(|x| x.1).max().unwrap_or(0), "{name} {k}");
                        assert_eq!(tr.allocated_bytes(), tr.state.allocated_bytes(), "{name} {k}");
                        assert_eq!(tr.reserved_bytes(), tr.state.reserved_bytes(), "{name} {k}");
                    }
                }
            }
        }
    }

    /// With real block sizes for the allocations still live at the end, the forward replay gives
    /// the same free ranges as the backward one of `History::state_after`.
    #[test]
    fn forward_replay_equals_history() {
        for name in ["resnet50_fixed.pickle", "oom.pickle", "expandable_segments.pickle", "multistream.pickle"] {
            let snap = fixture(name);
            let h = History::build(&snap, 0);
            let real = final_block_sizes(&snap, 0);
            let mut tr = FreeTracker::new(h.initial().clone());
            let t = &snap.devices[0].trace;
            let stride = (t.len() / 40).max(1);
            for k in 0..t.len() {
                tr.apply_sized(
                    t.action[k],
                    t.addr[k],
                    t.size_bytes[k],
                    t.stream[k],
                    t.stack[k],
                    real.get(&(k as u32)).copied(),
                );
                if k % stride == 0 || k + 1 == t.len() {
                    let want = h.state_after(&snap, Some(k));
                    assert_eq!(
                        sorted(tr.free_ranges()),
                        sorted(want.normalized().free_ranges()),
                        "{name} after entry {k}"
                    );
                }
            }
        }
    }

    // Figures from: python3 tests/gen/verify_fragmentation.py tests/data/real/resnet50_fixed.pickle 369 3399 4180
    // and ... oom.pickle 36 45
    #[test]
    fn verified_points() {
        {
            let snap = fixture("resnet50_fixed.pickle");
            let s = fragmentation_series(&snap, 0, 100_000);
            let at = |r: u32| {
                s.points
                    .iter()
                    .find(|p| p.row == Some(r))
                    .map(|p| (p.reserved_bytes, p.allocated_bytes, p.free_bytes, p.largest_free_bytes))
            };
            assert_eq!(at(369), Some((287_309_824, 223_186_224, 64_084_480, 33_554_432)));
            assert_eq!(at(3399), Some((478_150_656, 428_490_192, 46_733_824, 12_582_912)));
            assert_eq!(at(4180), Some((478_150_656, 273_436_712, 201_792_000, 20_971_520)));
            let m = s.max_unused.expect("max");
            assert_eq!((m.row, m.unused_bytes()), (Some(4180), 204_713_944));
        }
        {
            let snap = fixture("oom.pickle");
            let s = fragmentation_series(&snap, 0, 1000);
            let at = |r: u32| {
                s.points
                    .iter()
                    .find(|p| p.row == Some(r))
                    .map(|p| (p.reserved_bytes, p.allocated_bytes, p.free_bytes, p.largest_free_bytes))
            };
            assert_eq!(at(36), Some((2_730_491_904, 1_852_844_522, 876_256_256, 413_138_944)));
            assert_eq!(at(45), Some((2_751_463_424, 2_740_593_636, 9_246_208, 2_059_264)));
            assert_eq!(s.max_unused.map(|m| (m.row, m.unused_bytes())), Some((Some(36), 877_647_382)));
        }
    }

    #[test]
    fn track_follows_the_series_and_windows_use_layout_steps() {
        let snap = fixture("resnet50_fixed.pickle");
        let (s, track) = fragmentation_with_track(&snap, 0, 100_000);
        assert_eq!(s, fragmentation_series(&snap, 0, 100_000));
        assert_eq!(track.len(), s.entries);
        for p in &s.points {
            let v = track.at_row(p.row).expect("row");
            assert_eq!(
                (v.reserved_bytes, v.allocated_bytes, v.largest_free_bytes),
                (p.reserved_bytes, p.allocated_bytes, p.largest_free_bytes)
            );
        }
        let layout = Layout::build(&snap, 0, crate::timeline::Options::default());
        let end = f64::from(layout.steps);
        let all = track.window(&layout, 0.0, end, 300);
        assert!(all.len() <= 2 * 300 + 2, "{}", all.len());
        assert!(all.windows(2).all(|w| w[0].step <= w[1].step && w[0].row < w[1].row || w[0].row.is_none()));
        // The worst moment is the most unused of its column, so it is drawn, at its event's step.
        let worst = all.iter().find(|p| p.row == Some(4180)).expect("row 4180 drawn");
        assert_eq!(worst.values.unused_bytes(), 204_713_944);
        assert_eq!(worst.step, f64::from(layout.step_of_row(4180).expect("an event")));
        // A narrow window: every row in it, from the one before to the one after.
        let step = worst.step;
        let near = track.window(&layout, step - 5.0, step + 5.0, 300);
        assert!(near.first().is_some_and(|p| p.step <= step - 5.0) && near.last().is_some_and(|p| p.step > step + 5.0));
        assert!(near.iter().any(|p| p.row == Some(4180)));
        assert_eq!(track.at_step(&layout, step).map(|p| p.row), Some(Some(4180)));
    }

    #[test]
    fn series_is_sampled() {
        let snap = fixture("resnet50_fixed.pickle");
        let s = fragmentation_series(&snap, 0, 100);
        assert!(s.points.len() <= 100 && s.points.len() > 50, "{}", s.points.len());
        assert!(s.points.windows(2).all(|w| w[0].row < w[1].row || w[0].row.is_none()));
    }
}
