//! The page's one state ([`App`]), the handlers that change it, and the glue to the DOM.
//!
//! DOM events become [`Input`]s in the listeners installed by [`install`]; every listener goes
//! through [`listen`], which borrows the state once and calls [`App::handle`]. Handlers change
//! state and call [`App::request_redraw`], which queues at most one animation frame; the frame
//! calls [`crate::render::draw`], which reads the state only. Listeners, the frame callback and
//! the resize observer are owned by the state and removed when it is dropped.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};

use gloo_events::{EventListener, EventListenerOptions};
use memviz_core::describe;
use memviz_core::snapshot::Snapshot;
use memviz_core::timeline::{Options, DEFAULT_MAX_ENTRIES};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{
    CanvasRenderingContext2d, Document, DragEvent, Element, HtmlCanvasElement, HtmlElement, HtmlInputElement,
    HtmlProgressElement, HtmlSelectElement, KeyboardEvent, Performance, PointerEvent, WheelEvent, Window,
};

use crate::input::{self, Input, Source, Surface};
use crate::model::{choose_device, ModelLoader, PlotData, CHUNK_BYTES};
use crate::render;
use crate::worker::LoadRequest;
use crate::worker_client::{self, Outcome};
use memviz_view::state::{Effect, TimelineInput, ViewState};
use memviz_view::view::View;
use memviz_view::viewport::{PlotRect, Viewport};
use memviz_view::xmap::XAxis;

/// The snapshot behind "Try a demo": a short GPT training run with AMP and annotated steps.
pub static DEMO_SNAPSHOT: &[u8] = include_bytes!("../../../tests/data/real/gpt_amp_annotated.pickle");

/// File name shown for the demo.
pub const DEMO_NAME: &str = "gpt_amp_annotated.pickle (demo)";

/// Loads that took longer than this (ms) show each phase in the status line before running it
/// (which costs a frame); quicker loads go straight through.
const SHOW_PHASES_AFTER_MS: f64 = 150.0;

/// While reading a file, give the page a chance to repaint at least this often (ms).
const YIELD_EVERY_MS: f64 = 40.0;
/// Bytes decoded between two chances to repaint (a few tens of ms of work).
const FEED_BYTES: usize = 1 << 20;
/// Time the phases after reading (model, layout, first frame) take, as a share of the reading
/// time, for the estimate of the time left.
const LATER_PHASES_SHARE: f64 = 0.35;

/// The page's elements.
pub struct Ui {
    /// The window.
    pub window: Window,
    /// The document.
    pub document: Document,
    /// `window.performance`.
    pub performance: Option<Performance>,
    /// The file picker.
    pub file_input: HtmlInputElement,
    /// "Try a demo".
    pub demo_button: HtmlElement,
    /// Loaded files.
    pub file_select: HtmlSelectElement,
    /// Devices of the current file.
    pub device_select: HtmlSelectElement,
    /// Views.
    pub view_select: HtmlSelectElement,
    /// Detail slider.
    pub detail: HtmlInputElement,
    /// "Detail: N of M entries".
    pub detail_label: HtmlElement,
    /// Steps or time.
    pub x_axis_select: HtmlSelectElement,
    /// Load progress.
    pub progress: HtmlProgressElement,
    /// Stops the load in progress.
    pub cancel_button: HtmlElement,
    /// Status line.
    pub status: HtmlElement,
    /// Error box.
    pub error: HtmlElement,
    /// The timeline canvas: what the pointer points at and other marks, over `plot_layer`.
    pub plot: HtmlCanvasElement,
    /// Its context.
    pub plot_ctx: CanvasRenderingContext2d,
    /// The canvas under `plot` (`#plot-base`, made here) holding the rest of the timeline, so
    /// that a frame where only the marks change leaves it alone.
    pub plot_layer: HtmlCanvasElement,
    /// Its context.
    pub plot_layer_ctx: CanvasRenderingContext2d,
    /// Copies of the last exact plot area and of the last exact one of the whole window, that
    /// a zoom or pan stretches into its first frame ([`render::HeldPlot`]).
    pub held: [render::HeldPlot; 2],
    /// The pixels put on the base layer, kept from frame to frame ([`render::ImageBuffer`]).
    pub plot_image: render::ImageBuffer,
    /// The overview canvas.
    pub minimap: HtmlCanvasElement,
    /// Its context.
    pub minimap_ctx: CanvasRenderingContext2d,
    /// The stack panel (`#stack`).
    pub stack: HtmlElement,
    /// Shown before any file is open.
    pub empty: HtmlElement,
    /// Shown while files are dragged over the page.
    pub drop_overlay: HtmlElement,
    /// The part of the page that holds the plot.
    pub main: HtmlElement,
}

fn by_id<T: JsCast>(document: &Document, id: &str) -> Result<T, JsValue> {
    document
        .get_element_by_id(id)
        .ok_or_else(|| JsValue::from_str(&format!("the page has no #{id}")))?
        .dyn_into::<T>()
        .map_err(|_| JsValue::from_str(&format!("#{id} is not the element expected")))
}

fn context_2d(canvas: &HtmlCanvasElement) -> Result<CanvasRenderingContext2d, JsValue> {
    canvas
        .get_context("2d")?
        .ok_or_else(|| JsValue::from_str("no 2D canvas context"))?
        .dyn_into::<CanvasRenderingContext2d>()
        .map_err(|_| JsValue::from_str("no 2D canvas context"))
}

impl Ui {
    /// Finds the page's elements.
    pub fn find() -> Result<Ui, JsValue> {
        let window = web_sys::window().ok_or_else(|| JsValue::from_str("no window"))?;
        let document = window.document().ok_or_else(|| JsValue::from_str("no document"))?;
        let plot: HtmlCanvasElement = by_id(&document, "plot")?;
        let minimap: HtmlCanvasElement = by_id(&document, "minimap")?;
        let plot_layer: HtmlCanvasElement =
            document.create_element("canvas")?.dyn_into().map_err(|_| JsValue::from_str("no canvas element"))?;
        plot_layer.set_id("plot-base");
        plot_layer.set_attribute("aria-hidden", "true")?;
        if let Some(parent) = plot.parent_node() {
            parent.insert_before(&plot_layer, Some(&plot))?;
        }
        let held = [render::HeldPlot::new(&document)?, render::HeldPlot::new(&document)?];
        Ok(Ui {
            held,
            plot_image: render::ImageBuffer::default(),
            plot_layer_ctx: context_2d(&plot_layer)?,
            plot_layer,
            performance: window.performance(),
            file_input: by_id(&document, "file-input")?,
            demo_button: by_id(&document, "demo")?,
            file_select: by_id(&document, "file-select")?,
            device_select: by_id(&document, "device-select")?,
            view_select: by_id(&document, "view-select")?,
            detail: by_id(&document, "detail")?,
            detail_label: by_id(&document, "detail-label")?,
            x_axis_select: by_id(&document, "x-axis")?,
            progress: by_id(&document, "progress")?,
            cancel_button: by_id(&document, "cancel-load")?,
            status: by_id(&document, "status")?,
            error: by_id(&document, "error")?,
            plot_ctx: context_2d(&plot)?,
            minimap_ctx: context_2d(&minimap)?,
            plot,
            minimap,
            stack: by_id(&document, "stack")?,
            empty: by_id(&document, "empty")?,
            drop_overlay: by_id(&document, "drop-overlay")?,
            main: by_id(&document, "main")?,
            window,
            document,
        })
    }

