#![allow(clippy::expect_used, clippy::unwrap_used)]

use super::*;
use crate::state::PageInput;
use crate::test_state::{open_file, open_state};
use memviz_core::analysis::compare::{compare, CompareOptions};

static FIXED: &[u8] = include_bytes!("../../../../tests/data/real/resnet50_fixed.pickle");
static BUGGY: &[u8] = include_bytes!("../../../../tests/data/real/resnet50_buggy.pickle");

fn two_files() -> ViewState {
    let mut s = open_state(FIXED, "resnet50_fixed.pickle", 15_000, (1000.0, 60.0));
    s.files.push(open_file(BUGGY, "resnet50_buggy.pickle", 15_000));
    s
}

#[test]
fn each_iteration_starts_at_its_number_in_both_files() {
    let s = two_files();
    let (fa, fb) = (&s.files[0], &s.files[1]);
    let c = compare(&fa.snap, 0, &fb.snap, 0, CompareOptions::default());
    assert_eq!(aligned_domain(&c), (0.0, 5.0));
    for (its, f) in [(&c.a_iterations, fa), (&c.b_iterations, fb)] {
        let m = aligned_map(&c, its, &f.plot.layout);
        for (k, it) in its.list.iter().enumerate() {
            let step = f64::from(f.plot.layout.step_for_row(it.start_row));
            assert_eq!(m.us_at_step(step), k as f64, "iteration {} starts at {k}", k + 1);
            assert_eq!(m.step_at_us(k as f64), step);
        }
        let end = f64::from(f.plot.layout.step_for_row(its.list[4].end_row));
        assert_eq!(m.us_at_step(end), 5.0);
    }
    // The two files' iterations differ in length: the same position is another step in each.
    let (ma, mb) =
        (aligned_map(&c, &c.a_iterations, &fa.plot.layout), aligned_map(&c, &c.b_iterations, &fb.plot.layout));
    assert_ne!(ma.step_at_us(2.5), mb.step_at_us(2.5));
}

#[test]
fn one_window_and_one_cursor_for_both() {
    let mut s = two_files();
    assert!(!s.compare_shown());
    assert_eq!(s.apply(PageInput::ToggleCompare, 0.0), vec![Effect::LayoutChanged]);
    assert!(s.compare_shown());
    assert_eq!(s.compare_pair(), Some((0, 1)));
    assert_eq!(s.compare_view().window(), (0.0, 1.0));
    // The wheel zooms at the pointer: the share under it stays under it.
    let held = s.apply(PageInput::Compare(CompareInput::Wheel { at: 0.25, delta_y_px: -600.0 }), 1000.0);
    // The wheel's frames stretch the last exact charts until it rests.
    assert_eq!(held, vec![Effect::HoldPreview { until_ms: 1000.0 + crate::state::PREVIEW_HOLD_MS }]);
    assert!(s.compare_view().previewing(1000.0 + crate::state::PREVIEW_HOLD_MS - 1.0));
    assert!(!s.compare_view().previewing(1000.0 + crate::state::PREVIEW_HOLD_MS));
    let (a, b) = s.compare_view().window();
    assert!(b - a < 0.5, "{a}..{b}");
    assert!((a + 0.25 * (b - a) - 0.25).abs() < 1e-9);
    assert_eq!(s.compare_view().cursor(), Some(0.25));
    // A drag pans by what the pointer moved.
    s.apply(PageInput::Compare(CompareInput::Down { at: 0.5 }), 0.0);
    s.apply(PageInput::Compare(CompareInput::Move { at: 0.25, on: None }), 0.0);
    s.apply(PageInput::Compare(CompareInput::Up), 0.0);
    let (c, d) = s.compare_view().window();
    assert!(((c - a) - 0.25 * (b - a)).abs() < 1e-9 && ((d - c) - (b - a)).abs() < 1e-9);
    s.apply(PageInput::Compare(CompareInput::Leave), 0.0);
    assert_eq!(s.compare_view().cursor(), None);
    s.apply(PageInput::Compare(CompareInput::Reset), 0.0);
    assert_eq!(s.compare_view().window(), (0.0, 1.0));
    assert_eq!(window_in((0.5, 0.75), (0.0, 4.0)), (2.0, 3.0));
    // A and B change places; B cannot be A.
    assert_eq!(s.apply(PageInput::Compare(CompareInput::Swap), 0.0), vec![Effect::FileShown]);
    assert_eq!(s.compare_pair(), Some((1, 0)));
    assert!(s.apply(PageInput::Compare(CompareInput::SelectB(1)), 0.0).is_empty());
    assert_eq!(s.compare_pair(), Some((1, 0)));
    assert_eq!(s.apply(PageInput::ToggleCompare, 0.0), vec![Effect::LayoutChanged]);
    assert!(!s.compare_shown());
}

