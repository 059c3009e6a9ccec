//! What the page's shell tells the state: each method keeps the rule it is there for.

#![allow(clippy::expect_used)]

use super::super::panels::Highlight;
use super::super::{Loading, ViewState};
use crate::ranks::Run;
use crate::test_state::open_file;
use memviz_core::timeline::ElementIndex;

static REUSE: &[u8] = include_bytes!("../../../../tests/data/synth/segment_reuse.pickle");

fn highlight(key: &str) -> Option<Highlight> {
    Some(Highlight { key: key.into(), elements: vec![ElementIndex::new(0)], group: None })
}

#[test]
fn a_measure_says_whether_anything_changed_and_keeps_the_pixel_ratio_usable() {
    let mut s = ViewState::new(2.0, true);
    assert!(s.history().hide_freed, "the embedding page's filter is kept");
    assert_eq!(s.preview_until_ms(), f64::NEG_INFINITY, "nothing is drawn from held copies at first");
    assert!(s.measure(2.0, (800.0, 400.0), (800.0, 40.0)));
    assert!(!s.measure(2.0, (800.0, 400.0), (800.0, 40.0)), "the same sizes are no change");
    assert!(s.measure(0.0, (800.0, 400.0), (800.0, 40.0)));
    assert_eq!(s.dpr(), 0.25, "a zero ratio (a hidden frame) would divide by zero");
}

#[test]
fn a_file_read_again_keeps_its_place_and_name_and_is_shown_whole() {
    let mut s = ViewState::default();
    s.push_file(open_file(REUSE, "a.pickle", 100), Some("a|1|2".into()), true);
    s.push_file(open_file(REUSE, "b.pickle", 100), Some("b|1|2".into()), true);
    assert_eq!(s.current(), Some(1));
    let mut again = open_file(REUSE, "a (2).pickle", 100);
    again.viewport.set_window(1.0, 2.0);
    assert!(s.replace_file(0, again, Some("a|1|3".into())));
    assert_eq!(s.current(), Some(0));
    let f = &s.files()[0];
    assert_eq!((f.name.as_str(), f.source.as_deref()), ("a.pickle", Some("a|1|3")));
    assert_eq!(f.viewport.x0, 0.0, "the new model is shown whole");
    assert!(!s.replace_file(5, open_file(REUSE, "c.pickle", 100), None), "no file 5");
    assert_eq!(s.files().len(), 2);
}

#[test]
fn a_load_shows_once_and_its_progress_stays_between_none_and_all() {
    let mut s = ViewState::default();
    assert!(!s.show_loading(), "no load");
    s.load_progress(0.5, 10, None, "Reading");
    assert!(s.loading().is_none(), "progress of no load is dropped");
    s.begin_load("big.pickle", 100);
    assert!(s.show_loading());
    assert!(!s.show_loading(), "shown already");
    s.load_progress(1.5, 150, Some(20.0), "Laying out");
    let l: &Loading = s.loading().expect("loading");
    assert_eq!((l.fraction, l.read_bytes, l.left_ms, l.phase), (1.0, 150, Some(20.0), "Laying out"));
    s.load_phase("Drawing");
    assert_eq!(s.loading().map(|l| l.phase), Some("Drawing"));
}

#[test]
fn a_flame_focus_replaces_only_its_own_highlight() {
    let mut s = ViewState::default();
    s.toggle_highlight(highlight("site:0"));
    s.follow_flame_focus(None);
    assert_eq!(s.analysis().highlight.as_ref().map(|h| h.key.as_str()), Some("site:0"), "a row's highlight stays");
    s.follow_flame_focus(highlight("flame:3"));
    assert_eq!(s.analysis().highlight.as_ref().map(|h| h.key.as_str()), Some("flame:3"));
    s.follow_flame_focus(None);
    assert!(s.analysis().highlight.is_none(), "the focus left: its highlight goes");
    s.toggle_highlight(highlight("site:1"));
    s.toggle_highlight(highlight("site:1"));
    assert!(s.analysis().highlight.is_none(), "a second click on the row clears it");
    s.set_highlight(highlight("group:2"));
    assert_eq!(s.take_highlight().map(|h| h.key), Some("group:2".into()));
    assert!(s.analysis().highlight.is_none());
}

#[test]
fn a_run_is_told_of_its_ranks_only_while_it_is_open() {
    let mut s = ViewState::default();
    s.set_error("an earlier drop".into());
    let paths = ["rank0.pickle", "rank1.pickle"].map(String::from);
    let mut run = Run::new(&paths);
    run.id = 7;
    assert_eq!(s.open_run(run), None, "no rank to restore");
    assert!(s.error().is_none(), "opening a run clears the last error");
    assert!(s.run_mut(7).is_some());
    assert!(s.run_mut(6).is_none(), "answers about a replaced run are dropped");
    let before = s.run().map(|r| r.generation);
    s.point_rank(1);
    let r = s.run().expect("run");
    assert_eq!((r.focused, r.overview), (Some(1), true), "the overview stays shown");
    assert!(Some(r.generation) > before, "the overview is painted again");
    s.point_rank(9);
    assert_eq!(s.run().and_then(|r| r.focused), Some(1), "no rank 9");
}

#[test]
fn a_pool_hover_says_when_it_changes_and_the_compare_tab_opens_on_b() {
    let mut s = ViewState::default();
    assert!(!s.set_pool_hover(None));
    s.open_compare(1);
    let a = s.analysis();
    assert!(a.open);
    assert_eq!((a.tab, a.compare_with), (super::super::panels::Tab::Compare, Some(1)));
    s.embedded(Some(crate::view::View::AllocatorStateHistory), Some(1));
    assert_eq!((s.view(), s.preferred_device()), (crate::view::View::AllocatorStateHistory, Some(1)));
    s.embedded(None, None);
    assert_eq!(s.view(), crate::view::View::AllocatorStateHistory, "no view named: it stays");
    s.forget_released(3);
    assert!(s.released().is_empty());
}
