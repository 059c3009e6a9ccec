//! Analyses that answer "why is my memory this high?": the live set at a moment ([`live`]),
//! iterations, growth and memory carried across iterations ([`growth`]), out-of-memory
//! explanations ([`oom`]), fragmentation over time ([`fragmentation`]), two snapshots side by side
//! ([`compare`]), memory by category ([`categories`]), exports ([`export`]), and findings about
//! the recording and stalled frees ([`recording`]), the allocator's unused cache
//! ([`cache`]); `annotate` entries attached to allocations
//! ([`annotations`]); one grouping of allocations for all of them ([`grouping`]) and each
//! group's bytes over time ([`group_timeline`]); the runs of entries that share a metadata value
//! ([`metadata_runs`]); flame graphs of the live set or of bytes ×
//! lifetime ([`flame`]).
//!
//! Everything starts from a [`Replay`] of one device: every allocation lifetime (with the same
//! indices as [`crate::timeline::Layout::elements`], so the page can highlight what an analysis
//! names) and the live requested bytes after every trace entry. Sizes are requested bytes, as on
//! the timeline and in [`crate::info`], unless a name says otherwise.

pub mod annotations;
pub mod cache;
pub mod categories;
pub mod categories_join;
pub mod compare;
pub mod compare_verdict;
pub mod export;
mod finding;
pub mod flame;
pub mod fragmentation;
pub mod group_timeline;
pub mod grouping;
pub mod growth;
pub mod live;
pub mod metadata_runs;
pub mod oom;
pub mod recording;

use std::fmt;

use crate::format::frame_visible;
use crate::snapshot::{Action, BlockState, Frame, Snapshot};
use crate::timeline::Origin;

/// What an analysis could not do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnalysisError {
    /// The snapshot has no device at this position (or no device with this index).
    NoDevice(String),
    /// An entry index past the end of the trace.
    EntryOutOfRange {
        /// The entry asked for.
        entry: u64,
        /// Entries in the trace.
        entries: usize,
    },
    /// A moment that is not `peak`, `start`, `end` or an entry number.
    BadMoment(String),
    /// A category timeline file that cannot be read.
    BadTimeline(String),
    /// A grouping that is not one of [`grouping::GroupBy`]'s.
    BadGroupBy(String),
}

impl fmt::Display for AnalysisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalysisError::NoDevice(s) => write!(f, "{s}"),
            AnalysisError::EntryOutOfRange { entry, entries } => {
                write!(
                    f,
                    "entry {entry} is out of range: the trace has {entries} entries (0..{})",
                    entries.saturating_sub(1)
                )
            }
            AnalysisError::BadMoment(s) => write!(f, "'{s}' is not a moment: use peak, start, end or an entry number"),
            AnalysisError::BadTimeline(s) | AnalysisError::BadGroupBy(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for AnalysisError {}

/// Picks a device: by index as written in the file, or the default one (the longest trace).
/// Returns its position in [`Snapshot::devices`].
pub fn device_position(snap: &Snapshot, device_index: Option<i64>) -> Result<usize, AnalysisError> {
    match device_index {
        Some(i) => snap.devices.iter().position(|d| d.index == i).ok_or_else(|| {
            let have: Vec<String> = snap.devices.iter().map(|d| d.index.to_string()).collect();
            AnalysisError::NoDevice(if have.is_empty() {
                format!("device {i} not found: the snapshot has no devices")
            } else {
                format!("device {i} not found; devices: {}", have.join(", "))
            })
        }),
        None => snap.default_device().ok_or_else(|| AnalysisError::NoDevice("the snapshot has no devices".into())),
    }
}

/// A moment of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// Where live bytes are highest (the first entry reaching the peak).
    Peak,
    /// Before the first entry.
    Start,
    /// After the last entry.
    End,
    /// Just after this entry (trace row).
    Entry(u32),
}

impl Moment {
    /// Reads `peak`, `start`, `end` or an entry number.
    pub fn parse(s: &str) -> Result<Moment, AnalysisError> {
        match s.trim() {
            "peak" => Ok(Moment::Peak),
            "start" => Ok(Moment::Start),
            "end" => Ok(Moment::End),
            t => t.parse::<u32>().map(Moment::Entry).map_err(|_| AnalysisError::BadMoment(s.to_string())),
        }
    }

