//! The page's place in `location.hash`: file, view, device, zoom window, pinned allocation (by
//! its allocation's key: address and alloc entry), selected event, the cursor's entry and a run's
//! focused rank, e.g. `#file=run.pickle&view=active-memory-timeline&device=0&x=120-4500&pin=b7f0a2c000_e3`.
//! Written with `history.replaceState` whenever it changes (after each input, never from a
//! frame); read once at start and applied when
//! the same file is opened again (a reload keeps the hash).
//!
//! `replaceState` costs several milliseconds, too much for every frame of a wheel zoom or a drag:
//! a change of the zoom window alone is written at most every [`WINDOW_WRITE_INTERVAL_MS`], by a
//! timer outside any frame, so the fragment holds the last window once the input has settled.
//! Every other change (file, view, device, pin, event) is written at once, with the window as it
//! is then, but for a file just shown: its fragment, with any change made before then, is written
//! in the next task, after the load's (its first frame does not wait for it).

use std::cell::{Cell, RefCell};

use memviz_view::fragment::{base_name, format, parse, same_but_window, Fragment};
use memviz_view::state::{Target, ViewState};
use memviz_view::view::View;
use memviz_view::xmap::XAxis;

fn decode(s: &str) -> String {
    js_sys::decode_uri_component(s).ok().and_then(|v| v.as_string()).unwrap_or_else(|| s.to_string())
}

fn encode(s: &str) -> String {
    js_sys::encode_uri_component(s).as_string().unwrap_or_default()
}

thread_local! {
    /// The fragment read at start, until a file with its name opens.
    static PENDING: RefCell<Option<Fragment>> = const { RefCell::new(None) };
    /// The fragment last written.
    static WRITTEN: RefCell<String> = const { RefCell::new(String::new()) };
    /// A fragment that differs from the written one only in its zoom window, waiting for the
    /// timer to write it.
    static DEFERRED: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Whether the timer that writes [`DEFERRED`] is running.
    static TIMER_ARMED: Cell<bool> = const { Cell::new(false) };
    /// Whether a write waits for the task after a file was shown ([`sync_after_task`]).
    static AFTER_TASK: Cell<bool> = const { Cell::new(false) };
}

/// The shortest time between two writes of a changed zoom window, ms.
pub const WINDOW_WRITE_INTERVAL_MS: i32 = 250;

fn location_hash() -> String {
    web_sys::window().and_then(|w| w.location().hash().ok()).unwrap_or_default()
}

/// At start: takes the view and device from the fragment and keeps the rest for the file.
pub fn read_at_start(state: &mut ViewState) {
    let hash = location_hash();
    if hash.len() <= 1 {
        return;
    }
    let f = parse(&hash, decode);
    if let Some(v) = f.view {
        state.view = v;
    }
    if f.device.is_some() {
        state.preferred_device = f.device;
    }
    // What does not depend on the file applies now (the first layout is made with it).
    state.history.hide_freed |= f.hide_freed;
    if !f.search.is_empty() {
        state.search = f.search.query();
        state.search_boxes = f.search.clone();
    }
    if let Some(t) = f.panel {
        state.analysis.open = true;
        state.analysis.tab = t;
    }
    state.flame.mode = f.flame.unwrap_or_default();
    state.flame.focus.clone_from(&f.flame_focus);
    state.restore_file.clone_from(&f.file);
    state.restore_rank = (f.rank.is_some() || f.ranks_overview).then_some((f.rank, f.ranks_overview));
    WRITTEN.with(|w| *w.borrow_mut() = hash.trim_start_matches('#').to_string());
    PENDING.with(|p| *p.borrow_mut() = Some(f));
}

/// The file the fragment read at start names, while it waits for that file.
pub fn pending_file() -> Option<String> {
    PENDING.with(|p| p.borrow().as_ref().and_then(|f| f.file.clone()))
}

/// After a file opened: applies the x axis, zoom window, pin and event of a fragment for that
/// file; the Detail it asks for, when that needs another layout.
pub fn restore(state: &mut ViewState) -> Option<usize> {
    let f = PENDING.with(|p| p.borrow_mut().take())?;
    state.restore_file = None;
    let i = state.current?;
    let file = state.files.get_mut(i)?;
    if f.file.as_deref() != Some(base_name(&file.name)) {
        return None;
    }
    if f.axis == Some(XAxis::Time) && file.has_time() {
        file.plot.build_time_map(&file.snap);
        file.x_axis = XAxis::Time;
        file.viewport = file.full_viewport();
    }
    if let Some((a, b)) = f.x_steps {
        if file.x_axis == XAxis::Steps {
            file.viewport.set_window(a, b);
        }
    }
    let (device_pos, max_entries) = (file.plot.device_pos, file.max_entries);
    // An older link names a drawn allocation by its address label.
    let by_label = f.pin.as_ref().and_then(|pin| {
        file.plot
            .layout
            .elements
            .iter()
            .position(|el| el.band.is_some() && memviz_core::format::addr_label('b', el.addr, el.version) == *pin)
    });
    match f.pin.as_deref().map(memviz_view::state::pin::parse_pin) {
        // The key, pinned again once a layout has it (another Detail may come first).
        Some(Some(k)) => state.repin(k),
        Some(None) => {
            if let Some(e) = by_label {
                state.set_pin(Some(Target::Element(e as u32)));
            }
        }
        None => {}
    }
    if let Some(e) = f.event {
        state.history.selected = Some((i, device_pos, e));
    }
    let detail = f.detail.filter(|&n| n != max_entries);
    if let Some(entry) = f.entry {
        state.cursor_entry = Some(entry);
        state.show_entry(entry);
    }
    detail
}

