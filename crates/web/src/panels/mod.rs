//! The analysis panel beside the timeline: insights (iterations, growth, memory carried across
//! iterations, out-of-memory explanations), the live set at a moment, and exports.
//!
//! The panel's DOM is written from the state by [`sync`] (called by each frame) and only when
//! what it shows changed. Clicks inside it are read from `data-act` attributes by one delegated
//! listener and arrive as [`Action`]s through [`crate::input::Input::Analysis`]. What a finding
//! or a row names is outlined on the timeline by [`draw_highlight`].

pub mod categories;
pub mod chart;
pub mod compare;
pub mod export;
pub mod insights;
pub mod live;

use std::cell::{Ref, RefCell};

use gloo_events::EventListener;
use memviz_core::analysis::fragmentation::{fragmentation_with_track, FragSeries, FragTrack};
use memviz_core::analysis::growth::{self, Insights};
use memviz_core::analysis::live::{self as core_live, LiveSet};
use memviz_core::analysis::{Moment, Replay};
use memviz_core::timeline::Mode;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, Element, HtmlElement, MouseEvent};

use crate::app::{App, Ui};
use crate::input::Input;

/// Points of the fragmentation chart at most.
const FRAG_POINTS: usize = 600;

/// Fill of highlighted allocations.
pub const HIGHLIGHT_FILL: &str = "#c2185b";

/// Which part of the panel is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Tab {
    /// Findings and out-of-memory explanations.
    #[default]
    Insights,
    /// The live set at a moment, with exports.
    Live,
    /// This file against another open file.
    Compare,
    /// Memory by category (inferred).
    Categories,
}

/// What the user asked of the panel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Show or hide the panel.
    Toggle,
    /// Show a tab.
    Tab(Tab),
    /// Highlight the elements of a finding (index into [`Insights::findings`]).
    Finding(usize),
    /// Highlight the holders of an out-of-memory report (index into [`Insights::ooms`]).
    OomHolders(usize),
    /// Highlight the live allocations of a site (index into [`LiveSet::by_site`]).
    Site(usize),
    /// Highlight the live allocations under a tree node.
    Node(u32),
    /// Forget the highlight.
    ClearHighlight,
    /// Live set at the peak.
    LiveAtPeak,
    /// Live set at the centre of the visible window.
    LiveAtCentre,
    /// Live set at a plot x (CSS px), from a Shift+click on the timeline.
    LiveAtPx(f64),
    /// Download something.
    Export(export::Kind),
    /// Compare with another open file (index into the files).
    CompareWith(usize),
    /// Colour the timeline by inferred category, or stop.
    CategoryColour,
    /// Close the profiler memory timeline.
    CategoryClose,
    /// Pointer over the category chart at x (CSS px), or gone.
    CategoryHover(Option<f64>),
}

/// Elements outlined on the timeline, and what named them.
#[derive(Clone, Debug, PartialEq)]
pub struct Highlight {
    /// `data-key` of the row that named them (`finding:2`, `site:0`).
    pub key: String,
    /// Timeline element indices.
    pub elements: Vec<u32>,
}

/// What the analyses found for one device of one file.
pub struct Analysis {
    /// (file index, device position).
    pub key: (usize, usize),
    /// Lifetimes and live bytes.
    pub replay: Replay,
    /// Findings.
    pub insights: Insights,
    /// Reserved, allocated and the largest free block over time, sampled.
    pub fragmentation: FragSeries,
    /// The same after every entry, for drawing any window of the timeline.
    pub frag_track: FragTrack,
    /// The live set at [`Panel::moment`].
    pub live: Option<LiveSet>,
    /// The moment `live` is for.
    pub live_moment: Option<Moment>,
}

