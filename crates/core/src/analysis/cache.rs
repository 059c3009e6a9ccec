//! The caching allocator's unused cache: a note when, at some moment, much of what is reserved is
//! not allocated ([`UNUSED_NOTE_MIN_BYTES`] and [`UNUSED_NOTE_MIN_SHARE`] of what is reserved then:
//! the fragmentation series' most reserved-but-unallocated moment, found over every entry). That
//! memory is no leak (the allocator keeps freed blocks for reuse), but other processes cannot use
//! it, and it often shows fragmentation or a phase that needed more than the rest of the run.
//! The note also gives the cache at the peak of live bytes.
//!
//! The worst moment is found from running sums of reserved and allocated bytes over one forward
//! replay of the allocator state; free ranges are worked out only for that moment (tracking them
//! after every entry, as the fragmentation series does, cost three times the whole read of a
//! file when a run of many ranks is summarized).

use super::finding::Finding;
use super::fragmentation::{final_block_sizes, unused_at_peak_with, FragPoint, FreeTracker};
use super::{size_text, Replay};
use crate::snapshot::{Action, Snapshot};
use crate::state::{HashedState, History};

/// Reserved minus allocated must reach this many bytes for a note (256 MiB: less is the ordinary
/// slack of the allocator's rounding and of its 2 MiB and 20 MiB segments).
pub const UNUSED_NOTE_MIN_BYTES: u64 = 256 << 20;

/// ... and more than this share of what is reserved at that moment (half: most of the cache).
pub const UNUSED_NOTE_MIN_SHARE: f64 = 0.5;

/// Whether `unused_bytes` of `reserved_bytes` deserve a note.
pub fn is_large(unused_bytes: u64, reserved_bytes: u64) -> bool {
    unused_bytes >= UNUSED_NOTE_MIN_BYTES && unused_bytes as f64 > UNUSED_NOTE_MIN_SHARE * reserved_bytes as f64
}

fn after(row: Option<u32>) -> String {
    row.map_or_else(|| "before the first entry".to_string(), |r| format!("after entry {r}"))
}

/// The moment with the most reserved-but-unallocated bytes: (row, unused bytes, reserved bytes),
/// the row `None` for the state before the first entry; the first of equal moments, as
/// [`super::fragmentation::fragmentation_series`] picks it.
pub fn max_unused_moment(snap: &Snapshot, history: &History, device_pos: usize) -> (Option<u32>, u64, u64) {
    let initial = history.initial();
    let (mut reserved, mut allocated) = (initial.reserved_bytes(), initial.allocated_bytes());
    let mut st = HashedState::new(initial);
    let mut best = (None, reserved.saturating_sub(allocated), reserved);
    let Some(dev) = snap.devices.get(device_pos) else { return best };
    let t = &dev.trace;
    for row in 0..t.len() {
        let Some((a, addr, size, stream, stack)) = entry(t, row) else { continue };
        match a {
            Action::Alloc | Action::FreeCompleted | Action::Free => {
                let (before, after) = st.apply_counted(a, addr, size, stream, stack);
                allocated = allocated.saturating_sub(before).saturating_add(after);
            }
            Action::SegmentAlloc | Action::SegmentFree | Action::SegmentMap | Action::SegmentUnmap => {
                st.apply(a, addr, size, stream, stack);
                reserved = st.reserved_bytes();
            }
            _ => continue,
        }
        let unused = reserved.saturating_sub(allocated);
        if unused > best.1 {
            best = (Some(row as u32), unused, reserved);
        }
    }
    best
}

/// Row `row`'s columns, when it has them all.
fn entry(t: &crate::snapshot::Trace, row: usize) -> Option<(Action, u64, u64, u32, u32)> {
    Some((*t.action.get(row)?, *t.addr.get(row)?, *t.size_bytes.get(row)?, *t.stream.get(row)?, *t.stack.get(row)?))
}

/// The allocator's memory just after `row`, as the fragmentation series has it there (blocks
/// still live at the end take their real size from the final segments).
pub fn point_after(snap: &Snapshot, history: &History, device_pos: usize, row: Option<u32>) -> FragPoint {
    let mut st = HashedState::new(history.initial());
    let dev = snap.devices.get(device_pos);
    if let (Some(dev), Some(last)) = (dev, row) {
        let real = final_block_sizes(snap, device_pos);
        let t = &dev.trace;
        for r in 0..=(last as usize).min(t.len().saturating_sub(1)) {
            let Some((a, addr, size, stream, stack)) = entry(t, r) else { continue };
            st.apply(a, addr, size, stream, stack);
            if let (Action::Alloc, Some(&b)) = (a, real.get(&(r as u32))) {
                if let Some(block) = st.blocks.get_mut(&addr) {
                    block.size_bytes = b;
                }
            }
        }
    }
    let tr = FreeTracker::new(st.to_state());
    FragPoint {
        row,
        time_us: row.and_then(|r| dev.and_then(|d| d.trace.time_us_at(r as usize))),
        reserved_bytes: tr.reserved_bytes(),
        allocated_bytes: tr.allocated_bytes(),
        free_bytes: tr.free_bytes(),
        largest_free_bytes: tr.largest_free_bytes(),
    }
}

