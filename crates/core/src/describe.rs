//! The texts shown for things the user points at, shared by the
//! page and the command line.

use crate::format::{addr_label, size_with_bytes, stack_lines};
use crate::snapshot::{Action, Snapshot};
use crate::timeline::{Element, ElementIndex, Layout, Origin};

/// Shown when a stack is empty.
pub const NO_FRAMES: &str = "No stack trace recorded for this allocation. Possible reasons:
  - it was allocated before _record_memory_history was enabled (or evicted from the ring buffer);
  - recording used context=None or stacks that exclude it;
  - it was allocated in backward on an autograd thread with stacks=\"python\" (no Python frames);
  - it was rebuilt from the final segment snapshot.";

/// Shown when a stack of a profiler trace is empty.
pub const NO_FRAMES_IN_TRACE: &str = "The profiler recorded no op or Python stack for this memory: \
it was allocated before the profiler started, or outside the ops it recorded \
(torch.profiler.profile(..., with_stack=True) records Python stacks).";

/// What says that a stack of `snap` is empty.
pub fn no_frames_text(snap: &Snapshot) -> &'static str {
    if snap.source.profiler_trace {
        NO_FRAMES_IN_TRACE
    } else {
        NO_FRAMES
    }
}

/// Shown for the summarized band.
pub const SUMMARIZED: &str = "Small allocations summarized into one band to keep drawing fast. \
Raise Detail to draw more of them individually.";

/// PyTorch's viewer's `formatSize`: `1.3KiB (1280 bytes)`, one decimal rounded the way
/// JavaScript's `toFixed` rounds (exact ties go up, where Rust and Python round to even), so the
/// page's texts equal the reference viewer's.
pub fn viewer_size(bytes: u64) -> String {
    const UNITS: [&str; 8] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi"];
    let mut shift = 0u32;
    for unit in UNITS {
        // The value in this unit is bytes / 2^shift, exactly; it is shown when below 1024.
        if u128::from(bytes) < 1024u128 << shift {
            let scaled = u128::from(bytes) * 10;
            let div = 1u128 << shift;
            let tenths = scaled / div + u128::from((scaled % div) * 2 >= div && shift > 0);
            return format!("{}.{}{unit}B ({bytes} bytes)", tenths / 10, tenths % 10);
        }
        shift += 10;
    }
    format!("{:.1}YiB", bytes as f64 / 2f64.powi(80))
}

/// Formats a µs timestamp as UTC `YYYY-MM-DD HH:MM:SS.ffffff`.
pub fn utc_time(time_us: i64) -> String {
    let secs = time_us.div_euclid(1_000_000);
    let micros = time_us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if mo <= 2 { y + 1 } else { y };
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}:{s:02}.{micros:06} UTC")
}

fn push_stack(snap: &Snapshot, stack: u32, out: &mut String) {
    let lines = stack_lines(snap, stack);
    if lines.is_empty() {
        out.push_str(no_frames_text(snap));
        out.push('\n');
    } else {
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
}

/// A text about something with a stack, in three parts: what comes before the frames, the stack
/// (an index into [`Snapshot::stacks`]), and what comes after them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Described {
    /// Lines before the frames, each ending in `\n`.
    pub head: String,
    /// The stack whose frames follow.
    pub stack: u32,
    /// Lines after the frames (the forward pass's stack), each ending in `\n`.
    pub tail: String,
}

impl Described {
    /// The whole text, frames written by [`stack_lines`] (or [`NO_FRAMES`]).
    pub fn text(&self, snap: &Snapshot) -> String {
        let mut out = self.head.clone();
        push_stack(snap, self.stack, &mut out);
        out.push_str(&self.tail);
        out
    }
}

/// Text for a timeline element: label, size, totals, stream, pool, time, metadata, then frames.
pub fn element_text(snap: &Snapshot, device_pos: usize, layout: &Layout, element: ElementIndex) -> String {
    element_parts(snap, device_pos, layout, element).map_or_else(String::new, |d| d.text(snap))
}

