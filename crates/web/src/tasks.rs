//! Waiting for the browser: a frame, a turn of the event loop, a timeout; and asking for one
//! more frame later ([`redraw_after`]) through the hook the page's state installs.

use std::cell::RefCell;

thread_local! {
    /// Asks the page for a frame (installed once by the page's state).
    static REDRAW: RefCell<Option<Box<dyn Fn()>>> = const { RefCell::new(None) };
}

/// Installs what [`redraw_after`] calls.
pub fn set_redraw_hook(hook: Box<dyn Fn()>) {
    REDRAW.with(|r| *r.borrow_mut() = Some(hook));
}

/// Asks for one more frame in `delay_ms`, for drawing put off while the input kept changing.
pub fn redraw_after(delay_ms: i32) {
    wasm_bindgen_futures::spawn_local(async move {
        sleep_ms(delay_ms).await;
        REDRAW.with(|r| {
            if let Some(hook) = r.borrow().as_ref() {
                hook();
            }
        });
    });
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

/// Resolves on the next turn of the event loop.
pub async fn next_tick() {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback(&resolve);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}

/// Resolves after the events waiting now (a message to itself, which no timer clamping delays:
/// nested `setTimeout`s wait at least 4 ms). Works on the page and in workers.
pub async fn yield_to_events() {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        if let Ok(ch) = web_sys::MessageChannel::new() {
            ch.port1().set_onmessage(Some(&resolve));
            let _ = ch.port2().post_message(&wasm_bindgen::JsValue::NULL);
        } else {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}
