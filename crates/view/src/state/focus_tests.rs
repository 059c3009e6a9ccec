use crate::state::{Target, ViewState};
use memviz_core::timeline::ElementKey;

/// `steps` repeats of one training step: four 16 MiB weights live throughout, then 30
/// activations of 1..=30 MiB allocated and freed in reverse.
fn repeated(steps: u64) -> Vec<u8> {
    let alloc = |a: u64, s: u64| format!(r#"{{"action":"alloc","addr":{a},"size":{s},"stream":0}}"#);
    let free = |a: u64, s: u64| format!(r#"{{"action":"free_completed","addr":{a},"size":{s},"stream":0}}"#);
    let mut entries: Vec<String> = (0..4).map(|w| alloc(0x1_0000_0000 + w * 0x1000_0000, 16 << 20)).collect();
    for _ in 0..steps {
        entries.extend((1..=30).map(|k| alloc(0x100_0000_0000 + k * 0x1000_0000, k << 20)));
        entries.extend((1..=30).rev().map(|k| free(0x100_0000_0000 + k * 0x1000_0000, k << 20)));
    }
    format!(r#"{{"segments":[],"device_traces":[[{}]]}}"#, entries.join(",")).into_bytes()
}

/// The plot's points under a grid of the plot area that name the summarized band, and those
/// that name an allocation.
fn hover_grid(s: &ViewState) -> (usize, usize) {
    let r = s.plot_rect();
    let (mut summarized, mut elements) = (0, 0);
    for i in 0..18 {
        for j in 0..6 {
            let x = r.left_px + r.width_px * (f64::from(i) + 0.5) / 18.0;
            let y = r.top_px + r.height_px * (f64::from(j) + 0.5) / 6.0;
            match s.target_at(x, y) {
                Some(Target::Summarized) => summarized += 1,
                Some(Target::Element(_)) => elements += 1,
                _ => {}
            }
        }
    }
    (summarized, elements)
}

/// Zooms the shown file to steps `[a, b]`, fitted in height.
fn zoom(s: &mut ViewState, a: f64, b: f64) {
    let f = s.file_mut().expect("file");
    f.viewport.set_window(a, b);
    let peak = f.plot.layout.max_live_between(a, b);
    f.viewport.fit_y(peak as f64);
}

#[test]
fn a_zoom_late_in_a_long_run_draws_that_steps_allocations_once_it_rests() {
    let bytes = repeated(80);
    let mut s = crate::test_state::open_state(&bytes, "run.json", 40, (1000.0, 60.0));
    let layout = &s.file().expect("file").plot.layout;
    let unfocused = layout.band_element.clone();
    let (a, b) = (
        f64::from(layout.step_of_row(4 + 70 * 60).expect("row")),
        f64::from(layout.step_of_row(4 + 71 * 60 - 1).expect("row")),
    );
    // The whole view: nothing to choose.
    assert!(!s.refocus_detail());
    zoom(&mut s, a, b);
    let (summarized, _) = hover_grid(&s);
    assert!(summarized > 40, "before it rests the window is mostly summarized: {summarized}");
    assert!(s.wants_refocus());
    assert!(s.refocus_detail());
    let (summarized, elements) = hover_grid(&s);
    assert_eq!(summarized, 0, "the step's allocations are drawn, {elements} points name one");
    assert!(elements > 40);
    // Chosen once: the same window asks for nothing more.
    assert!(!s.wants_refocus());
    assert!(!s.refocus_detail());

    // A pin by key survives a move of the window to another step and back to the whole view.
    let x = s.plot_rect().left_px + s.plot_rect().width_px / 2.0;
    let y = s.plot_rect().bottom_px() - 5.0;
    let Some(Target::Element(e)) = s.target_at(x, y) else { panic!("no allocation at the bottom") };
    s.set_pin(Some(Target::Element(e)));
    let key: ElementKey = s.pin_key().expect("key");
    let layout = &s.file().expect("file").plot.layout;
    let (c, d) = (
        f64::from(layout.step_of_row(4 + 20 * 60).expect("row")),
        f64::from(layout.step_of_row(4 + 21 * 60 - 1).expect("row")),
    );
    zoom(&mut s, c, d);
    assert!(s.refocus_detail());
    assert_eq!(s.pin_key(), Some(key));
    let full = s.file().expect("file").full_viewport();
    s.file_mut().expect("file").viewport = full;
    assert!(s.refocus_detail(), "the whole view lays out as before");
    let f = s.file().expect("file");
    assert_eq!(f.plot.layout.options.focus_rows, None);
    assert_eq!(f.plot.layout.band_element, unfocused);
    assert_eq!(s.pin_key(), Some(key));
}

#[test]
fn a_new_detail_keeps_the_focus_of_the_window() {
    let bytes = repeated(40);
    let mut s = crate::test_state::open_state(&bytes, "run.json", 40, (1000.0, 60.0));
    let layout = &s.file().expect("file").plot.layout;
    let (a, b) = (
        f64::from(layout.step_of_row(4 + 30 * 60).expect("row")),
        f64::from(layout.step_of_row(4 + 31 * 60 - 1).expect("row")),
    );
    zoom(&mut s, a, b);
    assert!(s.refocus_detail());
    let rows = s.file().expect("file").plot.layout.options.focus_rows;
    assert!(rows.is_some());
    assert_eq!(s.begin_relayout(), Some(0));
    s.finish_relayout(0, None, Some(20));
    let f = s.file().expect("file");
    assert_eq!((f.plot.layout.options.focus_rows, f.plot.layout.options.max_entries), (rows, 20));
    assert!(!s.wants_refocus());
    let (summarized, elements) = hover_grid(&s);
    assert!(elements > summarized, "{elements} points on allocations, {summarized} summarized");
}