/// The fragment of the current state.
pub fn of_state(state: &ViewState) -> Option<Fragment> {
    let run = state.run.as_ref();
    let rank = run.and_then(|r| r.ranks.get(r.focused?)).map(|e| e.rank);
    let ranks_overview = state.overview_shown();
    let Some(f) = state.file() else {
        // A run's overview before any rank is opened.
        return run.map(|_| Fragment { rank, ranks_overview, ..Fragment::default() });
    };
    let mut frag = of_file(state, f)?;
    frag.rank = rank;
    frag.ranks_overview = ranks_overview;
    Some(frag)
}

/// The fragment of the file shown.
fn of_file(state: &ViewState, f: &memviz_view::state::OpenFile) -> Option<Fragment> {
    let i = state.current?;
    let pin = state.pin_key().map(memviz_view::state::pin::pin_text);
    let v = &f.viewport;
    let x_steps = (f.x_axis == XAxis::Steps && (v.x0 > 0.0 || v.x1 < v.full_x1)).then_some((v.x0, v.x1));
    let event = match state.history.selected {
        Some((fi, d, r)) if fi == i && d == f.plot.device_pos && state.view == View::AllocatorStateHistory => Some(r),
        _ => None,
    };
    Some(Fragment {
        file: Some(base_name(&f.name).to_string()),
        view: Some(state.view),
        device: f.snap.devices.get(f.plot.device_pos).map(|d| d.index),
        x_steps,
        pin,
        event,
        axis: Some(f.x_axis).filter(|a| *a != XAxis::Steps),
        hide_freed: state.history.hide_freed,
        detail: Some(f.max_entries).filter(|&n| n != memviz_core::timeline::DEFAULT_MAX_ENTRIES),
        search: state.search_boxes.clone(),
        panel: state.analysis.open.then_some(state.analysis.tab),
        entry: state.cursor_entry,
        // The flame view's settings while it is shown.
        flame: Some(state.flame.mode).filter(|_| state.view == View::FlameGraph),
        flame_focus: if state.view == View::FlameGraph { state.flame.focus.clone() } else { Vec::new() },
        ..Fragment::default()
    })
}

/// Writes the current state into the fragment when it changed (nothing while no file is open);
/// a change of the zoom window alone waits for the timer (see the module's notes).
pub fn sync(state: &ViewState) {
    let Some((frag, text)) = changed(state) else { return };
    // A write put after the task that showed a file takes the newer text: the resize observer
    // settles in the first frame, before that task runs (3 ms of a small file's first frame).
    if AFTER_TASK.with(Cell::get) {
        DEFERRED.with(|d| *d.borrow_mut() = Some(text));
        return;
    }
    let window_only = WRITTEN.with(|w| same_but_window(&w.borrow(), &frag, decode));
    if window_only {
        DEFERRED.with(|d| *d.borrow_mut() = Some(text));
        arm_timer();
    } else {
        DEFERRED.with(|d| d.borrow_mut().take());
        write(text);
    }
}

/// As [`sync`], but a change is written in a task of its own, after this one: a newly shown
/// file's first frame does not wait for `replaceState` (2 ms of a small file's load, traced).
pub fn sync_after_task(state: &ViewState) {
    let Some((_, text)) = changed(state) else { return };
    DEFERRED.with(|d| *d.borrow_mut() = Some(text));
    if AFTER_TASK.with(|a| a.replace(true)) {
        return;
    }
    wasm_bindgen_futures::spawn_local(async {
        crate::tasks::sleep_ms(0).await;
        AFTER_TASK.with(|a| a.set(false));
        if let Some(text) = DEFERRED.with(|d| d.borrow_mut().take()) {
            write(text);
        }
    });
}

/// The fragment of `state` and its text, where it should be written (a file is open, none is
/// loading, and it differs from the one written; a write waiting for a timer is then dropped).
fn changed(state: &ViewState) -> Option<(Fragment, String)> {
    let waiting = PENDING.with(|p| p.borrow().is_some()) && state.file().is_none() && state.run.is_none();
    if state.loading.is_some() || waiting {
        return None;
    }
    let frag = of_state(state)?;
    let text = format(&frag, encode);
    if WRITTEN.with(|w| *w.borrow() == text) {
        DEFERRED.with(|d| d.borrow_mut().take());
        return None;
    }
    Some((frag, text))
}

/// Replaces the page's fragment with `text` (without the `#`).
fn write(text: String) {
    let Some(w) = web_sys::window() else { return };
    let Ok(history) = w.history() else { return };
    if history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&format!("#{text}"))).is_ok() {
        WRITTEN.with(|w| *w.borrow_mut() = text);
    }
}

/// Starts the timer that writes the deferred fragment, unless it is running.
fn arm_timer() {
    if TIMER_ARMED.with(Cell::get) {
        return;
    }
    TIMER_ARMED.with(|t| t.set(true));
    wasm_bindgen_futures::spawn_local(async {
        crate::tasks::sleep_ms(WINDOW_WRITE_INTERVAL_MS).await;
        TIMER_ARMED.with(|t| t.set(false));
        if let Some(text) = DEFERRED.with(|d| d.borrow_mut().take()) {
            write(text);
        }
    });
}
