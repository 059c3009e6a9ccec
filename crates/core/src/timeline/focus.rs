//! Detail that follows the window: which allocations a zoomed view should draw.
//!
//! A long run repeats the same step hundreds of times, so the largest allocations of the whole
//! trace all fall in its first steps and a window zoomed anywhere later shows only the summarized
//! band. With [`super::Options::focus_rows`] the layout draws the largest among the allocations
//! live in a window of trace rows instead ([`Layout::focus_rows_between`] gives the rows of a
//! window of steps). Rows, not steps, name the window: an element's rows are known before the
//! replay that gives its steps, and they do not depend on what is drawn. Steps never depend on
//! what is drawn either, so a focused layout has the same x axis, totals and peak as any other.

use super::{Element, Layout};

/// Whether element `e` is live somewhere in the window of trace rows `(first, last)`: allocated
/// at or before `last` (or before the trace) and freed at or after `first` (or never).
pub fn live_in(e: &Element, (first, last): (u32, u32)) -> bool {
    e.alloc_row.is_none_or(|a| a <= last) && e.free_row.is_none_or(|f| f >= first)
}

impl Layout {
    /// The trace rows of the window of steps `[a, b]`, for [`super::Options::focus_rows`]: from
    /// the first event at or after `a` to the last at or before `b`, widened to the events on
    /// either side when none falls inside (the window shows what lives between them). `None`
    /// when the layout has no event with a row.
    pub fn focus_rows_between(&self, a: f64, b: f64) -> Option<(u32, u32)> {
        let n = self.event_step.len();
        if n == 0 {
            return None;
        }
        let first = self.event_step.partition_point(|&s| f64::from(s) < a).min(n - 1);
        let last = self.event_step.partition_point(|&s| f64::from(s) <= b).saturating_sub(1);
        let row = |i: usize| self.event_row.get(i).copied().filter(|&r| r != u32::MAX);
        // The synthetic step-0 event has no row: the first real one stands for it.
        let first_row = row(first).or_else(|| row(first + 1))?;
        let last_row = row(last).or_else(|| row(last + 1))?;
        Some((first_row.min(last_row), first_row.max(last_row)))
    }

    /// Whether every shown allocation live in the window of rows `rows` has a band of its own:
    /// then a layout focused there would draw nothing more there. O(elements).
    pub fn draws_all_live_in(&self, rows: (u32, u32)) -> bool {
        self.elements.iter().all(|e| e.band.is_some() || self.is_hidden(e) || !live_in(e, rows))
    }
}
