//! The keyboard's selection and the cursor on a trace entry.
//!
//! `.` and `,` select the next and previous drawn allocation in time (bands are numbered in
//! allocation order), `↑` and `↓` the one stacked above or below at the selection's entry;
//! the selection shows as a hover would (stack panel, tooltip beside the band), Enter pins it,
//! Esc leaves it. It is kept by [`ElementKey`] (address and allocation entry), so it survives
//! a relayout. The cursor ([`ViewState::cursor_entry`]) is a line on one trace entry, put there
//! by a cited entry's link or by the selection.

use memviz_core::timeline::{ElementIndex, ElementKey};

use super::{Target, ViewState};
use crate::entries::step_of_entry;
use crate::keys::{Command, Surface};

/// The allocation the keyboard selected.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Selection {
    /// Which allocation: its address and allocation entry.
    pub key: ElementKey,
    /// The step (x position in the layout's steps) the selection is looked at: the stack there
    /// is what `↑` and `↓` move through.
    pub step: f64,
}

impl ViewState {
    /// Puts the cursor on trace entry `entry` and brings it into view, or takes it away when it
    /// is there already (a second click on the same link).
    pub fn toggle_cursor(&mut self, entry: u32) {
        if self.cursor_entry == Some(entry) {
            self.cursor_entry = None;
        } else {
            self.cursor_entry = Some(entry);
            self.show_entry(entry);
        }
    }

    /// The element the keyboard selected, in the shown layout.
    pub fn selected_element(&self) -> Option<ElementIndex> {
        let s = self.selected?;
        self.file()?.plot.layout.element_by_key(s.key)
    }

    /// Applies a selection key ([`Command::needs_plot_focus`]).
    pub(super) fn on_selection_key(&mut self, c: Command) {
        if c == Command::PinSelection {
            if let Some(e) = self.selected_element() {
                self.set_pin(Some(Target::Element(e)));
            }
            return;
        }
        let Some(f) = self.file() else { return };
        let l = &f.plot.layout;
        let bands = l.band_count() as u32;
        if bands == 0 || f.is_moment() {
            return;
        }
        let current = self.selected_element().and_then(|e| l.element(e)).and_then(|e| e.band);
        // Where the selection is looked at: the selection's step, else the cursor's, else the
        // middle of the window.
        let v = &f.viewport;
        let xm = f.xmap();
        let here = match (self.selected, self.cursor_entry) {
            (Some(s), _) if current.is_some() => s.step,
            (_, Some(entry)) => step_of_entry(l, entry),
            _ => xm.step((v.x0 + v.x1) / 2.0),
        };
        let starts = |b: u32| f64::from(l.band_step_range(b).0);
        let (band, step) = match c {
            Command::NextAllocation | Command::PrevAllocation => {
                let next = c == Command::NextAllocation;
                let band = match current {
                    Some(b) if next => (b + 1 < bands).then_some(b + 1),
                    Some(b) => b.checked_sub(1),
                    // The first allocated at or after `here`, or the last at or before it.
                    None if next => {
                        // Bands start in non-decreasing steps: a binary search.
                        let (mut lo, mut hi) = (0u32, bands);
                        while lo < hi {
                            let mid = lo + (hi - lo) / 2;
                            if starts(mid) < here.floor() {
                                lo = mid + 1;
                            } else {
                                hi = mid;
                            }
                        }
                        (lo < bands).then_some(lo)
                    }
                    None => (0..bands).rev().find(|&b| starts(b) <= here),
                };
                let Some(band) = band else { return };
                let (a, z) = l.band_step_range(band);
                // Inside its life: half a step after it appears (a band freed at once is one
                // step wide).
                (band, f64::from(a) + (f64::from(z.saturating_sub(a)).min(1.0) / 2.0))
            }
            _ => {
                let mut stack = Vec::new();
                l.offsets_at(here, &mut stack);
                let at = current.and_then(|b| stack.iter().position(|&(x, _)| x == b));
                let i = match (at, c) {
                    (Some(i), Command::SelectAbove) => i + 1,
                    (Some(i), _) => match i.checked_sub(1) {
                        Some(i) => i,
                        None => return,
                    },
                    (None, Command::SelectAbove) => 0,
                    (None, _) => match stack.len().checked_sub(1) {
                        Some(i) => i,
                        None => return,
                    },
                };
                let Some(&(band, _)) = stack.get(i) else { return };
                (band, here)
            }
        };
        let Some(e) = l.element_of_band(band) else { return };
        let Some(key) = l.element_key(e) else { return };
        let alloc_row = l.element(e).and_then(|el| el.alloc_row);
        self.selected = Some(Selection { key, step });
        if matches!(c, Command::NextAllocation | Command::PrevAllocation) {
            if let Some(r) = alloc_row {
                self.cursor_entry = Some(r);
            }
        }
        self.keep_selection_in_view();
        self.show_selection();
    }

    /// Pans (same width) so the selection's step is in the window.
    fn keep_selection_in_view(&mut self) {
        let Some(s) = self.selected else { return };
        let Some(f) = self.file_mut() else { return };
        let pos = f.xmap().pos(s.step);
        let v = &mut f.viewport;
        if pos < v.x0 || pos > v.x1 {
            let half = v.width() / 2.0;
            v.set_window(pos - half, pos + half);
        }
    }

    /// Shows the selection as a hover: the hovered target, the pointer on the middle of its
    /// band (where the tooltip goes). Forgets a selection the layout no longer draws.
    pub fn show_selection(&mut self) {
        let Some(s) = self.selected else { return };
        let rect = self.plot_rect();
        let point = self.file().and_then(|f| {
            let l = &f.plot.layout;
            let e = l.element_by_key(s.key)?;
            let band = l.element(e)?.band?;
            let offset = l.band_offset_at(band, s.step)?;
            let v = &f.viewport;
            let x = v.x_px(&rect, f.xmap().pos(s.step));
            let y = v.y_px(&rect, offset + l.band_size(band) as f64 / 2.0);
            Some((e, x.clamp(rect.left_px, rect.right_px()), y.clamp(rect.top_px, rect.bottom_px())))
        });
        match point {
            Some((e, x, y)) => {
                self.hover = Some(Target::Element(e));
                self.last_pointer = Some((Surface::Plot, x, y));
            }
            None => self.selected = None,
        }
    }
}

#[cfg(test)]
#[path = "select_tests.rs"]
mod tests;