#[test]
fn one_file_has_nothing_to_compare() {
    let mut s = open_state(FIXED, "resnet50_fixed.pickle", 15_000, (1000.0, 60.0));
    s.apply(PageInput::ToggleCompare, 0.0);
    assert!(!s.compare_shown());
}

#[test]
fn a_link_keeps_the_pair_and_opens_it_once_both_files_are_in() {
    let mut s = two_files();
    s.apply(PageInput::Compare(CompareInput::Swap), 0.0);
    s.apply(PageInput::ToggleCompare, 0.0);
    let frag = crate::state::place::fragment_of(&s).expect("fragment");
    assert_eq!(frag.compare, Some(("resnet50_buggy.pickle".into(), "resnet50_fixed.pickle".into())));
    let text = crate::fragment::format(&frag, |p| p.replace(',', "%2C"));
    assert!(text.contains("compare=resnet50_buggy.pickle,resnet50_fixed.pickle"), "{text}");
    let back = crate::fragment::parse(&text, |p| p.replace("%2C", ","));
    assert_eq!(back.compare, frag.compare);
    // A page opened from that link: nothing until both files are open, then the pair.
    let mut fresh = ViewState::default();
    crate::state::place::apply_at_start(&mut fresh, &back);
    assert!(!fresh.restore_compare());
    fresh.files.push(open_file(FIXED, "resnet50_fixed.pickle", 15_000));
    fresh.current = Some(0);
    assert!(!fresh.restore_compare());
    fresh.files.push(open_file(BUGGY, "resnet50_buggy.pickle", 15_000));
    assert!(fresh.restore_compare());
    assert_eq!(fresh.compare_pair(), Some((1, 0)));
    assert!(fresh.compare_shown());
    assert!(!fresh.restore_compare(), "once");
}

/// Two files without iterations: each trace's share on the axis, step 0 at 0 and its last step
/// at 1, whatever their lengths.
#[test]
fn without_iterations_each_trace_spans_the_axis() {
    static OOM: &[u8] = include_bytes!("../../../../tests/data/synth/oom.pickle");
    static MULTI: &[u8] = include_bytes!("../../../../tests/data/synth/multi_stream.pickle");
    let (fa, fb) = (open_file(OOM, "oom.pickle", 15_000), open_file(MULTI, "multi_stream.pickle", 15_000));
    let c = compare(&fa.snap, fa.plot.device_pos, &fb.snap, fb.plot.device_pos, CompareOptions::default());
    assert_eq!(c.alignment, Alignment::Proportion);
    assert_eq!(aligned_domain(&c), (0.0, 1.0));
    for (its, f) in [(&c.a_iterations, &fa), (&c.b_iterations, &fb)] {
        let m = aligned_map(&c, its, &f.plot.layout);
        let end = f64::from(f.plot.layout.steps);
        assert_eq!((m.us_at_step(0.0), m.us_at_step(end)), (0.0, 1.0));
        assert!((m.us_at_step(end / 2.0) - 0.5).abs() < 1e-12);
        assert_eq!(m.step_at_us(0.25), end / 4.0);
    }
    assert_ne!(fa.plot.layout.steps, fb.plot.layout.steps);
}