    /// `performance.now()` in ms (0 without a Performance object).
    pub fn now_ms(&self) -> f64 {
        self.performance.as_ref().map_or(0.0, Performance::now)
    }

    /// `performance.mark(name)`.
    pub fn mark(&self, name: &str) {
        if let Some(p) = &self.performance {
            let _ = p.mark(name);
        }
    }
}

pub use memviz_view::state::{Drag, OpenFile, Target};

/// A load in progress.
#[derive(Clone, Debug, PartialEq)]
pub struct Loading {
    /// File name.
    pub name: String,
    /// Share read, 0 to 1.
    pub fraction: f64,
    /// What is happening.
    pub phase: &'static str,
    /// Bytes read so far.
    pub read_bytes: u64,
    /// Bytes of the file.
    pub total_bytes: u64,
    /// Estimated time left (ms), once there is enough to go by.
    pub left_ms: Option<f64>,
}

/// Where the time of one load went (ms).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings {
    /// When the file was chosen (`performance.now()`).
    pub started_ms: f64,
    /// Waiting for file slices.
    pub read_ms: f64,
    /// Decoding the pickle.
    pub parse_ms: f64,
    /// Building the model.
    pub model_ms: f64,
    /// Laying out the timeline.
    pub layout_ms: f64,
    /// Giving the page a chance to repaint between steps.
    pub wait_ms: f64,
    /// Handing the model from the loading worker to the page (encoding there, decoding here).
    pub transfer_ms: f64,
    /// The part of `transfer_ms` spent on the page's main thread (copying the model in).
    pub decode_ms: f64,
    /// When the model and layout were ready (`performance.now()`).
    pub laid_out_ms: f64,
}

/// What the stack panel shows: (file, layout generation, hovered, pinned).
pub type StackKey = (usize, usize, Option<Target>, Option<Target>);

/// Values last written to the DOM, so frames only touch what changed.
#[derive(Default)]
pub struct DomMemo {
    /// (files, current file, device count) when the menus were last filled.
    pub menus: Cell<Option<(usize, Option<usize>, usize)>>,
    /// Text key of the stack panel.
    pub stack: RefCell<Option<StackKey>>,
    /// What the canvases show now.
    pub canvas: RefCell<Option<render::CanvasKey>>,
    /// What the base layer of the timeline holds.
    pub frame: RefCell<render::FrameInfo>,
    /// The plot area of the next exact frame, computed ahead of it.
    pub prepared: RefCell<Option<(render::PixelsKey, render::PlotPixels)>>,
}

/// The page's state.
pub struct App {
    /// Elements.
    pub ui: Ui,
    /// The timeline's user state: files, view, pointer, pins, drag, canvas sizes.
    pub state: ViewState,
    /// Files waiting to load.
    pub queue: VecDeque<Source>,
    /// Device index to show first when a file has it (set by an embedding page).
    pub preferred_device: Option<i64>,
    /// The load in progress.
    pub loading: Option<Loading>,
    /// The last error, in words.
    pub error: Option<String>,
    /// Whether files are being dragged over the page.
    pub drag_hover: bool,
    /// Detail slider value while it is being dragged.
    pub detail_preview: Option<usize>,
    /// Highest total per device-pixel column of the minimap, over the whole x domain.
    pub minimap_cols: Vec<f64>,
    /// Timings of a load whose first complete draw is still to come (then `memviz:ready`).
    pub ready_pending: Cell<Option<Timings>>,
    /// Counter of layouts, for the stack panel memo.
    pub generation: usize,
    /// DOM memo.
    pub memo: DomMemo,
    /// State of the panel views (Allocator State History, Allocator Settings).
    pub panels: crate::views::Panels,
    /// The analysis panel.
    pub analysis: crate::panels::Panel,
    /// The search boxes.
    pub search: crate::search::Search,
    /// The private pools view and view notes.
    pub pools: crate::pools::PoolView,
    /// The first frame of a file just opened draws the page around the timeline but not its
    /// bands, which follow in the next frame: the browser's first layout and paint of the loaded
    /// page and the first drawing of the bands are then two tasks, neither of them long.
    pub bands_next_frame: bool,
    /// The canvases of a file just opened are being allocated, one per task: frames until then
    /// draw the page around them and leave them alone (the frame that reveals the loaded page
    /// is then the browser's layout and paint only).
    pub canvases_pending: bool,
    frame_pending: bool,
    loader_running: bool,
    /// The user asked to stop loading.
    cancel_requested: bool,
    /// Stops the load running in a Web Worker, while one runs.
    pub cancel_load: Option<js_sys::Function>,
    /// A note for the status line (such as a stopped load), until the next load.
    pub status_note: Option<String>,
    self_ref: Weak<RefCell<App>>,
    raf: Option<Closure<dyn FnMut(f64)>>,
    listeners: Vec<EventListener>,
    resize: Option<ResizeWatch>,
}

/// A ResizeObserver and its callback, disconnected when dropped.
struct ResizeWatch {
    observer: web_sys::ResizeObserver,
    _callback: Closure<dyn FnMut(js_sys::Array)>,
}

impl Drop for ResizeWatch {
    fn drop(&mut self) {
        self.observer.disconnect();
    }
}

