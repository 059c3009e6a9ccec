//! A summary of a snapshot: devices, entries per action, time span, true peaks, segment counts,
//! and the recording settings that can be inferred from the data.

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

use crate::snapshot::{Action, BlockState, Snapshot};

/// Summary of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// Device index.
    pub device: i64,
    /// `cuda:N`, or `pinned host`.
    pub name: String,
    /// Whether this is the pinned host memory.
    pub pinned_host: bool,
    /// Why the trace is empty or starts mid-run, with what to do ([`crate::coverage`]).
    pub trace_note: Option<String>,
    /// Whether the trace misses the start of the run (ring buffer wrapped, history began late).
    pub starts_mid_run: bool,
    /// Trace entries.
    pub entries: usize,
    /// Entries per action name, in a stable order, zero counts left out.
    pub actions: Vec<(&'static str, usize)>,
    /// First and last `time_us`, when recorded.
    pub time_span_us: Option<(i64, i64)>,
    /// Highest live requested bytes at any step (allocations live before the trace included).
    pub peak_allocated_bytes: u64,
    /// Trace row at which the allocated peak is first reached (`None`: before the first entry).
    pub peak_allocated_row: Option<usize>,
    /// Highest reserved (segment) bytes at any step.
    pub peak_reserved_bytes: u64,
    /// Live requested bytes at the end (final snapshot).
    pub final_allocated_bytes: u64,
    /// Reserved bytes at the end.
    pub final_reserved_bytes: u64,
    /// Final segments of this device.
    pub segments: usize,
    /// Of which expandable.
    pub expandable_segments: usize,
    /// Blocks by state: allocated, pending free, inactive.
    pub blocks_allocated: usize,
    /// Blocks freed by the user but waiting on other streams.
    pub blocks_pending_free: usize,
    /// Cached free blocks.
    pub blocks_inactive: usize,
    /// Distinct streams in the trace.
    pub streams: usize,
    /// OOM events.
    pub ooms: usize,
}

/// Recording settings inferred from the data.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    /// `"all"` (C++ frames seen), `"python"`, or `"none"` (no frames anywhere).
    pub stacks: &'static str,
    /// `"all"` (free sites differ from alloc sites), `"alloc"`, `"state"` (frames on blocks only) or `"none"`.
    pub context: &'static str,
    /// `"state"` when there is (almost) no trace but segments, else `"all"`.
    pub enabled: &'static str,
    /// Whether `time_us` was recorded.
    pub has_time: bool,
    /// Actions the recording left out (`_record_memory_history(skip_actions=[...])`), inferred
    /// from the trace: see [`skipped_actions`].
    pub skipped_actions: Vec<&'static str>,
    /// `false` when the CUDA traces are empty while pinned host memory has one
    /// (`record_cuda=False, record_pinned_host_memory=True`).
    pub cuda_recorded: bool,
    /// Entries the allocator marked with `internal_metadata`, by its text, in first-seen order.
    pub internal_entries: Vec<(String, usize)>,
}

/// Summary of a snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct Info {
    /// Per device.
    pub devices: Vec<DeviceInfo>,
    /// Inferred settings.
    pub recording: Recording,
    /// Pickle protocol (0 for JSON).
    pub protocol: u8,
    /// Format notes ("json", "bare segment list", "legacy block history").
    pub format_notes: Vec<&'static str>,
    /// Interned frames and stacks.
    pub frames: usize,
    /// Distinct stacks.
    pub stacks: usize,
    /// `external_annotations` entries.
    pub annotations: usize,
    /// `allocator_settings` present.
    pub has_allocator_settings: bool,
    /// Warnings, as text.
    pub warnings: Vec<String>,
}

