//! The rank overview of a training run (`#ranks`) in the page: its markup
//! ([`memviz_view::ranks_markup`]: how ranks were told apart, progress, bars, curves, what
//! differs) is written when the run's generation or focus changed, and `memviz:ranks-ready` is
//! marked once every rank's bar is shown. Its bindings turn a click on a rank into
//! [`PageInput::FocusRank`] and a "compare" button into [`PageInput::CompareRank`]. Geometry,
//! outliers and focus are [`memviz_view::ranks`].

use memviz_view::state::PageInput;
use wasm_bindgen::JsCast;
use web_sys::Element;

use crate::input::{bind, Binding, Input};
use crate::paint::Frame;

/// What the overview wrote last.
#[derive(Default)]
pub struct Memo {
    /// What was painted last.
    painted: Option<Painted>,
    /// The run whose `memviz:ranks-ready` was marked (runs are numbered by the page).
    ready_marked: Option<u64>,
}

/// What a click on the overview asks: to compare a rank with the median one (a button's
/// `data-compare`), else to focus the rank of the nearest element with a `data-index`.
fn clicked(e: &web_sys::MouseEvent) -> Option<Input> {
    let el: Element = e.target()?.dyn_into().ok()?;
    if let Some(b) = el.closest("[data-compare]").ok()? {
        return b.get_attribute("data-compare")?.parse().ok().map(PageInput::CompareRank).map(Input::Page);
    }
    el.closest("[data-index]")
        .ok()??
        .get_attribute("data-index")?
        .parse()
        .ok()
        .map(PageInput::FocusRank)
        .map(Input::Page)
}

/// A click on a rank's bar or curve focuses it; the toolbar's button shows or leaves the overview.
pub fn bindings(document: &web_sys::Document) -> Vec<Binding> {
    let mut l = Vec::new();
    if let Some(r) = document.get_element_by_id("ranks") {
        l.push(bind(r.as_ref(), "click", clicked));
    }
    if let Some(b) = document.get_element_by_id("ranks-toggle") {
        l.push(bind(b.as_ref(), "click", |_: &web_sys::Event| Some(Input::Page(PageInput::ToggleOverview))));
    }
    l
}

/// What [`sync`] painted from: the run's (generation, focused, overview shown), and the count
/// of full models in the page.
type Painted = (Option<(u64, Option<usize>, bool)>, usize);

/// Brings `#ranks` and the toolbar's button in line with the state (nothing when it is as
/// painted, so a frame of the timeline costs no DOM call here).
pub fn sync(fr: &Frame<'_>, memo: &mut Memo) {
    let doc = &fr.ui.document;
    let run = fr.state.run();
    let key: Painted = (run.map(|r| (r.generation, r.focused, r.overview)), fr.state.files().len());
    if memo.painted == Some(key) {
        return;
    }
    let before = memo.painted.replace(key);
    let _ = fr.ui.main.set_attribute("data-resident-models", &key.1.to_string());
    let shown = fr.state.overview_shown();
    let classes = fr.ui.main.class_list();
    let _ = if shown { classes.add_1("ranks-shown") } else { classes.remove_1("ranks-shown") };
    if let Some(b) = doc.get_element_by_id("ranks-toggle") {
        let _ = if run.is_some() { b.remove_attribute("hidden") } else { b.set_attribute("hidden", "") };
        b.set_text_content(Some(if shown { "Timeline" } else { "Ranks" }));
    }
    let Some(section) = doc.get_element_by_id("ranks") else { return };
    let Some(run) = run else {
        if before.is_some_and(|b| b.0.is_some()) {
            section.set_inner_html("");
        }
        return;
    };
    let was = before.and_then(|b| b.0);
    if was.map(|w| (w.0, w.1)) != Some((run.generation, run.focused)) {
        let html = memviz_view::ranks_markup::overview_html(run);
        section.set_inner_html(&html);
        let _ = section.set_attribute("data-all-read", if run.all_done() { "1" } else { "0" });
    }
    if run.all_done() && memo.ready_marked != Some(run.id) {
        memo.ready_marked = Some(run.id);
        fr.ui.mark("memviz:ranks-ready");
    }
}
