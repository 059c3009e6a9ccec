//! How much of a run a device's trace covers, inferred from the file: why a trace is empty
//! (`enabled='state'` keeps no history, only the blocks and their stacks; `record_cuda=False`
//! records pinned host memory only), and whether it starts
//! mid-run (the ring buffer of `max_entries` wrapped, as `allocator_settings.trace_alloc_overflowed`
//! says or a full buffer suggests, or history began after allocations it later frees). The
//! allocations the trace never saw are still known from the final segments' blocks: they are the
//! ghost lives of [`crate::analysis::Replay`] (`Origin::Ghost`).

type HashSet<K> = rustc_hash::FxHashSet<K>;

use crate::snapshot::{Action, BlockState, Snapshot};
use crate::timeline::{Layout, Mode, Origin};
use crate::tree::Tree;

/// What to do about a trace that starts mid-run.
pub const RAISE_MAX_ENTRIES: &str =
    "raise max_entries in torch.cuda.memory._record_memory_history(max_entries=...), or start recording earlier";

/// Why a device's trace is empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmptyTrace {
    /// `enabled='state'` (a ring buffer of one entry): allocated blocks are known, with stacks
    /// where `blocks_have_frames`.
    StateOnly {
        /// Whether the allocated blocks carry stacks.
        blocks_have_frames: bool,
    },
    /// No trace and no memory on this device.
    NothingRecorded,
    /// A CUDA device with no trace while pinned host memory has one: recorded with
    /// `_record_memory_history(record_cuda=False, record_pinned_host_memory=True)`.
    CudaNotRecorded,
}

/// How the trace begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceStart {
    /// Nothing says the trace misses the start of the run.
    FromStart,
    /// `allocator_settings.trace_alloc_overflowed` is true: the ring buffer wrapped.
    Overflowed {
        /// `allocator_settings.trace_alloc_max_entries`, when written.
        max_entries: Option<u64>,
    },
    /// The trace holds exactly `trace_alloc_max_entries` entries: the buffer is full, so it has
    /// most likely wrapped.
    FullBuffer {
        /// The buffer's size.
        max_entries: u64,
    },
    /// The trace frees allocations it never saw allocated: it starts after they were made
    /// (history enabled late, or an unflagged wrap).
    StartedLate,
}

/// How much of the run a device's trace covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// Entries in the trace.
    pub entries: usize,
    /// Why the trace is empty (`None`: it is not), also for a state-only trace of one entry.
    pub empty: Option<EmptyTrace>,
    /// How the trace begins.
    pub start: TraceStart,
    /// Frees (`free_completed` / `free`) of allocations the trace never saw allocated.
    pub unseen_frees: usize,
    /// Allocated blocks of the final state the trace never saw (ghost allocations).
    pub ghost_allocations: usize,
    /// Their requested bytes.
    pub ghost_bytes: u64,
}

impl Coverage {
    /// Whether the trace misses the start of the run (what insights warn about).
    pub fn starts_mid_run(&self) -> bool {
        self.empty.is_none() && self.start != TraceStart::FromStart
    }

