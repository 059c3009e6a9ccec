//! Search and filter of the timeline views: an address-label box, a frame-text box and a size
//! range. Matches are outlined on the canvas and counted. Frame text is prepared once per file
//! ([`StackTexts`]); a keystroke costs one substring test per element.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use gloo_events::EventListener;
use memviz_core::search::{Query, StackTexts};
use memviz_core::timeline::Mode;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, Document, HtmlElement, HtmlInputElement};

use crate::app::App;

/// Outline of a match.
const MATCH_STROKE: &str = "#d81b60";
/// Fill of a match.
const MATCH_FILL: &str = "rgba(216, 27, 96, 0.35)";

/// Frame text per stack: (file index, file name, texts).
type TextCache = Option<(usize, String, Rc<StackTexts>)>;
/// Matches: (file index, layout generation, query, elements, how many of them are drawn).
type MatchCache = Option<(usize, usize, Query, Rc<Vec<u32>>, usize)>;

struct Els {
    addr: HtmlInputElement,
    frame: HtmlInputElement,
    min: HtmlInputElement,
    max: HtmlInputElement,
    count: HtmlElement,
}

/// State of the search boxes.
#[derive(Default)]
pub struct Search {
    els: Option<Els>,
    /// The query in the boxes.
    pub query: Query,
    /// Frame text per stack: (file index, file name, texts).
    texts: RefCell<TextCache>,
    /// Matches: (file index, layout generation, query, elements).
    matches: RefCell<MatchCache>,
    /// Count text written.
    drawn_count: RefCell<Option<String>>,
}

fn input(document: &Document, id: &str, placeholder: &str, title: &str, width_px: u32) -> Option<HtmlInputElement> {
    let i: HtmlInputElement = document.create_element("input").ok()?.dyn_into().ok()?;
    i.set_id(id);
    i.set_type("search");
    i.set_placeholder(placeholder);
    i.set_title(title);
    i.set_attribute("size", &width_px.to_string()).ok()?;
    i.set_attribute("spellcheck", "false").ok()?;
    Some(i)
}

fn build(document: &Document) -> Option<(HtmlElement, Els)> {
    let bar = document.get_element_by_id("statusbar")?;
    let wrap: HtmlElement = document.create_element("span").ok()?.dyn_into().ok()?;
    wrap.set_id("search");
    let addr = input(
        document,
        "search-addr",
        "address b7f…_3",
        "Address label of an allocation (b<address>_<version>), or part of one",
        14,
    )?;
    let frame =
        input(document, "search-frame", "frame text", "Part of a frame of the allocation's stack (any case)", 14)?;
    let min = input(document, "search-min", "min size", "Smallest size, e.g. 4096, 512KiB, 1MiB", 7)?;
    let max = input(document, "search-max", "max size", "Largest size, e.g. 4096, 512KiB, 1MiB", 7)?;
    let count: HtmlElement = document.create_element("span").ok()?.dyn_into().ok()?;
    count.set_id("search-count");
    for el in [addr.as_ref(), frame.as_ref(), min.as_ref(), max.as_ref(), count.as_ref()] {
        let el: &web_sys::Node = el;
        wrap.append_child(el).ok()?;
    }
    let before = document.get_element_by_id("progress");
    bar.insert_before(&wrap, before.as_ref().map(|e| e.as_ref())).ok()?;
    Some((wrap, Els { addr, frame, min, max, count }))
}

/// Creates the boxes and their listeners.
pub fn install(weak: &Weak<RefCell<App>>, app: &mut App) -> Vec<EventListener> {
    let mut l = Vec::new();
    let Some((wrap, els)) = build(&app.ui.document) else { return l };
    let w = weak.clone();
    let target: &web_sys::EventTarget = wrap.as_ref();
    l.push(EventListener::new(target, "input", move |_| {
        let Some(rc) = w.upgrade() else { return };
        let Ok(mut app) = rc.try_borrow_mut() else { return };
        on_input(&mut app);
    }));
    app.search.els = Some(els);
    l
}

fn on_input(app: &mut App) {
    let Some(e) = &app.search.els else { return };
    let q = Query::new(&e.addr.value(), &e.frame.value(), &e.min.value(), &e.max.value());
    if q != app.search.query {
        app.search.query = q;
        *app.memo.canvas.borrow_mut() = None;
        app.request_redraw();
    }
}

