//! The analysis panel beside the timeline: insights (iterations, growth, memory carried across
//! iterations, out-of-memory explanations), the live set at a moment, and exports.
//!
//! The panel's DOM is written from the state by [`sync`] (called by each frame) and only when
//! what it shows changed. Clicks inside it are read from `data-act` attributes by one delegated
//! listener and arrive as [`Action`]s through [`PageInput::Analysis`]. What a finding
//! or a row names is outlined on the timeline by [`draw_highlight`]; an iteration's row zooms the
//! timeline to it. Findings' texts are escaped, with their `backtick` spans as `<code>` ([`rich`]).

pub mod categories;
pub mod chart;
pub mod colour_by;
pub mod compare;
pub mod export;
pub mod insights;
pub mod live;

use memviz_core::timeline::Mode;
use memviz_view::state::PageInput;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, Element, HtmlElement, MouseEvent};

use crate::dom::Ui;
use crate::input::{bind, Binding, Input};
use crate::paint::{Frame, FrameInfo};
pub use memviz_view::derived::Analysis;
use memviz_view::derived::{current_key, Derived};
pub use memviz_view::state::panels::{Action, ExportKind, Highlight, Tab};
use memviz_view::state::ViewState;

/// What the panel's DOM shows now, and the charts drawn in it.
#[derive(Default)]
pub struct Memo {
    written: Option<WrittenKey>,
    /// The highlight's key the panel's rows and `data-highlight` show (`None`: not written yet).
    written_highlight: Option<Option<String>>,
    frag_chart: insights::FragChart,
    /// The profiler timeline's chart.
    pub categories: categories::Memo,
}

/// What the panel's DOM shows now.
#[derive(Clone, Debug, PartialEq)]
struct WrittenKey {
    open: bool,
    tab: Tab,
    file: Option<(usize, usize)>,
    moment: Option<memviz_core::analysis::Moment>,
    files: usize,
    other: Option<usize>,
    colour_inferred: bool,
    group_by: memviz_core::analysis::grouping::GroupBy,
    colour_by_group: bool,
    compare_by_group: bool,
    library: Vec<String>,
    /// The Compare tab's row picked for the Compare view.
    picked: Option<memviz_view::state::compare_view::PickedRow>,
}

pub use memviz_view::markup::{entry_link, esc, linked};

/// Escapes text for HTML, writes its `backtick` spans as `<code>` (a lone backtick stays) and
/// the trace entries it cites as links ([`linked`]).
pub fn rich(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('`').filter(|&c| c > 0) else { break };
        o.push_str(&linked(&rest[..open]));
        o.push_str("<code>");
        o.push_str(&esc(&after[..close]));
        o.push_str("</code>");
        rest = &after[close + 1..];
    }
    o.push_str(&linked(rest));
    o
}

fn by_id(ui: &Ui, id: &str) -> Option<HtmlElement> {
    ui.document.get_element_by_id(id)?.dyn_into().ok()
}

/// Brings the panel's DOM in line with the state (called by each frame).
pub fn sync(fr: &Frame<'_>, memo: &mut Memo) {
    let ui = fr.ui;
    categories::sync_profile(fr, &mut memo.categories);
    let Some(panel) = by_id(ui, "analysis") else {
        return;
    };
    let p = &fr.state.analysis();
    if let Some(t) = by_id(ui, "analysis-toggle") {
        let _ = t.toggle_attribute_with_force("disabled", fr.file().is_none());
        let _ = t.class_list().toggle_with_force("active", p.open && fr.file().is_some());
    }
    let open = p.open && fr.file().is_some();
    let key = WrittenKey {
        open,
        tab: p.tab,
        file: current_key(fr.state),
        moment: p.moment,
        files: fr.state.files().len(),
        other: p.compare_other(fr.state.current(), fr.state.files().len()),
        colour_inferred: p.categories.colour_inferred,
        group_by: p.group_by.clone(),
        colour_by_group: p.colour_by_group,
        compare_by_group: p.compare_by_group,
        library: p.library().to_vec(),
        picked: fr.state.compare_picked(),
    };
    if memo.written.as_ref() != Some(&key) {
        panel.set_hidden(!open);
        let html = if open { body_html(fr) } else { String::new() };
        panel.set_inner_html(&html);
        memo.frag_chart.reset();
        if open {
            if let Ok(Some(c)) = panel.query_selector("canvas.cmp-chart") {
                if let Ok(c) = c.dyn_into::<web_sys::HtmlCanvasElement>() {
                    compare::draw(fr, &c);
                }
            }
        }
        memo.written = Some(key);
        memo.written_highlight = None;
    }
    if open && p.tab == Tab::Insights {
        insights::sync_fragmentation(fr, &mut memo.frag_chart, &panel);
    }
    // The selected row.
    let want = p.highlight.as_ref().map(|h| h.key.clone());
    if memo.written_highlight.as_ref() != Some(&want) {
        if let Ok(Some(old)) = panel.query_selector(".selected") {
            let _ = old.class_list().remove_1("selected");
        }
        if let Some(k) = &want {
            if let Ok(Some(el)) = panel.query_selector(&format!("[data-key=\"{k}\"]")) {
                let _ = el.class_list().add_1("selected");
            }
        }
        let n = p.highlight.as_ref().map_or(0, |h| h.elements.len());
        let _ = panel.set_attribute("data-highlight", &n.to_string());
        memo.written_highlight = Some(want);
    }
}

