//! Loading files one after another: large ones in a loading Web Worker where one starts, small
//! ones (and all where no worker starts) on the page in slices, with progress, cancel and the
//! timings of each phase.

use super::tasks::with_app;
use super::{App, LATER_PHASES_SHARE, ON_PAGE_MAX_BYTES, READ_ON_PAGE_MAX_BYTES, SHOW_PHASES_AFTER_MS, YIELD_EVERY_MS};
use crate::feed::{open_error, BlobSlices, Fed, Feed, FeedTimings, Host, MemorySlices, OnProfile};
use crate::input::Source;
use crate::protocol::Phase;
use crate::tasks::next_tick;
use crate::tasks::{sleep_ms, yield_to_events};
use crate::worker::LoadRequest;
use crate::worker_client::Outcome;
use crate::{input, worker_client};
use memviz_core::timeline::LayoutBuilder;
use memviz_core::timeline::{Options, DEFAULT_MAX_ENTRIES};
use memviz_view::model::{choose_device, PlotData, Timings, DEMO_NAME, DEMO_SNAPSHOT};
use std::cell::RefCell;
use std::rc::Weak;
use wasm_bindgen::prelude::*;

/// Loads queued sources one after the other.
pub(crate) async fn run_queue(weak: Weak<RefCell<App>>) {
    loop {
        let Some(Some(source)) = with_app(&weak, |app| {
            let source = app.queue.pop_front()?;
            app.loading_source = input::source_key(&source);
            app.keep_handle(&source);
            Some(source)
        }) else {
            break;
        };
        load_one(&weak, source).await;
    }
    with_app(&weak, |app| {
        if std::mem::take(&mut app.pair_dropped) {
            // One of the two did not open as a snapshot: no comparison waits for it.
            app.state.forget_compare_when_open();
        }
        if let Some(timings) = app.held_for_pair.take() {
            // The second was not opened (not a snapshot, or stopped): the first alone.
            app.show_loaded(timings, None);
        }
        app.loader_running = false;
        app.batch_first = None;
        app.state.load_ended();
        app.request_redraw();
    });
}

