//! Views shown in the page's `#panel` instead of the timeline canvases: the Allocator State
//! History (a virtualized event list and the segment map after the selected event) and the
//! Allocator Settings table.
//!
//! The state they need lives in [`Panels`] (one field of [`App`]); their DOM events become
//! [`PanelInput`]s through [`crate::app::listen`]; [`draw`] writes the panel from the state.

pub mod settings;

use std::cell::RefCell;
use std::rc::Weak;

use gloo_events::EventListener;
use memviz_core::describe::viewer_size;
use memviz_core::state::AllocatorState;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, Document, Element, HtmlCanvasElement, HtmlElement, KeyboardEvent, MouseEvent};

use crate::app::{listen, App};
use crate::input::Input;
use crate::render::PALETTE;
use memviz_view::history as state_history;
use memviz_view::view::View;
use state_history::{HistoryData, MapHit, MapLayout};

/// Height of one event row, CSS px (matches `#event-rows > div` in style.css).
pub const EVENT_ROW_PX: f64 = 18.0;
/// Tallest scrollable height given to the event list (browsers cap element heights), CSS px.
pub const MAX_LIST_PX: f64 = 8_000_000.0;
/// Red of rounding waste and pending-free blocks.
pub const WASTE_RED: &str = "#d62728";
/// Margin around the segment map, CSS px.
const MAP_MARGIN_PX: f64 = 8.0;
/// Tallest row pitch of the segment map, CSS px.
const MAP_MAX_PITCH_PX: f64 = 44.0;

/// A user action in a panel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PanelInput {
    /// Select an event row.
    Select(usize),
    /// Move the selection by this many rows (clamped).
    Move(i64),
    /// Select the first (false) or last (true) row.
    Jump(bool),
    /// The event list scrolled (CSS px).
    Scroll(f64),
    /// The pointer is over an event row (or left the list).
    HoverRow(Option<usize>),
    /// The pointer moved over the segment map (CSS px) or left it.
    MapPointer(Option<(f64, f64)>),
    /// The "hide allocations freed within the trace" checkbox.
    HideFreed(bool),
}

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
        })
    }
}

/// The history of one (file, device), built on first use.
struct Cached {
    key: (usize, usize),
    data: HistoryData,
}

/// The state after one event and its map.
struct AtEvent {
    key: (usize, usize, usize),
    state: AllocatorState,
    map: MapLayout,
}

/// The rows drawn: (file, device position, first row, row count, selected row).
type RowsKey = (usize, usize, usize, usize, usize);
/// The map drawn: (file, device position, trace entry, device-pixel size, hovered item).
type MapKey = (usize, usize, usize, (i64, i64), Option<MapHit>);

/// State of the panel views.
#[derive(Default)]
pub struct Panels {
    els: Option<Els>,
    /// Selected event: (file, device position, row).
    pub selected: Option<(usize, usize, usize)>,
    /// Scroll position of the event list, CSS px.
    pub scroll_px: f64,
    /// Event row under the pointer.
    pub hover_row: Option<usize>,
    /// Pointer over the segment map, CSS px.
    pub map_pointer: Option<(f64, f64)>,
    /// Timelines leave out allocations made and freed within the trace.
    pub hide_freed: bool,
    history: RefCell<Option<Cached>>,
    at_event: RefCell<Option<AtEvent>>,
    /// What the DOM shows now: rows, map, settings, stack text.
    drawn_rows: RefCell<Option<RowsKey>>,
    drawn_map: RefCell<Option<MapKey>>,
    drawn_settings: RefCell<Option<usize>>,
    drawn_stack: RefCell<Option<String>>,
    drawn_scroll: std::cell::Cell<f64>,
}

impl Panels {
    /// Finds the panel's elements.
    pub fn new(document: &Document) -> Panels {
        Panels { els: Els::find(document), hide_freed: embedded_filter_freed(document), ..Panels::default() }
    }
}

