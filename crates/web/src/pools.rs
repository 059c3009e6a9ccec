//! The "Allocated Memory (incl. Private Pools)" view: private pools drawn as envelopes of their
//! reserved-bytes high-water mark over the allocations timeline, each pool's small allocations
//! (below Detail) folded into one stripe of its colour in the summarized band, with a note above
//! the plot on how to read them (as PyTorch's viewer has), and the other view notes (a Mapped
//! Pages view without any mapped pages, a timeline of a device without history). Which pool is
//! under the pointer and what its tooltip says are [`memviz_view::pools`].

use memviz_core::timeline_pools::Pools;
use memviz_view::state::PageInput;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlElement, PointerEvent};

use crate::dom::Ui;
use crate::input::{bind, Binding, Input};
use crate::paint::Frame;
use memviz_view::model::column_envelopes;

use memviz_view::view::View;

/// Text shown in the Mapped Pages view when the trace maps no pages.
pub const NO_MAPPED_PAGES: &str = "This snapshot has no expandable segments: its trace has no segment_map events, so there are no mapped pages to show. Expandable segments are turned on with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the environment before CUDA starts, or torch.cuda.memory._set_allocator_settings(\"expandable_segments:True\").";

/// The note above a timeline without history when the file gives no reason.
pub const NO_HISTORY_NOTE: &str = "No history in this view: what was live when the snapshot was taken is shown as one column; point at a block for its size and stack.";

/// The note above the plot of the private-pools view.
pub const POOL_NOTE: &str = "Note: private pool memory (the dashed envelopes) is shown as allocated until the pool's segment is freed: an envelope's height is the most its pool has reserved or had allocated so far, so it never shrinks. This view requires that MemPools are not deleted before torch.cuda.memory._snapshot() is called.";

/// The note of the private-pools view when the device has no private pool.
pub const NO_POOLS_NOTE: &str = "Note: this device has no private pools (CUDA graph or MemPool segments, a segment_pool_id other than (0, 0)), so this view equals the Active Memory Timeline. Pools whose MemPool was deleted before torch.cuda.memory._snapshot() was called cannot be found.";

/// The notes and what they show now.
#[derive(Default)]
pub struct Memo {
    note: Option<HtmlElement>,
    drawn_note: Option<bool>,
    pool_note: Option<HtmlElement>,
    drawn_pool_note: Option<String>,
}

/// Creates the notes; the pointer's events over the plot and what they mean for the envelopes.
pub fn bindings(ui: &Ui, memo: &mut Memo) -> Vec<Binding> {
    let doc = &ui.document;
    if let (Some(wrap), Ok(note)) = (doc.get_element_by_id("plot-wrap"), doc.create_element("div")) {
        if let Ok(note) = note.dyn_into::<HtmlElement>() {
            note.set_id("view-note");
            note.set_hidden(true);
            note.set_text_content(Some(NO_MAPPED_PAGES));
            if wrap.append_child(&note).is_ok() {
                memo.note = Some(note);
            }
        }
    }
    memo.pool_note = pool_note(doc);
    let plot: &web_sys::EventTarget = ui.plot.as_ref();
    vec![
        bind(plot, "pointermove", |e: &PointerEvent| {
            Some(Input::Page(PageInput::PoolPointer(Some((f64::from(e.offset_x()), f64::from(e.offset_y()))))))
        }),
        bind(plot, "pointerleave", |_: &PointerEvent| Some(Input::Page(PageInput::PoolPointer(None)))),
    ]
}

/// The yellow note above the plot of the private-pools view (hidden until that view shows).
fn pool_note(doc: &web_sys::Document) -> Option<HtmlElement> {
    let wrap = doc.get_element_by_id("plot-wrap")?;
    let main = wrap.parent_node()?;
    let note: HtmlElement = doc.create_element("div").ok()?.dyn_into().ok()?;
    note.set_id("pool-note");
    note.set_hidden(true);
    let _ = note.set_attribute("role", "note");
    // Styled by the page's theme (`.plot-note` in style.css).
    note.set_class_name("plot-note");
    main.insert_before(&note, Some(&wrap)).ok()?;
    Some(note)
}