    /// The moment under a step of a timeline layout (the last event at or before it), for the
    /// page: `Moment::at_step(&layout, step)`.
    pub fn at_step(layout: &crate::timeline::Layout, step: f64) -> Moment {
        layout.row_at(step).map_or(Moment::Start, Moment::Entry)
    }

    /// The trace row after which the moment lies (`None`: before the first entry).
    pub fn resolve(self, replay: &Replay) -> Result<Option<u32>, AnalysisError> {
        match self {
            Moment::Peak => Ok(replay.peak_row),
            Moment::Start => Ok(None),
            Moment::End => Ok(replay.rows.checked_sub(1).map(|r| r as u32)),
            Moment::Entry(e) => {
                if (e as usize) < replay.rows {
                    Ok(Some(e))
                } else {
                    Err(AnalysisError::EntryOutOfRange { entry: u64::from(e), entries: replay.rows })
                }
            }
        }
    }
}

/// One allocation lifetime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Life {
    /// Address.
    pub addr: u64,
    /// Requested bytes.
    pub size_bytes: u64,
    /// Stack of the alloc (or of the free, or of the final block).
    pub stack: u32,
    /// Stream index.
    pub stream: u32,
    /// Trace row of the alloc (`None`: live before the trace).
    pub alloc_row: Option<u32>,
    /// Trace row of the free (`None`: still live at the end).
    pub free_row: Option<u32>,
    /// Where it came from.
    pub origin: Origin,
}

impl Life {
    /// Whether the allocation is live just after trace row `row` (`None`: before the first entry).
    pub fn live_after(&self, row: Option<u32>) -> bool {
        let allocated = match (self.alloc_row, row) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(a), Some(r)) => a <= r,
        };
        let not_freed = match (self.free_row, row) {
            (None, _) => true,
            (Some(_), None) => true,
            (Some(f), Some(r)) => f > r,
        };
        allocated && not_freed
    }

    /// Whether the allocation stays live to the end of the trace.
    pub fn never_freed(&self) -> bool {
        self.free_row.is_none()
    }
}

/// Every allocation lifetime of one device and the live bytes after every trace entry.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    /// Position in [`Snapshot::devices`].
    pub device_pos: usize,
    /// Device index as in the file.
    pub device: i64,
    /// Lifetimes, indexed like [`crate::timeline::Layout::elements`] in allocation mode.
    pub lives: Vec<Life>,
    /// Entries in the trace.
    pub rows: usize,
    /// Live requested bytes before the first entry.
    pub initial_bytes: u64,
    /// Live requested bytes just after each entry.
    pub live_after_bytes: Vec<u64>,
    /// Highest live bytes (the initial bytes included).
    pub peak_bytes: u64,
    /// First entry at which the peak is reached (`None`: before the first entry).
    pub peak_row: Option<u32>,
}

/// Live requested bytes before the first of `rows` entries and just after each, from the
/// lifetimes: a difference array, summed in place.
///
/// Each lifetime is freed (if at all) after it is allocated, as [`Replay::build`] pairs them, so
/// where all their bytes together fit in 64 bits (every real snapshot) every sum along the way
/// lies between 0 and that total, and 64-bit arithmetic that wraps is exact: one array of 8
/// bytes a row is made. Otherwise the sums are 128-bit, clamped to 0..=`u64::MAX`.
fn live_after_rows(lives: &[Life], rows: usize) -> (u64, Vec<u64>) {
    let total = lives.iter().try_fold(0u64, |t, l| t.checked_add(l.size_bytes));
    if total.is_none() {
        return live_after_rows_wide(lives, rows);
    }
    let mut after = vec![0u64; rows];
    let mut initial = 0u64;
    for l in lives {
        let s = l.size_bytes;
        match l.alloc_row.and_then(|a| after.get_mut(a as usize)) {
            Some(d) => *d = d.wrapping_add(s),
            None if l.alloc_row.is_none() => initial = initial.wrapping_add(s),
            None => {}
        }
        if let Some(d) = l.free_row.and_then(|f| after.get_mut(f as usize)) {
            *d = d.wrapping_sub(s);
        }
    }
    let mut cur = initial;
    for d in &mut after {
        cur = cur.wrapping_add(*d);
        *d = cur;
    }
    (initial, after)
}

