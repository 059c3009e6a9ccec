//! The text that PyTorch 2.15's `python -m torch.cuda._memory_viz stats|trace` prints, reproduced byte
//! for byte, quirks included (docs/reference-cli.md): `stats` counts requested bytes
//! as allocated and draws 20 MiB pages; `trace` never recycles names, matches snapshot segments by
//! `allocated_size`, keeps freed segment ranges, and prints a meaningless `TOTAL MEM`. Both ignore
//! pinned host memory (`host_segments`, `host_traces`), as PyTorch's CLI does.

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};

use crate::error::Error;
use crate::format::{py_repr, py_size, py_size_f64};
use crate::snapshot::{Action, BlockState, Snapshot};
use crate::tree::Tree;

/// Bytes a page of the `stats` drawing stands for.
pub const PAGE_SIZE: i128 = 20 * 1024 * 1024;
/// Most pages drawn for one segment (20 TiB); larger segments are refused as corrupt.
const MAX_PAGES: i128 = 1 << 20;

const LEGEND: &str = "
Legend:
    [a     ] - a segment in the allocator
     ^-- a page 20.0MiB of memory in the segment
    a-z: pages filled with a single block's content
    ' ': page is completely free
    *: page if completely full with multiple blocks
    0-9: page is partially full with tensors of multiple blocks (9 == 90% full)
    (X% internal) - of the free memory, X% is free because we rounded the size of the allocation.
";

fn report_free(free_external: i128, free_internal: i128) -> String {
    let total = free_external + free_internal;
    if total != 0 {
        let pct = (free_internal as f64 / total as f64) * 100.0;
        format!("{} ({pct:.1}% internal)", py_size(total))
    } else {
        py_size(total)
    }
}