/// The panel's state.
#[derive(Default)]
pub struct Panel {
    /// Whether it is shown.
    pub open: bool,
    /// The tab shown.
    pub tab: Tab,
    /// Moment of the live set.
    pub moment: Option<Moment>,
    /// What is outlined on the timeline.
    pub highlight: Option<Highlight>,
    /// Changes whenever something the panel draws on the timeline changes.
    pub canvas_seq: usize,
    /// The Compare tab.
    pub compare: compare::State,
    /// Categories: the profiler timeline and the inferred colouring.
    pub categories: categories::State,
    cache: RefCell<Option<Analysis>>,
    frag_chart: RefCell<insights::FragChart>,
    written: RefCell<Option<WrittenKey>>,
    written_highlight: RefCell<Option<String>>,
}

/// What the panel's DOM shows now.
#[derive(Clone, Debug, PartialEq)]
struct WrittenKey {
    open: bool,
    tab: Tab,
    file: Option<(usize, usize)>,
    moment: Option<Moment>,
    files: usize,
    other: Option<usize>,
    colour_inferred: bool,
}

/// The current (file, device position), when the timeline shows allocations.
fn current_key(app: &App) -> Option<(usize, usize)> {
    let i = app.state.current?;
    let f = app.state.files.get(i)?;
    Some((i, f.plot.device_pos))
}

/// The analyses of the current file and device, computed on first use.
pub fn analysis(app: &App) -> Option<Ref<'_, Analysis>> {
    let key = current_key(app)?;
    let f = app.file()?;
    let moment = app.analysis.moment.unwrap_or(Moment::Peak);
    {
        let mut cache = app.analysis.cache.try_borrow_mut().ok()?;
        if cache.as_ref().is_none_or(|a| a.key != key) {
            let replay = Replay::build(&f.snap, key.1);
            let insights = growth::insights_with(&f.snap, &replay);
            let (fragmentation, frag_track) = fragmentation_with_track(&f.snap, key.1, FRAG_POINTS);
            *cache = Some(Analysis { key, replay, insights, fragmentation, frag_track, live: None, live_moment: None });
        }
        if let Some(a) = cache.as_mut() {
            if a.live_moment != Some(moment) {
                a.live = core_live::live_set(&f.snap, &a.replay, moment).ok();
                a.live_moment = Some(moment);
            }
        }
    }
    let cache = app.analysis.cache.try_borrow().ok()?;
    Ref::filter_map(cache, Option::as_ref).ok()
}

/// Applies an action.
pub fn handle(app: &mut App, action: Action) {
    let p = &mut app.analysis;
    match action {
        Action::Toggle => {
            p.open = !p.open;
        }
        Action::Tab(t) => p.tab = t,
        Action::ClearHighlight => p.highlight = None,
        Action::LiveAtPeak => p.moment = Some(Moment::Peak),
        Action::LiveAtCentre | Action::LiveAtPx(_) => {
            let rect = app.plot_rect();
            let Some(f) = app.file() else { return };
            let v = &f.viewport;
            let pos = match action {
                Action::LiveAtPx(x_px) => v.pos_at(&rect, x_px),
                _ => (v.x0 + v.x1) / 2.0,
            };
            let step = f.xmap().step(pos);
            let m = Moment::at_step(&f.plot.layout, step);
            let p = &mut app.analysis;
            p.moment = Some(m);
            p.open = true;
            p.tab = Tab::Live;
        }
        Action::Finding(_) | Action::OomHolders(_) | Action::Site(_) | Action::Node(_) => {
            let h = analysis(app).and_then(|a| {
                let f = app.file()?;
                highlight_of(&f.snap, &a, action)
            });
            let p = &mut app.analysis;
            // A second click on the same row clears it.
            p.highlight = match h {
                Some(h) if p.highlight.as_ref().map(|o| &o.key) == Some(&h.key) => None,
                other => other,
            };
        }
        Action::Export(kind) => export::run(app, kind),
        Action::CompareWith(i) => p.compare.other = Some(i),
        Action::CategoryColour => {
            p.categories.colour_inferred = !p.categories.colour_inferred;
        }
        Action::CategoryClose => p.categories.close_profile(),
        Action::CategoryHover(x_px) => {
            p.categories.hover_x_px = x_px;
            return;
        }
    }
    app.analysis.canvas_seq += 1;
}