impl App {
    fn new(ui: Ui) -> App {
        let dpr = ui.window.device_pixel_ratio();
        App {
            ui,
            state: ViewState { dpr, preview_until_ms: f64::NEG_INFINITY, ..ViewState::default() },
            queue: VecDeque::new(),
            preferred_device: None,
            loading: None,
            error: None,
            drag_hover: false,
            detail_preview: None,
            minimap_cols: Vec::new(),
            ready_pending: Cell::new(None),
            generation: 0,
            memo: DomMemo::default(),
            panels: crate::views::Panels::default(),
            analysis: crate::panels::Panel::default(),
            search: crate::search::Search::default(),
            pools: crate::pools::PoolView::default(),
            bands_next_frame: false,
            canvases_pending: false,
            frame_pending: false,
            loader_running: false,
            cancel_requested: false,
            cancel_load: None,
            status_note: None,
            self_ref: Weak::new(),
            raf: None,
            listeners: Vec::new(),
            resize: None,
        }
    }

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

    /// Queues one redraw (at most one animation frame is pending).
    pub fn request_redraw(&mut self) {
        if self.frame_pending {
            return;
        }
        if let Some(cb) = &self.raf {
            if self.ui.window.request_animation_frame(cb.as_ref().unchecked_ref()).is_ok() {
                self.frame_pending = true;
            }
        }
    }

    /// Applies one input.
    pub fn handle(&mut self, input: Input) {
        match input {
            Input::Wheel { surface, x_px, delta_y_px } => {
                self.timeline(TimelineInput::Wheel { surface, x_px, delta_y_px });
            }
            Input::PointerDown { surface, x_px, y_px, button } => {
                self.timeline(TimelineInput::PointerDown { surface, x_px, y_px, button });
            }
            Input::PointerMove { surface, x_px, y_px } => {
                self.timeline(TimelineInput::PointerMove { surface, x_px, y_px })
            }
            Input::PointerUp { surface, x_px, y_px } => self.timeline(TimelineInput::PointerUp { surface, x_px, y_px }),
            Input::PointerLeave { surface } => self.timeline(TimelineInput::PointerLeave { surface }),
            Input::Key(c) => self.timeline(TimelineInput::Key(c)),
            Input::Resize => {
                if self.measure() {
                    self.refresh_minimap();
                }
            }
            Input::CancelLoad => {
                if self.loading.is_some() {
                    self.cancel_requested = true;
                    self.queue.clear();
                    if let Some(cancel) = self.cancel_load.take() {
                        let _ = cancel.call0(&JsValue::NULL);
                    }
                }
            }
            Input::Open(sources) => {
                self.drag_hover = false;
                // The last file's error goes at once, not at the next frame, so that nothing
                // reading the page sees it as the new file's.
                self.error = None;
                self.ui.error.set_hidden(true);
                self.ui.mark("memviz:open");
                self.queue.extend(sources);
                self.start_loader();
            }
            Input::DragHover(on) => self.drag_hover = on,
            Input::SelectFile(i) => {
                if i < self.state.files.len() && self.state.current != Some(i) {
                    self.state.current = Some(i);
                    self.after_plot_change(false);
                    self.ui.mark("memviz:open");
                    self.ready_pending.set(Some(Timings { started_ms: self.ui.now_ms(), ..Timings::default() }));
                }
            }
            Input::SelectDevice(d) => {
                if self.file().is_some_and(|f| f.plot.device_pos != d && d < f.snap.devices.len()) {
                    self.relayout(Some(d), None);
                }
            }
            Input::SelectView(v) => {
                if v != self.state.view {
                    let same_layout = v.mode() == self.state.view.mode();
                    self.state.view = v;
                    crate::views::on_view_shown(self);
                    // The timeline's canvases were hidden (0 px) while a panel was shown.
                    crate::views::show_panel_or_timeline(self);
                    self.on_resize();
                    if !same_layout {
                        self.relayout(None, None);
                    }
                }
            }
            Input::PreviewDetail(n) => self.detail_preview = Some(n),
            Input::SetDetail(n) => {
                self.detail_preview = None;
                if self.file().is_some_and(|f| f.max_entries != n) {
                    self.relayout(None, Some(n));
                }
            }
            Input::SetXAxis(a) => self.timeline(TimelineInput::SetXAxis(a)),
            Input::Panel(p) => crate::views::handle(self, p),
            Input::Analysis(a) => crate::panels::handle(self, a),
        }
        self.request_redraw();
    }

    /// Applies a timeline input to the view state and carries out its effects.
    fn timeline(&mut self, input: TimelineInput) {
        self.state.loading = self.loading.is_some();
        for effect in self.state.update(input, self.ui.now_ms()) {
            match effect {
                Effect::HoldPreview { until_ms } => exact_after((until_ms - self.ui.now_ms()).ceil() as i32 + 1),
                Effect::RefreshMinimap => self.refresh_minimap(),
                Effect::ClickedPlot { x_px } => {
                    // With the live set shown, a click moves its moment there.
                    if self.analysis.open && self.analysis.tab == crate::panels::Tab::Live {
                        crate::panels::handle(self, crate::panels::Action::LiveAtPx(x_px));
                    }
                }
                Effect::CancelLoad => self.handle(Input::CancelLoad),
            }
        }
    }

    /// Whether the base of the timeline is shown from the held copies now.
    pub fn previewing(&self) -> bool {
        self.state.previewing(self.ui.now_ms())
    }

    fn on_resize(&mut self) {
        self.measure();
        self.refresh_minimap();
    }

    /// Measures the canvases and the device pixel ratio; whether any of them changed.
    fn measure(&mut self) -> bool {
        let before = (self.state.dpr, self.state.plot_css, self.state.minimap_css);
        self.state.dpr = self.ui.window.device_pixel_ratio().max(0.25);
        self.state.plot_css = (f64::from(self.ui.plot.client_width()), f64::from(self.ui.plot.client_height()));
        self.state.minimap_css =
            (f64::from(self.ui.minimap.client_width()), f64::from(self.ui.minimap.client_height()));
        before != (self.state.dpr, self.state.plot_css, self.state.minimap_css)
    }

    /// Writes the controls and status line now and measures the canvases again, so the next
    /// frame draws at the size the page will have (the status line can change the layout).
    fn settle_layout(&mut self) {
        render::sync_dom(self);
        self.on_resize();
    }

    /// What is under a point of the plot (CSS px).
    pub fn target_at(&self, x_px: f64, y_px: f64) -> Option<Target> {
        self.state.target_at(x_px, y_px)
    }

