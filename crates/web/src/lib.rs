//! # memviz-web
//!
//! The memviz page: an offline viewer for PyTorch CUDA memory snapshots. Nothing leaves the
//! browser: files are read in slices with `Blob.slice`, decoded by `memviz-core` compiled to
//! WebAssembly, and drawn on a canvas.
//!
//! Built by Trunk from the top-level `index.html`; the page's elements are found by id
//! ([`dom::Ui::find`]).
//!
//! Modules, from the top layer down (no module imports one above it; `scripts/check-cycles.py`
//! checks that there is no import cycle):
//! - [`app`]: the one [`app::App`] behind the one `Rc<RefCell<..>>`: it installs every part's
//!   [`input::Binding`]s through one listener helper, applies each [`input::Input`] (to
//!   `memviz_view`'s state, whose actions return effects), carries out the effects, brings
//!   `memviz_view::derived` up to date, writes the URL fragment and asks for frames; the loader task;
//! - [`render`]: a frame, `draw(&Frame, &mut PaintMemo)`: the timeline, the minimap, the
//!   controls, and each part's painting; it reads the state and changes none of it;
//! - the parts of the page, each with its events ([`input::Binding`]s), its painting and its
//!   memo of what it wrote: [`panels`] (the analysis panel), [`views`] (Allocator State
//!   History and Settings), [`ranks`] (a training run's overview), [`compare_view`] (two files
//!   side by side; its charts are painted by `render`), [`search`], [`pools`],
//!   [`stack`] (the stack panel and the tooltip), [`chrome`] (the theme control, the details
//!   panel's fold, the coverage banner);
//!   [`url`] (the fragment, written after inputs);
//! - [`paint`] (what painting reads: [`paint::Frame`], the theme's colours, band edges), [`dom`] (the page's
//!   elements), [`canvas`] (canvases kept between frames), [`input`] (what the user did, as plain
//!   values), [`tasks`] (frames, ticks, timeouts);
//! - [`worker`] (runs in the loading Web Worker) and [`worker_client`] (the page's side): files
//!   are read, decoded and laid out off the main thread, then handed over as bytes, in the
//!   messages of [`protocol`] (the same kinds as `www/protocol.js`); [`feed`]: the one loop that
//!   reads a file in slices and decodes it, in the worker and on the page (through
//!   `memviz_view::model`: loading from byte chunks, no DOM, and what a plot needs).
//!
//! The page's state and logic that need no browser (the open files, view, pointer, pins, drag,
//! panels' user state and their actions, window math, x maps, axes, decimation, the raster, key
//! and wheel mapping, the URL fragment and the place it holds, the event list, and what is computed
//! from the state: analyses, matches, pools, `memviz_view::derived`) are [`memviz_view`], tested
//! natively.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod app;
pub mod canvas;
pub mod chrome;
pub mod compare_view;
pub mod dom;
pub mod feed;
pub mod input;
pub mod paint;
pub mod panels;
pub mod pools;
pub mod protocol;
pub mod ranks;
pub mod render;
pub mod search;
pub mod stack;
pub mod tasks;
pub mod url;
pub mod views;
pub mod worker;
pub mod worker_client;

use wasm_bindgen::prelude::*;

#[cfg(test)]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// What the page says when its code fails: calm, and what to do next. The panic's own text
/// goes to the console only (it helps a bug report, not the person looking at the chart).
pub const CRASH_TEXT: &str = "Something went wrong inside memviz and this page has stopped. \
Reload it and open the file again: the view, device, zoom and pin you had are kept in the address.";

/// Turns a panic into a calm message in the page's error box, with a button that reloads the
/// page (keeping the URL fragment, so the same view comes back when the file is opened again).
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&JsValue::from_str(&format!("memviz internal error: {info}")));
        let Some(document) = web_sys::window().and_then(|w| w.document()) else { return };
        let Some(el) = document.get_element_by_id("error") else { return };
        el.set_text_content(None);
        let _ = el.set_attribute("data-crash", "1");
        if let Ok(p) = document.create_element("p") {
            p.set_text_content(Some(CRASH_TEXT));
            let _ = el.append_child(&p);
        }
        if let Ok(button) = document.create_element("button") {
            let _ = button.set_attribute("type", "button");
            let _ = button.set_attribute("id", "crash-reload");
            button.set_text_content(Some("Reload and reopen"));
            // Touches no Rust state: only `location.reload()`, which keeps the fragment. The page
            // is going away, so the closure is handed to the browser rather than kept.
            let reload = wasm_bindgen::closure::Closure::once_into_js(|| {
                if let Some(w) = web_sys::window() {
                    let _ = w.location().reload();
                }
            });
            let _ = button.add_event_listener_with_callback("click", reload.unchecked_ref());
            let _ = el.append_child(&button);
        }
        let _ = el.remove_attribute("hidden");
    }));
}

/// Opens a training run: `www/boot.js` calls this with the snapshot files of a folder dropped on
/// the page or picked, and their paths inside it.
#[wasm_bindgen]
pub fn open_run(files: js_sys::Array, paths: js_sys::Array) {
    app::open_run_from_script(&files, &paths);
}

/// Entry point, called once by the page's loader script.
#[wasm_bindgen]
pub fn start() -> Result<(), JsValue> {
    install_panic_hook();
    app::install()
}
