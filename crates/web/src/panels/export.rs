//! Downloads made in the page: the live set as CSV, JSON or speedscope JSON, the timeline as PNG.
//! Each is a Blob handed to an `<a download>` through an object URL; nothing leaves the machine.

use memviz_core::analysis::export as core_export;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, BlobPropertyBag, Document, HtmlAnchorElement, HtmlCanvasElement, Url};

use crate::dom::Ui;
use memviz_view::derived::Derived;
use memviz_view::state::panels::ExportKind as Kind;
use memviz_view::state::ViewState;

/// File name without its extension, for download names.
fn stem(name: &str) -> String {
    let base = name.split(" (").next().unwrap_or(name);
    let base = base.strip_suffix(".pickle").or_else(|| base.strip_suffix(".json")).unwrap_or(base);
    base.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
}

/// Runs an export; a failure comes back as the text for the error box. A PNG is drawn by the
/// page's renderer (`render::export_png`) and handed to [`download_png`].
pub fn run(ui: &Ui, state: &ViewState, derived: &Derived, kind: Kind) -> Option<String> {
    let result = match kind {
        Kind::Png => Ok(()),
        _ => text_export(ui, state, derived, kind),
    };
    result.err().map(|e| format!("Could not export: {}", e.as_string().unwrap_or_default()))
}

/// Downloads a drawn timeline as `<file>.timeline.png`.
pub fn download_png(ui: &Ui, state: &ViewState, image: &HtmlCanvasElement) {
    let name = state.file().map_or_else(|| "memviz".to_string(), |f| stem(&f.name));
    download_canvas(&ui.document, image, format!("{name}.timeline.png"));
}

/// Downloads the Compare view's image as `A_vs_B.compare.png`.
pub fn download_compare_png(ui: &Ui, state: &ViewState, image: &HtmlCanvasElement) {
    let name = |i: usize| state.files().get(i).map_or_else(|| "memviz".to_string(), |f| stem(&f.name));
    let file =
        state.compare_pair().map_or_else(|| "memviz".to_string(), |(a, b)| format!("{}_vs_{}", name(a), name(b)));
    download_canvas(&ui.document, image, format!("{file}.compare.png"));
}

fn text_export(ui: &Ui, state: &ViewState, derived: &Derived, kind: Kind) -> Result<(), JsValue> {
    let (name, text, mime) = {
        let Some(a) = derived.analysis_of(state) else {
            return Ok(());
        };
        let Some(f) = state.file() else { return Ok(()) };
        let Some(live) = a.live.as_ref() else {
            return Ok(());
        };
        let when = live.row.map_or_else(|| "start".to_string(), |r| format!("entry{r}"));
        let stem = format!("{}.live.{when}", stem(&f.name));
        match kind {
            Kind::Csv => (format!("{stem}.csv"), core_export::live_set_csv(&f.snap, &a.replay, live), "text/csv"),
            Kind::Json => (
                format!("{stem}.json"),
                core_export::live_set_json(&f.snap, &a.replay, live).to_string(),
                "application/json",
            ),
            Kind::Speedscope | Kind::Png => (
                format!("{stem}.speedscope.json"),
                core_export::speedscope(&f.snap, live, &f.name).to_string(),
                "application/json",
            ),
        }
    };
    let parts = js_sys::Array::of1(&JsValue::from_str(&text));
    let bag = BlobPropertyBag::new();
    bag.set_type(mime);
    let blob = Blob::new_with_str_sequence_and_options(&parts, &bag)?;
    download_blob(&ui.document, &blob, &name)
}

/// Hands a Blob to the browser as a download named `name`.
pub fn download_blob(document: &Document, blob: &Blob, name: &str) -> Result<(), JsValue> {
    let url = Url::create_object_url_with_blob(blob)?;
    let a: HtmlAnchorElement =
        document.create_element("a")?.dyn_into().map_err(|_| JsValue::from_str("no anchor element"))?;
    a.set_href(&url);
    a.set_download(name);
    a.click();
    // Let the download start before the URL goes.
    wasm_bindgen_futures::spawn_local(async move {
        crate::tasks::next_frame().await;
        let _ = Url::revoke_object_url(&url);
    });
    Ok(())
}

/// Downloads a canvas as PNG (`canvas.toBlob`).
fn download_canvas(document: &Document, canvas: &HtmlCanvasElement, name: String) {
    let canvas = canvas.clone();
    let document = document.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let p = js_sys::Promise::new(&mut |resolve, _reject| {
            let _ = canvas.to_blob(&resolve);
        });
        let Ok(v) = wasm_bindgen_futures::JsFuture::from(p).await else {
            return;
        };
        if let Ok(blob) = v.dyn_into::<Blob>() {
            let _ = download_blob(&document, &blob, &name);
        }
    });
}
