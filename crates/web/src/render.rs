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

/// The first complete timeline of a load: nothing loading, a file shown, and the canvases
/// drawn at the size the page gives them.
fn is_first_complete_frame(app: &App) -> bool {
    let ui = &app.ui;
    let size_of = |c: &HtmlCanvasElement| (f64::from(c.client_width()), f64::from(c.client_height()));
    app.loading.is_none()
        && app.file().is_some()
        && size_of(&ui.plot) == app.state.plot_css
        && size_of(&ui.minimap) == app.state.minimap_css
}

/// Marks `memviz:ready` and writes the load's timings (`t`) into `#plot[data-timings]`.
fn report_ready(app: &App, t: &crate::app::Timings, info: &FrameInfo, frame_start_ms: f64, frame_ms: f64) {
    app.ui.mark("memviz:ready");
    let total = app.ui.now_ms() - t.started_ms;
    let json = format!(
        "{{\"read_ms\":{:.1},\"parse_ms\":{:.1},\"model_ms\":{:.1},\"layout_ms\":{:.1},\"wait_ms\":{:.1},\"transfer_ms\":{:.1},\"decode_ms\":{:.1},\"to_frame_ms\":{:.1},\"first_draw_ms\":{:.1},\"total_ms\":{:.1},\"bands_drawn\":{},\"vertices_drawn\":{}}}",
        t.read_ms,
        t.parse_ms,
        t.model_ms,
        t.layout_ms,
        t.wait_ms,
        t.transfer_ms,
        t.decode_ms,
        frame_start_ms - t.laid_out_ms,
        frame_ms,
        total,
        info.bands_drawn,
        info.vertices_drawn
    );
    let _ = app.ui.plot.set_attribute("data-timings", &json);
    web_sys::console::log_1(&JsValue::from_str(&format!(
        "memviz: {} ready: {json}",
        app.file().map_or("", |f| f.name.as_str())
    )));
}

