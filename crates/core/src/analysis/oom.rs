//! Out-of-memory explanations: for each `oom` entry, what was requested, what the device had free
//! (`device_free`), reserved against allocated at that moment (the allocator state replayed with
//! [`crate::state::History::state_after`]), the largest free block per stream and pool,
//! fragmentation (free bytes inside segments against the largest free block), the top holders
//! by source line and stack, and what to try.
//!
//! Block sizes of the replayed state are the allocator's rounded sizes where the final snapshot
//! says them, else requested sizes rounded up to 512 bytes (see [`crate::state`]).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::finding::Finding;
use super::live::{group, LiveSet};
use super::{site_label, size_text, time_of_row, Moment, Replay};
use crate::snapshot::{Action, Snapshot};
use crate::state::History;

/// Free memory inside the segments of one stream and pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolFree {
    /// Stream index.
    pub stream: u32,
    /// Pool index (0: default pool).
    pub pool: u32,
    /// Segments (mapped ranges) of this stream and pool.
    pub segments: usize,
    /// Their bytes.
    pub reserved_bytes: u64,
    /// Free bytes inside them.
    pub free_bytes: u64,
    /// Largest free block.
    pub largest_free_bytes: u64,
}

/// One out-of-memory event, explained.
#[derive(Clone, Debug, PartialEq)]
pub struct OomReport {
    /// Device index.
    pub device: i64,
    /// Trace row of the `oom` entry.
    pub row: u32,
    /// Its time.
    pub time_us: Option<i64>,
    /// Bytes requested (rounded by the allocator).
    pub requested_bytes: u64,
    /// What `cudaMemGetInfo` said was free on the device.
    pub device_free_bytes: Option<u64>,
    /// Stream of the request.
    pub stream: u32,
    /// Stack of the request.
    pub stack: u32,
    /// Reserved (segment) bytes at that moment.
    pub reserved_bytes: u64,
    /// Live requested bytes in those segments.
    pub allocated_bytes: u64,
    /// Live block bytes (rounded sizes).
    pub allocated_block_bytes: u64,
    /// Free bytes inside segments.
    pub free_in_segments_bytes: u64,
    /// Largest free block on the request's stream (any pool when that stream has none).
    pub largest_free_bytes: u64,
    /// Largest free block anywhere.
    pub largest_free_any_bytes: u64,
    /// Free memory per stream and pool.
    pub pools: Vec<PoolFree>,
    /// `segment_free`/`segment_unmap` entries between the last alloc and the OOM (the allocator's
    /// release of cached blocks before giving up).
    pub released_just_before: usize,
    /// `segment_free`/`segment_unmap` entries before the OOM in the whole trace.
    pub released_before: usize,
    /// What held the memory (live set at the OOM).
    pub holders: LiveSet,
    /// What happened, in words.
    pub diagnosis: Vec<String>,
    /// What to try.
    pub suggestions: Vec<String>,
}

/// Explains every `oom` entry of the replayed device.
pub fn explain(snap: &Snapshot, replay: &Replay) -> Vec<OomReport> {
    let Some(dev) = snap.devices.get(replay.device_pos) else { return Vec::new() };
    let t = &dev.trace;
    let rows: Vec<usize> = (0..t.len()).filter(|&r| t.action.get(r) == Some(&Action::Oom)).collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let history = History::build(snap, replay.device_pos);
    rows.into_iter().map(|r| explain_one(snap, replay, &history, r)).collect()
}

