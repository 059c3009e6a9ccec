//! Views shown in the page's `#panel` instead of the timeline canvases: the Allocator State
//! History (a virtualized event list and the segment map after the selected event), the
//! Allocator Settings table and the flame graph ([`flame`]).
//!
//! Their user state is [`memviz_view::state::panels::HistoryState`] and the event list is
//! derived ([`memviz_view::derived::Derived::history`]); their DOM events become
//! [`HistoryInput`]s through [`bindings`]; [`draw`] writes the panel from the state, keeping
//! what it wrote in a [`Memo`].

pub mod flame;

use memviz_core::describe::viewer_size;
use memviz_view::history as state_history;
use memviz_view::state::panels::{HistoryInput, HistoryRows};
use memviz_view::state::PageInput;
use memviz_view::state::ViewState;
use memviz_view::view::View;
use state_history::{HistoryData, MapHit, MapLayout};
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, Document, Element, HtmlCanvasElement, HtmlElement, KeyboardEvent, MouseEvent};

use crate::dom::Ui;
use crate::input::{bind, Binding, Input};
use crate::paint::{Frame, Palette};

/// Height of one event row, CSS px (matches `#event-rows > div` in style.css).
pub const EVENT_ROW_PX: f64 = 18.0;
/// Tallest scrollable height given to the event list (browsers cap element heights), CSS px.
pub const MAX_LIST_PX: f64 = 8_000_000.0;
/// Margin around the segment map, CSS px.
const MAP_MARGIN_PX: f64 = 8.0;
/// Tallest row pitch of the segment map, CSS px.
const MAP_MAX_PITCH_PX: f64 = 44.0;

/// The panel's elements.
struct Els {
    panel: HtmlElement,
    history: HtmlElement,
    list: HtmlElement,
    spacer: HtmlElement,
    rows: HtmlElement,
    header: HtmlElement,
    map: HtmlCanvasElement,
    map_ctx: CanvasRenderingContext2d,
    settings: HtmlElement,
    flame: Option<flame::Els>,
}

fn by_id<T: JsCast>(d: &Document, id: &str) -> Option<T> {
    d.get_element_by_id(id)?.dyn_into::<T>().ok()
}

impl Els {
    fn find(d: &Document) -> Option<Els> {
        let map: HtmlCanvasElement = by_id(d, "segmap")?;
        let map_ctx = map.get_context("2d").ok()??.dyn_into().ok()?;
        Some(Els {
            panel: by_id(d, "panel")?,
            history: by_id(d, "history")?,
            list: by_id(d, "event-list")?,
            spacer: by_id(d, "event-spacer")?,
            rows: by_id(d, "event-rows")?,
            header: by_id(d, "segmap-header")?,
            map_ctx,
            map,
            settings: by_id(d, "settings")?,
            flame: flame::Els::find(d),
        })
    }
}

/// The rows drawn: (file, device position, first row, row count, selected row).
type RowsKey = (usize, usize, usize, usize, usize);
/// The map drawn: (file, device position, trace entry, device-pixel size, hovered item).
type MapKey = (usize, usize, usize, (i64, i64), Option<MapHit>);

/// What the panel views' DOM shows now, and their elements.
#[derive(Default)]
pub struct Memo {
    els: Option<Els>,
    drawn_rows: Option<RowsKey>,
    drawn_map: Option<MapKey>,
    drawn_settings: Option<usize>,
    drawn_stack: Option<String>,
    drawn_scroll: f64,
    flame: flame::Memo,
}

impl Memo {
    /// Finds the panel's elements.
    pub fn new(document: &Document) -> Memo {
        Memo { els: Els::find(document), ..Memo::default() }
    }

    /// The list must be scrolled to the selected row again (the view is shown again).
    pub fn forget_rows(&mut self) {
        self.drawn_rows = None;
    }

    /// Visible height of the event list, CSS px.
    pub fn list_px(&self) -> f64 {
        self.els.as_ref().map_or(0.0, |e| f64::from(e.list.client_height()))
    }
}