/// [`live_after_rows`] in 128-bit sums, for bytes beyond 64 bits together (hostile sizes).
fn live_after_rows_wide(lives: &[Life], rows: usize) -> (u64, Vec<u64>) {
    let mut delta = vec![0i128; rows];
    let mut initial: i128 = 0;
    for l in lives {
        let s = i128::from(l.size_bytes);
        match l.alloc_row {
            Some(a) => {
                if let Some(d) = delta.get_mut(a as usize) {
                    *d += s;
                }
            }
            None => initial += s,
        }
        if let Some(f) = l.free_row {
            if let Some(d) = delta.get_mut(f as usize) {
                *d -= s;
            }
        }
    }
    let clamp = |x: i128| -> u64 { x.clamp(0, i128::from(u64::MAX)) as u64 };
    let mut cur = initial;
    let after = delta
        .iter()
        .map(|d| {
            cur += d;
            clamp(cur)
        })
        .collect();
    (clamp(initial), after)
}

impl Replay {
    /// Pairs allocs and frees of device `device_pos` into lifetimes, adds the allocations of the
    /// final state that the trace never saw, and sums live bytes after every entry. O(n).
    pub fn build(snap: &Snapshot, device_pos: usize) -> Replay {
        let mut r = Replay { device_pos, ..Replay::default() };
        let Some(dev) = snap.devices.get(device_pos) else { return r };
        r.device = dev.index;
        let t = &dev.trace;
        let n = t.len();
        r.rows = n;
        let mut open: rustc_hash::FxHashMap<u64, u32> = rustc_hash::FxHashMap::default();
        // A lifetime per alloc made in one step: grown by doubling, a 1M-entry trace's lives
        // (tens of MB) were copied on the way and left their old buffers behind.
        r.lives.reserve(t.action.iter().filter(|&&a| a == Action::Alloc).count());
        for row in 0..n {
            let Some(&a) = t.action.get(row) else { continue };
            if !matches!(a, Action::Alloc | Action::FreeCompleted | Action::Free) {
                continue;
            }
            let addr = t.addr.get(row).copied().unwrap_or(0);
            let size = t.size_bytes.get(row).copied().unwrap_or(0);
            let stack = t.stack.get(row).copied().unwrap_or(0);
            let stream = t.stream.get(row).copied().unwrap_or(0);
            if a == Action::Alloc {
                let e = r.lives.len() as u32;
                r.lives.push(Life {
                    addr,
                    size_bytes: size,
                    stack,
                    stream,
                    alloc_row: Some(row as u32),
                    free_row: None,
                    origin: Origin::Traced,
                });
                open.insert(addr, e);
            } else {
                match open.remove(&addr) {
                    Some(e) => {
                        if let Some(l) = r.lives.get_mut(e as usize) {
                            l.free_row = Some(row as u32);
                        }
                    }
                    None => r.lives.push(Life {
                        addr,
                        size_bytes: size,
                        stack,
                        stream,
                        alloc_row: None,
                        free_row: Some(row as u32),
                        origin: Origin::FreedWithoutAlloc,
                    }),
                }
            }
        }
        for s in snap.segments.iter().filter(|s| s.device == dev.index) {
            for b in snap.segment_blocks(s) {
                if b.state == BlockState::ActiveAllocated && !open.contains_key(&b.address) {
                    r.lives.push(Life {
                        addr: b.address,
                        size_bytes: b.requested_size,
                        stack: b.stack,
                        stream: s.stream,
                        alloc_row: None,
                        free_row: None,
                        origin: Origin::Ghost,
                    });
                }
            }
        }
        r.sum_lives();
        r
    }

