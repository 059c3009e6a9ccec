//! Findings about the recording and the allocator's deferred frees: a trace that holds no history
//! or starts mid-run ([`crate::coverage`]), and stalled frees.
//!
//! A free is *stalled* when its block stays allocated after the user freed it (`free_requested`)
//! because another stream still uses it (`record_stream`): the allocator hands it back
//! (`free_completed`) only once that stream's recorded events complete. In the simple case the two
//! entries are adjacent. The rule here: a free is stalled when at least [`STALL_ENTRIES`] trace
//! entries, or (with `time_us`) at least [`STALL_US`] µs, pass between the request and the
//! completion, or, when it never completes, between the request and the end of the trace.
//! Eight entries means the allocator handled several more calls without the other stream
//! finishing; 10 ms is long against kernels of microseconds to milliseconds, so the memory was
//! held for a noticeable part of a step.

use rustc_hash::FxHashMap;

use super::finding::Finding;
use super::Replay;
use crate::coverage::{coverage, EmptyTrace, RAISE_MAX_ENTRIES};
use crate::format::human_size;
use crate::snapshot::{Action, Snapshot};

/// Entries between a free's request and its completion from which it counts as stalled.
pub const STALL_ENTRIES: u32 = 8;
/// Microseconds between a free's request and its completion from which it counts as stalled.
pub const STALL_US: i64 = 10_000;

/// No lifetime allocated at this row (in [`find_lifetimes`]' index of rows).
const NO_LIFE: u32 = u32::MAX;

/// One stalled free.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StalledFree {
    /// Address of the block.
    pub addr: u64,
    /// Requested bytes held while waiting.
    pub size_bytes: u64,
    /// Trace row of the `free_requested`.
    pub requested_row: u32,
    /// Trace row of the `free_completed` (`None`: still pending at the end of the trace).
    pub completed_row: Option<u32>,
    /// Entries from the request to the completion (or to the end of the trace).
    pub waited_entries: u32,
    /// Microseconds waited, when times are recorded.
    pub waited_us: Option<i64>,
    /// The lifetime in [`Replay::lives`] (`None` when its alloc is not in the trace).
    pub element: Option<u32>,
}

