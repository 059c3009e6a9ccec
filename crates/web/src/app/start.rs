//! Start-up: building the state, installing the listeners, opening the snapshots a page came
//! with, and warming up the WebAssembly on the demo while the page is idle.

use super::listeners::{install_listeners, listen_binding, watch_size};
use super::tasks::{with_app, APP};
use super::{App, READ_ON_PAGE_MAX_BYTES, START_ROOM_FOR_BYTES};
use crate::dom::{context_2d, Ui};
use crate::input::{Input, Source};
use crate::render;
use crate::tasks::{next_frame, next_tick};
use memviz_core::describe;
use memviz_core::timeline::Options;
use memviz_view::model::{PlotData, CHUNK_BYTES, DEMO_NAME, DEMO_SNAPSHOT};
use memviz_view::state::OpenFile;
use memviz_view::view::View;
use std::cell::RefCell;
use std::rc::{Rc, Weak};
use wasm_bindgen::prelude::*;
use web_sys::{Document, HtmlCanvasElement};

/// What a page with snapshots inside it asks for.
pub(crate) struct Embedded {
    files: Vec<Source>,
    view: Option<View>,
    device: Option<i64>,
    /// Show the first two files in the Compare view (`memviz compare A B --html`).
    compare: bool,
}

/// Reads `<script type="application/json" id="memviz-embedded">`, which pages written by the
/// command line carry: `{"files": [{"name", "base64"}], "view", "device", "compare"}`.
pub(crate) fn read_embedded(document: &Document) -> Option<Embedded> {
    let text = document.get_element_by_id("memviz-embedded")?.text_content()?;
    let config = js_sys::JSON::parse(&text).ok()?;
    let get = |v: &JsValue, k: &str| js_sys::Reflect::get(v, &JsValue::from_str(k)).ok();
    let mut files = Vec::new();
    if let Some(list) = get(&config, "files").and_then(|f| f.dyn_into::<js_sys::Array>().ok()) {
        for f in list.iter() {
            let name = get(&f, "name").and_then(|n| n.as_string()).unwrap_or_else(|| "snapshot".into());
            let Some(bytes) =
                get(&f, "base64").and_then(|b| b.as_string()).and_then(|b| memviz_view::model::base64_decode(&b))
            else {
                continue;
            };
            files.push(Source::Bytes { name, bytes: bytes.into() });
        }
    }
    let view = get(&config, "view").and_then(|v| v.as_string()).and_then(|v| View::from_value(&v));
    let device = get(&config, "device").and_then(|d| d.as_f64()).map(|d| d as i64);
    let compare = get(&config, "compare").and_then(|c| c.as_bool()).unwrap_or(false);
    Some(Embedded { files, view, device, compare })
}

