//! Detail where the user looks: once the window rests, the shown file is laid out again with
//! Detail's allocations chosen among those live in the window
//! ([`memviz_core::timeline::Options::focus_rows`]), so a zoom anywhere in a long run draws that
//! part's allocations one by one and the summarized band holds only the rest. The whole view
//! keeps the unfocused layout. Only the drawn set changes: the x axis, the totals, the y axis and
//! the minimap stay; the pin and the keyboard's selection follow their keys
//! ([`ViewState::set_layout`]). In the Compare view both files follow its one window, with A's
//! Detail ([`ViewState::refocus_compare`]).

use memviz_core::timeline::Layout;

use super::{OpenFile, ViewState};

/// What Detail should follow for a window of `f`: the trace rows it covers, or `None` for the
/// whole trace (the full width is shown).
pub(super) fn wanted_focus(f: &OpenFile) -> Option<(u32, u32)> {
    let v = &f.viewport;
    if v.x0 <= 0.0 && v.x1 >= v.full_x1 {
        return None;
    }
    let xm = f.xmap();
    f.plot.layout.focus_rows_between(xm.step(v.x0), xm.step(v.x1))
}

impl OpenFile {
    /// Forgets the focus chosen for Detail (a new layout was set): the next rest chooses again.
    pub(crate) fn forget_focus(&mut self) {
        self.checked_focus = None;
    }
}

impl ViewState {
    /// Whether the shown window is one Detail has not been chosen for yet (the page then waits
    /// for the window to rest and calls [`ViewState::refocus_detail`]). O(log events).
    pub fn wants_refocus(&self) -> bool {
        self.file().is_some_and(|f| f.checked_focus != Some(wanted_focus(f)))
    }

    /// Chooses Detail's allocations for the shown window: lays the file out again when the
    /// window shows a summarized allocation that a focused layout would draw, or when the whole
    /// view is back; whether it did. O(elements) to decide, a layout's time to do.
    pub fn refocus_detail(&mut self) -> bool {
        let Some(f) = self.file_mut() else { return false };
        let want = wanted_focus(f);
        f.checked_focus = Some(want);
        let l = &f.plot.layout;
        let needed = match want {
            _ if l.options.focus_rows == want => false,
            None => true,
            Some(rows) => !l.draws_all_live_in(rows),
        };
        if !needed {
            return false;
        }
        let options = memviz_core::timeline::Options { focus_rows: want, ..l.options };
        let layout = Layout::build(&f.snap, f.plot.device_pos, options);
        self.set_layout(layout);
        if let Some(f) = self.file_mut() {
            f.checked_focus = Some(want);
        }
        self.forget_targets(true);
        self.show_selection();
        true
    }
}

impl ViewState {
    /// Detail in the Compare view: lays each file of the pair (A, B) out again, where needed, with
    /// A's Detail and its allocations chosen among those live in `rows` (A's, B's: the trace rows
    /// each shows in the view's window, [`super::compare_view::compare_focus_rows`]; `None`: the
    /// whole trace); whether either changed. The drawn sets change, not the elements: marks and
    /// picked rows stay.
    pub fn refocus_compare(&mut self, rows: [Option<(u32, u32)>; 2]) -> bool {
        let Some((a, b)) = self.compare_pair() else { return false };
        let Some(detail) = self.files.get(a).map(|f| f.plot.layout.options.max_entries) else { return false };
        let mut changed = false;
        for (i, want) in [(a, rows[0]), (b, rows[1])] {
            let Some(f) = self.files.get(i) else { continue };
            let l = &f.plot.layout;
            let needed = l.options.max_entries != detail
                || (l.options.focus_rows != want && want.is_none_or(|r| !l.draws_all_live_in(r)));
            if !needed {
                continue;
            }
            let options = memviz_core::timeline::Options { focus_rows: want, max_entries: detail, ..l.options };
            let layout = Layout::build(&f.snap, f.plot.device_pos, options);
            if i == a {
                self.set_layout(layout);
            } else if let Some(f) = self.files.get_mut(i) {
                f.plot.layout = layout;
                f.forget_focus();
                self.generation += 1;
            }
            changed = true;
        }
        changed
    }
}

#[cfg(test)]
#[path = "focus_tests.rs"]
mod tests;
