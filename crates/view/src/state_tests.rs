//! Tests of [`super::ViewState`]: hit testing, wheel, drag, brush, keys, pins and effects, on
//! the page's demo snapshot (annotated, timed) and a small OOM snapshot.

#![allow(clippy::expect_used)]

use super::*;
use crate::layout_px::{ANNOTATION_ROW_PX, TOP_PX};

static DEMO: &[u8] = include_bytes!("../../../tests/data/real/gpt_amp_annotated.pickle");
static OOM: &[u8] = include_bytes!("../../../tests/data/synth/oom.pickle");

/// A state with `bytes` open on a 1000 × 500 px plot and a 1000 × 60 px overview.
fn state_with(bytes: &[u8]) -> ViewState {
    crate::test_state::open_state(bytes, "x.pickle", 15_000, (1000.0, 60.0))
}

fn demo() -> ViewState {
    state_with(DEMO)
}

fn window(s: &ViewState) -> (f64, f64) {
    let v = &s.file().expect("a file").viewport;
    (v.x0, v.x1)
}

/// A point of the plot where an allocation is drawn: the middle of the plot, low down.
fn element_point(s: &ViewState) -> (f64, f64) {
    let r = s.plot_rect();
    for j in 1..40 {
        for i in 1..40 {
            let (x, y) =
                (r.left_px + r.width_px * f64::from(i) / 40.0, r.bottom_px() - r.height_px * f64::from(j) / 80.0);
            if matches!(s.target_at(x, y), Some(Target::Element(_))) {
                return (x, y);
            }
        }
    }
    panic!("no allocation drawn in the demo's plot");
}

fn wheel(s: &mut ViewState, surface: Surface, x_px: f64, delta_y_px: f64, now_ms: f64) -> Vec<Effect> {
    s.update(TimelineInput::Wheel { surface, x_px, delta_y_px }, now_ms)
}

fn down(s: &mut ViewState, surface: Surface, x_px: f64, y_px: f64) -> Vec<Effect> {
    s.update(TimelineInput::PointerDown { surface, x_px, y_px, button: 0 }, 0.0)
}

fn moved(s: &mut ViewState, surface: Surface, x_px: f64, y_px: f64) -> Vec<Effect> {
    s.update(TimelineInput::PointerMove { surface, x_px, y_px }, 0.0)
}

fn up(s: &mut ViewState, surface: Surface, x_px: f64, y_px: f64) -> Vec<Effect> {
    s.update(TimelineInput::PointerUp { surface, x_px, y_px }, 0.0)
}

fn key(s: &mut ViewState, c: Command) -> Vec<Effect> {
    s.update(TimelineInput::Key(c), 0.0)
}

#[test]
fn a_point_over_a_band_hits_its_allocation() {
    let s = demo();
    let (x, y) = element_point(&s);
    let Some(Target::Element(e)) = s.target_at(x, y) else { panic!("an element") };
    assert!(e.as_usize() < s.file().expect("file").plot.layout.elements.len());
}

#[test]
fn above_the_stack_nothing_is_hit() {
    let s = demo();
    let r = s.plot_rect();
    // The y axis has headroom above the peak: the top pixel row of the plot holds nothing.
    assert_eq!(s.target_at(r.left_px + r.width_px / 2.0, r.top_px + 1.0), None);
}

#[test]
fn outside_the_plot_nothing_is_hit() {
    let s = demo();
    let r = s.plot_rect();
    assert_eq!(s.target_at(r.left_px - 10.0, r.top_px + 50.0), None);
    assert_eq!(s.target_at(r.right_px() + 5.0, r.top_px + 50.0), None);
    assert_eq!(s.target_at(r.left_px + 10.0, r.bottom_px() + 5.0), None);
}

#[test]
fn the_annotation_strip_hits_annotations() {
    let s = demo();
    let f = s.file().expect("file");
    assert!(f.plot.annotation_row_count > 0, "the demo has annotations");
    let r = s.plot_rect();
    let y = TOP_PX + ANNOTATION_ROW_PX / 2.0;
    let hits = (0..200)
        .filter_map(|i| s.target_at(r.left_px + r.width_px * f64::from(i) / 200.0, y))
        .filter(|t| matches!(t, Target::Annotation(_)))
        .count();
    assert!(hits > 0, "some point of the first row is over an annotation");
    assert!(!s.file().expect("file").target_text(Target::Annotation(0)).is_empty());
}