fn write_test_hooks(app: &App, info: &FrameInfo, frame_ms: f64) {
    let c = &app.ui.plot;
    let set = |k: &str, v: &str| {
        if c.get_attribute(k).as_deref() != Some(v) {
            let _ = c.set_attribute(k, v);
        }
    };
    match app.file() {
        Some(f) => {
            let v = &f.viewport;
            set("data-view", &format!("{:.3},{:.3}", v.x0, v.x1));
            set("data-y-max", &format!("{:.0}", v.y_max_bytes));
            set("data-x-axis", f.x_axis.value());
            set("data-steps", &f.plot.layout.steps.to_string());
            set("data-annotation-rows", &f.plot.annotation_row_count.to_string());
            set("data-ooms", &f.plot.ooms.len().to_string());
        }
        None => set("data-view", ""),
    }
    set("data-x-ticks", &info.x_labels.join("|"));
    set("data-oom-x", &info.oom_x_px.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>().join(","));
    set("data-bands", &info.bands_drawn.to_string());
    set("data-vertices", &info.vertices_drawn.to_string());
    set("data-frame-ms", &format!("{frame_ms:.1}"));
    let hover = match app.state.hover.or(app.state.pinned) {
        None => String::new(),
        Some(Target::Element(e)) => format!("element:{e}"),
        Some(Target::Summarized) => "summarized".into(),
        Some(Target::Oom(i)) => format!("oom:{i}"),
        Some(Target::Annotation(i)) => format!("annotation:{i}"),
    };
    set("data-hover", &hover);
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

/// "Reading x.pickle: 45.2 of 89.5 MiB · about 2 s left".
fn loading_text(l: &crate::app::Loading) -> String {
    let mut text = format!("{} {}", l.phase, l.name);
    if l.phase == "Reading" && l.total_bytes > 0 {
        text += &format!(": {} of {}", human_size(l.read_bytes as f64), human_size(l.total_bytes as f64));
    } else {
        text += " …";
    }
    if let Some(ms) = l.left_ms {
        let s = (ms / 1000.0).ceil().max(1.0);
        text += &if s < 90.0 {
            format!(" · about {s:.0} s left")
        } else {
            format!(" · about {:.0} min left", (s / 60.0).ceil())
        };
    }
    text
}

/// Brings the controls in line with the state.
#[allow(clippy::too_many_lines)] // every control of the toolbar and status line in one place
pub fn sync_dom(app: &App) {
    let ui = &app.ui;
    // Progress and status.
    match &app.loading {
        Some(l) => {
            ui.progress.set_hidden(false);
            // Only reading a file can be stopped (a relayout is one frame).
            ui.cancel_button.set_hidden(l.total_bytes == 0);
            ui.progress.set_value(l.fraction);
            set_text(&ui.status, &loading_text(l));
        }
        None if app.status_note.is_some() => {
            ui.progress.set_hidden(true);
            ui.cancel_button.set_hidden(true);
            set_text(&ui.status, app.status_note.as_deref().unwrap_or(""));
        }
        None => {
            ui.progress.set_hidden(true);
            ui.cancel_button.set_hidden(true);
            let text = app.file().map_or_else(String::new, |f| {
                let l = &f.plot.layout;
                format!("{} · peak {} · {} allocations", f.name, human_size(l.peak_bytes as f64), l.elements.len())
            });
            set_text(&ui.status, &text);
        }
    }
    match &app.error {
        Some(e) => {
            set_text(&ui.error, e);
            ui.error.set_hidden(false);
        }
        None => {
            ui.error.set_hidden(true);
        }
    }
    ui.empty.set_hidden(app.file().is_some());
    ui.drop_overlay.set_hidden(!app.drag_hover);
    // Menus.
    let devices = app.file().map_or(0, |f| f.snap.devices.len());
    let key = (app.state.files.len(), app.state.current, devices);
    if app.memo.menus.get() != Some(key) {
        app.memo.menus.set(Some(key));
        fill_select(
            ui,
            &ui.file_select,
            app.state.files.iter().enumerate().map(|(i, f)| (i.to_string(), f.name.clone())),
        );
        if let Some(f) = app.file() {
            fill_select(
                ui,
                &ui.device_select,
                f.snap
                    .devices
                    .iter()
                    .enumerate()
                    .map(|(i, d)| (i.to_string(), format!("cuda:{} ({} entries)", d.index, d.trace.len()))),
            );
        }
        fill_select(ui, &ui.view_select, View::ALL.iter().map(|v| (v.value().to_string(), v.label().to_string())));
    }
    let busy = app.loading.is_some();
    set_select(
        &ui.file_select,
        &app.state.current.map_or(String::new(), |i| i.to_string()),
        app.state.files.len() < 2 || busy,
    );
    set_select(&ui.view_select, app.state.view.value(), app.file().is_none() || busy);
    match app.file() {
        Some(f) => {
            set_select(&ui.device_select, &f.plot.device_pos.to_string(), devices < 2 || busy);
            set_select(&ui.x_axis_select, f.x_axis.value(), !f.has_time() || busy);
            let total = f.plot.element_count();
            let value = app.detail_preview.unwrap_or(f.max_entries).min(total);
            let max = total.to_string();
            if ui.detail.max() != max {
                ui.detail.set_max(&max);
            }
            if app.detail_preview.is_none() && ui.detail.value() != value.to_string() {
                ui.detail.set_value(&value.to_string());
            }
            ui.detail.set_disabled(busy);
            set_text(&ui.detail_label, &format!("Detail: {value} of {total} entries"));
        }
        None => {
            set_select(&ui.device_select, "", true);
            set_select(&ui.x_axis_select, "steps", true);
            ui.detail.set_disabled(true);
            set_text(&ui.detail_label, "Detail: –");
        }
    }
    // Stack panel (panel views write their own).
    if app.state.view.is_panel() {
        return;
    }
    let target = app.state.hover.or(app.state.pinned);
    let key = (app.state.current.unwrap_or(usize::MAX), app.generation, app.state.hover, app.state.pinned);
    if *app.memo.stack.borrow() != Some(key) {
        *app.memo.stack.borrow_mut() = Some(key);
        let text = match (app.file(), target) {
            (Some(f), Some(t)) => f.target_text(t),
            (Some(_), None) => {
                "Point at the timeline to see an allocation's size and stack. Click to pin it, Esc to unpin."
                    .to_string()
            }
            (None, _) => String::new(),
        };
        set_text(&ui.stack, &text);
        let pinned = app.state.pinned.is_some() && (app.state.hover.is_none() || app.state.hover == app.state.pinned);
        let _ = ui.stack.class_list().toggle_with_force("pinned", pinned);
    }
}

fn set_text(el: &web_sys::HtmlElement, text: &str) {
    if el.text_content().as_deref() != Some(text) {
        el.set_text_content(Some(text));
    }
}

fn fill_select(
    ui: &crate::app::Ui,
    select: &web_sys::HtmlSelectElement,
    options: impl Iterator<Item = (String, String)>,
) {
    select.set_text_content(None);
    for (value, label) in options {
        if let Ok(o) = ui.document.create_element("option") {
            let _ = o.set_attribute("value", &value);
            o.set_text_content(Some(&label));
            let _ = select.append_child(&o);
        }
    }
}

fn set_select(select: &web_sys::HtmlSelectElement, value: &str, disabled: bool) {
    if select.value() != value {
        select.set_value(value);
    }
    if select.disabled() != disabled {
        select.set_disabled(disabled);
    }
}

/// Samples per device pixel of width at most, and in all, for band edges.
const MAX_EDGE_SAMPLES: usize = 4096;

/// Lower edges of the bands `wanted` inside steps `[s_left, s_right]`, sampled about once per
/// device pixel (every step when zoomed in that far, so the drawing is then exact).
fn view_edges(layout: &Layout, wanted: &[u32], s_left: f64, s_right: f64, width_dev: f64) -> BandEdges {
    let mut wanted = wanted.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let samples = layout.sample_steps(s_left, s_right, (width_dev.ceil().max(2.0) as usize).min(MAX_EDGE_SAMPLES));
    layout.band_edges(&wanted, &samples)
}

/// The lower edge of band `edges.bands[i]` inside steps `[s_left, s_right]`, in device pixels,
/// decimated: from where the band appears to where it is freed, through its sampled offsets.
fn band_edge(
    layout: &Layout,
    edges: &BandEdges,
    i: usize,
    s_left: f64,
    s_right: f64,
    to_dev: &impl Fn(f64, f64) -> (f64, f64),
    out: &mut Vec<(f64, f64)>,
) {
    out.clear();
    let (Some(&band), vertices) = (edges.bands.get(i), edges.edge(i)) else {
        return;
    };
    let (Some(&(_, first_off)), Some(&(_, last_off))) = (vertices.first(), vertices.last()) else {
        return;
    };
    let (first, last) = layout.band_step_range(band);
    let (first, last) = (f64::from(first), f64::from(last));
    if last <= s_left || first >= s_right || last <= first {
        return;
    }
    let start = first.max(s_left);
    let end = last.min(s_right);
    let inner = vertices.iter().filter(|v| v.0 > start && v.0 < end).map(|&(x, off)| to_dev(x, off));
    let pts = std::iter::once(to_dev(start, first_off)).chain(inner).chain(std::iter::once(to_dev(end, last_off)));
    decimate_into(pts, out);
}

/// Calls `f(band, edge)` with the device-pixel lower edge of each of `bands` that shows inside
/// steps `[s_left, s_right]` (bands in ascending order).
fn for_each_band_edge(
    layout: &Layout,
    bands: &[u32],
    s_left: f64,
    s_right: f64,
    width_dev: f64,
    to_dev: &impl Fn(f64, f64) -> (f64, f64),
    mut f: impl FnMut(u32, &[(f64, f64)]),
) {
    let edges = view_edges(layout, bands, s_left, s_right, width_dev);
    let mut edge = Vec::new();
    for (i, &b) in edges.bands.iter().enumerate() {
        band_edge(layout, &edges, i, s_left, s_right, to_dev, &mut edge);
        if edge.len() >= 2 {
            f(b, &edge);
        }
    }
}

/// Drawing over the timeline of a file in device pixels: the visible steps, the scale, and the
/// mapping from (step, bytes) to device pixels. Shared by everything that outlines or colours
/// bands over the base layer (hover, pin, search matches, live-set rows, categories).
pub(crate) struct PlotDev<'a> {
    pub layout: &'a Layout,
    pub rect: PlotRect,
    pub dpr: f64,
    /// First and last step in view.
    pub s_left: f64,
    pub s_right: f64,
    /// Device pixels per byte.
    pub px_per_byte_dev: f64,
    v: &'a Viewport,
    xm: XMap<'a>,
    /// What the base layer drew, whose band edges are reused when they are of this view.
    frame: Option<&'a std::cell::RefCell<FrameInfo>>,
}