#[allow(clippy::too_many_lines)] // one report, section by section; not split yet
fn explain_one(snap: &Snapshot, replay: &Replay, history: &History, row: usize) -> OomReport {
    let t = snap.devices.get(replay.device_pos).map(|d| &d.trace);
    let get = |f: fn(&crate::snapshot::Trace) -> &Vec<u32>| t.and_then(|t| f(t).get(row).copied()).unwrap_or(0);
    let requested = t.and_then(|t| t.size_bytes.get(row).copied()).unwrap_or(0);
    let device_free = t.and_then(|t| t.device_free_at(row));
    let stream = get(|t| &t.stream);
    let stack = get(|t| &t.stack);
    let st = history.state_after(snap, Some(row));
    let reserved = st.reserved_bytes();
    let allocated = st.allocated_bytes();
    let allocated_blocks: u64 = st.blocks.values().map(|b| b.size_bytes).fold(0, u64::saturating_add);
    let mut pools: BTreeMap<(u32, u32), PoolFree> = BTreeMap::new();
    for s in st.segments.values() {
        let p = pools.entry((s.stream, s.pool)).or_insert(PoolFree {
            stream: s.stream,
            pool: s.pool,
            segments: 0,
            reserved_bytes: 0,
            free_bytes: 0,
            largest_free_bytes: 0,
        });
        p.segments += 1;
        p.reserved_bytes = p.reserved_bytes.saturating_add(s.size_bytes);
    }
    for f in st.free_ranges() {
        if let Some(p) = pools.get_mut(&(f.stream, f.pool)) {
            p.free_bytes = p.free_bytes.saturating_add(f.size_bytes);
            p.largest_free_bytes = p.largest_free_bytes.max(f.size_bytes);
        }
    }
    let pools: Vec<PoolFree> = pools.into_values().collect();
    let free_in_segments = pools.iter().map(|p| p.free_bytes).fold(0, u64::saturating_add);
    let largest_any = pools.iter().map(|p| p.largest_free_bytes).max().unwrap_or(0);
    let on_stream: Vec<&PoolFree> = pools.iter().filter(|p| p.stream == stream).collect();
    let largest = if on_stream.is_empty() {
        largest_any
    } else {
        on_stream.iter().map(|p| p.largest_free_bytes).max().unwrap_or(0)
    };
    let free_on_stream = if on_stream.is_empty() {
        free_in_segments
    } else {
        on_stream.iter().map(|p| p.free_bytes).fold(0, u64::saturating_add)
    };
    let is_release = |r: usize| {
        t.and_then(|t| t.action.get(r)).is_some_and(|a| matches!(a, Action::SegmentFree | Action::SegmentUnmap))
    };
    let last_alloc = (0..row).rev().find(|&r| t.and_then(|t| t.action.get(r)) == Some(&Action::Alloc));
    let released_just_before = (last_alloc.map_or(0, |a| a + 1)..row).filter(|&r| is_release(r)).count();
    let released_before = (0..row).filter(|&r| is_release(r)).count();
    let live_elements = replay.live_elements(Some(row as u32));
    let holders = group(snap, replay, Moment::Entry(row as u32), Some(row as u32), live_elements);

    let mut diagnosis = vec![format!(
        "requested {} on stream {}; the allocator had {} reserved, {} of it allocated to live tensors ({} in blocks), {} free inside its segments",
        size_text(requested),
        stream,
        size_text(reserved),
        size_text(allocated),
        size_text(allocated_blocks),
        size_text(free_in_segments)
    )];
    let mut suggestions = Vec::new();
    if let Some(df) = device_free {
        if df >= requested {
            diagnosis.push(format!(
                "the device still had {} free, more than the request: the limit was this process's own cap (`torch.cuda.set_per_process_memory_fraction`), not a full GPU; {} reserved + {} requested = {} went over it",
                size_text(df),
                size_text(reserved),
                size_text(requested),
                size_text(reserved.saturating_add(requested))
            ));
            suggestions.push("Raise or remove the per-process memory fraction (`torch.cuda.set_per_process_memory_fraction`) if the cap is not intended.".into());
        } else {
            diagnosis.push(format!(
                "the device had only {} free: the GPU was full (this process reserved {}; other processes, the CUDA context and non-PyTorch allocations use the rest)",
                size_text(df),
                size_text(reserved)
            ));
        }
    }
    if largest < requested && free_on_stream >= requested {
        diagnosis.push(format!(
            "fragmentation: {} were free inside segments on this stream, enough for the request, but the largest free block was {}",
            size_text(free_on_stream),
            size_text(largest)
        ));
        suggestions.push("Set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`: segments then grow in place and freed space can be reused by larger requests.".into());
        suggestions.push("Or limit block splitting with `PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:N` (N below the typical large request).".into());
    } else if free_in_segments > 0 {
        diagnosis.push(format!(
            "the largest free block inside segments was {}: the request could not fit in cached memory",
            size_text(largest_any)
        ));
    }
    if reserved > 0 && allocated.saturating_mul(5) >= reserved.saturating_mul(4) {
        diagnosis.push(format!(
            "live tensors held {:.0}% of the reserved memory: the memory was really in use",
            allocated as f64 * 100.0 / reserved as f64
        ));
        suggestions.push("Reduce what is live at once: a smaller batch size or sequence length, activation checkpointing (`torch.utils.checkpoint`), mixed precision (autocast to bf16/fp16), or freeing tensors earlier; the top holders show what to look at first.".into());
    } else if reserved > 0 {
        diagnosis.push(format!(
            "only {:.0}% of the reserved memory held live tensors: the rest was cached free blocks",
            allocated as f64 * 100.0 / reserved as f64
        ));
    }
    suggestions.push(format!(
        "`torch.cuda.empty_cache()` would not help: before raising, the allocator already frees its cached, entirely free segments and retries{}.",
        if released_before > 0 { format!(" (it released segments {released_before} times before this point in the trace)") } else { String::new() }
    ));
    if let Some(top) = holders.by_site.first() {
        diagnosis.push(format!(
            "largest holder: {} in {} allocations from {}",
            size_text(top.bytes),
            top.count,
            top.label
        ));
    }
    OomReport {
        device: replay.device,
        row: row as u32,
        time_us: time_of_row(snap, replay.device_pos, Some(row as u32)),
        requested_bytes: requested,
        device_free_bytes: device_free,
        stream,
        stack,
        reserved_bytes: reserved,
        allocated_bytes: allocated,
        allocated_block_bytes: allocated_blocks,
        free_in_segments_bytes: free_in_segments,
        largest_free_bytes: largest,
        largest_free_any_bytes: largest_any,
        pools,
        released_just_before,
        released_before,
        holders,
        diagnosis,
        suggestions,
    }
}