#[test]
fn an_oom_line_is_hit_near_it() {
    let s = state_with(OOM);
    let f = s.file().expect("file");
    let o = *f.plot.ooms.first().expect("an OOM mark");
    let r = s.plot_rect();
    let x = f.viewport.x_px(&r, f.xmap().pos(o.step));
    let y = r.top_px + r.height_px / 2.0;
    assert_eq!(s.target_at(x.min(r.right_px() - 1.0), y), Some(Target::Oom(0)));
    assert!(!f.target_text(Target::Oom(0)).is_empty());
}

#[test]
fn no_file_hits_nothing_and_inputs_do_nothing() {
    let mut s = ViewState { plot_css: (800.0, 400.0), ..ViewState::default() };
    assert_eq!(s.target_at(400.0, 200.0), None);
    assert!(wheel(&mut s, Surface::Plot, 400.0, 100.0, 0.0).is_empty());
    assert!(down(&mut s, Surface::Plot, 400.0, 200.0).is_empty());
    assert!(up(&mut s, Surface::Plot, 400.0, 200.0).is_empty() || s.pinned.is_none());
    assert!(key(&mut s, Command::ZoomIn).is_empty());
    assert_eq!(s.drag, None);
}

#[test]
fn the_wheel_zooms_in_around_the_pointer() {
    let mut s = demo();
    let r = s.plot_rect();
    let x = r.left_px + r.width_px * 0.25;
    let before = s.file().expect("file").viewport;
    let anchor = before.pos_at(&r, x);
    wheel(&mut s, Surface::Plot, x, -200.0, 0.0);
    let after = s.file().expect("file").viewport;
    assert!(after.width() < before.width());
    assert!((after.pos_at(&r, x) - anchor).abs() < 1e-6 * before.width(), "the position under the pointer stays");
}

#[test]
fn the_wheel_zooms_out_back_to_the_whole_trace_at_most() {
    let mut s = demo();
    let full = window(&s);
    wheel(&mut s, Surface::Plot, 500.0, -300.0, 0.0);
    for _ in 0..20 {
        wheel(&mut s, Surface::Plot, 500.0, 600.0, 0.0);
    }
    assert_eq!(window(&s), full);
}

#[test]
fn a_wheel_holds_the_preview_for_a_while() {
    let mut s = demo();
    let e = wheel(&mut s, Surface::Plot, 500.0, -100.0, 1000.0);
    assert_eq!(e, vec![Effect::HoldPreview { until_ms: 1000.0 + PREVIEW_HOLD_MS }]);
    assert!(s.previewing(1000.0 + PREVIEW_HOLD_MS - 1.0));
    assert!(!s.previewing(1000.0 + PREVIEW_HOLD_MS));
}

#[test]
fn the_wheel_over_the_overview_zooms_around_that_place_of_the_whole_trace() {
    let mut s = demo();
    let m = s.minimap_rect();
    let full = window(&s).1;
    wheel(&mut s, Surface::Minimap, m.left_px + m.width_px * 0.75, -400.0, 0.0);
    let (a, b) = window(&s);
    assert!(b - a < full);
    assert!(a < 0.75 * full && b > 0.75 * full, "the window holds the point under the pointer");
}

#[test]
fn dragging_the_plot_pans_it() {
    let mut s = demo();
    wheel(&mut s, Surface::Plot, 500.0, -400.0, 0.0);
    let (a, b) = window(&s);
    let r = s.plot_rect();
    down(&mut s, Surface::Plot, 600.0, 200.0);
    let e = moved(&mut s, Surface::Plot, 500.0, 200.0);
    assert!(matches!(e.as_slice(), [Effect::HoldPreview { .. }]));
    let (c, d) = window(&s);
    let per_px = (b - a) / r.width_px;
    assert!((c - (a + 100.0 * per_px)).abs() < 1e-6 * (b - a), "the window moved by 100 px");
    assert!(((d - c) - (b - a)).abs() < 1e-6 * (b - a), "its width stays");
    assert_eq!(s.hover, None, "nothing is hovered while panning");
    up(&mut s, Surface::Plot, 500.0, 200.0);
    assert_eq!(s.drag, None);
    assert_eq!(s.pinned, None, "a drag pins nothing");
}