/// Live requested bytes before the first entry of a device's trace: allocations the trace frees
/// without having recorded them, plus allocated blocks of the final state that the trace never saw.
pub fn initial_live_bytes(snap: &Snapshot, device_pos: usize) -> u64 {
    let Some(dev) = snap.devices.get(device_pos) else { return 0 };
    let t = &dev.trace;
    let mut open: HashMap<u64, u64> = HashMap::default();
    let mut initial = 0u64;
    for row in 0..t.len() {
        let (Some(&a), Some(&addr), Some(&size)) = (t.action.get(row), t.addr.get(row), t.size_bytes.get(row)) else {
            continue;
        };
        match a {
            Action::Alloc => {
                open.insert(addr, size);
            }
            Action::FreeCompleted | Action::Free if open.remove(&addr).is_none() => {
                initial = initial.saturating_add(size);
            }
            _ => {}
        }
    }
    for s in snap.segments.iter().filter(|s| s.device == dev.index) {
        for b in snap.segment_blocks(s) {
            if b.state == BlockState::ActiveAllocated && !open.contains_key(&b.address) {
                initial = initial.saturating_add(b.requested_size);
            }
        }
    }
    initial
}

/// Live requested bytes after each alloc or free of a device's trace, as (row, bytes), starting
/// from [`initial_live_bytes`]. A lifetime counts with its alloc's size; a second alloc at a live
/// address leaves the first lifetime live (as the timeline draws it).
pub fn live_bytes_by_row(snap: &Snapshot, device_pos: usize) -> Vec<(u32, u64)> {
    let Some(dev) = snap.devices.get(device_pos) else { return Vec::new() };
    let t = &dev.trace;
    let mut live = initial_live_bytes(snap, device_pos);
    let mut open: HashMap<u64, u64> = HashMap::default();
    let mut out = Vec::new();
    for row in 0..t.len() {
        let (Some(&a), Some(&addr), Some(&size)) = (t.action.get(row), t.addr.get(row), t.size_bytes.get(row)) else {
            continue;
        };
        match a {
            Action::Alloc => {
                open.insert(addr, size);
                live = live.saturating_add(size);
            }
            Action::FreeCompleted | Action::Free => {
                let freed = open.remove(&addr).unwrap_or(size);
                live = live.saturating_sub(freed);
            }
            _ => continue,
        }
        out.push((row as u32, live));
    }
    out
}

/// Highest live requested bytes of a device and the row where it is first reached (`None`: before
/// the first entry): the same numbers as the maximum of [`live_bytes_by_row`] and
/// [`initial_live_bytes`], in one pass over the trace and without the series.
pub fn peak_live_bytes(snap: &Snapshot, device_pos: usize) -> (u64, Option<usize>) {
    let Some(dev) = snap.devices.get(device_pos) else { return (0, None) };
    let t = &dev.trace;
    let mut open: HashMap<u64, u64> = HashMap::default();
    // Live bytes relative to the start (frees of allocations the trace never saw lower it too:
    // their bytes count towards the start).
    let (mut unseen_frees, mut change, mut highest, mut highest_row) = (0u64, 0i128, 0i128, None);
    for row in 0..t.len() {
        let (Some(&a), Some(&addr), Some(&size)) = (t.action.get(row), t.addr.get(row), t.size_bytes.get(row)) else {
            continue;
        };
        match a {
            Action::Alloc => {
                open.insert(addr, size);
                change += i128::from(size);
                if change > highest {
                    highest = change;
                    highest_row = Some(row);
                }
            }
            Action::FreeCompleted | Action::Free => match open.remove(&addr) {
                Some(freed) => change -= i128::from(freed),
                None => {
                    unseen_frees = unseen_frees.saturating_add(size);
                    change -= i128::from(size);
                }
            },
            _ => {}
        }
    }
    let mut initial = unseen_frees;
    for s in snap.segments.iter().filter(|s| s.device == dev.index) {
        for b in snap.segment_blocks(s) {
            if b.state == BlockState::ActiveAllocated && !open.contains_key(&b.address) {
                initial = initial.saturating_add(b.requested_size);
            }
        }
    }
    (initial.saturating_add(u64::try_from(highest).unwrap_or(u64::MAX)), highest_row)
}

/// The format note of a profiler trace read as memory ([`crate::chrome_trace`]).
pub const PROFILER_TRACE_NOTE: &str = "profiler trace (torch.profiler's [memory] events)";

