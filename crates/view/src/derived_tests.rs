//! Native tests of [`super::Derived`]: what is computed for which state, and when it is
//! computed again.

use memviz_core::format::stack_lines;

use super::{current_key, Derived};
use crate::state::panels::SearchBoxes;
use crate::state::ViewState;
use crate::view::View;

static DEMO: &[u8] = include_bytes!("../../../tests/data/real/gpt_amp_annotated.pickle");

fn demo() -> ViewState {
    crate::test_state::open_state(DEMO, "demo.pickle", 15_000, (1000.0, 60.0))
}

/// Only what the state shows is computed: the device's views and coverage always, the analyses
/// once the panel opens, the event list once the History is shown.
#[test]
fn refresh_computes_what_the_state_shows() {
    let mut s = demo();
    let mut d = Derived::default();
    d.refresh(&s);
    assert!(d.views_of(&s).is_some() && d.coverage_of(&s).is_some());
    assert!(d.analysis_of(&s).is_none() && d.history_of(&s).is_none() && d.matches_of(&s).is_none());
    s.analysis.open = true;
    d.refresh(&s);
    let Some(a) = d.analysis_of(&s) else { panic!("the panel is open: analyses") };
    assert_eq!(Some(a.key), current_key(&s));
    s.view = View::AllocatorStateHistory;
    d.refresh(&s);
    let Some(h) = d.history_of(&s) else { panic!("the History is shown: its rows") };
    assert!(h.rows() > 0);
}

/// The frame search's matches are the laid-out allocations whose frames hold the text (counted
/// here from the stacks' lines), with their bytes; a new layout is searched again.
#[test]
fn matches_are_the_allocations_whose_frames_hold_the_text() {
    let mut s = demo();
    let mut d = Derived::default();
    let boxes = SearchBoxes { frame: "forward".into(), ..SearchBoxes::default() };
    s.search = boxes.query();
    s.search_boxes = boxes;
    d.refresh(&s);
    let Some(m) = d.matches_of(&s) else { panic!("a query: matches") };
    let Some(f) = s.file() else { panic!("a file") };
    let layout = &f.plot.layout;
    let expect: Vec<u32> = (0..layout.elements.len() as u32)
        .filter(|&e| {
            let el = &layout.elements[e as usize];
            stack_lines(&f.snap, el.stack).iter().any(|l| l.to_lowercase().contains("forward"))
        })
        .collect();
    assert!(!expect.is_empty());
    assert_eq!(m.elements.as_slice(), expect.as_slice());
    let bytes: u64 = expect.iter().map(|&e| layout.elements[e as usize].size_bytes).sum();
    assert_eq!(m.total_bytes, bytes);
    assert!(m.drawn <= expect.len());
    // A new layout (another generation) is not answered from the old matches.
    s.generation += 1;
    assert!(d.matches_of(&s).is_none());
    d.refresh(&s);
    assert!(d.matches_of(&s).is_some());
}