#[test]
fn a_pan_stops_at_the_ends() {
    let mut s = demo();
    wheel(&mut s, Surface::Plot, 500.0, -400.0, 0.0);
    down(&mut s, Surface::Plot, 200.0, 200.0);
    moved(&mut s, Surface::Plot, 100_000.0, 200.0);
    assert_eq!(window(&s).0, 0.0);
    moved(&mut s, Surface::Plot, -100_000.0, 200.0);
    let full = s.file().expect("file").viewport.full_x1;
    assert!((window(&s).1 - full).abs() < 1e-9);
}

#[test]
fn a_click_pins_what_is_under_the_pointer_and_esc_unpins() {
    let mut s = demo();
    let (x, y) = element_point(&s);
    down(&mut s, Surface::Plot, x, y);
    let e = up(&mut s, Surface::Plot, x + 1.0, y);
    assert!(e.is_empty(), "{e:?}");
    let pinned = s.pinned.expect("pinned");
    assert!(matches!(pinned, Target::Element(_)));
    assert_eq!(s.hover, Some(pinned));
    assert!(key(&mut s, Command::Unpin).is_empty());
    assert_eq!(s.pinned, None);
}

#[test]
fn a_click_moves_the_live_sets_moment_only_while_the_live_tab_is_shown() {
    let mut s = demo();
    let (x, y) = element_point(&s);
    down(&mut s, Surface::Plot, x, y);
    up(&mut s, Surface::Plot, x, y);
    assert_eq!(s.analysis.moment, None, "the panel is closed: the click only pins");
    s.analysis.open = true;
    s.analysis.tab = panels::Tab::Live;
    down(&mut s, Surface::Plot, x, y);
    up(&mut s, Surface::Plot, x, y);
    let f = s.file().expect("file");
    let step = f.xmap().step(f.viewport.pos_at(&s.plot_rect(), x));
    let want = memviz_core::analysis::Moment::at_step(&f.plot.layout, step);
    assert_eq!(s.analysis.moment, Some(want));
}

#[test]
fn a_click_on_empty_space_unpins() {
    let mut s = demo();
    let (x, y) = element_point(&s);
    down(&mut s, Surface::Plot, x, y);
    up(&mut s, Surface::Plot, x, y);
    assert!(s.pinned.is_some());
    let r = s.plot_rect();
    down(&mut s, Surface::Plot, r.left_px + 5.0, r.top_px + 1.0);
    up(&mut s, Surface::Plot, r.left_px + 5.0, r.top_px + 1.0);
    assert_eq!(s.pinned, None);
}

#[test]
fn only_the_main_button_starts_a_drag() {
    let mut s = demo();
    s.update(TimelineInput::PointerDown { surface: Surface::Plot, x_px: 300.0, y_px: 200.0, button: 2 }, 0.0);
    assert_eq!(s.drag, None);
}

#[test]
fn esc_while_loading_asks_to_cancel_and_keeps_the_pin() {
    let mut s = demo();
    s.pinned = Some(Target::Summarized);
    s.loading = Some(Loading {
        name: "x".into(),
        fraction: 0.5,
        phase: "Reading",
        read_bytes: 1,
        total_bytes: 2,
        left_ms: None,
        shown: true,
    });
    assert_eq!(key(&mut s, Command::Unpin), vec![Effect::CancelLoad]);
    assert_eq!(s.pinned, Some(Target::Summarized));
}

#[test]
fn a_load_is_shown_once_marked_so() {
    let mut s = demo();
    let loading = Loading {
        name: "x".into(),
        fraction: 0.0,
        phase: "Reading",
        read_bytes: 0,
        total_bytes: 2,
        left_ms: None,
        shown: false,
    };
    s.loading = Some(loading.clone());
    assert_eq!(s.loading_shown(), None);
    // Esc still stops it.
    assert_eq!(key(&mut s, Command::Unpin), vec![Effect::CancelLoad]);
    s.loading = Some(Loading { shown: true, ..loading });
    assert_eq!(s.loading_shown().map(|l| l.name.as_str()), Some("x"));
}