/// Summarizes a snapshot.
#[allow(clippy::too_many_lines)] // one summary field after another; not split yet
pub fn info(snap: &Snapshot) -> Info {
    let mut devices = Vec::new();
    for (pos, d) in snap.devices.iter().enumerate() {
        let t = &d.trace;
        let mut counts = [0usize; Action::ALL.len()];
        let mut span: Option<(i64, i64)> = None;
        // Stream ids are few and come in runs: a short sorted list beats sorting every row's.
        let mut streams: Vec<u32> = Vec::new();
        let mut last_stream = None;
        for row in 0..t.len() {
            if let Some(&a) = t.action.get(row) {
                if let Some(c) = counts.get_mut(a as usize) {
                    *c += 1;
                }
            }
            if let Some(tu) = t.time_us_at(row) {
                span = Some(match span {
                    None => (tu, tu),
                    Some((a, b)) => (a.min(tu), b.max(tu)),
                });
            }
            if let Some(&st) = t.stream.get(row) {
                if last_stream != Some(st) {
                    last_stream = Some(st);
                    if let Err(at) = streams.binary_search(&st) {
                        streams.insert(at, st);
                    }
                }
            }
        }
        let actions = Action::ALL
            .iter()
            .filter_map(|&a| counts.get(a as usize).filter(|&&c| c > 0).map(|&c| (a.name(), c)))
            .collect();
        let (peak, peak_row) = peak_live_bytes(snap, pos);
        // Reserved: final reserved minus the trace's net segment change gives the start.
        let segs: Vec<_> = snap.segments.iter().filter(|s| s.device == d.index).collect();
        let final_reserved: u64 = segs.iter().map(|s| s.total_size).sum();
        let (mut change, mut highest_change): (i128, i128) = (0, 0);
        for row in 0..t.len() {
            let size = i128::from(t.size_bytes.get(row).copied().unwrap_or(0));
            match t.action.get(row) {
                Some(Action::SegmentAlloc | Action::SegmentMap) => {
                    change += size;
                    highest_change = highest_change.max(change);
                }
                Some(Action::SegmentFree | Action::SegmentUnmap) => change -= size,
                _ => {}
            }
        }
        let peak_reserved = (i128::from(final_reserved) - change).max(0) + highest_change;
        let blocks = segs.iter().flat_map(|s| snap.segment_blocks(s));
        let (mut ba, mut bp, mut bi) = (0, 0, 0);
        let mut final_alloc = 0u64;
        for b in blocks {
            match b.state {
                BlockState::ActiveAllocated => {
                    ba += 1;
                    final_alloc += b.requested_size;
                }
                BlockState::ActivePendingFree => bp += 1,
                _ => bi += 1,
            }
        }
        let cov = crate::coverage::coverage(snap, pos);
        devices.push(DeviceInfo {
            device: d.index,
            name: d.name(),
            pinned_host: d.is_pinned_host(),
            trace_note: cov.reason(),
            starts_mid_run: cov.starts_mid_run(),
            entries: t.len(),
            actions,
            time_span_us: span,
            peak_allocated_bytes: peak,
            peak_allocated_row: peak_row,
            peak_reserved_bytes: peak_reserved.max(0) as u64,
            final_allocated_bytes: final_alloc,
            final_reserved_bytes: final_reserved,
            segments: segs.len(),
            expandable_segments: segs.iter().filter(|s| s.is_expandable).count(),
            blocks_allocated: ba,
            blocks_pending_free: bp,
            blocks_inactive: bi,
            streams: streams.len(),
            ooms: counts.get(Action::Oom as usize).copied().unwrap_or(0),
        });
    }
    let mut format_notes = Vec::new();
    if snap.source.profiler_trace {
        format_notes.push(PROFILER_TRACE_NOTE);
    } else if snap.source.json {
        format_notes.push("json");
    }
    if snap.source.bare_segment_list && snap.source.legacy_history {
        format_notes.push("bare segment list (PyTorch 1.13 or older)");
    } else if snap.source.bare_segment_list {
        // torch.cuda.memory_snapshot() and MemPool.snapshot(include_traces=False) write this.
        format_notes.push("segment list only, no trace (memory_snapshot() or MemPool.snapshot())");
    }
    if snap.source.legacy_history {
        format_notes.push("legacy block history");
    }
    Info {
        devices,
        recording: infer_recording(snap),
        protocol: snap.source.protocol,
        format_notes,
        frames: snap.frames.len(),
        stacks: snap.stacks.len(),
        annotations: snap.annotations.len(),
        has_allocator_settings: snap.allocator_settings.is_some(),
        warnings: snap
            .warnings
            .iter()
            .map(|w| if w.count > 1 { format!("{} ({} times in all)", w.example, w.count) } else { w.example.clone() })
            .collect(),
    }
}