    /// [`Replay::build`] read off a layout of the same device in [`Mode::Allocations`], whose
    /// elements are the same lifetimes in the same order (it pairs the trace the same way): no
    /// map of open addresses. `None` for layouts of other modes.
    ///
    /// [`Mode::Allocations`]: crate::timeline::Mode::Allocations
    pub fn from_layout(snap: &Snapshot, device_pos: usize, layout: &crate::timeline::Layout) -> Option<Replay> {
        if layout.options.mode != crate::timeline::Mode::Allocations {
            return None;
        }
        let mut r = Replay { device_pos, ..Replay::default() };
        let Some(dev) = snap.devices.get(device_pos) else { return Some(r) };
        r.device = dev.index;
        r.rows = dev.trace.len();
        r.lives = layout
            .elements
            .iter()
            .map(|e| Life {
                addr: e.addr,
                size_bytes: e.size_bytes,
                stack: e.stack,
                stream: e.stream,
                alloc_row: e.alloc_row,
                free_row: e.free_row,
                origin: e.origin,
            })
            .collect();
        r.sum_lives();
        Some(r)
    }

    /// The live bytes after every row and the peak, from the lifetimes.
    fn sum_lives(&mut self) {
        let (initial, after) = live_after_rows(&self.lives, self.rows);
        self.initial_bytes = initial;
        self.peak_bytes = initial;
        self.peak_row = None;
        for (row, &v) in after.iter().enumerate() {
            if v > self.peak_bytes {
                self.peak_bytes = v;
                self.peak_row = Some(row as u32);
            }
        }
        self.live_after_bytes = after;
    }

    /// Live requested bytes just after `row` (`None`: before the first entry).
    pub fn live_at(&self, row: Option<u32>) -> u64 {
        match row {
            None => self.initial_bytes,
            Some(r) => self.live_after_bytes.get(r as usize).copied().unwrap_or(self.initial_bytes),
        }
    }

    /// Indices of the lifetimes live just after `row`, in index order.
    pub fn live_elements(&self, row: Option<u32>) -> Vec<u32> {
        (0..self.lives.len() as u32)
            .filter(|&i| self.lives.get(i as usize).is_some_and(|l| l.live_after(row)))
            .collect()
    }

    /// The highest live bytes within rows `[a, b)` and the first row reaching it.
    pub fn peak_between(&self, a: u32, b: u32) -> Option<(u32, u64)> {
        let hi = (b as usize).min(self.live_after_bytes.len());
        let lo = (a as usize).min(hi);
        let mut best: Option<(u32, u64)> = None;
        for (i, &v) in self.live_after_bytes.get(lo..hi).unwrap_or(&[]).iter().enumerate() {
            if best.is_none_or(|(_, bv)| v > bv) {
                best = Some(((lo + i) as u32, v));
            }
        }
        best
    }
}

/// Time of a trace row, if recorded.
pub fn time_of_row(snap: &Snapshot, device_pos: usize, row: Option<u32>) -> Option<i64> {
    let r = row?;
    snap.devices.get(device_pos)?.trace.time_us_at(r as usize)
}

/// Visible frames of a stack, innermost first (PyTorch's filter: interpreter noise hidden).
pub fn visible_frames<'a>(snap: &'a Snapshot, stack: u32) -> impl Iterator<Item = &'a Frame> + 'a {
    snap.stack_frames(stack).filter(move |f| frame_visible(snap.strings.get(f.name), snap.strings.get(f.filename)))
}

/// Whether a frame is a source frame (Python, TorchScript, inductor): it has a line number.
pub fn is_source_frame(f: &Frame) -> bool {
    f.line > 0
}

/// C++ frames of the allocator and of tensor creation, which say nothing about who allocated.
fn is_allocator_internal(name: &str) -> bool {
    const INTERNAL: [&str; 9] = [
        "CachingAllocator",
        "at::detail::empty",
        "at::native::empty",
        "empty_strided",
        "empty_cuda",
        "empty_generic",
        "create_out",
        "set_output_raw_strided",
        "TensorIteratorBase",
    ];
    INTERNAL.iter().any(|p| name.contains(p))
}

/// The frame that best says where an allocation comes from: the innermost visible source frame
/// (`file:line`); for stacks without one (C++ only, as in backward with `stacks="all"`), the
/// innermost autograd node (`...Backward0::apply`), else the innermost visible C++ frame outside
/// the allocator. `None` for stacks without frames.
pub fn site_frame(snap: &Snapshot, stack: u32) -> Option<u32> {
    site_frame_by(snap, stack, &mut |id| frame_class(snap, id))
}

