//! The highlighted group's bytes at a moment. With a group row of the Live set highlighted, the
//! pointer over the timeline (else the cursor on a trace entry, else the pinned allocation's
//! entry) reads how much of that whole group is live there — not only of the allocations the row
//! outlined — from the group's [`GroupCurve`](memviz_core::analysis::group_timeline::GroupCurve),
//! one binary search per pointer move.

use memviz_core::format::{human_size, size_with_bytes};

use crate::derived::Derived;
use crate::keys::Surface;
use crate::state::{Target, ViewState};

/// What the highlighted group holds at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupAt {
    /// The group's value (`forward`, `train.py:325`), or why it has none.
    pub label: String,
    /// Bytes of the group live just after `row`.
    pub bytes: u64,
    /// The trace entry (`None`: before the first).
    pub row: Option<u32>,
    /// The most the group holds at once over the trace.
    pub peak_bytes: u64,
}

impl GroupAt {
    /// One line for the tooltip and the stack panel: `forward: 115.4 MiB live after entry 125 (at
    /// most 200.1 MiB)`.
    pub fn line(&self) -> String {
        let at = self.row.map_or_else(|| "before the first entry".to_string(), |r| format!("after entry {r}"));
        format!(
            "{}: {} live {at} (at most {})",
            self.label,
            human_size(self.bytes as f64),
            human_size(self.peak_bytes as f64)
        )
    }

    /// The same with exact bytes, for a title.
    pub fn exact(&self) -> String {
        format!("{}: {}", self.label, size_with_bytes(self.bytes))
    }
}

/// The trace entry under the pointer on the timeline (`Some(None)`: before the first entry;
/// `None`: the pointer is elsewhere).
pub fn pointer_row(s: &ViewState) -> Option<Option<u32>> {
    let f = s.file()?;
    let (Surface::Plot, x_px, _) = s.last_pointer.filter(|_| !s.view.is_panel())? else { return None };
    let rect = s.plot_rect();
    (x_px >= rect.left_px && x_px <= rect.right_px())
        .then(|| f.plot.layout.row_at(f.xmap().step(f.viewport.pos_at(&rect, x_px))))
}

/// The trace entry of the moment the state holds still: the cursor's entry, else the pinned
/// allocation's alloc entry (`Some(None)`: it was live before the trace).
pub fn fixed_row(s: &ViewState) -> Option<Option<u32>> {
    if let Some(e) = s.cursor_entry {
        return Some(Some(e));
    }
    match s.pinned() {
        Some(Target::Element(e)) => s.file()?.plot.layout.element(e).map(|el| el.alloc_row),
        _ => None,
    }
}

/// What the highlighted group holds just after trace entry `row` (`None`: before the first),
/// when a group row is highlighted and its curve is derived.
pub fn group_at(s: &ViewState, d: &Derived, row: Option<u32>) -> Option<GroupAt> {
    let group = s.analysis.highlight.as_ref()?.group.as_ref()?.id;
    let a = d.analysis_of(s)?;
    let curve = a.group_curve.as_ref().filter(|c| c.group == group)?;
    let label = a.grouping.as_ref()?.label(group);
    Some(GroupAt { label, bytes: curve.bytes_after(row), row, peak_bytes: curve.peak().0 })
}