/// The OOM as an insights finding.
pub fn finding(o: &OomReport) -> Finding {
    Finding {
        problem: true,
        kind: "oom",
        title: format!(
            "Out of memory at entry {}: {} requested with {} reserved and {} allocated",
            o.row,
            size_text(o.requested_bytes),
            size_text(o.reserved_bytes),
            size_text(o.allocated_bytes)
        ),
        details: o.diagnosis.clone(),
        suggestions: o.suggestions.clone(),
        bytes: o.requested_bytes,
        elements: o.holders.elements.clone(),
    }
}

impl OomReport {
    /// JSON for the page and `memviz oom --json`.
    pub fn to_json(&self, snap: &Snapshot) -> Value {
        json!({
            "device": self.device,
            "entry": self.row,
            "time_us": self.time_us,
            "requested_bytes": self.requested_bytes,
            "device_free_bytes": self.device_free_bytes,
            "stream": self.stream,
            "site": site_label(snap, self.stack),
            "frames": super::live::stack_json(snap, self.stack),
            "reserved_bytes": self.reserved_bytes,
            "allocated_bytes": self.allocated_bytes,
            "allocated_block_bytes": self.allocated_block_bytes,
            "free_in_segments_bytes": self.free_in_segments_bytes,
            "largest_free_bytes": self.largest_free_bytes,
            "largest_free_any_bytes": self.largest_free_any_bytes,
            "pools": self.pools.iter().map(|p| json!({
                "stream": p.stream,
                "stream_raw": snap.stream_raw(p.stream).to_string(),
                "pool": snap.pools.get(p.pool as usize).map(|x| json!([x.0.to_string(), x.1.to_string()])),
                "segments": p.segments,
                "reserved_bytes": p.reserved_bytes,
                "free_bytes": p.free_bytes,
                "largest_free_bytes": p.largest_free_bytes,
            })).collect::<Vec<_>>(),
            "released_just_before": self.released_just_before,
            "released_before": self.released_before,
            "diagnosis": self.diagnosis,
            "suggestions": self.suggestions,
            "holders": self.holders.to_json(snap, 20),
        })
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::analysis::test_util::fixture;

    // Figures from: python3 tests/gen/verify_oom.py tests/data/real/oom.pickle
    #[test]
    fn oom_fixture_is_explained() {
        let snap = fixture("oom.pickle");
        let r = Replay::build(&snap, 0);
        let o = explain(&snap, &r);
        assert_eq!(o.len(), 1);
        let o = &o[0];
        assert_eq!(o.row, 45);
        assert_eq!(o.requested_bytes, 546_068_992);
        assert_eq!(o.device_free_bytes, Some(146_806_013_952));
        assert_eq!(o.reserved_bytes, 2_751_463_424);
        assert_eq!(o.allocated_bytes, 2_740_593_636);
        assert_eq!(o.free_in_segments_bytes, 9_246_208);
        assert_eq!(o.largest_free_bytes, 2_059_264);
        assert_eq!(o.released_before, 5);
        let top = &o.holders.by_site[0];
        assert_eq!(
            (top.label.as_str(), top.bytes, top.count),
            ("/home/user/project/train.py:205 (oom)", 2_740_593_636, 10)
        );
        assert!(o.diagnosis.iter().any(|d| d.contains("own cap")));
        assert!(o.suggestions.iter().any(|s| s.contains("empty_cache")));
        assert!(!o.suggestions.iter().any(|s| s.contains("expandable_segments")));
    }

    /// A 100 MiB segment holding 30 + 20 + 20 + 30 MiB; the 20 and the last 30 are freed; 40 MiB
    /// is then requested: 50 MiB free, but no block of 40 MiB.
    #[test]
    fn fragmentation_suggests_expandable_segments() {
        const MIB: u64 = 1 << 20;
        let base = 0x7f00_0000_0000u64;
        let e = |action: &str, addr: u64, size: u64| serde_json::json!({"action": action, "addr": addr, "size": size, "stream": 0});
        let mut trace = vec![e("segment_alloc", base, 100 * MIB)];
        for (off, sz) in [(0, 30), (30, 20), (50, 20), (70, 30)] {
            trace.push(e("alloc", base + off * MIB, sz * MIB));
        }
        for off in [30, 70] {
            let sz = if off == 30 { 20 } else { 30 };
            trace.push(e("free_requested", base + off * MIB, sz * MIB));
            trace.push(e("free_completed", base + off * MIB, sz * MIB));
        }
        trace.push(serde_json::json!({"action": "oom", "size": 40 * MIB, "stream": 0, "device_free": MIB}));
        let blk = |sz: u64, st: &str| serde_json::json!({"size": sz * MIB, "requested_size": sz * MIB, "state": st, "frames": []});
        let snap_json = serde_json::json!({
            "segments": [{"device": 0, "address": base, "total_size": 100 * MIB, "allocated_size": 50 * MIB, "active_size": 50 * MIB,
                "requested_size": 50 * MIB, "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0], "is_expandable": false, "frames": [],
                "blocks": [blk(30, "active_allocated"), blk(20, "inactive"), blk(20, "active_allocated"), blk(30, "inactive")]}],
            "device_traces": [trace],
        });
        let snap = crate::load(snap_json.to_string().as_bytes()).expect("json snapshot");
        let o = explain(&snap, &Replay::build(&snap, 0));
        assert_eq!(o.len(), 1);
        let o = &o[0];
        assert_eq!(
            (o.reserved_bytes, o.allocated_bytes, o.free_in_segments_bytes, o.largest_free_bytes),
            (100 * MIB, 50 * MIB, 50 * MIB, 30 * MIB)
        );
        assert!(o.diagnosis.iter().any(|d| d.starts_with("fragmentation")), "{:?}", o.diagnosis);
        assert!(o.diagnosis.iter().any(|d| d.contains("GPU was full")), "{:?}", o.diagnosis);
        assert!(o.suggestions.iter().any(|s| s.contains("expandable_segments:True")));
    }

    #[test]
    fn no_oom_no_report() {
        let snap = fixture("growth_leak.pickle");
        assert!(explain(&snap, &Replay::build(&snap, 0)).is_empty());
    }
}
