//! Tests of the panels' actions: the analysis panel's tabs, moments, highlights, exports and
//! categories; Compare's other file; the event list's selection, scrolling and filter.

#![allow(clippy::expect_used)]

use memviz_core::analysis::categories::CategoryTimeline;

use super::*;
use crate::state::{Target, ViewState};
use crate::xmap::XAxis;
use memviz_core::timeline::ElementIndex;

static DEMO: &[u8] = include_bytes!("../../../../tests/data/real/gpt_amp_annotated.pickle");
static METADATA: &[u8] = include_bytes!("../../../../tests/data/real/metadata_layers.pickle");

fn demo() -> ViewState {
    crate::test_state::open_state(DEMO, "x.pickle", 15_000, ViewState::default().minimap_css)
}

fn apply(s: &mut ViewState, a: Action) -> Vec<Effect> {
    let rect = s.plot_rect();
    let file = s.current.and_then(|i| s.files.get_mut(i));
    s.analysis.apply(a, file, &rect)
}

#[test]
fn toggle_and_tabs_change_what_the_panel_shows() {
    let mut s = demo();
    assert!(!s.analysis.open);
    assert!(apply(&mut s, Action::Toggle).is_empty());
    assert!(s.analysis.open);
    apply(&mut s, Action::Tab(Tab::Compare));
    assert_eq!(s.analysis.tab, Tab::Compare);
    apply(&mut s, Action::Toggle);
    assert!(!s.analysis.open);
    assert_eq!(s.analysis.tab, Tab::Compare, "closing keeps the tab");
}

#[test]
fn every_action_but_a_chart_hover_redraws_the_timeline_marks() {
    let mut s = demo();
    let seq = s.analysis.canvas_seq;
    apply(&mut s, Action::CategoryHover(Some(12.0)));
    assert_eq!(s.analysis.canvas_seq, seq);
    assert_eq!(s.analysis.categories.hover_x_px, Some(12.0));
    apply(&mut s, Action::LiveAtPeak);
    assert_eq!(s.analysis.canvas_seq, seq + 1);
    assert_eq!(s.analysis.moment, Some(Moment::Peak));
}

#[test]
fn rows_that_name_elements_ask_for_a_highlight_and_a_second_click_clears_it() {
    let mut s = demo();
    for a in [
        Action::Finding(2),
        Action::OomHolders(0),
        Action::Site(1),
        Action::Node(7),
        Action::Group(0),
        Action::Growth(1),
    ] {
        assert_eq!(apply(&mut s, a), vec![Effect::Highlight(a)]);
    }
    let h = Highlight {
        key: "finding:2".into(),
        elements: vec![ElementIndex::new(1), ElementIndex::new(2), ElementIndex::new(3)],
        group: None,
    };
    s.analysis.toggle_highlight(Some(h.clone()));
    assert_eq!(s.analysis.highlight.as_ref(), Some(&h));
    s.analysis.toggle_highlight(Some(h.clone()));
    assert_eq!(s.analysis.highlight, None, "the same row again clears it");
    s.analysis.toggle_highlight(Some(h));
    s.analysis.toggle_highlight(Some(Highlight {
        key: "site:0".into(),
        elements: vec![ElementIndex::new(9)],
        group: None,
    }));
    assert_eq!(s.analysis.highlight.as_ref().map(|h| h.key.as_str()), Some("site:0"), "another row replaces it");
    apply(&mut s, Action::ClearHighlight);
    assert_eq!(s.analysis.highlight, None);
}

#[test]
fn a_moment_from_the_timeline_opens_the_live_set_there() {
    let mut s = demo();
    let rect = s.plot_rect();
    apply(&mut s, Action::LiveAtPx(rect.left_px));
    assert!(s.analysis.open);
    assert_eq!(s.analysis.tab, Tab::Live);
    let f = s.file().expect("file");
    let left = Moment::at_step(&f.plot.layout, f.xmap().step(f.viewport.x0));
    assert_eq!(s.analysis.moment, Some(left));
    // The centre of a zoomed window.
    let full = f.viewport.full_x1;
    s.files[0].viewport.set_window(full * 0.5, full * 0.7);
    apply(&mut s, Action::LiveAtCentre);
    let f = s.file().expect("file");
    let centre = Moment::at_step(&f.plot.layout, f.xmap().step(full * 0.6));
    assert_eq!(s.analysis.moment, Some(centre));
    assert_ne!(Some(left), Some(centre));
}