#[test]
fn the_unpin_button_unpins_even_while_loading_and_the_fold_toggles() {
    let mut s = demo();
    s.pinned = Some(Target::Summarized);
    s.loading = Some(Loading {
        name: "x".into(),
        fraction: 0.5,
        phase: "Reading",
        read_bytes: 1,
        total_bytes: 2,
        left_ms: None,
        shown: true,
    });
    assert!(s.update(TimelineInput::Unpin, 0.0).is_empty(), "the load goes on");
    assert_eq!(s.pinned, None);
    assert!(!s.native_frames_open);
    s.update(TimelineInput::ToggleNativeFrames, 0.0);
    assert!(s.native_frames_open);
    s.update(TimelineInput::ToggleNativeFrames, 0.0);
    assert!(!s.native_frames_open);
}

#[test]
fn keys_zoom_pan_and_reset() {
    let mut s = demo();
    let full = window(&s);
    key(&mut s, Command::ZoomIn);
    let (a, b) = window(&s);
    assert!(((b - a) - KEY_ZOOM * (full.1 - full.0)).abs() < 1e-6 * full.1);
    key(&mut s, Command::PanRight);
    let (c, _) = window(&s);
    assert!(c > a);
    key(&mut s, Command::PanLeft);
    key(&mut s, Command::PanLeft);
    assert!(window(&s).0 < c);
    key(&mut s, Command::ZoomOut);
    key(&mut s, Command::Reset);
    assert_eq!(window(&s), full);
}

const KEY_ZOOM: f64 = keys::KEY_ZOOM_FACTOR;

#[test]
fn hover_follows_the_pointer_and_leaves_with_it() {
    let mut s = demo();
    let (x, y) = element_point(&s);
    moved(&mut s, Surface::Plot, x, y);
    assert!(matches!(s.hover, Some(Target::Element(_))));
    s.update(TimelineInput::PointerLeave { surface: Surface::Plot }, 0.0);
    assert_eq!(s.hover, None);
}

#[test]
fn leaving_the_plot_while_panning_keeps_the_drag() {
    let mut s = demo();
    down(&mut s, Surface::Plot, 300.0, 200.0);
    s.update(TimelineInput::PointerLeave { surface: Surface::Plot }, 0.0);
    assert!(matches!(s.drag, Some(Drag::Pan { .. })));
}

#[test]
fn moving_over_the_overview_hovers_nothing() {
    let mut s = demo();
    moved(&mut s, Surface::Minimap, 300.0, 20.0);
    assert_eq!(s.hover, None);
    assert_eq!(s.last_pointer, Some((Surface::Minimap, 300.0, 20.0)));
}

#[test]
fn the_hover_is_found_again_after_a_zoom_under_a_resting_pointer() {
    let mut s = demo();
    let (x, y) = element_point(&s);
    moved(&mut s, Surface::Plot, x, y);
    for _ in 0..8 {
        wheel(&mut s, Surface::Plot, x, -300.0, 0.0);
    }
    assert_eq!(s.hover, s.target_at(x, y));
}

#[test]
fn brushing_the_overview_shows_that_window_with_y_fitted() {
    let mut s = demo();
    let m = s.minimap_rect();
    let full = window(&s).1;
    let y_full = s.file().expect("file").viewport.y_max_bytes;
    let (xa, xb) = (m.left_px + m.width_px * 0.2, m.left_px + m.width_px * 0.4);
    down(&mut s, Surface::Minimap, xa, 30.0);
    moved(&mut s, Surface::Minimap, xb, 30.0);
    assert!(matches!(s.drag, Some(Drag::Brush { .. })));
    up(&mut s, Surface::Minimap, xb, 30.0);
    let (a, b) = window(&s);
    assert!((a - 0.2 * full).abs() < 1e-6 * full && (b - 0.4 * full).abs() < 1e-6 * full);
    assert!(s.file().expect("file").viewport.y_max_bytes <= y_full);
}

