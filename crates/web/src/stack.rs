//! The stack panel (`#stack`) in the timeline views and the tooltip at the pointer (`#tip`).
//!
//! Both are written from [`memviz_view::markup`]'s HTML (the pinned target, else the hovered one,
//! with its frames and the C++ frames folded behind one button; cited trace entries as links
//! that put the timeline's cursor there), the panel once per change of what it shows.
//!
//! The tooltip is one absolutely positioned element over the plot: its text changes only when
//! the hovered target does; a pointer move only moves it (a `transform`, no layout read), to
//! the lower right of the pointer, or to its left or above it near the plot's far edges, so it
//! never covers the point. It is hidden when the pointer leaves the plot and during drags.

use memviz_view::group_at::{group_at, GroupAt};
use memviz_view::markup::{stack_panel, target_hook, tip_html, tip_transform, StackPanel};
use memviz_view::stack::tip_lines;
use memviz_view::state::PageInput;
use memviz_view::state::{Target, TimelineInput};
use wasm_bindgen::JsCast;
use web_sys::HtmlElement;

use crate::dom::Ui;
use crate::input::{bind, Binding, Input};
use crate::paint::Frame;

/// What the stack panel shows: (file, layout generation, target shown, pinned, C++ frames
/// listed, coloured by inferred category, the highlighted group's line at the cursor or pin).
pub type StackKey = (usize, usize, Option<Target>, Option<Target>, bool, Option<usize>, Option<String>);

/// What the panel and the tooltip show now.
#[derive(Default)]
pub struct Memo {
    /// What the panel shows (none: to be written again).
    stack: Option<StackKey>,
    tip: TipMemo,
}

impl Memo {
    /// The panel is written again in the next frame (something else wrote it).
    pub fn invalidate(&mut self) {
        self.stack = None;
    }
}

/// The tooltip and what it shows now.
#[derive(Default)]
struct TipMemo {
    el: Option<HtmlElement>,
    /// (file, layout generation, target, the highlighted group's line) of the text written.
    text_key: Option<(usize, usize, Option<Target>, Option<String>)>,
    /// The `transform` written.
    transform: String,
    shown: bool,
}

/// Creates the tooltip; the stack panel's clicks (unpin, fold) and what they mean.
pub fn bindings(ui: &Ui, memo: &mut Memo) -> Vec<Binding> {
    let memo = &mut memo.tip;
    if let Some(wrap) = ui.document.get_element_by_id("plot-wrap") {
        if let Some(tip) = ui.document.create_element("div").ok().and_then(|e| e.dyn_into::<HtmlElement>().ok()) {
            tip.set_id("tip");
            let _ = tip.set_attribute("role", "tooltip");
            tip.set_hidden(true);
            if wrap.append_child(&tip).is_ok() {
                memo.el = Some(tip);
            }
        }
    }
    vec![bind(ui.stack.as_ref(), "click", |e: &web_sys::MouseEvent| {
        let el: web_sys::Element = e.target()?.dyn_into().ok()?;
        let action = el.closest("[data-action]").ok()??.get_attribute("data-action")?;
        match action.as_str() {
            "unpin" => Some(Input::Page(PageInput::Timeline(TimelineInput::Unpin))),
            "native" => Some(Input::Page(PageInput::Timeline(TimelineInput::ToggleNativeFrames))),
            _ => None,
        }
    })]
}

/// Brings the stack panel and the tooltip in line with the state (timeline views; the panel
/// views write the panel themselves).
pub fn sync(fr: &Frame<'_>, memo: &mut Memo) {
    sync_tip(fr, &mut memo.tip);
    if fr.state.view().is_panel() {
        let _ = fr.ui.stack.remove_attribute("data-pinned");
        return;
    }
    let s = fr.state;
    let target = s.pinned().or(s.hover());
    // The categories change with the profiler's timeline joined.
    let colour = s.analysis().categories.colour_inferred.then_some(s.analysis().categories.profile_seq);
    let group = memviz_view::group_at::fixed_row(s).and_then(|row| group_at(s, fr.derived, row));
    let group_line = group.as_ref().map(GroupAt::line);
    let key: StackKey = (
        s.current().unwrap_or(usize::MAX),
        s.generation(),
        target,
        s.pinned(),
        s.native_frames_open(),
        colour,
        group_line,
    );
    if memo.stack.as_ref() == Some(&key) {
        return;
    }
    memo.stack = Some(key);
    let stack = &fr.ui.stack;
    // Coloured by inferred category: the band's category comes first.
    let category = match target {
        Some(Target::Element(e)) => crate::panels::categories::category_line(fr, e),
        _ => None,
    };
    let StackPanel { html, pinned_label } =
        stack_panel(fr.file(), target, s.pinned(), s.native_frames_open(), category.as_deref(), group.as_ref());
    match &pinned_label {
        Some(label) => {
            let _ = stack.set_attribute("data-pinned", label);
        }
        None => {
            let _ = stack.remove_attribute("data-pinned");
        }
    }
    stack.set_inner_html(&html);
    let _ = stack.class_list().toggle_with_force("pinned", s.pinned().is_some());
}

fn sync_tip(fr: &Frame<'_>, memo: &mut TipMemo) {
    let Some(el) = &memo.el else { return };
    let s = fr.state;
    // With a group row highlighted, the tip reads that group's bytes where the pointer is, over
    // a band or not.
    let group = memviz_view::group_at::pointer_row(s).and_then(|row| group_at(s, fr.derived, row));
    let at = match (fr.file(), s.last_pointer()) {
        (Some(f), Some((memviz_view::keys::Surface::Plot, x, y)))
            if (s.hover().is_some() || group.is_some())
                && !s.view().is_panel()
                && s.drag().is_none()
                && s.loading().is_none()
                && s.pool_hover().is_none() =>
        {
            Some((f, s.hover(), x, y))
        }
        _ => None,
    };
    let Some((f, t, x, y)) = at else {
        if memo.shown {
            el.set_hidden(true);
            memo.shown = false;
        }
        return;
    };
    let key = (s.current().unwrap_or(usize::MAX), s.generation(), t, group.as_ref().map(GroupAt::line));
    if memo.text_key.as_ref() != Some(&key) {
        let lines = t.map(|t| tip_lines(f, t)).unwrap_or_default();
        if let Some(g) = &group {
            let _ = el.set_attribute("data-group-bytes", &g.bytes.to_string());
        } else {
            let _ = el.remove_attribute("data-group-bytes");
        }
        el.set_inner_html(&tip_html(&lines, group.as_ref()));
        let _ = el.set_attribute("data-target", &t.map_or_else(|| "none".into(), target_hook));
        memo.text_key = Some(key);
    }
    let transform = tip_transform(x, y, s.plot_css().0, s.plot_css().1);
    if memo.transform != transform {
        let _ = el.style().set_property("transform", &transform);
        memo.transform = transform;
    }
    if !memo.shown {
        el.set_hidden(false);
        memo.shown = true;
    }
}
