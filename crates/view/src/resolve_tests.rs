//! What is carried out without the page, and what is given back to it.

#![allow(clippy::expect_used)]

use super::resolve;
use crate::derived::Derived;
use crate::state::flame::FlameInput;
use crate::state::panels::{Action, SearchBoxes};
use crate::state::{Effect, PanelInput, Target, ViewState};
use crate::view::View;

static DEMO: &[u8] = include_bytes!("../../../tests/data/real/gpt_amp_annotated.pickle");

fn demo() -> (ViewState, Derived) {
    let mut s = crate::test_state::open_state(DEMO, "demo.pickle", 15_000, (1000.0, 60.0));
    s.analysis.open = true;
    let mut d = Derived::default();
    d.refresh(&s);
    (s, d)
}

#[test]
fn a_row_highlights_its_allocations_and_a_second_click_clears_them() {
    let (mut s, mut d) = demo();
    let want = d.highlight_of(&s, Action::Site(0)).expect("a site");
    assert_eq!(resolve(&mut s, &mut d, Effect::Highlight(Action::Site(0))), None);
    assert_eq!(s.analysis().highlight.as_ref().map(|h| &h.elements), Some(&want.elements));
    resolve(&mut s, &mut d, Effect::Highlight(Action::Site(0)));
    assert!(s.analysis().highlight.is_none());
}

#[test]
fn n_steps_to_the_first_drawn_match_and_pins_it() {
    let (mut s, mut d) = demo();
    assert_eq!(resolve(&mut s, &mut d, Effect::StepMatch(1)), None, "no search: nothing to step to");
    assert_eq!(s.pinned(), None);
    let boxes = SearchBoxes { frame: "forward".into(), ..SearchBoxes::default() };
    s.search = boxes.query();
    s.search_boxes = boxes;
    d.refresh(&s);
    resolve(&mut s, &mut d, Effect::StepMatch(1));
    let m = d.matches_of(&s).expect("matches");
    let Some(Target::Element(e)) = s.pinned() else { panic!("a match pinned") };
    assert!(m.elements.contains(&e));
    assert!(s.file().and_then(|f| f.plot.layout.element(e)).is_some_and(|el| el.band.is_some()), "a drawn one");
}

#[test]
fn the_cursor_and_a_flame_focus_are_carried_out_and_the_rest_given_back() {
    let (mut s, mut d) = demo();
    assert_eq!(resolve(&mut s, &mut d, Effect::Cursor(12)), None);
    assert_eq!(s.cursor_entry(), Some(12));
    resolve(&mut s, &mut d, Effect::Cursor(12));
    assert_eq!(s.cursor_entry(), None, "a second click on the same entry takes the cursor away");
    s.view = View::FlameGraph;
    d.refresh(&s);
    d.ensure_flame(&s);
    let child = d.flame_of(&s).and_then(|f| f.graph.nodes.first()).and_then(|root| root.children.first().copied());
    let child = child.expect("the root has a child");
    assert_eq!(resolve(&mut s, &mut d, Effect::Panel(PanelInput::Flame(FlameInput::Click(child)))), None);
    let h = s.analysis().highlight.as_ref().expect("the focused frame's allocations");
    assert!(h.key.starts_with("flame:") && !h.elements.is_empty());
    for page in [Effect::Relayout, Effect::FileShown, Effect::RefreshMinimap] {
        assert_eq!(resolve(&mut s, &mut d, page.clone()), Some(page));
    }
}

#[test]
fn a_grouping_over_time_becomes_the_categories_chart() {
    let (mut s, mut d) = demo();
    assert!(s.analysis().categories.profile.is_none());
    assert_eq!(resolve(&mut s, &mut d, Effect::GroupTimeline), None);
    assert!(s.analysis().categories.profile.is_some());
}