/// The elements a row of the panel names.
fn highlight_of(snap: &memviz_core::snapshot::Snapshot, a: &Analysis, action: Action) -> Option<Highlight> {
    match action {
        Action::Finding(i) => {
            a.insights.findings.get(i).map(|f| Highlight { key: format!("finding:{i}"), elements: f.elements.clone() })
        }
        Action::OomHolders(i) => {
            a.insights.ooms.get(i).map(|o| Highlight { key: format!("oom:{i}"), elements: o.holders.elements.clone() })
        }
        Action::Site(i) => {
            let live = a.live.as_ref()?;
            let site = live.by_site.get(i)?;
            let elements = live
                .elements
                .iter()
                .copied()
                .filter(|&e| {
                    a.replay
                        .lives
                        .get(e as usize)
                        .is_some_and(|l| memviz_core::analysis::life_site_label(snap, l) == site.label)
                })
                .collect();
            Some(Highlight { key: format!("site:{i}"), elements })
        }
        Action::Node(n) => {
            let live = a.live.as_ref()?;
            Some(Highlight { key: format!("node:{n}"), elements: live::elements_under(snap, &a.replay, live, n) })
        }
        _ => None,
    }
}

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

fn by_id(ui: &Ui, id: &str) -> Option<HtmlElement> {
    ui.document.get_element_by_id(id)?.dyn_into().ok()
}

/// Brings the panel's DOM in line with the state (called by each frame).
pub fn sync(app: &App) {
    let ui = &app.ui;
    categories::sync_profile(app);
    let Some(panel) = by_id(ui, "analysis") else {
        return;
    };
    let p = &app.analysis;
    if let Some(t) = by_id(ui, "analysis-toggle") {
        let _ = t.toggle_attribute_with_force("disabled", app.file().is_none());
        let _ = t.class_list().toggle_with_force("active", p.open && app.file().is_some());
    }
    let open = p.open && app.file().is_some();
    let key = WrittenKey {
        open,
        tab: p.tab,
        file: current_key(app),
        moment: p.moment,
        files: app.state.files.len(),
        other: compare::other_of(app),
        colour_inferred: p.categories.colour_inferred,
    };
    if p.written.borrow().as_ref() != Some(&key) {
        panel.set_hidden(!open);
        let html = if open { body_html(app) } else { String::new() };
        panel.set_inner_html(&html);
        if let Ok(mut c) = p.frag_chart.try_borrow_mut() {
            c.reset();
        }
        if open {
            if let Ok(Some(c)) = panel.query_selector("canvas.cmp-chart") {
                if let Ok(c) = c.dyn_into::<web_sys::HtmlCanvasElement>() {
                    compare::draw(app, &c);
                }
            }
        }
        *p.written.borrow_mut() = Some(key);
        *p.written_highlight.borrow_mut() = None;
    }
    if open && p.tab == Tab::Insights {
        insights::sync_fragmentation(app, &panel);
    }
    // The selected row.
    let want = p.highlight.as_ref().map(|h| h.key.clone());
    if *p.written_highlight.borrow() != want {
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
        *p.written_highlight.borrow_mut() = want;
    }
}

fn body_html(app: &App) -> String {
    let p = &app.analysis;
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
    if app.state.files.len() >= 2 {
        s.push_str(&tab(Tab::Compare, "Compare", "tab-compare"));
    }
    s.push_str(&tab(Tab::Categories, "Categories", "tab-categories"));
    s.push_str(
        "<button type=\"button\" class=\"an-close\" data-act=\"toggle\" title=\"Close the panel\">×</button></div>",
    );
    s.push_str("<div class=\"an-body\">");
    match (analysis(app), app.file()) {
        (Some(a), Some(f)) => match p.tab {
            Tab::Insights => insights::html(&f.snap, &a, &mut s),
            Tab::Live => live::html(&f.snap, &a, &mut s),
            Tab::Compare => compare::html(app, &mut s),
            Tab::Categories => categories::html(app, &mut s),
        },
        _ => s.push_str("<p>No snapshot.</p>"),
    }
    s.push_str("</div>");
    s
}

