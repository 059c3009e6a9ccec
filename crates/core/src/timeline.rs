//! The Active Memory Timeline layout (reference study, section 3.1), built in O(n log n) instead
//! of PyTorch's O(events x live).
//!
//! - x is the event step: each alloc or free takes one step, and a free of a drawn allocation
//!   with drawn allocations above it takes three more while those slide down over the gap.
//! - Allocations are stacked in allocation order; new ones go on top.
//! - The largest `max_entries` allocations are drawn as bands; the rest are summarized in one band
//!   that sits on top of the drawn stack.
//! - Allocations live before the trace (frees without an alloc, and allocated blocks of the final
//!   state the trace never saw) are laid out at step 0.
//! - The true peak (drawn + summarized at every step) is kept, unlike PyTorch's `max_size`.
//!
//! Offsets are implicit. PyTorch's viewer writes two points into every band above a freed one,
//! which is O(events x live) points. Here a band is only its life `[start, end)`, its size and its
//! place in the stack (band index = allocation order), and its lower offset at a step is the sum of
//! the bands below it that are live then (a band freed with others above it fades out of that sum
//! linearly over [`SLIDE_STEPS`]). So building is O(n log n) whatever the trace does, and offsets
//! are computed only where something is drawn or hovered:
//!
//! - [`Layout::band_edges`]: lower edges of chosen bands at sample steps, in one sweep with a
//!   Fenwick tree (O(B + events + vertices x log B) for B bands);
//! - [`Layout::sample_steps`]: where to sample a window (every step when zoomed in, else each
//!   column's highest step, so peaks are never lost);
//! - [`Layout::offsets_at`], [`Layout::hit_test`]: the stack at one step (O(log n + k log k) for k
//!   bands live then); [`Layout::bands_overlapping`] (interval index, O(log n + k));
//!   [`Layout::max_live_between`] (block maxima), [`Layout::live_bytes_at`].

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

use crate::snapshot::{Action, BlockState, Snapshot, Trace};

mod wire;

/// Default number of drawn allocations (PyTorch's viewer uses 15000).
pub const DEFAULT_MAX_ENTRIES: usize = 15_000;

/// Steps a slide takes after a free.
pub const SLIDE_STEPS: u32 = 3;

/// What the timeline plots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Allocations (`alloc` / `free_completed`): the Active Memory Timeline.
    #[default]
    Allocations,
    /// Segments (`segment_alloc` / `segment_free`): the Active Cached Segment Timeline.
    Segments,
    /// Mapped pages of expandable segments (`segment_map` / `segment_unmap`).
    MappedPages,
}

/// Options of a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// How many of the largest allocations get their own band.
    pub max_entries: usize,
    /// What to plot.
    pub mode: Mode,
    /// Leave out allocations both made and freed within the trace (PyTorch's `filter_freed`):
    /// what remains is what was live at the end, or live before the trace began.
    pub hide_freed: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { max_entries: DEFAULT_MAX_ENTRIES, mode: Mode::Allocations, hide_freed: false }
    }
}

/// Where an element came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Allocated in the trace.
    Traced,
    /// Freed in the trace without its alloc (allocated before recording, or evicted from the ring
    /// buffer): live from step 0, with the free's stack.
    FreedWithoutAlloc,
    /// Allocated in the final state but never seen in the trace: live from step 0 to the end.
    Ghost,
}

/// One allocation lifetime.
#[derive(Clone, Debug, PartialEq)]
pub struct Element {
    /// Address.
    pub addr: u64,
    /// Requested bytes (segment bytes in segment modes).
    pub size_bytes: u64,
    /// Stack id of the alloc (or of the free, or of the block).
    pub stack: u32,
    /// Stream index.
    pub stream: u32,
    /// Trace row of the alloc.
    pub alloc_row: Option<u32>,
    /// Trace row of the free.
    pub free_row: Option<u32>,
    /// Where it came from.
    pub origin: Origin,
    /// How many earlier lifetimes this address had (PyTorch's `b<addr>_<version>` label).
    pub version: u32,
    /// Step of the alloc (0 for elements live before the trace).
    pub alloc_step: u32,
    /// Step of the free (`None`: still live at the end).
    pub free_step: Option<u32>,
    /// Live bytes (drawn + summarized) straight after this allocation.
    pub total_after_alloc_bytes: u64,
    /// Band index if drawn, `None` if summarized.
    pub band: Option<u32>,
}

/// A hit of [`Layout::hit_test`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Hit {
    /// A drawn allocation (element index).
    Element(u32),
    /// The summarized band.
    Summarized,
}

/// Lower edges of bands at sample steps, from [`Layout::band_edges`].
#[derive(Clone, Debug, Default)]
pub struct BandEdges {
    /// Bands with at least one vertex, ascending.
    pub bands: Vec<u32>,
    /// `vertices[starts[i]..starts[i + 1]]` belong to `bands[i]`.
    starts: Vec<u32>,
    /// (step, lower offset in bytes), by band, ascending steps.
    vertices: Vec<(f64, f64)>,
}

impl BandEdges {
    /// The vertices of the i-th band of [`BandEdges::bands`].
    pub fn edge(&self, i: usize) -> &[(f64, f64)] {
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&a), Some(&b)) => self.vertices.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Total number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.vertices.len()
    }
}

/// One column's envelope of the stack, from [`Layout::column_envelopes`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ColumnEnvelope {
    /// Highest top of the drawn stack in the column.
    pub drawn_max_bytes: f64,
    /// Highest total (drawn + summarized) in the column.
    pub total_max_bytes: f64,
    /// Top of the drawn stack where the total is highest (the summarized band's lower edge there).
    pub drawn_at_peak_bytes: f64,
}

/// The edge of one band while [`Layout::band_edges`] sweeps.
struct EdgeTrack {
    band: u32,
    vertices: Vec<(f64, f64)>,
    pending: Option<(f64, f64)>,
    last_below: f64,
}

/// Interval index over bands: sorted by start with an implicit augmented tree (max end),
/// answering overlap queries in O(log n + k).
#[derive(Clone, Debug, Default)]
struct IntervalIndex {
    /// (start, end inclusive, band) sorted by start.
    items: Vec<(u32, u32, u32)>,
    /// Max end over the implicit subtree rooted at each index.
    max_end: Vec<u32>,
    levels: u32,
}

impl IntervalIndex {
    fn build(mut items: Vec<(u32, u32, u32)>) -> Self {
        items.sort_unstable();
        let n = items.len();
        let mut max_end: Vec<u32> = items.iter().map(|x| x.1).collect();
        // cgranges-style implicit tree: level-k nodes sit at indices with k trailing ones.
        let mut levels = 0;
        if n > 0 {
            let mut k = 1u32;
            while (1usize << k) <= n {
                let x = 1usize << (k - 1);
                let mut i = (x << 1) - 1;
                let step = x << 2;
                while i < n {
                    let el = max_end.get(i - x).copied().unwrap_or(0);
                    let mut e = max_end[i].max(el);
                    let right = i + x;
                    let er = if right < n { max_end[right] } else { Self::last_max(&max_end, n, i, x) };
                    e = e.max(er);
                    max_end[i] = e;
                    i += step;
                }
                k += 1;
            }
            levels = k - 1;
        }
        IntervalIndex { items, max_end, levels }
    }

    fn last_max(max_end: &[u32], n: usize, i: usize, x: usize) -> u32 {
        // Right subtree partially outside the array: take the max over what exists.
        let mut m = 0;
        let mut j = i + 1;
        let end = (i + x + x).min(n);
        while j < end {
            m = m.max(max_end[j]);
            j += 1;
        }
        m
    }

