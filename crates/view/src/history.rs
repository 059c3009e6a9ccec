//! The Allocator State History view without the DOM: the event list's text (PyTorch's
//! `formatEvent`), address versions, the segment map layout (as PyTorch's viewer
//! draws it) and the texts for what the pointer is over.

use std::collections::HashMap;

use memviz_core::describe::{viewer_size, NO_FRAMES};
use memviz_core::format::{addr_label, stack_lines_with};
use memviz_core::snapshot::{Action, Snapshot, Trace};
use memviz_core::state::{AllocatorState, History};

/// What one device's event list needs: the checkpointed history, per-address versions, and how
/// trace entries become list rows.
///
/// As in PyTorch's viewer, a `free_requested` followed straight away by the `free_completed` of
/// the same address is one row, `free`; every other entry is a row of its own.
pub struct HistoryData {
    /// Checkpointed allocator states.
    pub history: History,
    /// Label version of each trace entry's address.
    pub versions: Vec<u32>,
    /// First trace entry of each row, when some rows hold two entries (`None`: row = entry).
    row_starts: Option<Vec<u32>>,
    /// Number of trace entries.
    entries: usize,
    /// Whether rows show their stream (`(stream N)` on a second line): PyTorch's viewer leaves
    /// it out when every trace entry of the file is on the default stream.
    pub show_stream: bool,
    /// Rows of block frees by address (each one ends a block version).
    block_frees: HashMap<u64, Vec<u32>>,
    /// Rows of segment frees and unmaps by address.
    segment_frees: HashMap<u64, Vec<u32>>,
    /// The text (`user_metadata`) of each `annotate` entry, by trace entry (ascending).
    pub annotations: Vec<(u32, String)>,
}

/// Whether an action is about segments (`s…` labels) rather than blocks (`b…`).
pub fn is_segment_action(a: Action) -> bool {
    matches!(a, Action::SegmentAlloc | Action::SegmentFree | Action::SegmentMap | Action::SegmentUnmap)
}

/// Whether trace entry `k` (a `free_completed`) joins the `free_requested` just before it.
fn joins_previous(t: &Trace, k: usize) -> bool {
    k > 0
        && t.action.get(k) == Some(&Action::FreeCompleted)
        && t.action.get(k - 1) == Some(&Action::FreeRequested)
        && t.addr.get(k) == t.addr.get(k - 1)
}

impl HistoryData {
    /// Builds the history and versions of device `device_pos`.
    pub fn build(snap: &Snapshot, device_pos: usize) -> HistoryData {
        let history = History::build(snap, device_pos);
        let mut versions = Vec::new();
        let mut block_frees: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut segment_frees: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut row_starts = None;
        let mut entries = 0;
        let mut annotations = Vec::new();
        if let Some(dev) = snap.devices.get(device_pos) {
            let t = &dev.trace;
            entries = t.len();
            versions.reserve(t.len());
            for row in 0..t.len() {
                let a = t.action[row];
                let addr = t.addr[row];
                let (map, ends) = if is_segment_action(a) {
                    (&mut segment_frees, matches!(a, Action::SegmentFree | Action::SegmentUnmap))
                } else {
                    (&mut block_frees, matches!(a, Action::FreeCompleted | Action::Free))
                };
                if a == Action::Annotate {
                    annotations.push((row as u32, memviz_core::analysis::annotations::text_of(snap, device_pos, row)));
                }
                let rows = map.entry(addr).or_default();
                versions.push(rows.len() as u32);
                if ends {
                    rows.push(row as u32);
                }
            }
            if (1..t.len()).any(|k| joins_previous(t, k)) {
                row_starts = Some((0..t.len()).filter(|&k| !joins_previous(t, k)).map(|k| k as u32).collect());
            }
        }
        let show_stream = snap.devices.iter().any(|d| d.trace.stream.iter().any(|&s| s != 0));
        HistoryData { history, versions, row_starts, entries, show_stream, block_frees, segment_frees, annotations }
    }

    /// Number of list rows.
    pub fn rows(&self) -> usize {
        self.row_starts.as_ref().map_or(self.entries, Vec::len)
    }

    /// The trace entries of row `row`: (first, last); they differ for a joined `free`.
    pub fn entries_of(&self, row: usize) -> (usize, usize) {
        match &self.row_starts {
            None => (row, row),
            Some(starts) => {
                let first = starts.get(row).map_or(self.entries, |&s| s as usize);
                let next = starts.get(row + 1).map_or(self.entries, |&s| s as usize);
                (first, next.saturating_sub(1).max(first))
            }
        }
    }

