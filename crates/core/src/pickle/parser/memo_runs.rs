//! Memo slots kept as runs: the inline dicts of a frame list read again.
//!
//! A snapshot whose frame dicts are written inline memoizes every one of them, so its memo has
//! a slot per frame of every entry (59.3M slots, 296 MB at five bytes a slot, for a 1 GB file).
//! When a frame list equal to one read before is read again ([`Parser::inline_frame_list`]), its
//! dicts' slots hold the same dicts as that list's, in the same order: those slots are kept as
//! one run, which points at one copy of the dicts' ids shared by every list read again, instead
//! of a slot each. The other slots stay dense, numbered past the runs before them.
//!
//! A write into a run's slot (input that rebinds a memo slot) is kept beside the runs and read
//! first. Inputs with no such lists keep no runs, and their memo reads take the dense path alone.

use rustc_hash::FxHashMap;

use super::Parser;
use crate::pickle::value::{Value, MEMO_LIST};

/// Shortest list of inline dicts kept as a run (a run takes the room of about five slots).
const RUN_MIN_SLOTS: usize = 8;

/// Slots per block of the runs' index: a slot's run is searched among a block's runs only.
const BLOCK_SLOTS: u64 = 4096;

/// Slots `start..start + len` hold the dicts `arena[at..at + len]`; `dense_before` dense slots
/// come before `start`.
#[derive(Debug, Clone, Copy)]
struct MemoRun {
    start: u64,
    dense_before: u64,
    len: u32,
    at: u32,
}

/// Where a memo slot is kept.
pub(super) enum MemoAt {
    /// In the dense slots, at this index.
    Dense(usize),
    /// In a run: the dict it holds.
    Run(u32),
    /// Past every slot written in order (maybe a sparse one).
    Beyond,
}

/// The runs of memo slots and what they point at.
#[derive(Debug, Default)]
pub(super) struct MemoRuns {
    runs: Vec<MemoRun>,
    /// The dicts' ids of the lists read again, each list's once per cache generation.
    arena: Vec<u32>,
    /// Slots in runs.
    pub(super) hidden: u64,
    /// Where a known list's slots (by their start in the leaf cache) are in `arena`.
    arena_of: FxHashMap<u32, u32>,
    /// The leaf cache's generation `arena_of` belongs to.
    generation: u64,
    /// Slots of runs written over, by slot.
    pub(super) overrides: FxHashMap<u64, Value>,
    /// For each block of [`BLOCK_SLOTS`] slots, the first run that starts in it or later.
    first_in_block: Vec<u32>,
}

impl MemoRuns {
    /// The slots before the first run (all when there is none): there, slots and dense
    /// indices are the same and no slot is written over.
    #[inline(always)]
    pub(super) fn dense_prefix(&self) -> u64 {
        self.runs.first().map_or(u64::MAX, |r| r.start)
    }

    /// Where slot `idx` is kept, with `dense_len` dense slots.
    pub(super) fn at(&self, idx: u64, dense_len: usize) -> MemoAt {
        if idx >= dense_len as u64 + self.hidden {
            return MemoAt::Beyond;
        }
        let Some(r) = self.run_before(idx) else {
            // Before the first run, slots and dense indices are the same.
            return MemoAt::Dense(idx as usize);
        };
        let off = idx - r.start;
        if off < u64::from(r.len) {
            return match self.arena.get(r.at as usize + off as usize) {
                Some(&d) => MemoAt::Run(d),
                None => MemoAt::Beyond,
            };
        }
        MemoAt::Dense((r.dense_before + off - u64::from(r.len)) as usize)
    }

    /// The last run that starts at or before slot `idx`, if any: searched among the runs that
    /// start in `idx`'s block of [`BLOCK_SLOTS`] and the one before them.
    #[inline]
    fn run_before(&self, idx: u64) -> Option<&MemoRun> {
        // Most reads are of slots before the first run (the strings written first) or after the
        // last (what the entry being read wrote).
        let (first, last) = (self.runs.first()?, self.runs.last()?);
        if idx < first.start {
            return None;
        }
        if idx >= last.start {
            return Some(last);
        }
        let b = usize::try_from(idx / BLOCK_SLOTS).unwrap_or(usize::MAX);
        let lo = self.first_in_block.get(b).map_or(self.runs.len(), |&k| k as usize);
        let hi = self.first_in_block.get(b.saturating_add(1)).map_or(self.runs.len(), |&k| k as usize);
        let within = self.runs.get(lo..hi.max(lo)).map_or(0, |rs| rs.partition_point(|r| r.start <= idx));
        (lo + within).checked_sub(1).and_then(|k| self.runs.get(k))
    }

    /// Adds a run (runs come in the order of their slots); whether it could be.
    fn push(&mut self, run: MemoRun) -> bool {
        let Ok(k) = u32::try_from(self.runs.len()) else { return false };
        // Blocks that begin at or before this run's start and after the last run's get it as
        // their first run.
        while (self.first_in_block.len() as u64).saturating_mul(BLOCK_SLOTS) <= run.start {
            self.first_in_block.push(k);
        }
        self.runs.push(run);
        self.hidden += u64::from(run.len);
        true
    }
}

impl Parser {
    /// The slot the next value memoized in order takes.
    #[inline(always)]
    pub(super) fn memo_next(&self) -> u64 {
        self.memo_tags.len() as u64 + self.memo_runs.hidden
    }