impl<'a> PlotDev<'a> {
    pub(crate) fn new(f: &'a OpenFile, rect: PlotRect, dpr: f64) -> Self {
        let v = &f.viewport;
        let xm = f.xmap();
        PlotDev {
            layout: &f.plot.layout,
            rect,
            dpr,
            s_left: xm.step(v.x0),
            s_right: xm.step(v.x1),
            px_per_byte_dev: v.px_per_byte(&rect) * dpr,
            v,
            xm,
            frame: None,
        }
    }

    /// Reuses the band edges of the base layer's last frame where they are of this view.
    pub(crate) fn reusing(self, frame: &'a std::cell::RefCell<FrameInfo>) -> Self {
        PlotDev { frame: Some(frame), ..self }
    }

    /// Device pixels of a point (step, bytes).
    pub(crate) fn to_dev(&self, step: f64, bytes: f64) -> (f64, f64) {
        (self.v.x_px(&self.rect, self.xm.pos(step)) * self.dpr, self.v.y_px(&self.rect, bytes) * self.dpr)
    }

    /// Saves the context, switches it to device pixels and clips it to the plot area; the caller
    /// restores it.
    pub(crate) fn clip(&self, ctx: &CanvasRenderingContext2d) {
        ctx.save();
        let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
        ctx.begin_path();
        let r = &self.rect;
        let d = self.dpr;
        ctx.rect(r.left_px * d, r.top_px * d, r.width_px * d, r.height_px * d);
        ctx.clip();
    }

    /// Traces the polygon of each of `bands` that shows in the window (at least one device pixel
    /// tall) and calls `paint(band)` to fill or stroke it.
    pub(crate) fn trace_bands(&self, ctx: &CanvasRenderingContext2d, bands: &[u32], mut paint: impl FnMut(u32)) {
        let to_dev = |step: f64, bytes: f64| self.to_dev(step, bytes);
        let width_dev = self.rect.width_px * self.dpr;
        let height_of = |b: u32| (self.layout.band_size(b) as f64 * self.px_per_byte_dev).max(1.0);
        let frame = self.frame.and_then(|f| f.try_borrow().ok());
        let key = ViewEdges::key(self.layout, self.s_left, self.s_right, width_dev);
        let drawn = frame.as_ref().and_then(|f| f.edges.as_ref()).filter(|e| (e.layout, e.window) == key);
        // Bands the base layer left out (smaller than it draws) get their edges swept here.
        let mut rest: Vec<u32> = Vec::new();
        match drawn {
            Some(d) => {
                let mut edge = Vec::new();
                for &b in bands {
                    match d.edges.bands.binary_search(&b) {
                        Ok(i) => {
                            band_edge(self.layout, &d.edges, i, self.s_left, self.s_right, &to_dev, &mut edge);
                            if edge.len() >= 2 {
                                trace_band(ctx, &edge, height_of(b));
                                paint(b);
                            }
                        }
                        Err(_) if (self.layout.band_size(b) as f64) < d.min_size_bytes => rest.push(b),
                        // Big enough but without a vertex in view: nothing shows.
                        Err(_) => {}
                    }
                }
            }
            None => rest.extend_from_slice(bands),
        }
        if rest.is_empty() {
            return;
        }
        for_each_band_edge(self.layout, &rest, self.s_left, self.s_right, width_dev, &to_dev, |b, edge| {
            trace_band(ctx, edge, height_of(b));
            paint(b);
        });
    }
}

/// Traces a band's polygon as a path of its own: the lower edge left to right, then the upper
/// edge back.
fn trace_band(ctx: &CanvasRenderingContext2d, edge: &[(f64, f64)], height_dev: f64) {
    ctx.begin_path();
    add_band_polygon(ctx, edge, height_dev);
    ctx.close_path();
}

/// Adds a band's polygon to the current path as a subpath left open: a fill closes it (and
/// closing each of thousands of subpaths costs the canvas more than the rest). Every band's
/// polygon winds the same way, so a path of several is filled where any of them is.
fn add_band_polygon(ctx: &CanvasRenderingContext2d, edge: &[(f64, f64)], height_dev: f64) {
    let Some(&(x0, y0)) = edge.first() else {
        return;
    };
    ctx.move_to(x0, y0);
    for &(x, y) in &edge[1..] {
        ctx.line_to(x, y);
    }
    for &(x, y) in edge.iter().rev() {
        ctx.line_to(x, y - height_dev);
    }
}

