//! What the end-to-end tests and benchmarks read: the `data-*` attributes of the plot and the
//! `memviz:ready` mark with the load's timings, written after a frame.

use super::{plot_kind, Frame, FrameInfo};
use wasm_bindgen::JsValue;
use web_sys::HtmlCanvasElement;

/// The first complete timeline of a load: nothing loading, a file shown, and the canvases
/// drawn at the size the page gives them.
pub(crate) fn is_first_complete_frame(fr: &Frame<'_>) -> bool {
    let ui = &fr.ui;
    let size_of = |c: &HtmlCanvasElement| (f64::from(c.client_width()), f64::from(c.client_height()));
    fr.state.loading().is_none()
        && fr.file().is_some()
        && size_of(&ui.plot) == fr.state.plot_css()
        && size_of(&ui.minimap) == fr.state.minimap_css()
}

/// Marks `memviz:ready` and writes the load's timings (`t`) into `#plot[data-timings]`.
pub(crate) fn report_ready(
    fr: &Frame<'_>,
    t: &memviz_view::model::Timings,
    info: &FrameInfo,
    frame_start_ms: f64,
    frame_ms: f64,
) {
    fr.ui.mark("memviz:ready");
    let total = fr.ui.now_ms() - t.started_ms;
    let json = format!(
        "{{\"read_ms\":{:.1},\"parse_ms\":{:.1},\"model_ms\":{:.1},\"layout_ms\":{:.1},\"wait_ms\":{:.1},\"transfer_ms\":{:.1},\"decode_ms\":{:.1},\"to_frame_ms\":{:.1},\"first_draw_ms\":{:.1},\"total_ms\":{:.1},\"bands_drawn\":{},\"vertices_drawn\":{}}}",
        t.read_ms,
        t.parse_ms,
        t.model_ms,
        t.layout_ms,
        t.wait_ms,
        t.transfer_ms,
        t.decode_ms,
        frame_start_ms - t.laid_out_ms,
        frame_ms,
        total,
        info.bands_drawn,
        info.vertices_drawn
    );
    let _ = fr.ui.plot.set_attribute("data-timings", &json);
    // Logged after the frame's task (a console line costs it 0.4 ms where a debugger listens).
    let line = format!("memviz: {} ready: {json}", fr.file().map_or("", |f| f.name.as_str()));
    wasm_bindgen_futures::spawn_local(async move {
        crate::tasks::sleep_ms(0).await;
        web_sys::console::log_1(&JsValue::from_str(&line));
    });
}

pub(crate) fn write_test_hooks(fr: &Frame<'_>, info: &FrameInfo, frame_ms: f64) {
    let c = &fr.ui.plot;
    let set = |k: &str, v: &str| {
        if c.get_attribute(k).as_deref() != Some(v) {
            let _ = c.set_attribute(k, v);
        }
    };
    match fr.file() {
        Some(f) => {
            let v = &f.viewport;
            set("data-view", &format!("{:.3},{:.3}", v.x0, v.x1));
            set("data-y-max", &format!("{:.0}", v.y_max_bytes));
            set("data-x-axis", f.x_axis.value());
            set("data-steps", &f.plot.layout.steps.to_string());
            set("data-kind", plot_kind(f).name());
            set("data-annotation-rows", &f.plot.annotation_row_count.to_string());
            set("data-ooms", &f.plot.ooms.len().to_string());
        }
        None => set("data-view", ""),
    }
    set("data-x-ticks", &info.x_labels.join("|"));
    set("data-oom-x", &info.oom_x_px.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>().join(","));
    set("data-bands", &info.bands_drawn.to_string());
    set("data-vertices", &info.vertices_drawn.to_string());
    set("data-frame-ms", &format!("{frame_ms:.1}"));
    set("data-theme", fr.state.theme().theme().name());
}

/// The hooks of what the pointer points at, pinned or selected, written by every frame
/// ([`super::draw`]).
pub(crate) fn write_hover_hooks(fr: &Frame<'_>) {
    let c = &fr.ui.plot;
    let set = |k: &str, v: &str| {
        if c.get_attribute(k).as_deref() != Some(v) {
            let _ = c.set_attribute(k, v);
        }
    };
    let hover = fr.state.hover().or(fr.state.pinned()).map_or_else(String::new, memviz_view::markup::target_hook);
    set("data-hover", &hover);
    // The keyboard's selection by its key: address label and allocation entry.
    let selected = fr.state.selected_element().and_then(|e| {
        let f = fr.file()?;
        let el = f.plot.layout.element(e)?;
        let label = memviz_core::format::addr_label('b', el.addr, el.version);
        Some(format!("{label}@{}", el.alloc_row.map_or_else(|| "-".to_string(), |r| r.to_string())))
    });
    set("data-selected", &selected.unwrap_or_default());
    set("data-pinned", &fr.state.pinned().map_or_else(String::new, memviz_view::markup::target_hook));
}
