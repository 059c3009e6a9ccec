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
//!
//! What the place is, and what a fragment restores, is `memviz_view::state::place` (tested
//! natively); here are `location.hash`, `replaceState` and the timers. The place is compared as a
//! value before it is written out as text, so an input that moves nothing of it (a pointer move)
//! costs no formatting.

use std::cell::{Cell, RefCell};

use memviz_view::fragment::{format, parse, same_but_window, Fragment};
use memviz_view::state::ViewState;

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
    /// The place last looked at ([`changed`]), as a value.
    static LAST: RefCell<Option<Fragment>> = const { RefCell::new(None) };
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
    memviz_view::state::place::apply_at_start(state, &f);
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
    memviz_view::state::place::restore(state, &f)
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
    let waiting = PENDING.with(|p| p.borrow().is_some()) && state.file().is_none() && state.run().is_none();
    if state.loading().is_some() || waiting {
        return None;
    }
    let frag = memviz_view::state::place::fragment_of(state)?;
    // The place as a value first: formatting and comparing the text only when it moved.
    if LAST.with(|l| l.borrow().as_ref() == Some(&frag)) {
        return None;
    }
    LAST.with(|l| *l.borrow_mut() = Some(frag.clone()));
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
