//! Allocator state (segments and blocks) just after any trace event, the way PyTorch's
//! "Allocator State History" shows it, without replaying the whole
//! trace per seek: one backward pass from the final snapshot stores checkpoints, and a seek undoes
//! at most one checkpoint interval of events. Long replays (that pass, and the analyses' passes
//! over a whole trace) keep the blocks hashed ([`HashedState`]), which changes as the state does.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::snapshot::{Action, BlockState, Snapshot};

/// Smallest block the CUDA caching allocator hands out; sizes round up to a multiple of it.
pub const MIN_BLOCK_BYTES: u64 = 512;

/// Rounds a requested size the way the caching allocator does by default.
pub fn rounded_size(requested: u64) -> u64 {
    requested.max(1).div_ceil(MIN_BLOCK_BYTES).saturating_mul(MIN_BLOCK_BYTES)
}

/// A reserved range (a segment, or a mapped range of an expandable segment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentRange {
    /// Start address.
    pub addr: u64,
    /// Bytes.
    pub size_bytes: u64,
    /// Stream index.
    pub stream: u32,
    /// Pool index.
    pub pool: u32,
    /// Part of an expandable segment.
    pub expandable: bool,
    /// Stack of the segment's creation (0 when unknown).
    pub stack: u32,
}

/// A live block (allocated, or freed but pending on other streams).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveBlock {
    /// Bytes the allocator reserved for it (rounded; estimated with [`rounded_size`] when the
    /// trace does not say).
    pub size_bytes: u64,
    /// Bytes requested.
    pub requested_bytes: u64,
    /// Freed by the user, waiting for other streams (record_stream).
    pub pending_free: bool,
    /// Allocation stack.
    pub stack: u32,
}

/// Segments and live blocks of one device at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllocatorState {
    /// Reserved ranges by start address.
    pub segments: BTreeMap<u64, SegmentRange>,
    /// Live blocks by address.
    pub blocks: BTreeMap<u64, LiveBlock>,
    /// The trace frees blocks without requesting it first (`skip_actions=["free_requested"]`), so
    /// undoing a completed free gives a block that was not pending.
    pub free_requests_skipped: bool,
}

/// A free range inside a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeRange {
    /// Start address.
    pub addr: u64,
    /// Bytes.
    pub size_bytes: u64,
    /// Stream index of the segment.
    pub stream: u32,
    /// Pool index of the segment.
    pub pool: u32,
}

impl AllocatorState {
    /// The final state of a device, from the snapshot's segments.
    pub fn from_snapshot(snap: &Snapshot, device_pos: usize) -> AllocatorState {
        let mut st = AllocatorState::default();
        let Some(dev) = snap.devices.get(device_pos) else { return st };
        let has = |a: Action| dev.trace.action.contains(&a);
        st.free_requests_skipped = has(Action::FreeCompleted) && !has(Action::FreeRequested);
        for s in snap.segments.iter().filter(|s| s.device == dev.index) {
            st.segments.insert(
                s.address,
                SegmentRange {
                    addr: s.address,
                    size_bytes: s.total_size,
                    stream: s.stream,
                    pool: s.pool,
                    expandable: s.is_expandable,
                    stack: s.stack,
                },
            );
            for b in snap.segment_blocks(s) {
                if matches!(b.state, BlockState::ActiveAllocated | BlockState::ActivePendingFree) {
                    st.blocks.insert(
                        b.address,
                        LiveBlock {
                            size_bytes: b.size,
                            requested_bytes: b.requested_size,
                            pending_free: b.state == BlockState::ActivePendingFree,
                            stack: b.stack,
                        },
                    );
                }
            }
        }
        st
    }

    /// Sum of requested bytes of live blocks (PyTorch's "allocated").
    pub fn allocated_bytes(&self) -> u64 {
        self.blocks.values().map(|b| b.requested_bytes).sum()
    }

    /// Sum of segment bytes ("reserved").
    pub fn reserved_bytes(&self) -> u64 {
        self.segments.values().map(|s| s.size_bytes).sum()
    }