/// Draws everything of the timeline that does not depend on the pointer.
///
/// `file` is drawn on `canvas` of `css` size (CSS px) at `dpr`.
#[allow(clippy::too_many_lines)] // one exact frame of the base layer, step by step
pub fn draw_timeline_base(
    file: Option<&OpenFile>,
    css: (f64, f64),
    dpr: f64,
    (canvas, ctx, image): (&HtmlCanvasElement, &CanvasRenderingContext2d, &ImageBuffer),
    holding: Option<Holding<'_>>,
    prepared: Option<PlotPixels>,
) -> FrameInfo {
    let mut info = FrameInfo::default();
    // With no file the canvas shows nothing: it keeps no pixels, so that the page's size changes
    // (the status line coming with a load) reallocate nothing while a file loads.
    let Some(f) = file else {
        fit_canvas(canvas, 0.0, 0.0, dpr);
        ctx.clear_rect(0.0, 0.0, 1.0, 1.0);
        return info;
    };
    let (w, h) = css;
    fit_canvas(canvas, w, h, dpr);
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, w, h);
    let rect = plot_rect(w, h, f.plot.annotation_row_count);
    let v = &f.viewport;
    let xm = f.xmap();

    let (_, y_ticks) = axis::byte_ticks(v.y_max_bytes, ((rect.height_px / 56.0) as usize).clamp(2, 10));
    let (x_step, x_ticks) = axis::linear_ticks(v.x0, v.x1, ((rect.width_px / 120.0) as usize).clamp(2, 14));

    // The bands, rasterized into the plot area's pixels and put there in one call.
    let left_dev = rect.left_px * dpr;
    let width_dev = rect.width_px * dpr;
    let bottom_dev = rect.bottom_px() * dpr;
    let (ox, oy) = (left_dev.round(), (rect.top_px * dpr).round());
    let (_, _, rw, rh) = raster_area(&rect, dpr);
    let x_dev_of_pos = |pos: f64| v.x_px(&rect, pos) * dpr;
    let area = (ox, oy, rw as f64, rh as f64);
    match holding {
        Some(h) if h.preview => {
            draw_held(ctx, &h, v, area, left_dev, width_dev);
            info.preview = true;
        }
        _ => {
            let pixels = prepared.unwrap_or_else(|| compute_plot(f, rect, dpr));
            put_plot(&mut info, ctx, image, rect, dpr, pixels);
            if let Some(h) = holding {
                // Before the grid and the markers are drawn, so that a stretched copy has none.
                h.plots[usize::from(v.x0 <= 0.0 && v.x1 >= v.full_x1)].keep(canvas, area, h.what, (v.x0, v.x1));
            }
        }
    }

    // The grid, behind what is drawn.
    let _ = ctx.set_global_composite_operation("destination-over");
    ctx.set_stroke_style_str(GRID);
    ctx.set_line_width(1.0);
    ctx.begin_path();
    for &t in &y_ticks {
        let y = crisp(v.y_px(&rect, t), dpr);
        ctx.move_to(rect.left_px, y);
        ctx.line_to(rect.right_px(), y);
    }
    for &t in &x_ticks {
        let x = crisp(v.x_px(&rect, t), dpr);
        ctx.move_to(x, rect.top_px);
        ctx.line_to(x, rect.bottom_px());
    }
    ctx.stroke();
    let _ = ctx.set_global_composite_operation("source-over");

    // The plot, in device pixels, clipped to the plot area.
    ctx.save();
    ctx.begin_path();
    ctx.rect(rect.left_px, rect.top_px, rect.width_px, rect.height_px);
    ctx.clip();
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);

    // 4. OOM markers.
    ctx.set_stroke_style_str(OOM_COLOUR);
    ctx.set_line_width(1.5 * dpr);
    ctx.begin_path();
    for o in &f.plot.ooms {
        let x = clamp_px(x_dev_of_pos(xm.pos(o.step)), left_dev + dpr, left_dev + width_dev - dpr);
        ctx.move_to(x, rect.top_px * dpr);
        ctx.line_to(x, bottom_dev);
    }
    ctx.stroke();
    ctx.restore();

    // Axes.
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    ctx.set_stroke_style_str(AXIS);
    ctx.set_line_width(1.0);
    ctx.begin_path();
    let bx = crisp(rect.left_px, dpr);
    let by = crisp(rect.bottom_px(), dpr);
    ctx.move_to(bx, rect.top_px);
    ctx.line_to(bx, by);
    ctx.line_to(rect.right_px(), by);
    for &t in &y_ticks {
        let y = crisp(v.y_px(&rect, t), dpr);
        ctx.move_to(bx - 4.0, y);
        ctx.line_to(bx, y);
    }
    for &t in &x_ticks {
        let x = crisp(v.x_px(&rect, t), dpr);
        ctx.move_to(x, by);
        ctx.line_to(x, by + 4.0);
    }
    ctx.stroke();
    ctx.set_fill_style_str(TEXT);
    ctx.set_font(FONT);
    ctx.set_text_align("right");
    ctx.set_text_baseline("middle");
    for &t in &y_ticks {
        let _ = ctx.fill_text(&axis::byte_label(t), rect.left_px - 7.0, v.y_px(&rect, t));
    }
    ctx.set_text_align("center");
    ctx.set_text_baseline("top");
    let mut last_right = f64::NEG_INFINITY;
    for &t in &x_ticks {
        let label = if xm.is_time() { axis::time_label(t, x_step) } else { axis::step_label(t) };
        let width = ctx.measure_text(&label).map_or(40.0, |m| m.width());
        let x = clamp_px(v.x_px(&rect, t), width / 2.0 + 2.0, w - width / 2.0 - 2.0);
        if x - width / 2.0 < last_right + 10.0 {
            continue;
        }
        last_right = x + width / 2.0;
        let _ = ctx.fill_text(&label, x, by + 7.0);
        info.x_labels.push(label);
    }
    ctx.set_text_align("right");
    ctx.set_fill_style_str("#666");
    let title = if xm.is_time() { "time since the first event" } else { "event step (each alloc or free is one step)" };
    let _ = ctx.fill_text(title, rect.right_px(), by + 26.0);

    // Annotation strip.
    draw_annotations(ctx, f, &rect, &xm);

    // OOM labels.
    ctx.set_font(SMALL_FONT);
    ctx.set_text_baseline("top");
    for o in &f.plot.ooms {
        let x = v.x_px(&rect, xm.pos(o.step));
        if x < rect.left_px - 1.0 || x > rect.right_px() + 1.0 {
            continue;
        }
        info.oom_x_px.push(x);
        let label = "OOM";
        let tw = ctx.measure_text(label).map_or(24.0, |m| m.width());
        let lx = if x + 4.0 + tw > rect.right_px() { x - 4.0 - tw } else { x + 4.0 };
        ctx.set_fill_style_str("rgba(255,255,255,0.85)");
        ctx.fill_rect(lx - 2.0, rect.top_px + 3.0, tw + 4.0, 14.0);
        ctx.set_fill_style_str(OOM_COLOUR);
        ctx.set_text_align("left");
        let _ = ctx.fill_text(label, lx, rect.top_px + 4.0);
    }
    info
}