fn body_html(fr: &Frame<'_>) -> String {
    let p = &fr.state.analysis();
    let mut s = String::new();
    let tab = |t: Tab, label: &str, act: &str| {
        format!(
            "<button type=\"button\" class=\"tab{}\" data-act=\"{act}\">{label}</button>",
            if p.tab == t { " current" } else { "" }
        )
    };
    s.push_str("<div class=\"an-tabs\">");
    s.push_str(&tab(Tab::Insights, "Insights", "tab-insights"));
    s.push_str(&tab(Tab::Live, "Live set", "tab-live"));
    if fr.state.files().len() >= 2 {
        s.push_str(&tab(Tab::Compare, "Compare", "tab-compare"));
    }
    s.push_str(&tab(Tab::Categories, "Categories", "tab-categories"));
    s.push_str(
        "<button type=\"button\" class=\"an-close\" data-act=\"toggle\" title=\"Close the panel\">×</button></div>",
    );
    s.push_str("<div class=\"an-body\">");
    match (fr.derived.analysis_of(fr.state), fr.file()) {
        (Some(a), Some(f)) => match p.tab {
            Tab::Insights => insights::html(&f.snap, a, &mut s),
            Tab::Live => live::html(&f.snap, a, &p.group_by, p.library(), p.colour_by_group, &mut s),
            Tab::Compare => compare::html(fr, &mut s),
            Tab::Categories => categories::html(fr, &mut s),
        },
        _ => s.push_str("<p>No snapshot.</p>"),
    }
    s.push_str("</div>");
    s
}

/// Reads a click inside the panel (or another list of its rows, such as the Compare view's).
pub fn action_of(e: &MouseEvent) -> Option<Action> {
    let el: Element = e.target()?.dyn_into().ok()?;
    let el = el.closest("[data-act]").ok()??;
    let act = el.get_attribute("data-act")?;
    let i = || el.get_attribute("data-i").and_then(|v| v.parse::<usize>().ok());
    Some(match act.as_str() {
        "toggle" => Action::Toggle,
        "tab-insights" => Action::Tab(Tab::Insights),
        "tab-live" => Action::Tab(Tab::Live),
        "tab-compare" => Action::Tab(Tab::Compare),
        "tab-categories" => Action::Tab(Tab::Categories),
        "compare-with" => Action::CompareWith(i()?),
        "cmp-by-group" => Action::CompareByGroup,
        "cmp-group" => Action::CompareGroup {
            point: el.get_attribute("data-point")?.parse().ok()?,
            more_in_b: el.get_attribute("data-side").as_deref() == Some("b"),
            i: i()?,
        },
        "cmp-row" => Action::CompareRow {
            point: el.get_attribute("data-point")?.parse().ok()?,
            more_in_b: el.get_attribute("data-side").as_deref() == Some("b"),
            i: i()?,
        },
        "cat-colour" => Action::CategoryColour,
        "group-colour" => Action::GroupColour,
        "group-timeline" => Action::GroupTimeline,
        "cat-close" => Action::CategoryClose,
        "cat-show-timeline" => Action::CategoryShowTimeline,
        "cat-show-chart" => Action::CategoryShowChart,
        "finding" => Action::Finding(i()?),
        "oom" => Action::OomHolders(i()?),
        "site" => Action::Site(i()?),
        "group" => Action::Group(i()?),
        "growth" => Action::Growth(i()?),
        "category" => Action::Category(i()?),
        "node" => Action::Node(u32::try_from(i()?).ok()?),
        "clear" => Action::ClearHighlight,
        "peak" => Action::LiveAtPeak,
        "centre" => Action::LiveAtCentre,
        "iteration" => {
            let rows = el.get_attribute("data-rows")?;
            let (a, b) = rows.split_once(',')?;
            Action::ZoomRows { start_row: a.parse().ok()?, end_row: b.parse().ok()? }
        }
        "entry" => Action::Entry(u32::try_from(i()?).ok()?),
        k => Action::Export(ExportKind::from_value(k)?),
    })
}