    /// Version of a block at `addr` just after trace entry `k`.
    pub fn block_version(&self, addr: u64, k: usize) -> u32 {
        version_at(&self.block_frees, addr, k)
    }

    /// Version of a segment at `addr` just after trace entry `k`.
    pub fn segment_version(&self, addr: u64, k: usize) -> u32 {
        version_at(&self.segment_frees, addr, k)
    }
}

fn version_at(map: &HashMap<u64, Vec<u32>>, addr: u64, k: usize) -> u32 {
    map.get(&addr).map_or(0, |rows| rows.partition_point(|&r| (r as usize) <= k) as u32)
}

/// The stream line PyTorch's viewer adds under a row: a newline, 14 spaces, `(stream N)`, with
/// N the stream's number in order of first appearance (0 is the default stream).
fn stream_suffix(data: &HistoryData, stream: u32) -> String {
    if data.show_stream {
        format!("\n              (stream {stream})")
    } else {
        String::new()
    }
}

/// One row of the event list, as PyTorch's `formatEvent` writes it: the action padded to 14,
/// the address label padded to 18, the size, and the stream on a second line when streams are
/// shown.
pub fn event_text(t: &Trace, data: &HistoryData, row: usize) -> String {
    let (first, last) = data.entries_of(row);
    let Some(&a) = t.action.get(first) else {
        return String::new();
    };
    let a = if last > first { Action::Free } else { a };
    let size = t.size_bytes.get(first).copied().unwrap_or(0);
    let stream = t.stream.get(first).copied().unwrap_or(0);
    match a {
        Action::Oom => {
            let free = t.device_free_at(first).map_or_else(|| "unknown".to_string(), viewer_size);
            format!("OOM (requested {}, CUDA has {free} memory free){}", viewer_size(size), stream_suffix(data, stream))
        }
        Action::Snapshot => "snapshot".to_string(),
        Action::Annotate => {
            // The allocation it names (never an allocation itself) and its text.
            let addr = t.addr.get(first).copied().unwrap_or(0);
            let label = addr_label('b', addr, data.versions.get(first).copied().unwrap_or(0));
            let at = data.annotations.binary_search_by_key(&(first as u32), |a| a.0);
            let text = at.ok().and_then(|i| data.annotations.get(i)).map_or("", |a| a.1.as_str());
            format!("{:<14} {label:<18} {text:?}", a.name())
        }
        Action::UserDefined | Action::Unknown => a.name().to_string(),
        _ => {
            let prefix = if is_segment_action(a) { 's' } else { 'b' };
            let addr = t.addr.get(first).copied().unwrap_or(0);
            let label = addr_label(prefix, addr, data.versions.get(first).copied().unwrap_or(0));
            format!("{:<14} {:<18} {}{}", a.name(), label, viewer_size(size), stream_suffix(data, stream))
        }
    }
}

/// The trace entry a row is numbered by: its last (a joined `free` is two entries; the state
/// shown is after its `free_completed`, which is where the timeline draws it).
pub fn row_entry(data: &HistoryData, row: usize) -> usize {
    data.entries_of(row).1
}

/// The segment map's header: the totals after the selected row, which entry that is, and how
/// many entries the trace has (a count, apart from the position).
pub fn header_text(allocated_bytes: u64, reserved_bytes: u64, selected_entry: Option<usize>, entries: usize) -> String {
    let after = selected_entry.map_or_else(|| "no entry selected".to_string(), |k| format!("after entry {k}"));
    format!(
        "({} allocated / {} reserved) {after} · {}",
        viewer_size(allocated_bytes),
        viewer_size(reserved_bytes),
        crate::entries::count(entries, if entries == 1 { "entry" } else { "entries" })
    )
}

/// Frame lines of a stack (paths shortened), or the "no frames" explanation.
pub fn frames_text(snap: &Snapshot, stack: u32) -> String {
    // Paths shortened as the timeline's tooltip shortens them.
    let lines = stack_lines_with(snap, stack, crate::names::short_path);
    if lines.is_empty() {
        NO_FRAMES.to_string()
    } else {
        lines.join("\n")
    }
}