/// `filter_freed` of a page written by the command line (`trace-plot --filter-freed`).
fn embedded_filter_freed(document: &Document) -> bool {
    let Some(text) = document.get_element_by_id("memviz-embedded").and_then(|e| e.text_content()) else { return false };
    let Ok(config) = js_sys::JSON::parse(&text) else { return false };
    js_sys::Reflect::get(&config, &wasm_bindgen::JsValue::from_str("filter_freed"))
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// Listeners of the panel's elements.
pub fn install_listeners(weak: &Weak<RefCell<App>>, document: &Document) -> Vec<EventListener> {
    let mut l = Vec::new();
    let Some(els) = Els::find(document) else { return l };
    let list: &web_sys::EventTarget = els.list.as_ref();
    let row_of = |e: &MouseEvent| -> Option<usize> {
        let el: Element = e.target()?.dyn_into().ok()?;
        el.closest("[data-row]").ok()??.get_attribute("data-row")?.parse().ok()
    };
    l.push(listen(weak, list, "click", move |e: &MouseEvent| row_of(e).map(|r| Input::Panel(PanelInput::Select(r)))));
    l.push(listen(weak, list, "mouseover", move |e: &MouseEvent| Some(Input::Panel(PanelInput::HoverRow(row_of(e))))));
    l.push(listen(weak, list, "mouseleave", |_: &MouseEvent| Some(Input::Panel(PanelInput::HoverRow(None)))));
    l.push(listen(weak, list, "scroll", |e: &web_sys::Event| {
        let el: Element = e.target()?.dyn_into().ok()?;
        Some(Input::Panel(PanelInput::Scroll(f64::from(el.scroll_top()))))
    }));
    let map: &web_sys::EventTarget = els.map.as_ref();
    l.push(listen(weak, map, "pointermove", |e: &web_sys::PointerEvent| {
        Some(Input::Panel(PanelInput::MapPointer(Some((f64::from(e.offset_x()), f64::from(e.offset_y()))))))
    }));
    l.push(listen(weak, map, "pointerleave", |_: &web_sys::PointerEvent| {
        Some(Input::Panel(PanelInput::MapPointer(None)))
    }));
    if let Some(cb) = by_id::<web_sys::HtmlInputElement>(document, "hide-freed") {
        let t: &web_sys::EventTarget = cb.as_ref();
        l.push(listen(weak, t, "change", |e: &web_sys::Event| {
            let i: web_sys::HtmlInputElement = e.target()?.dyn_into().ok()?;
            Some(Input::Panel(PanelInput::HideFreed(i.checked())))
        }));
    }
    let win: web_sys::EventTarget = match web_sys::window() {
        Some(w) => w.into(),
        None => return l,
    };
    l.push(listen(weak, &win, "keydown", |e: &KeyboardEvent| {
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
            "ArrowUp" => PanelInput::Move(-1),
            "ArrowDown" => PanelInput::Move(1),
            "PageUp" => PanelInput::Move(-20),
            "PageDown" => PanelInput::Move(20),
            "Home" => PanelInput::Jump(false),
            "End" => PanelInput::Jump(true),
            _ => return None,
        };
        e.prevent_default();
        Some(Input::Panel(p))
    }));
    l
}

/// The history of the shown (file, device), built on first use.
fn ensure_history(app: &App) -> Option<(usize, usize)> {
    let i = app.state.current?;
    let f = app.state.files.get(i)?;
    let d = f.plot.device_pos;
    let mut h = app.panels.history.borrow_mut();
    if h.as_ref().map(|c| c.key) != Some((i, d)) {
        *h = Some(Cached { key: (i, d), data: HistoryData::build(&f.snap, d) });
    }
    Some((i, d))
}

/// Rows of the shown device's event list and their height: (file, device position, rows, row px).
fn event_rows(app: &App) -> Option<(usize, usize, usize, f64)> {
    let (i, d) = ensure_history(app)?;
    let h = app.panels.history.borrow();
    let data = &h.as_ref()?.data;
    Some((i, d, data.rows(), row_px(data)))
}