/// Stretches the held copies into window `v` of the plot area `area` (device px: x, y, width,
/// height; the plot's own left edge and width in device px are `left_dev`, `width_dev`): the
/// copy of the whole window first, the last exact frame over it.
fn draw_held(
    ctx: &CanvasRenderingContext2d,
    h: &Holding<'_>,
    v: &Viewport,
    area: (f64, f64, f64, f64),
    left_dev: f64,
    width_dev: f64,
) {
    let (ox, oy, w, hgt) = area;
    ctx.save();
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    ctx.begin_path();
    ctx.rect(ox, oy, w, hgt);
    ctx.clip();
    // Nearest-pixel stretching: the copy shows for a few frames only, and smoothing it was most
    // of the browser's work on such a frame.
    ctx.set_image_smoothing_enabled(false);
    // Where each copy goes: x and width on the canvas (device px).
    let placed = [&h.plots[1], &h.plots[0]].map(|p| {
        p.shows(&h.what).map(|(x0, x1)| {
            // Column k of the copy showed position x0 + (ox + k - left_dev) / width_dev * (x1 - x0).
            let r = (x1 - x0) / v.width();
            let dx = left_dev + (x0 - v.x0) / v.width() * width_dev + (ox - left_dev) * r;
            (p, dx, f64::from(p.canvas.width()) * r)
        })
    });
    // The whole window's copy is only needed where the last exact frame does not reach.
    let covered = placed[1].is_some_and(|(_, dx, dw)| dx <= ox && dx + dw >= ox + w);
    for (p, dx, dw) in placed.into_iter().skip(usize::from(covered)).flatten() {
        let (pw, ph) = (f64::from(p.canvas.width()), f64::from(p.canvas.height()));
        let _ = ctx.draw_image_with_html_canvas_element_and_sw_and_sh_and_dx_and_dy_and_dw_and_dh(
            &p.canvas, 0.0, 0.0, pw, ph, dx, oy, dw, hgt,
        );
    }
    ctx.restore();
}

/// The plot area of one exact frame, computed but not yet on the canvas: the bands' pixels and
/// the outlines filled behind them. Computing it is most of an exact frame's work, so it can be
/// done in a task of its own ([`prepare_plot`]) and the frame only puts it on the canvas.
pub struct PlotPixels {
    raster: Raster,
    /// Path strings (device px) of the summarized band's outline, if it shows, and of the area
    /// under the drawn stack.
    summarized_path: Option<String>,
    stack_path: String,
    bands_drawn: usize,
    vertices_drawn: usize,
    edges: ViewEdges,
}

/// What the plot area of the file shown is of: what a held copy would be of, and the window
/// `(x0, x1)`, bit for bit.
pub type PixelsKey = (HeldWhat, u64, u64);

/// The key of the plot area of the file shown, in its window.
fn pixels_key(app: &App) -> Option<PixelsKey> {
    let v = &app.file()?.viewport;
    Some((held_what(app)?, v.x0.to_bits(), v.x1.to_bits()))
}

/// Computes the plot area of the next exact frame now and keeps it for that frame, when the
/// timeline is what the page shows.
pub fn prepare_plot(app: &App) {
    let (Some(f), Some(key)) = (app.file(), pixels_key(app)) else { return };
    if app.state.view.is_panel() || app.memo.prepared.try_borrow().is_ok_and(|p| p.as_ref().is_some_and(|p| p.0 == key))
    {
        return;
    }
    let (w, h) = app.state.plot_css;
    let rect = plot_rect(w, h, f.plot.annotation_row_count);
    let pixels = compute_plot(f, rect, app.state.dpr);
    if let Ok(mut p) = app.memo.prepared.try_borrow_mut() {
        *p = Some((key, pixels));
    }
}

/// The plot area's origin and size in device px (whole pixels).
fn raster_area(rect: &PlotRect, dpr: f64) -> (f64, f64, usize, usize) {
    let left_dev = rect.left_px * dpr;
    let (ox, oy) = (left_dev.round(), (rect.top_px * dpr).round());
    let w = ((left_dev + rect.width_px * dpr).round() - ox).max(0.0) as usize;
    let h = ((rect.bottom_px() * dpr).round() - oy).max(0.0) as usize;
    (ox, oy, w, h)
}

