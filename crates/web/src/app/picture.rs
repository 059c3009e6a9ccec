//! The picture the profiler's `export_memory_timeline("x.html")` writes (a PNG in a page),
//! shown under the message that says what it is and which export memviz reads instead. The
//! PNG is drawn on a canvas from an `ImageBitmap`: the page's Content-Security-Policy lets no
//! image come from a `data:` or `blob:` address.

use std::cell::RefCell;
use std::rc::Weak;

use wasm_bindgen::JsCast;

use super::tasks::with_app;
use super::App;

/// Largest page read for its picture (the profiler's are a few hundred KB).
const MAX_PAGE_BYTES: f64 = 64.0 * 1024.0 * 1024.0;

/// Reads the page `file`, and draws its picture under `message` while that is the error shown.
pub(crate) async fn show(weak: Weak<RefCell<App>>, file: web_sys::File, message: String) {
    if file.size() > MAX_PAGE_BYTES {
        return;
    }
    let blob = gloo_file::Blob::from(web_sys::Blob::from(file));
    let Ok(bytes) = gloo_file::futures::read_as_bytes(&blob).await else { return };
    let Some(png) = memviz_view::model::picture_of_page(&bytes) else { return };
    let Some(bitmap) = decode(&png).await else { return };
    with_app(&weak, |app| {
        if app.state.error() != Some(message.as_str()) {
            return;
        }
        let doc = &app.ui.document;
        crate::render::remove_error_picture(doc);
        let canvas = doc.create_element("canvas").ok().and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok());
        let Some(canvas) = canvas else { return };
        canvas.set_id(crate::render::ERROR_PICTURE_ID);
        canvas.set_width(bitmap.width());
        canvas.set_height(bitmap.height());
        let _ = canvas.set_attribute("role", "img");
        let _ = canvas.set_attribute("aria-label", "The memory timeline as the profiler drew it");
        let _ = canvas.set_attribute("data-for", &message);
        let ctx = canvas
            .get_context("2d")
            .ok()
            .flatten()
            .and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok());
        if let Some(ctx) = ctx {
            let _ = ctx.draw_image_with_image_bitmap(&bitmap, 0.0, 0.0);
        }
        let _ = app.ui.error.append_child(&canvas);
    });
}

/// The PNG's pixels, decoded by the browser.
async fn decode(png: &[u8]) -> Option<web_sys::ImageBitmap> {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(png));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("image/png");
    let blob = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options).ok()?;
    let promise = web_sys::window()?.create_image_bitmap_with_blob(&blob).ok()?;
    wasm_bindgen_futures::JsFuture::from(promise).await.ok()?.dyn_into().ok()
}