/// [`site_frame`], each frame's class read from `classes` (filled as frames are met).
pub fn site_frame_cached(snap: &Snapshot, stack: u32, classes: &mut FrameClasses) -> Option<u32> {
    site_frame_by(snap, stack, &mut |id| classes.of(snap, id))
}

/// A frame seen by [`site_frame`] ([`frame_class`]).
const CLASS_KNOWN: u8 = 1;
/// Not left out of stacks as PyTorch's viewer leaves it ([`frame_visible`]).
const CLASS_VISIBLE: u8 = 2;
/// A source line ([`is_source_frame`]).
const CLASS_SOURCE: u8 = 4;
/// An autograd node (`autograd::generated::`).
const CLASS_AUTOGRAD: u8 = 8;
/// The allocator's or tensor creation's ([`is_allocator_internal`]).
const CLASS_INTERNAL: u8 = 16;

/// What [`site_frame`] asks of frame `id`: `CLASS_*` bits (0 for no such frame).
fn frame_class(snap: &Snapshot, id: u32) -> u8 {
    let Some(f) = snap.frames.get(id as usize) else { return 0 };
    let name = snap.strings.get(f.name);
    let mut c = CLASS_KNOWN;
    if frame_visible(name, snap.strings.get(f.filename)) {
        c |= CLASS_VISIBLE;
    }
    if is_source_frame(f) {
        c |= CLASS_SOURCE;
    }
    if name.contains("autograd::generated::") {
        c |= CLASS_AUTOGRAD;
    }
    if is_allocator_internal(name) {
        c |= CLASS_INTERNAL;
    }
    c
}

/// Frames' classes for [`site_frame_cached`], computed once per frame: stacks share most of
/// their frames, and a class takes a score of substring searches.
#[derive(Clone, Debug, Default)]
pub struct FrameClasses {
    classes: Vec<u8>,
}

impl FrameClasses {
    fn of(&mut self, snap: &Snapshot, id: u32) -> u8 {
        let i = id as usize;
        if i >= snap.frames.len() {
            return 0;
        }
        if self.classes.len() < snap.frames.len() {
            self.classes.resize(snap.frames.len(), 0);
        }
        match self.classes.get(i) {
            Some(&c) if c != 0 => c,
            _ => {
                let c = frame_class(snap, id);
                if let Some(slot) = self.classes.get_mut(i) {
                    *slot = c;
                }
                c
            }
        }
    }
}

/// [`site_frame`] in one pass over the stack, with frames' classes from `class`.
fn site_frame_by(snap: &Snapshot, stack: u32, class: &mut impl FnMut(u32) -> u8) -> Option<u32> {
    let (mut autograd, mut outside, mut any) = (None, None, None);
    for &id in snap.stacks.get(stack) {
        let c = class(id);
        if c & CLASS_VISIBLE == 0 {
            continue;
        }
        if c & CLASS_SOURCE != 0 {
            return Some(id);
        }
        if autograd.is_none() && c & CLASS_AUTOGRAD != 0 {
            autograd = Some(id);
        }
        if outside.is_none() && c & CLASS_INTERNAL == 0 {
            outside = Some(id);
        }
        any.get_or_insert(id);
    }
    autograd.or(outside).or(any)
}

/// A path shortened for display: from `site-packages/` or `dist-packages/` on when present.
pub fn short_path(path: &str) -> &str {
    for marker in ["site-packages/", "dist-packages/"] {
        if let Some(i) = path.rfind(marker) {
            return path.get(i + marker.len()..).unwrap_or(path);
        }
    }
    path
}

/// A C++ function name without its parameter list (`ns::f(int, char)` → `ns::f`).
pub fn cpp_short_name(name: &str) -> &str {
    let trimmed = name.trim_end();
    let trimmed = trimmed.strip_suffix(" const").unwrap_or(trimmed);
    if !trimmed.ends_with(')') {
        return name;
    }
    let mut depth = 0i32;
    for (i, c) in trimmed.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return trimmed.get(..i).unwrap_or(name);
                }
            }
            _ => {}
        }
    }
    name
}

/// Short label of a frame: `file.py:12 (func)` for source frames, the short function name else.
pub fn frame_label(snap: &Snapshot, f: &Frame) -> String {
    let name = snap.strings.get(f.name);
    if is_source_frame(f) {
        format!("{}:{} ({})", short_path(snap.strings.get(f.filename)), f.line, name)
    } else {
        cpp_short_name(name).to_string()
    }
}