/// Computes the plot area exactly: the bands rasterized, and the outlines of the summarized
/// band and of the area under the drawn stack.
fn compute_plot(f: &OpenFile, rect: PlotRect, dpr: f64) -> PlotPixels {
    let (ox, oy, rw, rh) = raster_area(&rect, dpr);
    let mut raster = Raster::new(rw, rh);
    let v = &f.viewport;
    let xm = f.xmap();
    let layout = &f.plot.layout;
    let left_dev = rect.left_px * dpr;
    let width_dev = rect.width_px * dpr;
    let bottom_dev = rect.bottom_px() * dpr;
    let y_dev = |bytes: f64| v.y_px(&rect, bytes) * dpr;
    let x_dev_of_pos = |pos: f64| v.x_px(&rect, pos) * dpr;
    // In the raster's pixels.
    let to_px = |step: f64, off: f64| (x_dev_of_pos(xm.pos(step)) - ox, y_dev(off) - oy);
    let cols = width_dev.ceil().max(1.0) as usize;
    let bounds: Vec<f64> = (0..=cols).map(|c| xm.step(v.x0 + v.width() * (c as f64 / width_dev).min(1.0))).collect();
    let envs = column_envelopes(layout, &bounds);

    // Bands at least half a device pixel tall that overlap the view.
    let s_left = xm.step(v.x0);
    let s_right = xm.step(v.x1);
    let px_per_byte_dev = v.px_per_byte(&rect) * dpr;
    let min_size = 0.5 / px_per_byte_dev;
    let mut edge: Vec<(f64, f64)> = Vec::new();
    let mut bands = layout.bands_overlapping(s_left.floor().max(0.0) as u32, s_right.ceil().max(0.0) as u32);
    bands.retain(|&b| layout.band_size(b) as f64 >= min_size);
    let edges = view_edges(layout, &bands, s_left, s_right, width_dev);
    let (layout_key, window) = ViewEdges::key(layout, s_left, s_right, width_dev);
    let (mut bands_drawn, mut vertices_drawn) = (0, 0);
    for (i, &band) in edges.bands.iter().enumerate() {
        band_edge(layout, &edges, i, s_left, s_right, &to_px, &mut edge);
        if edge.len() < 2 {
            continue;
        }
        let colour = PALETTE_RGB[(layout.band_element[band as usize] % 10) as usize];
        raster.band(&edge, layout.band_size(band) as f64 * px_per_byte_dev, colour);
        bands_drawn += 1;
        vertices_drawn += edge.len() * 2;
    }

    // A number a path string can hold (a canvas skips a non-finite point; a path string with
    // one is not drawn at all).
    let fin = |v: f64| if v.is_finite() { v.clamp(-1e7, 1e7) } else { bottom_dev };
    let summarized_path = envs.iter().any(|e| e.total_max_bytes > e.drawn_at_peak_bytes).then(|| {
        let mut d = String::with_capacity(envs.len() * 48);
        for (c, e) in envs.iter().enumerate() {
            let (x, y) = (left_dev + c as f64, fin(y_dev(e.total_max_bytes)));
            let _ = write!(d, "{}{x:.2} {y:.2}H{:.2}", if c == 0 { 'M' } else { 'L' }, x + 1.0);
        }
        for (c, e) in envs.iter().enumerate().rev() {
            let (x, y) = (left_dev + c as f64, fin(y_dev(e.drawn_at_peak_bytes)));
            let _ = write!(d, "L{:.2} {y:.2}H{x:.2}", x + 1.0);
        }
        d.push('Z');
        d
    });
    let mut stack_path = String::with_capacity(envs.len() * 24);
    let _ = write!(stack_path, "M{left_dev:.2} {bottom_dev:.2}");
    for (c, e) in envs.iter().enumerate() {
        let (x, y) = (left_dev + c as f64, fin(y_dev(e.drawn_max_bytes)));
        let _ = write!(stack_path, "L{x:.2} {y:.2}H{:.2}", x + 1.0);
    }
    let _ = write!(stack_path, "L{:.2} {bottom_dev:.2}Z", left_dev + cols as f64);
    PlotPixels {
        raster,
        summarized_path,
        stack_path,
        bands_drawn,
        vertices_drawn,
        edges: ViewEdges { layout: layout_key, window, min_size_bytes: min_size, edges },
    }
}

/// An `ImageData` of the plot area's size kept from frame to frame: each exact frame copies its
/// pixels into it and puts it on the canvas. A fresh `ImageData` (a few MB) per frame meant
/// fresh memory each time, and where touching fresh memory is slow such a frame took 50-80 ms
/// instead of 10.
#[derive(Default)]
pub struct ImageBuffer(std::cell::RefCell<Option<(u32, u32, ImageData, js_sys::Uint8ClampedArray)>>);

impl ImageBuffer {
    /// Puts `bytes` (RGBA rows of `size` px) on `ctx` at device px `at`.
    fn put(&self, ctx: &CanvasRenderingContext2d, bytes: &[u8], size: (u32, u32), at: (f64, f64)) {
        let Ok(mut slot) = self.0.try_borrow_mut() else { return };
        if !matches!(&*slot, Some((w, h, ..)) if (*w, *h) == size) {
            let data = js_sys::Uint8ClampedArray::new_with_length(size.0.saturating_mul(size.1).saturating_mul(4));
            *slot = ImageData::new_with_js_u8_clamped_array_and_sh(&data, size.0, size.1)
                .ok()
                .map(|img| (size.0, size.1, img, data));
        }
        if let Some((_, _, img, data)) = &*slot {
            if data.length() as usize == bytes.len() {
                data.copy_from(bytes);
                let _ = ctx.put_image_data(img, at.0, at.1);
            }
        }
    }
}