/// Height of one row: one line, or two when rows show their stream.
fn row_px(data: &HistoryData) -> f64 {
    if data.show_stream {
        2.0 * EVENT_ROW_PX
    } else {
        EVENT_ROW_PX
    }
}

fn clamp_selected(app: &App, i: usize, d: usize, n: usize) -> Option<(usize, usize, usize)> {
    if n == 0 {
        return None;
    }
    Some(match app.panels.selected {
        Some((fi, fd, r)) if fi == i && fd == d => (i, d, r.min(n - 1)),
        _ => (i, d, n - 1),
    })
}

/// The selected row of the shown device (the last row by default).
pub fn selected_row(app: &App) -> Option<(usize, usize, usize)> {
    let (i, d, n, _) = event_rows(app)?;
    clamp_selected(app, i, d, n)
}

/// Applies a panel input.
pub fn handle(app: &mut App, input: PanelInput) {
    match input {
        PanelInput::HideFreed(on) => {
            if on != app.panels.hide_freed {
                app.panels.hide_freed = on;
                app.relayout(None, None);
            }
            return;
        }
        PanelInput::Scroll(px) => {
            app.panels.scroll_px = px;
            return;
        }
        PanelInput::HoverRow(r) => {
            app.panels.hover_row = r;
            return;
        }
        PanelInput::MapPointer(p) => {
            app.panels.map_pointer = p;
            return;
        }
        _ => {}
    }
    let list_px = app.panels.els.as_ref().map_or(0.0, |e| f64::from(e.list.client_height()));
    let Some((i, d, n, rpx)) = event_rows(app) else { return };
    let cur = clamp_selected(app, i, d, n).map(|(_, _, r)| r);
    let select = |app: &mut App, r: usize| {
        let r = r.min(n.saturating_sub(1));
        app.panels.selected = Some((i, d, r));
        app.panels.scroll_px = state_history::scroll_to_show(n, rpx, list_px, app.panels.scroll_px, MAX_LIST_PX, r);
    };
    match (input, cur) {
        (PanelInput::Select(r), _) if r < n => app.panels.selected = Some((i, d, r)),
        (PanelInput::Move(by), Some(c)) => select(app, (c as i64).saturating_add(by).max(0) as usize),
        (PanelInput::Jump(end), _) if n > 0 => select(app, if end { n - 1 } else { 0 }),
        _ => {}
    }
}

/// Resets what depends on the shown file after it changed (called when a view is chosen).
pub fn on_view_shown(app: &mut App) {
    app.panels.hover_row = None;
    app.panels.map_pointer = None;
    // Scroll the selected row into view once the list is laid out.
    *app.panels.drawn_rows.borrow_mut() = None;
}

/// Shows the panel or the timeline, whichever the current view is; whether it is the panel.
///
/// Called before the timeline's canvases are measured after a change of view, so that a
/// timeline coming back from a panel is measured shown, not hidden (0 px wide).
pub fn show_panel_or_timeline(app: &App) -> bool {
    let panel = app.state.view.is_panel() && app.file().is_some();
    let main = app.ui.main.class_list();
    let _ = main.toggle_with_force("view-panel", panel);
    let _ = main.toggle_with_force("view-history", panel && app.state.view == View::AllocatorStateHistory);
    // Controls are shown where they act (style.css: .needs-file, .timeline-only).
    if let Some(body) = app.ui.document.body() {
        let classes = body.class_list();
        let _ = classes.toggle_with_force("view-panel", panel);
        let _ = classes.toggle_with_force("has-file", app.file().is_some());
    }
    if let Some(els) = &app.panels.els {
        if els.panel.hidden() == panel {
            els.panel.set_hidden(!panel);
        }
    }
    panel
}