#[test]
fn a_click_on_the_overview_centres_the_window_there() {
    let mut s = demo();
    key(&mut s, Command::ZoomIn);
    key(&mut s, Command::ZoomIn);
    let (a, b) = window(&s);
    let m = s.minimap_rect();
    let full = s.file().expect("file").viewport.full_x1;
    let x = m.left_px + m.width_px * 0.5;
    down(&mut s, Surface::Minimap, x, 30.0);
    up(&mut s, Surface::Minimap, x + 1.0, 30.0);
    let (c, d) = window(&s);
    assert!(((d - c) - (b - a)).abs() < 1e-6 * full, "the width stays");
    assert!((((c + d) / 2.0) - full * (x + 1.0 - m.left_px) / m.width_px).abs() < 1e-6 * full);
}

#[test]
fn the_time_axis_keeps_the_window_on_the_same_steps() {
    let mut s = demo();
    assert!(s.file().expect("file").has_time());
    // Built when the axis is first shown (the demo's annotations built it already).
    s.file_mut().expect("file").plot.time = None;
    key(&mut s, Command::ZoomIn);
    key(&mut s, Command::PanRight);
    let f = s.file().expect("file");
    let (s0, s1) = (f.xmap().step(f.viewport.x0), f.xmap().step(f.viewport.x1));
    assert_eq!(s.update(TimelineInput::SetXAxis(XAxis::Time), 0.0), vec![Effect::RefreshMinimap]);
    let f = s.file().expect("file");
    assert_eq!(f.x_axis, XAxis::Time);
    let (t0, t1) = (f.xmap().step(f.viewport.x0), f.xmap().step(f.viewport.x1));
    assert!((t0 - s0).abs() < 1.0 && (t1 - s1).abs() < 1.0, "steps {s0}..{s1} became {t0}..{t1}");
    assert!(s.update(TimelineInput::SetXAxis(XAxis::Time), 0.0).is_empty(), "the same axis again changes nothing");
}

#[test]
fn no_time_axis_without_times() {
    let mut s = demo();
    let f = s.file_mut().expect("file");
    (f.plot.has_time, f.plot.time) = (false, None);
    assert!(s.update(TimelineInput::SetXAxis(XAxis::Time), 0.0).is_empty());
    assert_eq!(s.file().expect("file").x_axis, XAxis::Steps);
}

#[test]
fn a_canvas_measured_while_hidden_breaks_nothing() {
    let mut s = demo();
    s.plot_css = (0.0, 0.0);
    s.minimap_css = (0.0, 0.0);
    let _ = s.target_at(0.0, 0.0);
    wheel(&mut s, Surface::Plot, 0.0, -100.0, 0.0);
    wheel(&mut s, Surface::Minimap, 0.0, 100.0, 0.0);
    down(&mut s, Surface::Plot, 0.0, 0.0);
    moved(&mut s, Surface::Plot, 5.0, 0.0);
    up(&mut s, Surface::Plot, 5.0, 0.0);
    down(&mut s, Surface::Minimap, 0.0, 0.0);
    up(&mut s, Surface::Minimap, 50.0, 0.0);
    let (a, b) = window(&s);
    assert!(a.is_finite() && b.is_finite() && a < b);
}

#[test]
fn full_pos_at_is_clamped_to_the_domain() {
    let v = Viewport::new(1000.0, 10.0, 1.0);
    let m = PlotRect { left_px: 10.0, top_px: 0.0, width_px: 100.0, height_px: 10.0 };
    assert_eq!(full_pos_at(&v, &m, 10.0), 0.0);
    assert_eq!(full_pos_at(&v, &m, 60.0), 500.0);
    assert_eq!(full_pos_at(&v, &m, -50.0), 0.0);
    assert_eq!(full_pos_at(&v, &m, 5000.0), 1000.0);
}

