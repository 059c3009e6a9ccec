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

fn run_of_8() -> Run {
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
    d.problems = vec!["growth".into()];
    d.oom_entries = vec![3];
    let (head, parts) = memviz_core::wire::encode(&d);
    let back: RankDigest = memviz_core::wire::decode(&head, &mut memviz_core::wire::PartList::new(parts)).unwrap();
    assert_eq!(back, d);
}

#[test]
fn stacks_that_differ_largest_first() {
    let mut a = digest(10, 10);
    a.top_stacks = vec![("forward".into(), 300), ("params".into(), 100), ("keep".into(), 16)];
    let mut m = digest(10, 10);
    m.top_stacks = vec![("forward".into(), 100), ("params".into(), 100), ("other".into(), 8)];
    assert_eq!(
        stack_differences(&a, &m),
        vec![("forward".to_string(), 300, 100), ("keep".to_string(), 16, 0), ("other".to_string(), 0, 8)]
    );
    // With iterations, the median is read at the peak of the iteration the outlier peaks in.
    a.iteration_starts = vec![0, 10, 20];
    a.peak_allocated_entry = Some(14);
    m.iteration_starts = vec![0, 12, 24];
    m.iteration_peak_stacks = vec![vec![("forward".into(), 1)], vec![("forward".into(), 200), ("params".into(), 100)]];
    assert_eq!(matched_iteration(&a, &m), Some(1));
    assert_eq!(stack_differences(&a, &m), vec![("forward".to_string(), 300, 200), ("keep".to_string(), 16, 0)]);
    // A median with fewer iterations: its own peak.
    m.iteration_peak_stacks.truncate(1);
    assert_eq!(matched_iteration(&a, &m), None);
    a.peak_allocated_entry = None;
    assert_eq!(matched_iteration(&a, &m), None);
}