/// Puts a computed plot area on the canvas: the bands' pixels, and behind them (each behind what
/// is drawn before it) the summarized band on top of the drawn stack and the area under the
/// drawn stack (where bands are too thin to draw one by one).
fn put_plot(
    info: &mut FrameInfo,
    ctx: &CanvasRenderingContext2d,
    image: &ImageBuffer,
    rect: PlotRect,
    dpr: f64,
    p: PlotPixels,
) {
    let (ox, oy, _, _) = raster_area(&rect, dpr);
    let raster = &p.raster;
    if raster.width_px() > 0 && raster.height_px() > 0 {
        image.put(
            ctx,
            bytemuck::cast_slice(raster.rows()),
            (raster.width_px() as u32, raster.height_px() as u32),
            (ox, oy),
        );
    }
    ctx.save();
    ctx.begin_path();
    ctx.rect(rect.left_px, rect.top_px, rect.width_px, rect.height_px);
    ctx.clip();
    let _ = ctx.set_global_composite_operation("destination-over");
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    // Each outline goes to the canvas as one path string: one call instead of two per column.
    let fill_outline = |colour: &str, d: &str| {
        if let Ok(path) = Path2d::new_with_path_string(d) {
            ctx.set_fill_style_str(colour);
            ctx.fill_with_path_2d(&path);
        }
    };
    if let Some(d) = &p.summarized_path {
        fill_outline(SUMMARIZED_FILL, d);
    }
    fill_outline(STACK_FILL, &p.stack_path);
    ctx.restore();
    info.bands_drawn = p.bands_drawn;
    info.vertices_drawn = p.vertices_drawn;
    info.edges = Some(p.edges);
}

/// Draws what the pointer points at over the base layer: outlines of the hovered and pinned
/// allocations, the hovered annotation's region, the hovered OOM marker.
fn draw_timeline_overlay(app: &App, ctx: &CanvasRenderingContext2d) {
    let Some(f) = app.file() else { return };
    let dpr = app.state.dpr;
    let rect = app.plot_rect();
    let v = &f.viewport;
    let xm = f.xmap();
    let plot = PlotDev::new(f, rect, dpr).reusing(&app.memo.frame);
    ctx.save();
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    for (t, width) in [(app.state.pinned, 2.0), (app.state.hover, 1.5)] {
        match t {
            Some(Target::Element(e)) => {
                if let Some(b) = plot.layout.elements.get(e as usize).and_then(|el| el.band) {
                    plot.clip(ctx);
                    ctx.set_stroke_style_str("#000");
                    ctx.set_line_width(width * dpr);
                    plot.trace_bands(ctx, &[b], |_| ctx.stroke());
                    ctx.restore();
                }
            }
            Some(Target::Annotation(i)) => {
                if let (Some(a), Some(&row)) = (f.plot.annotations.get(i), f.plot.annotation_rows.get(i)) {
                    let (x0, x1) = annotation_x_px(a, f.plot.time.as_ref(), &xm, v, &rect);
                    let (x0, x1) = (x0.max(rect.left_px), x1.min(rect.right_px()).max(x0.max(rect.left_px) + 1.0));
                    ctx.set_fill_style_str("rgba(0,0,0,0.07)");
                    ctx.fill_rect(x0 * dpr, rect.top_px * dpr, (x1 - x0) * dpr, rect.height_px * dpr);
                    let y = TOP_PX + row as f64 * ANNOTATION_ROW_PX;
                    ctx.set_stroke_style_str(PALETTE[colour_of_name(&a.name)]);
                    ctx.set_line_width(2.0 * dpr);
                    ctx.stroke_rect(
                        (x0 + 1.0) * dpr,
                        (y + 1.0) * dpr,
                        (x1 - x0 - 2.0).max(0.5) * dpr,
                        (ANNOTATION_ROW_PX - 4.0) * dpr,
                    );
                }
            }
            Some(Target::Oom(i)) => {
                if let Some(o) = f.plot.ooms.get(i) {
                    let x = clamp_px(v.x_px(&rect, xm.pos(o.step)), rect.left_px + 1.0, rect.right_px() - 1.0) * dpr;
                    ctx.set_stroke_style_str(OOM_COLOUR);
                    ctx.set_line_width(3.5 * dpr);
                    ctx.begin_path();
                    ctx.move_to(x, rect.top_px * dpr);
                    ctx.line_to(x, rect.bottom_px() * dpr);
                    ctx.stroke();
                }
            }
            Some(Target::Summarized) | None => {}
        }
    }
    ctx.restore();
}

fn draw_annotations(ctx: &CanvasRenderingContext2d, f: &OpenFile, rect: &PlotRect, xm: &XMap<'_>) {
    let v = &f.viewport;
    ctx.set_font(SMALL_FONT);
    ctx.set_text_align("left");
    ctx.set_text_baseline("middle");
    ctx.set_line_width(1.0);
    // Boxes of one colour that touch within a pixel on a row are drawn as one (thousands of
    // annotations in view would otherwise cost a few canvas calls each): per row, the run
    // being gathered, as (x0, x1, colour).
    // A run that gathered boxes of several colours is drawn in a neutral one.
    let mut runs: Vec<Option<(f64, f64, Option<usize>)>> = Vec::new();
    let draw_box = |(x0, x1, c): (f64, f64, Option<usize>), row: usize| {
        let y = TOP_PX + row as f64 * ANNOTATION_ROW_PX;
        ctx.set_fill_style_str(c.map_or(MIXED_ANNOTATIONS_FILL, |c| PALETTE_LIGHT[c]));
        ctx.fill_rect(x0, y, x1 - x0, ANNOTATION_ROW_PX - 2.0);
        ctx.set_stroke_style_str(c.map_or(MIXED_ANNOTATIONS_STROKE, |c| PALETTE[c]));
        ctx.stroke_rect(x0 + 0.5, y + 0.5, (x1 - x0 - 1.0).max(0.5), ANNOTATION_ROW_PX - 3.0);
    };
    for (i, a) in f.plot.annotations.iter().enumerate() {
        let Some(&row) = f.plot.annotation_rows.get(i) else {
            continue;
        };
        let (x0, x1) = annotation_x_px(a, f.plot.time.as_ref(), xm, v, rect);
        if x1 < rect.left_px || x0 > rect.right_px() {
            continue;
        }
        let (cx0, cx1) = (x0.max(rect.left_px), x1.min(rect.right_px()).max(x0.max(rect.left_px) + 1.0));
        let c = colour_of_name(&a.name);
        let room = cx1 - cx0 - 6.0;
        if runs.len() <= row {
            runs.resize(row + 1, None);
        }
        let Some(slot) = runs.get_mut(row) else { continue };
        if room <= 14.0 {
            // Too narrow for a label: joins the row's run when it touches it and is of its
            // colour, or narrower than a pixel (whose colour no one could tell apart), so a row
            // costs at most a box per pixel however many annotations it holds.
            match slot {
                Some((_, end, rc)) if cx0 <= *end + 1.0 && (*rc == Some(c) || x1 - x0 < 1.0) => {
                    *end = end.max(cx1);
                    if *rc != Some(c) {
                        *rc = None;
                    }
                }
                _ => {
                    if let Some(run) = slot.replace((cx0, cx1, Some(c))) {
                        draw_box(run, row);
                    }
                }
            }
            continue;
        }
        if let Some(run) = slot.take() {
            draw_box(run, row);
        }
        draw_box((cx0, cx1, Some(c)), row);
        let y = TOP_PX + row as f64 * ANNOTATION_ROW_PX;
        ctx.save();
        ctx.begin_path();
        ctx.rect(cx0, y, cx1 - cx0, ANNOTATION_ROW_PX);
        ctx.clip();
        ctx.set_fill_style_str(TEXT);
        let label = fit_text(ctx, &a.name, room);
        let _ = ctx.fill_text(&label, cx0 + 3.0, y + (ANNOTATION_ROW_PX - 2.0) / 2.0 + 0.5);
        ctx.restore();
    }
    for (row, run) in runs.into_iter().enumerate() {
        if let Some(run) = run {
            draw_box(run, row);
        }
    }
}