/// Fixed against buggy at iteration 5's peak: the marked allocations are live then, and since a
/// counterpart has the same size, what is marked in B minus what is marked in A is exactly the
/// difference of their live bytes there (26,499,328 bytes, each iteration's peak difference).
#[test]
fn where_the_runs_part_is_marked_on_both_timelines() {
    let s = two_files();
    let (fa, fb) = (&s.files[0], &s.files[1]);
    let c = compare(&fa.snap, 0, &fb.snap, 0, CompareOptions::default());
    let (ra, rb, label) = parting_moment(&c).expect("moment");
    assert_eq!(label, "iteration 5 peak");
    let [ma, mb] = parting_elements(&c, (&fa.snap, &fa.plot.layout), (&fb.snap, &fb.plot.layout));
    let live = |l: &Layout, r: Option<u32>, e: memviz_core::timeline::ElementIndex| {
        let el = l.element(e).expect("element");
        let r = r.expect("row");
        el.alloc_row.is_none_or(|x| x <= r) && el.free_row.is_none_or(|f| f > r)
    };
    assert!(ma.iter().all(|&e| live(&fa.plot.layout, ra, e)));
    assert!(mb.iter().all(|&e| live(&fb.plot.layout, rb, e)));
    let bytes = |l: &Layout, m: &[memviz_core::timeline::ElementIndex]| -> u64 {
        m.iter().filter_map(|&e| l.element(e)).map(|e| e.size_bytes).sum()
    };
    let (marked_a, marked_b) = (bytes(&fa.plot.layout, &ma), bytes(&fb.plot.layout, &mb));
    let p = c.points.iter().find(|p| p.label == label).expect("point");
    assert_eq!(i128::from(marked_b) - i128::from(marked_a), i128::from(p.b_bytes) - i128::from(p.a_bytes));
    assert_eq!(marked_b - marked_a, 26_499_328);
    assert!(!mb.is_empty() && mb.len() < 300, "{} marked in B", mb.len());
}

#[test]
fn a_picked_row_marks_exactly_the_allocations_the_table_counts_in_both_files() {
    let s = two_files();
    let (fa, fb) = (&s.files[0], &s.files[1]);
    let options = CompareOptions { key: memviz_core::analysis::compare::KeyMode::Line, ..CompareOptions::default() };
    let c = compare(&fa.snap, 0, &fb.snap, 0, options);
    let k = parting_point(&c).expect("point");
    let mut rows = 0;
    for (more_in_b, diffs) in [(true, &c.points[k].more_in_b), (false, &c.points[k].more_in_a)] {
        for (i, d) in diffs.iter().enumerate() {
            let row = PickedRow { point: k, more_in_b, i };
            let p = picked_elements(&c, row, (&fa.snap, &fa.plot.layout), (&fb.snap, &fb.plot.layout)).expect("row");
            assert_eq!(p.site, d.site);
            assert_eq!((p.elements[0].len(), p.bytes[0]), (d.a_count, d.a_bytes), "A of {}", d.site);
            assert_eq!((p.elements[1].len(), p.bytes[1]), (d.b_count, d.b_bytes), "B of {}", d.site);
            // The bytes are the elements' own.
            let sum = |l: &Layout, m: &[memviz_core::timeline::ElementIndex]| -> u64 {
                m.iter().filter_map(|&e| l.element(e)).map(|e| e.size_bytes).sum()
            };
            assert_eq!(sum(&fa.plot.layout, &p.elements[0]), p.bytes[0]);
            assert_eq!(sum(&fb.plot.layout, &p.elements[1]), p.bytes[1]);
            rows += 1;
        }
    }
    assert!(rows >= 2, "{rows} rows");
    let none = PickedRow { point: k, more_in_b: true, i: 10_000 };
    assert_eq!(picked_elements(&c, none, (&fa.snap, &fa.plot.layout), (&fb.snap, &fb.plot.layout)), None);
}

#[test]
fn picking_a_row_shows_the_compare_view_and_holds_for_its_pair_only() {
    use crate::state::panels::Action;
    let mut s = two_files();
    s.files.push(open_file(FIXED, "resnet50_fixed_again.pickle", 15_000));
    let row = Action::CompareRow { point: 1, more_in_b: true, i: 0 };
    assert_eq!(s.apply(PageInput::Analysis(row), 0.0), vec![Effect::LayoutChanged]);
    assert!(s.compare_shown(), "the row is marked where both timelines are");
    assert_eq!(s.compare_picked(), Some(PickedRow { point: 1, more_in_b: true, i: 0 }));
    // The pointer over B's timeline, then off the charts.
    let on = Some(OnTimeline { b: true, up: 0.5 });
    s.apply(PageInput::Compare(CompareInput::Move { at: 0.3, on }), 0.0);
    assert_eq!(s.compare_view().on(), on);
    s.apply(PageInput::Compare(CompareInput::Down { at: 0.3 }), 0.0);
    assert_eq!(s.compare_view().on(), None, "no hover while dragging");
    s.apply(PageInput::Compare(CompareInput::Up), 0.0);
    s.apply(PageInput::Compare(CompareInput::Leave), 0.0);
    assert_eq!(s.compare_view().on(), None);
    // The same row again: unmarked, the view stays.
    s.apply(PageInput::Analysis(row), 0.0);
    assert_eq!(s.compare_picked(), None);
    assert!(s.compare_shown());
    // Another pair: the row's indices are of the first pair's comparison.
    s.apply(PageInput::Analysis(row), 0.0);
    s.apply(PageInput::Compare(CompareInput::SelectB(2)), 0.0);
    assert_eq!(s.compare_picked(), None);
    s.apply(PageInput::Compare(CompareInput::SelectB(1)), 0.0);
    assert_eq!(s.compare_picked(), Some(PickedRow { point: 1, more_in_b: true, i: 0 }));
    s.apply(PageInput::Compare(CompareInput::Swap), 0.0);
    assert_eq!(s.compare_picked(), None, "A and B changed places");
}

