//! The Categories chart's window on a real profiler memory timeline (a GPT under the profiler).

#![allow(clippy::expect_used)]

use memviz_core::analysis::categories::read_profiler_timeline;

use super::super::panels::{Action, AnalysisState, CategoriesState, PROFILE_POINTS};
use super::{plot_fraction, CHART_LEFT_PX, CHART_RIGHT_PX};

static TIMELINE: &[u8] = include_bytes!("../../../../tests/data/real/gpt_profile.timeline.json");

const WIDTH_PX: f64 = 1000.0;

fn state() -> CategoriesState {
    let mut s = CategoriesState::default();
    s.set_profile("gpt_profile.timeline.json".into(), read_profiler_timeline(TIMELINE).expect("a timeline"));
    s
}

/// x of the chart's pixel at `share` of its plot area.
fn px(share: f64) -> f64 {
    CHART_LEFT_PX + share * (WIDTH_PX - CHART_LEFT_PX - CHART_RIGHT_PX)
}

#[test]
fn the_wheel_zooms_around_the_pointer_and_the_window_shows_its_own_points() {
    let mut s = state();
    let p = s.profile.as_ref().expect("profile");
    let span = p.span();
    assert!(p.is_whole() && p.points > PROFILE_POINTS, "more points than drawn: {}", p.points);
    let seq = (s.profile_seq, s.window_seq);
    s.zoom_at(px(0.25), WIDTH_PX, 0.1);
    assert_eq!(s.profile_seq, seq.0, "the same profile");
    assert!(s.window_seq > seq.1, "drawn again");
    let p = s.profile.as_ref().expect("profile");
    let (x0, x1) = p.window();
    assert!(((x1 - x0) - span * 0.1).abs() < 1e-6 * span, "a tenth of the span: {x0}..{x1} of {span}");
    assert!((x0 + 0.25 * (x1 - x0) - 0.25 * span).abs() < 1e-6 * span, "the point under the pointer stays");
    // The points drawn are those of the window (and one on either side), at most PROFILE_POINTS,
    // and their highest total is the highest of the whole timeline's points in the window.
    let shown = &p.timeline;
    assert!(shown.bytes.len() <= PROFILE_POINTS && shown.bytes.len() > 2);
    let inside: Vec<usize> = (0..p.points).filter(|&i| (x0..=x1).contains(&p.x_of(i))).collect();
    let want = inside.iter().map(|&i| p.full.total_at(i)).max().expect("points inside");
    let got = (1..shown.bytes.len() - 1).map(|i| shown.total_at(i)).max().expect("shown");
    assert_eq!(got, want, "the window's peak survives the cut");
}

#[test]
fn pans_stay_inside_the_timeline_and_zooming_out_ends_at_the_whole() {
    let mut s = state();
    s.zoom_at(px(0.5), WIDTH_PX, 0.5);
    s.pan_by(-10.0);
    let p = s.profile.as_ref().expect("profile");
    assert_eq!(p.window().0, 0.0, "not before the first point");
    let w = p.window().1 - p.window().0;
    s.pan_px(-1e6, WIDTH_PX);
    let p = s.profile.as_ref().expect("profile");
    assert!((p.window().1 - p.span()).abs() < 1e-6, "a drag to the left shows later times, up to the last");
    assert!((p.window().1 - p.window().0 - w).abs() < 1e-6, "a pan keeps the width");
    s.zoom_at(px(0.5), WIDTH_PX, 20.0);
    assert!(s.profile.as_ref().expect("profile").is_whole());
    for _ in 0..200 {
        s.zoom_middle(0.5);
    }
    let p = s.profile.as_ref().expect("profile");
    let (x0, x1) = p.window();
    assert!(x1 - x0 >= 1.0 && p.timeline.bytes.len() >= 2, "never narrower than a few points");
}

#[test]
fn the_panels_actions_zoom_pan_and_reset_the_chart() {
    let mut a = AnalysisState::default();
    a.categories = state();
    let rect = crate::viewport::PlotRect { left_px: 0.0, top_px: 0.0, width_px: 1.0, height_px: 1.0 };
    let seq = a.canvas_seq;
    a.apply(Action::CategoryWheel { x_px: px(0.5), width_px: WIDTH_PX, delta_y_px: -600.0 }, None, &rect);
    let w = |a: &AnalysisState| a.categories.profile.as_ref().map(|p| p.window()).expect("profile");
    let (x0, x1) = w(&a);
    assert!(x1 - x0 < a.categories.profile.as_ref().expect("p").span() * 0.5, "wheel up zooms in");
    a.apply(Action::CategoryDrag { dx_px: 100.0, width_px: WIDTH_PX }, None, &rect);
    assert!(w(&a).0 < x0, "a drag to the right shows earlier times");
    a.apply(Action::CategoryKey('→'), None, &rect);
    a.apply(Action::CategoryKey('+'), None, &rect);
    a.apply(Action::CategoryWhole, None, &rect);
    assert!(a.categories.profile.as_ref().expect("p").is_whole());
    a.apply(Action::CategoryKey('+'), None, &rect);
    a.apply(Action::CategoryKey('0'), None, &rect);
    assert!(a.categories.profile.as_ref().expect("p").is_whole());
    assert_eq!(a.canvas_seq, seq, "nothing on the timeline changes");
    assert_eq!(plot_fraction(0.0, WIDTH_PX), 0.0);
    assert_eq!(plot_fraction(WIDTH_PX, WIDTH_PX), 1.0);
}