    /// Lays out the current file again with another device or detail (after one frame, so the
    /// status line shows first).
    pub(crate) fn relayout(&mut self, device: Option<usize>, max_entries: Option<usize>) {
        let Some(i) = self.state.current else { return };
        self.loading = Some(Loading {
            name: self.state.files[i].name.clone(),
            fraction: 1.0,
            phase: "Laying out the timeline",
            read_bytes: 0,
            total_bytes: 0,
            left_ms: None,
        });
        let weak = self.self_ref.clone();
        wasm_bindgen_futures::spawn_local(async move {
            next_frame().await;
            let Some(rc) = weak.upgrade() else { return };
            let Ok(mut app) = rc.try_borrow_mut() else {
                return;
            };
            let view = app.state.view;
            let hide_freed = app.panels.hide_freed;
            if let Some(f) = app.state.files.get_mut(i) {
                let device_pos = device.unwrap_or(f.plot.device_pos);
                let max_entries = max_entries.unwrap_or(f.max_entries);
                f.plot = PlotData::build(&f.snap, device_pos, Options { max_entries, mode: view.mode(), hide_freed });
                f.max_entries = max_entries;
                if f.x_axis == XAxis::Time && f.plot.time.is_none() {
                    f.x_axis = XAxis::Steps;
                }
                let keep = f.viewport;
                f.viewport = f.full_viewport();
                if device.is_none() && !keep.is_full() && keep.full_x1 == f.viewport.full_x1 {
                    // Same device, new detail: the window stays.
                    f.viewport = keep;
                }
            }
            app.loading = None;
            app.after_plot_change(true);
            app.settle_layout();
            app.request_redraw();
        });
    }

    /// After the plot of the current file changed: forget pointer targets, refresh derived state.
    fn after_plot_change(&mut self, keep_pins: bool) {
        self.generation += 1;
        self.state.hover = None;
        if !keep_pins {
            self.state.pinned = None;
        } else {
            // Element indices survive a detail change but not a device change; drop to be safe.
            self.state.pinned = None;
        }
        self.refresh_minimap();
    }

    /// Recomputes the minimap columns (whole x domain, one per device pixel).
    fn refresh_minimap(&mut self) {
        let rect = self.minimap_rect();
        let cols = (rect.width_px * self.state.dpr).round().max(1.0) as usize;
        self.minimap_cols = match self.file() {
            None => Vec::new(),
            Some(f) => {
                let xm = f.xmap();
                let full = f.viewport.full_x1;
                let bounds: Vec<f64> = (0..=cols).map(|c| xm.step(full * c as f64 / cols as f64)).collect();
                crate::model::column_envelopes(&f.plot.layout, &bounds).iter().map(|e| e.total_max_bytes).collect()
            }
        };
    }

    fn start_loader(&mut self) {
        if self.loader_running {
            return;
        }
        self.loader_running = true;
        let weak = self.self_ref.clone();
        wasm_bindgen_futures::spawn_local(run_queue(weak));
    }

    /// Shows a loaded file; `shown` is called once it is on screen, bands and all.
    fn finish_load(
        &mut self,
        name: String,
        snap: Snapshot,
        plot: PlotData,
        timings: Timings,
        shown: Option<js_sys::Function>,
    ) {
        let mut f = OpenFile {
            name,
            snap,
            plot,
            max_entries: DEFAULT_MAX_ENTRIES,
            x_axis: XAxis::Steps,
            viewport: Viewport::new(1.0, 1.0, 1.0),
        };
        // Names repeat: "x.pickle (2)".
        let same = self
            .state
            .files
            .iter()
            .filter(|g| g.name == f.name || g.name.starts_with(&format!("{} (", f.name)))
            .count();
        if same > 0 {
            f.name = format!("{} ({})", f.name, same + 1);
        }
        f.viewport = f.full_viewport();
        self.state.files.push(f);
        self.state.current = Some(self.state.files.len() - 1);
        self.error = None;
        self.loading = None;
        // The minimap and stack panel appear with the first file: measure the canvases again.
        let _ = self.ui.main.class_list().add_1("has-file");
        self.settle_layout();
        self.after_plot_change(false);
        crate::url::restore(self);
        self.ready_pending.set(Some(timings));
        self.bands_next_frame = true;
        self.canvases_pending = true;
        let weak = self.self_ref.clone();
        wasm_bindgen_futures::spawn_local(async move {
            for step in 0..render::CANVAS_STEPS {
                next_tick().await;
                with_app(&weak, |app| render::prepare_canvas(app, step));
            }
            with_app(&weak, |app| {
                app.canvases_pending = false;
                app.request_redraw();
            });
            // After the frame that shows the page without the bands, and after its paint.
            next_frame().await;
            next_tick().await;
            // The bands are computed in a task of their own, then put on the canvas in a frame.
            with_app(&weak, |app| render::prepare_plot(app));
            next_tick().await;
            with_app(&weak, |app| {
                app.bands_next_frame = false;
                app.request_redraw();
            });
            if let Some(f) = shown {
                next_frame().await;
                let _ = f.call0(&JsValue::NULL);
            }
        });
    }
}

/// Resolves after the browser had a chance to paint.
pub async fn next_frame() {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.request_animation_frame(&resolve);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
    next_tick().await;
}

/// Resolves after `ms` milliseconds (a `setTimeout` promise: no Rust closure to keep).
pub async fn sleep_ms(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}

/// Draws the timeline exactly again in `delay_ms` unless the input went on meanwhile: the plot
/// area is computed in a task of its own, then put on the canvas in the next frame.
fn exact_after(delay_ms: i32) {
    wasm_bindgen_futures::spawn_local(async move {
        sleep_ms(delay_ms).await;
        let rested = APP.with(|a| {
            let app = a.borrow().as_ref().map(Rc::clone)?;
            let app = app.try_borrow().ok()?;
            (!app.previewing()).then(|| render::prepare_plot(&app))
        });
        if rested.is_none() {
            return;
        }
        next_tick().await;
        APP.with(|a| {
            if let Some(Ok(mut app)) = a.borrow().as_ref().map(|rc| rc.try_borrow_mut()) {
                app.request_redraw();
            }
        });
    });
}

/// Asks for one more frame in `delay_ms`, for drawing put off while the input kept changing.
pub fn redraw_after(delay_ms: i32) {
    wasm_bindgen_futures::spawn_local(async move {
        sleep_ms(delay_ms).await;
        APP.with(|a| {
            if let Some(Ok(mut app)) = a.borrow().as_ref().map(|rc| rc.try_borrow_mut()) {
                app.request_redraw();
            }
        });
    });
}

/// Resolves on the next turn of the event loop.
pub async fn next_tick() {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback(&resolve);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}

