//! The page's place and the state, both ways: [`fragment_of`] says where the page is (file,
//! view, window, pin, event, cursor, settings) as a [`Fragment`]; [`apply_at_start`] takes what
//! does not depend on a file from the fragment read when the page opens, and [`restore`] the
//! rest once the file it names is shown. The page only reads and writes `location.hash`.

use memviz_core::timeline::{ElementIndex, DEFAULT_MAX_ENTRIES};

use super::{OpenFile, Target, ViewState};
use crate::fragment::{base_name, Fragment};
use crate::view::View;
use crate::xmap::XAxis;

/// Where the page is: the fragment of the file shown, or of a run's overview before any rank
/// is opened; `None` with neither.
pub fn fragment_of(state: &ViewState) -> Option<Fragment> {
    let run = state.run.as_ref();
    let rank = run.and_then(|r| r.ranks.get(r.focused?)).map(|e| e.rank);
    let ranks_overview = state.overview_shown();
    let Some(f) = state.file() else {
        return run.map(|_| Fragment { rank, ranks_overview, ..Fragment::default() });
    };
    let mut frag = of_file(state, f)?;
    frag.rank = rank;
    frag.ranks_overview = ranks_overview;
    Some(frag)
}

fn of_file(state: &ViewState, f: &OpenFile) -> Option<Fragment> {
    let i = state.current?;
    let pin = state.pin_key().map(super::pin::pin_text);
    let v = &f.viewport;
    let x_steps = (f.x_axis == XAxis::Steps && (v.x0 > 0.0 || v.x1 < v.full_x1)).then_some((v.x0, v.x1));
    let event = match state.history.selected {
        Some((fi, d, r)) if fi == i && d == f.plot.device_pos && state.view == View::AllocatorStateHistory => Some(r),
        _ => None,
    };
    let flame_shown = state.view == View::FlameGraph;
    Some(Fragment {
        file: Some(base_name(&f.name).to_string()),
        view: Some(state.view),
        device: f.snap.devices.get(f.plot.device_pos).map(|d| d.index),
        x_steps,
        pin,
        event,
        axis: Some(f.x_axis).filter(|a| *a != XAxis::Steps),
        hide_freed: state.history.hide_freed,
        detail: Some(f.max_entries).filter(|&n| n != DEFAULT_MAX_ENTRIES),
        search: state.search_boxes.clone(),
        panel: state.analysis.open.then_some(state.analysis.tab),
        entry: state.cursor_entry,
        // The flame view's settings while it is shown.
        flame: Some(state.flame.mode).filter(|_| flame_shown),
        flame_focus: if flame_shown { state.flame.focus.clone() } else { Vec::new() },
        compare: state
            .compare_shown()
            .then(|| state.compare_pair())
            .flatten()
            .and_then(|(a, b)| Some((state.files.get(a)?, state.files.get(b)?)))
            .map(|(a, b)| (base_name(&a.name).to_string(), base_name(&b.name).to_string())),
        ..Fragment::default()
    })
}

/// When the page opens: the view, device, search, panel, flame settings and hide-freed of `f`
/// apply now (the first layout is made with them); the file, and the rank of a run, are kept to
/// be found when opened.
pub fn apply_at_start(state: &mut ViewState, f: &Fragment) {
    if let Some(v) = f.view {
        state.view = v;
    }
    if f.device.is_some() {
        state.preferred_device = f.device;
    }
    state.history.hide_freed |= f.hide_freed;
    if !f.search.is_empty() {
        state.search = f.search.query();
        state.search_boxes = f.search.clone();
    }
    if let Some(t) = f.panel {
        state.analysis.open = true;
        state.analysis.tab = t;
    }
    state.flame.mode = f.flame.unwrap_or_default();
    state.flame.focus.clone_from(&f.flame_focus);
    state.restore_file.clone_from(&f.file);
    state.restore_rank = (f.rank.is_some() || f.ranks_overview).then_some((f.rank, f.ranks_overview));
    state.compare_view.restore.clone_from(&f.compare);
}

