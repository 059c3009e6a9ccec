//! [`Layout::build`]: one pass over a device's trace that gives every allocation its life, band
//! and stack position, the per-event totals, the interval index and the block maxima.

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

use crate::snapshot::{Action, BlockState, Snapshot};

use super::interval::IntervalIndex;
use super::maxima::{BlockMaxima, BLOCK, SMALL};
use super::{Element, Layout, Mode, Options, Origin, SLIDE_STEPS};

impl Layout {
    /// Lays out device `device_pos` (an index into `snap.devices`).
    #[allow(clippy::too_many_lines)] // the layout's single pass over the trace; not split yet
    pub fn build(snap: &Snapshot, device_pos: usize, options: Options) -> Layout {
        let mut l = Layout { options, ..Layout::default() };
        let Some(dev) = snap.devices.get(device_pos) else { return l };
        let t = &dev.trace;
        let (alloc_action, free_actions): (Action, &[Action]) = match options.mode {
            Mode::Allocations => (Action::Alloc, &[Action::FreeCompleted, Action::Free]),
            Mode::Segments => (Action::SegmentAlloc, &[Action::SegmentFree]),
            Mode::MappedPages => (Action::SegmentMap, &[Action::SegmentUnmap]),
        };
        // Room made once: a growing vector is copied whole at each doubling (WebAssembly's
        // realloc cannot remap), 27 ms of a 1M-entry layout in the page.
        let allocs = t.action.iter().filter(|&&a| a == alloc_action).count();
        let frees = t.action.iter().filter(|a| free_actions.contains(a)).count();
        l.elements.reserve(allocs);
        // Phase 1: pair events into lifetimes.
        let mut open: HashMap<u64, u32> = HashMap::default();
        open.reserve(allocs.min(1 << 16));
        let mut versions: HashMap<u64, u32> = HashMap::default();
        let mut actions: Vec<(u32, u32)> = Vec::with_capacity(allocs + frees); // (element, trace row)
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
                            l.elements.push(ghost(
                                b.address,
                                b.requested_size,
                                b.stack,
                                s.stream,
                                versions.get(&b.address).copied().unwrap_or(0),
                            ));
                            initially.push(e);
                        }
                    }
                }
                // Mapped pages are those of expandable segments only.
                Mode::MappedPages if !s.is_expandable => {}
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
        // Hidden allocations keep their events (and so their steps: the x axis does not depend on
        // what is shown) but add nothing to any band or total.
        let hidden = |e: &Element| options.hides(e);
        // Elements that are freed in the trace appear in `actions`; an initial element freed in the
        // trace must not be re-added when its free comes (it is already live).
        if actions.is_empty() {
            if let Some(e) = initially.pop() {
                actions.push((e, u32::MAX));
            }
        }
        // Detail: the largest max_entries elements are drawn (stable: ties keep index order).
        // Select the top max_entries by (size descending, index ascending) in O(n).
        let mut by_size: Vec<(std::cmp::Reverse<u64>, u32)> = l
            .elements
            .iter()
            .enumerate()
            .filter(|(_, e)| !hidden(e))
            .map(|(i, e)| (std::cmp::Reverse(e.size_bytes), i as u32))
            .collect();
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
        // freed band" is "is the highest live band above it" ([`Stack`]).
        //
        // Steps are those of the full picture (every allocation drawn, none hidden): a free takes
        // a slide's steps when anything live, drawn or not, sits above it. So Detail and hide
        // freed change what is drawn, never where an event is on the x axis. A drawn band's slide
        // implies one in the full picture (drawn bands are a subset, in the same order).
        // A trace of at most one entry (enabled='state') has no history: its one free, if any,
        // takes no slide, so every step shows the state when the snapshot was taken.
        let moment = t.len() <= 1;
        let events = actions.len();
        l.event_step.reserve(events);
        l.event_row.reserve(events);
        l.event_drawn_before.reserve(events);
        l.event_slides.reserve(events);
        l.event_drawn_bytes.reserve(events);
        l.event_summarized_bytes.reserve(events);
        l.row_event.reserve(t.len());
        let mut drawn_stack = Stack::default();
        let mut full = Stack::with_capacity(l.elements.len());
        let mut order = vec![u32::MAX; l.elements.len()];
        let mut drawn_total: u64 = 0;
        let mut summarized_total: u64 = 0;
        let mut live = vec![false; l.elements.len()];
        let mut step: u32 = 0;
        let mut peak = 0u64;
        let mut peak_step = 0u32;

        let add_band = |l: &mut Layout, e: u32, step: u32, drawn_total: &mut u64, drawn_stack: &mut Stack| {
            let b = l.band_element.len() as u32;
            l.band_element.push(e);
            l.band_start.push(step);
            l.band_end.push(u32::MAX);
            l.band_slides.push(false);
            drawn_stack.push();
            if let Some(el) = l.elements.get_mut(e as usize) {
                el.band = Some(b);
                *drawn_total += el.size_bytes;
            }
        };

        for &e in &initially {
            live[e as usize] = true;
            order[e as usize] = full.push();
            if drawn[e as usize] {
                add_band(&mut l, e, 0, &mut drawn_total, &mut drawn_stack);
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
                order[ei] = full.push();
                if hidden(&l.elements[ei]) {
                    l.elements[ei].alloc_step = step;
                    step += 1;
                    l.event_slides.push(false);
                    l.event_drawn_bytes.push(drawn_total);
                    l.event_summarized_bytes.push(summarized_total);
                    continue;
                }
                if drawn[ei] {
                    add_band(&mut l, e, step, &mut drawn_total, &mut drawn_stack);
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
                let full_slides = full.pop(order[ei]) && !moment;
                l.elements[ei].free_step = Some(step);
                if hidden(&l.elements[ei]) {
                    // Nothing drawn or summarized changes.
                } else if let Some(b) = l.elements[ei].band {
                    let bi = b as usize;
                    l.band_end[bi] = step;
                    slides = drawn_stack.pop(b) && !moment;
                    l.band_slides[bi] = slides;
                    drawn_total -= size;
                } else {
                    summarized_total = summarized_total.saturating_sub(size);
                }
                debug_assert!(full_slides || !slides, "a drawn slide without one in the full picture");
                step += if full_slides { 1 + SLIDE_STEPS } else { 1 };
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
        let items: Vec<(u32, u32, u32)> =
            (0..l.band_element.len() as u32).map(|b| (l.band_start[b as usize], l.band_reach(b), b)).collect();
        l.index = IntervalIndex::build(items);
        // Block maxima of live bytes per event, for range-max queries.
        l.small_blocks = BlockMaxima::of_events(&l, SMALL);
        l.blocks = BlockMaxima::of_blocks(&l.small_blocks, BLOCK / SMALL);
        l
    }
}

/// Live allocations in the order they became live (their stacking order), and the highest one.
/// Freed positions never come back, so each keeps a pointer down to a lower candidate
/// (compressed as it is followed): finding the new top after a free is near O(1) amortized.
#[derive(Default)]
struct Stack {
    live: Vec<bool>,
    /// For a freed position: a lower position with nothing live in between (`u32::MAX`: none).
    down: Vec<u32>,
    top: Option<u32>,
}

impl Stack {
    /// A stack with room for `n` allocations.
    fn with_capacity(n: usize) -> Stack {
        Stack { live: Vec::with_capacity(n), down: Vec::with_capacity(n), top: None }
    }

    /// A new allocation on top; its position.
    fn push(&mut self) -> u32 {
        let o = self.live.len() as u32;
        self.live.push(true);
        self.down.push(u32::MAX);
        self.top = Some(o);
        o
    }

    /// Frees position `o`; whether anything live sat above it.
    fn pop(&mut self, o: u32) -> bool {
        let i = o as usize;
        if !self.live.get(i).copied().unwrap_or(false) {
            return false;
        }
        self.live[i] = false;
        self.down[i] = o.checked_sub(1).unwrap_or(u32::MAX);
        let above = self.top.is_some_and(|t| t > o);
        if self.top == Some(o) {
            self.top = self.highest_live_from(o);
        }
        above
    }

    /// The highest live position at or below `o`.
    fn highest_live_from(&mut self, o: u32) -> Option<u32> {
        let mut r = o;
        while r != u32::MAX && !self.live[r as usize] {
            r = self.down[r as usize];
        }
        // Path compression: every freed position passed now points at the answer.
        let mut c = o;
        while c != u32::MAX && !self.live[c as usize] {
            let next = self.down[c as usize];
            self.down[c as usize] = r;
            c = next;
        }
        (r != u32::MAX).then_some(r)
    }
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