/// Writes the panel for the current view; returns false when the view is not a panel view (the
/// caller then draws the timeline).
pub fn draw(app: &App) -> bool {
    crate::url::sync(app);
    crate::pools::sync_note(app);
    let Some(els) = &app.panels.els else { return false };
    if let Some(cb) = by_id::<web_sys::HtmlInputElement>(&app.ui.document, "hide-freed") {
        let disabled = app.file().is_none() || app.loading.is_some() || app.state.view.is_panel();
        if cb.disabled() != disabled {
            cb.set_disabled(disabled);
        }
        if cb.checked() != app.panels.hide_freed {
            cb.set_checked(app.panels.hide_freed);
        }
    }
    let panel = show_panel_or_timeline(app);
    if !panel {
        *app.panels.drawn_stack.borrow_mut() = None;
        return false;
    }
    els.history.set_hidden(app.state.view != View::AllocatorStateHistory);
    els.settings.set_hidden(app.state.view != View::AllocatorSettings);
    // The timeline must draw everything again when it comes back.
    *app.memo.canvas.borrow_mut() = None;
    *app.memo.stack.borrow_mut() = None;
    match app.state.view {
        View::AllocatorStateHistory => draw_history(app, els),
        View::AllocatorSettings => draw_settings(app, els),
        _ => {}
    }
    if app.loading.is_none() {
        if let Some(t) = app.ready_pending.take() {
            app.ui.mark("memviz:ready");
            let _ = app
                .ui
                .plot
                .set_attribute("data-timings", &format!("{{\"total_ms\":{:.1}}}", app.ui.now_ms() - t.started_ms));
        }
    }
    true
}

fn set_stack(app: &App, text: &str) {
    let mut memo = app.panels.drawn_stack.borrow_mut();
    if memo.as_deref() != Some(text) {
        app.ui.stack.set_text_content(Some(text));
        let _ = app.ui.stack.class_list().remove_1("pinned");
        *memo = Some(text.to_string());
    }
}

