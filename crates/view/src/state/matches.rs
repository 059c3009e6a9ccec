//! Stepping through a search's matches with `n` / `N`. Only matches drawn one by one can be
//! pinned and shown; those summarized into one band are counted, not stepped to. A position in
//! the list of all matches is a [`MatchIndex`], never a bare number, so that it is not read as
//! a position among the drawn matches or as an element index. [`count_text`] is the count shown
//! beside the search boxes.

use memviz_core::timeline::{ElementIndex, Layout};

use super::{Target, ViewState};

/// A position in a search's list of all matches (drawn and summarized), from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MatchIndex(usize);

impl MatchIndex {
    /// The match at position `i` of the list of all matches.
    pub fn new(i: usize) -> Self {
        Self(i)
    }

    /// Its position in the list of all matches.
    pub fn get(self) -> usize {
        self.0
    }

    /// Its number as the page shows it ("match 3 of 12"), from 1.
    pub fn number(self) -> usize {
        self.0 + 1
    }
}

/// The match `by` matches after the current one (before it when `by` is negative), counting only
/// the drawn matches and wrapping around. The current one is the pinned element when it is a
/// drawn match, else the match stepped to last (`cursor`); with neither, `n` starts at the first
/// drawn match and `N` at the last. `None` when no match is drawn.
pub fn step(
    matches: &[ElementIndex],
    layout: &Layout,
    pinned: Option<ElementIndex>,
    cursor: Option<MatchIndex>,
    by: i32,
) -> Option<MatchIndex> {
    let is_drawn = |e: ElementIndex| layout.element(e).is_some_and(|el| el.band.is_some());
    // Positions in `matches` of the drawn matches, in order.
    let drawn: Vec<MatchIndex> =
        matches.iter().enumerate().filter(|&(_, &e)| is_drawn(e)).map(|(i, _)| MatchIndex(i)).collect();
    if drawn.is_empty() {
        return None;
    }
    let n = drawn.len() as i64;
    let current = pinned
        .and_then(|e| drawn.iter().position(|&m| matches.get(m.0) == Some(&e)))
        .or_else(|| cursor.and_then(|c| drawn.iter().position(|&m| m == c)));
    let next = match current {
        Some(c) => (c as i64 + i64::from(by)).rem_euclid(n),
        None if by >= 0 => 0,
        None => n - 1,
    };
    drawn.get(next as usize).copied()
}

impl ViewState {
    /// Pins the search match `by` matches after the current one ([`step`]) among `matches` (the
    /// shown layout's matching elements) and brings it into view; it becomes the match stepped
    /// to last.
    pub fn step_match(&mut self, matches: &[ElementIndex], by: i32) {
        let Some(f) = self.file() else { return };
        let pinned = match self.pinned {
            Some(Target::Element(e)) => Some(e),
            _ => None,
        };
        let Some(next) = step(matches, &f.plot.layout, pinned, self.search_cursor, by) else { return };
        let Some(&e) = matches.get(next.get()) else { return };
        self.search_cursor = Some(next);
        self.focus_element(e);
    }
}

/// The count shown beside the boxes: `N matches`, or `N matches (M drawn)` when some of them
/// are summarized.
pub fn count_text(matches: usize, drawn: usize) -> String {
    let noun = if matches == 1 { "match" } else { "matches" };
    let all = crate::entries::count(matches, noun);
    if drawn < matches {
        format!("{all} ({} drawn)", crate::axis::step_label(drawn as f64))
    } else {
        all
    }
}

#[cfg(test)]
#[path = "matches_tests.rs"]
mod tests;
