//! Running work on the state later: the exact frame after a zoom, Detail chosen for a window
//! that rested, a borrow of the state from a task.

use super::App;
use crate::render;
use crate::tasks::next_tick;
use crate::tasks::sleep_ms;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

thread_local! {
    /// The page's one state, kept for the page's lifetime (set at start-up).
    pub(crate) static APP: RefCell<Option<Rc<RefCell<App>>>> = const { RefCell::new(None) };
}

/// Draws the timeline exactly again in `delay_ms` unless the input went on meanwhile: the plot
/// area is computed in a task of its own, then put on the canvas in the next frame.
pub(crate) fn exact_after(delay_ms: i32) {
    wasm_bindgen_futures::spawn_local(async move {
        sleep_ms(delay_ms).await;
        let rested = APP.with(|a| {
            let rc = a.borrow().as_ref().map(Rc::clone)?;
            let mut app = rc.try_borrow_mut().ok()?;
            (!app.previewing()).then(|| {
                if app.state.compare_shown() {
                    // The Compare view draws its charts exactly in the next frame.
                    return;
                }
                // Detail follows the window that rested before it is drawn exactly.
                app.refocus_detail();
                let (fr, memo) = app.frame();
                render::prepare_plot(&fr, memo);
            })
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

/// How long a window stays still before Detail is chosen for it (a held key repeats faster).
const REST_MS: i32 = 160;

/// Chooses Detail for `window` (x0, x1) once the input has rested on it: after [`REST_MS`]
/// without another window or a preview held; a later window waits for its own rest.
pub(crate) fn refocus_when_rested(window: Option<(f64, f64)>) {
    each_rest(move |app| {
        if app.state.file().map(|f| (f.viewport.x0, f.viewport.x1)) != window {
            return false;
        }
        if app.previewing() {
            return true;
        }
        if app.refocus_detail() {
            app.settle();
        }
        false
    });
}

/// Chooses Detail for the Compare view's window `window` (shares of its aligned domain) once it
/// has rested ([`REST_MS`] without another), in both timelines.
pub(crate) fn refocus_compare_when_rested(window: (f64, f64)) {
    each_rest(move |app| {
        if !app.state.compare_shown() {
            app.compare_refocus_forget();
            return false;
        }
        if app.state.compare_view().window() == window && app.refocus_compare() {
            app.settle();
        }
        false
    });
}

/// Calls `act` on the state after each [`REST_MS`] for as long as it answers `true` (wait
/// another rest); a state busy at that moment is tried again after the next rest.
fn each_rest(mut act: impl FnMut(&mut App) -> bool + 'static) {
    wasm_bindgen_futures::spawn_local(async move {
        loop {
            sleep_ms(REST_MS).await;
            let again = APP.with(|a| {
                let rc = a.borrow().as_ref().map(Rc::clone)?;
                let Ok(mut app) = rc.try_borrow_mut() else { return Some(true) };
                Some(act(&mut app))
            });
            if again != Some(true) {
                return;
            }
        }
    });
}

/// Borrows the state for a moment; `None` when it is gone or busy.
pub(crate) fn with_app<R>(weak: &Weak<RefCell<App>>, f: impl FnOnce(&mut App) -> R) -> Option<R> {
    let rc = weak.upgrade()?;
    let mut app = rc.try_borrow_mut().ok()?;
    Some(f(&mut app))
}