/// `stats`: how the allocator has filled its segments. Output ends with the newline `print` adds.
pub fn stats(snap: &Snapshot) -> Result<String, Error> {
    if !snap.source.bare_segment_list && !snap.source.top_level_keys.iter().any(|k| k == "segments") {
        return Err(Error::NotASnapshot {
            found: "no 'segments' key, so there is no allocator state to summarize".into(),
        });
    }
    let mut out = String::from("Summary of segments >= 20.0MiB in size\n");
    let (mut total_reserved, mut total_allocated, mut free_external, mut free_internal) = (0i128, 0i128, 0i128, 0i128);
    let active_of = |i: usize| -> i128 {
        snap.segments.get(i).map_or(0, |s| {
            snap.segment_blocks(s)
                .iter()
                .filter(|b| b.state == BlockState::ActiveAllocated)
                .map(|b| i128::from(b.size))
                .sum()
        })
    };
    let cuda = snap.segments.iter().enumerate().filter(|(_, s)| !s.host);
    let mut order: Vec<(i128, i128, usize)> = cuda.map(|(i, s)| (i128::from(s.total_size), active_of(i), i)).collect();
    order.sort_by_key(|x| (x.0, x.1));
    for &(total_size, _, i) in &order {
        let Some(seg) = snap.segments.get(i) else { continue };
        total_reserved += total_size;
        let (mut seg_ext, mut seg_int, mut seg_alloc) = (0i128, 0i128, 0i128);
        let mut ranges: Vec<(i128, i128)> = Vec::new();
        let mut boffset = 0i128;
        for b in snap.segment_blocks(seg) {
            let size = i128::from(b.size);
            if b.state == BlockState::ActiveAllocated {
                let req = i128::from(b.requested_size);
                ranges.push((boffset, req));
                seg_alloc += req;
                seg_int += size - req;
            } else {
                seg_ext += size;
            }
            boffset += size;
        }
        total_allocated += seg_alloc;
        free_external += seg_ext;
        free_internal += seg_int;
        if seg_ext + seg_int + seg_alloc != total_size {
            return Err(Error::Schema {
                path: format!("segments[{i}]"),
                reason: format!(
                    "block sizes add up to {} bytes but total_size is {total_size}",
                    seg_ext + seg_int + seg_alloc
                ),
            });
        }
        if total_size >= PAGE_SIZE {
            let nseg = (total_size - 1).div_euclid(PAGE_SIZE) + 1;
            if nseg > MAX_PAGES {
                return Err(Error::Schema {
                    path: format!("segments[{i}].total_size"),
                    reason: format!("{total_size} bytes is too large to be real"),
                });
            }
            let n = nseg.max(0) as usize;
            let mut occupied = vec![' '; n];
            let mut frac = vec![0.0f64; n];
            for (k, &(start_, size)) in ranges.iter().enumerate() {
                let finish_ = start_ + size;
                let start = start_.div_euclid(PAGE_SIZE);
                let finish = (finish_ - 1).div_euclid(PAGE_SIZE) + 1;
                let m = (b'a' + (k % 26) as u8) as char;
                let mut j = start.max(0);
                while j < finish && j < nseg {
                    let s = start_.max(j * PAGE_SIZE);
                    let e = finish_.min((j + 1) * PAGE_SIZE);
                    let ju = j as usize;
                    if let (Some(fr), Some(oc)) = (frac.get_mut(ju), occupied.get_mut(ju)) {
                        *fr += (e - s) as f64 / PAGE_SIZE as f64;
                        if *oc != ' ' {
                            let idx = ((*fr * 10.0) as i64).clamp(0, 10) as usize;
                            *oc = "0123456789*".as_bytes().get(idx).map_or('*', |&c| c as char);
                        } else {
                            *oc = m;
                        }
                    }
                    j += 1;
                }
            }
            let body: String = occupied.into_iter().collect();
            let raw_stream = snap.stream_raw(seg.stream);
            let stream = if raw_stream != 0 { format!(" stream_{raw_stream}") } else { String::new() };
            out.push_str(&format!(
                "[{body}] {} allocated, {} free{stream}\n",
                py_size(total_size),
                report_free(seg_ext, seg_int)
            ));
        }
    }
    out.push_str(&format!("segments: {}\n", snap.segments.iter().filter(|s| !s.host).count()));
    out.push_str(&format!("total_reserved: {}\n", py_size(total_reserved)));
    out.push_str(&format!("total_allocated: {}\n", py_size(total_allocated)));
    out.push_str(&format!("total_free: {}\n", report_free(free_external, free_internal)));
    out.push_str(LEGEND);
    out.push('\n');
    Ok(out)
}

/// Intervals searched like a list in insertion order: the first inserted interval containing an
/// address wins. Queries only look at intervals that can contain it.
#[derive(Default)]
struct FirstContaining {
    by_start: BTreeMap<(u64, u32), u128>,
    max_len: u128,
    next: u32,
}

impl FirstContaining {
    fn push(&mut self, start: u64, len: u128) {
        self.by_start.insert((start, self.next), u128::from(start) + len);
        self.max_len = self.max_len.max(len);
        self.next += 1;
    }

    /// (insertion index, start) of the first interval containing `addr`.
    fn find(&self, addr: u64) -> Option<(u32, u64)> {
        let lo = (u128::from(addr).saturating_sub(self.max_len)).min(u128::from(u64::MAX)) as u64;
        let mut best: Option<(u32, u64)> = None;
        for (&(start, idx), &end) in self.by_start.range((lo, 0)..=(addr, u32::MAX)) {
            if u128::from(addr) < end && best.is_none_or(|(b, _)| idx < b) {
                best = Some((idx, start));
            }
        }
        best
    }
}

/// Python's `str()` of a value: a string as it is, anything else as its `repr`.
fn py_str_of(snap: &Snapshot, t: &Tree) -> String {
    match t {
        Tree::Str(s) => s.clone(),
        other => py_repr(snap, other),
    }
}

fn short_name(n: u64) -> String {
    let (r, m) = (n / 26, n % 26);
    let c = (b'a' + m as u8) as char;
    if r == 0 {
        c.to_string()
    } else {
        format!("{c}{r}")
    }
}