/// The reading at the pointer, else at the cursor or pin.
pub fn group_at_moment(s: &ViewState, d: &Derived) -> Option<GroupAt> {
    group_at(s, d, pointer_row(s).or_else(|| fixed_row(s))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::panels::{Action, Highlight};
    use memviz_core::timeline::ElementIndex;

    static LAYERS: &[u8] = include_bytes!("../../../tests/data/real/metadata_layers.pickle");

    /// The metadata file grouped by `metadata:phase`, the row of `value` in the Live set at the
    /// peak highlighted as a click on it does.
    fn highlighted(value: &str) -> (ViewState, Derived) {
        let mut s = crate::test_state::open_state(LAYERS, "metadata_layers.pickle", 15_000, (1000.0, 60.0));
        s.analysis.open = true;
        let f = s.file().expect("open");
        let i = memviz_core::analysis::grouping::choices(&f.snap, f.plot.device_pos)
            .iter()
            .position(|b| b.slug() == "metadata:phase")
            .expect("a phase choice");
        s.analysis.group_by = memviz_core::analysis::grouping::choices(&f.snap, f.plot.device_pos)[i].clone();
        let mut d = Derived::default();
        d.refresh(&s);
        let a = d.analysis_of(&s).expect("analysis");
        let g = a.grouping.as_ref().expect("grouping");
        let row = a.live_groups.iter().position(|t| g.label(t.group) == value).expect("a row of that value");
        let h = d.highlight_of(&s, Action::Group(row));
        s.analysis.toggle_highlight(h);
        d.refresh(&s);
        (s, d)
    }

    #[test]
    fn the_pointer_reads_the_highlighted_groups_bytes_where_it_is() {
        let (mut s, d) = highlighted("forward");
        assert!(group_at_moment(&s, &d).is_none(), "no pointer, cursor or pin: no moment");
        // The cursor on the peak's entry: the Live set's figure for the forward phase there.
        s.cursor_entry = Some(125);
        let at = group_at_moment(&s, &d).expect("a moment");
        assert_eq!((at.label.as_str(), at.bytes, at.row), ("forward", 120_995_840, Some(125)));
        assert_eq!(at.line(), "forward: 115.4 MiB live after entry 125 (at most 146.6 MiB)");
        // The pointer wins over the cursor; at the plot's left edge nothing of the run is live yet.
        let rect = s.plot_rect();
        s.last_pointer = Some((Surface::Plot, rect.left_px, rect.top_px + 10.0));
        let left = group_at_moment(&s, &d).expect("the pointer's moment");
        assert!(left.row.is_none_or(|r| r < 5) && left.bytes == 0, "{left:?}");
        // Off the plot's sides the cursor is read again.
        s.last_pointer = Some((Surface::Plot, rect.right_px() + 5.0, rect.top_px + 10.0));
        assert_eq!(group_at_moment(&s, &d).map(|a| a.row), Some(Some(125)));
        // Without a cursor, a pinned allocation's entry.
        s.cursor_entry = None;
        s.last_pointer = None;
        let e = s.file().expect("open").plot.layout.elements.iter().position(|e| e.alloc_row == Some(40)).expect("one");
        s.set_pin(Some(Target::Element(ElementIndex::new(e as u32))));
        assert_eq!(group_at_moment(&s, &d).map(|a| a.row), Some(Some(40)));
    }

    #[test]
    fn every_moment_of_the_run_agrees_with_the_live_set_there() {
        let (mut s, d) = highlighted("forward");
        let (f, a) = (s.file().expect("open"), d.analysis_of(&s).expect("analysis"));
        let g = a.grouping.as_ref().expect("grouping");
        let group = s.analysis.highlight.as_ref().and_then(|h| h.group.as_ref()).map(|g| g.id).expect("a group");
        let rows = f.snap.devices[f.plot.device_pos].trace.len() as u32;
        let mut by_hand = Vec::new();
        for row in (0..rows).step_by(37) {
            let live = a.replay.live_elements(Some(row));
            let t = g.totals(&a.replay, &live);
            by_hand.push((row, t.iter().find(|t| t.group == group).map_or(0, |t| t.bytes)));
        }
        for (row, want) in by_hand {
            s.cursor_entry = Some(row);
            assert_eq!(group_at_moment(&s, &d).map(|a| a.bytes), Some(want), "after entry {row}");
        }
    }

    #[test]
    fn only_a_group_row_gives_a_reading() {
        let (mut s, d) = highlighted("forward");
        s.cursor_entry = Some(125);
        s.analysis.highlight =
            Some(Highlight { key: "site:0".into(), elements: vec![ElementIndex::new(1)], group: None });
        assert!(group_at_moment(&s, &d).is_none());
        s.analysis.highlight = None;
        assert!(group_at_moment(&s, &d).is_none());
    }
}
