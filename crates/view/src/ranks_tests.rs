#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

const MIB: u64 = 1 << 20;

/// A digest shaped like a rank of the generated run: a climb to `peak` in each of 5
/// iterations of 100 entries after 10 entries of set-up.
fn digest(peak: u64, reserved: u64) -> RankDigest {
    let mut curve = Vec::new();
    for it in 0..5u32 {
        for k in 0..100u32 {
            let up = if k < 50 { k } else { 100 - k };
            curve.push((10 + it * 100 + k, peak * u64::from(up) / 50));
        }
    }
    RankDigest {
        entries: 510,
        peak_allocated_bytes: peak,
        peak_allocated_entry: Some(60),
        peak_reserved_bytes: reserved,
        peak_reserved_entry: Some(0),
        curve,
        iteration_starts: (0..5).map(|i| 10 + i * 100).collect(),
        ..RankDigest::default()
    }
}

/// Every value of attribute `attr` in `html`, in order.
pub(crate) fn attrs<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    let key = format!("{attr}=\"");
    html.match_indices(&key)
        .filter_map(|(i, _)| {
            let rest = &html[i + key.len()..];
            rest.find('"').map(|j| &rest[..j])
        })
        .collect()
}

/// Eight ranks read: rank 3 at 2.44x the median's peak, rank 5 growing, rank 6 with an OOM.
pub(crate) fn run_of_8() -> Run {
    let paths: Vec<String> = (0..8).rev().map(|r| format!("run/rank{r}_memory_snapshot.pickle")).collect();
    let mut run = Run::new(&paths);
    for i in 0..8 {
        let rank = run.ranks[i].rank;
        let mut d = digest(356 * MIB, 512 * MIB);
        match rank {
            3 => d = digest(868 * MIB, 1024 * MIB),
            5 => {
                d = digest(372 * MIB, 512 * MIB);
                d.grows = true;
            }
            6 => d.oom_entries.push(400),
            _ => {}
        }
        run.set_done(i, d);
    }
    run
}

