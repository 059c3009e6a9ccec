//! Drawing: the timeline, the minimap and the page's controls, from the state and nothing else.
//!
//! Canvases have a backing store of CSS size × devicePixelRatio. Axes and text are drawn in CSS
//! pixels under a `devicePixelRatio` transform; the plot's shapes are computed in device pixels
//! so that level of detail (bands under half a device pixel are not drawn one by one) and
//! decimation (at most about two vertices per device-pixel column) match what the screen shows.

use std::fmt::Write as _;

use memviz_core::format::human_size;
use memviz_core::timeline::{BandEdges, Layout};
use wasm_bindgen::JsValue;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData, Path2d};

use crate::app::{App, Drag, OpenFile, Target};
use crate::model::column_envelopes;
use memviz_view::axis;
use memviz_view::decimate::decimate_into;
pub use memviz_view::layout_px::*;
use memviz_view::raster::{rgb, Raster, Rgb};
use memviz_view::view::View;
use memviz_view::viewport::{clamp_px, PlotRect, Viewport};
use memviz_view::xmap::XMap;

mod base;
mod controls;
mod edges;
mod hooks;
mod overlay;

pub use base::*;
pub use controls::*;
pub(crate) use edges::*;
use hooks::*;
use overlay::*;

/// Tableau10, as PyTorch's viewer uses; a band's colour is `PALETTE[element % 10]`.
pub const PALETTE: [&str; 10] =
    ["#4e79a7", "#f28e2c", "#e15759", "#76b7b2", "#59a14f", "#edc949", "#af7aa1", "#ff9da7", "#9c755f", "#bab0ab"];

/// [`PALETTE`] as pixels.
const PALETTE_RGB: [Rgb; 10] = [
    rgb(PALETTE[0]),
    rgb(PALETTE[1]),
    rgb(PALETTE[2]),
    rgb(PALETTE[3]),
    rgb(PALETTE[4]),
    rgb(PALETTE[5]),
    rgb(PALETTE[6]),
    rgb(PALETTE[7]),
    rgb(PALETTE[8]),
    rgb(PALETTE[9]),
];

/// Tableau10 at 35 % opacity, for annotations.
const PALETTE_LIGHT: [&str; 10] = [
    "rgba(78,121,167,0.35)",
    "rgba(242,142,44,0.35)",
    "rgba(225,87,89,0.35)",
    "rgba(118,183,178,0.35)",
    "rgba(89,161,79,0.35)",
    "rgba(237,201,73,0.35)",
    "rgba(175,122,161,0.35)",
    "rgba(255,157,167,0.35)",
    "rgba(156,117,95,0.35)",
    "rgba(186,176,171,0.35)",
];

/// Annotations of several names merged into one box where each is narrower than a pixel.
const MIXED_ANNOTATIONS_FILL: &str = "rgba(140,140,140,0.28)";
const MIXED_ANNOTATIONS_STROKE: &str = "#9a9a9a";

/// The summarized band.
pub const SUMMARIZED_FILL: &str = "#c9c9c9";
/// The area under the drawn stack (shows where bands are thinner than half a pixel).
pub const STACK_FILL: &str = "#9db0c4";
/// OOM markers.
pub const OOM_COLOUR: &str = "#d62728";
const GRID: &str = "#ececec";
const AXIS: &str = "#555";
const TEXT: &str = "#222";
const FONT: &str = "12px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const SMALL_FONT: &str = "11px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

fn colour_of_name(name: &str) -> usize {
    // FNV-1a: the same name always gets the same colour.
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    (h % 10) as usize
}

/// Sizes a canvas' backing store to CSS size × devicePixelRatio.
fn fit_canvas(canvas: &HtmlCanvasElement, css_w: f64, css_h: f64, dpr: f64) {
    let w = (css_w * dpr).round().max(1.0) as u32;
    let h = (css_h * dpr).round().max(1.0) as u32;
    if canvas.width() != w {
        canvas.set_width(w);
    }
    if canvas.height() != h {
        canvas.set_height(h);
    }
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
    /// takes its edge from here rather than sweeping the layout again).
    pub edges: Option<ViewEdges>,
    /// Drawn from the held copies of earlier frames, not from the layout.
    pub preview: bool,
}

