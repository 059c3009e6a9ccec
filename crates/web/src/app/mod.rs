//! The page's one state ([`App`]), the handlers that change it, and the glue to the DOM.
//!
//! DOM events become [`crate::input::Input`]s through the [`crate::input::Binding`]s each part of the page gives, installed
//! by [`install`] through one helper (`listen_binding`), which borrows the state once and calls
//! [`App::handle`]. Handlers change state, carry out its effects and end in `settle` (derived
//! results brought up to date, the URL written, one animation frame asked for); the frame calls
//! [`crate::render::draw`], which reads the state only. Listeners, the frame callback and
//! the resize observer are owned by the state and removed when it is dropped.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Weak;

use gloo_events::EventListener;
use memviz_core::snapshot::Snapshot;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::dom::Ui;
use crate::input::Source;
use crate::paint::Frame;
use crate::render::{self, PaintMemo};
use crate::tasks::{next_frame, next_tick};
use memviz_view::derived::Derived;
use memviz_view::model::PlotData;
pub use memviz_view::model::Timings;
use memviz_view::state::Effect;
use memviz_view::state::{Added, ViewState};
use memviz_view::viewport::PlotRect;

pub use memviz_view::model::{DEMO_NAME, DEMO_SNAPSHOT};

/// Loads that took longer than this (ms) show each phase in the status line before running it
/// (which costs a frame, so not within `load::PROGRESS_EVERY_MS` of the last progress shown);
/// quicker loads go straight through.
const SHOW_PHASES_AFTER_MS: f64 = 150.0;

/// While reading a file on the page, give it a chance to take input and repaint at least this
/// often (ms).
const YIELD_EVERY_MS: f64 = 12.0;
/// Files up to this size (bytes) load on the page itself, in slices of at most YIELD_EVERY_MS:
/// one WebAssembly heap holds the parse and the model (a loading worker's heap would hold the
/// parse's peak beside the page's copy of the model), and nothing is handed over. Measured on
/// `stacks="all"` captures (docs/performance.md): 174 MB opened in 545 ms with a 297 MB renderer
/// on the page against 797-847 ms and 471 MB through a worker; 688 MB (4M entries) in 1.4-1.6 s
/// and 740 MB against 2.1-2.8 s and 1,195 MB. Larger files load in a worker: a model too large
/// for a tab ends the worker, not the page (compressed files and JSON take it sooner:
/// `memviz_view::feed::on_page_max_bytes_for`). Pages may set `globalThis.memvizOnPageMaxBytes`
/// to another limit (tests of the worker's path do).
const ON_PAGE_MAX_BYTES: u64 = 1 << 30;
/// The room made at start-up is for a file of at most this size (most files are far smaller,
/// and a larger one makes its own room as it is chosen: `load::reserve_memory`).
const START_ROOM_FOR_BYTES: u64 = 128 << 20;
/// Files up to this size (bytes) that load on the page are read on the page (a few slices), and
/// no reading worker starts for them; larger ones are read by a reading worker.
const READ_ON_PAGE_MAX_BYTES: u64 = 4 << 20;
/// Time the phases after reading (model, layout, first frame) take, as a share of the reading
/// time, for the estimate of the time left.
const LATER_PHASES_SHARE: f64 = 0.35;

mod handle;
mod listeners;
mod load;
mod picture;
mod run;
mod start;
mod tasks;

use listeners::ResizeWatch;
use load::run_queue;
pub use start::{install, open_run_from_script};
pub(crate) use tasks::with_app;

pub use memviz_view::state::{Drag, Loading, OpenFile, Target};

/// The page's state: the DOM, the page's user state, what is derived from it, what the painters
/// remember, and the plumbing (frames, loads, listeners).
pub struct App {
    /// Elements.
    pub ui: Ui,
    /// The page's user state: files, view, pointer, pins, drag, panels, loading, errors.
    pub state: ViewState,
    /// What is computed from the state (analyses, matches, history, minimap columns).
    pub derived: Derived,
    /// What the painters wrote last.
    pub memo: PaintMemo,
    /// Files waiting to load.
    pub queue: VecDeque<Source>,
    frame_pending: bool,
    loader_running: bool,
    /// Index the first file of the files opened together gets: it is shown, the others open
    /// behind it (until the queue is empty).
    batch_first: Option<usize>,
    /// What the file being loaded was opened from ([`input::source_key`]).
    loading_source: Option<String>,
    /// Whether the loads under way are two files dropped together, to be compared once both
    /// are open ([`App::open_picked`]); what is left of that wish goes when they are done.
    pair_dropped: bool,
    /// The first of two files dropped together, open but not shown yet, with its load's
    /// timings: it is shown with the second, side by side ([`App::finish_load`]).
    held_for_pair: Option<Timings>,
    /// Loads started so far: which one a timer started for is still running.
    loads_started: u64,
    /// The user asked to stop loading.
    cancel_requested: bool,
    /// Stops the load running in a Web Worker, while one runs.
    pub cancel_load: Option<js_sys::Function>,
    /// The files of the run opened ([`memviz_view::ranks::RankEntry::source`] indexes them):
    /// a rank's model is read again from its file when it is focused.
    run_files: Vec<web_sys::File>,
    /// The picked files loaded or listed to be read again, by [`input::source_key`]: a file
    /// whose model was let go is read again from its handle (bounded by the file menu).
    file_handles: Vec<(String, web_sys::File)>,
    /// Runs opened so far (each run's id).
    runs_opened: u64,
    /// A run's entries to compare once both are loaded: (shown, compared with).
    pending_compare: Option<(usize, usize)>,
    /// The window (x0, x1) a rest to choose Detail for is awaited for ([`tasks::refocus_when_rested`]).
    refocus_pending: Option<(f64, f64)>,
    /// The Compare view's pair and window (shares) Detail was last chosen for, or is awaited for.
    compare_refocus_seen: Option<((usize, usize), (f64, f64))>,
    self_ref: Weak<RefCell<App>>,
    raf: Option<Closure<dyn FnMut(f64)>>,
    listeners: Vec<EventListener>,
    resize: Option<ResizeWatch>,
}