#[allow(clippy::too_many_lines)] // one load from the first slice to the first frame
pub(crate) async fn load_one(weak: &Weak<RefCell<App>>, source: Source) {
    let Some(started_ms) = with_app(weak, |app| app.ui.now_ms()) else {
        return;
    };
    let now = || with_app(weak, |app| app.ui.now_ms()).unwrap_or(0.0);
    let (name, total_bytes) = match &source {
        Source::File(f) => (f.name(), f.size() as u64),
        Source::Demo => (DEMO_NAME.to_string(), DEMO_SNAPSHOT.len() as u64),
        Source::Bytes { name, bytes } => (name.clone(), bytes.len() as u64),
    };
    let Some(serial) = with_app(weak, |app| {
        app.loads_started += 1;
        app.cancel_requested = false;
        app.state.begin_load(&name, total_bytes);
        app.request_redraw();
        app.loads_started
    }) else {
        return;
    };
    wasm_bindgen_futures::spawn_local(show_loading_later(weak.clone(), serial));
    let mut timings = Timings { started_ms, ..Timings::default() };
    let picked = match &source {
        Source::File(f) => Some(f.clone()),
        _ => None,
    };
    let fail = |msg: String| {
        // The profiler's picture of its memory timeline is shown as the picture it is.
        if let Some(file) = picked.clone().filter(|_| msg.contains(memviz_core::input::MEMORY_TIMELINE_PICTURE)) {
            wasm_bindgen_futures::spawn_local(super::picture::show(weak.clone(), file, msg.clone()));
        }
        with_app(weak, |app| {
            app.state.load_failed(msg);
            app.request_redraw();
        });
    };
    if let Source::File(file) = &source {
        if worker_client::available()
            && total_bytes > memviz_view::feed::on_page_max_bytes_for(&name, on_page_max_bytes())
        {
            match load_in_worker(weak, file, &name, total_bytes, &mut timings).await {
                WorkerEnd::Finished => return,
                // Profiler timelines and pages without workers load below.
                WorkerEnd::LoadHere => {}
            }
        }
    }
    // The reading is asked for first: the memory is made while the first bytes come.
    let read_for_page = match &source {
        Source::File(f) if total_bytes > READ_ON_PAGE_MAX_BYTES => worker_client::read_for_page(f),
        _ => None,
    };
    if total_bytes >= RESERVE_FROM_BYTES {
        reserve_memory(total_bytes, total_bytes / 2);
    }
    let feed = Feed::new(&name, total_bytes, YIELD_EVERY_MS, OnProfile::Keep);
    let mut host = PageHost { weak, started_ms, total_bytes, drawn_ms: started_ms, later: false };
    let fed = match &source {
        Source::File(f) => {
            match read_for_page {
                Some((mut slices, stop)) => {
                    // Cancel stops the reading at once, also while a slice is awaited.
                    with_app(weak, |app| app.cancel_load = stop);
                    let fed = feed.run(&mut slices, &mut host).await;
                    with_app(weak, |app| app.cancel_load = None);
                    fed
                }
                None => {
                    let early = worker_client::take_early_read(f);
                    feed.run(&mut BlobSlices::new(f, &feed, early), &mut host).await
                }
            }
        }
        Source::Demo => feed.run(&mut MemorySlices(DEMO_SNAPSHOT), &mut host).await,
        Source::Bytes { bytes, .. } => feed.run(&mut MemorySlices(bytes), &mut host).await,
    };
    let cancelled = || with_app(weak, |app| app.cancel_requested).unwrap_or(false);
    let (fed, fed_timings) = match fed {
        Ok(f) => f,
        // A read stopped by Cancel.
        Err(_) if cancelled() => (Fed::Stopped, FeedTimings::default()),
        Err(msg) => return fail(msg),
    };
    timings.read_ms += fed_timings.read_ms;
    timings.parse_ms += fed_timings.parse_ms;
    timings.wait_ms += fed_timings.wait_ms;
    // Why a JSON list read as a snapshot is no memory timeline either, for the message if it fails.
    let mut not_a_timeline = None;
    let loader = match fed {
        Fed::Decoded(loader) => loader,
        Fed::Stopped => {
            with_app(weak, |app| show_stopped(app, &name));
            return;
        }
        // A profiler memory timeline (JSON list, maybe gzipped) is kept whole and read at the end.
        Fed::Profile { bytes, mut loader } => match memviz_core::analysis::categories::read_profiler_timeline(&bytes) {
            Ok(tl) => {
                with_app(weak, |app| {
                    app.state.set_profile(name.clone(), tl);
                    app.state.load_ended();
                    // What is derived (the categories joined with a snapshot shown) follows.
                    app.settle();
                });
                return;
            }
            Err(timeline) => {
                // A JSON list may still be a snapshot (PyTorch 1.13's bare list of segments).
                if let Err(e) = loader.feed(&bytes) {
                    return fail(memviz_view::feed::profile_error(&name, &timeline, &e));
                }
                not_a_timeline = Some(timeline);
                loader
            }
        },
    };
    // A phase is named only when the load has run a while and no progress was drawn lately.
    let mut drawn_ms = host.drawn_ms;
    let mut phase_due = |t: f64| {
        let due = t - started_ms > SHOW_PHASES_AFTER_MS && t - drawn_ms >= PROGRESS_EVERY_MS;
        if due {
            drawn_ms = t;
        }
        due
    };
    if phase_due(now()) {
        show_phase(weak, Phase::BuildingModel, &mut timings.wait_ms).await;
    }
    // From here on the load takes events once it has run YIELD_EVERY_MS since it last did: a
    // large model and layout in tasks of their own, a small file in one task to its first frame.
    let mut last_yield_ms = now();
    let t0 = now();
    let wait_before_model = timings.wait_ms;
    let unchecked = match loader.finish_unchecked() {
        Ok(s) => s,
        Err(e) => {
            return fail(match &not_a_timeline {
                Some(timeline) => memviz_view::feed::profile_error(&name, timeline, &e),
                None => open_error(&name, &e),
            })
        }
    };
    // The page shows none of the traces' warnings (its banner reads frees without allocs off
    // the layout): their checks are skipped.
    pace(weak, &mut last_yield_ms, &mut timings.wait_ms).await;
    let snap = unchecked.skip_trace_checks();
    timings.model_ms = now() - t0 - (timings.wait_ms - wait_before_model);
    if phase_due(now()) {
        show_phase(weak, Phase::LayingOut, &mut timings.wait_ms).await;
        last_yield_ms = now();
    }
    let t0 = now();
    let wait_before_layout = timings.wait_ms;
    let Some(view) = with_app(weak, |app| app.state.view()) else {
        return;
    };
    let preferred = with_app(weak, |app| app.state.preferred_device()).flatten();
    let device_pos = choose_device(&snap, preferred);
    let options = Options {
        max_entries: DEFAULT_MAX_ENTRIES,
        mode: view.mode(),
        hide_freed: with_app(weak, |app| app.state.history().hide_freed).unwrap_or(false),
        focus_rows: None,
    };
    // Laid out in steps, taking events between them, so a large layout makes no long task.
    let mut builder = LayoutBuilder::new(&snap, device_pos, options);
    while !builder.step(LAYOUT_STEP) {
        if pace(weak, &mut last_yield_ms, &mut timings.wait_ms).await && cancelled() {
            with_app(weak, |app| show_stopped(app, &name));
            return;
        }
    }
    let layout = builder.finish();
    // Then the time map and marks, and then showing the file.
    pace(weak, &mut last_yield_ms, &mut timings.wait_ms).await;
    let plot = PlotData::from_layout(&snap, device_pos, layout);
    pace(weak, &mut last_yield_ms, &mut timings.wait_ms).await;
    timings.layout_ms = now() - t0 - (timings.wait_ms - wait_before_layout);
    timings.laid_out_ms = now();
    with_app(weak, |app| {
        app.finish_load(name, snap, plot, timings, None);
        app.request_redraw();
    });
}