#[test]
fn closing_a_file_shows_the_next_and_moves_what_pointed_at_the_others() {
    let mut s = demo();
    let second = demo().files.pop().expect("a file");
    let third = demo().files.pop().expect("a file");
    s.files[0].source = Some("a|1|0".into());
    s.push_file(second, Some("b|2|0".into()), false);
    assert_eq!(s.current, Some(0), "opened without being shown");
    s.push_file(third, Some("c|3|0".into()), true);
    assert_eq!(s.current, Some(2));
    assert_eq!(s.file_from("b|2|0"), Some(1));
    assert_eq!(s.file_from("x"), None);
    s.analysis.compare_with = Some(2);
    s.history.selected = Some((2, 0, 5));
    s.pinned = Some(Target::Summarized);
    let g = s.generation;
    assert!(s.close_file(1));
    assert_eq!(s.files.len(), 2);
    assert_eq!(s.files[0].source.as_deref(), Some("a|1|0"), "each file keeps its own source");
    assert_eq!(s.current, Some(1), "the shown file moved down");
    assert_eq!(s.analysis.compare_with, Some(1));
    assert_eq!(s.history.selected, Some((1, 0, 5)));
    assert_eq!(s.pinned, None);
    assert!(s.generation > g);
    assert_eq!(s.file_from("c|3|0"), Some(1));
    // Closing the shown file shows the one after it, else the one before.
    assert!(s.close_file(1));
    assert_eq!(s.current, Some(0));
    assert_eq!(s.history.selected, None, "its selection went with it");
    assert!(!s.close_file(5));
    assert!(s.close_file(0));
    assert_eq!(s.current, None);
    assert!(s.files.is_empty());
}

#[test]
fn question_mark_shows_the_help_and_esc_closes_it_before_anything_else() {
    let mut s = demo();
    s.pinned = Some(Target::Summarized);
    assert!(s.update(TimelineInput::Key(Command::Help), 0.0).is_empty());
    assert!(s.help_open);
    s.loading = Some(Loading {
        name: "x".into(),
        fraction: 0.1,
        phase: "Reading",
        read_bytes: 1,
        total_bytes: 9,
        left_ms: None,
        shown: true,
    });
    assert!(s.update(TimelineInput::Key(Command::Unpin), 0.0).is_empty(), "Esc closes the help, not the load");
    assert!(!s.help_open);
    assert_eq!(s.pinned, Some(Target::Summarized));
    assert_eq!(s.update(TimelineInput::Key(Command::Unpin), 0.0), vec![Effect::CancelLoad]);
    s.loading = None;
    s.update(TimelineInput::Key(Command::Unpin), 0.0);
    assert_eq!(s.pinned, None);
    assert_eq!(keys::command_for_key("?", false), Some(Command::Help));
}

#[test]
fn a_click_on_an_annotation_pins_it_and_zooms_to_its_span() {
    let mut s = demo();
    let r = s.plot_rect();
    let y = TOP_PX + ANNOTATION_ROW_PX / 2.0;
    let x = (0..400)
        .map(|i| r.left_px + r.width_px * f64::from(i) / 400.0)
        .find(|&x| matches!(s.target_at(x, y), Some(Target::Annotation(_))))
        .expect("a point over an annotation");
    let Some(Target::Annotation(i)) = s.target_at(x, y) else { panic!("an annotation") };
    let full = s.file().expect("file").viewport;
    down(&mut s, Surface::Plot, x, y);
    up(&mut s, Surface::Plot, x, y);
    assert_eq!(s.pinned, Some(Target::Annotation(i)));
    let f = s.file().expect("file");
    let a = &f.plot.annotations[i];
    let v = f.viewport;
    assert!(v.x0 <= a.start_step && v.x1 > a.end_step, "{v:?} shows {}..{}", a.start_step, a.end_step);
    assert!(v.width() < full.width(), "zoomed in");
    let margin = v.width() - (a.end_step - a.start_step);
    assert!(margin <= (a.end_step - a.start_step) / 10.0 + 1.0 + 1e-9, "a small margin: {margin}");
}