/// `filter_freed` of a page written by the command line (`trace-plot --filter-freed`).
pub fn embedded_filter_freed(document: &Document) -> bool {
    let Some(text) = document.get_element_by_id("memviz-embedded").and_then(|e| e.text_content()) else { return false };
    let Ok(config) = js_sys::JSON::parse(&text) else { return false };
    js_sys::Reflect::get(&config, &wasm_bindgen::JsValue::from_str("filter_freed"))
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// The events of the panel's elements and what they mean.
pub fn bindings(document: &Document) -> Vec<Binding> {
    let mut l = flame::bindings(document);
    let Some(els) = Els::find(document) else { return l };
    let list: &web_sys::EventTarget = els.list.as_ref();
    let row_of = |e: &MouseEvent| -> Option<usize> {
        let el: Element = e.target()?.dyn_into().ok()?;
        // The row's entry link goes to the timeline instead (app/listeners.rs).
        if el.closest(".row-entry").ok().flatten().is_some() {
            return None;
        }
        el.closest("[data-row]").ok()??.get_attribute("data-row")?.parse().ok()
    };
    l.push(bind(list, "click", move |e: &MouseEvent| {
        row_of(e).map(|r| Input::Page(PageInput::History(HistoryInput::Select(r))))
    }));
    l.push(bind(list, "mouseover", move |e: &MouseEvent| {
        Some(Input::Page(PageInput::History(HistoryInput::HoverRow(row_of(e)))))
    }));
    l.push(bind(list, "mouseleave", |_: &MouseEvent| {
        Some(Input::Page(PageInput::History(HistoryInput::HoverRow(None))))
    }));
    l.push(bind(list, "scroll", |e: &web_sys::Event| {
        let el: Element = e.target()?.dyn_into().ok()?;
        Some(Input::Page(PageInput::History(HistoryInput::Scroll(f64::from(el.scroll_top())))))
    }));
    let map: &web_sys::EventTarget = els.map.as_ref();
    l.push(bind(map, "pointermove", |e: &web_sys::PointerEvent| {
        Some(Input::Page(PageInput::History(HistoryInput::MapPointer(Some((
            f64::from(e.offset_x()),
            f64::from(e.offset_y()),
        ))))))
    }));
    l.push(bind(map, "pointerleave", |_: &web_sys::PointerEvent| {
        Some(Input::Page(PageInput::History(HistoryInput::MapPointer(None))))
    }));
    if let Some(cb) = by_id::<web_sys::HtmlInputElement>(document, "hide-freed") {
        let t: &web_sys::EventTarget = cb.as_ref();
        l.push(bind(t, "change", |e: &web_sys::Event| {
            let i: web_sys::HtmlInputElement = e.target()?.dyn_into().ok()?;
            Some(Input::Page(PageInput::History(HistoryInput::HideFreed(i.checked()))))
        }));
    }
    let win: web_sys::EventTarget = match web_sys::window() {
        Some(w) => w.into(),
        None => return l,
    };
    l.push(bind(&win, "keydown", |e: &KeyboardEvent| {
        let in_history = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id("main"))
            .is_some_and(|m| m.class_list().contains("view-history"));
        let in_control = e
            .target()
            .and_then(|t| t.dyn_into::<Element>().ok())
            .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA"));
        if !in_history || in_control || e.ctrl_key() || e.alt_key() || e.meta_key() {
            return None;
        }
        let p = match e.key().as_str() {
            "ArrowUp" => HistoryInput::Move(-1),
            "ArrowDown" => HistoryInput::Move(1),
            "PageUp" => HistoryInput::Move(-20),
            "PageDown" => HistoryInput::Move(20),
            "Home" => HistoryInput::Jump(false),
            "End" => HistoryInput::Jump(true),
            _ => return None,
        };
        e.prevent_default();
        Some(Input::Page(PageInput::History(p)))
    }));
    l
}

/// Height of one row: one line, or two when rows show their stream.
pub fn row_px(data: &HistoryData) -> f64 {
    if data.show_stream {
        2.0 * EVENT_ROW_PX
    } else {
        EVENT_ROW_PX
    }
}

