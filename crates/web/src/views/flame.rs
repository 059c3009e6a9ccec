//! The flame view (`#flame` in `#panel`): the graph the state asks for
//! ([`memviz_view::state::flame::source`], computed in [`memviz_view::derived::Derived`]) as one absolutely
//! placed box per frame ([`memviz_view::state::flame::boxes`]), the mode's radio buttons, the
//! checkbox that puts the Live set's grouping as the first level, and a title.
//! Its DOM events become [`FlameInput`]s through [`bindings`]; a box's `data-node` names its node.
//! The boxes are written again only when what they show changes; the hover changes classes only.

use memviz_core::analysis::flame::{FlameGraph, FlameSource};
use memviz_view::state::flame::{self as state_flame, FlameInput, FlameMode};
use memviz_view::state::PageInput;
use wasm_bindgen::JsCast;
use web_sys::{Document, Element, HtmlElement, HtmlInputElement, MouseEvent};

use crate::input::{bind, Binding, Input};
use crate::paint::Frame;

/// Height of one level, CSS px (a box is 17 px in style.css, one more between levels).
pub const LEVEL_PX: f64 = 18.0;

/// The view's elements.
pub struct Els {
    root: HtmlElement,
    graph: HtmlElement,
    title: HtmlElement,
}

impl Els {
    /// Finds them.
    pub fn find(d: &Document) -> Option<Els> {
        let get = |id: &str| d.get_element_by_id(id)?.dyn_into::<HtmlElement>().ok();
        Some(Els { root: get("flame")?, graph: get("flame-graph")?, title: get("flame-title")? })
    }

    /// Shows or hides the view.
    pub fn set_shown(&self, shown: bool) {
        if self.root.hidden() == shown {
            self.root.set_hidden(!shown);
        }
    }
}

/// What the boxes show: (file, device, graph source, grouping of the first level, focused node,
/// width px, highlighted allocations).
type BoxesKey = (usize, usize, FlameSource, Option<String>, Option<u32>, i32, usize);

/// What the view's DOM shows now.
#[derive(Default)]
pub struct Memo {
    boxes: Option<BoxesKey>,
    mode: Option<FlameMode>,
    /// (whether the first level is grouped, the grouping's title) the checkbox shows.
    by_group: Option<(bool, String)>,
    hover: Option<u32>,
}

/// The box's node under an event.
fn node_of(e: &MouseEvent) -> Option<u32> {
    let el: Element = e.target()?.dyn_into().ok()?;
    el.closest("[data-node]").ok()??.get_attribute("data-node")?.parse().ok()
}

/// The events of the view's elements and what they mean.
pub fn bindings(document: &Document) -> Vec<Binding> {
    let mut l = Vec::new();
    if let Some(g) = document.get_element_by_id("flame-graph") {
        let t: &web_sys::EventTarget = g.as_ref();
        l.push(bind(t, "click", |e: &MouseEvent| {
            node_of(e).map(|n| Input::Page(PageInput::Flame(FlameInput::Click(n))))
        }));
        l.push(bind(t, "mouseover", |e: &MouseEvent| {
            Some(Input::Page(PageInput::Flame(FlameInput::Hover(node_of(e)))))
        }));
        l.push(bind(t, "mouseleave", |_: &MouseEvent| Some(Input::Page(PageInput::Flame(FlameInput::Hover(None))))));
    }
    for m in [FlameMode::Live, FlameMode::Lifetime] {
        let Some(r) = document.get_element_by_id(&format!("flame-mode-{}", m.value())) else { continue };
        let t: &web_sys::EventTarget = r.as_ref();
        l.push(bind(t, "change", |e: &web_sys::Event| {
            let i: HtmlInputElement = e.target()?.dyn_into().ok()?;
            FlameMode::from_value(&i.value()).map(|m| Input::Page(PageInput::Flame(FlameInput::Mode(m))))
        }));
    }
    if let Some(c) = document.get_element_by_id("flame-by-group") {
        let t: &web_sys::EventTarget = c.as_ref();
        l.push(bind(t, "change", |e: &web_sys::Event| {
            let i: HtmlInputElement = e.target()?.dyn_into().ok()?;
            Some(Input::Page(PageInput::Flame(FlameInput::ByGroup(i.checked()))))
        }));
    }
    l
}

/// A warm colour of a frame's name (the same name, the same colour).
fn colour(name: &str) -> String {
    let h = name.bytes().fold(2_166_136_261u32, |h, b| (h ^ u32::from(b)).wrapping_mul(16_777_619));
    let hue = h % 50;
    let light = 62 + (h >> 8) % 14;
    format!("hsl({hue}, 85%, {light}%)")
}