    /// The segment containing an address.
    pub fn segment_of(&self, addr: u64) -> Option<&SegmentRange> {
        self.segments
            .range(..=addr)
            .next_back()
            .map(|(_, s)| s)
            .filter(|s| u128::from(addr) < u128::from(s.addr) + u128::from(s.size_bytes))
    }

    /// Free ranges: segment space not covered by live blocks.
    pub fn free_ranges(&self) -> Vec<FreeRange> {
        let mut out = Vec::new();
        for s in self.segments.values() {
            let end = u128::from(s.addr) + u128::from(s.size_bytes);
            let mut cursor = u128::from(s.addr);
            for (&a, b) in self.blocks.range(s.addr..) {
                let a128 = u128::from(a);
                if a128 >= end {
                    break;
                }
                if a128 > cursor {
                    out.push(FreeRange {
                        addr: cursor as u64,
                        size_bytes: (a128 - cursor) as u64,
                        stream: s.stream,
                        pool: s.pool,
                    });
                }
                cursor = cursor.max(a128 + u128::from(b.size_bytes));
            }
            if end > cursor {
                out.push(FreeRange {
                    addr: cursor as u64,
                    size_bytes: (end - cursor) as u64,
                    stream: s.stream,
                    pool: s.pool,
                });
            }
        }
        out
    }

    fn insert_range(&mut self, addr: u64, size: u64, stream: u32, merge: bool) {
        let mut r = SegmentRange { addr, size_bytes: size, stream, pool: 0, expandable: merge, stack: 0 };
        if merge {
            // Merge with touching neighbours of the same stream (expandable segments).
            if let Some((&pa, p)) = self.segments.range(..addr).next_back() {
                if u128::from(pa) + u128::from(p.size_bytes) == u128::from(addr) && p.stream == stream {
                    r.addr = pa;
                    r.size_bytes += p.size_bytes;
                    r.pool = p.pool;
                    r.stack = p.stack;
                    self.segments.remove(&pa);
                }
            }
            let end = addr.saturating_add(size);
            if let Some(n) = self.segments.get(&end).cloned() {
                if n.stream == stream {
                    r.size_bytes += n.size_bytes;
                    self.segments.remove(&end);
                }
            }
        }
        self.segments.insert(r.addr, r);
    }

    fn remove_range(&mut self, addr: u64, size: u64) {
        let Some(s) = self.segment_of(addr).cloned() else { return };
        self.segments.remove(&s.addr);
        let end = u128::from(addr) + u128::from(size);
        let s_end = u128::from(s.addr) + u128::from(s.size_bytes);
        if addr > s.addr {
            let mut front = s.clone();
            front.size_bytes = addr - s.addr;
            self.segments.insert(front.addr, front);
        }
        if end < s_end {
            let mut back = s.clone();
            back.addr = end as u64;
            back.size_bytes = (s_end - end) as u64;
            self.segments.insert(back.addr, back);
        }
    }

    /// Applies one event forward.
    pub fn apply(&mut self, action: Action, addr: u64, size: u64, stream: u32, stack: u32) {
        if !apply_block(&mut self.blocks, action, addr, size, stack) {
            self.apply_segment(action, addr, size, stream, stack);
        }
    }

    /// The segment half of [`AllocatorState::apply`] (block events do nothing).
    fn apply_segment(&mut self, action: Action, addr: u64, size: u64, stream: u32, stack: u32) {
        match action {
            Action::SegmentAlloc => {
                self.segments
                    .insert(addr, SegmentRange { addr, size_bytes: size, stream, pool: 0, expandable: false, stack });
            }
            Action::SegmentFree => {
                self.segments.remove(&addr);
            }
            Action::SegmentMap => self.insert_range(addr, size, stream, true),
            Action::SegmentUnmap => self.remove_range(addr, size),
            _ => {}
        }
    }

    /// Undoes one event (the state before it, from the state after it).
    pub fn undo(&mut self, action: Action, addr: u64, size: u64, stream: u32, stack: u32) {
        if !undo_block(&mut self.blocks, action, addr, size, stack, !self.free_requests_skipped) {
            self.undo_segment(action, addr, size, stream, stack);
        }
    }