/// [`element_text`] in its parts.
pub fn element_parts(snap: &Snapshot, device_pos: usize, layout: &Layout, element: ElementIndex) -> Option<Described> {
    let e = layout.element(element)?;
    let dev = snap.devices.get(device_pos)?;
    let t = &dev.trace;
    let prefix = if matches!(layout.options.mode, crate::timeline::Mode::Allocations) { 'b' } else { 's' };
    let mut out = String::new();
    let what = if prefix == 'b' { "allocation" } else { "segment" };
    out.push_str(&format!("{} {} {what}\n", addr_label(prefix, e.addr, e.version), size_with_bytes(e.size_bytes)));
    if e.origin == Origin::Traced {
        out.push_str(&format!("Total memory used after allocation: {}\n", size_with_bytes(e.total_after_alloc_bytes)));
    }
    let mut facts = vec![format!("stream {}", e.stream)];
    let row = e.alloc_row.or(e.free_row).map(|r| r as usize);
    facts.push(match pool_of(snap, dev.index, e.addr, row.and_then(|r| t.pool.get(r))) {
        Some((a, b)) => format!("pool_id ({a}, {b})"),
        None => "pool_id unknown".to_owned(),
    });
    if let Some(r) = row {
        if let Some(tu) = t.time_us_at(r) {
            facts.push(format!("allocated at {}", utc_time(tu)));
        }
    }
    out.push_str(&facts.join(", "));
    out.push('\n');
    out.push_str(&lifetime_text(layout, e, t.len()));
    match e.origin {
        Origin::Traced => {}
        Origin::FreedWithoutAlloc => out.push_str("alloc not recorded, stack trace for free:\n"),
        Origin::Ghost if snap.source.profiler_trace => {
            out.push_str("allocated before the profiler started and still allocated at its end\n")
        }
        Origin::Ghost => out.push_str(
            "[Ghost block] allocated before the trace starts and still allocated in the final snapshot; stack from the snapshot:\n",
        ),
    }
    if let Some(r) = row {
        if let Some(cc) = t.compile_context.get(r).filter(|&c| c != 0) {
            let s = snap.strings.get(cc);
            if s != "N/A" {
                out.push_str(&format!("Compile context: {s}\n"));
            }
        }
        if let Some(m) = t.user_metadata.get(r).filter(|&m| m != 0) {
            out.push_str(&format!("User Metadata: {}\n", snap.strings.get(m)));
        }
        if let Some(c) = t.category.get(r).filter(|&c| c != 0) {
            out.push_str(&format!("Category: {}\n", snap.strings.get(c)));
        }
        if let Some(m) = t.internal_metadata_at(r) {
            let text = match m {
                crate::tree::Tree::Str(s) => s.clone(),
                other => crate::format::py_repr(snap, other),
            };
            out.push_str(&format!("Internal (the allocator's own entry): {text}\n"));
        }
    }
    let mut tail = String::new();
    if let Some(r) = e.alloc_row {
        if let Ok(i) = t.forward_stack.binary_search_by_key(&r, |&(x, _)| x) {
            if let Some(&(_, fs)) = t.forward_stack.get(i) {
                tail.push_str("=== Forward Pass Stack Trace (where this tensor was created) ===\n");
                for f in snap.stack_frames(fs) {
                    tail.push_str(snap.strings.get(f.name));
                    tail.push('\n');
                }
            }
        }
    }
    Some(Described { head: out, stack: e.stack, tail })
}

/// The pool of an element: the entry's own `pool_id` where it names one other than the default,
/// else the pool of the final segment holding the address (as PyTorch's viewer resolves it), else
/// the default pool when the trace records `pool_id` on its entries (PyTorch 2.12+ writes it on
/// every one); `None` when nothing says ("pool_id unknown").
fn pool_of(snap: &Snapshot, device: i64, addr: u64, entry_pool: Option<u32>) -> Option<(i128, i128)> {
    let pool = |p: u32| snap.pools.get(p as usize).copied();
    if let Some(p) = entry_pool.filter(|&p| p != 0) {
        return pool(p);
    }
    let holding = snap
        .segments
        .iter()
        .find(|s| s.device == device && addr >= s.address && addr < s.address.saturating_add(s.total_size));
    match holding {
        Some(s) => pool(s.pool),
        None => entry_pool.and_then(pool),
    }
}

/// The lifetime in trace entries, the one numbering the page and `memviz trace` share.
fn lifetime_text(layout: &Layout, e: &Element, _rows: usize) -> String {
    match (e.alloc_row, e.free_row) {
        (Some(a), Some(f)) => format!("allocated at entry {a}, freed at entry {f}\n"),
        (Some(a), None) => format!("allocated at entry {a}, still allocated at the end\n"),
        (None, Some(f)) => format!("live before the trace, freed at entry {f}\n"),
        (None, None) if layout.is_moment() => "live when the snapshot was taken (no history recorded)\n".to_string(),
        (None, None) => "live for the whole trace\n".to_string(),
    }
}

/// Text for an `oom` entry.
pub fn oom_text(snap: &Snapshot, device_pos: usize, row: usize) -> String {
    oom_parts(snap, device_pos, row).map_or_else(String::new, |d| d.text(snap))
}