/// A snapshot without history (`enabled='state'`: segments and their blocks, no trace) is one
/// column in the middle of the plot area, fitted to what is live; pointing at the column finds
/// its blocks, pointing beside it finds nothing, and there is no time axis.
#[test]
fn a_snapshot_without_history_is_one_column() {
    let json = br#"{"segments":[{"device":0,"address":1048576,"total_size":4194304,"stream":0,"segment_type":"large","allocated_size":3145728,"active_size":3145728,"requested_size":3145728,"blocks":[{"address":1048576,"size":2097152,"requested_size":2097152,"state":"active_allocated"},{"address":3145728,"size":1048576,"requested_size":1048576,"state":"active_allocated"},{"address":4194304,"size":1048576,"requested_size":0,"state":"inactive"}]}],"device_traces":[[]]}"#;
    let s = state_with(json);
    let f = s.file().expect("file");
    assert!(f.is_moment() && !f.has_time());
    let full = plot_rect(s.plot_css.0, s.plot_css.1, 0);
    let r = s.plot_rect();
    assert!(r.width_px < full.width_px / 2.0 && r.left_px > full.left_px, "a column: {r:?}");
    assert_eq!(f.viewport.full_y_max_bytes, crate::viewport::Viewport::new(1.0, 3_145_728.0, 1.0).full_y_max_bytes);
    let centre = r.left_px + r.width_px / 2.0;
    assert!(matches!(s.target_at(centre, r.bottom_px() - 2.0), Some(Target::Element(_))));
    assert!(matches!(s.target_at(r.left_px + 1.0, r.bottom_px() - 2.0), Some(Target::Element(_))));
    assert_eq!(s.target_at(full.left_px + 5.0, r.bottom_px() - 2.0), None, "beside the column");
    assert_eq!(s.target_at(centre, r.top_px + 2.0), None, "above what is live");
    // A traced file keeps the whole plot area.
    assert_eq!(demo().plot_rect(), plot_rect(1000.0, 500.0, demo().file().expect("file").plot.annotation_row_count));
}

#[test]
fn brackets_focus_the_next_and_previous_rank_of_a_run() {
    let mut s = state_with(OOM);
    // Without a run the keys do nothing.
    assert!(s.update(TimelineInput::Key(Command::NextRank), 0.0).is_empty());
    let paths: Vec<String> = (0..3).map(|r| format!("rank{r}.pickle")).collect();
    s.run = Some(crate::ranks::Run::new(&paths));
    assert!(s.overview_shown());
    assert_eq!(s.update(TimelineInput::Key(Command::NextRank), 0.0), vec![Effect::FocusRank(0)]);
    assert!(s.focus_rank(0));
    assert!(!s.overview_shown());
    assert_eq!(s.update(TimelineInput::Key(Command::PrevRank), 0.0), vec![Effect::FocusRank(2)]);
    assert!(!s.focus_rank(3));
    s.show_overview(true);
    assert!(s.overview_shown());
    s.show_overview(false);
    assert!(!s.overview_shown());
}

#[test]
fn at_most_two_models_stay_and_never_the_one_shown() {
    let mut s = state_with(OOM);
    assert!(s.files_to_release().is_empty());
    for _ in 0..3 {
        let f = state_with(OOM).files.remove(0);
        s.push_file(f, None, false);
    }
    s.current = Some(1);
    // Four files: two go, the oldest first, never file 1; highest index first.
    assert_eq!(s.files_to_release(), vec![2, 0]);
}

#[test]
fn a_released_file_stays_listed_until_it_is_read_again() {
    let mut s = state_with(OOM);
    s.files[0].source = Some("a|1|0".into());
    for key in ["b|2|0", "c|3|0"] {
        let mut f = state_with(OOM).files.remove(0);
        f.name = key[..1].to_string();
        s.push_file(f, Some(key.into()), true);
    }
    assert_eq!(s.current, Some(2));
    for i in s.files_to_release() {
        assert!(s.release_file(i));
    }
    assert_eq!(s.files.len(), 2);
    assert_eq!(s.released, [ReleasedFile { name: s_name(OOM), source: "a|1|0".into() }]);
    // Released again (a second time) it is listed once.
    let f = state_with(OOM).files.remove(0);
    s.push_file(f, Some("a|1|0".into()), true);
    assert!(s.released.is_empty(), "read again: no longer listed as released");
    assert!(s.release_file(0));
    assert!(s.release_file(0));
    assert_eq!(s.released.iter().map(|r| r.source.as_str()).collect::<Vec<_>>(), ["b|2|0", "c|3|0"]);
    // A file with no source (the demo) is closed, not listed.
    s.files[0].source = None;
    assert!(s.release_file(0));
    assert_eq!(s.released.len(), 2);
    assert!(!s.release_file(5));
}

fn s_name(snapshot: &[u8]) -> String {
    state_with(snapshot).files.remove(0).name
}