    /// The segment half of [`AllocatorState::undo`] (block events do nothing).
    fn undo_segment(&mut self, action: Action, addr: u64, size: u64, stream: u32, stack: u32) {
        match action {
            Action::SegmentAlloc => {
                self.segments.remove(&addr);
            }
            Action::SegmentFree => {
                self.segments
                    .insert(addr, SegmentRange { addr, size_bytes: size, stream, pool: 0, expandable: false, stack });
            }
            Action::SegmentMap => self.remove_range(addr, size),
            Action::SegmentUnmap => self.insert_range(addr, size, stream, true),
            _ => {}
        }
    }

    /// Merges touching expandable ranges of the same stream (the snapshot lists each mapped range
    /// separately; replay merges them), for comparing states.
    pub fn normalized(&self) -> AllocatorState {
        let mut out = AllocatorState {
            segments: BTreeMap::new(),
            blocks: self.blocks.clone(),
            free_requests_skipped: self.free_requests_skipped,
        };
        let mut cur: Option<SegmentRange> = None;
        for s in self.segments.values() {
            match cur.as_mut() {
                Some(c)
                    if c.expandable
                        && s.expandable
                        && c.stream == s.stream
                        && u128::from(c.addr) + u128::from(c.size_bytes) == u128::from(s.addr) =>
                {
                    c.size_bytes += s.size_bytes;
                }
                _ => {
                    if let Some(c) = cur.take() {
                        out.segments.insert(c.addr, c);
                    }
                    cur = Some(s.clone());
                }
            }
        }
        if let Some(c) = cur {
            out.segments.insert(c.addr, c);
        }
        out
    }
}

/// Live blocks by address: [`AllocatorState::blocks`] (a B-tree, for walks in address order) or
/// [`HashedState::blocks`] (a hash map, for replays over many events); both change the same way.
trait BlockMap {
    fn put(&mut self, addr: u64, block: LiveBlock);
    fn take(&mut self, addr: u64);
    fn get_block_mut(&mut self, addr: u64) -> Option<&mut LiveBlock>;
}

/// The same three calls for each map type (their own `insert`, `remove`, `get_mut`).
macro_rules! block_map {
    ($($map:ty),*) => {$(
        impl BlockMap for $map {
            fn put(&mut self, addr: u64, block: LiveBlock) {
                self.insert(addr, block);
            }
            fn take(&mut self, addr: u64) {
                self.remove(&addr);
            }
            fn get_block_mut(&mut self, addr: u64) -> Option<&mut LiveBlock> {
                self.get_mut(&addr)
            }
        }
    )*};
}

block_map!(BTreeMap<u64, LiveBlock>, FxHashMap<u64, LiveBlock>);

/// A block of `size` requested bytes, its size rounded as the allocator rounds it.
fn new_block(size: u64, pending_free: bool, stack: u32) -> LiveBlock {
    LiveBlock { size_bytes: rounded_size(size), requested_bytes: size, pending_free, stack }
}

/// Applies a block event (alloc, free request, free) forward; `false` for any other event.
fn apply_block(blocks: &mut impl BlockMap, action: Action, addr: u64, size: u64, stack: u32) -> bool {
    match action {
        Action::Alloc => {
            blocks.put(addr, new_block(size, false, stack));
        }
        Action::FreeRequested => {
            if let Some(b) = blocks.get_block_mut(addr) {
                b.pending_free = true;
            }
        }
        Action::FreeCompleted | Action::Free => blocks.take(addr),
        _ => return false,
    }
    true
}

/// Undoes a block event; `false` for any other event. `requested`: a completed free was
/// requested first, so the block it gives back was pending.
fn undo_block(blocks: &mut impl BlockMap, action: Action, addr: u64, size: u64, stack: u32, requested: bool) -> bool {
    match action {
        Action::Alloc => blocks.take(addr),
        Action::FreeRequested => {
            if let Some(b) = blocks.get_block_mut(addr) {
                b.pending_free = false;
            }
        }
        Action::FreeCompleted => {
            blocks.put(addr, new_block(size, requested, stack));
        }
        Action::Free => {
            blocks.put(addr, new_block(size, false, stack));
        }
        _ => return false,
    }
    true
}