/// Shows the note above the plot (called on every redraw, whatever the view): on a timeline of
/// a device without history, why there is none and what is shown instead; else the
/// private-pools note in that view.
pub fn sync_note(fr: &Frame<'_>, memo: &mut Memo) {
    let Some(note) = &memo.pool_note else { return };
    let s = fr.state;
    let shown = s.file().filter(|_| s.loading().is_none() && !s.view().is_panel());
    let text = match shown {
        Some(f) if f.is_moment() => Some(
            fr.derived.views_of(s).and_then(|v| v.no_history.clone()).unwrap_or_else(|| NO_HISTORY_NOTE.to_string()),
        ),
        Some(_) if s.view() == View::AllocatedMemoryPools => Some(
            if fr.derived.pools_of(s).is_some_and(|p| !p.envelopes.is_empty()) { POOL_NOTE } else { NO_POOLS_NOTE }
                .to_string(),
        ),
        _ => None,
    };
    if memo.drawn_pool_note != text {
        if let Some(t) = &text {
            note.set_text_content(Some(t));
        }
        note.set_hidden(text.is_none());
        let _ = note.class_list().toggle_with_force("no-history", shown.is_some_and(|f| f.is_moment()));
        memo.drawn_pool_note = text;
    }
}

/// Draws the envelopes (pools view), the note (Mapped Pages view) and the envelope's text.
pub fn draw(fr: &Frame<'_>, memo: &mut Memo, ctx: &CanvasRenderingContext2d) {
    draw_note(fr, memo);
    if fr.state.view() != View::AllocatedMemoryPools {
        return;
    }
    let (Some(f), Some(p)) = (fr.file(), fr.derived.pools_of(fr.state)) else { return };
    draw_stripes(fr, p, ctx);
    let dpr = fr.state.dpr();
    let rect = fr.plot_rect();
    let v = &f.viewport;
    let xm = f.xmap();
    let layout = &f.plot.layout;
    let s_left = xm.step(v.x0);
    let s_right = xm.step(v.x1);
    let x_dev = |step: f64| v.x_px(&rect, xm.pos(step)) * dpr;
    let y_dev = |bytes: f64| v.y_px(&rect, bytes) * dpr;
    ctx.save();
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    ctx.begin_path();
    ctx.rect(rect.left_px * dpr, rect.top_px * dpr, rect.width_px * dpr, rect.height_px * dpr);
    ctx.clip();
    let mut boxes = Vec::new();
    let end = f64::from(layout.steps);
    for (i, e) in p.envelopes.iter().enumerate() {
        let colours = &fr.palette().envelopes;
        let colour = colours[i % colours.len()];
        let bottom = e.offset_bytes as f64;
        // Step outline of the top edge: (step, height) points, then back along the bottom.
        ctx.begin_path();
        let x_first = x_dev(f64::from(e.first_step).max(s_left));
        ctx.move_to(x_first, y_dev(bottom));
        let mut h_prev = e.height_at(f64::from(e.first_step).max(s_left)) as f64;
        ctx.line_to(x_first, y_dev(bottom + h_prev));
        for &(s, h) in &e.height {
            let s = f64::from(s);
            if s <= s_left {
                continue;
            }
            if s > s_right {
                break;
            }
            ctx.line_to(x_dev(s), y_dev(bottom + h_prev));
            ctx.line_to(x_dev(s), y_dev(bottom + h as f64));
            h_prev = h as f64;
        }
        let x_end = x_dev(end.min(s_right));
        ctx.line_to(x_end, y_dev(bottom + h_prev));
        ctx.line_to(x_end, y_dev(bottom));
        ctx.close_path();
        ctx.set_global_alpha(0.18);
        ctx.set_fill_style_str(colour);
        ctx.fill();
        ctx.set_global_alpha(1.0);
        ctx.set_stroke_style_str(colour);
        let hovered = fr.state.pool_hover().is_some_and(|h| h.envelope == i && h.small_bytes.is_none());
        ctx.set_line_width(if hovered { 3.0 } else { 1.5 } * dpr);
        let dash = js_sys::Array::of2(&(5.0 * dpr).into(), &(3.0 * dpr).into());
        let _ = ctx.set_line_dash(&dash);
        ctx.stroke();
        let _ = ctx.set_line_dash(&js_sys::Array::new());
        boxes.push(format!(
            "{:.1},{:.1},{:.1},{:.1}",
            x_first / dpr,
            y_dev(bottom + e.capacity_bytes() as f64) / dpr,
            x_end / dpr,
            y_dev(bottom) / dpr
        ));
    }
    ctx.restore();
    let attr = boxes.join(";");
    if fr.ui.plot.get_attribute("data-pool-boxes").as_deref() != Some(attr.as_str()) {
        let _ = fr.ui.plot.set_attribute("data-pool-boxes", &attr);
    }
    // Each envelope's key and capacity (the tests read them).
    let keys: Vec<String> = p.envelopes.iter().map(|e| format!("{}:{}", e.key(), e.capacity_bytes())).collect();
    let keys = keys.join(";");
    if fr.ui.plot.get_attribute("data-pool-keys").as_deref() != Some(keys.as_str()) {
        let _ = fr.ui.plot.set_attribute("data-pool-keys", &keys);
    }
    let stripes: Vec<String> =
        p.envelopes.iter().filter(|e| e.small_count > 0).map(|e| format!("{}:{}", e.key(), e.small_count)).collect();
    let stripes = stripes.join(";");
    if fr.ui.plot.get_attribute("data-pool-stripes").as_deref() != Some(stripes.as_str()) {
        let _ = fr.ui.plot.set_attribute("data-pool-stripes", &stripes);
    }
    if let Some(h) = fr.state.pool_hover() {
        if let Some(e) = p.envelopes.get(h.envelope) {
            let text = match h.small_bytes {
                Some(b) => memviz_view::pools::stripe_text(&f.snap, e, b),
                None => memviz_view::pools::envelope_text(&f.snap, e),
            };
            fr.ui.stack.set_text_content(Some(&text));
        }
    }
}