/// Label of a stack's site ([`site_frame`]), or `<no frames>`.
pub fn site_label(snap: &Snapshot, stack: u32) -> String {
    frame_or_none_label(snap, site_frame(snap, stack))
}

/// [`site_label`], frames' classes read from `classes` ([`site_frame_cached`]).
pub fn site_label_cached(snap: &Snapshot, stack: u32, classes: &mut FrameClasses) -> String {
    frame_or_none_label(snap, site_frame_cached(snap, stack, classes))
}

fn frame_or_none_label(snap: &Snapshot, frame: Option<u32>) -> String {
    match frame.and_then(|id| snap.frames.get(id as usize)) {
        Some(f) => frame_label(snap, f),
        None => NO_FRAMES_LABEL.to_string(),
    }
}

/// Label used for allocations recorded without frames.
pub const NO_FRAMES_LABEL: &str = "<no frames>";

/// Label of allocations without frames that were live before the trace began (parameters and
/// other tensors created before recording, or whose alloc left the ring buffer).
pub const BEFORE_TRACE_LABEL: &str = "<no frames, allocated before the trace>";

/// Whether a lifetime has no frames and was live before the trace began.
pub fn is_unrecorded(l: &Life) -> bool {
    l.alloc_row.is_none() && l.stack == 0
}

/// Site label of a lifetime: [`site_label`], or [`BEFORE_TRACE_LABEL`].
pub fn life_site_label(snap: &Snapshot, l: &Life) -> String {
    if is_unrecorded(l) {
        BEFORE_TRACE_LABEL.to_string()
    } else {
        site_label(snap, l.stack)
    }
}

/// Identity of a frame by content (file, line, function), for merging equal frames.
pub type FrameKey = (u32, i64, u32);

/// The content key of a frame.
pub fn frame_key(f: &Frame) -> FrameKey {
    (f.filename, f.line, f.name)
}

