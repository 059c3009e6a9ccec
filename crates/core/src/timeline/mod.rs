//! The Active Memory Timeline layout (as PyTorch's viewer defines it), built in O(n log n) instead
//! of PyTorch's O(events x live).
//!
//! - x is the event step: each alloc or free takes one step, and a free with allocations live
//!   above it takes three more while those slide down over the gap. Steps are counted over every
//!   allocation, drawn, summarized or hidden, so Detail and hide freed never move an event on the
//!   x axis (nor the annotations and OOM marks placed by event).
//! - Allocations are stacked in allocation order; new ones go on top.
//! - The largest `max_entries` allocations are drawn as bands; the rest are summarized in one band
//!   that sits on top of the drawn stack. With [`Options::focus_rows`] they are the largest among
//!   those live in a window of the trace ([`focus`]), so a zoomed view draws its own allocations.
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

mod build;
pub use build::LayoutBuilder;
mod edges;
pub mod focus;
mod interval;
mod maxima;
mod query;
mod wire;

#[cfg(test)]
mod focus_tests;
#[cfg(test)]
mod tests;

use interval::IntervalIndex;
use maxima::BlockMaxima;
pub use query::step_at_time;

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
    /// what remains is what was live at the end, or live before the trace began. Their events
    /// keep their steps (the x axis is the same) but add nothing to the stack.
    pub hide_freed: bool,
    /// Draw the largest among the allocations live in this window of trace rows (inclusive:
    /// allocated at or before the second, freed at or after the first) instead of the whole
    /// trace: [`focus`]. `None`: the whole trace, as PyTorch's viewer does.
    pub focus_rows: Option<(u32, u32)>,
}

impl Options {
    /// Whether these options leave element `e` out ([`Options::hide_freed`]).
    pub fn hides(&self, e: &Element) -> bool {
        self.hide_freed && e.alloc_row.is_some() && e.free_row.is_some()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options { max_entries: DEFAULT_MAX_ENTRIES, mode: Mode::Allocations, hide_freed: false, focus_rows: None }
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

/// An index into [`Layout::elements`], typed so that a position in another list (the drawn
/// bands, a search's matches, a table's rows) cannot be read as one. Written as its number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ElementIndex(u32);

impl ElementIndex {
    /// The element at position `i` of [`Layout::elements`].
    pub const fn new(i: u32) -> ElementIndex {
        ElementIndex(i)
    }

    /// Its position in [`Layout::elements`].
    pub const fn get(self) -> u32 {
        self.0
    }

    /// Its position in [`Layout::elements`], to index it.
    pub const fn as_usize(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for ElementIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A hit of [`Layout::hit_test`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Hit {
    /// A drawn allocation.
    Element(ElementIndex),
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

/// The laid-out timeline of one device.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// All lifetimes: traced, freed-without-alloc, ghosts.
    pub elements: Vec<Element>,
    /// Band -> element: its [`ElementIndex`]'s number, kept as `u32` for the wire's columns
    /// (read one with [`Layout::element_of_band`]).
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
    /// Drawn live bytes after each event (before it: [`Layout::drawn_before`]).
    pub event_drawn_bytes: Vec<u64>,
    /// Summarized live bytes after each event.
    pub event_summarized_bytes: Vec<u64>,
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
    index: IntervalIndex,
    /// Maxima per block of [`SMALL`] events, for range-max queries.
    small_blocks: BlockMaxima,
    /// Maxima per block of [`BLOCK`] events.
    blocks: BlockMaxima,
    /// Options used.
    pub options: Options,
}

/// A stable key of one allocation lifetime, for selection: its address and the trace row of its
/// alloc. A click keyed so never picks a later allocation at a reused address. Lifetimes live
/// before the trace have no alloc row; the row of their free (`None`: ghost, never freed) tells
/// them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ElementKey {
    /// Address.
    pub addr: u64,
    /// Trace row of the alloc (`None`: live before the trace).
    pub alloc_row: Option<u32>,
    /// For lifetimes live before the trace, the row of their free; `None` otherwise.
    pub pre_trace_free_row: Option<u32>,
}

impl ElementKey {
    /// The key of a lifetime with these fields.
    pub fn new(addr: u64, alloc_row: Option<u32>, free_row: Option<u32>) -> ElementKey {
        ElementKey { addr, alloc_row, pre_trace_free_row: if alloc_row.is_none() { free_row } else { None } }
    }
}

impl Layout {
    /// The element drawn as `band`, if there is such a band.
    pub fn element_of_band(&self, band: u32) -> Option<ElementIndex> {
        self.band_element.get(band as usize).map(|&e| ElementIndex::new(e))
    }

    /// The element at `i`, if there is one.
    pub fn element(&self, i: ElementIndex) -> Option<&Element> {
        self.elements.get(i.as_usize())
    }

    /// Drawn live bytes before event `i`: after the event before it (they differ from those
    /// after it only by the freed size during a slide).
    pub fn drawn_before(&self, i: usize) -> u64 {
        match i.checked_sub(1) {
            Some(p) => self.event_drawn_bytes.get(p).copied().unwrap_or(0),
            None => self.initial_drawn_bytes,
        }
    }

    /// Whether element `e` is left out by [`Options::hide_freed`].
    pub fn is_hidden(&self, e: &Element) -> bool {
        self.options.hides(e)
    }

    /// Whether the layout has no history: at most one event and one step, from a trace of at
    /// most one entry (`enabled='state'`) or none. Every step then shows the state when the
    /// snapshot was taken (allocations known from the segments' blocks), to be drawn as one
    /// column, not as a timeline.
    pub fn is_moment(&self) -> bool {
        !self.elements.is_empty() && self.steps <= 1 && self.event_step.len() <= 1
    }

    /// How many elements are shown (drawn or summarized): all but the hidden ones.
    pub fn shown_count(&self) -> usize {
        if self.options.hide_freed {
            self.elements.iter().filter(|e| !self.is_hidden(e)).count()
        } else {
            self.elements.len()
        }
    }

    /// The stable key of element `e`.
    pub fn element_key(&self, e: ElementIndex) -> Option<ElementKey> {
        self.element(e).map(|x| ElementKey::new(x.addr, x.alloc_row, x.free_row))
    }

    /// The element with this key (its band is `elements[e].band`), if any. O(elements).
    pub fn element_by_key(&self, key: ElementKey) -> Option<ElementIndex> {
        self.elements
            .iter()
            .position(|x| ElementKey::new(x.addr, x.alloc_row, x.free_row) == key)
            .map(|i| ElementIndex::new(i as u32))
    }
}