    /// Bands whose [start, end] overlaps [a, b].
    fn overlapping(&self, a: u32, b: u32, out: &mut Vec<u32>) {
        let n = self.items.len();
        if n == 0 {
            return;
        }
        // Iterative descent over the implicit tree.
        let mut stack: Vec<(usize, u32, bool)> = Vec::with_capacity(64);
        let root_level = self.levels;
        stack.push((((1usize << root_level) - 1), root_level, false));
        while let Some((x, k, visited_left)) = stack.pop() {
            if k <= 3 {
                // Small subtree: scan it.
                let i0 = (x >> k) << k;
                let i1 = (i0 + (1usize << (k + 1)) - 1).min(n);
                let mut i = i0;
                while i < i1 {
                    let (s, e, band) = self.items[i];
                    if s > b {
                        break;
                    }
                    if e >= a {
                        out.push(band);
                    }
                    i += 1;
                }
                continue;
            }
            if !visited_left {
                let y = x - (1usize << (k - 1));
                stack.push((x, k, true));
                if y >= n || self.max_end.get(y).copied().unwrap_or(0) >= a {
                    stack.push((y, k - 1, false));
                }
            } else if x < n && self.items[x].0 <= b {
                let (_, e, band) = self.items[x];
                if e >= a {
                    out.push(band);
                }
                stack.push((x + (1usize << (k - 1)), k - 1, false));
            }
        }
    }
}

/// The laid-out timeline of one device.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// All lifetimes: traced, freed-without-alloc, ghosts.
    pub elements: Vec<Element>,
    /// Band -> element.
    pub band_element: Vec<u32>,
    /// Step at which each band appears (non-decreasing: bands are numbered in stack order).
    band_start: Vec<u32>,
    /// Step at which each band is freed (`steps` for bands live at the end).
    band_end: Vec<u32>,
    /// Whether the bands above slide down over the gap when the band is freed.
    band_slides: Vec<bool>,
    /// Bands sorted by end step.
    bands_by_end: Vec<u32>,
    /// Event list: step at which each action happens.
    pub event_step: Vec<u32>,
    /// Trace row of each event (`u32::MAX` for the synthetic step-0 event).
    pub event_row: Vec<u32>,
    /// Drawn live bytes after each event.
    pub event_drawn_bytes: Vec<u64>,
    /// Summarized live bytes after each event.
    pub event_summarized_bytes: Vec<u64>,
    /// Drawn bytes before the event (differs from after only for the freed size during a slide).
    event_drawn_before: Vec<u64>,
    /// Whether the event starts a slide.
    event_slides: Vec<bool>,
    /// Width in steps.
    pub steps: u32,
    /// Live bytes at step 0 (before the first event).
    pub initial_drawn_bytes: u64,
    /// Summarized bytes at step 0.
    pub initial_summarized_bytes: u64,
    /// Highest live bytes at any step.
    pub peak_bytes: u64,
    /// First step where the peak is reached.
    pub peak_step: u32,
    /// Trace row -> event index (`u32::MAX` for rows that are not events of this layout).
    row_event: Vec<u32>,
    index: IntervalIndex,
    /// Maxima per block of [`SMALL`] events, for range-max queries.
    small_blocks: BlockMaxima,
    /// Maxima per block of [`BLOCK`] events.
    blocks: BlockMaxima,
    /// Options used.
    pub options: Options,
}

/// Events per small block of maxima.
const SMALL: usize = 32;
/// Events per block of maxima: a whole number of small blocks.
const BLOCK: usize = 256;

/// Maxima over fixed blocks of consecutive events, so a range-max query takes whole blocks at
/// once: with two block sizes a range costs O(SMALL + BLOCK / SMALL + its events / BLOCK).
#[derive(Clone, Debug, Default)]
pub(crate) struct BlockMaxima {
    /// The most live bytes (drawn + summarized) around one of the block's events.
    total_max: Vec<u64>,
    /// The most live bytes straight after one of the block's events.
    after_max: Vec<u64>,
    /// The highest top of the drawn stack around one of the block's events.
    drawn_max: Vec<u64>,
    /// The top of the drawn stack at the block's first event with the highest total.
    peak_drawn: Vec<u64>,
}

impl BlockMaxima {
    /// Maxima over blocks of `size` events.
    fn of_events(l: &Layout, size: usize) -> BlockMaxima {
        let n = l.event_step.len();
        let mut m = BlockMaxima::default();
        for start in (0..n).step_by(size) {
            let (mut total, mut after, mut drawn, mut peak_drawn) = (0, 0, 0, 0);
            for i in start..(start + size).min(n) {
                let high = l.event_drawn_before[i].max(l.event_drawn_bytes[i]);
                let t = high + l.event_summarized_bytes[i];
                if t > total || i == start {
                    (total, peak_drawn) = (t, high);
                }
                after = after.max(l.event_drawn_bytes[i] + l.event_summarized_bytes[i]);
                drawn = drawn.max(high);
            }
            m.push(total, after, drawn, peak_drawn);
        }
        m
    }

    /// Maxima over groups of `fanout` consecutive blocks of `finer`.
    fn of_blocks(finer: &BlockMaxima, fanout: usize) -> BlockMaxima {
        let mut m = BlockMaxima::default();
        let n = finer.total_max.len();
        for start in (0..n).step_by(fanout) {
            let (mut total, mut after, mut drawn, mut peak_drawn) = (0, 0, 0, 0);
            for k in start..(start + fanout).min(n) {
                if finer.total_max[k] > total || k == start {
                    (total, peak_drawn) = (finer.total_max[k], finer.peak_drawn[k]);
                }
                after = after.max(finer.after_max[k]);
                drawn = drawn.max(finer.drawn_max[k]);
            }
            m.push(total, after, drawn, peak_drawn);
        }
        m
    }

    fn push(&mut self, total: u64, after: u64, drawn: u64, peak_drawn: u64) {
        self.total_max.push(total);
        self.after_max.push(after);
        self.drawn_max.push(drawn);
        self.peak_drawn.push(peak_drawn);
    }
}

/// A piece of a range of events, as [`Layout::for_each_piece`] hands them out.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Piece {
    /// One event.
    Event(usize),
    /// A whole small block (index into the small maxima).
    Small(usize),
    /// A whole block.
    Block(usize),
}

