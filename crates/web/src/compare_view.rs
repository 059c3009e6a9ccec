//! The Compare view in the page (`#compare`): the file shown (A) above the file it is compared
//! with (B), both Active Memory Timelines on one aligned x axis, and between them the two total
//! curves with their difference shaded and each iteration's peak difference labelled; the
//! verdict on top; one window, one zoom and one cursor for all three
//! ([`memviz_view::state::compare_view`]). Here: the bindings that turn the toolbar's button, the
//! two file menus, the swap and PNG buttons and the pointer over the charts into
//! [`memviz_view::state::compare_view::CompareInput`]s, and the page around the charts (shown or
//! not, the menus, the verdict); the charts are painted by `render::compare`.

use memviz_core::analysis::compare::Comparison;
use memviz_view::names::menu_names;
use memviz_view::state::compare_view::{CompareInput, OnTimeline};
use memviz_view::state::PageInput;
use wasm_bindgen::JsCast;
use web_sys::{HtmlCanvasElement, HtmlElement, HtmlSelectElement, PointerEvent, WheelEvent};

use crate::dom::find;
use crate::input::{bind, Binding, Input};
use crate::paint::Frame;

/// The charts' left and right margins (CSS px): room for the byte labels on the left.
pub const LEFT_PX: f64 = 78.0;
/// The right margin.
pub const RIGHT_PX: f64 = 14.0;
/// The charts' top margin (CSS px): room for a name or the iterations' labels.
pub const TOP_PX: f64 = 18.0;
/// The timelines' bottom margin.
pub const BOTTOM_PX: f64 = 6.0;

/// What the page around the charts was written from last.
#[derive(Default)]
pub struct Memo {
    options: Option<String>,
    /// The table of differences: (pair, point, row picked).
    table: Option<String>,
}

/// The pointer's place over a chart, as a share of its plot area's width.
fn share_at(e: &web_sys::MouseEvent) -> f64 {
    let width =
        e.target().and_then(|t| t.dyn_into::<HtmlElement>().ok()).map_or(1.0, |el| f64::from(el.client_width()));
    ((f64::from(e.offset_x()) - LEFT_PX) / (width - LEFT_PX - RIGHT_PX).max(1.0)).clamp(0.0, 1.0)
}

/// The pointer's height over a timeline's plot area, as a share of it (0 bottom, 1 top).
fn share_up(e: &web_sys::MouseEvent) -> f64 {
    let height =
        e.target().and_then(|t| t.dyn_into::<HtmlElement>().ok()).map_or(1.0, |el| f64::from(el.client_height()));
    let plot = (height - TOP_PX - BOTTOM_PX).max(1.0);
    ((height - BOTTOM_PX - f64::from(e.offset_y())) / plot).clamp(0.0, 1.0)
}

fn compare(c: CompareInput) -> Option<Input> {
    Some(Input::Page(PageInput::Compare(c)))
}