/// Borrows the state for a moment; `None` when it is gone or busy.
pub(crate) fn with_app<R>(weak: &Weak<RefCell<App>>, f: impl FnOnce(&mut App) -> R) -> Option<R> {
    let rc = weak.upgrade()?;
    let mut app = rc.try_borrow_mut().ok()?;
    Some(f(&mut app))
}

/// Loads queued sources one after the other.
async fn run_queue(weak: Weak<RefCell<App>>) {
    loop {
        let Some(Some(source)) = with_app(&weak, |app| app.queue.pop_front()) else {
            break;
        };
        load_one(&weak, source).await;
    }
    with_app(&weak, |app| {
        app.loader_running = false;
        app.loading = None;
        app.request_redraw();
    });
}

#[allow(clippy::too_many_lines)] // one load from the first slice to the first frame; splits into the shared feed loop
async fn load_one(weak: &Weak<RefCell<App>>, source: Source) {
    let Some(started_ms) = with_app(weak, |app| app.ui.now_ms()) else {
        return;
    };
    let now = || with_app(weak, |app| app.ui.now_ms()).unwrap_or(0.0);
    let (name, total_bytes) = match &source {
        Source::File(f) => (f.name(), f.size() as u64),
        Source::Demo => (DEMO_NAME.to_string(), DEMO_SNAPSHOT.len() as u64),
        Source::Bytes { name, bytes } => (name.clone(), bytes.len() as u64),
    };
    let in_memory: &[u8] = match &source {
        Source::File(_) => &[],
        Source::Demo => DEMO_SNAPSHOT,
        Source::Bytes { bytes, .. } => bytes,
    };
    with_app(weak, |app| {
        app.error = None;
        app.cancel_requested = false;
        app.status_note = None;
        app.loading = Some(Loading {
            name: name.clone(),
            fraction: 0.0,
            phase: "Reading",
            read_bytes: 0,
            total_bytes,
            left_ms: None,
        });
        app.request_redraw();
    });
    let mut timings = Timings { started_ms, ..Timings::default() };
    let fail = |msg: String| {
        with_app(weak, |app| {
            app.error = Some(msg);
            app.loading = None;
            app.request_redraw();
        });
    };
    if let Source::File(file) = &source {
        if worker_client::available() {
            match load_in_worker(weak, file, &name, total_bytes, &mut timings).await {
                WorkerEnd::Finished => return,
                // Profiler timelines and pages without workers load below.
                WorkerEnd::LoadHere => {}
            }
        }
    }
    let mut loader = ModelLoader::new(total_bytes);
    let blob = match &source {
        Source::File(f) => Some(gloo_file::Blob::from(web_sys::Blob::from(f.clone()))),
        Source::Demo | Source::Bytes { .. } => None,
    };
    // Slices of the file; the next one is read while this one is decoded.
    let read = |offset: u64| {
        let end = (offset + CHUNK_BYTES as u64).min(total_bytes);
        blob.as_ref().map(|b| gloo_file::futures::read_as_bytes(&b.slice(offset, end)))
    };
    let mut pending = read(0);
    let mut offset = 0u64;
    let mut last_yield_ms = started_ms;
    let mut profile_bytes: Option<Vec<u8>> = None;
    while offset < total_bytes {
        let end = (offset + CHUNK_BYTES as u64).min(total_bytes);
        let t0 = now();
        let owned;
        let chunk: &[u8] = match pending.take() {
            Some(reading) => match reading.await {
                Ok(bytes) => {
                    owned = bytes;
                    &owned
                }
                Err(e) => {
                    fail(format!(
                        "Could not read {name}: {}. Is the file still there and readable?",
                        e.to_string().trim_end_matches('.')
                    ));
                    return;
                }
            },
            None => in_memory.get(offset as usize..end as usize).unwrap_or(&[]),
        };
        if end < total_bytes {
            pending = read(end);
        }
        let t1 = now();
        timings.read_ms += t1 - t0;
        if t1 - t0 > 1.0 {
            // Waiting for the slice let the page repaint.
            last_yield_ms = t1;
        }
        // A profiler memory timeline (JSON list, maybe gzipped) is kept whole and read at the end.
        if offset == 0 && crate::panels::categories::maybe_profile(chunk) {
            profile_bytes = Some(Vec::new());
        }
        // Decoded in parts, letting the page repaint between them, so that the page never stops
        // responding for long.
        let mut fed = Ok(());
        let mut waited_ms = 0.0;
        match &mut profile_bytes {
            Some(kept) => kept.extend_from_slice(chunk),
            None => {
                for part in chunk.chunks(FEED_BYTES) {
                    fed = loader.feed(part);
                    if fed.is_err() {
                        break;
                    }
                    let t = now();
                    if t - last_yield_ms > YIELD_EVERY_MS {
                        next_tick().await;
                        last_yield_ms = now();
                        waited_ms += last_yield_ms - t;
                    }
                }
            }
        }
        let t2 = now();
        timings.parse_ms += t2 - t1 - waited_ms;
        timings.wait_ms += waited_ms;
        if let Err(e) = fed {
            fail(format!("Could not open {name}: {e}"));
            return;
        }
        offset = end;
        let fraction = loader.fraction();
        let elapsed_ms = t2 - started_ms;
        // Reading is most of the time; the rest (model, layout) takes about a third as long.
        let left_ms = (fraction > 0.02 && elapsed_ms > 250.0)
            .then(|| elapsed_ms * ((1.0 - fraction) / fraction + LATER_PHASES_SHARE));
        let cancelled = with_app(weak, |app| {
            if let Some(l) = &mut app.loading {
                l.fraction = fraction;
                l.read_bytes = offset;
                l.left_ms = left_ms;
            }
            app.request_redraw();
            app.cancel_requested
        })
        .unwrap_or(true);
        if cancelled {
            with_app(weak, |app| {
                app.loading = None;
                app.cancel_requested = false;
                app.status_note = Some(format!("Stopped loading {name}."));
                app.request_redraw();
            });
            return;
        }
        if offset < total_bytes && t2 - last_yield_ms > YIELD_EVERY_MS {
            // Let the page repaint the progress bar.
            next_tick().await;
            last_yield_ms = now();
            timings.wait_ms += last_yield_ms - t2;
        }
    }
    if let Some(kept) = profile_bytes.take() {
        match memviz_core::analysis::categories::read_profiler_timeline(&kept) {
            Ok(tl) => {
                with_app(weak, |app| {
                    app.analysis.categories.set_profile(name.clone(), &tl);
                    app.loading = None;
                    app.request_redraw();
                });
                return;
            }
            Err(_) => {
                if let Err(e) = loader.feed(&kept) {
                    fail(format!("Could not open {name}: {e}"));
                    return;
                }
            }
        }
    }
    let slow = |t: f64| t - started_ms > SHOW_PHASES_AFTER_MS;
    if slow(now()) {
        with_app(weak, |app| {
            if let Some(l) = &mut app.loading {
                l.phase = "Building the model";
            }
            app.request_redraw();
        });
        let tw = now();
        next_frame().await;
        timings.wait_ms += now() - tw;
    }
    let t0 = now();
    let snap = match loader.finish() {
        Ok(s) => s,
        Err(e) => {
            fail(format!("Could not open {name}: {e}"));
            return;
        }
    };
    timings.model_ms = now() - t0;
    if slow(now()) {
        with_app(weak, |app| {
            if let Some(l) = &mut app.loading {
                l.phase = "Laying out the timeline";
            }
            app.request_redraw();
        });
        let tw = now();
        next_frame().await;
        timings.wait_ms += now() - tw;
    }
    let t0 = now();
    let Some(view) = with_app(weak, |app| app.state.view) else {
        return;
    };
    let preferred = with_app(weak, |app| app.preferred_device).flatten();
    let device_pos = choose_device(&snap, preferred);
    let plot = PlotData::build(
        &snap,
        device_pos,
        Options {
            max_entries: DEFAULT_MAX_ENTRIES,
            mode: view.mode(),
            hide_freed: with_app(weak, |app| app.panels.hide_freed).unwrap_or(false),
        },
    );
    timings.layout_ms = now() - t0;
    timings.laid_out_ms = now();
    with_app(weak, |app| {
        app.finish_load(name, snap, plot, timings, None);
        app.request_redraw();
    });
}

