//! What painting reads and shares: [`Frame`] (the page's elements, its state and what was
//! derived from it, all read-only), the theme's colours ([`Palette`]) and the fonts, what a frame drew ([`FrameInfo`]), and
//! [`edges`]: the band edges of the visible window in device pixels, which everything that
//! outlines or colours bands over the timeline uses.

pub mod edges;

pub use crate::canvas::HeldWhat;

use memviz_core::timeline::{BandEdges, Layout};
use memviz_view::state::{OpenFile, ViewState};
use memviz_view::viewport::PlotRect;

use crate::dom::Ui;
use memviz_view::derived::Derived;

/// What a frame is drawn from. Painting reads these and changes none of them; what it must
/// remember of the DOM goes into the painter's own memo.
#[derive(Clone, Copy)]
pub struct Frame<'a> {
    /// The page's elements.
    pub ui: &'a Ui,
    /// The page's state.
    pub state: &'a ViewState,
    /// What was computed from it.
    pub derived: &'a Derived,
}

impl Frame<'_> {
    /// The file shown.
    pub fn file(&self) -> Option<&OpenFile> {
        self.state.file()
    }

    /// The plot area of the main canvas, CSS px.
    pub fn plot_rect(&self) -> PlotRect {
        self.state.plot_rect()
    }

    /// The plot area of the minimap, CSS px.
    pub fn minimap_rect(&self) -> PlotRect {
        self.state.minimap_rect()
    }

    /// The colours of the theme shown.
    pub fn palette(&self) -> &'static Palette {
        self.state.theme().palette()
    }

    /// Whether the base of the timeline is shown from the held copies now.
    pub fn previewing(&self) -> bool {
        self.state.previewing(self.ui.now_ms())
    }
}

/// The canvases' colours: [`memviz_view::theme::Palette`], chosen from the state
/// ([`Frame::palette`]), never read from the DOM.
pub use memviz_view::theme::Palette;

pub(crate) const FONT: &str = "12px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
pub(crate) const SMALL_FONT: &str = "11px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

pub(crate) fn colour_of_name(name: &str) -> usize {
    // FNV-1a: the same name always gets the same colour.
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    (h % 10) as usize
}

/// What a frame drew, for tests and the status line.
#[derive(Clone, Debug, Default)]
pub struct FrameInfo {
    /// Bands drawn one by one.
    pub bands_drawn: usize,
    /// Vertices sent to the canvas for bands.
    pub vertices_drawn: usize,
    /// x tick labels, left to right.
    pub x_labels: Vec<String>,
    /// x of each OOM marker in view (CSS px from the canvas' left edge).
    pub oom_x_px: Vec<f64>,
    /// The band edges drawn, for the marks drawn over the same view (a hovered band's outline
    /// takes its edge from here rather than sweeping the layout again), shared with the plot
    /// area a small timeline keeps.
    pub edges: Option<std::rc::Rc<ViewEdges>>,
    /// Drawn from the held copies of earlier frames, not from the layout.
    pub preview: bool,
    /// An exact frame whose held copy is still to be made ([`crate::render::hold_prepared`]): it
    /// had no held canvas to copy into.
    pub hold_later: bool,
}

/// Band edges computed for one view of one layout.
#[derive(Clone, Debug, Default)]
pub struct ViewEdges {
    /// The layout's address and band count (a layout is not moved while it is shown).
    pub(crate) layout: (usize, usize),
    /// Steps in view and plot width, bit for bit.
    pub(crate) window: (u64, u64, u64),
    /// Bands smaller than this (bytes) were left out.
    pub(crate) min_size_bytes: f64,
    pub(crate) edges: BandEdges,
}

impl ViewEdges {
    pub(crate) fn key(layout: &Layout, s_left: f64, s_right: f64, width_dev: f64) -> ((usize, usize), (u64, u64, u64)) {
        (
            (std::ptr::from_ref(layout) as usize, layout.band_count()),
            (s_left.to_bits(), s_right.to_bits(), width_dev.to_bits()),
        )
    }
}