impl Layout {
    /// Lays out device `device_pos` (an index into `snap.devices`).
    #[allow(clippy::too_many_lines)]
    pub fn build(snap: &Snapshot, device_pos: usize, options: Options) -> Layout {
        let mut l = Layout { options, ..Layout::default() };
        let Some(dev) = snap.devices.get(device_pos) else { return l };
        let t = &dev.trace;
        let (alloc_action, free_actions): (Action, &[Action]) = match options.mode {
            Mode::Allocations => (Action::Alloc, &[Action::FreeCompleted, Action::Free]),
            Mode::Segments => (Action::SegmentAlloc, &[Action::SegmentFree]),
            Mode::MappedPages => (Action::SegmentMap, &[Action::SegmentUnmap]),
        };
        // Phase 1: pair events into lifetimes.
        let mut open: HashMap<u64, u32> = HashMap::default();
        let mut versions: HashMap<u64, u32> = HashMap::default();
        let mut actions: Vec<(u32, u32)> = Vec::new(); // (element, trace row)
        let mut initially: Vec<u32> = Vec::new();
        for row in 0..t.len() {
            let Some(&a) = t.action.get(row) else { continue };
            let addr = t.addr.get(row).copied().unwrap_or(0);
            let size = t.size_bytes.get(row).copied().unwrap_or(0);
            let stack = t.stack.get(row).copied().unwrap_or(0);
            let stream = t.stream.get(row).copied().unwrap_or(0);
            if a == alloc_action {
                let v = versions.get(&addr).copied().unwrap_or(0);
                let e = l.elements.len() as u32;
                l.elements.push(Element {
                    addr,
                    size_bytes: size,
                    stack,
                    stream,
                    alloc_row: Some(row as u32),
                    free_row: None,
                    origin: Origin::Traced,
                    version: v,
                    alloc_step: 0,
                    free_step: None,
                    total_after_alloc_bytes: 0,
                    band: None,
                });
                open.insert(addr, e);
                actions.push((e, row as u32));
            } else if free_actions.contains(&a) {
                let v = versions.entry(addr).or_insert(0);
                let ver = *v;
                *v += 1;
                match open.remove(&addr) {
                    Some(e) => {
                        if let Some(el) = l.elements.get_mut(e as usize) {
                            el.free_row = Some(row as u32);
                        }
                        actions.push((e, row as u32));
                    }
                    None => {
                        let e = l.elements.len() as u32;
                        l.elements.push(Element {
                            addr,
                            size_bytes: size,
                            stack,
                            stream,
                            alloc_row: None,
                            free_row: Some(row as u32),
                            origin: Origin::FreedWithoutAlloc,
                            version: ver,
                            alloc_step: 0,
                            free_step: None,
                            total_after_alloc_bytes: 0,
                            band: None,
                        });
                        initially.push(e);
                        actions.push((e, row as u32));
                    }
                }
            }
        }
        // Phase 2: live state of the final snapshot that the trace never saw.
        for s in snap.segments.iter().filter(|s| s.device == dev.index) {
            match options.mode {
                Mode::Allocations => {
                    for b in snap.segment_blocks(s) {
                        if b.state == BlockState::ActiveAllocated && !open.contains_key(&b.address) {
                            let e = l.elements.len() as u32;
                            l.elements.push(ghost(b.address, b.requested_size, b.stack, s.stream, versions.get(&b.address).copied().unwrap_or(0)));
                            initially.push(e);
                        }
                    }
                }
                Mode::Segments | Mode::MappedPages => {
                    if !open.contains_key(&s.address) {
                        let e = l.elements.len() as u32;
                        l.elements.push(ghost(s.address, s.total_size, s.stack, s.stream, 0));
                        initially.push(e);
                    }
                }
            }
        }
        initially.reverse();
        let hidden = |e: &Element| options.hide_freed && e.alloc_row.is_some() && e.free_row.is_some();
        if options.hide_freed {
            actions.retain(|&(e, _)| l.elements.get(e as usize).is_some_and(|el| !hidden(el)));
        }
        // Elements that are freed in the trace appear in `actions`; an initial element freed in the
        // trace must not be re-added when its free comes (it is already live).
        if actions.is_empty() {
            if let Some(e) = initially.pop() {
                actions.push((e, u32::MAX));
            }
        }
        // Detail: the largest max_entries elements are drawn (stable: ties keep index order).
        // Select the top max_entries by (size descending, index ascending) in O(n).
        let mut by_size: Vec<(std::cmp::Reverse<u64>, u32)> =
            l.elements.iter().enumerate().filter(|(_, e)| !hidden(e)).map(|(i, e)| (std::cmp::Reverse(e.size_bytes), i as u32)).collect();
        let keep = options.max_entries.min(by_size.len());
        if keep > 0 && keep < by_size.len() {
            by_size.select_nth_unstable(keep - 1);
        }
        let mut drawn = vec![false; l.elements.len()];
        for &(_, e) in by_size.iter().take(keep) {
            drawn[e as usize] = true;
        }
        drop(by_size);
        // Phase 3: replay. Bands are numbered in stack order, so "is anything drawn above the
        // freed band" is "is the highest live band above it"; the highest live band is kept by
        // walking down past freed ones, each passed once (new bands always go above).
        let mut band_live: Vec<bool> = Vec::new();
        let mut top_band: Option<u32> = None;
        let mut drawn_total: u64 = 0;
        let mut summarized_total: u64 = 0;
        let mut live = vec![false; l.elements.len()];
        let mut step: u32 = 0;
        let mut peak = 0u64;
        let mut peak_step = 0u32;

        let add_band = |l: &mut Layout, e: u32, step: u32, drawn_total: &mut u64, band_live: &mut Vec<bool>, top_band: &mut Option<u32>| {
            let b = l.band_element.len() as u32;
            l.band_element.push(e);
            l.band_start.push(step);
            l.band_end.push(u32::MAX);
            l.band_slides.push(false);
            band_live.push(true);
            *top_band = Some(b);
            if let Some(el) = l.elements.get_mut(e as usize) {
                el.band = Some(b);
                *drawn_total += el.size_bytes;
            }
        };

        for &e in &initially {
            live[e as usize] = true;
            if drawn[e as usize] {
                add_band(&mut l, e, 0, &mut drawn_total, &mut band_live, &mut top_band);
            } else {
                summarized_total += l.elements[e as usize].size_bytes;
            }
        }
        l.initial_drawn_bytes = drawn_total;
        l.initial_summarized_bytes = summarized_total;
        peak = peak.max(drawn_total + summarized_total);

        for &(e, row) in &actions {
            let ei = e as usize;
            let size = l.elements[ei].size_bytes;
            let ev = l.event_step.len() as u32;
            l.event_step.push(step);
            l.event_row.push(row);
            if row != u32::MAX {
                let r = row as usize;
                if l.row_event.len() <= r {
                    l.row_event.resize(r + 1, u32::MAX);
                }
                l.row_event[r] = ev;
            }
            l.event_drawn_before.push(drawn_total);
            let mut slides = false;
            if !live[ei] {
                // Alloc.
                live[ei] = true;
                if drawn[ei] {
                    add_band(&mut l, e, step, &mut drawn_total, &mut band_live, &mut top_band);
                } else {
                    summarized_total += size;
                }
                let el = &mut l.elements[ei];
                el.alloc_step = step;
                el.total_after_alloc_bytes = drawn_total + summarized_total;
                if drawn_total + summarized_total > peak {
                    peak = drawn_total + summarized_total;
                    peak_step = step;
                }
                step += 1;
            } else {
                // Free.
                live[ei] = false;
                l.elements[ei].free_step = Some(step);
                if let Some(b) = l.elements[ei].band {
                    let bi = b as usize;
                    band_live[bi] = false;
                    l.band_end[bi] = step;
                    slides = top_band.is_some_and(|t| t > b);
                    l.band_slides[bi] = slides;
                    if top_band == Some(b) {
                        let mut t = bi;
                        top_band = None;
                        while t > 0 {
                            t -= 1;
                            if band_live[t] {
                                top_band = Some(t as u32);
                                break;
                            }
                        }
                    }
                    drawn_total -= size;
                } else {
                    summarized_total = summarized_total.saturating_sub(size);
                }
                step += if slides { 1 + SLIDE_STEPS } else { 1 };
            }
            l.event_slides.push(slides);
            l.event_drawn_bytes.push(drawn_total);
            l.event_summarized_bytes.push(summarized_total);
        }
        l.steps = step.max(1);
        // Bands still live end with the trace.
        for end in &mut l.band_end {
            if *end == u32::MAX {
                *end = l.steps;
            }
        }
        l.peak_bytes = peak;
        l.peak_step = peak_step;
        let mut by_end: Vec<u32> = (0..l.band_end.len() as u32).collect();
        by_end.sort_by_key(|&b| l.band_end[b as usize]);
        l.bands_by_end = by_end;
        // Interval index over bands, each until the end of its slide.
        let items: Vec<(u32, u32, u32)> = (0..l.band_element.len() as u32).map(|b| (l.band_start[b as usize], l.band_reach(b), b)).collect();
        l.index = IntervalIndex::build(items);
        // Block maxima of live bytes per event, for range-max queries.
        l.small_blocks = BlockMaxima::of_events(&l, SMALL);
        l.blocks = BlockMaxima::of_blocks(&l.small_blocks, BLOCK / SMALL);
        l
    }

    /// Number of drawn bands.
    pub fn band_count(&self) -> usize {
        self.band_element.len()
    }

    /// First and last step of a band: it appears at `start` and is gone from `end` on.
    pub fn band_step_range(&self, band: u32) -> (u32, u32) {
        let b = band as usize;
        (self.band_start.get(b).copied().unwrap_or(0), self.band_end.get(b).copied().unwrap_or(0))
    }

    /// Last step at which a band still counts in the offsets of the bands above it.
    fn band_reach(&self, band: u32) -> u32 {
        let b = band as usize;
        let end = self.band_end.get(b).copied().unwrap_or(0);
        if self.band_slides.get(b).copied().unwrap_or(false) {
            end.saturating_add(SLIDE_STEPS)
        } else {
            end
        }
    }