/// How [`load_in_worker`] ended.
enum WorkerEnd {
    /// Loaded, failed or cancelled: nothing more to do.
    Finished,
    /// Load on the main thread instead.
    LoadHere,
}

/// The phase names the worker reports, as the status line shows them.
fn phase_name(phase: &str) -> &'static str {
    match phase {
        "Building the model" => "Building the model",
        "Laying out the timeline" => "Laying out the timeline",
        "Handing over the model" => "Handing over the model",
        _ => "Reading",
    }
}

/// Loads a file in a Web Worker: the page's main thread only shows progress and, at the end,
/// copies the model and plot into place.
async fn load_in_worker(
    weak: &Weak<RefCell<App>>,
    file: &web_sys::File,
    name: &str,
    total_bytes: u64,
    timings: &mut Timings,
) -> WorkerEnd {
    let Some((view, hide_freed, preferred_device)) =
        with_app(weak, |app| (app.state.view, app.panels.hide_freed, app.preferred_device))
    else {
        return WorkerEnd::Finished;
    };
    let request = LoadRequest {
        name: name.to_string(),
        preferred_device,
        options: Options { max_entries: DEFAULT_MAX_ENTRIES, mode: view.mode(), hide_freed },
    };
    let started_ms = timings.started_ms;
    let on_progress = move |app: &mut App, read_bytes: f64, phase: &str| {
        let fraction = if total_bytes == 0 { 1.0 } else { (read_bytes / total_bytes as f64).min(1.0) };
        let elapsed_ms = app.ui.now_ms() - started_ms;
        let left_ms = (fraction > 0.02 && elapsed_ms > 250.0)
            .then(|| elapsed_ms * ((1.0 - fraction) / fraction + LATER_PHASES_SHARE));
        if let Some(l) = &mut app.loading {
            l.fraction = fraction;
            l.read_bytes = read_bytes as u64;
            l.left_ms = if phase == "Reading" { left_ms } else { None };
            l.phase = phase_name(phase);
        }
        app.request_redraw();
    };
    match worker_client::load(weak, file, &request, on_progress).await {
        Outcome::Loaded { snap, plot, timings: w, decode_ms, shown } => {
            timings.read_ms = w.read_ms;
            timings.parse_ms = w.parse_ms;
            timings.model_ms = w.model_ms;
            timings.layout_ms = w.layout_ms;
            timings.transfer_ms = w.encode_ms + decode_ms;
            timings.decode_ms = decode_ms;
            // A turn of the event loop between copying the model in and showing it.
            next_tick().await;
            let now = with_app(weak, |app| app.ui.now_ms()).unwrap_or(0.0);
            timings.laid_out_ms = now;
            let t = *timings;
            with_app(weak, |app| {
                app.finish_load(name.to_string(), *snap, *plot, t, shown);
                app.request_redraw();
            });
            WorkerEnd::Finished
        }
        Outcome::Failed(msg) => {
            with_app(weak, |app| {
                app.error = Some(msg);
                app.loading = None;
                app.request_redraw();
            });
            WorkerEnd::Finished
        }
        Outcome::Cancelled => {
            with_app(weak, |app| {
                app.loading = None;
                app.cancel_requested = false;
                app.status_note = Some(format!("Stopped loading {name}."));
                app.request_redraw();
            });
            WorkerEnd::Finished
        }
        Outcome::Profile | Outcome::Unavailable => WorkerEnd::LoadHere,
    }
}

/// Makes the input of a pointer event from its surface and position (CSS px).
type PointerInput = fn(Surface, f64, f64) -> Input;

/// Registers a listener that turns a DOM event into an [`Input`] and hands it to the state.
pub fn listen<E: JsCast + 'static>(
    weak: &Weak<RefCell<App>>,
    target: &web_sys::EventTarget,
    event_type: &'static str,
    to_input: impl Fn(&E) -> Option<Input> + 'static,
) -> EventListener {
    let weak = weak.clone();
    EventListener::new_with_options(target, event_type, EventListenerOptions::enable_prevent_default(), move |ev| {
        let Some(e) = ev.dyn_ref::<E>() else { return };
        let Some(input) = to_input(e) else { return };
        with_app(&weak, |app| app.handle(input));
    })
}

fn select_index(e: &web_sys::Event) -> Option<usize> {
    let s: HtmlSelectElement = e.target()?.dyn_into().ok()?;
    s.value().parse().ok()
}

fn input_number(e: &web_sys::Event) -> Option<usize> {
    let i: HtmlInputElement = e.target()?.dyn_into().ok()?;
    i.value().parse().ok()
}