/// The note about the unused cache of the replayed device, when it is large.
pub fn unused_cache_finding(snap: &Snapshot, replay: &Replay) -> Option<Finding> {
    if replay.rows == 0 {
        return None;
    }
    let history = History::build(snap, replay.device_pos);
    let (row, unused, reserved) = max_unused_moment(snap, &history, replay.device_pos);
    if !is_large(unused, reserved) {
        return None;
    }
    let worst = point_after(snap, &history, replay.device_pos, row);
    let share = unused as f64 * 100.0 / worst.reserved_bytes.max(1) as f64;
    let mut details = vec![format!(
        "most reserved but unallocated {}: reserved {}, allocated {} (free inside segments {}, largest free block {})",
        after(worst.row),
        size_text(worst.reserved_bytes),
        size_text(worst.allocated_bytes),
        size_text(worst.free_bytes),
        size_text(worst.largest_free_bytes)
    )];
    if let Some(p) = unused_at_peak_with(snap, replay, &history) {
        details.push(format!(
            "at the peak of live bytes ({}): reserved {}, allocated {}, unused {}",
            after(p.row),
            size_text(p.reserved_bytes),
            size_text(p.allocated_bytes),
            size_text(p.unused_bytes())
        ));
    }
    details.push(
        "the caching allocator keeps freed blocks for reuse: this memory is not leaked, but no other process can use it"
            .into(),
    );
    Some(Finding {
        problem: false,
        kind: "unused_cache",
        title: format!(
            "The allocator's cache holds {} it does not use ({share:.0}% of the {} reserved, {})",
            size_text(unused),
            size_text(worst.reserved_bytes),
            after(worst.row)
        ),
        details,
        suggestions: vec![
            "if the process shares the GPU, or a later phase runs out of memory, `torch.cuda.empty_cache()` returns unused segments to the device".into(),
            "when the free space is split into many blocks, `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` lets segments grow instead".into(),
        ],
        bytes: unused,
        elements: Vec::new(),
    })
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::analysis::fragmentation::fragmentation_series;
    use crate::analysis::test_util::fixture;

    #[test]
    fn threshold() {
        let mib = 1u64 << 20;
        assert!(is_large(300 * mib, 400 * mib));
        // Large, but not most of the cache.
        assert!(!is_large(300 * mib, 700 * mib));
        // Most of the cache, but small.
        assert!(!is_large(200 * mib, 210 * mib));
        assert!(is_large(UNUSED_NOTE_MIN_BYTES, UNUSED_NOTE_MIN_BYTES + 1));
        assert!(!is_large(0, 0));
    }

    #[test]
    fn demo_notes_its_unused_cache() {
        let snap = fixture("gpt_amp_annotated.pickle");
        let replay = Replay::build(&snap, 0);
        let f = unused_cache_finding(&snap, &replay).expect("a note");
        assert!(!f.problem);
        assert_eq!(f.kind, "unused_cache");
        let worst = fragmentation_series(&snap, 0, 2).max_unused.expect("a worst moment");
        assert_eq!(f.bytes, worst.unused_bytes());
        assert_eq!(f.bytes, worst.unused_bytes());
        assert!(is_large(f.bytes, worst.reserved_bytes));
        assert!(
            f.title.starts_with("The allocator's cache holds 3 GiB it does not use (69% of the 4.4 GiB reserved"),
            "{}",
            f.title
        );
        assert!(f.details.iter().any(|d| d.starts_with("at the peak of live bytes")), "{:?}", f.details);
    }

    #[test]
    fn worst_moment_is_the_fragmentation_series_one() {
        // The running sums and the one-moment free ranges give what tracking every entry gives.
        let names = [
            "gpt_amp_annotated.pickle",
            "resnet50_fixed.pickle",
            "oom.pickle",
            "expandable_segments.pickle",
            "growth_leak.pickle",
            "metadata_mempool.pickle",
            "multistream.pickle",
        ];
        for name in names {
            let snap = fixture(name);
            for pos in 0..snap.devices.len() {
                let history = History::build(&snap, pos);
                let want = fragmentation_series(&snap, pos, 2).max_unused.expect("a point");
                let (row, unused, reserved) = max_unused_moment(&snap, &history, pos);
                assert_eq!(
                    (row, unused, reserved),
                    (want.row, want.unused_bytes(), want.reserved_bytes),
                    "{name} {pos}"
                );
                assert_eq!(point_after(&snap, &history, pos, row), want, "{name} {pos}");
            }
        }
    }

    #[test]
    fn small_caches_get_no_note() {
        // 195 MiB at most unused (below 256 MiB); 837 MiB, but 32% of what is reserved.
        for name in ["resnet50_fixed.pickle", "oom.pickle"] {
            let snap = fixture(name);
            let replay = Replay::build(&snap, 0);
            assert!(unused_cache_finding(&snap, &replay).is_none(), "{name}");
        }
    }
}