/// `trace`: every entry of every non-empty device trace in a Pythonic style. Output ends with the
/// newline `print` adds.
pub fn trace(snap: &Snapshot) -> Result<String, Error> {
    Ok(trace_text(snap)?.to_string())
}

/// `trace`'s text, to be written as it is produced (`write!(out, "{}", ...)`) rather than held
/// whole: the error is known before the first line.
pub fn trace_text(snap: &Snapshot) -> Result<TraceText<'_>, Error> {
    if !snap.source.has_device_traces {
        return Err(Error::NotASnapshot {
            found: if snap.source.bare_segment_list {
                "this is a bare list of segments (PyTorch 1.13 or older, or memory_snapshot() / MemPool.snapshot()), which holds no trace".into()
            } else {
                "no 'device_traces' key, so there is no trace to print".into()
            },
        });
    }
    // PyTorch's trace fails with KeyError on an annotate entry without these; say so before the first line.
    for dev in snap.devices.iter().filter(|d| !d.is_pinned_host()) {
        let t = &dev.trace;
        for row in (0..t.len()).filter(|&r| t.action.get(r) == Some(&Action::Annotate)) {
            if let Some(tree) = t.raw_at(row) {
                if let Some(key) = ["addr", "user_metadata"].into_iter().find(|k| tree.get(k).is_none()) {
                    return Err(Error::Schema {
                        path: format!("device_traces[{}][{row}]", dev.index),
                        reason: format!("an annotate entry without '{key}' (PyTorch's trace fails with KeyError)"),
                    });
                }
            }
        }
    }
    Ok(TraceText { snap })
}

/// The text of [`trace`] for a snapshot that has a trace ([`trace_text`]); its `Display` writes it.
pub struct TraceText<'a> {
    snap: &'a Snapshot,
}