/// An [`AllocatorState`] for replaying many events: its blocks in a hash map (a lookup costs a
/// fraction of a B-tree's search; nothing here needs them in address order), its segments as
/// they are there. It changes exactly as an [`AllocatorState`] does.
#[derive(Clone, Debug, Default)]
pub struct HashedState {
    /// The segments (its blocks left empty).
    pub segments: AllocatorState,
    /// Live blocks by address.
    pub blocks: FxHashMap<u64, LiveBlock>,
}

impl HashedState {
    /// The same state, hashed.
    pub fn new(st: &AllocatorState) -> HashedState {
        HashedState {
            segments: AllocatorState {
                segments: st.segments.clone(),
                blocks: BTreeMap::new(),
                free_requests_skipped: st.free_requests_skipped,
            },
            blocks: st.blocks.iter().map(|(&a, b)| (a, b.clone())).collect(),
        }
    }

    /// The same state, its blocks in address order.
    pub fn to_state(&self) -> AllocatorState {
        AllocatorState {
            segments: self.segments.segments.clone(),
            blocks: self.blocks.iter().map(|(&a, b)| (a, b.clone())).collect(),
            free_requests_skipped: self.segments.free_requests_skipped,
        }
    }

    /// Sum of segment bytes, as [`AllocatorState::reserved_bytes`].
    pub fn reserved_bytes(&self) -> u64 {
        self.segments.reserved_bytes()
    }

    /// [`AllocatorState::apply`].
    pub fn apply(&mut self, action: Action, addr: u64, size: u64, stream: u32, stack: u32) {
        if !apply_block(&mut self.blocks, action, addr, size, stack) {
            self.segments.apply_segment(action, addr, size, stream, stack);
        }
    }

    /// [`HashedState::apply`], returning the requested bytes of the block at `addr` before and
    /// after the event (0: none).
    pub fn apply_counted(&mut self, action: Action, addr: u64, size: u64, stream: u32, stack: u32) -> (u64, u64) {
        match action {
            // One lookup: the block replaced or removed is the one before.
            Action::Alloc => {
                let before = self.blocks.insert(addr, new_block(size, false, stack));
                (before.map_or(0, |b| b.requested_bytes), size)
            }
            Action::FreeCompleted | Action::Free => (self.blocks.remove(&addr).map_or(0, |b| b.requested_bytes), 0),
            _ => {
                let before = self.blocks.get(&addr).map_or(0, |b| b.requested_bytes);
                self.apply(action, addr, size, stream, stack);
                (before, self.blocks.get(&addr).map_or(0, |b| b.requested_bytes))
            }
        }
    }

    /// [`AllocatorState::undo`].
    pub fn undo(&mut self, action: Action, addr: u64, size: u64, stream: u32, stack: u32) {
        if !undo_block(&mut self.blocks, action, addr, size, stack, !self.segments.free_requests_skipped) {
            self.segments.undo_segment(action, addr, size, stream, stack);
        }
    }
}

/// Checkpointed history of one device's allocator state.
#[derive(Clone, Debug)]
pub struct History {
    device_pos: usize,
    /// (k, state just after event k), every `interval` events, from the end backwards; plus the
    /// state before the first event as k = usize::MAX.
    checkpoints: Vec<(usize, AllocatorState)>,
    /// Events between checkpoints.
    pub interval: usize,
    /// Number of events.
    pub len: usize,
}

impl History {
    /// One backward pass from the final snapshot.
    pub fn build(snap: &Snapshot, device_pos: usize) -> History {
        let n = snap.devices.get(device_pos).map_or(0, |d| d.trace.len());
        let interval = (n / 64).max(2048);
        let mut st = HashedState::new(&AllocatorState::from_snapshot(snap, device_pos));
        let mut checkpoints = Vec::new();
        if let Some(dev) = snap.devices.get(device_pos) {
            let t = &dev.trace;
            for k in (0..n).rev() {
                if (n - 1 - k) % interval == 0 {
                    checkpoints.push((k, st.to_state()));
                }
                st.undo(t.action[k], t.addr[k], t.size_bytes[k], t.stream[k], t.stack[k]);
            }
        }
        checkpoints.push((usize::MAX, st.to_state()));
        History { device_pos, checkpoints, interval, len: n }
    }