/// Shows load number `serial` if it still runs after [`SHOW_LOADING_AFTER_MS`].
async fn show_loading_later(weak: Weak<RefCell<App>>, serial: u64) {
    sleep_ms(SHOW_LOADING_AFTER_MS).await;
    with_app(&weak, |app| {
        if app.loads_started != serial {
            return;
        }
        if app.state.show_loading() {
            app.request_redraw();
        }
    });
}

/// Names the load's phase and takes a turn of the event loop, in which a frame that is due
/// shows it (waiting for the next frame left the thread idle 10-30 ms); adds the wait to `wait_ms`.
async fn show_phase(weak: &Weak<RefCell<App>>, phase: Phase, wait_ms: &mut f64) {
    let now = || with_app(weak, |app| app.ui.now_ms()).unwrap_or(0.0);
    with_app(weak, |app| {
        app.state.load_phase(phase.label());
        app.request_redraw();
    });
    let t = now();
    yield_to_events().await;
    *wait_ms += now() - t;
}

/// Takes events if the load has run [`YIELD_EVERY_MS`] since `last_ms`, adding the wait to
/// `wait_ms`; whether it did.
async fn pace(weak: &Weak<RefCell<App>>, last_ms: &mut f64, wait_ms: &mut f64) -> bool {
    let now = || with_app(weak, |app| app.ui.now_ms()).unwrap_or(0.0);
    let t = now();
    if t - *last_ms <= YIELD_EVERY_MS {
        return false;
    }
    yield_to_events().await;
    *last_ms = now();
    *wait_ms += *last_ms - t;
    true
}

/// A load shows its card and progress after this long (ms): under a tenth of a second a
/// change feels immediate, and the card's own frame cost a small file a sixth of its load.
const SHOW_LOADING_AFTER_MS: i32 = 120;

/// Files from this size on have their memory made in one step ([`reserve_memory`]).
const RESERVE_FROM_BYTES: u64 = 16 << 20;

/// The WebAssembly memory that loading a file of `total_bytes` on the page uses (the decoded
/// document, then the model and layout: 1.5 times the file at 1M entries), made in one step,
/// with a byte written to every 4 KiB page of its first `written_bytes`.
///
/// Every growth of a module's memory counts as new external memory for the JavaScript heap,
/// which then runs its full collections (5-17 ms each) in the middle of decoding; one growth
/// up front leaves one. The room is handed back to the allocator at once and taken again as
/// the load fills it; pages never written take no memory of the machine.
///
/// A file's first pages written in one sweep, while its first slices are read, cost less than
/// the same pages met one by one in the middle of decoding (at 1M entries, half the file's size
/// made decoding 118-119 -> 99-100 ms and the load 290 -> 281-284 ms; the whole of it no
/// faster). Half a file's size is less than a file loaded on the page goes on to use (at 1M
/// entries about 1.1 times its size), so the tab's peak is unchanged.
pub(crate) fn reserve_memory(total_bytes: u64, written_bytes: u64) {
    let Ok(bytes) = usize::try_from(total_bytes.saturating_mul(3) / 2) else { return };
    let mut room: Vec<u8> = Vec::new();
    if room.try_reserve_exact(bytes).is_err() {
        return;
    }
    let written = usize::try_from(written_bytes).map_or(bytes, |w| w.min(bytes));
    for page in room.spare_capacity_mut().iter_mut().take(written).step_by(4096) {
        page.write(0);
    }
    // Kept until here, so the writes are not dropped as dead before the memory is given back.
    drop(std::hint::black_box(room));
}

/// Trace rows or events laid out between chances to take events (a few ms in the page).
const LAYOUT_STEP: usize = 1 << 16;

/// Files above this size load in a worker ([`ON_PAGE_MAX_BYTES`], or the page's
/// `memvizOnPageMaxBytes`).
pub(crate) fn on_page_max_bytes() -> u64 {
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("memvizOnPageMaxBytes"))
        .ok()
        .and_then(|v| v.as_f64())
        .filter(|v| *v >= 0.0)
        .map_or(ON_PAGE_MAX_BYTES, |v| v as u64)
}

