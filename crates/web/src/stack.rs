//! The stack panel (`#stack`) in the timeline views and the tooltip at the pointer (`#tip`).
//!
//! The panel shows the pinned target, else the hovered one ([`memviz_view::stack::StackText`]):
//! a header "Pinned … · Esc or × to unpin" while something is pinned, the lines about the
//! target, its Python frames (function first, the user's code in bold, libraries dimmed, each
//! line cut to the panel's width with the recorded frame in its title), and the C++ frames
//! folded behind one button. The trace entries it cites ("allocated at entry 2291") are links
//! that put the timeline's cursor there. It is written once per change of what it shows.
//!
//! The tooltip is one absolutely positioned element over the plot: its text changes only when
//! the hovered target does; a pointer move only moves it (a `transform`, no layout read), to
//! the lower right of the pointer, or to its left or above it near the plot's far edges, so it
//! never covers the point. It is hidden when the pointer leaves the plot and during drags.

use memviz_view::group_at::{group_at, GroupAt};
use memviz_view::stack::{stack_text, tip_lines, FrameKind, FrameRow, StackText};
use memviz_view::state::PageInput;
use memviz_view::state::{Target, TimelineInput};
use wasm_bindgen::JsCast;
use web_sys::HtmlElement;

use crate::dom::Ui;
use crate::input::{bind, Binding, Input};
use crate::paint::Frame;
use crate::panels::{esc, linked};

/// CSS px between the pointer and the tooltip's nearest corner.
const TIP_GAP_PX: f64 = 14.0;

/// What the stack panel shows: (file, layout generation, target shown, pinned, C++ frames
/// listed, coloured by inferred category, the highlighted group's line at the cursor or pin).
pub type StackKey = (usize, usize, Option<Target>, Option<Target>, bool, bool, Option<String>);

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
    let colour = s.analysis().categories.colour_inferred;
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
    let html = match (fr.file(), target) {
        (Some(f), Some(t)) => {
            let pin = s.pinned().map(|p| pin_label(f, p));
            match &pin {
                Some(label) => {
                    let _ = stack.set_attribute("data-pinned", label);
                }
                None => {
                    let _ = stack.remove_attribute("data-pinned");
                }
            }
            let html = panel_html(pin.as_deref(), &stack_text(f, t), s.native_frames_open());
            // Coloured by inferred category: the band's category comes first.
            match t {
                Target::Element(e) => match crate::panels::categories::category_line(fr, e) {
                    Some(line) => format!("<div class=\"stack-category\">{}\n</div>{html}", esc(&line)),
                    None => html,
                },
                _ => html,
            }
        }
        (Some(f), None) => {
            let _ = stack.remove_attribute("data-pinned");
            esc(if f.plot.layout.elements.is_empty() {
                "Nothing to point at in this view."
            } else if f.is_moment() {
                "Point at the column to see a block's size and stack. Click to pin it, Esc to unpin."
            } else {
                "Point at the timeline to see an allocation's size and stack. Click to pin it, Esc to unpin."
            })
        }
        (None, _) => String::new(),
    };
    // The highlighted group's bytes at the cursor or pin come first.
    let html = match &group {
        Some(g) => format!("<div class=\"stack-group\" title=\"{}\">{}\n</div>{html}", esc(&g.exact()), esc(&g.line())),
        None => html,
    };
    stack.set_inner_html(&html);
    let _ = stack.class_list().toggle_with_force("pinned", s.pinned().is_some());
}

/// A target as the test hooks write it (`element:12`, `summarized`, `oom:0`, `annotation:3`).
pub fn target_hook(t: Target) -> String {
    match t {
        Target::Element(e) => format!("element:{e}"),
        Target::Summarized => "summarized".into(),
        Target::Oom(i) => format!("oom:{i}"),
        Target::Annotation(i) => format!("annotation:{i}"),
    }
}

/// What the header calls the pinned target: its address label, or what it is.
fn pin_label(f: &memviz_view::state::OpenFile, t: Target) -> String {
    let p = &f.plot;
    match t {
        Target::Element(e) => p.layout.elements.get(e as usize).map_or_else(String::new, |e| {
            let prefix =
                if matches!(p.layout.options.mode, memviz_core::timeline::Mode::Allocations) { 'b' } else { 's' };
            memviz_core::format::addr_label(prefix, e.addr, e.version)
        }),
        Target::Summarized => "the summarized band".into(),
        Target::Oom(i) => p.ooms.get(i).map_or_else(|| "an OOM".into(), |o| format!("the OOM at entry {}", o.row)),
        Target::Annotation(i) => p.annotations.get(i).map_or_else(|| "an annotation".into(), |a| a.name.clone()),
    }
}