/// Elements of the shown layout that match, and how many of them are drawn (the others are in
/// the summarized band), computed once per (file, layout, query).
pub fn matches(app: &App) -> Option<(Rc<Vec<u32>>, usize)> {
    let s = &app.search;
    if s.query.is_empty() {
        return None;
    }
    let i = app.state.current?;
    let f = app.file()?;
    if let Some((fi, g, q, m, drawn)) = s.matches.borrow().as_ref() {
        if *fi == i && *g == app.generation && *q == s.query {
            return Some((Rc::clone(m), *drawn));
        }
    }
    let texts = {
        let mut t = s.texts.borrow_mut();
        match t.as_ref() {
            Some((fi, name, texts)) if *fi == i && *name == f.name => Rc::clone(texts),
            _ => {
                let texts = Rc::new(StackTexts::build(&f.snap));
                *t = Some((i, f.name.clone(), Rc::clone(&texts)));
                texts
            }
        }
    };
    let layout = &f.plot.layout;
    let prefix = if layout.options.mode == Mode::Allocations { 'b' } else { 's' };
    let m = Rc::new(s.query.matching(layout, prefix, &texts));
    let drawn = m.iter().filter(|&&e| layout.elements.get(e as usize).is_some_and(|el| el.band.is_some())).count();
    *s.matches.borrow_mut() = Some((i, app.generation, s.query.clone(), Rc::clone(&m), drawn));
    Some((m, drawn))
}

/// The count shown beside the boxes: `N matches`, or `N matches (M drawn)` when some of them
/// are summarized.
pub fn count_text(matches: usize, drawn: usize) -> String {
    let noun = if matches == 1 { "match" } else { "matches" };
    if drawn < matches {
        format!("{matches} {noun} ({drawn} drawn)")
    } else {
        format!("{matches} {noun}")
    }
}

/// Writes the count and outlines the matches on the timeline.
pub fn draw(app: &App, ctx: &CanvasRenderingContext2d) {
    let Some(els) = &app.search.els else { return };
    // Matches among the small allocations merged into the summarized band are counted too, but
    // only the drawn ones can be outlined: the count says how many of them are drawn.
    let (found, drawn) = match if app.state.view.is_panel() { None } else { matches(app) } {
        Some((m, d)) => (Some(m), d),
        None => (None, 0),
    };
    let text = match &found {
        None => String::new(),
        Some(m) => count_text(m.len(), drawn),
    };
    if app.search.drawn_count.borrow().as_deref() != Some(text.as_str()) {
        els.count.set_text_content(Some(&text));
        let title = match &found {
            Some(m) if m.len() > drawn => format!(
                "{} of the matches are drawn and outlined; the other {} are small allocations summarized into one band (raise Detail to draw them).",
                drawn,
                m.len() - drawn
            ),
            _ => String::new(),
        };
        els.count.set_title(&title);
        let _ = app
            .ui
            .plot
            .set_attribute("data-search-matches", &found.as_ref().map_or(String::new(), |m| m.len().to_string()));
        let _ = app
            .ui
            .plot
            .set_attribute("data-search-drawn", &found.as_ref().map_or(String::new(), |_| drawn.to_string()));
        *app.search.drawn_count.borrow_mut() = Some(text);
    }
    let (Some(m), Some(f)) = (found, app.file()) else { return };
    let plot = crate::render::PlotDev::new(f, app.plot_rect(), app.state.dpr).reusing(&app.memo.frame);
    plot.clip(ctx);
    ctx.set_fill_style_str(MATCH_FILL);
    ctx.set_stroke_style_str(MATCH_STROKE);
    ctx.set_line_width(2.0 * app.state.dpr);
    let layout = plot.layout;
    let bands: Vec<u32> = m
        .iter()
        .filter_map(|&e| layout.elements.get(e as usize).and_then(|el| el.band))
        .filter(|&b| {
            let (a, z) = layout.band_step_range(b);
            f64::from(z) >= plot.s_left && f64::from(a) <= plot.s_right
        })
        .collect();
    plot.trace_bands(ctx, &bands, |_| {
        ctx.fill();
        ctx.stroke();
    });
    ctx.restore();
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn counts_say_how_many_are_drawn() {
        assert_eq!(count_text(0, 0), "0 matches");
        assert_eq!(count_text(1, 1), "1 match");
        assert_eq!(count_text(1, 0), "1 match (0 drawn)");
        assert_eq!(count_text(12, 12), "12 matches");
        assert_eq!(count_text(12, 5), "12 matches (5 drawn)");
    }
}