#[test]
fn ranks_come_from_the_names_in_rank_order() {
    let run = run_of_8();
    assert_eq!(run.rule, NamingRule::RankInName);
    assert_eq!(run.ranks.iter().map(|e| e.rank).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    // The files were given from rank 7 down: rank 0 is the last of them.
    assert_eq!(run.ranks[0].source, 7);
    assert!(run.all_done());
    assert_eq!(run.done_count(), 8);
    assert!(names_give_ranks(&["a/rank0.pickle".into(), "a/rank1.pickle".into()]));
    assert!(!names_give_ranks(&["fixed.pickle".into(), "buggy.pickle".into()]));
    assert!(!names_give_ranks(&["rank0.pickle".into()]));
}

#[test]
fn the_three_outliers_and_their_reasons() {
    let run = run_of_8();
    let o = run.outliers();
    assert_eq!(o, vec![(3, vec!["peak"]), (5, vec!["growth"]), (6, vec!["oom"])]);
    assert_eq!(run.reasons_of(3), vec!["peak"]);
    assert!(run.reasons_of(0).is_empty());
    // The median of 8 is the lower middle one: a rank with the common peak.
    let m = run.median_of(3).unwrap();
    assert_eq!(run.ranks[m].digest().unwrap().peak_allocated_bytes, 356 * MIB);
}

#[test]
fn outliers_are_picked_within_each_iteration() {
    let paths: Vec<String> = ["iteration_1/rank0.pickle", "iteration_1/rank1.pickle", "iteration_2/rank0.pickle"]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    let mut run = Run::new(&paths);
    assert_eq!(
        run.ranks.iter().map(|e| (e.iteration, e.rank)).collect::<Vec<_>>(),
        [(Some(1), 0), (Some(1), 1), (Some(2), 0)]
    );
    run.set_done(0, digest(100, 100));
    run.set_done(1, digest(100, 100));
    // Alone in its iteration, a large peak is its own median.
    run.set_done(2, digest(1000, 1000));
    assert!(run.outliers().is_empty());
    assert_eq!(run.index_of(0, Some(2)), Some(2));
}

#[test]
fn brackets_move_the_focus_around() {
    let mut run = run_of_8();
    assert_eq!(run.step_focus(1), Some(0));
    assert_eq!(run.step_focus(-1), Some(7));
    run.focused = Some(7);
    assert_eq!(run.step_focus(1), Some(0));
    run.focused = Some(3);
    assert_eq!(run.step_focus(-1), Some(2));
    let empty = Run::new(&[]);
    assert_eq!(empty.step_focus(1), None);
}

#[test]
fn bars_are_shares_of_the_longest() {
    let run = run_of_8();
    assert_eq!(run.bar_scale_bytes(), 1024 * MIB);
    let (a, r) = run.bar_shares(3);
    assert!((a - 868.0 / 1024.0).abs() < 1e-9 && (r - 1.0).abs() < 1e-9);
    let (a, r) = run.bar_shares(0);
    assert!((a - 356.0 / 1024.0).abs() < 1e-9 && (r - 0.5).abs() < 1e-9);
    assert_eq!(run.bar_shares(99), (0.0, 0.0));
}

#[test]
fn curves_align_by_iteration_else_by_entry() {
    let run = run_of_8();
    assert!(run.by_iteration());
    let d = run.ranks[0].digest().unwrap();
    assert!((Run::x_of(d, 10, true) - 0.0).abs() < 1e-9);
    assert!((Run::x_of(d, 160, true) - 1.5).abs() < 1e-9);
    assert!((Run::x_of(d, 5, true) + 0.5).abs() < 1e-9);
    assert!((Run::x_of(d, 160, false) - 160.0).abs() < 1e-9);
    let (x0, x1) = run.x_domain();
    assert!((x0 + 1.0).abs() < 1e-9 && x1 > 4.9 && x1 <= 5.0);
    // A rank without iterations: by entry.
    let mut run2 = run.clone();
    run2.set_done(1, RankDigest { iteration_starts: Vec::new(), ..digest(1, 1) });
    assert!(!run2.by_iteration());
}

#[test]
fn curves_fit_their_box_and_a_point_finds_the_nearest() {
    let run = run_of_8();
    let pts = run.curve_px(3, 400.0, 100.0);
    assert!(!pts.is_empty());
    assert!(pts.iter().all(|&(x, y)| (0.0..=400.0).contains(&x) && (0.0..=100.0).contains(&y)));
    // Rank 3's peak is the highest: the top of the box.
    assert!(pts.iter().any(|p| p.1.abs() < 1e-9));
    let (x, y) = *pts.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    assert_eq!(run.curve_at(400.0, 100.0, x, y + 1.0, 4.0), Some(3));
    assert_eq!(run.curve_at(400.0, 100.0, x, y - 50.0, 4.0), None);
    // At most two points a pixel column.
    assert!(run.curve_px(3, 40.0, 10.0).len() <= 2 * 41);
}

#[test]
fn a_digest_crosses_threads_as_bytes() {
    let mut d = digest(5, 6);
    d.top_stacks = vec![("train.py:20 forward".into(), 5)];
    d.peak_stacks = moment(&[("train.py:20 forward", 5), ("train.py:9 <module>", 2)], 1);
    d.iteration_peak_stacks = vec![moment(&[("a", 3)], 0), MomentStacks::default()];
    d.problems = vec!["growth".into()];
    d.oom_entries = vec![3];
    let (head, parts) = memviz_core::wire::encode(&d);
    let back: RankDigest = memviz_core::wire::decode(&head, &mut memviz_core::wire::PartList::new(parts)).unwrap();
    assert_eq!(back, d);
}

fn moment(stacks: &[(&str, u64)], unkept_max_bytes: u64) -> MomentStacks {
    MomentStacks { stacks: stacks.iter().map(|&(l, b)| (l.to_string(), b)).collect(), unkept_max_bytes }
}

fn row(label: &str, outlier: StackBytes, median: StackBytes) -> StackDifference {
    StackDifference { label: label.to_string(), outlier, median }
}

#[test]
fn stacks_that_differ_largest_first() {
    use StackBytes::Exact;
    let mut a = digest(10, 10);
    a.peak_stacks = moment(&[("forward", 300), ("params", 100), ("keep", 16)], 0);
    let mut m = digest(10, 10);
    m.peak_stacks = moment(&[("forward", 100), ("params", 100), ("other", 8)], 0);
    assert_eq!(
        stack_differences(&a, &m),
        vec![
            row("forward", Exact(300), Exact(100)),
            row("keep", Exact(16), Exact(0)),
            row("other", Exact(0), Exact(8))
        ]
    );
    // With iterations, the median is read at the peak of the iteration the outlier peaks in.
    a.iteration_starts = vec![0, 10, 20];
    a.peak_allocated_entry = Some(14);
    m.iteration_starts = vec![0, 12, 24];
    m.iteration_peak_stacks = vec![moment(&[("forward", 1)], 0), moment(&[("forward", 200), ("params", 100)], 0)];
    assert_eq!(matched_iteration(&a, &m), Some(1));
    assert_eq!(
        stack_differences(&a, &m),
        vec![row("forward", Exact(300), Exact(200)), row("keep", Exact(16), Exact(0))]
    );
    // A median with fewer iterations: its own peak.
    m.iteration_peak_stacks.truncate(1);
    assert_eq!(matched_iteration(&a, &m), None);
    a.peak_allocated_entry = None;
    assert_eq!(matched_iteration(&a, &m), None);
}

/// A stack beyond the other side's five largest is looked up in all it kept, not read as 0; one
/// it did not keep reads as at most the largest it left out.
#[test]
fn a_stack_outside_the_other_sides_top_is_looked_up() {
    use StackBytes::{AtMost, Exact};
    let mut a = digest(10, 10);
    a.peak_stacks = moment(&[("adam.py:178", 50), ("linear.py:134", 24), ("x", 1), ("y", 1), ("z", 1), ("w", 1)], 0);
    let mut m = digest(10, 10);
    let many: Vec<(String, u64)> = (0..6).map(|i| (format!("big{i}"), 100 - i)).collect();
    let mut kept: Vec<(&str, u64)> = many.iter().map(|(l, b)| (l.as_str(), *b)).collect();
    kept.push(("adam.py:178", 50));
    m.peak_stacks = moment(&kept, 3);
    let rows = stack_differences(&a, &m);
    // adam.py:178 is equal on both sides, so no row; linear.py:134 is not kept by the median.
    assert!(rows.iter().all(|r| r.label != "adam.py:178"), "{rows:?}");
    let lin = rows.iter().find(|r| r.label == "linear.py:134").unwrap();
    assert_eq!((lin.outlier, lin.median), (Exact(24), AtMost(3)));
    assert_eq!(lin.delta_bytes(), None);
    assert!(rows.iter().all(|r| r.median != Exact(0) || !r.label.starts_with("big")));
    let big = rows.iter().find(|r| r.label == "big0").unwrap();
    assert_eq!((big.outlier, big.median, big.delta_bytes()), (Exact(0), Exact(100), Some(-100)));
}

/// The overview's table equals the live sets at the same entries, row by row, on real files
/// whose largest stacks differ (each taken as the outlier against the other): every byte count
/// shown exactly is what the Live set says there, every bound holds, and a stack beyond the other
/// side's five largest is among the rows with its true bytes (the 0 B of a stack not kept).
#[test]
fn what_differs_equals_the_live_sets_at_the_matched_entries() {
    use memviz_core::analysis::growth::insights_with;
    use memviz_core::analysis::live::{group_label, live_set};
    use memviz_core::analysis::{Moment, Replay};
    use memviz_core::ranks::summarize_for_overview;
    let load = |name: &str| {
        let p = format!("{}/../../tests/data/real/{name}", env!("CARGO_MANIFEST_DIR"));
        memviz_core::load(&std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))).unwrap()
    };
    let live_at = |snap: &memviz_core::Snapshot, replay: &Replay, row: u32| -> Vec<(String, u64)> {
        let l = live_set(snap, replay, Moment::Entry(row)).unwrap();
        l.by_stack.iter().map(|g| (group_label(snap, g), g.bytes)).collect()
    };
    let bytes_in = |set: &[(String, u64)], label: &str| set.iter().filter(|g| g.0 == label).map(|g| g.1).sum::<u64>();
    let (mut rows_checked, mut beyond_top) = (0, 0);
    for (o_name, m_name) in [
        ("resnet50_buggy.pickle", "resnet50_fixed.pickle"),
        ("resnet50_fixed.pickle", "resnet50_buggy.pickle"),
        ("growth_leak.pickle", "gpt_amp_annotated.pickle"),
    ] {
        let (o_snap, m_snap) = (load(o_name), load(m_name));
        let (o, m) =
            (RankDigest::of(&summarize_for_overview(&o_snap)), RankDigest::of(&summarize_for_overview(&m_snap)));
        let o_replay = Replay::build(&o_snap, o_snap.default_device().unwrap());
        let m_replay = Replay::build(&m_snap, m_snap.default_device().unwrap());
        let o_live = live_at(&o_snap, &o_replay, o.peak_allocated_entry.unwrap());
        let m_row = match matched_iteration(&o, &m) {
            Some(k) => insights_with(&m_snap, &m_replay).iterations.list[k].peak_row,
            None => m.peak_allocated_entry.unwrap(),
        };
        let m_live = live_at(&m_snap, &m_replay, m_row);
        let rows = stack_differences(&o, &m);
        assert!(!rows.is_empty(), "{o_name} against {m_name}");
        for r in &rows {
            rows_checked += 1;
            for (side, got, live) in [("outlier", r.outlier, &o_live), ("median", r.median, &m_live)] {
                let want = bytes_in(live, &r.label);
                match got {
                    StackBytes::Exact(b) => assert_eq!(b, want, "{o_name} vs {m_name}: {side} {}", r.label),
                    StackBytes::AtMost(b) => assert!(want <= b, "{o_name} vs {m_name}: {side} {}", r.label),
                }
            }
            let top5 = |set: &[(String, u64)]| set.iter().take(DIFFER_ROWS_PER_SIDE).any(|g| g.0 == r.label);
            if !(top5(&o_live) && top5(&m_live)) && bytes_in(&o_live, &r.label) > 0 && bytes_in(&m_live, &r.label) > 0 {
                beyond_top += 1;
            }
        }
    }
    assert!(beyond_top > 0, "no row held a stack outside one side's five largest ({rows_checked} rows)");
}