#[test]
fn a_moment_without_a_file_changes_nothing() {
    let mut s = ViewState::default();
    let before = s.analysis.clone();
    assert!(apply(&mut s, Action::LiveAtCentre).is_empty());
    assert_eq!(s.analysis.moment, before.moment);
    assert!(!s.analysis.open);
}

#[test]
fn exports_are_effects_named_by_their_button() {
    let mut s = demo();
    for (v, k) in [
        ("csv", ExportKind::Csv),
        ("json", ExportKind::Json),
        ("speedscope", ExportKind::Speedscope),
        ("png", ExportKind::Png),
    ] {
        assert_eq!(ExportKind::from_value(v), Some(k));
        assert_eq!(apply(&mut s, Action::Export(k)), vec![Effect::Export(k)]);
    }
    assert_eq!(ExportKind::from_value("pdf"), None);
}

#[test]
fn compare_uses_the_chosen_file_else_the_first_other_one() {
    let mut a = AnalysisState::default();
    assert_eq!(a.compare_other(Some(0), 1), None, "one file: nothing to compare");
    assert_eq!(a.compare_other(Some(0), 3), Some(1));
    assert_eq!(a.compare_other(Some(1), 3), Some(0));
    a.compare_with = Some(2);
    assert_eq!(a.compare_other(Some(0), 3), Some(2));
    assert_eq!(a.compare_other(Some(2), 3), Some(0), "never the file itself");
    assert_eq!(a.compare_other(Some(0), 2), Some(1), "a file that is gone is not chosen");
    assert_eq!(a.compare_other(None, 3), None);
}

#[test]
fn category_colouring_toggles_and_profiles_open_and_close() {
    let mut s = demo();
    apply(&mut s, Action::CategoryColour);
    assert!(s.analysis.categories.colour_inferred);
    apply(&mut s, Action::CategoryColour);
    assert!(!s.analysis.categories.colour_inferred);
    let n = PROFILE_POINTS * 3;
    let tl = CategoryTimeline {
        categories: vec!["a".into(), "b".into()],
        times_us: (0..n as i64).map(Some).collect(),
        rows: vec![None; n],
        bytes: (0..n as u64).map(|i| vec![i, 1]).collect(),
        inferred: false,
        source: "test".into(),
    };
    let c = &mut s.analysis.categories;
    c.hover_x_px = Some(3.0);
    c.set_profile("p.json".into(), tl);
    let p = c.profile.as_ref().expect("a profile");
    assert_eq!(p.points, n);
    assert!(p.timeline.bytes.len() <= PROFILE_POINTS);
    assert_eq!(p.peak, Some((n - 1, n as u64)));
    assert_eq!(p.peak_time_us, Some(n as i64 - 1));
    assert_eq!((c.profile_seq, c.hover_x_px), (1, None));
    apply(&mut s, Action::CategoryClose);
    assert!(s.analysis.categories.profile.is_none());
    assert_eq!(s.analysis.categories.profile_seq, 2);
}

fn rows(n: usize) -> Option<HistoryRows> {
    Some(HistoryRows { key: (0, 0), rows: n, row_px: 18.0, list_px: 180.0, max_list_px: 8_000_000.0 })
}

#[test]
fn the_last_event_is_selected_until_one_is_chosen_on_this_device() {
    let mut h = HistoryState::default();
    assert_eq!(h.selected_row((0, 0), 0), None);
    assert_eq!(h.selected_row((0, 0), 50), Some(49));
    h.apply(HistoryInput::Select(7), rows(50));
    assert_eq!(h.selected_row((0, 0), 50), Some(7));
    assert_eq!(h.selected_row((0, 1), 50), Some(49), "another device has its own selection");
    assert_eq!(h.selected_row((0, 0), 5), Some(4), "clamped to a shorter list");
    h.apply(HistoryInput::Select(50), rows(50));
    assert_eq!(h.selected, Some((0, 0, 7)), "a row past the end is ignored");
}