fn files_of(list: Option<web_sys::FileList>) -> Vec<Source> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).map(Source::File).collect()
}

fn pointer(surface: Surface, e: &web_sys::MouseEvent) -> (Surface, f64, f64) {
    (surface, f64::from(e.offset_x()), f64::from(e.offset_y()))
}

/// Whether a key event comes from a control that uses the keys itself.
fn typing_in_control(e: &KeyboardEvent) -> bool {
    e.target()
        .and_then(|t| t.dyn_into::<Element>().ok())
        .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA"))
}

fn install_listeners(weak: &Weak<RefCell<App>>, ui: &Ui) -> Vec<EventListener> {
    let mut l = Vec::new();
    let win: &web_sys::EventTarget = ui.window.as_ref();
    // Files.
    l.push(listen(weak, ui.file_input.as_ref(), "change", |e: &web_sys::Event| {
        let input: HtmlInputElement = e.target()?.dyn_into().ok()?;
        let files = files_of(input.files());
        // Choosing the same file again must fire "change" again.
        input.set_value("");
        (!files.is_empty()).then_some(Input::Open(files))
    }));
    l.push(listen(weak, ui.demo_button.as_ref(), "click", |_: &web_sys::Event| Some(Input::Open(vec![Source::Demo]))));
    l.push(listen(weak, ui.cancel_button.as_ref(), "click", |_: &web_sys::Event| Some(Input::CancelLoad)));
    l.push(listen(weak, win, "dragover", |e: &DragEvent| {
        let has_files = e.data_transfer().is_some_and(|d| d.types().includes(&JsValue::from_str("Files"), 0));
        if has_files {
            e.prevent_default();
            Some(Input::DragHover(true))
        } else {
            None
        }
    }));
    l.push(listen(weak, win, "dragleave", |e: &DragEvent| {
        e.related_target().is_none().then_some(Input::DragHover(false))
    }));
    l.push(listen(weak, win, "drop", |e: &DragEvent| {
        e.prevent_default();
        let files = files_of(e.data_transfer().and_then(|d| d.files()));
        Some(if files.is_empty() { Input::DragHover(false) } else { Input::Open(files) })
    }));
    // Menus.
    l.push(listen(weak, ui.file_select.as_ref(), "change", |e: &web_sys::Event| {
        select_index(e).map(Input::SelectFile)
    }));
    l.push(listen(weak, ui.device_select.as_ref(), "change", |e: &web_sys::Event| {
        select_index(e).map(Input::SelectDevice)
    }));
    l.push(listen(weak, ui.view_select.as_ref(), "change", |e: &web_sys::Event| {
        let s: HtmlSelectElement = e.target()?.dyn_into().ok()?;
        View::from_value(&s.value()).map(Input::SelectView)
    }));
    l.push(listen(weak, ui.detail.as_ref(), "input", |e: &web_sys::Event| input_number(e).map(Input::PreviewDetail)));
    l.push(listen(weak, ui.detail.as_ref(), "change", |e: &web_sys::Event| input_number(e).map(Input::SetDetail)));
    l.push(listen(weak, ui.x_axis_select.as_ref(), "change", |e: &web_sys::Event| {
        let s: HtmlSelectElement = e.target()?.dyn_into().ok()?;
        XAxis::from_value(&s.value()).map(Input::SetXAxis)
    }));
    // Canvases.
    for (canvas, surface) in [(&ui.plot, Surface::Plot), (&ui.minimap, Surface::Minimap)] {
        let target: &web_sys::EventTarget = canvas.as_ref();
        l.push(listen(weak, target, "wheel", move |e: &WheelEvent| {
            e.prevent_default();
            let dy = if e.delta_y() != 0.0 { e.delta_y() } else { e.delta_x() };
            Some(Input::Wheel {
                surface,
                x_px: f64::from(e.offset_x()),
                delta_y_px: input::wheel_delta_px(dy, e.delta_mode()),
            })
        }));
        l.push(listen(weak, target, "pointerdown", move |e: &PointerEvent| {
            if let Some(el) = e.target().and_then(|t| t.dyn_into::<HtmlElement>().ok()) {
                let _ = el.set_pointer_capture(e.pointer_id());
                // Keys go to the plot after a click on it (not to a menu used before).
                let _ = el.focus();
            }
            let (surface, x_px, y_px) = pointer(surface, e);
            Some(Input::PointerDown { surface, x_px, y_px, button: e.button() })
        }));
        let moves: [(&'static str, PointerInput); 2] = [
            ("pointermove", |surface, x_px, y_px| Input::PointerMove { surface, x_px, y_px }),
            ("pointerup", |surface, x_px, y_px| Input::PointerUp { surface, x_px, y_px }),
        ];
        for (name, make) in moves {
            l.push(listen(weak, target, name, move |e: &PointerEvent| {
                let (surface, x_px, y_px) = pointer(surface, e);
                Some(make(surface, x_px, y_px))
            }));
        }
        l.push(listen(weak, target, "pointerleave", move |_: &PointerEvent| Some(Input::PointerLeave { surface })));
    }
    // Keys and window size.
    l.push(listen(weak, win, "keydown", |e: &KeyboardEvent| {
        if typing_in_control(e) && e.key() != "Escape" {
            return None;
        }
        let c = input::command_for_key(&e.key(), e.ctrl_key() || e.alt_key() || e.meta_key())?;
        e.prevent_default();
        Some(Input::Key(c))
    }));
    l.push(listen(weak, win, "resize", |_: &web_sys::Event| Some(Input::Resize)));
    l
}

fn watch_size(weak: &Weak<RefCell<App>>, ui: &Ui) -> Option<ResizeWatch> {
    let w = weak.clone();
    let callback = Closure::<dyn FnMut(js_sys::Array)>::new(move |_entries: js_sys::Array| {
        with_app(&w, |app| app.handle(Input::Resize));
    });
    let observer = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()).ok()?;
    observer.observe(&ui.plot);
    observer.observe(&ui.minimap);
    Some(ResizeWatch { observer, _callback: callback })
}

/// What a page with snapshots inside it asks for.
struct Embedded {
    files: Vec<Source>,
    view: Option<View>,
    device: Option<i64>,
}

