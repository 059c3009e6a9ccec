//! The allocator-state simulation behind the Allocator State History, against every real
//! snapshot (`tests/data/real`): replaying the whole trace forward from
//! the reconstructed start (the final state with every event undone) must end in exactly the
//! snapshot's `segments` and blocks, every step on the way must be one the caching allocator
//! could have taken, and a seek through the checkpoints must give the same state as the replay.

use std::collections::BTreeMap;
use std::path::PathBuf;

use memviz_core::snapshot::{Action, BlockState, Snapshot};
use memviz_core::state::{AllocatorState, History};

use crate::common::{fixture, fixture_files_with};

/// Every pickle of the shared fixtures and of tests/data/real, sorted.
fn fixtures() -> Vec<PathBuf> {
    let mut out = fixture_files_with(&["real"], &["pickle"]);
    out.sort();
    out
}

/// Segments as (address, size, stream) with touching expandable ranges of one stream merged,
/// and live blocks as address -> (requested size, pending free), read straight from the
/// snapshot's `segments` (not through the simulation's own loader).
type Final = (Vec<(u64, u64, u32)>, BTreeMap<u64, (u64, bool)>);

fn final_of_snapshot(snap: &Snapshot, device_pos: usize) -> Final {
    let dev = &snap.devices[device_pos];
    let mut segs: Vec<_> = snap.segments.iter().filter(|s| s.device == dev.index).collect();
    segs.sort_by_key(|s| s.address);
    let mut out: Vec<(u64, u64, u32, bool)> = Vec::new();
    let mut blocks = BTreeMap::new();
    for s in segs {
        match out.last_mut() {
            Some(l) if l.3 && s.is_expandable && l.2 == s.stream && l.0 + l.1 == s.address => l.1 += s.total_size,
            _ => out.push((s.address, s.total_size, s.stream, s.is_expandable)),
        }
        for b in snap.segment_blocks(s) {
            match b.state {
                BlockState::ActiveAllocated => blocks.insert(b.address, (b.requested_size, false)),
                BlockState::ActivePendingFree => blocks.insert(b.address, (b.requested_size, true)),
                _ => None,
            };
        }
    }
    (out.into_iter().map(|(a, s, st, _)| (a, s, st)).collect(), blocks)
}

fn final_of_state(st: &AllocatorState) -> Final {
    let n = st.normalized();
    (
        n.segments.values().map(|s| (s.addr, s.size_bytes, s.stream)).collect(),
        n.blocks.iter().map(|(&a, b)| (a, (b.requested_bytes, b.pending_free))).collect(),
    )
}

/// Why event `k` could not have happened in state `st` (before it), if it could not.
fn impossible(st: &AllocatorState, action: Action, addr: u64, size: u64) -> Option<String> {
    let end = u128::from(addr) + u128::from(size);
    let seg_end = |s: &memviz_core::state::SegmentRange| u128::from(s.addr) + u128::from(s.size_bytes);
    let blocks_in = |a: u64, e: u128| st.blocks.range(a..).take_while(|(&b, _)| u128::from(b) < e).count();
    match action {
        Action::Alloc => {
            if st.blocks.contains_key(&addr) {
                return Some("alloc over a live block".into());
            }
            let Some(seg) = st.segment_of(addr) else { return Some("alloc outside every segment".into()) };
            if end > seg_end(seg) {
                return Some("alloc past the end of its segment".into());
            }
            if let Some((&p, b)) = st.blocks.range(..addr).next_back() {
                if u128::from(p) + u128::from(b.requested_bytes) > u128::from(addr) {
                    return Some(format!("alloc overlaps the live block at {p:#x}"));
                }
            }
            if blocks_in(addr, end) > 0 {
                return Some("alloc overlaps a later live block".into());
            }
        }
        Action::FreeRequested | Action::FreeCompleted | Action::Free => match st.blocks.get(&addr) {
            None => return Some("free of no live block".into()),
            Some(b) if b.requested_bytes != size => {
                return Some(format!("free of {size} bytes, block has {}", b.requested_bytes))
            }
            Some(b) if action == Action::FreeCompleted && !b.pending_free && !st.free_requests_skipped => {
                return Some("free_completed without free_requested".into())
            }
            _ => {}
        },
        Action::SegmentAlloc | Action::SegmentMap => {
            let overlaps = st.segments.values().any(|s| u128::from(s.addr) < end && u128::from(addr) < seg_end(s));
            if overlaps {
                return Some("segment over a reserved range".into());
            }
        }
        Action::SegmentFree => match st.segments.get(&addr) {
            None => return Some("segment_free of no segment".into()),
            Some(s) if s.size_bytes != size => return Some("segment_free of another size".into()),
            _ if blocks_in(addr, end) > 0 => return Some("segment_free with live blocks".into()),
            _ => {}
        },
        Action::SegmentUnmap => {
            let Some(seg) = st.segment_of(addr) else { return Some("segment_unmap outside every segment".into()) };
            if end > seg_end(seg) {
                return Some("segment_unmap past its segment".into());
            }
            if blocks_in(addr, end) > 0 {
                return Some("segment_unmap with live blocks".into());
            }
        }
        _ => {}
    }
    None
}