    /// Size of a band's element.
    pub fn band_size(&self, band: u32) -> u64 {
        self.band_element.get(band as usize).and_then(|&e| self.elements.get(e as usize)).map_or(0, |e| e.size_bytes)
    }

    /// How much of a band's size counts below the bands above it at `step`: 1 while it is live,
    /// falling linearly to 0 over the slide after its free, 0 otherwise.
    fn band_weight(&self, band: u32, step: f64) -> f64 {
        let (start, end) = self.band_step_range(band);
        let (start, end) = (f64::from(start), f64::from(end));
        if step < start {
            0.0
        } else if step < end {
            1.0
        } else if self.band_slides.get(band as usize).copied().unwrap_or(false) {
            (1.0 - (step - end) / f64::from(SLIDE_STEPS)).max(0.0)
        } else {
            0.0
        }
    }

    /// The drawn stack at a (fractional) step: every band live then, bottom to top, with its lower
    /// offset in bytes. O(log n + k log k) for k bands live or sliding then.
    pub fn offsets_at(&self, step: f64, out: &mut Vec<(u32, f64)>) {
        out.clear();
        if step.is_nan() || step < 0.0 {
            return;
        }
        let mut cands = Vec::new();
        let s = step.floor().min(f64::from(u32::MAX)) as u32;
        self.index.overlapping(s, s.saturating_add(1), &mut cands);
        cands.sort_unstable();
        let mut below_bytes = 0.0;
        for b in cands {
            let (start, end) = self.band_step_range(b);
            if f64::from(start) <= step && step < f64::from(end) {
                out.push((b, below_bytes));
            }
            below_bytes += self.band_weight(b, step) * self.band_size(b) as f64;
        }
    }

    /// Lower offset of a band at a (fractional) step; `None` outside its life.
    pub fn band_offset_at(&self, band: u32, step: f64) -> Option<f64> {
        let (start, end) = self.band_step_range(band);
        if step < f64::from(start) || step >= f64::from(end) {
            return None;
        }
        let mut stack = Vec::new();
        self.offsets_at(step, &mut stack);
        stack.iter().find(|x| x.0 == band).map(|x| x.1)
    }

    /// Steps at which to sample the window `[s_left, s_right]` for drawing: every integer step
    /// when there are at most `max_samples` of them (offsets are linear between integer steps, so
    /// the drawing is exact), else one step per equal slice: the step after the slice's highest
    /// event, so every column shows its peak. Ascending.
    pub fn sample_steps(&self, s_left: f64, s_right: f64, max_samples: usize) -> Vec<f64> {
        let lo = s_left.max(0.0).floor();
        let hi = s_right.min(f64::from(self.steps)).ceil();
        if hi.is_nan() || lo.is_nan() || hi < lo || max_samples == 0 {
            return Vec::new();
        }
        if hi - lo < max_samples as f64 {
            let (lo, hi) = (lo as u32, hi as u32);
            return (lo..=hi).map(f64::from).collect();
        }
        let width = (hi - lo) / max_samples as f64;
        let mut out = Vec::with_capacity(max_samples + 1);
        let mut i = self.event_step.partition_point(|&s| f64::from(s) < lo);
        for c in 0..max_samples {
            let x0 = lo + width * c as f64;
            let x1 = x0 + width;
            let end = self.first_event_from(i, x1);
            let x = self.highest_event(i, end).map_or(x0.ceil(), |k| f64::from(self.event_step[k]));
            i = end;
            if out.last().is_none_or(|&last: &f64| x > last) && x <= hi {
                out.push(x);
            }
        }
        if out.last().is_none_or(|&last| last < hi) {
            out.push(hi);
        }
        out
    }

    /// The first event at or after index `from` whose step is not below `step`, by galloping
    /// from `from` (cheap when it is near, as for consecutive columns).
    fn first_event_from(&self, from: usize, step: f64) -> usize {
        let steps = &self.event_step;
        let n = steps.len();
        if from >= n || f64::from(steps[from]) >= step {
            return from.min(n);
        }
        // steps[lo] < step; find hi with steps[hi] >= step (or n).
        let (mut lo, mut width) = (from, 1usize);
        let hi = loop {
            let probe = lo.saturating_add(width);
            if probe >= n {
                break n;
            }
            if f64::from(steps[probe]) >= step {
                break probe;
            }
            lo = probe;
            width *= 2;
        };
        lo + 1 + steps[lo + 1..hi].partition_point(|&s| f64::from(s) < step)
    }

    /// Envelopes of the drawn stack and of the total over columns whose step boundaries are
    /// `bounds` (`bounds.len() - 1` columns, non-decreasing): what is filled under the bands, and
    /// where the summarized band goes. Whole blocks of events are taken from their maxima, so a
    /// column costs O(SMALL + BLOCK / SMALL + its events / BLOCK), not O(its events).
    pub fn column_envelopes(&self, bounds: &[f64]) -> Vec<ColumnEnvelope> {
        let mut out = Vec::with_capacity(bounds.len().saturating_sub(1));
        let Some(&b0) = bounds.first() else { return out };
        let n = self.event_step.len();
        // Next event strictly after the first column's start.
        let mut j = self.event_step.partition_point(|&s| f64::from(s) <= b0);
        // Events at or before the column's start (steps are whole numbers), found by galloping
        // from the last column's.
        let mut at_start = 0usize;
        for w in bounds.windows(2) {
            let (a, b) = (w[0], w[1]);
            at_start = self.first_event_from(at_start, a.floor() + 1.0);
            let before = at_start.checked_sub(1);
            let top = self.drawn_top_after(before, a);
            let s_a = before.map_or(self.initial_summarized_bytes, |i| self.event_summarized_bytes[i]);
            let mut env = ColumnEnvelope { drawn_max_bytes: top, total_max_bytes: top + s_a as f64, drawn_at_peak_bytes: top };
            let end = self.first_event_from(j, b);
            let take = |env: &mut ColumnEnvelope, drawn: f64, total: f64, drawn_at_total: f64| {
                env.drawn_max_bytes = env.drawn_max_bytes.max(drawn);
                if total > env.total_max_bytes {
                    env.total_max_bytes = total;
                    env.drawn_at_peak_bytes = drawn_at_total;
                }
            };
            let end = end.min(n);
            self.for_each_piece(j, end, |p| match p {
                Piece::Event(i) => {
                    let hi = self.event_drawn_before[i].max(self.event_drawn_bytes[i]) as f64;
                    take(&mut env, hi, hi + self.event_summarized_bytes[i] as f64, hi);
                }
                Piece::Small(k) => {
                    let m = &self.small_blocks;
                    take(&mut env, m.drawn_max[k] as f64, m.total_max[k] as f64, m.peak_drawn[k] as f64);
                }
                Piece::Block(k) => {
                    let m = &self.blocks;
                    take(&mut env, m.drawn_max[k] as f64, m.total_max[k] as f64, m.peak_drawn[k] as f64);
                }
            });
            j = j.max(end);
            out.push(env);
        }
        out
    }

    /// Live bytes straight after event `i`.
    fn event_after_bytes(&self, i: usize) -> u64 {
        self.event_drawn_bytes[i] + self.event_summarized_bytes[i]
    }

    /// Hands out `a..b` (event indices) as whole blocks where they fit, else whole small
    /// blocks, else single events, in order.
    fn for_each_piece(&self, a: usize, b: usize, mut f: impl FnMut(Piece)) {
        let b = b.min(self.event_step.len());
        let mut i = a;
        while i < b {
            if i % BLOCK == 0 && i + BLOCK <= b {
                f(Piece::Block(i / BLOCK));
                i += BLOCK;
            } else if i % SMALL == 0 && i + SMALL <= b {
                f(Piece::Small(i / SMALL));
                i += SMALL;
            } else {
                f(Piece::Event(i));
                i += 1;
            }
        }
    }

