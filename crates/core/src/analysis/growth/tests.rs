use super::iterations::family_of;
use super::stacks::grows;
use super::*;
use crate::analysis::site_label;
use crate::analysis::test_util::fixture;

#[test]
fn families_replace_numbers() {
    assert_eq!(family_of("ProfilerStep#12"), ("ProfilerStep#N".into(), true));
    assert_eq!(family_of("## step 3 ##"), ("## step N ##".into(), true));
    assert_eq!(family_of("Optimizer.step#SGD.step"), ("Optimizer.step#SGD.step".into(), false));
}

fn problems(i: &Insights) -> Vec<&'static str> {
    i.findings.iter().filter(|f| f.problem).map(|f| f.kind).collect()
}

// Figures from: python3 tests/gen/verify_growth.py tests/data/real/resnet50_buggy.pickle
#[test]
fn buggy_resnet_keeps_its_gradients() {
    let snap = fixture("resnet50_buggy.pickle");
    let i = insights(&snap, 0);
    assert_eq!(
        i.iterations.source,
        Some(BoundarySource::Annotation { family: "Optimizer.step#SGD.step".into(), edge: Edge::End })
    );
    let rows: Vec<(u32, u32, u32, u64)> =
        i.iterations.list.iter().map(|it| (it.start_row, it.end_row, it.peak_row, it.peak_bytes)).collect();
    assert_eq!(
        rows,
        vec![
            (0, 1846, 1845, 375_664_840),
            (1846, 3867, 2302, 470_210_256),
            (3867, 5868, 4303, 470_210_256),
            (5868, 7869, 6304, 470_210_256),
            (7869, 9870, 8305, 470_210_256)
        ]
    );
    assert_eq!(problems(&i), vec!["gradients"]);
    let g = i.carry_over.iter().find(|c| c.kind == CarryKind::Gradients).expect("gradients");
    assert_eq!(
        (g.count, g.bytes, g.alloc_rows, g.without_frames, g.size_matches),
        (161, 102_228_128, (371, 1673), 161, 161)
    );
    assert_eq!(g.live_at_peaks_of, vec![1, 2, 3, 4]);
    let once = i.carry_over.iter().find(|c| c.kind == CarryKind::AllocatedOnce).expect("once");
    assert_eq!((once.count, once.bytes), (1, 33_554_432));
    let f = i.findings.iter().find(|f| f.kind == "gradients").expect("finding");
    assert!(f.suggestions[0].contains("zero_grad(set_to_none=True)"));
    assert_eq!(f.elements.len(), 161);
    assert_eq!(i.growth.as_ref().map(|g| (g.bytes_per_iteration, g.significant)), Some((0, false)));
}

// python3 tests/gen/verify_growth.py tests/data/real/resnet50_fixed.pickle
#[test]
fn fixed_resnet_has_no_problem() {
    let snap = fixture("resnet50_fixed.pickle");
    let i = insights(&snap, 0);
    assert_eq!(
        i.iterations.source,
        Some(BoundarySource::Annotation { family: "Optimizer.zero_grad#SGD.zero_grad".into(), edge: Edge::End })
    );
    let ends: Vec<u32> = i.iterations.list.iter().map(|it| it.end_row).collect();
    assert_eq!(ends, vec![2168, 4181, 6182, 8183, 10184]);
    assert!(problems(&i).is_empty(), "{:?}", i.findings);
    let kinds: Vec<(CarryKind, usize, u64)> = i.carry_over.iter().map(|c| (c.kind, c.count, c.bytes)).collect();
    assert_eq!(kinds, vec![(CarryKind::OptimizerState, 161, 102_228_128), (CarryKind::AllocatedOnce, 1, 33_554_432)]);
}

// python3 tests/gen/verify_growth.py tests/data/real/growth_leak.pickle
#[test]
fn growth_leak_grows_by_the_kept_graph() {
    let snap = fixture("growth_leak.pickle");
    let i = insights(&snap, 0);
    assert_eq!(
        i.iterations.source,
        Some(BoundarySource::Annotation { family: "ProfilerStep#N".into(), edge: Edge::Start })
    );
    assert_eq!(i.iterations.list.len(), 8);
    assert_eq!(i.iterations.list[7].label, "ProfilerStep#7");
    let g = i.growth.as_ref().expect("growth");
    assert!(g.significant);
    assert_eq!(g.bytes_per_iteration, 8_398_852);
    assert_eq!(
        g.end_bytes,
        vec![128_133_164, 136_532_016, 144_930_868, 153_329_720, 161_728_572, 170_127_424, 178_526_276, 186_925_128]
    );
    let per: Vec<(String, i64)> =
        g.stacks.iter().map(|s| (site_label(&snap, s.stack), s.bytes_per_iteration)).collect();
    assert_eq!(
        per,
        vec![
            ("torch/nn/functional.py:1723 (relu)".to_string(), 8_388_608),
            ("torch/nn/modules/linear.py:134 (forward)".to_string(), 10_240),
            ("/home/user/project/train.py:21 (growth_leak)".to_string(), 4),
        ]
    );
    assert_eq!(problems(&i), vec!["growth"]);
}

// python3 tests/gen/verify_growth.py tests/data/real/gpt_amp_annotated.pickle
#[test]
fn gpt_steps_are_the_outermost_numbered_regions() {
    let snap = fixture("gpt_amp_annotated.pickle");
    let i = insights(&snap, 0);
    let rows: Vec<(u32, u32, u64)> =
        i.iterations.list.iter().map(|it| (it.start_row, it.end_row, it.peak_bytes)).collect();
    assert_eq!(rows, vec![(0, 1996, 3_062_635_688), (1996, 3796, 3_833_025_704), (3796, 5593, 3_833_025_704)]);
    assert!(problems(&i).is_empty());
}

#[test]
fn without_annotations_the_curve_gives_iterations() {
    let mut snap = fixture("resnet50_buggy.pickle");
    snap.annotations.clear();
    let i = insights(&snap, 0);
    assert!(matches!(i.iterations.source, Some(BoundarySource::Periodic { .. })));
    assert_eq!(i.iterations.list.len(), 5);
    assert_eq!(problems(&i), vec!["gradients"]);
    assert_eq!(i.carry_over.iter().find(|c| c.kind == CarryKind::Gradients).map(|c| c.bytes), Some(102_228_128));
    let mut snap = fixture("resnet50_fixed.pickle");
    snap.annotations.clear();
    let i = insights(&snap, 0);
    assert_eq!(i.iterations.list.len(), 5);
    assert!(problems(&i).is_empty());
    // Short or aperiodic traces give no iterations rather than made-up ones.
    for name in ["multistream.pickle", "metadata_mempool.pickle", "oom.pickle"] {
        let mut snap = fixture(name);
        snap.annotations.clear();
        assert!(find_iterations(&snap, &Replay::build(&snap, 0)).list.is_empty(), "{name}");
    }
}

#[test]
fn slopes() {
    assert_eq!(slope(&[10, 20, 30, 40]), 10.0);
    assert_eq!(slope(&[5]), 0.0);
    assert!(grows(&[1, 2, 3, 4]).0);
    assert!(!grows(&[4, 4, 4, 4]).0);
    assert!(!grows(&[0, 10, 10, 10]).0);
}