#[test]
fn detail_follows_the_one_window_in_both_timelines_with_a_detail() {
    let mut s = two_files();
    s.apply(PageInput::ToggleCompare, 0.0);
    let (fa, fb) = (&s.files[0], &s.files[1]);
    let c = compare(&fa.snap, 0, &fb.snap, 0, CompareOptions::default());
    assert_eq!(compare_focus_rows(&c, &s), Some([None, None]), "the whole view");
    // A's Detail 50, B's 15,000: the Compare view draws both with A's.
    let o = memviz_core::timeline::Options { max_entries: 50, ..s.files[0].plot.layout.options };
    s.files[0].plot.layout = Layout::build(&s.files[0].snap, 0, o);
    assert!(s.refocus_compare([None, None]));
    assert_eq!(s.files[1].plot.layout.options.max_entries, 50);
    assert!(!s.refocus_compare([None, None]), "nothing more to do");
    // Zoomed into iteration 4: each file's rows of that iteration.
    for _ in 0..6 {
        s.apply(PageInput::Compare(CompareInput::Wheel { at: 0.7, delta_y_px: -300.0 }), 0.0);
    }
    let rows = compare_focus_rows(&c, &s).expect("rows");
    for (k, (r, its)) in rows.iter().zip([&c.a_iterations, &c.b_iterations]).enumerate() {
        let (r0, r1) = r.expect("a window");
        let it = &its.list[3];
        assert!(
            r0 >= it.start_row && r1 <= it.end_row + 1,
            "file {k}: rows {r0}..{r1} of iteration 4 {}..{}",
            it.start_row,
            it.end_row
        );
        assert!(!s.files[k].plot.layout.draws_all_live_in((r0, r1)), "50 of the whole trace miss some there");
    }
    let generation = s.generation();
    assert!(s.refocus_compare(rows));
    assert!(s.generation() > generation);
    // Each layout now draws the largest 50 live in its part of the window.
    for (k, r) in rows.iter().enumerate() {
        let l = &s.files[k].plot.layout;
        assert_eq!(l.options.focus_rows, *r, "file {k}");
    }
    // Back to the whole view: both unfocused.
    s.apply(PageInput::Compare(CompareInput::Reset), 0.0);
    s.refocus_compare(compare_focus_rows(&c, &s).expect("rows"));
    assert!(s.files.iter().all(|f| f.plot.layout.options.focus_rows.is_none()));
}

#[test]
fn a_file_opened_while_two_are_compared_is_shown_as_its_timeline() {
    let mut s = two_files();
    s.apply(PageInput::ToggleCompare, 0.0);
    assert!(s.compare_shown());
    let f = open_file(FIXED, "another.pickle", 15_000);
    let (snap, plot) = (f.snap, f.plot);
    s.add_loaded("another.pickle".into(), snap, plot, None, None);
    assert_eq!(s.current, Some(2));
    assert!(!s.compare_shown(), "the file opened is shown");
    // A pair waiting for its files (a link's, two dropped together) is shown once both are in.
    s.compare_when_open("resnet50_fixed.pickle".into(), "another.pickle".into());
    assert!(s.compare_waiting());
    assert!(s.restore_compare());
    assert!(s.compare_shown());
    assert_eq!(s.compare_pair(), Some((0, 2)));
    assert!(!s.compare_waiting());
    s.compare_when_open("resnet50_fixed.pickle".into(), "not open.pickle".into());
    s.forget_compare_when_open();
    assert!(!s.compare_waiting());
}