#[test]
fn keys_move_the_selection_within_the_list_and_scroll_it_into_view() {
    let mut h = HistoryState::default();
    h.apply(HistoryInput::Jump(false), rows(100));
    assert_eq!(h.selected, Some((0, 0, 0)));
    assert_eq!(h.scroll_px, 0.0);
    h.apply(HistoryInput::Move(-1), rows(100));
    assert_eq!(h.selected, Some((0, 0, 0)), "no row before the first");
    h.apply(HistoryInput::Move(20), rows(100));
    assert_eq!(h.selected, Some((0, 0, 20)));
    // Row 20 spans 360..378 px: a 180 px list scrolled to show it ends at its bottom.
    assert_eq!(h.scroll_px, 378.0 - 180.0);
    h.apply(HistoryInput::Move(1_000), rows(100));
    assert_eq!(h.selected, Some((0, 0, 99)), "no row after the last");
    h.apply(HistoryInput::Jump(false), rows(100));
    h.apply(HistoryInput::Jump(true), rows(100));
    assert_eq!(h.selected, Some((0, 0, 99)));
    let before = h;
    assert!(h.apply(HistoryInput::Move(1), None).is_empty());
    assert_eq!(h, before, "without a list nothing moves");
    h.apply(HistoryInput::Jump(true), rows(0));
    assert_eq!(h, before, "an empty list selects nothing");
}

#[test]
fn the_pointer_and_scroll_are_kept_and_forgotten_when_the_view_is_shown_again() {
    let mut h = HistoryState::default();
    h.apply(HistoryInput::Scroll(240.0), None);
    h.apply(HistoryInput::HoverRow(Some(3)), None);
    h.apply(HistoryInput::MapPointer(Some((5.0, 6.0))), None);
    assert_eq!((h.scroll_px, h.hover_row, h.map_pointer), (240.0, Some(3), Some((5.0, 6.0))));
    h.on_shown();
    assert_eq!((h.scroll_px, h.hover_row, h.map_pointer), (240.0, None, None));
}

#[test]
fn hide_freed_asks_for_a_layout_only_when_it_changes() {
    let mut h = HistoryState::default();
    assert_eq!(h.apply(HistoryInput::HideFreed(true), None), vec![Effect::Relayout]);
    assert!(h.hide_freed);
    assert!(h.apply(HistoryInput::HideFreed(true), None).is_empty());
    assert_eq!(h.apply(HistoryInput::HideFreed(false), None), vec![Effect::Relayout]);
}

#[test]
fn search_boxes_say_which_size_does_not_parse() {
    let mut b = SearchBoxes { frame: "forward".into(), ..SearchBoxes::default() };
    assert_eq!(b.problem(), None);
    assert_eq!(b.query().frame, "forward");
    b.min = "10 megs".into();
    assert_eq!(b.problem().as_deref(), Some("\u{201c}10 megs\u{201d} is not a size: try 4096, 512KiB or 1.5GiB"));
    assert_eq!(b.query().min_bytes, None, "a size that does not parse asks nothing");
    b.min = "1MiB".into();
    b.max = "lots".into();
    assert!(b.problem().is_some_and(|p| p.contains("lots")));
    b.max = " 2 GiB ".into();
    assert_eq!(b.problem(), None);
    assert_eq!((b.query().min_bytes, b.query().max_bytes), (Some(1 << 20), Some(2 << 30)));
    assert!(!b.is_empty());
    assert!(SearchBoxes { addr: "  ".into(), ..SearchBoxes::default() }.is_empty());
}

#[test]
fn n_and_shift_n_step_through_matches() {
    let mut s = demo();
    assert_eq!(
        s.update(crate::state::TimelineInput::Key(crate::keys::Command::NextMatch), 0.0),
        vec![Effect::StepMatch(1)]
    );
    assert_eq!(
        s.update(crate::state::TimelineInput::Key(crate::keys::Command::PrevMatch), 0.0),
        vec![Effect::StepMatch(-1)]
    );
    assert_eq!(crate::keys::command_for_key("n", false), Some(crate::keys::Command::NextMatch));
    assert_eq!(crate::keys::command_for_key("N", false), Some(crate::keys::Command::PrevMatch));
    assert_eq!(crate::keys::command_for_key("n", true), None);
}