#[test]
fn an_empty_timeline_has_nothing_to_zoom() {
    let mut s = CategoriesState::default();
    let empty = memviz_core::analysis::categories::CategoryTimeline {
        categories: vec!["PARAMETER".into()],
        times_us: vec![],
        rows: vec![],
        bytes: vec![],
        inferred: false,
        source: "test".into(),
    };
    s.set_profile("empty.json".into(), empty);
    s.zoom_at(px(0.5), WIDTH_PX, 0.1);
    s.pan_by(1.0);
    let p = s.profile.as_ref().expect("profile");
    assert!(p.timeline.bytes.is_empty() && p.shown_x.is_empty());
    assert_eq!(p.timeline.times_us.len(), p.timeline.bytes.len());
}

/// The GPT run's snapshot has the profiler's steps and `record_function` regions; over its
/// memory timeline's chart they sit at their times (`external_annotations` of the pickle, read
/// with Python: ProfilerStep#1 ends 827,541 µs after the timeline's first point, which is
/// 859,109 µs long; ProfilerStep#0 ended before it and ProfilerStep#4 starts after it).
#[test]
fn the_regions_of_the_same_run_are_placed_at_their_times() {
    use memviz_core::{plot::PlotData, timeline::Options};
    static SNAPSHOT: &[u8] = include_bytes!("../../../../tests/data/real/gpt_profile.pickle");
    let snap = memviz_core::load(SNAPSHOT).expect("the snapshot loads");
    let plot = PlotData::build(&snap, 0, Options::default());
    let mut s = state();
    let p = s.profile.as_ref().expect("a profile");
    assert_eq!(p.span(), 859_109.0);
    let phases = p.phases(&plot.annotations, &plot.annotation_rows);
    let names: Vec<&str> = phases.iter().map(|x| x.name.as_str()).collect();
    assert!(!names.contains(&"ProfilerStep#0") && !names.contains(&"ProfilerStep#4"), "{names:?}");
    let step = |phases: &[super::Phase], n: &str| phases.iter().find(|x| x.name == n).cloned().expect(n);
    let one = step(&phases, "ProfilerStep#1");
    assert_eq!((one.from, one.to), (0.0, 827_541.0 / 859_109.0));
    assert!(step(&phases, "## forward ##").row > one.row, "nested regions go below");
    assert_eq!(names.iter().filter(|n| **n == "## backward ##").count(), 3);
    // Zoomed to ProfilerStep#2 and #3, the first step's regions are gone and the rest are cut to the window.
    s.profile.as_mut().expect("a profile").set_window(827_600.0, 859_109.0);
    let p = s.profile.as_ref().expect("a profile");
    let zoomed = p.phases(&plot.annotations, &plot.annotation_rows);
    let two = step(&zoomed, "ProfilerStep#2");
    assert!(two.from < 0.01 && (two.to - (845_880.0 - 827_600.0) / 31_509.0).abs() < 1e-9, "{two:?}");
    assert!(!zoomed.iter().any(|x| x.name == "ProfilerStep#1"), "it ended before the window");
}

/// The pointer reads the point in force at its time: the last at or before it, not the nearest
/// (a point after a long quiet stretch is not yet in force inside it).
#[test]
fn the_reading_at_a_time_is_the_last_point_at_or_before_it() {
    let s = state();
    let p = s.profile.as_ref().expect("profile");
    // The widest gap between two points, and a time three quarters of the way across it.
    let (i, gap) =
        (1..p.points).map(|i| (i - 1, p.x_of(i) - p.x_of(i - 1))).fold((0, 0.0), |b, x| if x.1 > b.1 { x } else { b });
    assert!(gap > 0.0);
    let t = p.x_of(i) + 0.75 * gap;
    assert_eq!(p.point_at(t), Some(i), "the gap's first point holds across it");
    assert_eq!(p.point_at(p.x_of(i + 1)), Some(i + 1), "a point is in force from its own time");
    assert_eq!(p.point_at(-1.0), Some(0), "before the first point: the first");
    assert_eq!(p.point_at(f64::MAX), Some(p.points - 1));
}

/// The minimap draws the whole timeline with its peak, and a click there centres the window
/// at that time with its width kept.
#[test]
fn the_minimap_shows_the_whole_and_moves_the_window() {
    let mut s = state();
    let p = s.profile.as_ref().expect("profile");
    let over = p.overview(PROFILE_POINTS);
    assert!(over.len() <= PROFILE_POINTS && over.len() > 2);
    assert_eq!(over.first().map(|o| o.0), Some(0.0));
    assert_eq!(over.last().map(|o| o.0), Some(p.span()));
    let peak = p.peak.expect("a peak").1;
    assert_eq!(over.iter().map(|o| o.1).max(), Some(peak), "the peak survives the cut");
    let span = p.span();
    s.zoom_at(px(0.1), WIDTH_PX, 0.2);
    let width = |s: &CategoriesState| s.profile.as_ref().map(|p| p.window().1 - p.window().0).expect("p");
    let w = width(&s);
    let mut a = AnalysisState::default();
    a.categories = s;
    let rect = crate::viewport::PlotRect { left_px: 0.0, top_px: 0.0, width_px: 1.0, height_px: 1.0 };
    a.apply(Action::CategoryMinimap { x_px: px(0.5), width_px: WIDTH_PX }, None, &rect);
    let (x0, x1) = a.categories.profile.as_ref().map(|p| p.window()).expect("p");
    assert!(((x0 + x1) / 2.0 - span / 2.0).abs() < 1e-6 * span, "centred at the middle: {x0}..{x1}");
    assert!((width(&a.categories) - w).abs() < 1e-6 * span, "the width kept");
    // At an end the window stops at the timeline's edge.
    a.apply(Action::CategoryMinimap { x_px: 0.0, width_px: WIDTH_PX }, None, &rect);
    assert_eq!(a.categories.profile.as_ref().map(|p| p.window().0), Some(0.0));
}