/// Each pool's small allocations as one stripe of its colour in the summarized band, stacked
/// from the band's top in the envelopes' order (the default pool's keep the band's colour, at
/// its bottom). Each pixel column takes the stripes at its middle step, cut to the band there.
fn draw_stripes(fr: &Frame<'_>, p: &Pools, ctx: &CanvasRenderingContext2d) {
    let Some(f) = fr.file() else { return };
    if p.envelopes.iter().all(|e| e.small.is_empty()) {
        return;
    }
    let dpr = fr.state.dpr();
    let rect = fr.plot_rect();
    let v = &f.viewport;
    let xm = f.xmap();
    let width_dev = rect.width_px * dpr;
    let left_dev = rect.left_px * dpr;
    let cols = width_dev.ceil().max(1.0) as usize;
    let bounds: Vec<f64> = (0..=cols).map(|c| xm.step(v.x0 + v.width() * (c as f64 / width_dev).min(1.0))).collect();
    let envs = column_envelopes(&f.plot.layout, &bounds);
    let y_dev = |bytes: f64| v.y_px(&rect, bytes) * dpr;
    // (lower, upper) bytes of each pool's stripe, column by column.
    let n = p.envelopes.len();
    let mut spans = vec![Vec::with_capacity(envs.len()); n];
    for (c, env) in envs.iter().enumerate() {
        let mid = bounds.get(c..c + 2).map_or(0.0, |w| (0.5 * (w[0] + w[1])).floor().max(0.0));
        let (floor, mut top) = (env.drawn_at_peak_bytes, env.total_max_bytes);
        for (i, e) in p.envelopes.iter().enumerate().rev() {
            let h = (e.small_at(mid) as f64).min(top - floor).max(0.0);
            spans[i].push((top - h, top));
            top -= h;
        }
    }
    ctx.save();
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    ctx.begin_path();
    ctx.rect(rect.left_px * dpr, rect.top_px * dpr, width_dev, rect.height_px * dpr);
    ctx.clip();
    let colours = &fr.palette().envelopes;
    for (i, span) in spans.iter().enumerate() {
        if span.iter().all(|s| s.1 <= s.0) {
            continue;
        }
        let hovered = fr.state.pool_hover().is_some_and(|h| h.envelope == i && h.small_bytes.is_some());
        ctx.begin_path();
        for (c, &(_, hi)) in span.iter().enumerate() {
            let x = left_dev + c as f64;
            if c == 0 {
                ctx.move_to(x, y_dev(hi));
            } else {
                ctx.line_to(x, y_dev(hi));
            }
            ctx.line_to(x + 1.0, y_dev(hi));
        }
        for (c, &(lo, _)) in span.iter().enumerate().rev() {
            let x = left_dev + c as f64;
            ctx.line_to(x + 1.0, y_dev(lo));
            ctx.line_to(x, y_dev(lo));
        }
        ctx.close_path();
        ctx.set_global_alpha(if hovered { 0.85 } else { 0.55 });
        ctx.set_fill_style_str(colours[i % colours.len()]);
        ctx.fill();
    }
    ctx.restore();
}

fn draw_note(fr: &Frame<'_>, memo: &mut Memo) {
    let Some(note) = &memo.note else { return };
    let show = fr.state.view() == View::MappedPagesTimeline
        && fr.file().is_some()
        && fr.derived.views_of(fr.state).is_some_and(|v| !v.mapped_pages);
    if memo.drawn_note != Some(show) {
        note.set_hidden(!show);
        memo.drawn_note = Some(show);
    }
}