/// The event list shown, as [`HistoryState::apply`](memviz_view::state::panels::HistoryState::apply)
/// needs it.
pub fn history_rows(state: &ViewState, data: &HistoryData, list_px: f64) -> Option<HistoryRows> {
    let key = memviz_view::derived::current_key(state)?;
    Some(HistoryRows { key, rows: data.rows(), row_px: row_px(data), list_px, max_list_px: MAX_LIST_PX })
}

/// Shows the panel or the timeline, whichever the current view is; whether it is the panel.
///
/// Called before the timeline's canvases are measured after a change of view, so that a
/// timeline coming back from a panel is measured shown, not hidden (0 px wide).
pub fn show_panel_or_timeline(ui: &Ui, state: &ViewState, memo: &Memo) -> bool {
    let panel = state.view().is_panel() && state.file().is_some();
    let main = ui.main.class_list();
    let _ = main.toggle_with_force("view-panel", panel);
    let _ = main.toggle_with_force("view-history", panel && state.view() == View::AllocatorStateHistory);
    // Controls are shown where they act (style.css: .needs-file, .timeline-only).
    if let Some(body) = ui.document.body() {
        let classes = body.class_list();
        let _ = classes.toggle_with_force("view-panel", panel);
        let _ = classes.toggle_with_force("has-file", state.file().is_some());
    }
    if let Some(els) = &memo.els {
        if els.panel.hidden() == panel {
            els.panel.set_hidden(!panel);
        }
    }
    panel
}

/// Writes the panel for the current view; returns false when the view is not a panel view (the
/// caller then draws the timeline).
pub fn draw(fr: &Frame<'_>, memo: &mut Memo) -> bool {
    let state = fr.state;
    if let Some(cb) = by_id::<web_sys::HtmlInputElement>(&fr.ui.document, "hide-freed") {
        let disabled = state.file().is_none() || state.loading().is_some() || state.view().is_panel();
        if cb.disabled() != disabled {
            cb.set_disabled(disabled);
        }
        if cb.checked() != state.history().hide_freed {
            cb.set_checked(state.history().hide_freed);
        }
    }
    if memo.els.is_none() {
        return false;
    }
    let panel = show_panel_or_timeline(fr.ui, state, memo);
    if !panel {
        memo.drawn_stack = None;
        return false;
    }
    let Some(els) = memo.els.take() else { return false };
    els.history.set_hidden(state.view() != View::AllocatorStateHistory);
    els.settings.set_hidden(state.view() != View::AllocatorSettings);
    if let Some(f) = &els.flame {
        f.set_shown(state.view() == View::FlameGraph);
    }
    match state.view() {
        View::AllocatorStateHistory => draw_history(fr, memo, &els),
        View::AllocatorSettings => draw_settings(fr, memo, &els),
        View::FlameGraph => {
            if let Some(f) = &els.flame {
                let text = flame::draw(fr, &mut memo.flame, f);
                set_stack(fr.ui, memo, &text);
            }
        }
        _ => {}
    }
    memo.els = Some(els);
    true
}

fn set_stack(ui: &Ui, memo: &mut Memo, text: &str) {
    if memo.drawn_stack.as_deref() != Some(text) {
        ui.stack.set_text_content(Some(text));
        let _ = ui.stack.class_list().remove_1("pinned");
        memo.drawn_stack = Some(text.to_string());
    }
}

