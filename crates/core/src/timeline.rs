//! The Active Memory Timeline layout (reference study, section 3.1), built in O(n log n + V)
//! where V is the number of band vertices written, instead of PyTorch's O(events x live).
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
//! Queries for drawing and hovering: [`Layout::bands_overlapping`] (interval index, O(log n + k)),
//! [`Layout::band_offset_at`] (binary search in the band's vertices), [`Layout::hit_test`],
//! [`Layout::max_live_between`] (block maxima), [`Layout::live_bytes_at`].


type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

use crate::snapshot::{Action, BlockState, Snapshot, Trace};

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
    /// Band vertices: band `b` owns `pt_step[band_pts[b]..band_pts[b+1]]`.
    band_pts: Vec<u32>,
    pt_step: Vec<u32>,
    pt_offset: Vec<u64>,
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
    block_max: Vec<u64>,
    /// Options used.
    pub options: Options,
}

const BLOCK: usize = 256;

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
        // Phase 3: replay. The drawn stack is a Vec of bands in stack order; positions are found
        // through a map (band -> slot) maintained with tombstones and periodic compaction, so a
        // free costs O(elements above it) for the vertices it must write, not a linear search.
        let mut stack_bands: Vec<u32> = Vec::new(); // bottom to top; u32::MAX = removed
        let mut slot_of: Vec<u32> = Vec::new(); // band -> slot in stack_bands
        let mut band_offset: Vec<u64> = Vec::new(); // current offset of each live band
        let mut band_points: Vec<Vec<(u32, u64)>> = Vec::new();
        let mut tombstones = 0usize;
        let mut drawn_total: u64 = 0;
        let mut summarized_total: u64 = 0;
        let mut live = vec![false; l.elements.len()];
        let mut step: u32 = 0;
        let mut peak = 0u64;
        let mut peak_step = 0u32;

        let add_band = |l: &mut Layout,
                            e: u32,
                            step: u32,
                            drawn_total: &mut u64,
                            stack_bands: &mut Vec<u32>,
                            slot_of: &mut Vec<u32>,
                            band_offset: &mut Vec<u64>,
                            band_points: &mut Vec<Vec<(u32, u64)>>| {
            let b = l.band_element.len() as u32;
            l.band_element.push(e);
            slot_of.push(stack_bands.len() as u32);
            stack_bands.push(b);
            band_offset.push(*drawn_total);
            band_points.push(vec![(step, *drawn_total)]);
            if let Some(el) = l.elements.get_mut(e as usize) {
                el.band = Some(b);
                *drawn_total += el.size_bytes;
            }
        };

        for &e in &initially {
            live[e as usize] = true;
            if drawn[e as usize] {
                add_band(&mut l, e, 0, &mut drawn_total, &mut stack_bands, &mut slot_of, &mut band_offset, &mut band_points);
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
                    add_band(&mut l, e, step, &mut drawn_total, &mut stack_bands, &mut slot_of, &mut band_offset, &mut band_points);
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
                    let slot = slot_of[bi] as usize;
                    band_points[bi].push((step, band_offset[bi]));
                    stack_bands[slot] = u32::MAX;
                    tombstones += 1;
                    let mut any_above = false;
                    for &ab in stack_bands.iter().skip(slot + 1) {
                        if ab == u32::MAX {
                            continue;
                        }
                        any_above = true;
                        let abi = ab as usize;
                        let off = band_offset[abi];
                        band_points[abi].push((step, off));
                        band_points[abi].push((step + SLIDE_STEPS, off - size));
                        band_offset[abi] = off - size;
                    }
                    drawn_total -= size;
                    if any_above {
                        slides = true;
                    }
                    if tombstones > 64 && tombstones * 2 > stack_bands.len() {
                        stack_bands.retain(|&x| x != u32::MAX);
                        for (i, &x) in stack_bands.iter().enumerate() {
                            slot_of[x as usize] = i as u32;
                        }
                        tombstones = 0;
                    }
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
        // Close the bands still live.
        for &b in &stack_bands {
            if b != u32::MAX {
                let bi = b as usize;
                band_points[bi].push((l.steps, band_offset[bi]));
            }
        }
        l.peak_bytes = peak;
        l.peak_step = peak_step;
        // Flatten band vertices.
        l.band_pts.reserve(band_points.len() + 1);
        l.band_pts.push(0);
        for pts in band_points {
            for (s, o) in pts {
                l.pt_step.push(s);
                l.pt_offset.push(o);
            }
            l.band_pts.push(l.pt_step.len() as u32);
        }
        // Interval index over bands.
        let items: Vec<(u32, u32, u32)> = (0..l.band_element.len() as u32)
            .map(|b| {
                let (s, e) = l.band_step_range(b);
                (s, e, b)
            })
            .collect();
        l.index = IntervalIndex::build(items);
        // Block maxima of live bytes per event, for range-max queries.
        l.block_max = l
            .event_drawn_before
            .chunks(BLOCK)
            .zip(l.event_drawn_bytes.chunks(BLOCK).zip(l.event_summarized_bytes.chunks(BLOCK)))
            .map(|(before, (after, summ))| {
                before.iter().zip(after.iter().zip(summ)).map(|(&bf, (&af, &s))| bf.max(af) + s).max().unwrap_or(0)
            })
            .collect();
        l
    }

    /// Number of drawn bands.
    pub fn band_count(&self) -> usize {
        self.band_element.len()
    }

    /// Vertices of a band: (step, lower offset in bytes); the upper edge is offset + size.
    pub fn band_points(&self, band: u32) -> (&[u32], &[u64]) {
        let b = band as usize;
        let (Some(&s), Some(&e)) = (self.band_pts.get(b), self.band_pts.get(b + 1)) else { return (&[], &[]) };
        (
            self.pt_step.get(s as usize..e as usize).unwrap_or(&[]),
            self.pt_offset.get(s as usize..e as usize).unwrap_or(&[]),
        )
    }

    /// Total number of band vertices.
    pub fn vertex_count(&self) -> usize {
        self.pt_step.len()
    }

    /// First and last step of a band.
    pub fn band_step_range(&self, band: u32) -> (u32, u32) {
        let (steps, _) = self.band_points(band);
        (steps.first().copied().unwrap_or(0), steps.last().copied().unwrap_or(0))
    }

    /// Size of a band's element.
    pub fn band_size(&self, band: u32) -> u64 {
        self.band_element.get(band as usize).and_then(|&e| self.elements.get(e as usize)).map_or(0, |e| e.size_bytes)
    }

    /// Lower offset of a band at a (fractional) step, interpolated; `None` outside its life.
    pub fn band_offset_at(&self, band: u32, step: f64) -> Option<f64> {
        let (steps, offs) = self.band_points(band);
        let first = f64::from(*steps.first()?);
        let last = f64::from(*steps.last()?);
        if step < first || step >= last {
            return None;
        }
        // Last vertex with step <= x.
        let i = steps.partition_point(|&s| f64::from(s) <= step).saturating_sub(1);
        let (s0, o0) = (f64::from(steps[i]), offs[i] as f64);
        match (steps.get(i + 1), offs.get(i + 1)) {
            (Some(&s1), Some(&o1)) if f64::from(s1) > s0 => {
                let o1 = o1 as f64;
                Some(o0 + (o1 - o0) * (step - s0) / (f64::from(s1) - s0))
            }
            _ => Some(o0),
        }
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
        match self.event_at(step) {
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
        let mut i = first;
        let val = |i: usize| self.event_drawn_before[i].max(self.event_drawn_bytes[i]) + self.event_summarized_bytes[i];
        while i < last {
            if i % BLOCK == 0 && i + BLOCK <= last {
                best = best.max(self.block_max.get(i / BLOCK).copied().unwrap_or(0));
                i += BLOCK;
            } else {
                best = best.max(val(i));
                i += 1;
            }
        }
        best
    }

    /// What is under a point: a drawn allocation, the summarized band, or nothing.
    pub fn hit_test(&self, step: f64, bytes: f64) -> Option<Hit> {
        if step < 0.0 || bytes < 0.0 {
            return None;
        }
        let s = step.floor().max(0.0) as u32;
        let mut cands = Vec::new();
        self.index.overlapping(s, s.saturating_add(1), &mut cands);
        for b in cands {
            if let Some(off) = self.band_offset_at(b, step) {
                let size = self.band_size(b) as f64;
                if bytes >= off && bytes < off + size {
                    return self.band_element.get(b as usize).map(|&e| Hit::Element(e));
                }
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
        let mut step = 0u32;
        while step < l.steps {
            for frac in [0.0, 0.5] {
                let x = f64::from(step) + frac;
                let mut live: Vec<(f64, u64)> = l
                    .bands_overlapping(step, step + 1)
                    .into_iter()
                    .filter_map(|b| l.band_offset_at(b, x).map(|o| (o, l.band_size(b))))
                    .collect();
                live.sort_by(|a, b| a.0.total_cmp(&b.0));
                let sum: u64 = live.iter().map(|x| x.1).sum();
                let (drawn, _) = l.bytes_at(x);
                assert_eq!(sum, drawn, "heights at step {x} sum to {sum}, drawn live bytes are {drawn}");
                for w in live.windows(2) {
                    assert!(w[1].0 + 0.5 >= w[0].0 + w[0].1 as f64, "bands overlap at step {x}: {w:?}");
                }
                if let Some(last) = live.last() {
                    assert!(last.0 + last.1 as f64 <= l.drawn_top_at(x) + 0.5 + l.elements.iter().map(|e| e.size_bytes).max().unwrap_or(0) as f64);
                }
            }
            step += stride;
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
                    peaks.push(l.peak_bytes);
                }
                assert!(peaks.windows(2).all(|w| w[0] == w[1]), "{f:?}: peak changes with detail: {peaks:?}");
                let info = crate::info::info(&snap);
                assert_eq!(peaks[0], info.devices[dev].peak_allocated_bytes, "{f:?}: peak differs from info");
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