    /// The first event of `a..b` after which the most bytes are live, using the block maxima
    /// for whole blocks: O(SMALL + BLOCK / SMALL + (b - a) / BLOCK).
    fn highest_event(&self, a: usize, b: usize) -> Option<usize> {
        let mut best: Option<(u64, Piece)> = None;
        self.for_each_piece(a, b, |p| {
            let v = match p {
                Piece::Event(i) => self.event_after_bytes(i),
                Piece::Small(k) => self.small_blocks.after_max[k],
                Piece::Block(k) => self.blocks.after_max[k],
            };
            if best.is_none_or(|x| v > x.0) {
                best = Some((v, p));
            }
        });
        let (v, mut piece) = best?;
        // Descend into the winning block: its first small block, then event, with that value.
        if let Piece::Block(k) = piece {
            let first = k * (BLOCK / SMALL);
            let last = (first + BLOCK / SMALL).min(self.small_blocks.after_max.len());
            piece = Piece::Small((first..last).find(|&s| self.small_blocks.after_max[s] == v).unwrap_or(first));
        }
        if let Piece::Small(k) = piece {
            let first = k * SMALL;
            let last = (first + SMALL).min(self.event_step.len());
            piece = Piece::Event((first..last).find(|&i| self.event_after_bytes(i) == v).unwrap_or(first));
        }
        match piece {
            Piece::Event(i) => Some(i),
            _ => None,
        }
    }

    /// Lower edges of the bands `wanted` (ascending band indices) at the steps `samples`
    /// (ascending), in one sweep: the bands below each one are kept in a Fenwick tree indexed by
    /// stack position, so the cost is O(B + bands starting or ending in the window + vertices x
    /// log B), never O(events x live). A band gets a vertex at every sample within its life
    /// (`start <= step <= end`; at `end` the offset is the limit from the left); bands with no
    /// sample in their life are left out (narrower than a sample).
    pub fn band_edges(&self, wanted: &[u32], samples: &[f64]) -> BandEdges {
        let mut out = BandEdges::default();
        // Only bands below the highest wanted one matter.
        let nb = wanted.iter().max().map_or(0, |&b| (b as usize + 1).min(self.band_element.len()));
        let Some(&x0) = samples.first() else { return out };
        if nb == 0 {
            return out;
        }
        // The stack just at x0.
        let mut sliding: Vec<u32> = Vec::new();
        let mut values = vec![0u64; nb];
        for (b, v) in values.iter_mut().enumerate() {
            // (bands at or above nb are never queried)
            let (start, end) = (f64::from(self.band_start[b]), f64::from(self.band_end[b]));
            if start <= x0 && x0 < end {
                *v = self.band_size(b as u32);
            } else if start <= x0 && self.band_slides[b] && x0 < end + f64::from(SLIDE_STEPS) {
                sliding.push(b as u32);
            }
        }
        let mut fen = crate::fenwick::Fenwick::from_values(values);
        let mut next_start = self.band_start[..nb].partition_point(|&s| f64::from(s) <= x0);
        let mut next_end = self.bands_by_end.partition_point(|&b| f64::from(self.band_end[b as usize]) <= x0);
        let mut next_wanted = 0usize;
        // One track per wanted band that has started: its vertices so far, and the last sample
        // of a run at one offset (written only when the offset changes or the band ends, so runs
        // cost two vertices).
        let mut tracks: Vec<EdgeTrack> = Vec::new();
        let mut active: Vec<usize> = Vec::new();
        for &x in samples {
            while next_start < nb && f64::from(self.band_start[next_start]) <= x {
                fen.add(next_start, self.band_size(next_start as u32));
                next_start += 1;
            }
            // The lowest stack position whose contribution changed since the last sample: the
            // bands above it may have moved, the ones at or below it have not.
            let mut lowest_change = usize::MAX;
            while let Some(&b) = self.bands_by_end.get(next_end) {
                let bi = b as usize;
                if f64::from(self.band_end[bi]) > x {
                    break;
                }
                next_end += 1;
                if bi >= nb {
                    continue;
                }
                lowest_change = lowest_change.min(bi);
                // Bands that start and end between two samples were never added.
                if bi < next_start && f64::from(self.band_end[bi]) > x0 {
                    fen.add(bi, 0u64.wrapping_sub(self.band_size(b)));
                }
                if self.band_slides[bi] {
                    sliding.push(b);
                }
            }
            for &c in &sliding {
                lowest_change = lowest_change.min(c as usize);
            }
            sliding.retain(|&c| self.band_weight(c, x) > 0.0);
            while let Some(&b) = wanted.get(next_wanted) {
                if f64::from(self.band_start.get(b as usize).copied().unwrap_or(u32::MAX)) > x {
                    break;
                }
                active.push(tracks.len());
                tracks.push(EdgeTrack { band: b, vertices: Vec::new(), pending: None, last_below: f64::NAN });
                next_wanted += 1;
            }
            active.retain(|&t| {
                let Some(tr) = tracks.get_mut(t) else { return false };
                let b = tr.band;
                let end = self.band_end.get(b as usize).copied().map_or(0.0, f64::from);
                if end < x {
                    tr.vertices.extend(tr.pending.take());
                    return false;
                }
                let fresh = tr.vertices.is_empty();
                let below = if !fresh && lowest_change >= b as usize {
                    tr.last_below
                } else {
                    fen.prefix(b as usize) as f64
                        + sliding.iter().filter(|&&c| c < b).map(|&c| self.band_weight(c, x) * self.band_size(c) as f64).sum::<f64>()
                };
                if !fresh && below == tr.last_below {
                    tr.pending = Some((x, below));
                } else {
                    tr.vertices.extend(tr.pending.take());
                    tr.vertices.push((x, below));
                    tr.last_below = below;
                }
                true
            });
        }
        for tr in tracks {
            let mut vertices = tr.vertices;
            vertices.extend(tr.pending);
            if vertices.is_empty() {
                continue;
            }
            out.bands.push(tr.band);
            out.starts.push(out.vertices.len() as u32);
            out.vertices.extend(vertices);
        }
        out.starts.push(out.vertices.len() as u32);
        out
    }

    /// Bands whose life overlaps steps [a, b].
    pub fn bands_overlapping(&self, a: u32, b: u32) -> Vec<u32> {
        let mut out = Vec::new();
        self.index.overlapping(a, b, &mut out);
        out
    }

    /// Index of the last event at or before `step` (`None` before the first event).
    fn event_at(&self, step: f64) -> Option<usize> {
        let i = self.event_step.partition_point(|&s| f64::from(s) <= step);
        i.checked_sub(1)
    }

    /// Drawn and summarized live bytes at a step.
    pub fn bytes_at(&self, step: f64) -> (u64, u64) {
        match self.event_at(step) {
            None => (self.initial_drawn_bytes, self.initial_summarized_bytes),
            Some(i) => (self.event_drawn_bytes[i], self.event_summarized_bytes[i]),
        }
    }

    /// Live requested bytes (drawn + summarized) at a step.
    pub fn live_bytes_at(&self, step: f64) -> u64 {
        let (d, s) = self.bytes_at(step);
        d + s
    }

    /// Top of the drawn stack at a step, following slides (the summarized band's lower edge).
    pub fn drawn_top_at(&self, step: f64) -> f64 {
        self.drawn_top_after(self.event_at(step), step)
    }

    /// [`Layout::drawn_top_at`] with the last event at or before `step` known.
    fn drawn_top_after(&self, event: Option<usize>, step: f64) -> f64 {
        match event {
            None => self.initial_drawn_bytes as f64,
            Some(i) => {
                let after = self.event_drawn_bytes[i] as f64;
                if self.event_slides[i] {
                    let s0 = f64::from(self.event_step[i]);
                    let before = self.event_drawn_before[i] as f64;
                    let frac = ((step - s0) / f64::from(SLIDE_STEPS)).clamp(0.0, 1.0);
                    before + (after - before) * frac
                } else {
                    after
                }
            }
        }
    }