    /// The state before the first event.
    pub fn initial(&self) -> &AllocatorState {
        // The last checkpoint pushed is the initial state.
        &self.checkpoints[self.checkpoints.len() - 1].1
    }

    /// The state just after event `k` (`None`: before the first event).
    pub fn state_after(&self, snap: &Snapshot, k: Option<usize>) -> AllocatorState {
        let Some(k) = k.filter(|&k| k < self.len) else { return self.initial().clone() };
        // The checkpoint with the smallest index >= k.
        let Some((ck, st)) =
            self.checkpoints.iter().filter(|(c, _)| *c != usize::MAX && *c >= k).min_by_key(|(c, _)| *c)
        else {
            return self.initial().clone();
        };
        let mut st = st.clone();
        if let Some(dev) = snap.devices.get(self.device_pos) {
            let t = &dev.trace;
            for j in (k + 1..=*ck).rev() {
                st.undo(t.action[j], t.addr[j], t.size_bytes[j], t.stream[j], t.stack[j]);
            }
        }
        st
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<std::path::PathBuf> {
        crate::test_fixtures::fixture_files_with(&["real"], &["pickle"])
    }

    /// Segments as (address, size, stream) and blocks as (address, requested bytes, pending free).
    type RequestedView = (Vec<(u64, u64, u32)>, Vec<(u64, u64, bool)>);

    fn requested_view(st: &AllocatorState) -> RequestedView {
        let n = st.normalized();
        (
            n.segments.values().map(|s| (s.addr, s.size_bytes, s.stream)).collect(),
            n.blocks.iter().map(|(&a, b)| (a, b.requested_bytes, b.pending_free)).collect(),
        )
    }

    #[test]
    fn forward_replay_from_reconstructed_start_ends_in_the_snapshot() {
        let fs = files();
        assert!(!fs.is_empty());
        for f in fs {
            let snap = crate::load(&std::fs::read(&f).expect("read")).expect("load");
            for pos in 0..snap.devices.len() {
                let h = History::build(&snap, pos);
                let mut st = h.initial().clone();
                let t = &snap.devices[pos].trace;
                for k in 0..t.len() {
                    st.apply(t.action[k], t.addr[k], t.size_bytes[k], t.stream[k], t.stack[k]);
                }
                let fin = AllocatorState::from_snapshot(&snap, pos);
                assert_eq!(requested_view(&st), requested_view(&fin), "{f:?} device {pos}");
            }
        }
    }

    #[test]
    fn seeks_equal_full_replay() {
        let path = crate::test_fixtures::fixture("real", "resnet50_fixed.pickle");
        let bytes = std::fs::read(path).expect("read");
        let snap = crate::load(&bytes).expect("load");
        let h = History::build(&snap, 0);
        let t = &snap.devices[0].trace;
        let mut st = h.initial().clone();
        for k in 0..t.len() {
            st.apply(t.action[k], t.addr[k], t.size_bytes[k], t.stream[k], t.stack[k]);
            if k % 997 == 0 || k + 1 == t.len() {
                assert_eq!(requested_view(&h.state_after(&snap, Some(k))), requested_view(&st), "after event {k}");
            }
        }
    }

    #[test]
    fn free_ranges_fill_the_gaps() {
        let mut st = AllocatorState::default();
        st.apply(Action::SegmentAlloc, 1000, 4096, 0, 0);
        st.apply(Action::Alloc, 1000, 100, 0, 0);
        st.apply(Action::Alloc, 2024, 512, 0, 0);
        let f = st.free_ranges();
        assert_eq!(
            f,
            vec![
                FreeRange { addr: 1512, size_bytes: 512, stream: 0, pool: 0 },
                FreeRange { addr: 2536, size_bytes: 2560, stream: 0, pool: 0 },
            ]
        );
    }
}