#[test]
fn focusing_an_element_pins_it_and_brings_it_into_view() {
    let mut s = demo();
    let layout = &s.files[0].plot.layout;
    // An allocation drawn early in the trace.
    let e = (0..layout.elements.len() as u32)
        .find(|&e| layout.elements[e as usize].band.is_some_and(|b| layout.band_step_range(b).1 < layout.steps / 4))
        .expect("an early allocation");
    let (a, z) = layout.band_step_range(layout.elements[e as usize].band.expect("drawn"));
    let full = s.files[0].viewport.full_x1;
    s.files[0].viewport.set_window(full * 0.8, full * 0.9);
    let width = s.files[0].viewport.width();
    s.focus_element(ElementIndex::new(e));
    assert_eq!(s.pinned, Some(Target::Element(ElementIndex::new(e))));
    let v = s.files[0].viewport;
    assert!((v.width() - width).abs() < 1e-6, "the zoom stays");
    let xm = s.files[0].xmap();
    assert!(v.x0 <= xm.pos(f64::from(z)) && v.x1 >= xm.pos(f64::from(a)), "its band is in view: {v:?}, steps {a}..{z}");
    // One in view: the window stays.
    let before = s.files[0].viewport;
    s.focus_element(ElementIndex::new(e));
    assert_eq!(s.files[0].viewport, before);
}

#[test]
fn an_iteration_row_zooms_the_timeline_to_its_rows() {
    let mut s = demo();
    let seq = s.analysis.canvas_seq;
    let f = s.file().expect("a file");
    let layout = &f.plot.layout;
    // The rows of an event in the middle of the trace and of a later one.
    let (r0, r1) = (layout.event_row[10], layout.event_row[200]);
    let (s0, s1) = (f64::from(layout.event_step[10]), f64::from(layout.event_step[200]));
    let want_peak = layout.max_live_between(s0, s1) as f64;
    let mut want = f.viewport;
    want.set_window(s0, s1);
    want.fit_y(want_peak);
    assert!(apply(&mut s, Action::ZoomRows { start_row: r0, end_row: r1 }).is_empty());
    let v = s.files[0].viewport;
    assert_eq!((v.x0, v.x1), (s0, s1), "on the steps axis a window is in steps");
    assert_eq!(v, want, "the y axis fitted to the window's peak");
    assert!(want_peak > 0.0);
    assert_eq!(s.analysis.canvas_seq, seq, "nothing of the panel's drawing changes");
    // An empty range, or no file: nothing.
    assert!(apply(&mut s, Action::ZoomRows { start_row: r1, end_row: r1 }).is_empty());
    assert_eq!(s.files[0].viewport, want);
    s.current = None;
    assert!(apply(&mut s, Action::ZoomRows { start_row: 0, end_row: r1 }).is_empty());
    assert_eq!(s.files[0].viewport, want, "no file shown: no window moves");
}

#[test]
fn on_the_time_axis_an_iteration_window_is_in_microseconds() {
    let mut s = demo();
    let f = s.file_mut().expect("a file");
    assert!(f.set_x_axis(XAxis::Time));
    let layout = &f.plot.layout;
    let (r0, r1) = (layout.event_row[10], layout.event_row[200]);
    let xm = f.xmap();
    let (p0, p1) = (xm.pos(f64::from(layout.event_step[10])), xm.pos(f64::from(layout.event_step[200])));
    apply(&mut s, Action::ZoomRows { start_row: r0, end_row: r1 });
    let v = s.files[0].viewport;
    assert_eq!((v.x0, v.x1), (p0, p1));
    assert!(p1 > p0);
}

/// A cited entry puts the cursor there and brings it into the window (same width); a second
/// click takes the cursor away.
#[test]
fn a_cited_entry_puts_the_cursor_there_and_shows_it() {
    let mut s = demo();
    let entry = 300u32;
    let step = f64::from(s.file().expect("file").plot.layout.step_for_row(entry));
    // A narrow window far from the entry.
    let f = s.file_mut().expect("file");
    let end = f.viewport.full_x1;
    f.viewport.set_window(end - 50.0, end);
    assert!(step < end - 50.0, "the entry is outside the window");
    let effects = apply(&mut s, Action::Entry(entry));
    assert_eq!(effects, vec![Effect::Cursor(entry)]);
    s.toggle_cursor(entry);
    assert_eq!(s.cursor_entry, Some(entry));
    let v = s.file().expect("file").viewport;
    assert!(v.x0 <= step && step <= v.x1, "{step} in {}..{}", v.x0, v.x1);
    assert!((v.width() - 50.0).abs() < 1e-9, "same width");
    // Already in view: the window stays.
    s.show_entry(entry + 1);
    assert_eq!(s.file().expect("file").viewport, v);
    assert_eq!(apply(&mut s, Action::Entry(entry)), vec![Effect::Cursor(entry)]);
    s.toggle_cursor(entry);
    assert_eq!(s.cursor_entry, None);
}