/// The panel's events: clicks in the panel, the header toggle, Shift+click on the timeline.
pub fn bindings(ui: &Ui) -> Vec<Binding> {
    let mut l = Vec::new();
    if let Some(panel) = by_id(ui, "analysis") {
        l.push(bind(panel.as_ref(), "click", |e: &MouseEvent| {
            let a = action_of(e)?;
            // <summary> toggles its <details> itself; the row is highlighted as well.
            Some(Input::Page(PageInput::Analysis(a)))
        }));
    }
    if let Some(panel) = by_id(ui, "analysis") {
        l.push(bind(panel.as_ref(), "change", live::group_by_choice));
    }
    if let Some(t) = by_id(ui, "analysis-toggle") {
        l.push(bind(t.as_ref(), "click", |_: &MouseEvent| Some(Input::Page(PageInput::Analysis(Action::Toggle)))));
    }
    if let Some(c) = by_id(ui, "cat-timeline") {
        l.push(bind(c.as_ref(), "click", |e: &MouseEvent| action_of(e).map(PageInput::Analysis).map(Input::Page)));
        l.push(bind(c.as_ref(), "mousemove", |e: &MouseEvent| {
            let on_chart = e
                .target()
                .and_then(|t| t.dyn_into::<Element>().ok())
                .is_some_and(|t| t.class_list().contains("cat-chart"));
            Some(Input::Page(PageInput::Analysis(Action::CategoryHover(on_chart.then(|| f64::from(e.offset_x()))))))
        }));
        l.extend(categories::chart_bindings(c.as_ref()));
    }
    l.push(bind(ui.plot.as_ref(), "click", |e: &MouseEvent| {
        e.shift_key().then(|| Input::Page(PageInput::Analysis(Action::LiveAtPx(f64::from(e.offset_x())))))
    }));
    l
}