impl fmt::Display for TraceText<'_> {
    #[allow(clippy::too_many_lines)] // follows PyTorch's trace printer line for line
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let snap = self.snap;
        // Snapshot segments in file order, matched by allocated_size (a quirk of the reference).
        let mut snapshot_segs = FirstContaining::default();
        for s in snap.segments.iter().filter(|s| !s.host) {
            snapshot_segs.push(s.address, u128::from(s.allocated_size));
        }
        for dev in &snap.devices {
            let t = &dev.trace;
            if t.is_empty() || dev.is_pinned_host() {
                continue;
            }
            writeln!(out, "Device {} ----------------", dev.index)?;
            writeln!(out, "{} entries", t.len())?;
            let mut intervals = FirstContaining::default();
            let mut interval_names: Vec<String> = Vec::new();
            let mut seg_names: HashMap<u64, String> = HashMap::new();
            let mut alloc_names: HashMap<u64, String> = HashMap::new();
            let mut next_name = 0u64;
            let mut count: i128 = 0;
            for row in 0..t.len() {
                let action = t.action.get(row).copied().unwrap_or(Action::Unknown);
                let addr = t.addr.get(row).copied().unwrap_or(0);
                let raw = t.raw_at(row);
                // Sizes beyond 64 bits are kept only in the verbatim entry.
                let big_size: Option<f64> = raw.and_then(|r| match r.get("size") {
                    Some(Tree::Int(i)) if *i > i128::from(u64::MAX) || *i < 0 => Some(*i as f64),
                    Some(Tree::BigInt(s)) => s.parse::<f64>().ok(),
                    _ => None,
                });
                let size = i128::from(t.size_bytes.get(row).copied().unwrap_or(0));
                let size_text = big_size.map_or_else(|| py_size(size), py_size_f64);
                count = row as i128;
                let known = matches!(
                    action,
                    Action::Alloc
                        | Action::FreeRequested
                        | Action::FreeCompleted
                        | Action::SegmentAlloc
                        | Action::SegmentFree
                        | Action::Oom
                );
                match (action, raw) {
                    (Action::Alloc, _) => {
                        let n = short_name(next_name);
                        next_name += 1;
                        let (seg_name, offset) = match intervals.find(addr) {
                            Some((idx, start)) => (
                                interval_names.get(idx as usize).cloned().unwrap_or_default(),
                                i128::from(addr) - i128::from(start),
                            ),
                            None => match snapshot_segs.find(addr) {
                                Some((idx, start)) => (format!("seg_{idx}"), i128::from(addr) - i128::from(start)),
                                None => ("MEM".to_owned(), i128::from(addr)),
                            },
                        };
                        writeln!(out, "{n} = {seg_name}[{offset}:{size_text}]")?;
                        alloc_names.insert(addr, n);
                        count += size;
                    }
                    (Action::FreeRequested, _) => {
                        let name = alloc_names.get(&addr).cloned().unwrap_or_else(|| addr.to_string());
                        writeln!(out, "del {name} # {size_text}")?;
                    }
                    (Action::FreeCompleted, _) => {
                        count -= size;
                        let name = alloc_names.get(&addr).cloned().unwrap_or_else(|| addr.to_string());
                        writeln!(out, "# free completed for {name} {size_text}")?;
                    }
                    (Action::SegmentAlloc, _) => {
                        let n = short_name(next_name);
                        next_name += 1;
                        writeln!(out, "{n} = cudaMalloc({addr}, {size_text})")?;
                        intervals.push(addr, size.max(0) as u128);
                        interval_names.push(n.clone());
                        seg_names.insert(addr, n);
                    }
                    (Action::SegmentFree, _) => {
                        let name = seg_names.get(&addr).cloned().unwrap_or_else(|| addr.to_string());
                        writeln!(out, "cudaFree({name}) # {size_text}")?;
                    }
                    (Action::Oom, _) => {
                        let free_text = match raw.and_then(|r| r.get("device_free")) {
                            Some(Tree::Int(i)) => py_size(*i),
                            Some(Tree::BigInt(s)) => py_size_f64(s.parse::<f64>().unwrap_or(0.0)),
                            _ => py_size(i128::from(t.device_free_at(row).unwrap_or(0))),
                        };
                        writeln!(out, "raise OutOfMemoryError # {size_text} requested, {free_text} free in CUDA")?;
                    }
                    (Action::Annotate, Some(tree)) => {
                        // trace_text checked that both keys are there, as PyTorch's trace needs.
                        if let (Some(addr_tree), Some(meta)) = (tree.get("addr"), tree.get("user_metadata")) {
                            // 2.15 names the annotated allocation as `del` does; the address where none was seen.
                            let known_name = match addr_tree {
                                Tree::Int(i) => u64::try_from(*i).ok().and_then(|a| alloc_names.get(&a)).cloned(),
                                _ => None,
                            };
                            let name = known_name.unwrap_or_else(|| py_str_of(snap, addr_tree));
                            writeln!(out, "# annotate {name}: {}", py_str_of(snap, meta))?;
                        }
                    }
                    (_, Some(tree)) => {
                        out.write_str(&py_repr(snap, tree))?;
                        out.write_char('\n')?;
                    }
                    (_, None) => {
                        debug_assert!(!known);
                        out.write_str("{}\n")?;
                    }
                }
            }
            write!(out, "TOTAL MEM: {}", py_size(count))?;
        }
        out.write_char('\n')?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_python() {
        assert_eq!(short_name(0), "a");
        assert_eq!(short_name(25), "z");
        assert_eq!(short_name(26), "a1");
        assert_eq!(short_name(27), "b1");
        assert_eq!(short_name(26 * 3 + 2), "c3");
    }

    #[test]
    fn first_containing_prefers_earliest() {
        let mut f = FirstContaining::default();
        f.push(100, 50);
        f.push(120, 10);
        f.push(0, 1000);
        assert_eq!(f.find(125), Some((0, 100)));
        assert_eq!(f.find(10), Some((2, 0)));
        assert_eq!(f.find(2000), None);
    }
}