/// Writes the view; returns the stack panel's text (the hovered or focused frame, or a hint).
pub fn draw(fr: &Frame<'_>, memo: &mut Memo, els: &Els) -> String {
    let state = fr.state;
    let doc = &fr.ui.document;
    if memo.mode != Some(state.flame().mode) {
        memo.mode = Some(state.flame().mode);
        let radio = doc.get_element_by_id(&format!("flame-mode-{}", state.flame().mode.value()));
        if let Some(r) = radio.and_then(|r| r.dyn_into::<HtmlInputElement>().ok()) {
            r.set_checked(true);
        }
    }
    let by = (state.flame().by_group, state.analysis().group_by.title());
    if memo.by_group.as_ref() != Some(&by) {
        if let Some(c) = doc.get_element_by_id("flame-by-group").and_then(|c| c.dyn_into::<HtmlInputElement>().ok()) {
            c.set_checked(by.0);
        }
        if let Some(t) = doc.get_element_by_id("flame-by-title") {
            t.set_text_content(Some(&by.1));
        }
        memo.by_group = Some(by);
    }
    let Some(flame) = fr.derived.flame_of(state) else {
        els.graph.set_text_content(None);
        memo.boxes = None;
        els.title.set_text_content(Some("No trace entries: nothing to weigh."));
        return "This device has no trace entries to draw a flame graph of.".into();
    };
    let g = &flame.graph;
    let focus = state.flame().focus_node(g);
    let width_px = els.graph.client_width();
    let highlighted = state.analysis().highlight.as_ref().map_or(0, |h| h.elements.len());
    let grouping = flame.by.as_ref().map(|(by, library)| format!("{}|{}", by.slug(), library.join(",")));
    let key: BoxesKey = (flame.key.0 .0, flame.key.0 .1, flame.source, grouping, focus, width_px, highlighted);
    if memo.boxes.as_ref() != Some(&key) {
        memo.boxes = Some(key);
        memo.hover = None;
        write_boxes(doc, els, g, focus, f64::from(width_px.max(1)));
        let title = state_flame::title(flame.source, g);
        els.title.set_text_content(Some(&title));
        let attr = |k: &str, v: &str| {
            let _ = els.graph.set_attribute(k, v);
        };
        attr("data-root-value", &(g.nodes.first().map_or(0, |r| r.value) as f64).to_string());
        attr(
            "data-unit",
            if matches!(g.unit, memviz_core::analysis::flame::FlameUnit::Bytes) { "bytes" } else { "byte-entries" },
        );
        attr("data-focus", &focus.map_or(String::new(), |n| n.to_string()));
        attr("data-by", flame.by.as_ref().map_or("frame".to_string(), |(by, _)| by.slug()).as_str());
        attr("data-highlight", &highlighted.to_string());
    }
    if memo.hover != state.flame().hover {
        for (n, on) in [(memo.hover, false), (state.flame().hover, true)] {
            if let Some(n) = n {
                if let Ok(Some(el)) = els.graph.query_selector(&format!("[data-node=\"{n}\"]")) {
                    let _ = el.class_list().toggle_with_force("hover", on);
                }
            }
        }
        memo.hover = state.flame().hover;
    }
    match state.flame().hover.or(focus) {
        Some(n) => state_flame::node_text(g, n),
        None => format!(
            "{}\nPoint at a frame for its bytes and share; click one to focus it and highlight its allocations on the timeline.",
            state_flame::node_text(g, 0)
        ),
    }
}

fn write_boxes(doc: &Document, els: &Els, g: &FlameGraph, focus: Option<u32>, width_px: f64) {
    els.graph.set_text_content(None);
    let min_share = (1.0 / width_px).max(state_flame::MIN_BOX_SHARE);
    let boxes = state_flame::boxes(g, focus, min_share, state_flame::MAX_BOXES);
    let _ = els.graph.set_attribute("data-boxes", &boxes.len().to_string());
    let mut depth = 0;
    for b in &boxes {
        let Some(n) = g.nodes.get(b.node as usize) else { continue };
        let Ok(div) = doc.create_element("div") else { continue };
        let Ok(div) = div.dyn_into::<HtmlElement>() else { continue };
        let mut class = String::from("fl");
        if b.above_focus {
            class.push_str(" above");
        }
        if Some(b.node) == focus {
            class.push_str(" focus");
        }
        div.set_class_name(&class);
        let _ = div.set_attribute("data-node", &b.node.to_string());
        let _ = div.set_attribute("data-value", &(n.value as f64).to_string());
        let _ = div.set_attribute("data-name", &n.name);
        let style = div.style();
        let _ = style.set_property("left", &format!("{:.3}%", b.x0 * 100.0));
        let _ = style.set_property("width", &format!("{:.3}%", (b.x1 - b.x0) * 100.0));
        let _ = style.set_property("top", &format!("{}px", f64::from(b.depth) * LEVEL_PX));
        let _ = style.set_property("background", &colour(&n.name));
        // Text only where a few letters fit.
        if (b.x1 - b.x0) * width_px > 24.0 {
            div.set_text_content(Some(&n.name));
        }
        div.set_title(&n.name);
        let _ = els.graph.append_child(&div);
        depth = depth.max(b.depth);
    }
    // A spacer so the scroll height holds every level.
    if let Ok(spacer) = doc.create_element("div") {
        if let Ok(spacer) = spacer.dyn_into::<HtmlElement>() {
            let _ = spacer.style().set_property("height", &format!("{}px", f64::from(depth + 1) * LEVEL_PX + 4.0));
            let _ = els.graph.append_child(&spacer);
        }
    }
}