/// The first impossible step of a forward replay of device `pos` from its reconstructed start.
fn first_impossible_step(snap: &Snapshot, pos: usize) -> Option<String> {
    let t = &snap.devices[pos].trace;
    let mut st = History::build(snap, pos).initial().clone();
    for k in 0..t.len() {
        if let Some(why) = impossible(&st, t.action[k], t.addr[k], t.size_bytes[k]) {
            return Some(format!("entry {k}: {why}"));
        }
        st.apply(t.action[k], t.addr[k], t.size_bytes[k], t.stream[k], t.stack[k]);
    }
    None
}

#[test]
fn the_step_check_catches_inconsistent_traces() {
    // Made-up traces the caching allocator cannot have written: the check must see them.
    for name in ["inconsistent_alloc_outside", "inconsistent_double_alloc"] {
        let p = fixture("synth", &format!("{name}.pickle"));
        let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        let snap = memviz_core::load(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let found = (0..snap.devices.len()).find_map(|pos| first_impossible_step(&snap, pos));
        assert!(found.is_some(), "{name}: every step looked possible");
    }
}

#[test]
fn every_real_snapshot_is_covered() {
    let names: Vec<String> =
        fixtures().iter().filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())).collect();
    let want = [
        "expandable_segments",
        "gpt_amp_annotated",
        "growth_leak",
        "metadata_mempool",
        "multistream",
        "oom",
        "resnet50_buggy",
        "resnet50_fixed",
        "state_only",
    ];
    for w in want {
        assert!(names.contains(&format!("{w}.pickle")), "{w}.pickle is not replayed ({names:?})");
    }
}

#[test]
fn forward_replay_from_the_reconstructed_start_ends_in_the_snapshot() {
    let files = fixtures();
    assert!(!files.is_empty());
    let mut replayed = 0usize;
    for f in &files {
        let bytes = std::fs::read(f).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        let snap = memviz_core::load(&bytes).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        for pos in 0..snap.devices.len() {
            let t = &snap.devices[pos].trace;
            let history = History::build(&snap, pos);
            let mut st = history.initial().clone();
            // The reconstructed start is itself a possible state: every block inside a segment.
            for &a in st.blocks.keys() {
                assert!(
                    st.segment_of(a).is_some(),
                    "{f:?} device {pos}: block {a:#x} outside every segment at the start"
                );
            }
            let samples = (t.len() / 40).max(1);
            for k in 0..t.len() {
                if let Some(why) = impossible(&st, t.action[k], t.addr[k], t.size_bytes[k]) {
                    panic!(
                        "{f:?} device {pos}: entry {k} ({} {:#x} {}): {why}",
                        t.action[k].name(),
                        t.addr[k],
                        t.size_bytes[k]
                    );
                }
                st.apply(t.action[k], t.addr[k], t.size_bytes[k], t.stream[k], t.stack[k]);
                if k % samples == 0 || k + 1 == t.len() {
                    assert_eq!(
                        final_of_state(&history.state_after(&snap, Some(k))),
                        final_of_state(&st),
                        "{f:?} device {pos}: a seek to entry {k} differs from the replay"
                    );
                }
            }
            let (segs, blocks) = final_of_state(&st);
            let (want_segs, want_blocks) = final_of_snapshot(&snap, pos);
            assert_eq!(segs, want_segs, "{f:?} device {pos}: segments after the replay");
            assert_eq!(blocks.len(), want_blocks.len(), "{f:?} device {pos}: number of live blocks");
            assert_eq!(blocks, want_blocks, "{f:?} device {pos}: blocks after the replay");
            replayed += t.len();
        }
    }
    assert!(replayed > 0, "no trace entries replayed");
}
