//! Tests of the keyboard's selection and the cursor, on the page's demo snapshot.

#![allow(clippy::expect_used)]

use memviz_core::plot::PlotData;
use memviz_core::timeline::Options;

use super::super::{Target, TimelineInput, ViewState};
use crate::entries::step_of_entry;
use crate::keys::{Command, Surface};

static DEMO: &[u8] = include_bytes!("../../../../tests/data/real/gpt_amp_annotated.pickle");

fn demo_with(max_entries: usize) -> ViewState {
    crate::test_state::open_state(DEMO, "demo", max_entries, (1000.0, 60.0))
}

fn key(s: &mut ViewState, c: Command) {
    s.update(TimelineInput::Key(c), 0.0);
}

/// The selected element's band.
fn band(s: &ViewState) -> u32 {
    let e = s.selected_element().expect("a selection");
    s.file().expect("file").plot.layout.elements[e.as_usize()].band.expect("drawn")
}

#[test]
fn next_and_previous_walk_the_allocations_in_time_and_show_them_as_a_hover() {
    let mut s = demo_with(15_000);
    key(&mut s, Command::NextAllocation);
    let first = band(&s);
    let e = s.selected_element().expect("selected");
    // Shown as a hover would be: the hovered target, the pointer on its band, the cursor on the
    // entry that allocated it.
    assert_eq!(s.hover, Some(Target::Element(e)));
    let (surface, x, y) = s.last_pointer.expect("a pointer");
    assert_eq!(surface, Surface::Plot);
    assert_eq!(s.target_at(x, y), Some(Target::Element(e)), "the tooltip's point is on the band");
    let f = s.file().expect("file");
    let alloc_row = f.plot.layout.elements[e.as_usize()].alloc_row;
    assert_eq!(s.cursor_entry, alloc_row);
    // From the middle of the window: the first allocation at or after it.
    let (v0, v1) = (f.viewport.x0, f.viewport.x1);
    assert!(f64::from(f.plot.layout.band_step_range(first).0) >= ((v0 + v1) / 2.0).floor());
    key(&mut s, Command::NextAllocation);
    assert_eq!(band(&s), first + 1);
    key(&mut s, Command::NextAllocation);
    key(&mut s, Command::PrevAllocation);
    assert_eq!(band(&s), first + 1);
    key(&mut s, Command::PrevAllocation);
    assert_eq!(band(&s), first);
    // Allocation order is time order.
    let l = &s.file().expect("file").plot.layout;
    let starts: Vec<u32> = (first..first + 2).map(|b| l.band_step_range(b).0).collect();
    assert!(starts[0] <= starts[1]);
}

#[test]
fn up_and_down_move_through_the_stack_at_the_selections_entry() {
    let mut s = demo_with(15_000);
    // Somewhere with a tall stack: the peak.
    let l = &s.file().expect("file").plot.layout;
    let entry = crate::entries::entry_at_step(l, f64::from(l.peak_step)).expect("an entry at the peak");
    let step = step_of_entry(l, entry);
    let mut stack = Vec::new();
    l.offsets_at(step, &mut stack);
    s.cursor_entry = Some(entry);
    assert!(stack.len() >= 3, "{} bands at the peak", stack.len());
    // Nothing selected: ↑ starts at the bottom, ↓ at the top.
    key(&mut s, Command::SelectAbove);
    assert_eq!(band(&s), stack[0].0);
    key(&mut s, Command::SelectAbove);
    assert_eq!(band(&s), stack[1].0);
    key(&mut s, Command::SelectAbove);
    assert_eq!(band(&s), stack[2].0);
    key(&mut s, Command::SelectBelow);
    assert_eq!(band(&s), stack[1].0);
    // The cursor stays where it was.
    assert_eq!(s.cursor_entry, Some(entry));
    s.selected = None;
    key(&mut s, Command::SelectBelow);
    assert_eq!(band(&s), stack[stack.len() - 1].0);
    // At the top, ↑ keeps the selection.
    key(&mut s, Command::SelectAbove);
    assert_eq!(band(&s), stack[stack.len() - 1].0);
}