/// Builds the state, installs the listeners and keeps the state for the page's lifetime.
pub fn install() -> Result<(), JsValue> {
    let ui = Ui::find()?;
    let rc = Rc::new(RefCell::new(App::new(ui)));
    let weak = Rc::downgrade(&rc);
    {
        let mut app = rc.borrow_mut();
        app.self_ref = weak.clone();
        let w = weak.clone();
        app.raf = Some(Closure::<dyn FnMut(f64)>::new(move |_t: f64| {
            let Some(rc) = w.upgrade() else { return };
            if let Ok(mut app) = rc.try_borrow_mut() {
                app.frame_pending = false;
            }
            let Ok(mut app) = rc.try_borrow_mut() else { return };
            let (fr, memo) = app.frame();
            render::draw(&fr, memo);
        }));
        // Every part of the page says what its events mean; all go through one listener helper.
        let mut bindings = install_listeners(&app.ui);
        bindings.extend(crate::panels::bindings(&app.ui));
        bindings.extend(crate::views::bindings(&app.ui.document));
        bindings.extend(crate::ranks::bindings(&app.ui.document));
        bindings.extend(crate::compare_view::bindings(&app.ui.document));
        let doc = app.ui.document.clone();
        bindings.extend(crate::search::bindings(&doc, &mut app.memo.search));
        let App { ui, memo, .. } = &mut *app;
        bindings.extend(crate::pools::bindings(ui, &mut memo.pools));
        bindings.extend(crate::stack::bindings(ui, &mut memo.stack));
        bindings.extend(crate::chrome::bindings(ui, &mut memo.chrome));
        let (theme, stack_collapsed) = crate::chrome::stored(&app.ui);
        app.state.restore_choices(theme, stack_collapsed);
        app.listeners = bindings.into_iter().map(|b| listen_binding(&weak, b)).collect();
        let w = weak.clone();
        crate::tasks::set_redraw_hook(Box::new(move || {
            with_app(&w, App::request_redraw);
        }));
        app.resize = watch_size(&weak, &app.ui);
        app.ui.demo_button.remove_attribute("disabled").ok();
        app.handle(Input::Resize);
    }
    {
        let app = rc.borrow();
        // The timeline's and the minimap's canvases take the size they have with a file now, and
        // keep it while no file is shown: a first file's task then only checks them (2.2 ms of
        // a 0.5 MB file's first load went to sizing them and making their pixels).
        let (plot, minimap) = lay_out_with_a_file(&app.ui);
        render::size_ahead(&app.ui, plot, minimap, app.state.dpr());
    }
    // The memory a file loaded on the page may take, made now while nothing waits: growing it
    // when a file comes cost that load 2.4 ms and set off a collection (5-6 ms more).
    super::load::reserve_memory(super::load::on_page_max_bytes().min(START_ROOM_FOR_BYTES), 0);
    // Where the worker's path is open, the page's script begins reading a file as it is chosen.
    if crate::worker_client::available() {
        crate::worker_client::set_read_early_limits(READ_ON_PAGE_MAX_BYTES, super::load::on_page_max_bytes());
    }
    // A page written with snapshots inside it opens them right away.
    let embedded = read_embedded(&rc.borrow().ui.document);
    if let Some(embedded) = embedded {
        let mut app = rc.borrow_mut();
        app.state.embedded(embedded.view, embedded.device);
        if let (true, [a, b, ..]) = (embedded.compare, embedded.files.as_slice()) {
            app.state.compare_when_open(crate::input::source_name(a), crate::input::source_name(b));
        }
        if !embedded.files.is_empty() {
            app.handle(Input::Open(embedded.files));
        }
    }
    // Files chosen before the page had started (its listeners did not exist yet) open now.
    let early = {
        let app = rc.borrow();
        crate::app::listeners::files_of(app.ui.file_input.files())
    };
    if !early.is_empty() && rc.borrow().state.files().is_empty() && !rc.borrow().loader_running {
        let mut app = rc.borrow_mut();
        app.ui.file_input.set_value("");
        app.handle(Input::Open(early));
    }
    // A reload keeps the fragment: view and device now, the rest when the same file opens.
    crate::url::read_at_start(&mut rc.borrow_mut().state);
    // A reload of the demo opens the demo again; another file waits to be opened (the page says
    // which, see `restore_file`).
    let demo_again = crate::url::pending_file().is_some_and(|f| f == DEMO_NAME);
    if demo_again && rc.borrow().state.files().is_empty() && !rc.borrow().loader_running {
        rc.borrow_mut().handle(Input::Open(vec![Source::Demo]));
    }
    APP.with(|a| *a.borrow_mut() = Some(rc));
    wasm_bindgen_futures::spawn_local(warm_up(weak));
    Ok(())
}

/// Lays the page out once as it is with a file shown (minimap, stack panel and the file's
/// controls), and back, in one task: nothing is painted in between. The first such layout is
/// the costly one (its fonts and boxes are new: style 11 ms and layout 12 ms in the task that
/// showed the first small file, against 2 and 6 ms once done), and a file opened as soon as the
/// page starts would otherwise wait for it. Returns the plot's and the minimap's sizes then
/// (CSS px).
fn lay_out_with_a_file(ui: &Ui) -> ((f64, f64), (f64, f64)) {
    let body = ui.document.body();
    let shown = |on: bool| {
        let _ = ui.main.class_list().toggle_with_force("has-file", on);
        if let Some(b) = &body {
            let _ = b.class_list().toggle_with_force("has-file", on);
        }
    };
    shown(true);
    // Reading a size lays the page out now.
    let size = |e: &web_sys::HtmlElement| (f64::from(e.client_width()), f64::from(e.client_height()));
    let sizes = (size(&ui.plot), size(&ui.minimap));
    shown(false);
    sizes
}