impl App {
    fn new(ui: Ui) -> App {
        let dpr = ui.window.device_pixel_ratio();
        let memo = PaintMemo { views: crate::views::Memo::new(&ui.document), ..PaintMemo::default() };
        let state = ViewState::new(dpr, crate::views::embedded_filter_freed(&ui.document));
        App {
            ui,
            state,
            derived: Derived::default(),
            memo,
            queue: VecDeque::new(),
            frame_pending: false,
            loader_running: false,
            batch_first: None,
            loading_source: None,
            pair_dropped: false,
            held_for_pair: None,
            loads_started: 0,
            cancel_requested: false,
            cancel_load: None,
            run_files: Vec::new(),
            file_handles: Vec::new(),
            runs_opened: 0,
            pending_compare: None,
            refocus_pending: None,
            compare_refocus_seen: None,
            self_ref: Weak::new(),
            raf: None,
            listeners: Vec::new(),
            resize: None,
        }
    }

    /// What a frame is drawn from, and the painters' memo.
    pub fn frame(&mut self) -> (Frame<'_>, &mut PaintMemo) {
        (Frame { ui: &self.ui, state: &self.state, derived: &self.derived }, &mut self.memo)
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

    /// Whether the base of the timeline (or the Compare view's charts) is shown from the held
    /// copies now.
    pub fn previewing(&self) -> bool {
        let now = self.ui.now_ms();
        self.state.previewing(now) || (self.state.compare_shown() && self.state.compare_view().previewing(now))
    }

    fn on_resize(&mut self) {
        self.measure();
        self.refresh_minimap();
    }

    /// Measures the canvases and the device pixel ratio; whether any of them changed.
    fn measure(&mut self) -> bool {
        let ui = &self.ui;
        self.state.measure(
            ui.window.device_pixel_ratio(),
            (f64::from(ui.plot.client_width()), f64::from(ui.plot.client_height())),
            (f64::from(ui.minimap.client_width()), f64::from(ui.minimap.client_height())),
        )
    }

    /// Writes the page around the canvases now and measures them again, so the next frame draws
    /// at the size the page will have (the status line or the stack panel can change it).
    fn settle_layout(&mut self) {
        let (fr, memo) = self.frame();
        render::sync_page(&fr, memo);
        self.on_resize();
    }

    /// What is under a point of the plot (CSS px).
    pub fn target_at(&self, x_px: f64, y_px: f64) -> Option<Target> {
        self.state.target_at(x_px, y_px)
    }

    /// Lays out the current file again with another device or detail (after one frame, so the
    /// status line shows first): [`memviz_view::state::ViewState::finish_relayout`].
    pub(crate) fn relayout(&mut self, device: Option<usize>, max_entries: Option<usize>) {
        let Some(i) = self.state.begin_relayout() else { return };
        let weak = self.self_ref.clone();
        wasm_bindgen_futures::spawn_local(async move {
            next_frame().await;
            let Some(rc) = weak.upgrade() else { return };
            let Ok(mut app) = rc.try_borrow_mut() else {
                return;
            };
            app.state.finish_relayout(i, device, max_entries);
            app.refresh_minimap();
            app.settle_layout();
            app.settle();
        });
    }

    /// After the plot of the current file changed: forget pointer targets
    /// ([`memviz_view::state::ViewState::forget_targets`]), refresh the minimap's columns.
    fn after_plot_change(&mut self, same_file: bool) {
        self.state.forget_targets(same_file);
        self.refresh_minimap();
    }

    /// Recomputes the minimap columns (whole x domain, one per device pixel).
    fn refresh_minimap(&mut self) {
        self.derived.refresh_minimap(&self.state);
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
        let source = self.loading_source.take();
        let added = self.state.add_loaded(name, snap, plot, source, self.batch_first);
        if let Added::ReadAgain(_) = added {
            // What was derived from or written of the old model goes.
            self.derived = Derived::default();
            self.memo.forget_files(&self.ui.document);
        }
        let show = added != Added::Behind;
        self.release_models();
        self.compare_when_loaded();
        self.state.file_opened();
        if show && self.pair_dropped && shown.is_none() {
            // The first of two files dropped together: shown once the second is open, side by
            // side, its own timeline never drawn meanwhile (a tenth of the pair's time at 1M
            // entries, on the main thread while the second is read).
            self.ui.mark("memviz:ready");
            self.held_for_pair = Some(timings);
            return;
        }
        if self.held_for_pair.take().is_some() {
            // The second of the pair: the first shown now, then the two side by side (its first
            // frame marks this load ready).
            self.show_loaded(timings, shown);
            return;
        }
        if !show {
            // Opened behind the first file of its batch: the file menu gets it, the view stays.
            self.ui.mark("memviz:ready");
            self.restore_compare();
            self.settle();
            return;
        }
        self.show_loaded(timings, shown);
    }

    /// Shows the file just made current, and a pair waiting to be compared once open.
    pub(crate) fn show_loaded(&mut self, timings: Timings, shown: Option<js_sys::Function>) {
        // The minimap and stack panel appear with the first file, the fragment may choose the
        // time axis, and what is derived for the file (its notes and panels) can change the
        // layout too: all of it is written before the canvases are measured, so the page is
        // laid out once (each forced layout of the loaded page took 1-4 ms).
        let _ = self.ui.main.class_list().add_1("has-file");
        self.state.forget_targets(false);
        let detail = crate::url::restore(&mut self.state);
        self.memo.ready_pending = Some(timings);
        self.memo.bands_next_frame = true;
        self.memo.canvases_pending = true;
        self.derived.refresh(&self.state);
        // Writes the page, measures the canvases, fills the minimap's columns; the fragment is
        // written after this task.
        self.settle_layout();
        self.settle_shown();
        if detail.is_some() {
            self.relayout(None, detail);
        }
        self.prepare_shown(detail.is_none(), shown);
        self.restore_compare();
    }

    /// A link's `compare=A,B`, once both files are open: A shown, the two side by side
    /// ([`memviz_view::state::ViewState::restore_compare`]).
    fn restore_compare(&mut self) {
        if self.state.restore_compare() {
            self.carry_out(vec![Effect::FileShown, Effect::LayoutChanged]);
            self.settle();
        }
    }

    /// Has the browser allocate the newly shown file's canvases and computes its bands: at once
    /// where `now_ok` (no relayout is on its way) and the timeline is small or was loaded on the
    /// page; else in tasks of their own. `shown` is the loading worker's: called after the first
    /// complete frame.
    fn prepare_shown(&mut self, now_ok: bool, shown: Option<js_sys::Function>) {
        let weak = self.self_ref.clone();
        let small = self.file().is_some_and(render::is_small);
        // A small timeline, or a large one loaded on the page (no worker is freeing its heap,
        // which would hold up touching the canvases' fresh memory): canvases and bands now, so
        // the next frame is the complete one (a frame of the page without its bands in between
        // took 4-5 ms of a 1M-entry load).
        if now_ok && (small || shown.is_none()) {
            let (fr, memo) = self.frame();
            for step in 0..render::SHOWN_CANVASES {
                render::prepare_canvas(&fr, step);
            }
            render::prepare_plot(&fr, memo);
            memo.canvases_pending = false;
            memo.bands_next_frame = false;
            // Drawn now: the next frame only shows it.
            render::draw(&fr, memo);
            wasm_bindgen_futures::spawn_local(async move {
                next_frame().await;
                if let Some(f) = shown {
                    let _ = f.call0(&JsValue::NULL);
                }
                if small {
                    return;
                }
                // A large timeline's held copies, a canvas a task, then the copy of the frame
                // shown: after the frame that follows the complete one, which they would delay.
                next_frame().await;
                for step in render::SHOWN_CANVASES..render::CANVAS_STEPS {
                    next_tick().await;
                    with_app(&weak, |app| render::prepare_canvas(&app.frame().0, step));
                }
                next_tick().await;
                with_app(&weak, |app| {
                    let (fr, memo) = app.frame();
                    render::hold_prepared(&fr, memo);
                });
            });
            return;
        }
        wasm_bindgen_futures::spawn_local(async move {
            for step in 0..render::CANVAS_STEPS {
                next_tick().await;
                with_app(&weak, |app| render::prepare_canvas(&app.frame().0, step));
            }
            with_app(&weak, |app| {
                app.memo.canvases_pending = false;
                app.request_redraw();
            });
            // After the frame that shows the page without the bands, and after its paint.
            next_frame().await;
            next_tick().await;
            // The bands are computed in a task of their own, then put on the canvas in a frame.
            with_app(&weak, |app| {
                let (fr, memo) = app.frame();
                render::prepare_plot(&fr, memo);
            });
            next_tick().await;
            with_app(&weak, |app| {
                app.memo.bands_next_frame = false;
                app.request_redraw();
            });
            if let Some(f) = shown {
                next_frame().await;
                let _ = f.call0(&JsValue::NULL);
            }
        });
    }
}