/// Reads `<script type="application/json" id="memviz-embedded">`, which pages written by the
/// command line carry: `{"files": [{"name", "base64"}], "view", "device"}`.
fn read_embedded(document: &Document) -> Option<Embedded> {
    let text = document.get_element_by_id("memviz-embedded")?.text_content()?;
    let config = js_sys::JSON::parse(&text).ok()?;
    let get = |v: &JsValue, k: &str| js_sys::Reflect::get(v, &JsValue::from_str(k)).ok();
    let mut files = Vec::new();
    if let Some(list) = get(&config, "files").and_then(|f| f.dyn_into::<js_sys::Array>().ok()) {
        for f in list.iter() {
            let name = get(&f, "name").and_then(|n| n.as_string()).unwrap_or_else(|| "snapshot".into());
            let Some(bytes) =
                get(&f, "base64").and_then(|b| b.as_string()).and_then(|b| crate::model::base64_decode(&b))
            else {
                continue;
            };
            files.push(Source::Bytes { name, bytes: bytes.into() });
        }
    }
    let view = get(&config, "view").and_then(|v| v.as_string()).and_then(|v| View::from_value(&v));
    let device = get(&config, "device").and_then(|d| d.as_f64()).map(|d| d as i64);
    Some(Embedded { files, view, device })
}

thread_local! {
    static APP: RefCell<Option<Rc<RefCell<App>>>> = const { RefCell::new(None) };
}

/// Builds the state, installs the listeners and keeps the state for the page's lifetime.
pub fn install() -> Result<(), JsValue> {
    let ui = Ui::find()?;
    let rc = Rc::new(RefCell::new(App::new(ui)));
    let weak = Rc::downgrade(&rc);
    {
        let mut app = rc.borrow_mut();
        app.self_ref = weak.clone();
        let w = weak.clone();
        app.raf = Some(Closure::<dyn FnMut(f64)>::new(move |_t: f64| {
            let Some(rc) = w.upgrade() else { return };
            if let Ok(mut app) = rc.try_borrow_mut() {
                app.frame_pending = false;
            }
            let drawn = rc.try_borrow().map(|app| render::draw(&app));
            drop(drawn);
        }));
        app.listeners = install_listeners(&weak, &app.ui);
        let panel_listeners = crate::panels::listeners(&weak, &app.ui);
        app.listeners.extend(panel_listeners);
        let view_listeners = crate::views::install_listeners(&weak, &app.ui.document);
        app.listeners.extend(view_listeners);
        let search_listeners = crate::search::install(&weak, &mut app);
        app.listeners.extend(search_listeners);
        let pool_listeners = crate::pools::install(&weak, &mut app);
        app.listeners.extend(pool_listeners);
        app.panels = crate::views::Panels::new(&app.ui.document);
        app.resize = watch_size(&weak, &app.ui);
        app.ui.demo_button.remove_attribute("disabled").ok();
        app.handle(Input::Resize);
    }
    // A page written with snapshots inside it opens them right away.
    let embedded = read_embedded(&rc.borrow().ui.document);
    if let Some(embedded) = embedded {
        let mut app = rc.borrow_mut();
        if let Some(v) = embedded.view {
            app.state.view = v;
        }
        app.preferred_device = embedded.device;
        if !embedded.files.is_empty() {
            app.handle(Input::Open(embedded.files));
        }
    }
    // A reload keeps the fragment: view and device now, the rest when the same file opens.
    crate::url::read_at_start(&mut rc.borrow_mut());
    APP.with(|a| *a.borrow_mut() = Some(rc));
    wasm_bindgen_futures::spawn_local(warm_up(weak));
    Ok(())
}

/// Runs the loading and layout code once on the built-in snapshot while the page is idle.
///
/// Browsers compile WebAssembly lazily and optimize a function only after it has run for a
/// while, so the first file opened would otherwise run in the baseline tier (several times
/// slower). Skipped if a file is already being opened.
/// Frames the warm-up draws of the demo timeline.
const WARM_DRAWS: u32 = 8;

async fn warm_up(weak: Weak<RefCell<App>>) {
    next_frame().await;
    next_frame().await;
    let idle = |weak: &Weak<RefCell<App>>| {
        with_app(weak, |app| !app.loader_running && app.state.files.is_empty()).unwrap_or(false)
    };
    if !idle(&weak) {
        return;
    }
    let Ok(snap) = crate::model::load_chunks(DEMO_SNAPSHOT.chunks(CHUNK_BYTES), DEMO_SNAPSHOT.len() as u64) else {
        return;
    };
    next_tick().await;
    if !idle(&weak) {
        return;
    }
    let plot = PlotData::build(&snap, snap.default_device().unwrap_or(0), Options::default());
    let mut file = OpenFile {
        name: String::new(),
        snap,
        plot,
        max_entries: DEFAULT_MAX_ENTRIES,
        x_axis: XAxis::Steps,
        viewport: Viewport::new(1.0, 1.0, 1.0),
    };
    file.viewport = file.full_viewport();
    // The drawing code too, on a canvas that is never shown, over several windows: a function
    // is optimized only once it has run enough, and a long first run stays in the baseline tier.
    let canvas = with_app(&weak, |app| {
        let canvas = app.ui.document.create_element("canvas").ok()?.dyn_into::<HtmlCanvasElement>().ok()?;
        let ctx = context_2d(&canvas).ok()?;
        Some((canvas, ctx))
    })
    .flatten();
    if let Some((canvas, ctx)) = canvas {
        let image = render::ImageBuffer::default();
        let full = file.viewport;
        for k in 0..WARM_DRAWS {
            if !idle(&weak) {
                return;
            }
            let mut v = full;
            let share = 1.0 / f64::from(1 + k % 4);
            v.set_window(full.x0, full.x0 + (full.x1 - full.x0) * share);
            file.viewport = v;
            drop(render::draw_timeline_base(Some(&file), (1000.0, 600.0), 1.0, (&canvas, &ctx, &image), None, None));
            next_tick().await;
        }
        file.viewport = full;
    }
    let (snap, plot) = (&file.snap, &file.plot);
    let l = &plot.layout;
    let bounds: Vec<f64> = (0..=512).map(|c| f64::from(l.steps) * f64::from(c) / 512.0).collect();
    let _ = crate::model::column_envelopes(l, &bounds);
    for b in (0..l.band_count() as u32).step_by(97) {
        let (s0, s1) = l.band_step_range(b);
        let _ = l.hit_test((f64::from(s0) + f64::from(s1)) / 2.0, 0.0);
        let _ = describe::element_text(snap, plot.device_pos, l, l.band_element[b as usize]);
    }
    with_app(&weak, |app| {
        let _ = app.ui.document.body().map(|b| b.set_attribute("data-warm", "1"));
    });
}