/// Every stalled free of the replay's device, in request order. O(n): one pass pairs requests
/// with completions; only when some free stalled does a second pass find their lifetimes.
pub fn stalled_frees(snap: &Snapshot, replay: &Replay) -> Vec<StalledFree> {
    let Some(t) = snap.devices.get(replay.device_pos).map(|d| &d.trace) else { return Vec::new() };
    // Recorded with skip_actions=['free_completed'], no request ever completes: that is the
    // recording, not a stall.
    if !t.action.iter().any(|a| matches!(a, Action::FreeCompleted | Action::Free)) {
        return Vec::new();
    }
    let mut pending: FxHashMap<u64, (u32, u64)> = FxHashMap::default();
    let mut out = Vec::new();
    let n = t.len() as u32;
    let stalled = |from: u32, to: u32| -> (bool, u32, Option<i64>) {
        let entries = to.saturating_sub(from);
        let us = match (t.time_us_at(from as usize), t.time_us_at(to as usize)) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        (entries >= STALL_ENTRIES || us.is_some_and(|u| u >= STALL_US), entries, us)
    };
    for row in 0..n {
        let (Some(&a), Some(&addr)) = (t.action.get(row as usize), t.addr.get(row as usize)) else { continue };
        match a {
            Action::FreeRequested => {
                let size = t.size_bytes.get(row as usize).copied().unwrap_or(0);
                pending.insert(addr, (row, size));
            }
            Action::FreeCompleted | Action::Free => {
                if let Some((from, size_bytes)) = pending.remove(&addr) {
                    let (yes, waited_entries, waited_us) = stalled(from, row);
                    if yes {
                        out.push(StalledFree {
                            addr,
                            size_bytes,
                            requested_row: from,
                            completed_row: Some(row),
                            waited_entries,
                            waited_us,
                            element: None,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    let last = n.saturating_sub(1);
    for (addr, (from, size_bytes)) in pending {
        let (yes, waited_entries, waited_us) = stalled(from, last);
        if yes {
            out.push(StalledFree {
                addr,
                size_bytes,
                requested_row: from,
                completed_row: None,
                waited_entries,
                waited_us,
                element: None,
            });
        }
    }
    if !out.is_empty() {
        find_lifetimes(t, replay, &mut out);
    }
    out.sort_by_key(|s| (s.requested_row, s.addr));
    out
}

/// Sets each stalled free's [`StalledFree::element`]: the lifetime whose alloc was the last one
/// at its address, not freed since, when the free was requested.
fn find_lifetimes(t: &crate::snapshot::Trace, replay: &Replay, out: &mut [StalledFree]) {
    // The lifetime allocated at each row (`NO_LIFE`: none), indexed by row rather than hashed.
    let mut life_of_alloc = vec![NO_LIFE; t.len()];
    for (i, l) in replay.lives.iter().enumerate() {
        if let Some(slot) = l.alloc_row.and_then(|r| life_of_alloc.get_mut(r as usize)) {
            *slot = i as u32;
        }
    }
    // A row holds one request, so each stalled free has a row of its own.
    let by_request: FxHashMap<u32, usize> = out.iter().enumerate().map(|(i, s)| (s.requested_row, i)).collect();
    let mut open: FxHashMap<u64, u32> = FxHashMap::default();
    for row in 0..t.len() {
        let (Some(&a), Some(&addr)) = (t.action.get(row), t.addr.get(row)) else { continue };
        match a {
            Action::Alloc => {
                if let Some(&e) = life_of_alloc.get(row).filter(|&&e| e != NO_LIFE) {
                    open.insert(addr, e);
                }
            }
            Action::FreeRequested => {
                if let Some(s) = by_request.get(&(row as u32)).and_then(|&i| out.get_mut(i)) {
                    s.element = open.get(&addr).copied();
                }
            }
            Action::FreeCompleted | Action::Free => {
                open.remove(&addr);
            }
            _ => {}
        }
    }
}

/// The findings of this module for the replay's device: the trace's coverage, stalled frees.
pub fn findings(snap: &Snapshot, replay: &Replay) -> Vec<Finding> {
    let mut out = Vec::new();
    let cov = coverage(snap, replay.device_pos);
    if let Some(reason) = cov.reason() {
        let state_only = matches!(cov.empty, Some(EmptyTrace::StateOnly { .. }));
        out.push(Finding {
            problem: cov.starts_mid_run(),
            kind: if cov.starts_mid_run() { "trace_starts_mid_run" } else { "no_history" },
            title: if cov.starts_mid_run() {
                "the trace starts mid-run: memory allocated before it is known only from the final state".into()
            } else if state_only {
                format!(
                    "no history: {} in {} allocations known from the final state only",
                    human_size(cov.ghost_bytes as f64),
                    cov.ghost_allocations
                )
            } else if cov.empty == Some(EmptyTrace::CudaNotRecorded) {
                "CUDA memory not recorded: the recording is of pinned host memory (--device host)".into()
            } else {
                "nothing recorded on this device".into()
            },
            details: vec![reason],
            suggestions: if cov.starts_mid_run() {
                vec![RAISE_MAX_ENTRIES.into()]
            } else if state_only {
                vec!["record with torch.cuda.memory._record_memory_history(enabled='all') for a timeline".into()]
            } else {
                Vec::new()
            },
            bytes: cov.ghost_bytes,
            elements: Vec::new(),
        });
    }
    let stalled = stalled_frees(snap, replay);
    if !stalled.is_empty() {
        let bytes: u64 = stalled.iter().map(|s| s.size_bytes).sum();
        let mut longest = stalled.clone();
        longest.sort_by_key(|s| std::cmp::Reverse((s.waited_us.unwrap_or(0), s.waited_entries)));
        let details = longest
            .iter()
            .take(5)
            .map(|s| {
                format!(
                    "{} at 0x{:x}: freed at entry {}, {} {} entries{} later",
                    human_size(s.size_bytes as f64),
                    s.addr,
                    s.requested_row,
                    if s.completed_row.is_some() { "handed back" } else { "still pending at the end of the trace," },
                    s.waited_entries,
                    s.waited_us.map_or(String::new(), |u| format!(" ({:.3} ms)", u as f64 / 1000.0))
                )
            })
            .collect();
        out.push(Finding {
            problem: true,
            kind: "stalled_free",
            title: format!(
                "{} free{} waited for another stream (record_stream) for {STALL_ENTRIES}+ entries or {} ms+: {} held meanwhile",
                stalled.len(),
                if stalled.len() == 1 { "" } else { "s" },
                STALL_US / 1000,
                human_size(bytes as f64)
            ),
            details,
            suggestions: vec![
                "a tensor used on a side stream keeps its block until that stream's work completes: synchronize that stream sooner, or allocate the tensor on the stream that uses it instead of calling record_stream".into(),
            ],
            bytes,
            elements: stalled.iter().filter_map(|s| s.element).collect(),
        });
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn load(which: &str, name: &str) -> Snapshot {
        crate::load(&std::fs::read(crate::test_fixtures::fixture(which, name)).unwrap()).unwrap()
    }

    /// record_stream.pickle: the 8 MiB block freed at entry 2 comes back at entry 14 (12 entries
    /// later: stalled); the 4 KiB one freed at entry 3 never comes back (13 entries to the end:
    /// stalled); 512 B freed at the last entry but one is not; adjacent pairs are not.
    #[test]
    fn stalled_frees_of_the_record_stream_variant() {
        let snap = load("synth", "record_stream.pickle");
        let replay = Replay::build(&snap, 0);
        let s = stalled_frees(&snap, &replay);
        let got: Vec<(u32, Option<u32>, u64)> =
            s.iter().map(|x| (x.requested_row, x.completed_row, x.size_bytes)).collect();
        assert_eq!(got, [(2, Some(14), 8 << 20), (3, None, 4096)]);
        assert!(s[0].element.is_some() && s[0].waited_entries == 12);
        let f = findings(&snap, &replay);
        assert!(f.iter().any(|f| f.kind == "stalled_free" && f.problem && f.bytes == (8 << 20) + 4096), "{f:?}");
    }

    /// A state-only file on four devices: the device with memory is the default, its blocks
    /// are ghost lives, and insights say there is no history; a wrapped ring buffer starts
    /// mid-run and the finding says to raise max_entries.
    #[test]
    fn state_only_ghosts_and_finding() {
        let snap = crate::coverage::tests::state_only_on_four_devices(false);
        let pos = snap.default_device().unwrap();
        let replay = Replay::build(&snap, pos);
        assert_eq!(replay.lives.len(), 3);
        assert!(replay.lives.iter().all(|l| l.origin == crate::timeline::Origin::Ghost));
        assert_eq!(replay.initial_bytes, 6 << 20);
        let f = findings(&snap, &replay);
        assert!(f.iter().any(|f| f.kind == "no_history" && !f.problem), "{f:?}");
        let snap = load("real", "ring_buffer_wrapped.pickle");
        let f = findings(&snap, &Replay::build(&snap, 0));
        assert!(
            f.iter().any(|f| f.kind == "trace_starts_mid_run" && f.suggestions[0].contains("max_entries")),
            "{f:?}"
        );
    }
}
