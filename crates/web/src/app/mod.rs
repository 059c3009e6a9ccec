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
use crate::model::{choose_device, PlotData, CHUNK_BYTES};
use crate::render;
use crate::worker::LoadRequest;
use crate::worker_client::{self, Outcome};
use memviz_view::state::{Effect, TimelineInput, ViewState};
use memviz_view::view::View;
use memviz_view::viewport::{PlotRect, Viewport};
use memviz_view::xmap::XAxis;

/// The snapshot behind "Try a demo": a short GPT training run with AMP and annotated steps.
pub static DEMO_SNAPSHOT: &[u8] = include_bytes!("../../../../tests/data/real/gpt_amp_annotated.pickle");

/// File name shown for the demo.
pub const DEMO_NAME: &str = "gpt_amp_annotated.pickle (demo)";

/// Loads that took longer than this (ms) show each phase in the status line before running it
/// (which costs a frame); quicker loads go straight through.
const SHOW_PHASES_AFTER_MS: f64 = 150.0;

/// While reading a file, give the page a chance to repaint at least this often (ms).
const YIELD_EVERY_MS: f64 = 40.0;
/// Time the phases after reading (model, layout, first frame) take, as a share of the reading
/// time, for the estimate of the time left.
const LATER_PHASES_SHARE: f64 = 0.35;

mod listeners;
mod load;
mod start;
mod tasks;
mod ui;

pub use listeners::listen;
use listeners::{install_listeners, watch_size, ResizeWatch};
use load::run_queue;
pub use start::install;
use start::APP;
use tasks::exact_after;
pub(crate) use tasks::with_app;
pub use tasks::{next_frame, next_tick, redraw_after, sleep_ms};
use ui::context_2d;
pub use ui::Ui;

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
            Input::Timeline(t) => self.timeline(t),
            Input::Resize => {
                if self.measure() {
                    self.refresh_minimap();
                }
            }
            Input::DismissError => self.error = None,
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