/// `text`, shortened with "…" to fit `max_px`.
fn fit_text(ctx: &CanvasRenderingContext2d, text: &str, max_px: f64) -> String {
    let width = |s: &str| ctx.measure_text(s).map_or(s.len() as f64 * 6.0, |m| m.width());
    if width(text) <= max_px {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let (mut lo, mut hi) = (0usize, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let s: String = chars[..mid].iter().collect::<String>() + "…";
        if width(&s) <= max_px {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 {
        String::new()
    } else {
        chars[..lo].iter().collect::<String>() + "…"
    }
}

/// A coordinate that lands a 1 px line on whole device pixels.
fn crisp(x_css: f64, dpr: f64) -> f64 {
    ((x_css * dpr).floor() + 0.5) / dpr
}

fn draw_minimap(app: &App) {
    let ui = &app.ui;
    let ctx = &ui.minimap_ctx;
    let dpr = app.state.dpr;
    let (w, h) = if app.file().is_some() { app.state.minimap_css } else { (0.0, 0.0) };
    fit_canvas(&ui.minimap, w, h, dpr);
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, w, h);
    let Some(f) = app.file() else { return };
    let rect = app.minimap_rect();
    let v = &f.viewport;
    let xm = f.xmap();
    ctx.set_fill_style_str("#f6f6f6");
    ctx.fill_rect(rect.left_px, rect.top_px, rect.width_px, rect.height_px);
    // Total memory over the whole run.
    let peak = app.minimap_cols.iter().copied().fold(1.0f64, f64::max);
    let n = app.minimap_cols.len().max(1) as f64;
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    let (l, b, wd, hd) = (rect.left_px * dpr, rect.bottom_px() * dpr, rect.width_px * dpr, rect.height_px * dpr);
    ctx.set_fill_style_str(PALETTE[0]);
    ctx.begin_path();
    ctx.move_to(l, b);
    for (c, &m) in app.minimap_cols.iter().enumerate() {
        let y = b - m / peak * hd;
        let x0 = l + c as f64 * wd / n;
        ctx.line_to(x0, y);
        ctx.line_to(x0 + wd / n, y);
    }
    ctx.line_to(l + wd, b);
    ctx.close_path();
    ctx.fill();
    ctx.set_stroke_style_str(OOM_COLOUR);
    ctx.set_line_width(1.5 * dpr);
    for o in &f.plot.ooms {
        let x = clamp_px(l + xm.pos(o.step) / v.full_x1 * wd, l + dpr, l + wd - dpr);
        ctx.begin_path();
        ctx.move_to(x, rect.top_px * dpr);
        ctx.line_to(x, b);
        ctx.stroke();
    }
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    // The window: everything outside it dimmed.
    let px = |pos: f64| rect.left_px + pos / v.full_x1 * rect.width_px;
    let (x0, x1) = (px(v.x0), px(v.x1).max(px(v.x0) + 1.0));
    ctx.set_fill_style_str("rgba(40,40,40,0.18)");
    ctx.fill_rect(rect.left_px, rect.top_px, x0 - rect.left_px, rect.height_px);
    ctx.fill_rect(x1, rect.top_px, rect.right_px() - x1, rect.height_px);
    ctx.set_stroke_style_str("#333");
    ctx.set_line_width(1.0);
    ctx.stroke_rect(x0 + 0.5, rect.top_px + 0.5, (x1 - x0 - 1.0).max(0.5), rect.height_px - 1.0);
    if let Some(Drag::Brush { start, end, .. }) = app.state.drag {
        let (a, b) = (px(start.min(end)), px(start.max(end)));
        ctx.set_fill_style_str("rgba(78,121,167,0.3)");
        ctx.fill_rect(a, rect.top_px, (b - a).max(1.0), rect.height_px);
        ctx.set_stroke_style_str(PALETTE[0]);
        ctx.stroke_rect(a + 0.5, rect.top_px + 0.5, (b - a - 1.0).max(0.5), rect.height_px - 1.0);
    }
    // Scale: the run's peak.
    ctx.set_fill_style_str("#666");
    ctx.set_font(SMALL_FONT);
    ctx.set_text_align("right");
    ctx.set_text_baseline("top");
    let _ = ctx.fill_text(&human_size(peak), rect.left_px - 7.0, rect.top_px);
    ctx.set_text_baseline("bottom");
    let _ = ctx.fill_text("overview", rect.left_px - 7.0, rect.bottom_px());
}