/// How [`load_in_worker`] ended.
pub(crate) enum WorkerEnd {
    /// Loaded, failed or cancelled: nothing more to do.
    Finished,
    /// Load on the main thread instead.
    LoadHere,
}

/// The page's thread, for the feed loop: progress and cancel go through the state, and taking
/// events lets the page repaint.
struct PageHost<'a> {
    weak: &'a Weak<RefCell<App>>,
    started_ms: f64,
    total_bytes: u64,
    /// When progress was last drawn.
    drawn_ms: f64,
    /// A frame is asked for later, to draw progress not drawn then.
    later: bool,
}

/// Least time between two frames that show a page load's progress or phase (ms). Each such frame
/// costs the load 5-10 ms of the page's thread (the card's style, layout, paint and commit); at
/// 100 ms, 6 of them took 33 ms of a 1M-entry load.
const PROGRESS_EVERY_MS: f64 = 250.0;

impl Host for PageHost<'_> {
    fn now_ms(&self) -> f64 {
        with_app(self.weak, |app| app.ui.now_ms()).unwrap_or(0.0)
    }

    async fn take_events(&mut self) {
        yield_to_events().await;
    }

    fn progress(&mut self, read_bytes: u64) -> bool {
        let (started_ms, total_bytes) = (self.started_ms, self.total_bytes);
        let now_ms = self.now_ms();
        // A frame drawn while decoding costs the decoding its time (style, layout and paint of
        // the status line): progress is drawn at most every PROGRESS_EVERY_MS.
        let redraw = now_ms - self.drawn_ms >= PROGRESS_EVERY_MS;
        if redraw {
            self.drawn_ms = now_ms;
            self.later = false;
        } else if !self.later {
            // The progress not drawn now is drawn later, also if the next slice is slow to come.
            self.later = true;
            crate::tasks::redraw_after(PROGRESS_EVERY_MS as i32);
        }
        let cancelled = with_app(self.weak, |app| {
            show_progress(app, started_ms, total_bytes, read_bytes, Phase::Reading, redraw);
            app.cancel_requested
        });
        !cancelled.unwrap_or(true)
    }
}

/// Says that the load of `name` was stopped by the user.
fn show_stopped(app: &mut App, name: &str) {
    app.cancel_requested = false;
    app.state.load_stopped(name);
    app.request_redraw();
}

/// Shows how far a load that started at `started_ms` is, with an estimate of the time left
/// while it reads.
fn show_progress(app: &mut App, started_ms: f64, total_bytes: u64, read_bytes: u64, phase: Phase, redraw: bool) {
    let fraction = if total_bytes == 0 { 1.0 } else { (read_bytes as f64 / total_bytes as f64).min(1.0) };
    let elapsed_ms = app.ui.now_ms() - started_ms;
    // Reading is most of the time; the rest (model, layout) takes about a third as long.
    let left_ms = (phase == Phase::Reading && fraction > 0.02 && elapsed_ms > 250.0)
        .then(|| elapsed_ms * ((1.0 - fraction) / fraction + LATER_PHASES_SHARE));
    app.state.load_progress(fraction, read_bytes, left_ms, phase.label());
    if redraw {
        app.request_redraw();
    }
}

/// Loads a file in a Web Worker: the page's main thread only shows progress and, at the end,
/// copies the model and plot into place.
pub(crate) async fn load_in_worker(
    weak: &Weak<RefCell<App>>,
    file: &web_sys::File,
    name: &str,
    total_bytes: u64,
    timings: &mut Timings,
) -> WorkerEnd {
    let Some((view, hide_freed, preferred_device)) =
        with_app(weak, |app| (app.state.view(), app.state.history().hide_freed, app.state.preferred_device()))
    else {
        return WorkerEnd::Finished;
    };
    let request = LoadRequest {
        name: name.to_string(),
        preferred_device,
        options: Options { max_entries: DEFAULT_MAX_ENTRIES, mode: view.mode(), hide_freed, focus_rows: None },
        summary_only: false,
    };
    let started_ms = timings.started_ms;
    let progress_weak = weak.clone();
    let on_progress = move |read_bytes: u64, phase: Phase| {
        with_app(&progress_weak, |app| show_progress(app, started_ms, total_bytes, read_bytes, phase, true));
    };
    let set_cancel = |cancel| {
        with_app(weak, |app| app.cancel_load = cancel);
    };
    match worker_client::load(file, &request, on_progress, set_cancel).await {
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
                app.state.load_failed(msg);
                app.request_redraw();
            });
            WorkerEnd::Finished
        }
        Outcome::Cancelled => {
            with_app(weak, |app| show_stopped(app, name));
            WorkerEnd::Finished
        }
        Outcome::Profile | Outcome::Unavailable => WorkerEnd::LoadHere,
    }
}