/// The text of a row under the pointer: the row (an annotation with its time) and its frames.
pub fn row_text(snap: &Snapshot, t: &Trace, data: &HistoryData, row: usize) -> String {
    let first = data.entries_of(row).0;
    let stack = t.stack.get(first).copied().unwrap_or(0);
    let when = match (t.action.get(first), t.time_us_at(first)) {
        (Some(Action::Annotate), Some(us)) => format!("annotated at {}\n", memviz_core::describe::utc_time(us)),
        _ => String::new(),
    };
    format!("{}\n{when}{}\n", event_text(t, data, row), frames_text(snap, stack))
}

/// The text of the selected row: `(allocated / reserved)`, the row and its frames.
pub fn selected_text(snap: &Snapshot, t: &Trace, data: &HistoryData, row: usize, st: &AllocatorState) -> String {
    format!(
        "({} allocated / {} reserved)\n{}",
        viewer_size(st.allocated_bytes()),
        viewer_size(st.reserved_bytes()),
        row_text(snap, t, data, row)
    )
}

/// A segment placed on the map (map units: bytes along a row).
#[derive(Clone, Debug, PartialEq)]
pub struct PlacedSegment {
    /// Start address.
    pub addr: u64,
    /// Row, 0 at the top.
    pub row: u32,
    /// Offset in the row, bytes.
    pub offset_bytes: f64,
    /// Size.
    pub size_bytes: u64,
}

/// A block placed on the map.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacedBlock {
    /// Address.
    pub addr: u64,
    /// Index into [`MapLayout::segments`].
    pub segment: usize,
    /// Offset in the row, bytes.
    pub offset_bytes: f64,
    /// Requested bytes (drawn in colour).
    pub requested_bytes: u64,
    /// Rounded size (the rest is drawn red).
    pub size_bytes: u64,
    /// Freed but pending (drawn red).
    pub pending_free: bool,
}

/// The segment map of one state, packed into rows as PyTorch's `MemoryView` does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MapLayout {
    /// Segments, by size then address.
    pub segments: Vec<PlacedSegment>,
    /// Blocks.
    pub blocks: Vec<PlacedBlock>,
    /// Number of rows.
    pub rows: u32,
    /// The largest segment (the width of a row), bytes.
    pub row_bytes: f64,
}

/// What the pointer is over on the map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapHit {
    /// A segment (index into [`MapLayout::segments`]).
    Segment(usize),
    /// A block's requested part.
    Block(usize),
    /// A block's rounding waste.
    Rounding(usize),
}

impl MapLayout {
    /// Packs the segments greedily into rows of the largest segment's width; sorted by size so
    /// the largest fills the last row by itself.
    pub fn build(st: &AllocatorState) -> MapLayout {
        let mut segs: Vec<(u64, u64)> = st.segments.values().map(|s| (s.addr, s.size_bytes)).collect();
        segs.sort_by_key(|&(a, s)| (s, a));
        let max = segs.last().map_or(0, |&(_, s)| s) as f64;
        let padding = max / 200.0;
        let mut out = MapLayout { row_bytes: max, ..MapLayout::default() };
        let mut row = 0u32;
        let mut cur = 0.0f64;
        let mut index: HashMap<u64, usize> = HashMap::with_capacity(segs.len());
        for &(addr, size) in &segs {
            if cur > 0.0 && cur + size as f64 > max {
                row += 1;
                cur = 0.0;
            }
            index.insert(addr, out.segments.len());
            out.segments.push(PlacedSegment { addr, row, offset_bytes: cur, size_bytes: size });
            cur += size as f64 + padding;
        }
        out.rows = if segs.is_empty() { 0 } else { row + 1 };
        for (&addr, b) in &st.blocks {
            let Some(seg) = st.segment_of(addr) else {
                continue;
            };
            let Some(&si) = index.get(&seg.addr) else {
                continue;
            };
            let s = &out.segments[si];
            out.blocks.push(PlacedBlock {
                addr,
                segment: si,
                offset_bytes: s.offset_bytes + (addr - seg.addr) as f64,
                requested_bytes: b.requested_bytes.min(b.size_bytes.max(b.requested_bytes)),
                size_bytes: b.size_bytes.max(b.requested_bytes),
                pending_free: b.pending_free,
            });
        }
        out
    }