    /// Why the trace is empty or partial, in words (`None` when nothing is missing).
    pub fn reason(&self) -> Option<String> {
        let ghosts =
            format!("{} allocated block{}", self.ghost_allocations, if self.ghost_allocations == 1 { "" } else { "s" });
        match self.empty {
            Some(EmptyTrace::NothingRecorded) => return Some("no trace and no memory on this device".into()),
            Some(EmptyTrace::CudaNotRecorded) => {
                return Some(format!(
                    "CUDA memory was not recorded (_record_memory_history(record_cuda=False)): only pinned host memory has a trace (--device host); the {ghosts} here are shown from the segments' blocks"
                ))
            }
            Some(EmptyTrace::StateOnly { blocks_have_frames: true }) => {
                return Some(format!(
                    "trace empty but the {ghosts} have stacks: recorded with _record_memory_history(enabled='state'), which keeps the allocator state and no history; its allocations are shown from the segments' blocks (use enabled='all' for a timeline)"
                ))
            }
            Some(EmptyTrace::StateOnly { blocks_have_frames: false }) => {
                return Some(format!(
                    "trace empty and the {ghosts} have no stacks: history was off (enabled='state' with context=None, or recording stopped or cleared before the dump); its allocations are shown from the segments' blocks"
                ))
            }
            None => {}
        }
        let late = if self.unseen_frees > 0 || self.ghost_allocations > 0 {
            format!(
                " ({} free{} of allocations never seen allocated, {} allocation{} alive at its start)",
                self.unseen_frees,
                if self.unseen_frees == 1 { "" } else { "s" },
                self.ghost_allocations + self.unseen_frees,
                if self.ghost_allocations + self.unseen_frees == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        match self.start {
            TraceStart::FromStart => None,
            TraceStart::Overflowed { max_entries } => Some(format!(
                "the trace ring buffer overflowed{}: the trace starts mid-run and peaks before it are not seen{late}; {RAISE_MAX_ENTRIES}",
                max_entries.map(|m| format!(" (max_entries={m})")).unwrap_or_default()
            )),
            TraceStart::FullBuffer { max_entries } => Some(format!(
                "the trace holds exactly max_entries={max_entries} entries: the ring buffer is full and has most likely wrapped, so the trace starts mid-run{late}; {RAISE_MAX_ENTRIES}"
            )),
            TraceStart::StartedLate => Some(format!(
                "the trace starts mid-run{late}: history began after those allocations were made, or the ring buffer (max_entries) wrapped; {RAISE_MAX_ENTRIES}"
            )),
        }
    }

    /// The note of a device with no history, shown instead of a timeline: why there is none and
    /// what is shown instead (what was live when the snapshot was taken, one column). `None`
    /// when the trace has a history.
    pub fn moment_note(&self) -> Option<String> {
        let n = self.ghost_allocations;
        let live = format!(
            "What was live when the snapshot was taken is shown as one column: {n} allocated block{} ({}){}",
            if n == 1 { "" } else { "s" },
            crate::format::human_size(self.ghost_bytes as f64),
            if self.entries == 1 { ", after the trace's one entry" } else { "" }
        );
        match self.empty? {
            EmptyTrace::StateOnly { blocks_have_frames: true } => Some(format!(
                "Recorded with _record_memory_history(enabled='state'): no history. {live}; point at a block for its size and stack. Record with enabled='all' for a timeline."
            )),
            EmptyTrace::StateOnly { blocks_have_frames: false } => Some(format!(
                "No history: the trace is empty and the blocks have no stacks (enabled='state' with context=None, or recording stopped or cleared before the dump). {live}; point at a block for its size. Record with enabled='all' for a timeline."
            )),
            EmptyTrace::NothingRecorded => Some("Nothing was recorded on this device: no trace and no memory.".into()),
            EmptyTrace::CudaNotRecorded => Some(format!(
                "CUDA memory was not recorded (_record_memory_history(record_cuda=False)): the pinned host device holds the trace. {live}."
            )),
        }
    }
}

/// `allocator_settings[key]` as an int or bool.
fn setting(snap: &Snapshot, key: &str) -> Option<i128> {
    match snap.allocator_settings.as_ref()?.get(key)? {
        Tree::Bool(b) => Some(i128::from(*b)),
        t => t.as_int(),
    }
}

/// How much of the run the trace of device `device_pos` covers. O(n + blocks).
pub fn coverage(snap: &Snapshot, device_pos: usize) -> Coverage {
    let Some(dev) = snap.devices.get(device_pos) else {
        return nothing_recorded();
    };
    let t = &dev.trace;
    let mut open: HashSet<u64> = HashSet::default();
    let mut unseen_frees = 0;
    for row in 0..t.len() {
        let (Some(&a), Some(&addr)) = (t.action.get(row), t.addr.get(row)) else { continue };
        match a {
            Action::Alloc => {
                open.insert(addr);
            }
            Action::FreeCompleted | Action::Free if !open.remove(&addr) => unseen_frees += 1,
            _ => {}
        }
    }
    let mut ghosts = Ghosts::default();
    for s in snap.segments.iter().filter(|s| s.device == dev.index) {
        ghosts.segments += 1;
        for b in snap.segment_blocks(s) {
            if b.state == BlockState::ActiveAllocated && !open.contains(&b.address) {
                ghosts.add(b.requested_size, b.stack);
            }
        }
    }
    finish(snap, t.len(), unseen_frees, &ghosts, host_only(snap, device_pos))
}

/// Whether device `device_pos` is a CUDA device of a recording of pinned host memory only.
fn host_only(snap: &Snapshot, device_pos: usize) -> bool {
    let cuda = snap.devices.get(device_pos).is_some_and(|d| !d.is_pinned_host());
    cuda && snap.devices.iter().all(|d| d.is_pinned_host() || d.trace.is_empty())
        && snap.devices.iter().any(|d| d.is_pinned_host() && !d.trace.is_empty())
}

/// [`coverage`] read off a layout of the same device in [`Mode::Allocations`], which paired the
/// trace the same way (allocs with `free_completed` or `free` by address): its elements freed
/// without their alloc are the unseen frees, its ghosts the ghost allocations. O(elements), no
/// set of addresses (25 ms of a 1M-entry load in the page). `None` for layouts of other modes.
pub fn coverage_from_layout(snap: &Snapshot, device_pos: usize, layout: &Layout) -> Option<Coverage> {
    if layout.options.mode != Mode::Allocations {
        return None;
    }
    Some(coverage_from_lives(snap, device_pos, layout.elements.iter().map(|e| (e.origin, e.size_bytes, e.stack))))
}

/// [`coverage`] read off the lifetimes of device `device_pos` as the trace pairs them (a
/// layout's elements in [`Mode::Allocations`], or `analysis::Replay::lives`): each one's origin,
/// requested bytes and stack. O(lifetimes).
pub fn coverage_from_lives(
    snap: &Snapshot,
    device_pos: usize,
    lives: impl Iterator<Item = (Origin, u64, u32)>,
) -> Coverage {
    let Some(dev) = snap.devices.get(device_pos) else {
        return nothing_recorded();
    };
    let mut unseen_frees = 0;
    let mut ghosts = Ghosts::default();
    for (origin, size_bytes, stack) in lives {
        match origin {
            Origin::FreedWithoutAlloc => unseen_frees += 1,
            Origin::Ghost => ghosts.add(size_bytes, stack),
            Origin::Traced => {}
        }
    }
    ghosts.segments = snap.segments.iter().filter(|s| s.device == dev.index).count();
    finish(snap, dev.trace.len(), unseen_frees, &ghosts, host_only(snap, device_pos))
}

/// The coverage of a device that does not exist.
fn nothing_recorded() -> Coverage {
    Coverage {
        entries: 0,
        empty: Some(EmptyTrace::NothingRecorded),
        start: TraceStart::FromStart,
        unseen_frees: 0,
        ghost_allocations: 0,
        ghost_bytes: 0,
    }
}

/// The allocated blocks of a device's final segments that its trace never saw.
#[derive(Default)]
struct Ghosts {
    count: usize,
    bytes: u64,
    with_frames: usize,
    /// The device's segments.
    segments: usize,
}

impl Ghosts {
    fn add(&mut self, requested_bytes: u64, stack: u32) {
        self.count += 1;
        self.bytes = self.bytes.saturating_add(requested_bytes);
        self.with_frames += usize::from(stack != 0);
    }
}

/// The coverage of a trace of `entries` with `unseen_frees` and `ghosts`.
fn finish(snap: &Snapshot, entries: usize, unseen_frees: usize, ghosts: &Ghosts, host_only: bool) -> Coverage {
    let mut c = Coverage {
        entries,
        empty: None,
        start: TraceStart::FromStart,
        unseen_frees,
        ghost_allocations: ghosts.count,
        ghost_bytes: ghosts.bytes,
    };
    if entries == 0 && host_only {
        c.empty = Some(EmptyTrace::CudaNotRecorded);
        return c;
    }
    // enabled='state' forces max_entries to 1: at most one entry survives.
    if entries <= 1 {
        if ghosts.segments == 0 && entries == 0 {
            c.empty = Some(EmptyTrace::NothingRecorded);
            return c;
        }
        if ghosts.segments > 0 {
            c.empty = Some(EmptyTrace::StateOnly { blocks_have_frames: ghosts.with_frames > 0 });
            return c;
        }
    }
    let max_entries = setting(snap, "trace_alloc_max_entries").and_then(|m| u64::try_from(m).ok());
    c.start = if setting(snap, "trace_alloc_overflowed").is_some_and(|v| v != 0) {
        TraceStart::Overflowed { max_entries }
    } else if let Some(m) = max_entries.filter(|&m| m > 1 && m == entries as u64) {
        TraceStart::FullBuffer { max_entries: m }
    } else if unseen_frees > 0 {
        TraceStart::StartedLate
    } else {
        TraceStart::FromStart
    };
    c
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(crate) mod tests {
    use super::*;

    fn load(path: &std::path::Path) -> Snapshot {
        crate::load(&std::fs::read(path).unwrap()).unwrap()
    }

    /// Read off a layout of allocations, the coverage is the one counted from the trace, on
    /// every device of every real and synthetic snapshot; layouts of other modes give none.
    #[test]
    fn coverage_from_a_layout_is_the_one_counted() {
        use crate::timeline::Options;
        let files = crate::test_fixtures::fixture_files_with(&["real", "synth"], &["pickle"]);
        let mut late = 0;
        for path in &files {
            let Ok(snap) = crate::load(&std::fs::read(path).unwrap()) else { continue };
            for pos in 0..snap.devices.len() {
                let layout = Layout::build(&snap, pos, Options::default());
                let counted = coverage(&snap, pos);
                late += usize::from(counted.unseen_frees > 0 || counted.ghost_allocations > 0);
                assert_eq!(coverage_from_layout(&snap, pos, &layout), Some(counted), "{} device {pos}", path.display());
                let segments = Layout::build(&snap, pos, Options { mode: Mode::Segments, ..Options::default() });
                assert_eq!(coverage_from_layout(&snap, pos, &segments), None);
            }
        }
        assert!(files.len() >= 10 && late >= 5, "{} files, {late} devices with unseen frees or ghosts", files.len());
    }

    /// An `enabled='state'` snapshot of four devices (as JSON) where only cuda:1 holds memory.
    pub(crate) fn state_only_on_four_devices(with_frames: bool) -> Snapshot {
        let frames = if with_frames { r#"[{"filename":"train.py","line":3,"name":"step"}]"# } else { "[]" };
        let blocks: Vec<String> = (0..3)
            .map(|i| {
                format!(
                    r#"{{"size":{},"requested_size":{},"state":"active_allocated","frames":{frames}}}"#,
                    (i + 1) << 20,
                    (i + 1) << 20
                )
            })
            .chain(std::iter::once(r#"{"size":2097152,"requested_size":0,"state":"inactive","frames":[]}"#.to_owned()))
            .collect();
        let json = format!(
            r#"{{"segments":[{{"device":1,"address":1099511627776,"total_size":8388608,"allocated_size":6291456,"active_size":6291456,"requested_size":6291456,"stream":0,"segment_type":"large","is_expandable":false,"frames":[],"blocks":[{}]}}],"device_traces":[[],[],[],[]]}}"#,
            blocks.join(",")
        );
        crate::load(json.as_bytes()).unwrap()
    }

    /// A state-only snapshot of four devices: the device with memory opens, its allocated blocks
    /// are the ghost allocations with the state-only reason; the empty devices recorded nothing.
    #[test]
    fn state_only_file_on_four_devices() {
        let snap = state_only_on_four_devices(false);
        assert_eq!(snap.devices.len(), 4);
        let pos = snap.default_device().unwrap();
        assert_eq!(snap.devices[pos].index, 1, "the device with memory, not the first empty one");
        let c = coverage(&snap, pos);
        assert_eq!(c.empty, Some(EmptyTrace::StateOnly { blocks_have_frames: false }));
        assert_eq!((c.ghost_allocations, c.ghost_bytes), (3, 6 << 20));
        assert!(c.reason().unwrap().contains("trace empty"), "{:?}", c.reason());
        assert_eq!(coverage(&snap, 0).empty, Some(EmptyTrace::NothingRecorded));
        let note = c.moment_note().unwrap();
        assert!(note.starts_with("No history: the trace is empty"), "{note}");
        assert!(note.contains("3 allocated blocks (6 MiB)"), "{note}");
        let with_frames = state_only_on_four_devices(true);
        let pos = with_frames.default_device().unwrap();
        assert_eq!(coverage(&with_frames, pos).empty, Some(EmptyTrace::StateOnly { blocks_have_frames: true }));
    }

    /// A state-only file says how it was recorded and what is shown instead of a timeline; a
    /// file with a history has no such note.
    #[test]
    fn moment_notes_of_the_real_files() {
        let snap = load(&crate::test_fixtures::fixture("real", "state_only.pickle"));
        let pos = snap.default_device().unwrap();
        let note = coverage(&snap, pos).moment_note().unwrap();
        assert!(note.starts_with("Recorded with _record_memory_history(enabled='state'): no history. What was live when the snapshot was taken is shown as one column"), "{note}");
        assert!(note.contains("after the trace's one entry"), "{note}");
        let snap = load(&crate::test_fixtures::fixture("real", "oom.pickle"));
        assert_eq!(coverage(&snap, 0).moment_note(), None);
    }

    /// A real ring buffer that wrapped (`max_entries=64`, PyTorch 2.11, which writes no overflow
    /// flag): the 5 frees of allocations made before its first entry give it away.
    #[test]
    fn a_real_wrapped_ring_buffer_is_inferred() {
        let snap = load(&crate::test_fixtures::fixture("real", "ring_buffer_wrapped.pickle"));
        let c = coverage(&snap, 0);
        assert_eq!((c.entries, c.start, c.unseen_frees), (64, TraceStart::StartedLate, 5));
        let reason = c.reason().unwrap_or_default();
        assert!(
            reason.starts_with("the trace starts mid-run (5 frees of allocations never seen allocated"),
            "{reason}"
        );
        assert!(reason.ends_with(RAISE_MAX_ENTRIES), "{reason}");
    }
}