/// Opens a run from the page's script (`www/boot.js`: a folder dropped or picked): its files
/// and their paths, in the same order.
pub fn open_run_from_script(files: &js_sys::Array, paths: &js_sys::Array) {
    let list: Vec<(String, web_sys::File)> = files
        .iter()
        .zip(paths.iter())
        .filter_map(|(f, p)| Some((p.as_string()?, f.dyn_into::<web_sys::File>().ok()?)))
        .collect();
    let Some(rc) = APP.with(|a| a.borrow().clone()) else { return };
    let Ok(mut app) = rc.try_borrow_mut() else { return };
    app.handle(Input::OpenRun(list));
}

/// Frames the warm-up draws of the demo timeline.
pub(crate) const WARM_DRAWS: u32 = 8;

/// Runs the loading and layout code once on the built-in snapshot while the page is idle.
///
/// Browsers compile WebAssembly lazily and optimize a function only after it has run for a
/// while, so the first file opened would otherwise run in the baseline tier (several times
/// slower). Skipped if a file is already being opened.
pub(crate) async fn warm_up(weak: Weak<RefCell<App>>) {
    next_frame().await;
    next_frame().await;
    let idle = |weak: &Weak<RefCell<App>>| {
        with_app(weak, |app| !app.loader_running && app.state.files().is_empty()).unwrap_or(false)
    };
    if !idle(&weak) {
        return;
    }
    let Ok(snap) = memviz_view::model::load_chunks(DEMO_SNAPSHOT.chunks(CHUNK_BYTES), DEMO_SNAPSHOT.len() as u64)
    else {
        return;
    };
    next_tick().await;
    if !idle(&weak) {
        return;
    }
    let plot = PlotData::build(&snap, snap.default_device().unwrap_or(0), Options::default());
    let mut file = OpenFile::new(String::new(), snap, plot);
    // The drawing code too, on a canvas that is never shown, over several windows: a function
    // is optimized only once it has run enough, and a long first run stays in the baseline tier.
    // A small canvas, let go once a file is chosen: a file chosen meanwhile loads beside the draw
    // in progress (at 1000 x 600, kept to the end, the tab's peak after a small file was 3-4 MB
    // higher).
    let canvas = with_app(&weak, |app| {
        let canvas = app.ui.document.create_element("canvas").ok()?.dyn_into::<HtmlCanvasElement>().ok()?;
        let ctx = context_2d(&canvas).ok()?;
        Some((canvas, ctx))
    })
    .flatten();
    if let Some((canvas, ctx)) = canvas {
        let full = file.viewport;
        for k in 0..WARM_DRAWS {
            if !idle(&weak) {
                break;
            }
            let mut v = full;
            let share = 1.0 / f64::from(1 + k % 4);
            v.set_window(full.x0, full.x0 + (full.x1 - full.x0) * share);
            file.viewport = v;
            drop(render::draw_timeline_base(
                Some(&file),
                &memviz_view::theme::LIGHT,
                (480.0, 300.0),
                1.0,
                (&canvas, &ctx),
                None,
                &mut None,
            ));
            next_tick().await;
        }
        // Its pixels go now rather than whenever the canvas is collected.
        canvas.set_width(0);
        canvas.set_height(0);
        file.viewport = full;
    }
    if !idle(&weak) {
        return;
    }
    let (snap, plot) = (&file.snap, &file.plot);
    let l = &plot.layout;
    let bounds: Vec<f64> = (0..=512).map(|c| f64::from(l.steps) * f64::from(c) / 512.0).collect();
    let _ = memviz_view::model::column_envelopes(l, &bounds);
    for b in (0..l.band_count() as u32).step_by(97) {
        let (s0, s1) = l.band_step_range(b);
        let _ = l.hit_test((f64::from(s0) + f64::from(s1)) / 2.0, 0.0);
        if let Some(e) = l.element_of_band(b) {
            let _ = describe::element_text(snap, plot.device_pos, l, e);
        }
    }
    with_app(&weak, |app| {
        let _ = app.ui.document.body().map(|b| b.set_attribute("data-warm", "1"));
    });
}