    /// What is at map position (`x_bytes` along a row, row `row_pos` as a fraction: the bar of
    /// row r covers `[r, r + 0.8)`). A block's rounding waste is drawn at least `min_bytes` wide
    /// (one pixel) on top of what follows it, and is hit where it is drawn.
    pub fn hit(&self, x_bytes: f64, row_pos: f64, min_bytes: f64) -> Option<MapHit> {
        if row_pos < 0.0 || row_pos.fract() > 0.8 {
            return None;
        }
        let row = row_pos as u32;
        let in_row = |b: &PlacedBlock| self.segments.get(b.segment).is_some_and(|s| s.row == row);
        for (i, b) in self.blocks.iter().enumerate() {
            if !in_row(b) || b.size_bytes <= b.requested_bytes {
                continue;
            }
            let m = b.offset_bytes + b.requested_bytes as f64;
            let w = ((b.size_bytes - b.requested_bytes) as f64).max(min_bytes);
            if x_bytes >= m && x_bytes < m + w {
                return Some(MapHit::Rounding(i));
            }
        }
        for (i, b) in self.blocks.iter().enumerate() {
            if in_row(b) && x_bytes >= b.offset_bytes && x_bytes < b.offset_bytes + b.requested_bytes as f64 {
                return Some(MapHit::Block(i));
            }
        }
        self.segments
            .iter()
            .position(|s| s.row == row && x_bytes >= s.offset_bytes && x_bytes < s.offset_bytes + s.size_bytes as f64)
            .map(MapHit::Segment)
    }

    /// The text for what the pointer is over.
    pub fn hit_text(&self, snap: &Snapshot, data: &HistoryData, st: &AllocatorState, k: usize, hit: MapHit) -> String {
        // Streams by number in order of first appearance, as PyTorch's viewer numbers them.
        let stream_of = |addr: u64| st.segment_of(addr).map_or(0, |s| s.stream);
        let pool_of = |addr: u64| {
            st.segment_of(addr)
                .and_then(|s| snap.pools.get(s.pool as usize).copied())
                .filter(|&(a, b)| (a, b) != (0, 0))
                .map_or_else(String::new, |(a, b)| format!(", pool_id ({a}, {b})"))
        };
        match hit {
            MapHit::Segment(i) => {
                let Some(s) = self.segments.get(i) else {
                    return String::new();
                };
                let (mut occupied, mut internal) = (0u64, 0u64);
                for b in self.blocks.iter().filter(|b| b.segment == i) {
                    occupied += b.requested_bytes;
                    internal += b.size_bytes - b.requested_bytes;
                }
                let free = s.size_bytes.saturating_sub(occupied);
                // Printed only when some space is lost to rounding, unrounded, as PyTorch does.
                let pct = if internal > 0 && free > 0 {
                    format!(" ({}% internal)", internal as f64 / free as f64 * 100.0)
                } else {
                    String::new()
                };
                let stack = st.segments.get(&s.addr).map_or(0, |r| r.stack);
                format!(
                    "{}: segment {} allocated, {} free{pct} (stream {}{})\n{}\n",
                    addr_label('s', s.addr, data.segment_version(s.addr, k)),
                    viewer_size(s.size_bytes),
                    viewer_size(free),
                    stream_of(s.addr),
                    pool_of(s.addr),
                    frames_text(snap, stack)
                )
            }
            MapHit::Block(i) => {
                let Some(b) = self.blocks.get(i) else {
                    return String::new();
                };
                let stack = st.blocks.get(&b.addr).map_or(0, |l| l.stack);
                format!(
                    "{} {} allocation{} (stream {}{})\n{}\n",
                    addr_label('b', b.addr, data.block_version(b.addr, k)),
                    viewer_size(b.requested_bytes),
                    if b.pending_free { " (block freed but waiting due to record_stream)" } else { "" },
                    stream_of(b.addr),
                    pool_of(b.addr),
                    frames_text(snap, stack)
                )
            }
            MapHit::Rounding(i) => {
                let Some(b) = self.blocks.get(i) else {
                    return String::new();
                };
                let stack = st.blocks.get(&b.addr).map_or(0, |l| l.stack);
                format!(
                    "Free space lost due to rounding {} (stream {})\n{}\n",
                    viewer_size(b.size_bytes - b.requested_bytes),
                    stream_of(b.addr),
                    frames_text(snap, stack)
                )
            }
        }
    }
}

/// Java's `String.hashCode`, which PyTorch's viewer uses (on the decimal address) to colour blocks.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c as i16)))
}

/// Palette index of a block: `|hash(String(addr))| % 10`.
pub fn block_colour(addr: u64) -> usize {
    (java_string_hash(&addr.to_string()).unsigned_abs() % 10) as usize
}

