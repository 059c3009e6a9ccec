//! The HTML the page writes for the stack panel and the tooltip at the pointer, and the links
//! of cited trace entries everywhere: strings made from the state, so that what they say is
//! tested here and the page only puts them into the DOM.
//!
//! The panel shows the pinned target, else the hovered one ([`crate::stack::StackText`]): a header
//! "Pinned … · Esc or × to unpin" while something is pinned, the lines about the target, its
//! Python frames (the user's code marked `user`, libraries `lib`, the recorded frame in each
//! row's title), and the C++ frames folded behind one button. Text nodes of `\n` between its
//! blocks keep its `textContent` one line per line (the blocks' parent collapses white space).

use crate::group_at::GroupAt;
use crate::stack::{stack_text, FrameKind, FrameRow, StackText};
use crate::state::{OpenFile, Target};

/// Escapes text for HTML (text and attribute values alike).
pub use memviz_core::format::escape_html as esc;

/// CSS px between the pointer and the tooltip's nearest corner.
pub const TIP_GAP_PX: f64 = 14.0;

/// Escapes text for HTML, each cited trace entry ("entry 2302", "entries 0..1996") a button
/// that puts the cursor on the timeline there ([`entry_link`]).
pub fn linked(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 64);
    let mut at = 0;
    for r in crate::entries::entry_refs(s) {
        o.push_str(&esc(&s[at..r.start]));
        o.push_str(&entry_link(r.entry, &s[r.start..r.end]));
        at = r.end;
    }
    o.push_str(&esc(&s[at..]));
    o
}

/// A button for trace entry `entry` that reads `text` (`data-act="entry"`).
pub fn entry_link(entry: u32, text: &str) -> String {
    format!(
        "<button type=\"button\" class=\"entry-link\" data-act=\"entry\" data-i=\"{entry}\" data-entry=\"{entry}\" title=\"Put the cursor on the timeline at entry {entry}\">{}</button>",
        esc(text)
    )
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

/// What the panel's header calls the pinned target: its address label, or what it is.
pub fn pin_label(f: &OpenFile, t: Target) -> String {
    let p = &f.plot;
    match t {
        Target::Element(e) => p.layout.element(e).map_or_else(String::new, |e| {
            let prefix =
                if matches!(p.layout.options.mode, memviz_core::timeline::Mode::Allocations) { 'b' } else { 's' };
            memviz_core::format::addr_label(prefix, e.addr, e.version)
        }),
        Target::Summarized => "the summarized band".into(),
        Target::Oom(i) => p.ooms.get(i).map_or_else(|| "an OOM".into(), |o| format!("the OOM at entry {}", o.row)),
        Target::Annotation(i) => p.annotations.get(i).map_or_else(|| "an annotation".into(), |a| a.name.clone()),
    }
}

/// The stack panel as written: its HTML and the pinned target's label (`data-pinned`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackPanel {
    /// The panel's inner HTML.
    pub html: String,
    /// The pinned target's label, when something is pinned.
    pub pinned_label: Option<String>,
}

/// The stack panel of file `f` (none open: empty) for `target` (the pinned one, else the
/// hovered one; none: how to point at something), `pinned` named in its header; the band's
/// inferred category (`category_line`) and the highlighted group's bytes (`group`) first.
pub fn stack_panel(
    f: Option<&OpenFile>,
    target: Option<Target>,
    pinned: Option<Target>,
    native_open: bool,
    category_line: Option<&str>,
    group: Option<&GroupAt>,
) -> StackPanel {
    let mut pinned_label = None;
    let html = match (f, target) {
        (Some(f), Some(t)) => {
            pinned_label = pinned.map(|p| pin_label(f, p));
            let html = panel_html(pinned_label.as_deref(), &stack_text(f, t), native_open);
            match category_line {
                Some(line) => format!("<div class=\"stack-category\">{}\n</div>{html}", esc(line)),
                None => html,
            }
        }
        (Some(f), None) => esc(if f.plot.layout.elements.is_empty() {
            "Nothing to point at in this view."
        } else if f.is_moment() {
            "Point at the column to see a block's size and stack. Click to pin it, Esc to unpin."
        } else {
            "Point at the timeline to see an allocation's size and stack. Click to pin it, Esc to unpin."
        }),
        (None, _) => String::new(),
    };
    let html = match group {
        Some(g) => format!("<div class=\"stack-group\" title=\"{}\">{}\n</div>{html}", esc(&g.exact()), esc(&g.line())),
        None => html,
    };
    StackPanel { html, pinned_label }
}

/// The panel's HTML for one target's text, `pin` named in its header.
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
    if let Some(why) = t.no_frames {
        block(&mut h, "stack-note", why);
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
        FrameKind::Op => "frame op",
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

/// The tooltip's HTML: the target's lines (size, frame, lifetime) and the highlighted group's
/// bytes at the pointer.
pub fn tip_html(lines: &[String], group: Option<&GroupAt>) -> String {
    let mut h = String::new();
    for (i, l) in lines.iter().enumerate() {
        let class = ["tip-size", "tip-frame", "tip-life"].get(i).copied().unwrap_or("tip-life");
        h += &format!("<div class=\"{class}\">{}</div>\n", esc(l));
    }
    if let Some(g) = group {
        h += &format!("<div class=\"tip-group\" title=\"{}\">{}</div>\n", esc(&g.exact()), esc(&g.line()));
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

#[cfg(test)]
#[path = "markup_tests.rs"]
mod tests;
