//! The join on the real GPT run under the profiler (its snapshot and its memory timeline as
//! `.json` and `.raw.json.gz`). Figures from
//! `python3 tests/gen/verify_join.py tests/data/real/gpt_profile.pickle tests/data/real/gpt_profile.timeline.raw.json.gz`,
//! which matches the raw export's own allocation events (not the timeline's steps).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use super::*;
use crate::analysis::categories::read_profiler_timeline;
use crate::analysis::growth::find_iterations;
use crate::analysis::test_util::{fixture, fixture_path};

fn joined(timeline: &str) -> (SnapshotCategories, JoinCounts) {
    let snap = fixture("gpt_profile.pickle");
    let replay = Replay::build(&snap, 0);
    let its = find_iterations(&snap, &replay);
    let profile = read_profiler_timeline(&std::fs::read(fixture_path(timeline)).expect("read")).expect("timeline");
    join(&snap, &replay, &its, &profile, 200)
}

#[test]
fn the_profilers_allocations_are_matched_with_the_snapshots() {
    for name in ["gpt_profile.timeline.json", "gpt_profile.timeline.raw.json.gz"] {
        let (c, n) = joined(name);
        assert_eq!((n.profiler_allocations, n.matched, n.preexisting), (840, 837, 39), "{name}");
        assert_eq!(n.recategorized, 31, "{name}");
        let mut per = [0usize; 8];
        for (cat, _) in c.per_element.iter().zip(&c.matched).filter(|(_, &m)| m) {
            per[*cat as usize] += 1;
        }
        assert_eq!(per, [39, 78, 6, 58, 180, 117, 180, 218], "{name}: matched allocations per category");
        assert_eq!(c.matched.len(), c.per_element.len());
        assert!(c.notes[0].starts_with("837 of the profiler's 840 allocations matched"), "{:?}", c.notes);
        assert!(c.timeline.inferred, "the other allocations' categories are inferred");
    }
}

#[test]
fn block_sizes() {
    assert_eq!(size_fits(16448, 16896), Some(true));
    assert_eq!(size_fits(16448, 17408), None, "a small block is split to the rounded size");
    assert_eq!(size_fits(3 << 20, (3 << 20) + 512 * 1024), Some(false), "a large block may keep up to 1 MiB more");
    assert_eq!(size_fits(3 << 20, (5 << 20) + 512), None);
}

#[test]
fn a_timeline_of_another_time_does_not_overlap() {
    let snap = fixture("gpt_profile.pickle");
    let ours =
        read_profiler_timeline(&std::fs::read(fixture_path("gpt_profile.timeline.json")).expect("read")).expect("json");
    assert!(overlaps(&snap, 0, &ours));
    let other = read_profiler_timeline(&std::fs::read(fixture_path("resnet50_profile.timeline.json")).expect("read"))
        .expect("json");
    assert!(!overlaps(&snap, 0, &other));
    let (c, n) = join_categories(&snap, 0, &other, 100);
    assert_eq!(n.matched, 0);
    assert!(c.matched.iter().all(|m| !m));
}