/// Band edges computed for one view of one layout.
#[derive(Clone, Debug, Default)]
pub struct ViewEdges {
    /// The layout's address and band count (a layout is not moved while it is shown).
    layout: (usize, usize),
    /// Steps in view and plot width, bit for bit.
    window: (u64, u64, u64),
    /// Bands smaller than this (bytes) were left out.
    min_size_bytes: f64,
    edges: BandEdges,
}

impl ViewEdges {
    fn key(layout: &Layout, s_left: f64, s_right: f64, width_dev: f64) -> ((usize, usize), (u64, u64, u64)) {
        (
            (std::ptr::from_ref(layout) as usize, layout.band_count()),
            (s_left.to_bits(), s_right.to_bits(), width_dev.to_bits()),
        )
    }
}

/// What a held copy of the plot area shows, but for its window: the file and layout, the x
/// axis, the y scale and the canvas' size (CSS px and devicePixelRatio), bit for bit.
pub type HeldWhat = (Option<usize>, usize, View, memviz_view::xmap::XAxis, u64, (u64, u64, u64));

/// A copy of the plot area of an exactly drawn base frame (bands and fills, no grid), kept off
/// screen. A zoom or a pan changes only the x window, so its first frame stretches the copies
/// into the new window at once (a `drawImage` each) and the exact drawing follows once the
/// input rests: the very next frame shows the new window, whatever the trace's size.
pub struct HeldPlot {
    canvas: HtmlCanvasElement,
    ctx: CanvasRenderingContext2d,
    /// What the copy shows and its window `(x0, x1)`, when it holds one.
    held: std::cell::Cell<Option<(HeldWhat, f64, f64)>>,
}

impl HeldPlot {
    /// An empty copy (a canvas that is never put in the document).
    pub fn new(document: &web_sys::Document) -> Result<HeldPlot, JsValue> {
        use wasm_bindgen::JsCast as _;
        let canvas: HtmlCanvasElement =
            document.create_element("canvas")?.dyn_into().map_err(|_| JsValue::from_str("no canvas element"))?;
        canvas.set_width(0);
        canvas.set_height(0);
        let ctx = canvas
            .get_context("2d")?
            .ok_or_else(|| JsValue::from_str("no 2d context"))?
            .dyn_into::<CanvasRenderingContext2d>()
            .map_err(|_| JsValue::from_str("no 2d context"))?;
        Ok(HeldPlot { canvas, ctx, held: std::cell::Cell::new(None) })
    }

    /// Sizes the copy's canvas to `(w, h)` device px and has its pixels allocated now.
    fn reserve(&self, size: (f64, f64)) {
        let (w, h) = (size.0.max(0.0) as u32, size.1.max(0.0) as u32);
        if self.canvas.width() != w || self.canvas.height() != h {
            self.held.set(None);
            self.canvas.set_width(w);
            self.canvas.set_height(h);
            self.ctx.clear_rect(0.0, 0.0, 1.0, 1.0);
        }
    }

    fn shows(&self, what: &HeldWhat) -> Option<(f64, f64)> {
        self.held.get().filter(|h| h.0 == *what).map(|h| (h.1, h.2))
    }

    /// Copies `(x, y, w, h)` of `from` (device px), which shows window `(x0, x1)` of `what`.
    fn keep(&self, from: &HtmlCanvasElement, area: (f64, f64, f64, f64), what: HeldWhat, window: (f64, f64)) {
        let (x, y, w, h) = area;
        if w < 1.0 || h < 1.0 {
            self.held.set(None);
            return;
        }
        if self.canvas.width() != w as u32 || self.canvas.height() != h as u32 {
            self.canvas.set_width(w as u32);
            self.canvas.set_height(h as u32);
        } else {
            self.ctx.clear_rect(0.0, 0.0, w, h);
        }
        let ok = self
            .ctx
            .draw_image_with_html_canvas_element_and_sw_and_sh_and_dx_and_dy_and_dw_and_dh(
                from, x, y, w, h, 0.0, 0.0, w, h,
            )
            .is_ok();
        self.held.set(ok.then_some((what, window.0, window.1)));
    }
}