#[test]
fn the_group_by_menu_picks_a_choice_of_the_file_and_drops_a_group_highlight() {
    let mut s = crate::test_state::open_state(METADATA, "m.pickle", 15_000, ViewState::default().minimap_css);
    assert_eq!(s.analysis.group_by, GroupBy::UserLine, "the user's line by default");
    // The menu, then one choice per metadata key: metadata:phase is the 7th.
    apply(&mut s, Action::GroupBy(6));
    assert_eq!(s.analysis.group_by, GroupBy::Metadata(Some("phase".into())));
    s.analysis.toggle_highlight(Some(Highlight {
        key: "group:1".into(),
        elements: vec![ElementIndex::new(3)],
        group: None,
    }));
    apply(&mut s, Action::GroupBy(2));
    assert_eq!(s.analysis.group_by, GroupBy::Op);
    assert_eq!(s.analysis.highlight, None, "the old grouping's row is gone");
    apply(&mut s, Action::GroupBy(99));
    assert_eq!(s.analysis.group_by, GroupBy::Op, "a choice the file lacks changes nothing");
    // Colouring by group and by category exclude each other.
    apply(&mut s, Action::CategoryColour);
    apply(&mut s, Action::GroupColour);
    assert!(s.analysis.colour_by_group && !s.analysis.categories.colour_inferred);
    apply(&mut s, Action::CategoryColour);
    assert!(!s.analysis.colour_by_group && s.analysis.categories.colour_inferred);
}

#[test]
fn comparing_by_group_toggles_and_drops_a_row_of_the_other_kind() {
    let mut s = crate::test_state::open_state(METADATA, "m.pickle", 15_000, ViewState::default().minimap_css);
    assert!(!s.analysis.compare_by_group, "by stack first");
    let row = Action::CompareGroup { point: 0, more_in_b: true, i: 2 };
    assert_eq!(apply(&mut s, row), vec![Effect::Highlight(row)]);
    s.analysis.toggle_highlight(Some(Highlight {
        key: "cmp:0:b:2".into(),
        elements: vec![ElementIndex::new(3)],
        group: Some(GroupRef { id: 1, label: "x".into() }),
    }));
    apply(&mut s, Action::CompareByGroup);
    assert!(s.analysis.compare_by_group);
    assert_eq!(s.analysis.highlight, None, "a row of the comparison by stack is gone");
    s.analysis.toggle_highlight(Some(Highlight {
        key: "cmp:0:b:2".into(),
        elements: vec![ElementIndex::new(3)],
        group: Some(GroupRef { id: 1, label: "x".into() }),
    }));
    apply(&mut s, Action::GroupBy(2));
    assert_eq!(s.analysis.highlight, None, "a row of the old grouping is gone");
    // Another highlight stays.
    s.analysis.toggle_highlight(Some(Highlight {
        key: "finding:0".into(),
        elements: vec![ElementIndex::new(3)],
        group: None,
    }));
    apply(&mut s, Action::CompareByGroup);
    assert!(!s.analysis.compare_by_group && s.analysis.highlight.is_some());
}

#[test]
fn library_fragments_are_read_from_what_was_typed() {
    let mut s = crate::test_state::open_state(METADATA, "m.pickle", 15_000, ViewState::default().minimap_css);
    assert!(s.analysis.library().is_empty());
    s.analysis.toggle_highlight(Some(Highlight {
        key: "group:0".into(),
        elements: vec![ElementIndex::new(3)],
        group: Some(GroupRef { id: 0, label: "x".into() }),
    }));
    assert!(s.analysis.set_library(" mylib/, vendored/  mylib/,,"));
    assert_eq!(s.analysis.library(), ["mylib/".to_string(), "vendored/".to_string()]);
    assert!(s.analysis.highlight.is_none(), "the old grouping's row is gone");
    assert!(!s.analysis.set_library("mylib/ vendored/"), "the same fragments change nothing");
    assert!(s.analysis.library_rule().is_library("/src/vendored/x.py"));
    let _ = s.apply(crate::state::PageInput::Library(String::new()), 0.0);
    assert!(s.analysis.library().is_empty());
}