#[test]
fn enter_pins_the_selection_and_esc_leaves_it() {
    let mut s = demo_with(15_000);
    key(&mut s, Command::NextAllocation);
    let e = s.selected_element().expect("selected");
    key(&mut s, Command::PinSelection);
    assert_eq!(s.pinned, Some(Target::Element(e)));
    key(&mut s, Command::Unpin);
    assert_eq!((s.selected, s.pinned, s.hover), (None, None, None));
    // The pointer takes over from the keyboard.
    key(&mut s, Command::NextAllocation);
    assert!(s.selected.is_some());
    s.update(TimelineInput::PointerMove { surface: Surface::Plot, x_px: 500.0, y_px: 300.0 }, 0.0);
    assert_eq!(s.selected, None);
}

#[test]
fn the_window_pans_to_keep_the_selection_in_view() {
    let mut s = demo_with(15_000);
    let f = s.file_mut().expect("file");
    f.viewport.set_window(0.0, 60.0);
    for _ in 0..200 {
        key(&mut s, Command::NextAllocation);
        let sel = s.selected.expect("selected");
        let v = s.file().expect("file").viewport;
        assert!(v.x0 <= sel.step && sel.step <= v.x1, "{} in {}..{}", sel.step, v.x0, v.x1);
        assert!((v.width() - 60.0).abs() < 1e-9, "the same width");
    }
    assert!(s.file().expect("file").viewport.x0 > 0.0, "the window moved");
}

#[test]
fn the_selection_and_the_pin_survive_a_relayout_by_their_keys() {
    let mut s = demo_with(15_000);
    for _ in 0..5 {
        key(&mut s, Command::NextAllocation);
    }
    key(&mut s, Command::PinSelection);
    let sel = s.selected.expect("selected");
    let old = s.selected_element().expect("selected");
    let old_el = s.file().expect("file").plot.layout.elements[old.as_usize()].clone();
    // Detail changes: bands are numbered again.
    let f = s.file().expect("file");
    let plot = PlotData::build(&f.snap, f.plot.device_pos, Options { max_entries: 200, ..Options::default() });
    s.set_plot(plot);
    s.show_selection();
    let l = &s.file().expect("file").plot.layout;
    let now = l.element_by_key(sel.key).expect("every lifetime is an element");
    let el = &l.elements[now.as_usize()];
    assert_eq!((el.addr, el.alloc_row), (old_el.addr, old_el.alloc_row));
    if el.band.is_some() {
        assert_eq!(s.selected.map(|x| x.key), Some(sel.key));
        assert_eq!(s.selected_element(), Some(now));
        assert_eq!(s.pinned, Some(Target::Element(now)));
        assert_eq!(s.hover, Some(Target::Element(now)));
    } else {
        // Summarized now: nothing drawn to select; the pin keeps its key.
        assert_eq!(s.selected, None);
        assert_eq!(s.pin_key(), Some(sel.key));
    }
}

#[test]
fn a_cited_entry_toggles_the_cursor() {
    let mut s = demo_with(15_000);
    s.update(TimelineInput::Cursor(40), 0.0);
    assert_eq!(s.cursor_entry, Some(40));
    s.update(TimelineInput::Cursor(41), 0.0);
    assert_eq!(s.cursor_entry, Some(41));
    s.update(TimelineInput::Cursor(41), 0.0);
    assert_eq!(s.cursor_entry, None);
}

/// A cited entry's link in a panel view (the History) shows the timeline with the cursor there,
/// even when the cursor was on that entry already.
#[test]
fn a_cited_entry_in_a_panel_shows_the_timeline_with_the_cursor() {
    use crate::state::Effect;
    use crate::view::View;
    let mut s = demo_with(15_000);
    s.update(TimelineInput::Cursor(40), 0.0);
    let effects = s.update(TimelineInput::SelectView(View::AllocatorStateHistory), 0.0);
    assert_eq!(effects, vec![Effect::ViewShown { relayout: false }]);
    let effects = s.update(TimelineInput::Cursor(40), 0.0);
    assert_eq!(s.view, View::ActiveMemoryTimeline);
    assert_eq!(effects, vec![Effect::ViewShown { relayout: false }]);
    assert_eq!(s.cursor_entry, Some(40), "put there, not taken away");
    // On the timeline the same link takes it away, and no view is shown.
    assert_eq!(s.update(TimelineInput::Cursor(40), 0.0), vec![]);
    assert_eq!(s.cursor_entry, None);
    // A view that plots other data is laid out again.
    let effects = s.update(TimelineInput::SelectView(View::ActiveCachedSegmentTimeline), 0.0);
    assert_eq!(effects, vec![Effect::ViewShown { relayout: true }]);
    assert_eq!(s.update(TimelineInput::SelectView(View::ActiveCachedSegmentTimeline), 0.0), vec![]);
}