/// How many steps [`prepare_canvas`] takes: the timeline's two canvases, the minimap and the
/// two held copies.
pub const CANVAS_STEPS: usize = 5;

/// Sizes one of the timeline's and the minimap's canvases (`step` < [`CANVAS_STEPS`]) for the
/// state and has the browser allocate its pixels now, rather than in the first frame that draws
/// on it. One canvas a step, each in a task of its own: where the first touch of fresh memory
/// is slow, five canvases in one task took up to 50 ms, a single one up to 140 ms.
pub fn prepare_canvas(app: &App, step: usize) {
    let ui = &app.ui;
    let canvases = [
        (&ui.plot_layer, &ui.plot_layer_ctx, app.state.plot_css),
        (&ui.plot, &ui.plot_ctx, app.state.plot_css),
        (&ui.minimap, &ui.minimap_ctx, app.state.minimap_css),
    ];
    if let Some((canvas, ctx, css)) = canvases.get(step) {
        if css.0 > 0.0 && css.1 > 0.0 {
            fit_canvas(canvas, css.0, css.1, app.state.dpr);
            let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
            ctx.clear_rect(0.0, 0.0, 1.0, 1.0);
        }
        return;
    }
    // The held copies take the plot area's size (as the base layer's raster does).
    let (Some(f), Some(p)) = (app.file(), ui.held.get(step - canvases.len())) else { return };
    let (_, _, w, h) =
        raster_area(&plot_rect(app.state.plot_css.0, app.state.plot_css.1, f.plot.annotation_row_count), app.state.dpr);
    p.reserve((w as f64, h as f64));
}

/// What the base layer is drawn from: the held copies stretched to the window (`preview`), or
/// the layout, keeping a copy of the result.
pub struct Holding<'a> {
    /// The copies: the last exact frame, and the last exact frame of the whole window.
    pub plots: &'a [HeldPlot; 2],
    /// What is drawn now, but for the window.
    pub what: HeldWhat,
    /// Draw from the copies instead of the layout.
    pub preview: bool,
}

impl Holding<'_> {
    /// Whether a copy of `what` is held, so that a preview can be drawn.
    fn can_preview(plots: &[HeldPlot; 2], what: &HeldWhat) -> bool {
        plots.iter().any(|p| p.shows(what).is_some())
    }
}

/// What the held copies of the base layer are of, for the file shown.
fn held_what(app: &App) -> Option<HeldWhat> {
    let f = app.file()?;
    Some((
        app.state.current,
        app.generation,
        app.state.view,
        f.x_axis,
        f.viewport.y_max_bytes.to_bits(),
        (app.state.plot_css.0.to_bits(), app.state.plot_css.1.to_bits(), app.state.dpr.to_bits()),
    ))
}