/// The toolbar's button, the menus, the swap button, and the pointer over the three charts.
pub fn bindings(doc: &web_sys::Document) -> Vec<Binding> {
    let mut l = Vec::new();
    if let Some(b) = find::<HtmlElement>(doc, "compare-toggle") {
        l.push(bind(b.as_ref(), "click", |_: &web_sys::Event| Some(Input::Page(PageInput::ToggleCompare))));
    }
    if let Some(b) = find::<HtmlElement>(doc, "cmp-png") {
        let export = PageInput::Analysis(memviz_view::state::panels::Action::Export(
            memviz_view::state::panels::ExportKind::Png,
        ));
        l.push(bind(b.as_ref(), "click", move |_: &web_sys::Event| Some(Input::Page(export.clone()))));
    }
    if let Some(b) = find::<HtmlElement>(doc, "cmp-swap") {
        l.push(bind(b.as_ref(), "click", |_: &web_sys::Event| compare(CompareInput::Swap)));
    }
    for (id, is_a) in [("cmp-a", true), ("cmp-b", false)] {
        let Some(sel) = find::<HtmlSelectElement>(doc, id) else { continue };
        let s = sel.clone();
        l.push(bind(sel.as_ref(), "change", move |_: &web_sys::Event| {
            let i: usize = s.value().parse().ok()?;
            if is_a {
                Some(Input::Page(PageInput::SelectFile(i)))
            } else {
                compare(CompareInput::SelectB(i))
            }
        }));
    }
    if let Some(t) = find::<HtmlElement>(doc, "cmp-table") {
        // A row of the table: its allocations marked in both timelines.
        l.push(bind(t.as_ref(), "click", |e: &web_sys::MouseEvent| {
            crate::panels::action_of(e).map(|a| Input::Page(PageInput::Analysis(a)))
        }));
    }
    for id in ["cmp-plot-a", "cmp-diff", "cmp-plot-b"] {
        let Some(c) = find::<HtmlCanvasElement>(doc, id) else { continue };
        let timeline = match id {
            "cmp-plot-a" => Some(false),
            "cmp-plot-b" => Some(true),
            _ => None,
        };
        let t: &web_sys::EventTarget = c.as_ref();
        l.push(bind(t, "wheel", |e: &WheelEvent| {
            e.prevent_default();
            let dy = if e.delta_y() != 0.0 { e.delta_y() } else { e.delta_x() };
            compare(CompareInput::Wheel {
                at: share_at(e),
                delta_y_px: memviz_view::keys::wheel_delta_px(dy, e.delta_mode()),
            })
        }));
        l.push(bind(t, "pointerdown", |e: &PointerEvent| {
            if let Some(el) = e.target().and_then(|t| t.dyn_into::<HtmlElement>().ok()) {
                let _ = el.set_pointer_capture(e.pointer_id());
            }
            compare(CompareInput::Down { at: share_at(e) })
        }));
        l.push(bind(t, "pointermove", move |e: &PointerEvent| {
            let on = timeline.map(|b| OnTimeline { b, up: share_up(e) });
            compare(CompareInput::Move { at: share_at(e), on })
        }));
        l.push(bind(t, "pointerup", |_: &PointerEvent| compare(CompareInput::Up)));
        l.push(bind(t, "pointerleave", |_: &PointerEvent| compare(CompareInput::Leave)));
        l.push(bind(t, "dblclick", |_: &web_sys::MouseEvent| compare(CompareInput::Reset)));
    }
    l
}

/// Shows or hides the view and the toolbar's button, and fills the two menus and the verdict.
pub fn sync(fr: &Frame<'_>, memo: &mut Memo) {
    let doc = &fr.ui.document;
    let shown = fr.state.compare_shown();
    for classes in [Some(fr.ui.main.class_list()), doc.body().map(|b| b.class_list())].into_iter().flatten() {
        let _ = if shown { classes.add_1("compare-shown") } else { classes.remove_1("compare-shown") };
    }
    if let Some(b) = find::<HtmlElement>(doc, "compare-toggle") {
        // Within a run, the overview's own buttons compare (the header keeps one row).
        b.set_hidden(!shown && (fr.state.files().len() < 2 || fr.state.run().is_some()));
        b.set_text_content(Some(if shown { "Timeline" } else { "Compare" }));
    }
    if !shown {
        return;
    }
    let Some((a, b)) = fr.state.compare_pair() else { return };
    let names = menu_names(&fr.state.files().iter().map(|f| f.name.clone()).collect::<Vec<_>>(), 48);
    let key = format!("{a}/{b}/{}", names.join("\u{1}"));
    if memo.options.as_deref() != Some(key.as_str()) {
        for (id, chosen) in [("cmp-a", a), ("cmp-b", b)] {
            let Some(sel) = find::<HtmlSelectElement>(doc, id) else { continue };
            let mut html = String::new();
            for (i, n) in names.iter().enumerate() {
                let full = fr.state.files().get(i).map_or("", |f| f.name.as_str());
                html.push_str(&format!(
                    "<option value=\"{i}\" title=\"{}\"{}>{}</option>",
                    memviz_core::format::escape_html(full),
                    if i == chosen { " selected" } else { "" },
                    memviz_core::format::escape_html(n)
                ));
            }
            sel.set_inner_html(&html);
        }
        memo.options = Some(key);
    }
    let c = fr.derived.view_comparison_of(fr.state);
    if let Some(p) = find::<HtmlElement>(doc, "cmp-verdict") {
        let text = c.map_or_else(|| "Comparing…".to_string(), Comparison::verdict);
        if p.text_content().as_deref() != Some(text.as_str()) {
            p.set_text_content(Some(&text));
        }
    }
    if let Some(p) = find::<HtmlElement>(doc, "cmp-parting") {
        let marks = fr.derived.view_parting_of(fr.state);
        let moment = c.and_then(memviz_view::state::compare_view::parting_moment).map(|m| m.2);
        let text = match (marks, moment) {
            (Some(m), Some(moment)) => format!(
                "Marked on both timelines: at the {moment}, the allocations with no counterpart in the other file (none of the same source line and size live then; A: {}, B: {}).",
                m[0].len(),
                m[1].len()
            ),
            _ => String::new(),
        };
        if p.text_content().as_deref() != Some(text.as_str()) {
            p.set_text_content(Some(&text));
        }
    }
    sync_table(fr, c, memo);
    sync_picked(fr);
    if let Some(p) = find::<HtmlElement>(doc, "cmp-aligned") {
        let text = c.map(|c| format!("Aligned {}", c.alignment_text())).unwrap_or_default();
        if p.text_content().as_deref() != Some(text.as_str()) {
            p.set_text_content(Some(&text));
        }
    }
}

