//! # memviz-web
//!
//! The memviz page: an offline viewer for PyTorch CUDA memory snapshots. Nothing leaves the
//! browser: files are read in slices with `Blob.slice`, decoded by `memviz-core` compiled to
//! WebAssembly, and drawn on a canvas.
//!
//! Built by Trunk from the top-level `index.html`; the page's elements are found by id
//! ([`app::Ui::find`]).
//!
//! Modules, from the DOM inwards:
//! - [`app`]: the one [`app::App`] state, the event listeners (DOM events become
//!   [`input::Input`]s), the handlers, the loader task and the animation-frame guard;
//! - [`render`]: drawing the timeline, the minimap and the controls from the state; [`raster`]:
//!   the timeline's filled areas as pixels;
//! - [`model`]: loading from byte chunks (no DOM) and what a plot needs;
//! - [`worker`] (runs in the loading Web Worker) and [`worker_client`] (the page's side): files
//!   are read, decoded and laid out off the main thread, then handed over as bytes;
//! - pure logic tested in the browser and natively: [`viewport`] (window math), [`xmap`] (steps
//!   or time on the x axis), [`axis`] (ticks and labels), [`decimate`] (vertices per pixel
//!   column), [`input`] (key and wheel mapping), [`view`] (the views).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod app;
pub mod axis;
pub mod decimate;
pub mod input;
pub mod model;
pub mod panels;
pub mod pools;
pub mod raster;
pub mod render;
pub mod search;
pub mod view;
pub mod url;
pub mod views;
pub mod viewport;
pub mod worker;
pub mod worker_client;
pub mod xmap;

use wasm_bindgen::prelude::*;

#[cfg(test)]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// Shows a panic in the page's error box as well as the console.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = format!("memviz hit an internal error and must be reloaded: {info}");
        web_sys::console::error_1(&JsValue::from_str(&msg));
        if let Some(el) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id("error"))
        {
            el.set_text_content(Some(&msg));
            let _ = el.remove_attribute("hidden");
        }
    }));
}

/// Entry point, called once by the page's loader script.
#[wasm_bindgen]
pub fn start() -> Result<(), JsValue> {
    install_panic_hook();
    app::install()
}