/// Draws everything from the state.
///
/// The timeline is two canvases: the base (`#plot-base`: axes, bands, annotations, OOM
/// markers), drawn only when what it shows changed (a zoom, a pan, a new layout), and over it the
/// page's `#plot` with what the pointer points at and the other marks (pins, highlights, search
/// matches, pools), cleared and drawn again every frame. Neither is copied into the other, so a
/// frame rasterizes only what it drew.
pub fn draw(app: &App) {
    let t0 = app.ui.now_ms();
    sync_dom(app);
    crate::panels::sync(app);
    if app.canvases_pending {
        return;
    }
    if crate::views::draw(app) {
        return;
    }
    // A canvas measured while hidden has no size: nothing is drawn into it, and the resize
    // observer asks for a frame once it has one.
    if app.file().is_some() && !(app.state.plot_css.0 >= 1.0 && app.state.plot_css.1 >= 1.0) {
        return;
    }
    let ui = &app.ui;
    // A zoom or pan in progress is drawn from the held copies while they show this file as it is.
    let what = held_what(app);
    let preview =
        app.bands_next_frame || (app.previewing() && what.as_ref().is_some_and(|w| Holding::can_preview(&ui.held, w)));
    // Canvases are redrawn only when something they show changed (not for progress updates).
    let key = CanvasKey::of(app, preview);
    if app.memo.canvas.borrow().as_ref() == Some(&key) {
        return;
    }
    let base_changed = app.memo.canvas.borrow().as_ref().map(CanvasKey::base) != Some(key.base());
    if base_changed {
        let holding = what.map(|what| Holding { plots: &ui.held, what, preview });
        // The plot area computed ahead for this very view, if there is one.
        let prepared = if preview { None } else { app.memo.prepared.try_borrow_mut().ok().and_then(|mut p| p.take()) };
        let prepared = prepared.filter(|p| Some(p.0) == pixels_key(app)).map(|p| p.1);
        let layer = (&ui.plot_layer, &ui.plot_layer_ctx, &ui.plot_image);
        let info = draw_timeline_base(app.file(), app.state.plot_css, app.state.dpr, layer, holding, prepared);
        draw_minimap(app);
        *app.memo.frame.borrow_mut() = info;
    }
    let (w, h) = if app.file().is_some() { app.state.plot_css } else { (0.0, 0.0) };
    fit_canvas(&ui.plot, w, h, app.state.dpr);
    let ctx = &ui.plot_ctx;
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, f64::from(ui.plot.width()), f64::from(ui.plot.height()));
    *app.memo.canvas.borrow_mut() = Some(key);
    let _ = ui.plot.set_attribute("data-preview", if preview { "1" } else { "0" });
    if preview {
        // Outlines and highlights need the exact band edges; they come back with the exact frame.
        return;
    }
    draw_timeline_overlay(app, ctx);
    crate::panels::draw_highlight(app, ctx);
    crate::search::draw(app, ctx);
    crate::pools::draw(app, ctx);
    let info = app.memo.frame.borrow();
    let frame_ms = app.ui.now_ms() - t0;
    write_test_hooks(app, &info, frame_ms);
    if let Some(t) = app.ready_pending.take() {
        if is_first_complete_frame(app) {
            report_ready(app, &t, &info, t0, frame_ms);
        } else {
            app.ready_pending.set(Some(t));
        }
    }
}

/// Everything the canvases show; equal keys draw equal pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct CanvasKey {
    current: Option<usize>,
    generation: usize,
    view: View,
    viewport: Option<(Viewport, memviz_view::xmap::XAxis)>,
    hover: Option<Target>,
    pinned: Option<Target>,
    brush: Option<(f64, f64)>,
    sizes: ((f64, f64), (f64, f64), f64),
    minimap_columns: usize,
    analysis: usize,
    /// Drawn from the held copies ([`HeldPlot`]) rather than exactly.
    preview: bool,
}

impl CanvasKey {
    /// The part of the key that the timeline's base shows (all but what the pointer points at
    /// and the analysis panel's marks).
    fn base(&self) -> CanvasKey {
        CanvasKey { hover: None, pinned: None, analysis: 0, ..self.clone() }
    }

    fn of(app: &App, preview: bool) -> CanvasKey {
        CanvasKey {
            preview,
            current: app.state.current,
            generation: app.generation,
            view: app.state.view,
            viewport: app.file().map(|f| (f.viewport, f.x_axis)),
            hover: app.state.hover,
            pinned: app.state.pinned,
            brush: match app.state.drag {
                Some(Drag::Brush { start, end, .. }) => Some((start, end)),
                _ => None,
            },
            sizes: (app.state.plot_css, app.state.minimap_css, app.state.dpr),
            minimap_columns: app.minimap_cols.len(),
            analysis: app.analysis.canvas_seq,
        }
    }
}