fn is_cpp_frame(snap: &Snapshot, frame: u32) -> bool {
    let Some(f) = snap.frames.get(frame as usize) else { return false };
    let file = snap.strings.get(f.filename);
    let name = snap.strings.get(f.name);
    [".cpp", ".cc", ".h", ".hpp", ".cu", ".c"].iter().any(|e| file.ends_with(e))
        || name.contains("::")
        || file.is_empty() && !name.is_empty() && f.line == 0 && name.starts_with('_')
}

/// The recording settings inferred from the data (see [`Recording`]). O(entries + frames).
pub fn recording(snap: &Snapshot) -> Recording {
    infer_recording(snap)
}

fn infer_recording(snap: &Snapshot) -> Recording {
    let trace_entries: usize = snap.devices.iter().map(|d| d.trace.len()).sum();
    let trace_frames = snap.devices.iter().any(|d| d.trace.stack.iter().any(|&s| s != 0));
    let block_frames = snap.blocks.iter().any(|b| b.stack != 0) || snap.segments.iter().any(|s| s.stack != 0);
    let any_cpp = (0..snap.frames.len() as u32).any(|f| is_cpp_frame(snap, f));
    let stacks = if !trace_frames && !block_frames {
        "none"
    } else if any_cpp {
        "all"
    } else {
        "python"
    };
    // Free sites differ from alloc sites only with context="all".
    let mut free_site_differs = false;
    'outer: for d in &snap.devices {
        let t = &d.trace;
        let mut alloc_stack: HashMap<u64, u32> = HashMap::default();
        for row in 0..t.len() {
            let (Some(&a), Some(&addr), Some(&st)) = (t.action.get(row), t.addr.get(row), t.stack.get(row)) else {
                continue;
            };
            match a {
                Action::Alloc => {
                    alloc_stack.insert(addr, st);
                }
                Action::FreeRequested => {
                    if let Some(&s0) = alloc_stack.get(&addr) {
                        if s0 != st {
                            free_site_differs = true;
                            break 'outer;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let context = if trace_frames {
        if free_site_differs {
            "all"
        } else {
            "alloc"
        }
    } else if block_frames {
        "state"
    } else {
        "none"
    };
    let cuda_entries: usize = snap.devices.iter().filter(|d| !d.is_pinned_host()).map(|d| d.trace.len()).sum();
    let cuda_recorded = !(cuda_entries == 0 && trace_entries > 0);
    // A host-only recording is `enabled='all'` for the host trace; the empty CUDA trace is no
    // sign of `enabled='state'`.
    let enabled = if trace_entries <= 1 && !snap.segments.is_empty() { "state" } else { "all" };
    Recording {
        stacks,
        context,
        enabled,
        has_time: snap.devices.iter().any(|d| d.trace.has_time()),
        skipped_actions: skipped_actions(snap),
        cuda_recorded,
        internal_entries: internal_entries(snap),
    }
}

/// Actions a recording left out (`skip_actions`), inferred from what the traces hold:
/// - `free_requested`: frees complete (`free_completed`) but none was ever requested;
/// - `free_completed`: frees are requested but none ever completed;
/// - `segment_alloc` and `segment_free`: a trace allocates, holds no segment entry at all, and
///   allocated at an address that lies in none of its device's final segments, so a segment
///   was released during the trace without its `segment_free`.
///
/// A trace too short to show either entry says nothing. O(entries + segments log segments).
pub fn skipped_actions(snap: &Snapshot) -> Vec<&'static str> {
    let count =
        |a: Action| -> usize { snap.devices.iter().map(|d| d.trace.action.iter().filter(|&&x| x == a).count()).sum() };
    let (requested, completed) = (count(Action::FreeRequested), count(Action::FreeCompleted));
    let segment_entries = count(Action::SegmentAlloc)
        + count(Action::SegmentFree)
        + count(Action::SegmentMap)
        + count(Action::SegmentUnmap);
    let mut out = Vec::new();
    if completed > 0 && requested == 0 {
        out.push("free_requested");
    }
    if requested > 0 && completed == 0 && count(Action::Free) == 0 {
        out.push("free_completed");
    }
    if segment_entries == 0 && snap.devices.iter().any(|d| allocs_outside_segments(snap, d.index, &d.trace)) {
        out.extend(["segment_alloc", "segment_free"]);
    }
    out
}

/// Whether a trace allocated at an address outside every final segment of its device.
fn allocs_outside_segments(snap: &Snapshot, device: i64, t: &crate::snapshot::Trace) -> bool {
    let mut ranges: Vec<(u64, u64)> = snap
        .segments
        .iter()
        .filter(|s| s.device == device)
        .map(|s| (s.address, s.address.saturating_add(s.total_size)))
        .collect();
    if ranges.is_empty() {
        return false;
    }
    ranges.sort_unstable();
    let inside = |addr: u64| {
        let i = ranges.partition_point(|r| r.0 <= addr);
        i > 0 && ranges.get(i - 1).is_some_and(|r| addr < r.1)
    };
    t.action.iter().zip(&t.addr).any(|(&a, &addr)| a == Action::Alloc && !inside(addr))
}

/// Entries marked with `internal_metadata`, counted by its text (a non-string as its repr).
fn internal_entries(snap: &Snapshot) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for d in &snap.devices {
        for (row, _) in &d.trace.raw {
            let Some(v) = d.trace.internal_metadata_at(*row as usize) else { continue };
            let text = match v {
                crate::tree::Tree::Str(s) => s.clone(),
                other => crate::format::py_repr(snap, other),
            };
            match out.iter_mut().find(|(t, _)| *t == text) {
                Some((_, n)) => *n += 1,
                None => out.push((text, 1)),
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn snapshots() -> Vec<(String, Snapshot)> {
        let mut out = Vec::new();
        for p in crate::test_fixtures::fixture_files_with(&["real", "synth"], &["pickle"]) {
            if let Ok(snap) =
                std::fs::read(&p).map_err(|e| e.to_string()).and_then(|b| crate::load(&b).map_err(|e| e.to_string()))
            {
                out.push((p.display().to_string(), snap));
            }
        }
        out
    }

    /// The one-pass peak equals the maximum of the live series, on every snapshot at hand, and
    /// some of them free allocations their trace never saw (the case the start bytes cover).
    #[test]
    fn one_pass_peak_equals_the_series_maximum() {
        let mut with_unseen_frees = 0;
        for (name, snap) in snapshots() {
            for pos in 0..snap.devices.len() {
                let initial = initial_live_bytes(&snap, pos);
                let (mut peak, mut row) = (initial, None);
                for (r, live) in live_bytes_by_row(&snap, pos) {
                    if live > peak {
                        (peak, row) = (live, Some(r as usize));
                    }
                }
                assert_eq!(peak_live_bytes(&snap, pos), (peak, row), "{name} device {pos}");
                let t = &snap.devices[pos].trace;
                let mut seen = std::collections::HashSet::new();
                for r in 0..t.len() {
                    match t.action[r] {
                        Action::Alloc => {
                            seen.insert(t.addr[r]);
                        }
                        Action::FreeCompleted if !seen.contains(&t.addr[r]) => {
                            with_unseen_frees += 1;
                            break;
                        }
                        _ => {}
                    }
                }
            }
        }
        assert!(with_unseen_frees > 0, "no snapshot frees an allocation its trace never saw");
    }
}