/// Bytes and counts of a group of allocations, largest first; ties by key order for stable output.
pub(crate) fn sort_groups<K: Ord>(v: &mut [(K, u64, usize)]) {
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

/// Human size used in analysis texts: `97.5 MiB`.
pub fn size_text(bytes: u64) -> String {
    crate::format::human_size(bytes as f64)
}

/// Signed human size: `+8 MiB`, `-1.2 KiB`.
pub fn signed_size_text(bytes: i128) -> String {
    let s = size_text(bytes.unsigned_abs().min(u128::from(u64::MAX)) as u64);
    if bytes < 0 {
        format!("-{s}")
    } else {
        format!("+{s}")
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
pub(crate) mod test_util {
    use std::path::PathBuf;

    use crate::Snapshot;

    /// A real snapshot by name (`tests/data/real`), loaded; panics when it
    /// is missing or does not load.
    pub fn fixture(name: &str) -> Snapshot {
        let p = fixture_path(name);
        let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        crate::load(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// The path of a real snapshot by name; panics when it is missing.
    pub fn fixture_path(name: &str) -> PathBuf {
        crate::test_fixtures::real_fixture(name)
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::timeline::{Layout, Mode, Options};

    #[test]
    fn lifetimes_match_the_timeline_elements() {
        for name in [
            "resnet50_fixed.pickle",
            "oom.pickle",
            "growth_leak.pickle",
            "multistream.pickle",
            "expandable_segments.pickle",
            "state_only.pickle",
        ] {
            let snap = test_util::fixture(name);
            for pos in 0..snap.devices.len() {
                let r = Replay::build(&snap, pos);
                let l = Layout::build(
                    &snap,
                    pos,
                    Options { max_entries: 0, mode: Mode::Allocations, hide_freed: false, focus_rows: None },
                );
                assert_eq!(r.lives.len(), l.elements.len(), "{name}");
                // Read off the layout (freed allocations hidden or not, Detail on a window or not),
                // it is the same replay.
                let window = Some((r.rows as u32 / 3, r.rows as u32 / 2));
                for (hide_freed, focus_rows) in [(false, None), (true, None), (false, window)] {
                    let o = Options { max_entries: 100, mode: Mode::Allocations, hide_freed, focus_rows };
                    let from = Replay::from_layout(&snap, pos, &Layout::build(&snap, pos, o)).expect("allocations");
                    assert_eq!(
                        (&from.lives, &from.live_after_bytes, from.initial_bytes, from.peak_bytes, from.peak_row),
                        (&r.lives, &r.live_after_bytes, r.initial_bytes, r.peak_bytes, r.peak_row),
                        "{name}"
                    );
                    assert_eq!((from.device, from.rows, from.device_pos), (r.device, r.rows, r.device_pos));
                }
                let segments = Layout::build(&snap, pos, Options { mode: Mode::Segments, ..Options::default() });
                assert!(Replay::from_layout(&snap, pos, &segments).is_none());
                for (a, b) in r.lives.iter().zip(&l.elements) {
                    assert_eq!(
                        (a.addr, a.size_bytes, a.stack, a.alloc_row, a.free_row, a.origin),
                        (b.addr, b.size_bytes, b.stack, b.alloc_row, b.free_row, b.origin),
                        "{name}"
                    );
                }
                let info = crate::info::info(&snap);
                assert_eq!(r.peak_bytes, info.devices[pos].peak_allocated_bytes, "{name}");
                assert_eq!(r.peak_row.map(|x| x as usize), info.devices[pos].peak_allocated_row, "{name}");
            }
        }
    }

    #[test]
    fn live_bytes_in_64_bits_equal_the_wide_sums_and_wide_sums_clamp() {
        let life = |size_bytes: u64, alloc_row: Option<u32>, free_row: Option<u32>| Life {
            addr: 0,
            size_bytes,
            stack: 0,
            stream: 0,
            alloc_row,
            free_row,
            origin: Origin::Traced,
        };
        // The lives of every fixture's devices, and a few made up: live before the trace and freed
        // in it, never freed, freed at its last row.
        let mut cases: Vec<(Vec<Life>, usize)> = Vec::new();
        for name in ["resnet50_fixed.pickle", "oom.pickle", "growth_leak.pickle", "multistream.pickle"] {
            let snap = test_util::fixture(name);
            for pos in 0..snap.devices.len() {
                let r = Replay::build(&snap, pos);
                cases.push((r.lives, r.rows));
            }
        }
        cases.push((vec![life(7, None, Some(2)), life(5, Some(0), None), life(3, Some(1), Some(3))], 4));
        for (lives, rows) in &cases {
            let fast = live_after_rows(lives, *rows);
            assert_eq!(fast, live_after_rows_wide(lives, *rows));
            assert_eq!(fast.1.len(), *rows);
        }
        assert_eq!(live_after_rows(&cases[cases.len() - 1].0, 4), (7, vec![12, 15, 8, 5]));
        // Beyond 64 bits together: the sums clamp at u64::MAX, and fall back as they are freed.
        let big = u64::MAX / 2 + 1;
        let lives = [life(big, Some(0), Some(2)), life(big, Some(1), None), life(1, None, None)];
        assert_eq!(live_after_rows(&lives, 3), (1, vec![big + 1, u64::MAX, big + 1]));
    }

    /// [`site_frame`]'s rule as it reads, in four passes: the innermost visible source frame,
    /// else autograd node, else frame outside the allocator, else visible frame.
    fn site_frame_by_passes(snap: &Snapshot, stack: u32) -> Option<u32> {
        let frame = |id: &&u32| snap.frames.get(**id as usize);
        let visible: Vec<u32> = snap
            .stacks
            .get(stack)
            .iter()
            .filter(|id| {
                frame(id).is_some_and(|f| frame_visible(snap.strings.get(f.name), snap.strings.get(f.filename)))
            })
            .copied()
            .collect();
        let name = |id: &&u32| frame(id).map_or("", |f| snap.strings.get(f.name));
        visible
            .iter()
            .find(|id| frame(id).is_some_and(is_source_frame))
            .or_else(|| visible.iter().find(|id| name(id).contains("autograd::generated::")))
            .or_else(|| visible.iter().find(|id| !is_allocator_internal(name(id))))
            .or_else(|| visible.first())
            .copied()
    }

    /// The site frame found in one pass, with frames' classes kept across stacks or not, is the
    /// one the rule's four passes find, for every stack of files with Python frames, C++ frames
    /// only (backward) and hostile ones.
    #[test]
    fn site_frames_read_with_kept_classes_are_the_same() {
        let mut stacks = 0;
        for dir in ["real", "hostile", "synth"] {
            for p in crate::test_fixtures::fixture_files_with(&[dir], &["pickle"]) {
                let Ok(bytes) = std::fs::read(&p) else { continue };
                let Ok(snap) = crate::load(&bytes) else { continue };
                let mut classes = FrameClasses::default();
                for stack in 0..snap.stacks.len() as u32 {
                    let want = site_frame_by_passes(&snap, stack);
                    assert_eq!(site_frame(&snap, stack), want, "{} stack {stack}", p.display());
                    assert_eq!(site_frame_cached(&snap, stack, &mut classes), want, "{} stack {stack}", p.display());
                    assert_eq!(site_label_cached(&snap, stack, &mut classes), site_label(&snap, stack));
                    stacks += 1;
                }
            }
        }
        assert!(stacks > 500, "{stacks} stacks");
    }

    /// Every analysis on every small test file (format variants, inconsistent traces, hostile
    /// inputs that load): no panics, and the live set at the peak adds up.
    #[test]
    fn every_analysis_runs_on_every_small_file() {
        let mut n = 0;
        for dir in ["synth", "hostile", "real"] {
            for p in crate::test_fixtures::fixture_files_with(&[dir], &["pickle", "json"]) {
                let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                if bytes.len() > 1 << 20 {
                    continue;
                }
                let Ok(snap) = crate::load(&bytes) else { continue };
                n += 1;
                for pos in 0..snap.devices.len() {
                    let r = Replay::build(&snap, pos);
                    for m in [Moment::Peak, Moment::Start, Moment::End] {
                        let l = live::live_set(&snap, &r, m).expect("live set");
                        assert_eq!(l.total_bytes, r.live_at(m.resolve(&r).expect("moment")), "{p:?}");
                        let _ = export::live_set_csv(&snap, &r, &l);
                        let _ = export::speedscope(&snap, &l, "x");
                    }
                    let i = growth::insights_with(&snap, &r);
                    let _ = i.to_json(&snap);
                    let _ = fragmentation::fragmentation_series(&snap, pos, 50).to_json();
                    let _ = categories::infer_categories(&snap, pos, 50).to_json();
                    let _ = compare::compare(&snap, pos, &snap, pos, compare::CompareOptions::default()).to_json();
                }
            }
        }
        assert!(n > 20, "only {n} files");
    }

    #[test]
    fn cpp_names_lose_their_parameters() {
        assert_eq!(cpp_short_name("at::native::f(at::Tensor const&, long)"), "at::native::f");
        assert_eq!(
            cpp_short_name("std::error_code::default_error_condition() const"),
            "std::error_code::default_error_condition"
        );
        assert_eq!(
            cpp_short_name("torch::cuda::(anonymous namespace)::gather_with_cpp()"),
            "torch::cuda::(anonymous namespace)::gather_with_cpp"
        );
        assert_eq!(cpp_short_name("pthread_condattr_setpshared"), "pthread_condattr_setpshared");
        assert_eq!(cpp_short_name("broken)"), "broken)");
    }

    #[test]
    fn moment_at_a_step_matches_the_timeline() {
        let snap = test_util::fixture("growth_leak.pickle");
        let l = Layout::build(&snap, 0, Options::default());
        let r = Replay::build(&snap, 0);
        for step in [0.0, 3.5, f64::from(l.peak_step), f64::from(l.steps)] {
            let m = Moment::at_step(&l, step);
            let row = m.resolve(&r).expect("moment");
            assert_eq!(r.live_at(row), l.live_bytes_at(step), "step {step}");
        }
        assert_eq!(Moment::at_step(&l, f64::from(l.peak_step)).resolve(&r).expect("peak"), r.peak_row);
    }

    #[test]
    fn moments_parse() {
        assert_eq!(Moment::parse("peak"), Ok(Moment::Peak));
        assert_eq!(Moment::parse("12"), Ok(Moment::Entry(12)));
        assert!(Moment::parse("-3").is_err());
    }
}