    /// Highest live bytes between steps a and b inclusive (for fitting the y axis to a window).
    pub fn max_live_between(&self, a: f64, b: f64) -> u64 {
        let n = self.event_step.len();
        let start = self.event_at(a);
        let mut best = self.live_bytes_at(a).max(self.live_bytes_at(b));
        let first = start.map_or(0, |i| i);
        let last = self.event_at(b).map_or(0, |i| i + 1).min(n);
        if start.is_none() {
            best = best.max(self.initial_drawn_bytes + self.initial_summarized_bytes);
        }
        self.for_each_piece(first, last, |p| {
            let v = match p {
                Piece::Event(i) => self.event_drawn_before[i].max(self.event_drawn_bytes[i]) + self.event_summarized_bytes[i],
                Piece::Small(k) => self.small_blocks.total_max[k],
                Piece::Block(k) => self.blocks.total_max[k],
            };
            best = best.max(v);
        });
        best
    }

    /// What is under a point: a drawn allocation, the summarized band, or nothing.
    pub fn hit_test(&self, step: f64, bytes: f64) -> Option<Hit> {
        if step.is_nan() || bytes.is_nan() || step < 0.0 || bytes < 0.0 {
            return None;
        }
        let mut stack = Vec::new();
        self.offsets_at(step, &mut stack);
        // Offsets ascend with stack position: the last band starting at or below `bytes`.
        let i = stack.partition_point(|x| x.1 <= bytes);
        if let Some(&(b, off)) = i.checked_sub(1).and_then(|i| stack.get(i)) {
            if bytes < off + self.band_size(b) as f64 {
                return self.band_element.get(b as usize).map(|&e| Hit::Element(e));
            }
        }
        let top = self.drawn_top_at(step);
        let (_, summ) = self.bytes_at(step);
        if summ > 0 && bytes >= top && bytes < top + summ as f64 {
            return Some(Hit::Summarized);
        }
        None
    }

    /// Step of a trace row's event, if that row is an event of this layout.
    pub fn step_of_row(&self, row: u32) -> Option<u32> {
        self.row_event.get(row as usize).filter(|&&i| i != u32::MAX).and_then(|&i| self.event_step.get(i as usize)).copied()
    }

    /// Step at or after which trace row `row` has happened: the step of the first event whose row
    /// is `>= row` (for placing markers of rows that are not events, such as `oom`).
    pub fn step_for_row(&self, row: u32) -> u32 {
        let i = self.event_row.partition_point(|&r| r != u32::MAX && r < row);
        self.event_step.get(i).copied().unwrap_or(self.steps)
    }

    /// Trace row of the event at a step (the last event at or before it).
    pub fn row_at(&self, step: f64) -> Option<u32> {
        self.event_at(step).and_then(|i| self.event_row.get(i)).copied().filter(|&r| r != u32::MAX)
    }

    /// Per-column maxima of live bytes over `columns` equal slices of [a, b) (for the minimap).
    pub fn column_max(&self, a: f64, b: f64, columns: usize) -> Vec<u64> {
        let mut out = Vec::with_capacity(columns);
        let w = (b - a) / columns.max(1) as f64;
        for c in 0..columns {
            let x0 = a + w * c as f64;
            out.push(self.max_live_between(x0, x0 + w));
        }
        out
    }
}

/// Step of the event whose trace time is nearest to `time_us`, for placing timed marks (such as
/// `external_annotations`) on the step axis. `trace` is the trace the layout was built from; its
/// times are taken as recorded, in non-decreasing order (events without a time count as earlier
/// than any time). Ties go to the earlier event. `None` when no event has a time.
pub fn step_at_time(layout: &Layout, trace: &Trace, time_us: i64) -> Option<f64> {
    let time_of = |i: usize| -> Option<i64> {
        let row = *layout.event_row.get(i)?;
        if row == u32::MAX {
            return None;
        }
        trace.time_us_at(row as usize)
    };
    let n = layout.event_step.len();
    // First event with a time >= time_us.
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if time_of(mid).is_none_or(|t| t < time_us) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let after = (lo..n).find_map(|i| time_of(i).map(|t| (i, t)));
    let before = (0..lo).rev().find_map(|i| time_of(i).map(|t| (i, t)));
    let best = match (before, after) {
        (Some((i, a)), Some((j, b))) => {
            if time_us.abs_diff(a) <= time_us.abs_diff(b) {
                i
            } else {
                j
            }
        }
        (Some((i, _)), None) | (None, Some((i, _))) => i,
        (None, None) => return None,
    };
    layout.event_step.get(best).map(|&s| f64::from(s))
}

