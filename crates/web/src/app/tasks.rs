//! Waiting for the browser (a frame, a tick, a timeout) and running work on the state later:
//! the exact frame after a zoom, a redraw after a delay, a borrow of the state from a task.

#[allow(clippy::wildcard_imports)]
use super::*;

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
pub(crate) fn exact_after(delay_ms: i32) {
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
