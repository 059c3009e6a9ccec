//! Tests of stepping through search matches, on the page's demo snapshot.

#![allow(clippy::expect_used)]

use super::{step, MatchIndex};
use crate::state::{Target, ViewState};
use memviz_core::timeline::ElementIndex;

static DEMO: &[u8] = include_bytes!("../../../../tests/data/real/gpt_amp_annotated.pickle");

/// The demo at a low Detail, so that many allocations are summarized, and as matches every
/// element: summarized ones come before and between the drawn ones.
fn demo_matches() -> (ViewState, Vec<ElementIndex>, Vec<MatchIndex>) {
    let s = crate::test_state::open_state(DEMO, "x.pickle", 40, (1000.0, 60.0));
    let layout = &s.file().expect("a file").plot.layout;
    let matches: Vec<ElementIndex> = (0..layout.elements.len() as u32).map(ElementIndex::new).collect();
    let drawn: Vec<MatchIndex> = matches
        .iter()
        .enumerate()
        .filter(|&(_, &e)| layout.element(e).is_some_and(|el| el.band.is_some()))
        .map(|(i, _)| MatchIndex(i))
        .collect();
    assert!(drawn.len() >= 3, "some matches are drawn");
    assert!(drawn[0].get() > 0, "a summarized match comes first");
    assert!(drawn.windows(2).any(|w| w[1].get() > w[0].get() + 1), "summarized matches lie between");
    (s, matches, drawn)
}

#[test]
fn n_and_shift_n_start_at_either_end_of_the_drawn_matches() {
    let (s, m, drawn) = demo_matches();
    let l = &s.file().expect("a file").plot.layout;
    assert_eq!(step(&m, l, None, None, 1), drawn.first().copied());
    assert_eq!(step(&m, l, None, None, -1), drawn.last().copied());
    assert_eq!(step(&[], l, None, None, 1), None);
}

#[test]
fn stepping_from_the_pin_wraps_around() {
    let (s, m, drawn) = demo_matches();
    let l = &s.file().expect("a file").plot.layout;
    let e = |i: MatchIndex| m[i.get()];
    assert_eq!(step(&m, l, Some(e(drawn[0])), None, 1), Some(drawn[1]));
    assert_eq!(step(&m, l, Some(e(drawn[0])), None, -1), drawn.last().copied());
    assert_eq!(step(&m, l, Some(e(*drawn.last().expect("one"))), None, 1), Some(drawn[0]));
}

/// With nothing pinned, the match stepped to last is found among the drawn ones by its
/// position in the list of all matches, not read as a position among the drawn ones.
#[test]
fn unpinned_the_match_after_the_last_one_stepped_to_comes_next() {
    let (mut s, m, drawn) = demo_matches();
    s.step_match(&m, 1);
    assert_eq!(s.search_cursor, Some(drawn[0]));
    assert_eq!(s.pinned, Some(Target::Element(m[drawn[0].get()])));
    s.set_pin(None);
    s.step_match(&m, 1);
    assert_eq!(s.search_cursor, Some(drawn[1]), "the drawn match after the first");
    assert_eq!(s.pinned, Some(Target::Element(m[drawn[1].get()])));
    s.set_pin(None);
    s.step_match(&m, -1);
    assert_eq!(s.search_cursor, Some(drawn[0]));
}

#[test]
fn counts_say_how_many_are_drawn() {
    use super::count_text;
    assert_eq!(count_text(0, 0), "0 matches");
    assert_eq!(count_text(1, 1), "1 match");
    assert_eq!(count_text(1, 0), "1 match (0 drawn)");
    assert_eq!(count_text(12, 12), "12 matches");
    assert_eq!(count_text(12, 5), "12 matches (5 drawn)");
    assert_eq!(count_text(12_345, 1_200), "12,345 matches (1,200 drawn)");
}