fn ghost(addr: u64, size: u64, stack: u32, stream: u32, version: u32) -> Element {
    Element {
        addr,
        size_bytes: size,
        stack,
        stream,
        alloc_row: None,
        free_row: None,
        origin: Origin::Ghost,
        version,
        alloc_step: 0,
        free_step: None,
        total_after_alloc_bytes: 0,
        band: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_index_matches_brute_force() {
        let mut items = Vec::new();
        let mut x: u64 = 12345;
        for b in 0..1000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let s = (x >> 33) as u32 % 5000;
            let len = (x >> 13) as u32 % 300;
            items.push((s, s + len, b));
        }
        let idx = IntervalIndex::build(items.clone());
        for q in (0..5400).step_by(37) {
            let (a, b) = (q, q + (q % 50));
            let mut got = Vec::new();
            idx.overlapping(a, b, &mut got);
            got.sort_unstable();
            let mut want: Vec<u32> = items.iter().filter(|(s, e, _)| *s <= b && *e >= a).map(|x| x.2).collect();
            want.sort_unstable();
            assert_eq!(got, want, "query {a}..{b}");
        }
    }

    fn fixtures() -> Vec<std::path::PathBuf> {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut out = Vec::new();
        for dir in ["../shared/fixtures", "tests/data/real", "tests/data/synth"] {
            if let Ok(rd) = std::fs::read_dir(base.join(dir)) {
                for e in rd.flatten() {
                    let p = e.path();
                    if p.extension().is_some_and(|x| x == "pickle") {
                        out.push(p);
                    }
                }
            }
        }
        out.sort();
        out
    }

    /// Live requested bytes after each trace row, replayed independently of the layout.
    fn independent_live(snap: &Snapshot, dev: usize) -> (u64, Vec<(u32, u64)>) {
        (crate::info::initial_live_bytes(snap, dev), crate::info::live_bytes_by_row(snap, dev))
    }

    fn check_invariants(l: &Layout, stride: u32) {
        let mut stack = Vec::new();
        let mut step = 0u32;
        while step < l.steps {
            for frac in [0.0, 0.5] {
                let x = f64::from(step) + frac;
                l.offsets_at(x, &mut stack);
                let sum: u64 = stack.iter().map(|&(b, _)| l.band_size(b)).sum();
                let (drawn, _) = l.bytes_at(x);
                assert_eq!(sum, drawn, "heights at step {x} sum to {sum}, drawn live bytes are {drawn}");
                for w in stack.windows(2) {
                    let (lower, upper) = (w[0], w[1]);
                    assert!(upper.1 + 0.5 >= lower.1 + l.band_size(lower.0) as f64, "bands overlap at step {x}: {w:?}");
                }
                if let Some(&(b, off)) = stack.last() {
                    let top = off + l.band_size(b) as f64;
                    assert!((top - l.drawn_top_at(x)).abs() <= 1.0 + 1e-9 * top, "stack top {top} differs from the drawn top {} at step {x}", l.drawn_top_at(x));
                }
            }
            step += stride;
        }
    }

    /// `column_envelopes` (block maxima) equals a scan of every event.
    fn check_envelopes(l: &Layout, columns: usize) {
        let bounds: Vec<f64> = (0..=columns).map(|c| f64::from(l.steps) * c as f64 / columns as f64).collect();
        let got = l.column_envelopes(&bounds);
        assert_eq!(got.len(), columns);
        for (c, (w, e)) in bounds.windows(2).zip(&got).enumerate() {
            let top = l.drawn_top_at(w[0]);
            let mut want = ColumnEnvelope { drawn_max_bytes: top, total_max_bytes: top + l.bytes_at(w[0]).1 as f64, drawn_at_peak_bytes: top };
            for i in 0..l.event_step.len() {
                let s = f64::from(l.event_step[i]);
                // An event on a boundary belongs to the column it starts (the first column's
                // start is covered by the stack at that step).
                if (s > w[0] || (c > 0 && s == w[0])) && s < w[1] {
                    let hi = l.event_drawn_before[i].max(l.event_drawn_bytes[i]) as f64;
                    want.drawn_max_bytes = want.drawn_max_bytes.max(hi);
                    if hi + l.event_summarized_bytes[i] as f64 > want.total_max_bytes {
                        want.total_max_bytes = hi + l.event_summarized_bytes[i] as f64;
                        want.drawn_at_peak_bytes = hi;
                    }
                }
            }
            assert_eq!(*e, want, "column {}..{} of {columns}", w[0], w[1]);
        }
    }

    /// Range maxima through the blocks equal a scan of every event, for ranges that start and end
    /// inside, across and on the edges of small blocks and blocks.
    fn check_range_maxima(l: &Layout) {
        let n = l.event_step.len();
        let mut cuts: Vec<usize> = vec![0, 1, SMALL - 1, SMALL, SMALL + 1, BLOCK - 1, BLOCK, BLOCK + 7, 3 * BLOCK + SMALL + 3, n / 3, n / 2 + 5, n.saturating_sub(1), n];
        cuts.retain(|&c| c <= n);
        for &a in &cuts {
            for &b in &cuts {
                if a >= b {
                    continue;
                }
                let want = (a..b).fold(None, |best: Option<usize>, i| match best {
                    Some(k) if l.event_after_bytes(k) >= l.event_after_bytes(i) => Some(k),
                    _ => Some(i),
                });
                assert_eq!(l.highest_event(a, b), want, "highest event of {a}..{b} of {n}");
                let (sa, sb) = (f64::from(l.event_step[a]), f64::from(l.event_step[b - 1]));
                let mut top = l.live_bytes_at(sa).max(l.live_bytes_at(sb));
                let (first, last) = (l.event_at(sa).unwrap_or(0), l.event_at(sb).map_or(0, |i| i + 1));
                for i in first..last {
                    top = top.max(l.event_drawn_before[i].max(l.event_drawn_bytes[i]) + l.event_summarized_bytes[i]);
                }
                assert_eq!(l.max_live_between(sa, sb), top, "max live between steps {sa} and {sb}");
            }
        }
    }

    /// The sweep of `band_edges` agrees with the stack computed at each step on its own: every
    /// band live at a sample has an edge, and the edge (linear between its vertices) passes
    /// through the band's offset there.
    fn check_edges(l: &Layout, samples: &[f64]) {
        let wanted: Vec<u32> = (0..l.band_count() as u32).collect();
        let edges = l.band_edges(&wanted, samples);
        let mut edge_of: HashMap<u32, &[(f64, f64)]> = HashMap::default();
        for (i, &b) in edges.bands.iter().enumerate() {
            let (start, end) = l.band_step_range(b);
            let e = edges.edge(i);
            assert!(!e.is_empty(), "band {b} listed without vertices");
            for w in e.windows(2) {
                assert!(w[0].0 < w[1].0, "band {b}: vertices not ascending: {w:?}");
            }
            for &(x, _) in e {
                assert!(f64::from(start) <= x && x <= f64::from(end), "band {b} has a vertex at {x} outside {start}..{end}");
            }
            edge_of.insert(b, e);
        }
        let mut stack = Vec::new();
        for &x in samples {
            l.offsets_at(x, &mut stack);
            for &(b, want) in &stack {
                let e = edge_of.get(&b).unwrap_or_else(|| panic!("band {b} live at {x} has no edge"));
                let i = e.partition_point(|v| v.0 <= x);
                let got = match (i.checked_sub(1).and_then(|i| e.get(i)), e.get(i)) {
                    (Some(&(x0, o0)), _) if x0 == x => o0,
                    (Some(&(x0, o0)), Some(&(x1, o1))) => o0 + (o1 - o0) * (x - x0) / (x1 - x0),
                    _ => panic!("band {b} live at {x}: its edge does not cover it ({e:?})"),
                };
                assert!((got - want).abs() < 0.5, "band {b} at {x}: edge {got}, stack {want}");
            }
        }
    }

    #[test]
    fn hide_freed_keeps_only_allocations_not_freed_in_the_trace() {
        for f in fixtures() {
            let bytes = std::fs::read(&f).expect("read fixture");
            let Ok(snap) = crate::load(&bytes) else { continue };
            for dev in 0..snap.devices.len() {
                let all = Layout::build(&snap, dev, Options { max_entries: 0, mode: Mode::Allocations, hide_freed: false });
                let kept = Layout::build(&snap, dev, Options { max_entries: usize::MAX, mode: Mode::Allocations, hide_freed: true });
                for b in 0..kept.band_count() as u32 {
                    let e = &kept.elements[kept.band_element[b as usize] as usize];
                    assert!(e.alloc_row.is_none() || e.free_row.is_none(), "{f:?}: a band freed within the trace");
                }
                let survivors = all.elements.iter().filter(|e| e.alloc_row.is_none() || e.free_row.is_none()).count();
                assert_eq!(kept.band_count(), survivors, "{f:?} device {dev}");
                // Only never-freed allocations remain, so the end is the same and nothing goes down.
                let end = f64::from(all.steps);
                if all.steps > 0 && kept.steps > 0 {
                    assert_eq!(kept.live_bytes_at(f64::from(kept.steps)), all.live_bytes_at(end), "{f:?} device {dev}");
                }
                check_invariants(&kept, (kept.steps / 2000).max(1));
            }
        }
    }

    #[test]
    fn invariants_hold_on_every_fixture() {
        let files = fixtures();
        assert!(!files.is_empty(), "no fixtures found");
        for f in files {
            let bytes = std::fs::read(&f).expect("read fixture");
            let Ok(snap) = crate::load(&bytes) else { continue };
            for dev in 0..snap.devices.len() {
                let (initial, expect) = independent_live(&snap, dev);
                let mut peaks = Vec::new();
                for n in [DEFAULT_MAX_ENTRIES, 100, 1, 0] {
                    let l = Layout::build(&snap, dev, Options { max_entries: n, mode: Mode::Allocations, hide_freed: false });
                    // Nothing is lost: live bytes after every event equal the independent replay.
                    assert_eq!(l.initial_drawn_bytes + l.initial_summarized_bytes, if expect.is_empty() && l.event_row.first() == Some(&u32::MAX) { l.initial_drawn_bytes + l.initial_summarized_bytes } else { initial }, "{f:?} initial");
                    for &(row, want) in &expect {
                        let s = l.step_of_row(row).expect("event step");
                        assert_eq!(l.live_bytes_at(f64::from(s)), want, "{f:?} n={n} row {row}");
                    }
                    let stride = (l.steps / 4000).max(1);
                    check_invariants(&l, stride);
                    check_edges(&l, &l.sample_steps(0.0, f64::from(l.steps), 300));
                    check_envelopes(&l, 5);
                    check_envelopes(&l, 41);
                    check_range_maxima(&l);
                    let mid = f64::from(l.steps) / 2.0;
                    check_edges(&l, &l.sample_steps(mid, mid + 250.0, 1000));
                    peaks.push(l.peak_bytes);
                }
                assert!(peaks.windows(2).all(|w| w[0] == w[1]), "{f:?}: peak changes with detail: {peaks:?}");
                let info = crate::info::info(&snap);
                assert_eq!(peaks[0], info.devices[dev].peak_allocated_bytes, "{f:?}: peak differs from info");
            }
        }
    }

    /// Random traces (allocs, frees in any order, frees of allocations made before the trace):
    /// the invariants hold, the sweep matches the stack, nothing is lost at any detail.
    #[test]
    fn invariants_hold_on_generated_traces() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for case in 0..40 {
            let mut live: Vec<(u64, u64)> = Vec::new();
            let mut entries = Vec::new();
            let mut addr = 0x7f00_0000_0000u64;
            for _ in 0..(50 + next(600)) {
                let r = next(100);
                if r < 55 || live.is_empty() {
                    let size = match next(4) {
                        0 => 1 + next(512),
                        1 => 4096 * (1 + next(64)),
                        2 => 1 << (20 + next(8)),
                        _ => 1 + next(1 << 20),
                    };
                    addr += 1 << 30;
                    live.push((addr, size));
                    entries.push(format!(r#"{{"action":"alloc","addr":{addr},"size":{size},"stream":0}}"#));
                } else if r < 95 {
                    let (a, size) = live.swap_remove(next(live.len() as u64) as usize);
                    entries.push(format!(r#"{{"action":"free_completed","addr":{a},"size":{size},"stream":0}}"#));
                } else {
                    // Allocated before the trace began.
                    entries.push(format!(r#"{{"action":"free_completed","addr":{},"size":{},"stream":0}}"#, 0x10_0000 + case * 4096 + next(1000) * 8, 1 + next(1 << 16)));
                }
            }
            let json = format!(r#"{{"segments":[],"device_traces":[[{}]]}}"#, entries.join(","));
            let snap = crate::load(json.as_bytes()).expect("load");
            let (_, expect) = independent_live(&snap, 0);
            let mut peaks = Vec::new();
            for n in [usize::MAX, 7, 1, 0] {
                let l = Layout::build(&snap, 0, Options { max_entries: n, ..Options::default() });
                for &(row, want) in &expect {
                    let s = l.step_of_row(row).expect("event step");
                    assert_eq!(l.live_bytes_at(f64::from(s)), want, "case {case} n={n} row {row}");
                }
                check_invariants(&l, 1);
                check_edges(&l, &l.sample_steps(0.0, f64::from(l.steps), 10_000));
                let coarse = l.sample_steps(0.0, f64::from(l.steps), 37);
                check_edges(&l, &coarse);
                // Sampling never loses the peak.
                let highest = coarse.iter().map(|&x| l.live_bytes_at(x)).max().unwrap_or(0);
                assert_eq!(highest.max(l.initial_drawn_bytes + l.initial_summarized_bytes), l.peak_bytes, "case {case} n={n}");
                peaks.push(l.peak_bytes);
            }
            assert!(peaks.windows(2).all(|w| w[0] == w[1]), "case {case}: peak changes with detail: {peaks:?}");
        }
    }

    /// Interleaved short- and long-lived allocations, then every short-lived one freed from the
    /// bottom up: PyTorch's layout writes two points into every band above each free, about
    /// 2 x 20,000 x 30,000 here. The implicit layout stores none of them and stays exact.
    #[test]
    fn frees_under_many_live_bands_cost_nothing_per_band_above() {
        let pairs = 20_000u64;
        let mut entries = Vec::new();
        for k in 0..pairs {
            entries.push(format!(r#"{{"action":"alloc","addr":{},"size":512,"stream":0}}"#, 0x1000_0000 + k * 1024));
            entries.push(format!(r#"{{"action":"alloc","addr":{},"size":1024,"stream":0}}"#, 0x9000_0000 + k * 1024));
        }
        for k in 0..pairs {
            entries.push(format!(r#"{{"action":"free_completed","addr":{},"size":512,"stream":0}}"#, 0x1000_0000 + k * 1024));
        }
        let json = format!(r#"{{"segments":[],"device_traces":[[{}]]}}"#, entries.join(","));
        let snap = crate::load(json.as_bytes()).expect("load");
        let l = Layout::build(&snap, 0, Options { max_entries: usize::MAX, ..Options::default() });
        assert_eq!(l.band_count(), 2 * pairs as usize);
        assert_eq!(l.peak_bytes, pairs * 1536);
        // Every free slides the bands above it; at the end only the long-lived ones remain.
        let end = f64::from(l.steps) - 0.5;
        let mut stack = Vec::new();
        l.offsets_at(end, &mut stack);
        assert_eq!(stack.len(), pairs as usize);
        for (k, &(_, off)) in stack.iter().enumerate() {
            assert_eq!(off, 1024.0 * k as f64, "long-lived band {k} at the end");
        }
        // Halfway through the frees: the first half of the short-lived ones are gone.
        let half = l.step_of_row(2 * pairs as u32 + pairs as u32 / 2).expect("event");
        l.offsets_at(f64::from(half), &mut stack);
        let top = stack.last().map(|&(b, off)| off + l.band_size(b) as f64);
        assert_eq!(top, Some(l.drawn_top_at(f64::from(half))));
        l.offsets_at(f64::from(half) + f64::from(SLIDE_STEPS), &mut stack);
        let top = stack.last().map(|&(b, off)| off + l.band_size(b) as f64);
        assert_eq!(top, Some(l.bytes_at(f64::from(half)).0 as f64));
        let samples = l.sample_steps(0.0, f64::from(l.steps), 40);
        let edges = l.band_edges(&[0, 1, 2 * pairs as u32 - 1], &samples);
        assert_eq!(edges.bands, vec![0, 1, 2 * pairs as u32 - 1]);
        for (i, &b) in edges.bands.iter().enumerate() {
            for &(x, off) in edges.edge(i) {
                if x < f64::from(l.band_step_range(b).1) {
                    assert_eq!(l.band_offset_at(b, x), Some(off), "band {b} at {x}");
                }
            }
        }
    }

    #[test]
    fn hit_test_finds_the_band_under_a_point() {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/resnet50_fixed.pickle");
        let Ok(bytes) = std::fs::read(base) else { return };
        let snap = crate::load(&bytes).expect("load");
        let l = Layout::build(&snap, 0, Options::default());
        let mut checked = 0;
        for b in (0..l.band_count() as u32).step_by(7) {
            let (s0, s1) = l.band_step_range(b);
            if s1 <= s0 {
                continue;
            }
            let x = f64::from(s0) + 0.25;
            let off = l.band_offset_at(b, x).expect("live");
            let y = off + l.band_size(b) as f64 / 2.0;
            assert_eq!(l.hit_test(x, y), Some(Hit::Element(l.band_element[b as usize])), "band {b}");
            checked += 1;
        }
        assert!(checked > 10);
        assert_eq!(l.hit_test(1.0, l.peak_bytes as f64 * 10.0), None);
    }

    #[test]
    fn step_at_time_finds_the_nearest_timed_event() {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/resnet50_fixed.pickle");
        let Ok(bytes) = std::fs::read(base) else { return };
        let snap = crate::load(&bytes).expect("load");
        let l = Layout::build(&snap, 0, Options::default());
        let t = &snap.devices[0].trace;
        let timed: Vec<(u32, i64)> = (0..l.event_step.len())
            .filter_map(|i| {
                let r = l.event_row[i];
                (r != u32::MAX).then(|| t.time_us_at(r as usize).map(|tu| (l.event_step[i], tu))).flatten()
            })
            .collect();
        assert!(timed.len() > 100);
        // An event's own time maps to the first event with that time.
        for &(step, tu) in timed.iter().step_by(97) {
            let got = step_at_time(&l, t, tu).expect("timed");
            let first = timed.iter().find(|x| x.1 == tu).expect("present").0;
            assert_eq!(got, f64::from(first), "time {tu} (event step {step})");
        }
        // Before the first and after the last event.
        assert_eq!(step_at_time(&l, t, timed[0].1 - 1_000_000), Some(f64::from(timed[0].0)));
        let last = timed[timed.len() - 1];
        assert_eq!(step_at_time(&l, t, last.1 + 1_000_000), Some(f64::from(timed.iter().find(|x| x.1 == last.1).expect("last").0)));
        // Between two events: the nearer one.
        if let Some(w) = timed.windows(2).find(|w| w[1].1 - w[0].1 >= 10) {
            assert_eq!(step_at_time(&l, t, w[0].1 + 1), Some(f64::from(w[0].0)));
            assert_eq!(step_at_time(&l, t, w[1].1 - 1), Some(f64::from(w[1].0)));
        }
        // A trace without times.
        assert_eq!(step_at_time(&l, &Trace::default(), 5), None);
    }
}