/// Once the file `f` names is shown: its x axis, zoom window, pin, selected event and cursor;
/// the Detail it asks for when that needs another layout. Nothing when another file is shown.
pub fn restore(state: &mut ViewState, f: &Fragment) -> Option<usize> {
    state.restore_file = None;
    let i = state.current?;
    let file = state.files.get_mut(i)?;
    if f.file.as_deref() != Some(base_name(&file.name)) {
        return None;
    }
    if f.axis == Some(XAxis::Time) && file.has_time() {
        file.plot.build_time_map(&file.snap);
        file.x_axis = XAxis::Time;
        file.viewport = file.full_viewport();
    }
    if let Some((a, b)) = f.x_steps {
        if file.x_axis == XAxis::Steps {
            file.viewport.set_window(a, b);
        }
    }
    let (device_pos, max_entries) = (file.plot.device_pos, file.max_entries);
    // An older link names a drawn allocation by its address label.
    let by_label = f.pin.as_ref().and_then(|pin| {
        file.plot
            .layout
            .elements
            .iter()
            .position(|el| el.band.is_some() && memviz_core::format::addr_label('b', el.addr, el.version) == *pin)
    });
    match f.pin.as_deref().map(super::pin::parse_pin) {
        // The key, pinned again once a layout has it (another Detail may come first).
        Some(Some(k)) => state.repin(k),
        Some(None) => {
            if let Some(e) = by_label {
                state.set_pin(Some(Target::Element(ElementIndex::new(e as u32))));
            }
        }
        None => {}
    }
    if let Some(e) = f.event {
        state.history.selected = Some((i, device_pos, e));
    }
    let detail = f.detail.filter(|&n| n != max_entries);
    if let Some(entry) = f.entry {
        state.cursor_entry = Some(entry);
        state.show_entry(entry);
    }
    detail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fragment::{format, parse};

    static DEMO: &[u8] = include_bytes!("../../../../tests/data/real/gpt_amp_annotated.pickle");

    fn demo() -> ViewState {
        crate::test_state::open_state(DEMO, "demo.pickle", 15_000, (1000.0, 60.0))
    }

    /// A place written as text and read back into a fresh page gives the same window, pin,
    /// cursor, view and settings.
    #[test]
    fn a_place_survives_the_round_trip_through_its_text() {
        let mut st = demo();
        let Some(f) = st.files.first_mut() else { panic!("no file") };
        let full = f.viewport.full_x1;
        // Whole entries: the text writes the window in whole entries.
        f.viewport.set_window((full * 0.2).round(), (full * 0.4).round());
        let window = (f.viewport.x0, f.viewport.x1);
        let drawn = f.plot.layout.band_element.get(3).copied();
        let Some(e) = drawn else { panic!("the demo draws allocations") };
        st.set_pin(Some(Target::Element(ElementIndex::new(e))));
        st.cursor_entry = Some(1234);
        st.history.hide_freed = true;
        let Some(frag) = fragment_of(&st) else { panic!("a file is shown") };
        let text = format(&frag, str::to_string);
        assert!(text.contains("file=demo.pickle") && text.contains("entry=1234"), "{text}");

        let read = parse(&format!("#{text}"), str::to_string);
        assert_eq!(read, frag);
        let mut fresh = ViewState::default();
        apply_at_start(&mut fresh, &read);
        assert!(fresh.history.hide_freed);
        assert_eq!(fresh.restore_file.as_deref(), Some("demo.pickle"));
        let mut shown = demo();
        shown.history.hide_freed = fresh.history.hide_freed;
        assert_eq!(restore(&mut shown, &read), None, "the same Detail: no new layout");
        let Some(g) = shown.file() else { panic!("a file is shown") };
        assert_eq!((g.viewport.x0, g.viewport.x1), window);
        assert_eq!(shown.cursor_entry, Some(1234));
        assert_eq!(shown.pin_key(), st.pin_key());
        assert_eq!(fragment_of(&shown), Some(frag));
    }

    /// A fragment of another file restores nothing; the whole trace shown writes no window.
    #[test]
    fn another_files_place_is_not_applied() {
        let mut st = demo();
        let frag = Fragment { file: Some("other.pickle".into()), x_steps: Some((10.0, 20.0)), ..Fragment::default() };
        assert_eq!(restore(&mut st, &frag), None);
        let Some(f) = st.file() else { panic!("a file is shown") };
        assert!(f.viewport.is_full());
        assert_eq!(fragment_of(&st).and_then(|f| f.x_steps), None);
    }
}