fn draw_settings(fr: &Frame<'_>, memo: &mut Memo, els: &Els) {
    let Some(i) = fr.state.current() else { return };
    let Some(f) = fr.file() else { return };
    if memo.drawn_settings != Some(i) {
        memo.drawn_settings = Some(i);
        let doc = &fr.ui.document;
        els.settings.set_text_content(None);
        let rows = memviz_view::settings::rows(&f.snap);
        if rows.is_empty() {
            if let Ok(p) = doc.create_element("p") {
                p.set_class_name("none");
                p.set_text_content(Some(memviz_view::settings::NO_SETTINGS));
                let _ = els.settings.append_child(&p);
            }
        } else if let Ok(table) = doc.create_element("table") {
            let add = |parent: &Element, tag: &str, text: &str, class: &str| -> Option<Element> {
                let c = doc.create_element(tag).ok()?;
                c.set_text_content(Some(text));
                if !class.is_empty() {
                    c.set_class_name(class);
                }
                parent.append_child(&c).ok()?;
                Some(c)
            };
            if let Some(head) = add(&table, "tr", "", "") {
                for h in ["Setting", "Value", "What it does"] {
                    add(&head, "th", h, "");
                }
            }
            for (name, value, what) in &rows {
                if let Some(tr) = add(&table, "tr", "", "") {
                    add(&tr, "td", name, "name");
                    add(&tr, "td", value, "value");
                    add(&tr, "td", what, "what");
                }
            }
            let _ = els.settings.append_child(&table);
        }
    }
    set_stack(
        fr.ui,
        memo,
        &format!(
            "Allocator settings of {}: how the CUDA caching allocator was configured when the snapshot was taken.",
            f.name
        ),
    );
}

#[allow(clippy::too_many_lines)] // the event list and its segment map, drawn together
fn draw_history(fr: &Frame<'_>, memo: &mut Memo, els: &Els) {
    let state = fr.state;
    let Some(f) = fr.file() else { return };
    let Some(fi) = state.current() else { return };
    let d = f.plot.device_pos;
    let snap = &f.snap;
    let Some(dev) = snap.devices.get(d) else {
        set_stack(fr.ui, memo, "This file has no device.");
        return;
    };
    let t = &dev.trace;
    let Some(data) = fr.derived.history_of(state) else { return };
    let n = data.rows();
    let rpx = row_px(data);
    let sel = state.history().selected_row((fi, d), n);
    // The list: only the rows in view exist.
    let view_px = f64::from(els.list.client_height());
    let first_draw = memo.drawn_rows.is_none_or(|k| (k.0, k.1) != (fi, d));
    let scroll_px = state.history().scroll_px;
    if first_draw {
        // A new list (or the view shown again): the selected row in view; the scroll event that
        // follows brings the state in line.
        let _ = els.spacer.style().set_property("height", &format!("{}px", (n as f64 * rpx).min(MAX_LIST_PX)));
        let target = sel.map_or(0.0, |r| state_history::scroll_to_show(n, rpx, view_px, 0.0, MAX_LIST_PX, r));
        els.list.set_scroll_top(target.round() as i32);
    } else if memo.drawn_scroll != scroll_px && (f64::from(els.list.scroll_top()) - scroll_px).abs() > 1.0 {
        els.list.set_scroll_top(scroll_px.round() as i32);
    }
    memo.drawn_scroll = scroll_px;
    let scroll = f64::from(els.list.scroll_top());
    let (height, first, top, count) = state_history::virtual_rows(n, rpx, view_px, scroll, MAX_LIST_PX);
    let rows_key = (fi, d, first, count, sel.unwrap_or(usize::MAX));
    if memo.drawn_rows != Some(rows_key) {
        memo.drawn_rows = Some(rows_key);
        let _ = els.spacer.style().set_property("height", &format!("{height}px"));
        let _ = els.rows.style().set_property("transform", &format!("translateY({top}px)"));
        els.rows.set_text_content(None);
        let doc = &fr.ui.document;
        let row_height = format!("{rpx}px");
        for r in first..first + count {
            let Ok(div) = doc.create_element("div") else { continue };
            let _ = div.set_attribute("data-row", &r.to_string());
            if Some(r) == sel {
                div.set_class_name("sel");
            }
            if let Ok(div) = div.clone().dyn_into::<HtmlElement>() {
                let _ = div.style().set_property("height", &row_height);
            }
            // The row's trace entry, a link that puts the timeline's cursor there, before
            // PyTorch's text of the event.
            let entry = state_history::row_entry(data, r);
            let _ = div.set_attribute("data-entry", &entry.to_string());
            div.set_inner_html(&format!(
                "<button type=\"button\" class=\"entry-link row-entry\" data-entry=\"{entry}\" title=\"Put the cursor on the timeline at entry {entry}\">{entry}</button><span class=\"ev\"></span>"
            ));
            if let Ok(Some(ev)) = div.query_selector(".ev") {
                ev.set_text_content(Some(&state_history::event_text(t, data, r)));
            }
            let _ = els.rows.append_child(&div);
        }
        if n == 0 {
            if let Ok(div) = doc.create_element("div") {
                div.set_text_content(Some("No trace events recorded for this device."));
                let _ = els.rows.append_child(&div);
            }
        }
        let _ = els.list.set_attribute("data-selected", &sel.map_or(String::new(), |r| r.to_string()));
        let _ = els.list.set_attribute("data-rows", &n.to_string());
        let _ = els.list.set_attribute("data-entries", &t.len().to_string());
    }
    // The state after the selected row (after the last trace entry of a joined `free`).
    let k = sel.map_or(usize::MAX, |r| data.entries_of(r).1);
    let Some(at) = fr.derived.at_event_of(state) else { return };
    let header = state_history::header_text(
        at.state.allocated_bytes(),
        at.state.reserved_bytes(),
        sel.map(|r| state_history::row_entry(data, r)),
        t.len(),
    );
    if els.header.text_content().as_deref() != Some(header.as_str()) {
        els.header.set_text_content(Some(&header));
    }
    // The map.
    let css = (f64::from(els.map.client_width()), f64::from(els.map.client_height()));
    let geom = MapGeom::new(&at.map, css);
    let hit = state.history().map_pointer.and_then(|(x, y)| geom.hit(&at.map, x, y));
    let size_key = ((css.0 * state.dpr()) as i64, (css.1 * state.dpr()) as i64);
    let map_key = (fi, d, k, size_key, hit);
    if memo.drawn_map != Some(map_key) {
        memo.drawn_map = Some(map_key);
        draw_map(&els.map, &els.map_ctx, &at.map, (&geom, fr.palette()), css, state.dpr(), hit);
        let _ = els.map.set_attribute("data-segments", &at.map.segments.len().to_string());
        let _ = els.map.set_attribute("data-blocks", &at.map.blocks.len().to_string());
        let _ = els.map.set_attribute(
            "data-hover",
            &match hit {
                None => String::new(),
                Some(MapHit::Segment(i)) => format!("segment:{i}"),
                Some(MapHit::Block(i)) => format!("block:{i}"),
                Some(MapHit::Rounding(i)) => format!("rounding:{i}"),
            },
        );
    }
    // The text below.
    let text = match (hit, state.history().hover_row) {
        (Some(h), _) => at.map.hit_text(snap, data, &at.state, k, h),
        (None, Some(r)) if r < n && Some(r) != sel => state_history::row_text(snap, t, data, r),
        _ => match sel {
            Some(r) => state_history::selected_text(snap, t, data, r, &at.state),
            None => format!(
                "({} allocated / {} reserved)\nNo trace events recorded for this device: the map shows the snapshot's segments.\n",
                viewer_size(at.state.allocated_bytes()),
                viewer_size(at.state.reserved_bytes())
            ),
        },
    };
    set_stack(fr.ui, memo, &text);
}

