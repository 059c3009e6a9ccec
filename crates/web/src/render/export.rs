//! The timeline as a PNG: drawn again at twice the page's pixel density, with a title (file,
//! view, device, peak, window) above it and a legend below; what the pointer points at and the
//! panel's dimming are left out, the pinned allocation and the search matches are not shown
//! either (the image is of the memory, not of the page's state). It is in the theme shown.

use super::{draw_timeline_base, fit_text, Frame, FONT};
use memviz_core::format::human_size;
use wasm_bindgen::JsValue;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

/// Pixel density of an exported image.
const EXPORT_DPR: f64 = 2.0;
/// Height of the title and of the legend, CSS px.
const TITLE_PX: f64 = 40.0;
const LEGEND_PX: f64 = 26.0;

fn canvas(
    document: &web_sys::Document,
    w: f64,
    h: f64,
) -> Result<(HtmlCanvasElement, CanvasRenderingContext2d), JsValue> {
    let c: HtmlCanvasElement = wasm_bindgen::JsCast::dyn_into(document.create_element("canvas")?)
        .map_err(|_| JsValue::from_str("no canvas element"))?;
    c.set_width((w * EXPORT_DPR).round() as u32);
    c.set_height((h * EXPORT_DPR).round() as u32);
    let ctx = crate::dom::context_2d(&c)?;
    Ok((c, ctx))
}

/// The image of the shown timeline.
pub fn export_png(fr: &Frame<'_>) -> Result<HtmlCanvasElement, JsValue> {
    let f = fr.file().ok_or_else(|| JsValue::from_str("no file is open"))?;
    let (w, h) = fr.state.plot_css();
    if !(w >= 1.0 && h >= 1.0) {
        return Err(JsValue::from_str("the timeline is not shown"));
    }
    let doc = &fr.ui.document;
    let pal = fr.palette();
    // The base layer, drawn exactly at the export's density.
    let (plot, plot_ctx) = canvas(doc, w, h)?;
    let _ = draw_timeline_base(Some(f), pal, (w, h), EXPORT_DPR, (&plot, &plot_ctx), None, &mut None);
    let (out, ctx) = canvas(doc, w, TITLE_PX + h + LEGEND_PX)?;
    let _ = ctx.set_transform(EXPORT_DPR, 0.0, 0.0, EXPORT_DPR, 0.0, 0.0);
    ctx.set_fill_style_str(pal.background);
    ctx.fill_rect(0.0, 0.0, w, TITLE_PX + h + LEGEND_PX);
    // Title.
    let device = f.snap.devices.get(f.plot.device_pos).map_or_else(String::new, |d| d.name());
    let v = &f.viewport;
    let xm = f.xmap();
    let (s0, s1) = (xm.step(v.x0), xm.step(v.x1));
    let entry = |s: f64| memviz_view::entries::entry_at_step(&f.plot.layout, s).unwrap_or(0);
    let window = if v.is_full() {
        "whole trace".to_string()
    } else if xm.is_time() {
        format!(
            "{} to {}",
            memviz_view::axis::time_label(v.x0, v.width()),
            memviz_view::axis::time_label(v.x1, v.width())
        )
    } else {
        format!("entries {}..{}", entry(s0), entry(s1))
    };
    ctx.set_fill_style_str(pal.text);
    ctx.set_text_baseline("top");
    ctx.set_text_align("left");
    ctx.set_font("bold 14px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif");
    let _ = ctx.fill_text(&fit_text(&ctx, &f.name, w - 20.0), 10.0, 6.0);
    ctx.set_font(FONT);
    let sub = format!(
        "{} · {device} · peak {} · {} · {window}",
        fr.state.view().label(),
        human_size(f.plot.layout.peak_bytes as f64),
        memviz_view::entries::count(f.plot.layout.elements.len(), "allocations")
    );
    let _ = ctx.fill_text(&fit_text(&ctx, &sub, w - 20.0), 10.0, 23.0);
    let _ = ctx.draw_image_with_html_canvas_element_and_dw_and_dh(&plot, 0.0, TITLE_PX, w, h);
    // Legend.
    let y = TITLE_PX + h + 7.0;
    let mut x = 10.0;
    let mut key = |fill: &str, text: &str, ctx: &CanvasRenderingContext2d| {
        ctx.set_fill_style_str(fill);
        ctx.fill_rect(x, y + 1.0, 11.0, 11.0);
        ctx.set_fill_style_str(pal.text);
        let _ = ctx.fill_text(text, x + 15.0, y);
        x += 15.0 + ctx.measure_text(text).map_or(80.0, |m| m.width()) + 16.0;
    };
    key(pal.bands[0], "an allocation (colour by address)", &ctx);
    key(pal.summarized, "smaller allocations, summarized", &ctx);
    key(pal.stack, "allocations thinner than a pixel", &ctx);
    if !f.plot.ooms.is_empty() {
        key(pal.oom, "out of memory", &ctx);
    }
    ctx.set_fill_style_str(pal.muted);
    ctx.set_text_align("right");
    let _ = ctx.fill_text("memviz", w - 10.0, y);
    Ok(out)
}