/// Reads a click inside the panel.
fn action_of(e: &MouseEvent) -> Option<Action> {
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
        "cat-colour" => Action::CategoryColour,
        "cat-close" => Action::CategoryClose,
        "finding" => Action::Finding(i()?),
        "oom" => Action::OomHolders(i()?),
        "site" => Action::Site(i()?),
        "node" => Action::Node(u32::try_from(i()?).ok()?),
        "clear" => Action::ClearHighlight,
        "peak" => Action::LiveAtPeak,
        "centre" => Action::LiveAtCentre,
        k => Action::Export(export::Kind::from_value(k)?),
    })
}

/// The panel's listeners: clicks in the panel, the header toggle, Shift+click on the timeline.
pub fn listeners(weak: &std::rc::Weak<RefCell<App>>, ui: &Ui) -> Vec<EventListener> {
    let mut l = Vec::new();
    if let Some(panel) = by_id(ui, "analysis") {
        l.push(crate::app::listen(weak, panel.as_ref(), "click", |e: &MouseEvent| {
            let a = action_of(e)?;
            // <summary> toggles its <details> itself; the row is highlighted as well.
            Some(Input::Analysis(a))
        }));
    }
    if let Some(t) = by_id(ui, "analysis-toggle") {
        l.push(crate::app::listen(weak, t.as_ref(), "click", |_: &MouseEvent| Some(Input::Analysis(Action::Toggle))));
    }
    if let Some(c) = by_id(ui, "cat-timeline") {
        l.push(crate::app::listen(weak, c.as_ref(), "click", |e: &MouseEvent| action_of(e).map(Input::Analysis)));
        l.push(crate::app::listen(weak, c.as_ref(), "mousemove", |e: &MouseEvent| {
            let on_chart = e
                .target()
                .and_then(|t| t.dyn_into::<Element>().ok())
                .is_some_and(|t| t.class_list().contains("cat-chart"));
            Some(Input::Analysis(Action::CategoryHover(on_chart.then(|| f64::from(e.offset_x())))))
        }));
    }
    l.push(crate::app::listen(weak, ui.plot.as_ref(), "click", |e: &MouseEvent| {
        e.shift_key().then(|| Input::Analysis(Action::LiveAtPx(f64::from(e.offset_x()))))
    }));
    l
}

/// Outlines the highlighted elements and marks the live set's moment on the timeline.
pub fn draw_highlight(app: &App, ctx: &CanvasRenderingContext2d) {
    let p = &app.analysis;
    categories::draw_colours(app, ctx);
    let Some(f) = app.file() else { return };
    if app.state.view.mode() != Mode::Allocations || !p.open && p.highlight.is_none() {
        return;
    }
    let dpr = app.state.dpr;
    let plot = crate::render::PlotDev::new(f, app.plot_rect(), dpr).reusing(&app.memo.frame);
    let (rect, layout) = (plot.rect, plot.layout);
    plot.clip(ctx);
    if let Some(h) = &p.highlight {
        // Everything else fades; what the row names is drawn in one strong colour.
        ctx.set_fill_style_str("rgba(255, 255, 255, 0.72)");
        ctx.fill_rect(rect.left_px * dpr, rect.top_px * dpr, rect.width_px * dpr, rect.height_px * dpr);
        ctx.set_fill_style_str(HIGHLIGHT_FILL);
        ctx.set_stroke_style_str("#5c0a2e");
        ctx.set_line_width(0.5 * dpr);
        let bands: Vec<u32> =
            h.elements.iter().filter_map(|&e| layout.elements.get(e as usize).and_then(|el| el.band)).collect();
        plot.trace_bands(ctx, &bands, |_| {
            ctx.fill();
            ctx.stroke();
        });
    }
    // The live set's moment.
    if p.open && p.tab == Tab::Live {
        let row = p.cache.borrow().as_ref().and_then(|a| a.live.as_ref().and_then(|l| l.row));
        if let Some(row) = row {
            let step = layout.step_of_row(row).unwrap_or_else(|| layout.step_for_row(row));
            let (x, _) = plot.to_dev(f64::from(step), 0.0);
            ctx.set_stroke_style_str("#6a3d9a");
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