fn draw_settings(app: &App, els: &Els) {
    let Some(i) = app.state.current else { return };
    let Some(f) = app.file() else { return };
    if *app.panels.drawn_settings.borrow() != Some(i) {
        *app.panels.drawn_settings.borrow_mut() = Some(i);
        let doc = &app.ui.document;
        els.settings.set_text_content(None);
        let rows = settings::rows(&f.snap);
        if rows.is_empty() {
            if let Ok(p) = doc.create_element("p") {
                p.set_class_name("none");
                p.set_text_content(Some(settings::NO_SETTINGS));
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
        app,
        &format!(
            "Allocator settings of {}: how the CUDA caching allocator was configured when the snapshot was taken.",
            f.name
        ),
    );
}

#[allow(clippy::too_many_lines)] // the event list and its segment map, drawn together
fn draw_history(app: &App, els: &Els) {
    let Some(f) = app.file() else { return };
    let Some(fi) = app.state.current else { return };
    let d = f.plot.device_pos;
    let snap = &f.snap;
    let Some(dev) = snap.devices.get(d) else {
        set_stack(app, "This file has no device.");
        return;
    };
    let t = &dev.trace;
    if ensure_history(app).is_none() {
        return;
    }
    let hist = app.panels.history.borrow();
    let Some(data) = hist.as_ref().map(|c| &c.data) else { return };
    let n = data.rows();
    let rpx = row_px(data);
    let sel = clamp_selected(app, fi, d, n).map(|(_, _, r)| r);
    // The list: only the rows in view exist.
    let view_px = f64::from(els.list.client_height());
    let first_draw = app.panels.drawn_rows.borrow().is_none_or(|k| (k.0, k.1) != (fi, d));
    if first_draw {
        // A new list (or the view shown again): the selected row in view; the scroll event that
        // follows brings the state in line.
        let _ = els.spacer.style().set_property("height", &format!("{}px", (n as f64 * rpx).min(MAX_LIST_PX)));
        let target = sel.map_or(0.0, |r| state_history::scroll_to_show(n, rpx, view_px, 0.0, MAX_LIST_PX, r));
        els.list.set_scroll_top(target.round() as i32);
    } else if app.panels.drawn_scroll.get() != app.panels.scroll_px
        && (f64::from(els.list.scroll_top()) - app.panels.scroll_px).abs() > 1.0
    {
        els.list.set_scroll_top(app.panels.scroll_px.round() as i32);
    }
    app.panels.drawn_scroll.set(app.panels.scroll_px);
    let scroll = f64::from(els.list.scroll_top());
    let (height, first, top, count) = state_history::virtual_rows(n, rpx, view_px, scroll, MAX_LIST_PX);
    let rows_key = (fi, d, first, count, sel.unwrap_or(usize::MAX));
    if *app.panels.drawn_rows.borrow() != Some(rows_key) {
        *app.panels.drawn_rows.borrow_mut() = Some(rows_key);
        let _ = els.spacer.style().set_property("height", &format!("{height}px"));
        let _ = els.rows.style().set_property("transform", &format!("translateY({top}px)"));
        els.rows.set_text_content(None);
        let doc = &app.ui.document;
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
            div.set_text_content(Some(&state_history::event_text(t, data, r)));
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
    {
        let mut at = app.panels.at_event.borrow_mut();
        if at.as_ref().map(|a| a.key) != Some((fi, d, k)) {
            let state = data.history.state_after(snap, sel.map(|_| k));
            let map = MapLayout::build(&state);
            *at = Some(AtEvent { key: (fi, d, k), state, map });
        }
    }
    let at = app.panels.at_event.borrow();
    let Some(at) = at.as_ref() else { return };
    let header = format!(
        "({} allocated / {} reserved) after event {}",
        viewer_size(at.state.allocated_bytes()),
        viewer_size(at.state.reserved_bytes()),
        sel.map_or_else(|| "–".to_string(), |r| format!("{} of {n}", r + 1))
    );
    if els.header.text_content().as_deref() != Some(header.as_str()) {
        els.header.set_text_content(Some(&header));
    }
    // The map.
    let css = (f64::from(els.map.client_width()), f64::from(els.map.client_height()));
    let geom = MapGeom::new(&at.map, css);
    let hit = app.panels.map_pointer.and_then(|(x, y)| geom.hit(&at.map, x, y));
    let size_key = ((css.0 * app.state.dpr) as i64, (css.1 * app.state.dpr) as i64);
    let map_key = (fi, d, k, size_key, hit);
    if *app.panels.drawn_map.borrow() != Some(map_key) {
        *app.panels.drawn_map.borrow_mut() = Some(map_key);
        draw_map(&els.map, &els.map_ctx, &at.map, &geom, css, app.state.dpr, hit);
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
    let text = match (hit, app.panels.hover_row) {
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
    set_stack(app, &text);
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
    g: &MapGeom,
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
    ctx.set_fill_style_str("#fff");
    ctx.set_stroke_style_str("#000");
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
        let colour = if b.pending_free { WASTE_RED } else { PALETTE[state_history::block_colour(b.addr)] };
        ctx.set_fill_style_str(colour);
        ctx.fill_rect(x, y, wr, bar);
    }
    // Rounding waste on top, at least one CSS pixel wide so it can be seen and pointed at.
    ctx.set_fill_style_str(WASTE_RED);
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
        ctx.set_stroke_style_str(WASTE_RED);
        ctx.set_line_width(2.0);
        ctx.stroke_rect(x, y, wd, bar);
    }
    if m.segments.is_empty() {
        ctx.set_fill_style_str("#666");
        ctx.set_font("13px system-ui, sans-serif");
        let _ = ctx.fill_text("No segments reserved at this point.", g.left_px + 4.0, g.top_px + 16.0);
    }
}