/// Where the map's rows are on the canvas.
struct MapGeom {
    left_px: f64,
    top_px: f64,
    x_per_byte: f64,
    pitch_px: f64,
}

impl MapGeom {
    fn new(m: &MapLayout, css: (f64, f64)) -> MapGeom {
        let w = (css.0 - 2.0 * MAP_MARGIN_PX).max(1.0);
        let h = (css.1 - 2.0 * MAP_MARGIN_PX).max(1.0);
        let rows = f64::from(m.rows.max(1));
        MapGeom {
            left_px: MAP_MARGIN_PX,
            top_px: MAP_MARGIN_PX,
            x_per_byte: if m.row_bytes > 0.0 { w / m.row_bytes } else { 0.0 },
            pitch_px: (h / rows).min(MAP_MAX_PITCH_PX),
        }
    }

    fn hit(&self, m: &MapLayout, x_px: f64, y_px: f64) -> Option<MapHit> {
        if self.x_per_byte <= 0.0 || self.pitch_px <= 0.0 {
            return None;
        }
        m.hit((x_px - self.left_px) / self.x_per_byte, (y_px - self.top_px) / self.pitch_px, 1.0 / self.x_per_byte)
    }
}

fn draw_map(
    canvas: &HtmlCanvasElement,
    ctx: &CanvasRenderingContext2d,
    m: &MapLayout,
    (g, pal): (&MapGeom, &Palette),
    css: (f64, f64),
    dpr: f64,
    hit: Option<MapHit>,
) {
    let (w, h) = ((css.0 * dpr).round().max(1.0) as u32, (css.1 * dpr).round().max(1.0) as u32);
    if canvas.width() != w || canvas.height() != h {
        canvas.set_width(w);
        canvas.set_height(h);
    }
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, css.0, css.1);
    let bar = g.pitch_px * 0.8;
    let one_px = 1.0 / dpr;
    let seg_rect = |s: &state_history::PlacedSegment| {
        (
            g.left_px + s.offset_bytes * g.x_per_byte,
            g.top_px + f64::from(s.row) * g.pitch_px,
            (s.size_bytes as f64 * g.x_per_byte).max(one_px),
        )
    };
    ctx.set_fill_style_str(pal.background);
    ctx.set_stroke_style_str(pal.outline);
    ctx.set_line_width(one_px);
    for s in &m.segments {
        let (x, y, wd) = seg_rect(s);
        ctx.fill_rect(x, y, wd, bar);
        ctx.stroke_rect(x, y, wd, bar);
    }
    for b in &m.blocks {
        let Some(s) = m.segments.get(b.segment) else { continue };
        let y = g.top_px + f64::from(s.row) * g.pitch_px;
        let x = g.left_px + b.offset_bytes * g.x_per_byte;
        let wr = (b.requested_bytes as f64 * g.x_per_byte).max(one_px);
        let colour = if b.pending_free { pal.waste } else { pal.bands[state_history::block_colour(b.addr)] };
        ctx.set_fill_style_str(colour);
        ctx.fill_rect(x, y, wr, bar);
    }
    // Rounding waste on top, at least one CSS pixel wide so it can be seen and pointed at.
    ctx.set_fill_style_str(pal.waste);
    for b in &m.blocks {
        let Some(s) = m.segments.get(b.segment) else { continue };
        if b.size_bytes > b.requested_bytes {
            let y = g.top_px + f64::from(s.row) * g.pitch_px;
            let x = g.left_px + (b.offset_bytes + b.requested_bytes as f64) * g.x_per_byte;
            ctx.fill_rect(x, y, ((b.size_bytes - b.requested_bytes) as f64 * g.x_per_byte).max(1.0), bar);
        }
    }
    // The hovered item: a red outline.
    let outline = match hit {
        Some(MapHit::Segment(i)) => m.segments.get(i).map(|s| {
            let (x, y, wd) = seg_rect(s);
            (x, y, wd)
        }),
        Some(MapHit::Block(i) | MapHit::Rounding(i)) => m.blocks.get(i).and_then(|b| {
            let s = m.segments.get(b.segment)?;
            let y = g.top_px + f64::from(s.row) * g.pitch_px;
            let x = g.left_px + b.offset_bytes * g.x_per_byte;
            let wd = match hit {
                Some(MapHit::Rounding(_)) => {
                    return Some((
                        x + b.requested_bytes as f64 * g.x_per_byte,
                        y,
                        ((b.size_bytes - b.requested_bytes) as f64 * g.x_per_byte).max(1.0),
                    ));
                }
                _ => (b.requested_bytes as f64 * g.x_per_byte).max(one_px),
            };
            Some((x, y, wd))
        }),
        None => None,
    };
    if let Some((x, y, wd)) = outline {
        ctx.set_stroke_style_str(pal.waste);
        ctx.set_line_width(2.0);
        ctx.stroke_rect(x, y, wd, bar);
    }
    if m.segments.is_empty() {
        ctx.set_fill_style_str(pal.muted);
        ctx.set_font("13px system-ui, sans-serif");
        let _ = ctx.fill_text("No segments reserved at this point.", g.left_px + 4.0, g.top_px + 16.0);
    }
}