/// Outlines the highlighted elements and marks the live set's moment and the cursor on a cited
/// entry on the timeline.
pub fn draw_highlight(fr: &Frame<'_>, drawn: &FrameInfo, ctx: &CanvasRenderingContext2d) {
    let p = &fr.state.analysis();
    categories::draw_colours(fr, drawn, ctx);
    colour_by::draw(fr, drawn, ctx);
    draw_cursor(fr, drawn, ctx);
    if p.highlight.is_none() || fr.state.view().mode() != Mode::Allocations {
        let _ = fr.ui.plot.remove_attribute("data-highlighted");
    }
    let Some(f) = fr.file() else { return };
    if fr.state.view().mode() != Mode::Allocations || !p.open && p.highlight.is_none() {
        return;
    }
    let dpr = fr.state.dpr();
    let pal = fr.palette();
    let plot = crate::paint::edges::PlotDev::new(f, fr.plot_rect(), dpr).reusing(drawn);
    let (rect, layout) = (plot.rect, plot.layout);
    plot.clip(ctx);
    if let Some(h) = &p.highlight {
        // Everything else fades; what the row names is drawn in one strong colour.
        ctx.set_fill_style_str(pal.dim);
        ctx.fill_rect(rect.left_px * dpr, rect.top_px * dpr, rect.width_px * dpr, rect.height_px * dpr);
        ctx.set_fill_style_str(pal.highlight_fill);
        ctx.set_stroke_style_str(pal.highlight_stroke);
        ctx.set_line_width(0.5 * dpr);
        let bands: Vec<u32> = h.elements.iter().filter_map(|&e| layout.element(e).and_then(|el| el.band)).collect();
        // How many bands are highlighted (the tests read it).
        let _ = fr.ui.plot.set_attribute("data-highlighted", &bands.len().to_string());
        plot.trace_bands(ctx, &bands, |_| {
            ctx.fill();
            ctx.stroke();
        });
    }
    // The live set's moment.
    if p.open && p.tab == Tab::Live {
        let row = fr.derived.analysis_of(fr.state).and_then(|a| a.live.as_ref().and_then(|l| l.row));
        if let Some(row) = row {
            let step = layout.step_of_row(row).unwrap_or_else(|| layout.step_for_row(row));
            let (x, _) = plot.to_dev(f64::from(step), 0.0);
            ctx.set_stroke_style_str(pal.moment);
            ctx.set_line_width(1.5 * dpr);
            let dash = js_sys::Array::of2(&(4.0 * dpr).into(), &(3.0 * dpr).into());
            let _ = ctx.set_line_dash(&dash);
            ctx.begin_path();
            ctx.move_to(x, rect.top_px * dpr);
            ctx.line_to(x, rect.bottom_px() * dpr);
            ctx.stroke();
        }
    }
    ctx.restore();
}

/// The cursor on a trace entry (a cited entry's link, the keyboard's selection), labelled with
/// the entry, in every view of the timeline and on either x axis.
fn draw_cursor(fr: &Frame<'_>, drawn: &FrameInfo, ctx: &CanvasRenderingContext2d) {
    let at = fr.file().zip(fr.state.cursor_entry()).filter(|(f, _)| !f.is_moment() && !fr.state.view().is_panel());
    let Some((f, entry)) = at else {
        let _ = fr.ui.plot.remove_attribute("data-cursor");
        return;
    };
    let dpr = fr.state.dpr();
    let plot = crate::paint::edges::PlotDev::new(f, fr.plot_rect(), dpr).reusing(drawn);
    let rect = plot.rect;
    let step = memviz_view::entries::step_of_entry(plot.layout, entry);
    let (x, _) = plot.to_dev(step, 0.0);
    if x < rect.left_px * dpr - 0.5 || x > rect.right_px() * dpr + 0.5 {
        let _ = fr.ui.plot.set_attribute("data-cursor", &format!("{entry}:{step}:outside"));
        return;
    }
    let pal = fr.palette();
    plot.clip(ctx);
    ctx.set_stroke_style_str(pal.cursor);
    ctx.set_line_width(1.5 * dpr);
    ctx.begin_path();
    ctx.move_to(x, rect.top_px * dpr);
    ctx.line_to(x, rect.bottom_px() * dpr);
    ctx.stroke();
    let label = memviz_view::entries::cursor_label(entry);
    ctx.set_font(&format!("{}px sans-serif", 11.0 * dpr));
    let w = ctx.measure_text(&label).map_or(80.0 * dpr, |m| m.width());
    let right = rect.right_px() * dpr;
    let lx = if x + 4.0 * dpr + w > right { x - 4.0 * dpr - w } else { x + 4.0 * dpr };
    ctx.set_fill_style_str(pal.cursor_back);
    ctx.fill_rect(lx - 2.0 * dpr, (rect.top_px + 2.0) * dpr, w + 4.0 * dpr, 14.0 * dpr);
    ctx.set_fill_style_str(pal.cursor);
    ctx.set_text_align("left");
    ctx.set_text_baseline("top");
    let _ = ctx.fill_text(&label, lx, (rect.top_px + 3.0) * dpr);
    let _ = fr.ui.plot.set_attribute("data-cursor", &format!("{entry}:{step}:{:.1}", x / dpr));
    ctx.restore();
}

/// Carries out a download the panel asked for.
pub fn export(ui: &Ui, state: &ViewState, derived: &Derived, kind: ExportKind) -> Option<String> {
    export::run(ui, state, derived, kind)
}
