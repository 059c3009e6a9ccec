//! Search and filter of the timeline views: an address-label box, a frame-text box and a size
//! range. Matches are outlined on the canvas (the rest of the plot dimmed), counted with their
//! bytes, and stepped through with `n` / `N` or Enter / Shift+Enter in a box; a size that does not
//! parse is said so beside the boxes. The boxes' text is part of the page's state (and its URL);
//! the matches are derived ([`memviz_view::derived::Derived::matches`]: frame text is prepared once per
//! file, and a keystroke costs one substring test per element).

use memviz_core::format::human_size;
use memviz_view::keys::Command;
use memviz_view::state::panels::SearchBoxes;
use memviz_view::state::PageInput;
use memviz_view::state::TimelineInput;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, Document, HtmlElement, HtmlInputElement};

use crate::input::{bind, Binding, Input};
use crate::paint::{Frame, FrameInfo};

#[derive(Clone)]
struct Els {
    addr: HtmlInputElement,
    frame: HtmlInputElement,
    min: HtmlInputElement,
    max: HtmlInputElement,
    count: HtmlElement,
    /// Bytes of the matches, and which one was stepped to.
    detail: HtmlElement,
    /// What is wrong with a box.
    problem: HtmlElement,
}

impl Els {
    fn boxes(&self) -> SearchBoxes {
        SearchBoxes { addr: self.addr.value(), frame: self.frame.value(), min: self.min.value(), max: self.max.value() }
    }
}

/// The search boxes and the count they show now.
#[derive(Default)]
pub struct Memo {
    els: Option<Els>,
    drawn_count: Option<String>,
    drawn_detail: Option<String>,
    drawn_problem: Option<Option<String>>,
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
    let span = |id: &str| -> Option<HtmlElement> {
        let e: HtmlElement = document.create_element("span").ok()?.dyn_into().ok()?;
        e.set_id(id);
        Some(e)
    };
    let (count, detail, problem) = (span("search-count")?, span("search-detail")?, span("search-problem")?);
    problem.set_hidden(true);
    let _ = problem.set_attribute("role", "alert");
    for el in
        [addr.as_ref(), frame.as_ref(), min.as_ref(), max.as_ref(), count.as_ref(), detail.as_ref(), problem.as_ref()]
    {
        let el: &web_sys::Node = el;
        wrap.append_child(el).ok()?;
    }
    let before = document.get_element_by_id("progress");
    bar.insert_before(&wrap, before.as_ref().map(|e| e.as_ref())).ok()?;
    Some((wrap, Els { addr, frame, min, max, count, detail, problem }))
}

/// Creates the boxes; their events and what they mean.
pub fn bindings(document: &Document, memo: &mut Memo) -> Vec<Binding> {
    let Some((wrap, els)) = build(document) else { return Vec::new() };
    memo.els = Some(els.clone());
    vec![
        bind(wrap.as_ref(), "input", move |_: &web_sys::Event| Some(Input::Page(PageInput::Search(els.boxes())))),
        // Enter steps to the next match, Shift+Enter to the one before.
        bind(wrap.as_ref(), "keydown", |e: &web_sys::KeyboardEvent| {
            if e.key() != "Enter" {
                return None;
            }
            e.prevent_default();
            let c = if e.shift_key() { Command::PrevMatch } else { Command::NextMatch };
            Some(Input::Page(PageInput::Timeline(TimelineInput::Key(c))))
        }),
    ]
}

/// Writes the boxes from the state where they differ (a fragment restored them) and says what is
/// wrong with a size.
fn sync_boxes(fr: &Frame<'_>, memo: &mut Memo) {
    let Some(els) = &memo.els else { return };
    let b = &fr.state.search_boxes();
    for (el, text) in [(&els.addr, &b.addr), (&els.frame, &b.frame), (&els.min, &b.min), (&els.max, &b.max)] {
        if el.value() != *text {
            el.set_value(text);
        }
    }
    let problem = b.problem();
    if memo.drawn_problem.as_ref() != Some(&problem) {
        els.problem.set_text_content(problem.as_deref());
        els.problem.set_hidden(problem.is_none());
        for el in [&els.min, &els.max] {
            let _ = el.set_attribute("aria-invalid", if problem.is_some() { "true" } else { "false" });
        }
        memo.drawn_problem = Some(problem);
    }
}

/// Writes the boxes (where a restored address changed them), the count and the matches' bytes
/// (called by each frame).
pub fn sync(fr: &Frame<'_>, memo: &mut Memo) {
    sync_boxes(fr, memo);
    let Some(els) = &memo.els else { return };
    // Matches among the small allocations merged into the summarized band are counted too, but
    // only the drawn ones can be outlined: the count says how many of them are drawn.
    let (found, drawn) = match fr.derived.matches_of(fr.state) {
        Some(m) => (Some(&m.elements), m.drawn),
        None => (None, 0),
    };
    let text = match &found {
        None => String::new(),
        Some(m) => memviz_view::state::matches::count_text(m.len(), drawn),
    };
    if memo.drawn_count.as_deref() != Some(text.as_str()) {
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
        let _ = fr
            .ui
            .plot
            .set_attribute("data-search-matches", &found.as_ref().map_or(String::new(), |m| m.len().to_string()));
        let _ =
            fr.ui.plot.set_attribute("data-search-drawn", &found.as_ref().map_or(String::new(), |_| drawn.to_string()));
        memo.drawn_count = Some(text);
    }
    let detail = match (fr.derived.matches_of(fr.state), fr.state.search_cursor()) {
        (Some(m), Some(i)) if !m.elements.is_empty() => {
            // The match stepped to, by the trace entry that allocated it (a link to the cursor).
            let entry = m
                .elements
                .get(i.get())
                .and_then(|&e| fr.file()?.plot.layout.element(e)?.alloc_row)
                .map_or_else(String::new, |r| format!(", allocated at entry {r}"));
            format!(
                "· {} · match {} of {}{entry} (n / N)",
                human_size(m.total_bytes as f64),
                i.number(),
                memviz_view::axis::step_label(m.elements.len() as f64)
            )
        }
        (Some(m), _) if !m.elements.is_empty() => {
            format!("· {} · n / N: next / previous", human_size(m.total_bytes as f64))
        }
        _ => String::new(),
    };
    if memo.drawn_detail.as_deref() != Some(detail.as_str()) {
        els.detail.set_inner_html(&crate::panels::linked(&detail));
        memo.drawn_detail = Some(detail);
    }
}

/// Outlines the matches on the timeline, the rest of the plot dimmed.
pub fn draw(fr: &Frame<'_>, frame: &FrameInfo, ctx: &CanvasRenderingContext2d) {
    let (Some(m), Some(f)) = (fr.derived.matches_of(fr.state).map(|m| &m.elements), fr.file()) else { return };
    let plot = crate::paint::edges::PlotDev::new(f, fr.plot_rect(), fr.state.dpr()).reusing(frame);
    plot.clip(ctx);
    // Everything else fades, as a highlight does.
    let r = plot.rect;
    let dpr = fr.state.dpr();
    let pal = fr.palette();
    ctx.set_fill_style_str(pal.dim);
    ctx.fill_rect(r.left_px * dpr, r.top_px * dpr, r.width_px * dpr, r.height_px * dpr);
    ctx.set_fill_style_str(pal.match_fill);
    ctx.set_stroke_style_str(pal.match_stroke);
    ctx.set_line_width(2.0 * fr.state.dpr());
    let layout = plot.layout;
    let bands: Vec<u32> = m
        .iter()
        .filter_map(|&e| layout.element(e).and_then(|el| el.band))
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