/// The table of differences at the moment the verdict rests on, under the charts; a click on a
/// row marks its allocations in both timelines.
fn sync_table(fr: &Frame<'_>, c: Option<&Comparison>, memo: &mut Memo) {
    use memviz_view::state::compare_view::parting_point;
    let Some(t) = find::<HtmlElement>(&fr.ui.document, "cmp-table") else { return };
    let point = c.and_then(parting_point);
    let picked = fr.state.compare_picked();
    let key = format!("{:?}/{point:?}/{picked:?}/{}", fr.state.compare_pair(), c.is_some());
    if memo.table.as_deref() == Some(key.as_str()) {
        return;
    }
    memo.table = Some(key);
    let (Some(c), Some(k)) = (c, point) else {
        t.set_inner_html("");
        return;
    };
    let Some(p) = c.points.get(k) else { return };
    let mut s = format!(
        "<p class=\"cmp-table-title\">What differs at the {} (click a row to mark its allocations on both timelines)</p><div class=\"cmp-tables\">",
        crate::panels::esc(&p.label)
    );
    for (name, class, diffs, more_in_b) in
        [("More in B", "cmp-more-b", &p.more_in_b, true), ("More in A", "cmp-more-a", &p.more_in_a, false)]
    {
        s.push_str("<div>");
        let rows = crate::panels::compare::Rows {
            point: k,
            more_in_b,
            grouped: None,
            picked: picked.filter(|r| r.point == k && r.more_in_b == more_in_b).map(|r| r.i),
        };
        crate::panels::compare::diff_rows(name, class, diffs, &rows, &mut s);
        s.push_str("</div>");
    }
    s.push_str("</div>");
    t.set_inner_html(&s);
}

/// What a picked row marks: its source line, the moment, each file's allocations and bytes.
fn sync_picked(fr: &Frame<'_>) {
    let Some(p) = find::<HtmlElement>(&fr.ui.document, "cmp-picked") else { return };
    let picked = fr.derived.view_picked_of(fr.state);
    let text = picked.as_ref().map_or(String::new(), |m| {
        format!(
            "Marked on both timelines: {} live at the {}: A {} allocations, {}; B {} allocations, {}.",
            m.site,
            m.moment,
            m.elements[0].len(),
            memviz_core::analysis::size_text(m.bytes[0]),
            m.elements[1].len(),
            memviz_core::analysis::size_text(m.bytes[1])
        )
    });
    if p.text_content().as_deref() != Some(text.as_str()) {
        p.set_text_content(Some(&text));
    }
    let attrs = picked.map(|m| {
        (format!("{},{}", m.elements[0].len(), m.elements[1].len()), format!("{},{}", m.bytes[0], m.bytes[1]))
    });
    match attrs {
        Some((counts, bytes)) => {
            let _ = p.set_attribute("data-counts", &counts);
            let _ = p.set_attribute("data-bytes", &bytes);
        }
        None => {
            let _ = p.remove_attribute("data-counts");
            let _ = p.remove_attribute("data-bytes");
        }
    }
}