/// [`oom_text`] in its parts.
pub fn oom_parts(snap: &Snapshot, device_pos: usize, row: usize) -> Option<Described> {
    let t = &snap.devices.get(device_pos)?.trace;
    if t.action.get(row) != Some(&Action::Oom) {
        return None;
    }
    let size = t.size_bytes.get(row).copied().unwrap_or(0);
    let free = t.device_free_at(row).unwrap_or(0);
    let head =
        format!("OOM at entry {row}: requested {}, device had {} free\n", size_with_bytes(size), size_with_bytes(free));
    Some(Described { head, stack: t.stack.get(row).copied().unwrap_or(0), tail: String::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewer_sizes_round_like_javascript() {
        assert_eq!(viewer_size(0), "0.0B (0 bytes)");
        assert_eq!(viewer_size(512), "512.0B (512 bytes)");
        assert_eq!(viewer_size(1023), "1023.0B (1023 bytes)");
        assert_eq!(viewer_size(1024), "1.0KiB (1024 bytes)");
        // 1.25 KiB: (1.25).toFixed(1) is "1.3" where Rust's {:.1} gives "1.2".
        assert_eq!(viewer_size(1280), "1.3KiB (1280 bytes)");
        assert_eq!(viewer_size(1_310_720), "1.3MiB (1310720 bytes)");
        assert_eq!(viewer_size(1_048_575), "1024.0KiB (1048575 bytes)");
        assert_eq!(viewer_size(1_610_612_736), "1.5GiB (1610612736 bytes)");
        assert_eq!(viewer_size(u64::MAX), "16.0EiB (18446744073709551615 bytes)");
    }

    /// A lifetime is told in trace entries, the numbering the page shows everywhere; the
    /// layout's steps are not shown.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn lifetimes_are_in_trace_entries() {
        use crate::timeline::Options;
        let json = r#"{"segments":[],"device_traces":[[
            {"action":"alloc","addr":256,"size":1024,"stream":0},
            {"action":"alloc","addr":512,"size":2048,"stream":0},
            {"action":"free_completed","addr":256,"size":1024,"stream":0}]]}"#;
        let snap = crate::load(json.as_bytes()).unwrap();
        let layout = Layout::build(&snap, 0, Options::default());
        let text = |addr: u64| {
            let e = layout.elements.iter().position(|e| e.addr == addr).unwrap();
            element_text(&snap, 0, &layout, ElementIndex::new(e as u32))
        };
        assert!(text(256).contains("\nallocated at entry 0, freed at entry 2\n"), "{}", text(256));
        assert!(text(512).contains("\nallocated at entry 1, still allocated at the end\n"), "{}", text(512));
        assert!(!text(256).contains("step"));
    }

    /// A block of a snapshot without history was live when it was taken, not "for the whole
    /// trace"; a ghost of a traced file was.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn ghosts_say_when_they_were_live() {
        use crate::timeline::{Options, Origin};
        let text_of_ghost = |which: &str, name: &str| {
            let snap = crate::load(&std::fs::read(crate::test_fixtures::fixture(which, name)).unwrap()).unwrap();
            let dev = snap.default_device().unwrap();
            let layout = Layout::build(&snap, dev, Options::default());
            let e = layout.elements.iter().position(|e| e.origin == Origin::Ghost).unwrap();
            element_text(&snap, dev, &layout, ElementIndex::new(e as u32))
        };
        let t = text_of_ghost("real", "state_only.pickle");
        assert!(t.contains("live when the snapshot was taken (no history recorded)"), "{t}");
        let t = text_of_ghost("real", "growth_leak.pickle");
        assert!(t.contains("live for the whole trace"), "{t}");
    }

    /// An address's lifetimes are numbered as PyTorch's viewer numbers them when it loads a file
    /// (an alloc takes the address's count, its free raises it; a free without its alloc takes
    /// one too), and the pool is the entry's, else the final segment's holding the address, else
    /// unknown.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn versions_and_pools_read_as_pytorchs_viewer_reads_them() {
        use crate::timeline::Options;
        let json = r#"{"segments":[{"device":0,"address":4096,"total_size":4096,"segment_pool_id":[1,7],"stream":0,"blocks":[]}],
            "device_traces":[[
            {"action":"free_completed","addr":4096,"size":512,"stream":0},
            {"action":"alloc","addr":4096,"size":512,"stream":0},
            {"action":"free_completed","addr":4096,"size":512,"stream":0},
            {"action":"alloc","addr":4096,"size":256,"stream":0},
            {"action":"alloc","addr":65536,"size":128,"stream":0}]]}"#;
        let snap = crate::load(json.as_bytes()).unwrap();
        let layout = Layout::build(&snap, 0, Options::default());
        let texts: Vec<String> =
            (0..layout.elements.len() as u32).map(|e| element_text(&snap, 0, &layout, ElementIndex::new(e))).collect();
        let label = |t: &String| t.split(' ').next().unwrap_or("").to_owned();
        let mut labels: Vec<String> = texts.iter().map(label).collect();
        labels.sort();
        assert_eq!(labels, ["b10000_0", "b1000_0", "b1000_1", "b1000_2"], "{texts:?}");
        for t in &texts {
            let expect = if t.starts_with("b10000_") { "pool_id unknown" } else { "pool_id (1, 7)" };
            assert!(t.contains(expect), "{t}");
        }
    }
}