/// The panel's HTML. Text nodes of `\n` between its blocks keep its `textContent` one line per
/// line (they are not drawn: the blocks' parent collapses white space).
pub fn panel_html(pin: Option<&str>, t: &StackText, native_open: bool) -> String {
    let mut h = String::from("<div class=\"stack-doc\">");
    if let Some(label) = pin {
        h += &format!(
            "<div class=\"stack-pin\">Pinned <b>{}</b> · Esc or <button type=\"button\" class=\"unpin\" data-action=\"unpin\" title=\"Unpin (Esc)\" aria-label=\"Unpin\">×</button> to unpin</div>\n",
            linked(label)
        );
    }
    h += "<div class=\"stack-body\">";
    let block = |h: &mut String, class: &str, text: &str| {
        let text = text.strip_suffix('\n').unwrap_or(text);
        if !text.is_empty() {
            // Cited trace entries are links that put the cursor there.
            *h += &format!("<div class=\"{class}\">{}</div>\n", linked(text));
        }
    };
    block(&mut h, "stack-head", &t.head);
    if t.no_frames {
        block(&mut h, "stack-note", memviz_core::describe::NO_FRAMES);
    }
    for r in &t.python {
        h += &frame_html(r);
    }
    if let Some(fold) = t.fold_line(native_open) {
        h += &format!(
            "<div class=\"fold-line\"><button type=\"button\" class=\"fold\" data-action=\"native\" aria-expanded=\"{native_open}\">{}</button></div>\n",
            esc(&fold)
        );
    }
    if native_open {
        for r in &t.native {
            h += &frame_html(r);
        }
    }
    block(&mut h, "stack-tail", &t.tail);
    h += "</div></div>";
    h
}

fn frame_html(r: &FrameRow) -> String {
    let class = match r.kind {
        FrameKind::User => "frame user",
        FrameKind::Library => "frame lib",
        FrameKind::Native => "frame native",
    };
    let mut h = format!("<div class=\"{class}\" title=\"{}\"><span class=\"fn\">{}</span>", esc(&r.full), esc(&r.name));
    if !r.place.is_empty() {
        h += &format!("  <span class=\"at\">{}</span>", esc(&r.place));
    }
    if r.repeats > 0 {
        h += &format!("  <span class=\"rep\">×{}</span>", r.repeats + 1);
    }
    h += "</div>\n";
    for n in &r.notes {
        h += &format!("<div class=\"frame-note\">{}</div>\n", esc(n));
    }
    h
}

/// The tooltip's place for a pointer at (`x_px`, `y_px`) of a plot `w_px` × `h_px`: to the lower
/// right of the pointer, flipped left past 60 % of the width and up past 55 % of the height.
pub fn tip_transform(x_px: f64, y_px: f64, w_px: f64, h_px: f64) -> String {
    let x = if x_px > w_px * 0.6 {
        format!("calc({:.0}px - 100%)", x_px - TIP_GAP_PX)
    } else {
        format!("{:.0}px", x_px + TIP_GAP_PX)
    };
    let y = if y_px > h_px * 0.55 {
        format!("calc({:.0}px - 100%)", y_px - TIP_GAP_PX)
    } else {
        format!("{:.0}px", y_px + TIP_GAP_PX)
    };
    format!("translate({x}, {y})")
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
        let mut h = String::new();
        for (i, l) in lines.iter().enumerate() {
            let class = ["tip-size", "tip-frame", "tip-life"].get(i).copied().unwrap_or("tip-life");
            h += &format!("<div class=\"{class}\">{}</div>\n", esc(l));
        }
        if let Some(g) = &group {
            h += &format!("<div class=\"tip-group\" title=\"{}\">{}</div>\n", esc(&g.exact()), esc(&g.line()));
            let _ = el.set_attribute("data-group-bytes", &g.bytes.to_string());
        } else {
            let _ = el.remove_attribute("data-group-bytes");
        }
        el.set_inner_html(&h);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tip_keeps_off_the_point() {
        assert_eq!(tip_transform(100.0, 50.0, 1000.0, 400.0), "translate(114px, 64px)");
        assert_eq!(tip_transform(900.0, 300.0, 1000.0, 400.0), "translate(calc(886px - 100%), calc(286px - 100%))");
    }

    #[test]
    fn the_panel_folds_cpp_frames_behind_one_button_and_escapes_text() {
        let row = |name: &str, kind| FrameRow {
            name: name.into(),
            place: "a/b.py:3".into(),
            full: format!("/x/a/b.py:3:{name}"),
            kind,
            repeats: 0,
            notes: vec![],
        };
        let t = StackText {
            head: "b1_0 1 KiB (1024 bytes) allocation\n".into(),
            python: vec![row("forward<x>", FrameKind::User)],
            native: vec![row("c10::malloc", FrameKind::Native), row("at::empty", FrameKind::Native)],
            ..StackText::default()
        };
        let closed = panel_html(Some("b1_0"), &t, false);
        assert!(closed.contains("Pinned <b>b1_0</b>"));
        assert!(closed.contains("forward&lt;x&gt;"));
        assert!(closed.contains(">+2 C++ frames</button>"));
        assert!(!closed.contains("c10::malloc"));
        let open = panel_html(None, &t, true);
        assert!(!open.contains("Pinned"));
        assert!(open.contains("c10::malloc") && open.contains(">hide 2 C++ frames</button>"));
        assert!(open.find("forward").unwrap_or(usize::MAX) < open.find("c10::malloc").unwrap_or(0));
    }
}