    /// The memo writes of a frame list `list` read again, whose inline dicts' slots are
    /// `cache_slots` in the leaf cache, when its dicts' slots can be one run: the list's own
    /// slot, then the run. Whether they were made (nothing is written otherwise).
    pub(super) fn memo_put_run(&mut self, list: u32, cache_slots: (u32, u32), generation: u64) -> bool {
        let (s0, n) = (cache_slots.0 as usize, cache_slots.1 as usize);
        if n < RUN_MIN_SLOTS {
            return false;
        }
        let runs = &mut self.memo_runs;
        if runs.generation != generation {
            runs.arena_of.clear();
            runs.generation = generation;
        }
        let at = match runs.arena_of.get(&cache_slots.0) {
            Some(&at) => Some(at),
            None => {
                let copied = self.leaf_cache.list_slots.get(s0..s0 + n);
                u32::try_from(runs.arena.len()).ok().zip(copied).map(|(at, slots)| {
                    runs.arena.extend_from_slice(slots);
                    runs.arena_of.insert(cache_slots.0, at);
                    at
                })
            }
        };
        let Some(at) = at else { return false };
        self.memo_tags.push(MEMO_LIST);
        self.memo_ids.push(list);
        let run =
            MemoRun { start: self.memo_next(), dense_before: self.memo_tags.len() as u64, len: cache_slots.1, at };
        if self.memo_runs.push(run) {
            return true;
        }
        self.memo_tags.pop();
        self.memo_ids.pop();
        false
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use crate::pickle::{Document, Parser, Value};

    /// Writes a pickle the way CPython's pickler does, memoizing each string and container.
    #[derive(Default)]
    struct Writer {
        b: Vec<u8>,
        next: u32,
        strs: HashMap<String, u32>,
    }

    impl Writer {
        fn memo(&mut self) -> u32 {
            self.b.push(0x94);
            self.next += 1;
            self.next - 1
        }
        fn get(&mut self, slot: u32) {
            match u8::try_from(slot) {
                Ok(s) => self.b.extend_from_slice(&[b'h', s]),
                Err(_) => {
                    self.b.push(b'j');
                    self.b.extend_from_slice(&slot.to_le_bytes());
                }
            }
        }
        fn text(&mut self, t: &str) {
            if let Some(&slot) = self.strs.get(t) {
                return self.get(slot);
            }
            self.b.extend_from_slice(&[0x8c, t.len() as u8]);
            self.b.extend_from_slice(t.as_bytes());
            let slot = self.memo();
            self.strs.insert(t.to_string(), slot);
        }
        /// An entry `{"frames": [ten frame dicts, written inline]}`; the slots of its dicts.
        fn entry(&mut self) -> (u32, u32, Vec<u32>) {
            self.b.push(b'}');
            let entry = self.memo();
            self.b.push(b'(');
            self.text("frames");
            self.b.push(b']');
            let list = self.memo();
            self.b.push(b'(');
            let mut dicts = Vec::new();
            for i in 0..10u8 {
                self.b.push(b'}');
                dicts.push(self.memo());
                self.b.push(b'(');
                self.text("name");
                self.text(&format!("f{i}"));
                self.text("line");
                self.b.extend_from_slice(&[b'K', i]);
                self.b.push(b'u');
            }
            self.b.extend_from_slice(b"eu");
            (entry, list, dicts)
        }
        /// An entry `{"frames": <memo slot>}`.
        fn entry_of(&mut self, slot: u32) {
            self.b.push(b'}');
            self.memo();
            self.b.push(b'(');
            self.text("frames");
            self.get(slot);
            self.b.push(b'u');
        }
    }

    /// Frame lists read again keep their dicts' slots as runs; memo reads of slots in a run,
    /// after it and written over read what the pickle put there, however the input is cut.
    #[test]
    fn slots_in_runs_read_back_as_written() {
        let mut w = Writer::default();
        w.b.extend_from_slice(&[0x80, 4, b']']);
        w.memo();
        w.b.push(b'(');
        let entries: Vec<_> = (0..5).map(|_| w.entry()).collect();
        // A GET of a dict in a run, of a list after runs, and of a run's slot written over.
        w.entry_of(entries[3].2[7]);
        w.entry_of(entries[4].1);
        w.text("over");
        w.b.push(b'r');
        w.b.extend_from_slice(&entries[4].2[2].to_le_bytes());
        w.b.push(b'0');
        w.entry_of(entries[4].2[2]);
        w.entry_of(entries[4].2[3]);
        w.b.extend_from_slice(b"e.");
        let frames = |d: &Document| -> Vec<Value> {
            d.items(d.root()).iter().map(|e| d.get(e, "frames").unwrap_or(Value::None)).collect()
        };
        let check = |p: Parser, what: &str| {
            let d = p.finish().expect("finishes");
            let got = frames(&d);
            let items = |i: usize| d.items(got[i]).to_vec();
            assert_eq!(items(1), items(0), "{what}");
            assert_eq!(items(4), items(0), "{what}");
            assert_eq!(got[5], items(3)[7], "{what}: a dict in a run");
            assert_eq!(got[6], got[4], "{what}: a list after runs");
            assert_eq!(d.as_str(got[7]), Some("over"), "{what}: a slot written over");
            assert_eq!(got[8], items(4)[3], "{what}: the slot after it");
        };
        let mut p = Parser::new();
        p.feed(&w.b).expect("feeds");
        // Three lists read again (a list read whole the first time is then known).
        assert_eq!(p.memo_runs.hidden, 30, "lists read again make runs");
        check(p, "whole");
        // Cut into small pieces, lists are read by the general path: the same values.
        for chunk in [1, 7, 64] {
            let mut p = Parser::new();
            for c in w.b.chunks(chunk) {
                p.feed(c).expect("feeds");
            }
            check(p, &format!("chunks of {chunk}"));
        }
    }
}
