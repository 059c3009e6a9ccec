//! The stack panel's and the tooltip's HTML, and entry links.

#![allow(clippy::expect_used)]

use super::*;
use crate::test_state::open_file;
use memviz_core::timeline::ElementIndex;

static REUSE: &[u8] = include_bytes!("../../../tests/data/synth/segment_reuse.pickle");

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

#[test]
fn cited_entries_become_buttons_and_the_rest_is_escaped() {
    let h = linked("freed at entry 12 <by> entries 3..5");
    assert!(h.starts_with("freed at <button"), "{h}");
    assert!(h.contains("data-entry=\"12\"") && h.contains(">entry 12</button>"), "{h}");
    assert!(h.contains("&lt;by&gt;"), "{h}");
    assert!(h.contains("data-entry=\"3\"") && h.contains(">entries 3..5</button>"), "{h}");
    assert_eq!(linked("no entry here & there"), "no entry here &amp; there");
}

#[test]
fn targets_are_named_for_the_hooks_and_the_pin_header() {
    assert_eq!(target_hook(Target::Element(ElementIndex::new(12))), "element:12");
    assert_eq!(target_hook(Target::Summarized), "summarized");
    assert_eq!(target_hook(Target::Oom(0)), "oom:0");
    assert_eq!(target_hook(Target::Annotation(3)), "annotation:3");
    let f = open_file(REUSE, "reuse.pickle", 100);
    let e = f.plot.layout.elements.first().expect("an element");
    let label = pin_label(&f, Target::Element(ElementIndex::new(0)));
    assert_eq!(label, memviz_core::format::addr_label('b', e.addr, e.version));
    assert_eq!(pin_label(&f, Target::Element(ElementIndex::new(u32::MAX))), "", "no such element");
    assert_eq!(pin_label(&f, Target::Summarized), "the summarized band");
    assert_eq!(pin_label(&f, Target::Oom(99)), "an OOM");
}

#[test]
fn the_panel_says_how_to_point_until_something_is_pointed_at() {
    assert_eq!(stack_panel(None, None, None, false, None, None), StackPanel::default());
    let f = open_file(REUSE, "reuse.pickle", 100);
    let hint = stack_panel(Some(&f), None, None, false, None, None);
    assert!(hint.html.starts_with("Point at the timeline"), "{}", hint.html);
    assert_eq!(hint.pinned_label, None);
    let pinned = stack_panel(
        Some(&f),
        Some(Target::Element(ElementIndex::new(0))),
        Some(Target::Element(ElementIndex::new(0))),
        false,
        Some("activation"),
        None,
    );
    let label = pin_label(&f, Target::Element(ElementIndex::new(0)));
    assert_eq!(pinned.pinned_label.as_deref(), Some(label.as_str()));
    assert!(pinned.html.starts_with("<div class=\"stack-category\">activation\n</div><div class=\"stack-doc\">"));
    assert!(pinned.html.contains(&format!("Pinned <b>{label}</b>")));
    let g = GroupAt { label: "forward".into(), bytes: 2048, row: Some(7), peak_bytes: 4096 };
    let grouped = stack_panel(Some(&f), None, None, false, None, Some(&g));
    assert!(grouped.html.starts_with("<div class=\"stack-group\""), "the group's bytes come first");
    assert!(grouped.html.contains(&esc(&g.line())));
}

#[test]
fn the_tip_has_a_line_per_fact_and_the_group_last() {
    let lines = ["1 KiB".to_string(), "f <x>".to_string(), "alive 3 entries".to_string(), "more".to_string()];
    let h = tip_html(&lines, None);
    assert_eq!(
        h,
        "<div class=\"tip-size\">1 KiB</div>\n<div class=\"tip-frame\">f &lt;x&gt;</div>\n<div class=\"tip-life\">alive 3 entries</div>\n<div class=\"tip-life\">more</div>\n"
    );
    let g = GroupAt { label: "forward".into(), bytes: 2048, row: None, peak_bytes: 2048 };
    let with_group = tip_html(&lines[..1], Some(&g));
    assert!(with_group.ends_with(&format!(
        "<div class=\"tip-group\" title=\"{}\">{}</div>\n",
        esc(&g.exact()),
        esc(&g.line())
    )));
}