/// Rows of a virtualized list of `n` rows of `row_px` in a viewport of `view_px` scrolled to
/// `scroll_px`, where the scrollable height is capped at `max_px` (browsers limit element
/// heights): (scroll height, first row shown, where that row is drawn relative to the content
/// top, rows to draw).
pub fn virtual_rows(n: usize, row_px: f64, view_px: f64, scroll_px: f64, max_px: f64) -> (f64, usize, f64, usize) {
    let full = n as f64 * row_px;
    let height = full.min(max_px);
    let visible = (view_px / row_px).ceil() as usize + 1;
    if n == 0 {
        return (0.0, 0, 0.0, 0);
    }
    let max_scroll = (height - view_px).max(0.0);
    let scroll = crate::viewport::clamp_px(scroll_px, 0.0, max_scroll);
    let first_f = if full <= max_px || max_scroll <= 0.0 {
        scroll / row_px
    } else {
        scroll / max_scroll * ((n as f64) - view_px / row_px).max(0.0)
    };
    let first = (first_f.floor() as usize).min(n - 1);
    let frac_px = (first_f - first as f64) * row_px;
    let count = visible.min(n - first);
    (height, first, scroll - frac_px, count)
}

/// The scroll position that shows row `row` (scrolling as little as possible from `scroll_px`).
pub fn scroll_to_show(n: usize, row_px: f64, view_px: f64, scroll_px: f64, max_px: f64, row: usize) -> f64 {
    let full = n as f64 * row_px;
    let height = full.min(max_px);
    let max_scroll = (height - view_px).max(0.0);
    if full <= max_px || max_scroll <= 0.0 {
        let top = row as f64 * row_px;
        if top < scroll_px {
            top
        } else if top + row_px > scroll_px + view_px {
            (top + row_px - view_px).max(0.0)
        } else {
            scroll_px
        }
    } else {
        let rows_in_view = view_px / row_px;
        let span = ((n as f64) - rows_in_view).max(1.0);
        let (first, _) = {
            let (_, f, _, c) = virtual_rows(n, row_px, view_px, scroll_px, max_px);
            (f, c)
        };
        if row >= first && (row as f64) + 1.0 <= first as f64 + rows_in_view - 1.0 {
            scroll_px
        } else {
            let target = crate::viewport::clamp_px(row as f64 - rows_in_view / 2.0, 0.0, span);
            target / span * max_scroll
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memviz_core::state::{AllocatorState, LiveBlock, SegmentRange};

    fn seg(addr: u64, size: u64) -> SegmentRange {
        SegmentRange { addr, size_bytes: size, stream: 0, pool: 0, expandable: false, stack: 0 }
    }

    #[test]
    fn rows_are_numbered_by_their_trace_entry_and_the_header_counts_apart() {
        let snap = crate::entries::tests::snapshot_of(&[
            ("alloc", 0x100, 1024),
            ("free_requested", 0x100, 1024),
            ("free_completed", 0x100, 1024),
            ("alloc", 0x200, 512),
        ]);
        let data = HistoryData::build(&snap, 0);
        // The joined free is one row of two entries, numbered by its last.
        assert_eq!(data.rows(), 3);
        assert_eq!((0..3).map(|r| row_entry(&data, r)).collect::<Vec<_>>(), vec![0, 2, 3]);
        assert_eq!(
            header_text(512, 2_097_152, Some(3), 5593),
            "(512.0B (512 bytes) allocated / 2.0MiB (2097152 bytes) reserved) after entry 3 · 5,593 entries"
        );
        assert!(header_text(0, 0, None, 1).ends_with("no entry selected · 1 entry"));
    }

    #[test]
    fn java_hash_matches_javascript() {
        // "139724914106368".hashCode() computed the Java way.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("ab"), 97 * 31 + 98);
        assert!(block_colour(139_724_914_106_368) < 10);
    }

    #[test]
    fn rows_pack_by_size_with_the_largest_last() {
        let mut st = AllocatorState::default();
        for (a, s) in [(0x1000, 100), (0x2000, 60), (0x3000, 30), (0x4000, 20)] {
            st.segments.insert(a, seg(a, s));
        }
        st.blocks.insert(0x2000, LiveBlock { size_bytes: 40, requested_bytes: 30, pending_free: false, stack: 0 });
        let m = MapLayout::build(&st);
        assert_eq!(m.row_bytes, 100.0);
        // 20, 30 (at 20.5), then 60 would pass 100: new row; then 100 alone.
        let rows: Vec<(u64, u32)> = m.segments.iter().map(|s| (s.size_bytes, s.row)).collect();
        assert_eq!(rows, vec![(20, 0), (30, 0), (60, 1), (100, 2)]);
        assert_eq!(m.rows, 3);
        assert_eq!(m.blocks.len(), 1);
        let b = &m.blocks[0];
        assert_eq!(m.hit(b.offset_bytes + 1.0, 1.2, 0.0), Some(MapHit::Block(0)));
        assert_eq!(m.hit(b.offset_bytes + 35.0, 1.2, 0.0), Some(MapHit::Rounding(0)));
        assert_eq!(m.hit(b.offset_bytes + 50.0, 1.2, 0.0), Some(MapHit::Segment(2)));
        assert_eq!(m.hit(b.offset_bytes + 50.0, 1.9, 0.0), None);
        // Waste narrower than a pixel is hit where its pixel is drawn.
        assert_eq!(m.hit(b.offset_bytes + 45.0, 1.2, 20.0), Some(MapHit::Rounding(0)));
        assert_eq!(m.hit(b.offset_bytes + 29.0, 1.2, 20.0), Some(MapHit::Block(0)));
    }

    #[test]
    fn virtual_rows_cover_the_view() {
        let (h, first, top, count) = virtual_rows(1_000_000, 18.0, 360.0, 18.0 * 500.0, 1e7);
        assert_eq!(h, 1e7);
        assert!(first > 0 && count >= 20);
        assert!(top >= 0.0);
        let (h, first, top, count) = virtual_rows(100, 18.0, 360.0, 36.0, 1e7);
        assert_eq!((h, first, top, count), (1800.0, 2, 36.0, 21));
        // The last row is reachable.
        let (_, first, _, count) = virtual_rows(1_000_000, 18.0, 360.0, 1e9, 1e7);
        assert_eq!(first + count, 1_000_000);
        let s = scroll_to_show(1_000_000, 18.0, 360.0, 0.0, 1e7, 999_999);
        let (_, first, _, count) = virtual_rows(1_000_000, 18.0, 360.0, s, 1e7);
        assert!((first..first + count).contains(&999_999));
        assert_eq!(scroll_to_show(100, 18.0, 360.0, 0.0, 1e7, 50), 51.0 * 18.0 - 360.0);
    }

    #[test]
    fn no_rows_show_nothing_and_scroll_nowhere() {
        assert_eq!(virtual_rows(0, 18.0, 360.0, 500.0, 1e7), (0.0, 0, 0.0, 0));
        assert_eq!(scroll_to_show(0, 18.0, 360.0, 0.0, 1e7, 0), 0.0);
    }

    #[test]
    fn a_list_shorter_than_the_view_never_scrolls() {
        let (h, first, top, count) = virtual_rows(5, 18.0, 360.0, 1e6, 1e7);
        assert_eq!((h, first, top, count), (90.0, 0, 0.0, 5));
        assert_eq!(scroll_to_show(5, 18.0, 360.0, 0.0, 1e7, 4), 0.0);
    }

    #[test]
    fn a_negative_or_hidden_view_breaks_nothing() {
        let (_, first, _, count) = virtual_rows(1000, 18.0, 0.0, -50.0, 1e7);
        assert_eq!(first, 0);
        assert!(count >= 1);
        let s = scroll_to_show(1_000_000, 18.0, 0.0, 0.0, 1e7, 500_000);
        assert!(s.is_finite() && s >= 0.0);
    }

    #[test]
    fn scrolling_to_a_row_above_brings_it_to_the_top() {
        let s = scroll_to_show(100, 18.0, 360.0, 900.0, 1e7, 10);
        assert_eq!(s, 180.0);
        // A row already in view keeps the scroll.
        assert_eq!(scroll_to_show(100, 18.0, 360.0, 180.0, 1e7, 12), 180.0);
    }

    #[test]
    fn every_block_colour_is_in_the_palette() {
        for addr in [0, 1, 0x7f00_0000_0000, u64::MAX, 139_724_914_106_368] {
            assert!(block_colour(addr) < 10);
        }
        // The same address, the same colour.
        assert_eq!(block_colour(0x7f00_1234_0000), block_colour(0x7f00_1234_0000));
    }

    #[test]
    fn segment_actions_are_told_from_block_actions() {
        use memviz_core::snapshot::Action;
        assert!(is_segment_action(Action::SegmentAlloc));
        assert!(is_segment_action(Action::SegmentFree));
        assert!(!is_segment_action(Action::Alloc));
        assert!(!is_segment_action(Action::FreeCompleted));
    }

    fn demo_history() -> (Snapshot, HistoryData) {
        static DEMO: &[u8] = include_bytes!("../../../tests/data/real/gpt_amp_annotated.pickle");
        let snap = memviz_core::load(DEMO).unwrap_or_else(|e| panic!("the demo loads: {e}"));
        let data = HistoryData::build(&snap, 0);
        (snap, data)
    }

    #[test]
    fn every_entry_has_a_version_and_rows_never_outnumber_entries() {
        let (snap, data) = demo_history();
        let t = &snap.devices[0].trace;
        assert_eq!(data.versions.len(), t.len());
        assert!(data.rows() <= t.len());
        assert!(data.rows() > 0);
    }

    /// The History's frames are shortened as the timeline's tooltip shortens them: no
    /// `site-packages/` prefix where a stack holds one.
    #[test]
    fn history_frames_shorten_installed_paths() {
        let (snap, data) = demo_history();
        let t = &snap.devices[0].trace;
        let long = |s: u32| memviz_core::format::stack_lines(&snap, s).iter().any(|l| l.contains("site-packages/"));
        let row = (0..data.rows()).find(|&r| long(t.stack[data.entries_of(r).0]));
        let Some(row) = row else { panic!("the demo has a stack through site-packages") };
        let text = row_text(&snap, t, &data, row);
        assert!(!text.contains("site-packages/"), "{text}");
        assert!(text.contains("torch/"), "{text}");
    }

    #[test]
    fn a_free_request_and_its_completion_share_a_row() {
        let (snap, data) = demo_history();
        let t = &snap.devices[0].trace;
        let pairs = (1..t.len()).filter(|&k| joins_previous(t, k)).count();
        assert_eq!(data.rows(), t.len() - pairs);
    }

    /// An `annotate` row names the allocation and its text; its hover text gives its time.
    #[test]
    fn annotate_rows_name_their_allocation_and_text() {
        let path = format!("{}/../../tests/data/synth/annotate_entries.pickle", env!("CARGO_MANIFEST_DIR"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let snap = memviz_core::load(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
        let data = HistoryData::build(&snap, 0);
        let t = &snap.devices[0].trace;
        let rows: Vec<usize> =
            (0..data.rows()).filter(|&r| t.action[data.entries_of(r).0] == Action::Annotate).collect();
        assert_eq!(rows.len(), 3);
        let text = event_text(t, &data, rows[0]);
        assert!(
            text.starts_with("annotate ") && text.contains(" b") && text.ends_with("\"kv-cache layer 3\""),
            "{text}"
        );
        let hover = row_text(&snap, t, &data, rows[2]);
        assert!(hover.contains("embedding weight") && hover.contains("annotated at "), "{hover}");
        assert!(hover.contains("_annotate_memory"), "with its frames: {hover}");
    }

    #[test]
    fn each_row_reads_like_pytorchs_event_list() {
        let (snap, data) = demo_history();
        let t = &snap.devices[0].trace;
        for row in [0, data.rows() / 2, data.rows() - 1] {
            let text = event_text(t, &data, row);
            let action = text.split_whitespace().next().unwrap_or_default();
            assert!(
                [
                    "alloc",
                    "free",
                    "free_requested",
                    "free_completed",
                    "segment_alloc",
                    "segment_free",
                    "segment_map",
                    "segment_unmap",
                    "snapshot",
                    "OOM"
                ]
                .contains(&action),
                "row {row}: {text}"
            );
        }
    }

    #[test]
    fn a_selected_row_says_what_the_allocator_held_then() {
        let (snap, data) = demo_history();
        let t = &snap.devices[0].trace;
        let row = data.rows() - 1;
        let state = data.history.state_after(&snap, Some(t.len() - 1));
        let text = selected_text(&snap, t, &data, row, &state);
        assert!(text.contains(&event_text(t, &data, row)), "{text}");
        assert!(text.contains("allocated /") && text.contains("reserved"), "{text}");
        assert!(!row_text(&snap, t, &data, row).is_empty());
    }
}
