use super::*;
use crate::analysis::growth::{find_iterations, growth_by_group, insights};
use crate::analysis::test_util::fixture;
use crate::analysis::Moment;

fn synth(name: &str) -> Snapshot {
    let p = crate::test_fixtures::fixture("synth", name);
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    crate::load(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `(bytes, allocations, value or "-")` per group of the live set at `at`, largest first, the
/// groups without a value (one per reason) summed into one `-` row as verify_groups.py prints.
fn live_groups(snap: &Snapshot, by: &str, at: Moment) -> Vec<(u64, usize, String)> {
    let r = Replay::build(snap, 0);
    let g = Grouping::build(snap, &r, &GroupBy::parse(by).expect("by"), &LibraryRule::default());
    let row = at.resolve(&r).expect("moment");
    let live = r.live_elements(row);
    let totals = g.totals(&r, &live);
    assert_eq!(totals.iter().map(|t| t.bytes).sum::<u64>(), r.live_at(row), "groups add up");
    assert!(totals.windows(2).all(|w| w[0].bytes >= w[1].bytes), "largest first");
    let mut none = (0u64, 0usize);
    let mut out: Vec<(u64, usize, String)> = Vec::new();
    for t in &totals {
        match &g.labels[t.group as usize].value {
            Some(v) => out.push((t.bytes, t.allocations, v.clone())),
            None => none = (none.0 + t.bytes, none.1 + t.allocations),
        }
    }
    if none.1 > 0 {
        out.push((none.0, none.1, "-".into()));
    }
    out.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.cmp(&b.2)));
    out
}

fn rows(v: &[(u64, usize, &str)]) -> Vec<(u64, usize, String)> {
    v.iter().map(|&(b, n, s)| (b, n, s.to_string())).collect()
}

// python3 tests/gen/verify_groups.py tests/data/real/metadata_layers.pickle metadata:phase
#[test]
fn the_forward_phase_at_the_peak_of_metadata_layers() {
    let snap = fixture("metadata_layers.pickle");
    assert_eq!(
        live_groups(&snap, "metadata:phase", Moment::Peak),
        rows(&[(168_081_188, 50, "-"), (120_995_840, 45, "forward")])
    );
    // python3 tests/gen/verify_groups.py tests/data/real/metadata_layers.pickle metadata
    assert_eq!(
        live_groups(&snap, "metadata", Moment::Peak),
        rows(&[
            (167_032_608, 48, "-"),
            (52_477_952, 16, "{\"phase\": \"forward\", \"layer\": 0}"),
            (50_642_944, 15, "{\"phase\": \"forward\", \"layer\": 2}"),
            (17_874_944, 14, "{\"phase\": \"forward\", \"layer\": 1}"),
            (1_048_576, 1, "embedding"),
            (4, 1, "loss"),
        ])
    );
}

#[test]
fn allocations_without_metadata_say_why() {
    let snap = fixture("metadata_layers.pickle");
    let r = Replay::build(&snap, 0);
    let g = Grouping::build(&snap, &r, &GroupBy::Metadata(Some("phase".into())), &LibraryRule::default());
    let live = r.live_elements(r.peak_row);
    let reasons: Vec<String> =
        g.totals(&r, &live).iter().filter_map(|t| g.labels[t.group as usize].reason.clone()).collect();
    assert!(reasons.iter().any(|s| s == BACKWARD_THREAD), "{reasons:?}");
    assert!(reasons.iter().any(|s| s == "metadata without \"phase\""), "{reasons:?}");
    let json = g.totals_json(&g.totals(&r, &live), 0);
    assert_eq!(json["by"], "metadata:phase");
    let forward = json["groups"].as_array().expect("groups").iter().find(|v| v["value"] == "forward");
    assert_eq!(forward.map(|v| (v["bytes"].as_u64(), v["allocations"].as_u64())), Some((Some(120_995_840), Some(45))));
}

// python3 tests/gen/verify_groups.py tests/data/real/metadata_layers.pickle user-line
#[test]
fn the_users_lines_of_metadata_layers() {
    let snap = fixture("metadata_layers.pickle");
    let got = live_groups(&snap, "user-line", Moment::Peak);
    assert_eq!(
        got[..4].to_vec(),
        rows(&[
            (167_024_380, 46, "-"),
            (56_721_408, 20, "/home/user/project/train.py:296 (forward)"),
            (33_816_576, 2, "/home/user/project/train.py:307 (forward)"),
            (31_481_856, 18, "/home/user/project/train.py:297 (forward)"),
        ])
    );
    assert_eq!(got.len(), 8, "{got:?}");
}

// python3 tests/gen/verify_groups.py tests/data/synth/metadata_dict.pickle metadata:phase end
#[test]
fn dict_metadata_groups_by_key_and_by_text() {
    let snap = synth("metadata_dict.pickle");
    assert_eq!(
        live_groups(&snap, "metadata:phase", Moment::End),
        rows(&[(10_486_272, 3, "-"), (6_291_456, 2, "forward"), (3_145_728, 1, "backward")])
    );
    // python3 tests/gen/verify_groups.py tests/data/synth/metadata_dict.pickle metadata:layer end
    assert_eq!(
        live_groups(&snap, "metadata:layer", Moment::End),
        rows(&[(10_486_272, 3, "-"), (5_242_880, 1, "2"), (3_145_728, 1, "1"), (1_048_576, 1, "0")])
    );
    // python3 tests/gen/verify_groups.py tests/data/synth/metadata_dict.pickle metadata end
    assert_eq!(
        live_groups(&snap, "metadata", Moment::End),
        rows(&[
            (6_291_968, 2, "-"),
            (5_242_880, 1, "{\"phase\":\"forward\",\"layer\":2}"),
            (4_194_304, 1, "optimizer step 0"),
            (3_145_728, 1, "{\"phase\": \"backward\", \"layer\": 1}"),
            (1_048_576, 1, "{\"phase\":\"forward\",\"layer\":0}"),
        ])
    );
}

// python3 tests/gen/verify_groups.py tests/data/real/growth_leak.pickle user-line end
#[test]
fn the_leak_is_on_the_users_line() {
    let snap = fixture("growth_leak.pickle");
    assert_eq!(
        live_groups(&snap, "user-line", Moment::End),
        rows(&[
            (101_793_792, 26, "/home/user/project/train.py:20 (growth_leak)"),
            (85_131_304, 7, "-"),
            (32, 8, "/home/user/project/train.py:21 (growth_leak)"),
        ])
    );
    let r = Replay::build(&snap, 0);
    let its = find_iterations(&snap, &r);
    let g = Grouping::build(&snap, &r, &GroupBy::UserLine, &LibraryRule::default());
    let grow = growth_by_group(&r, &its, &g);
    let first = grow.first().expect("a growing line");
    assert_eq!(g.label(first.group), "/home/user/project/train.py:20 (growth_leak)");
    // relu's 8 MiB and linear's 10 KiB a step, one line of the user's.
    assert_eq!(first.bytes_per_iteration, 8_398_848);
    let i = insights(&snap, 0);
    assert_eq!(
        i.growth_by_line.first().map(|n| n.label.as_str()),
        Some("/home/user/project/train.py:20 (growth_leak)")
    );
    let f = i.findings.iter().find(|f| f.kind == "growth").expect("growth finding");
    assert!(
        f.details[1].contains("per iteration from /home/user/project/train.py:20 (growth_leak)"),
        "{:?}",
        f.details
    );
}

#[test]
fn operators_name_the_torch_api() {
    let snap = fixture("growth_leak.pickle");
    let got = live_groups(&snap, "op", Moment::End);
    let names: Vec<&str> = got.iter().map(|g| g.2.as_str()).filter(|&n| n != "-").collect();
    assert_eq!(names.first(), Some(&"relu"), "{got:?}");
    assert!(names.contains(&"linear"), "{got:?}");
}

#[test]
fn every_grouping_covers_every_allocation_once() {
    for name in ["growth_leak.pickle", "metadata_layers.pickle", "gpt_amp_annotated.pickle", "multistream.pickle"] {
        let snap = fixture(name);
        let r = Replay::build(&snap, 0);
        for by in GroupBy::MENU.iter().chain([GroupBy::Metadata(Some("phase".into()))].iter()) {
            let g = Grouping::build(&snap, &r, by, &LibraryRule::default());
            assert_eq!(g.of_life.len(), r.lives.len(), "{name} {by:?}");
            let all: Vec<u32> = (0..r.lives.len() as u32).collect();
            let sum: u64 = g.totals(&r, &all).iter().map(|t| t.bytes).sum();
            assert_eq!(sum, r.lives.iter().map(|l| l.size_bytes).sum::<u64>(), "{name} {by:?}");
        }
    }
}

#[test]
fn annotations_group_by_the_innermost_open_region() {
    let snap = fixture("gpt_amp_annotated.pickle");
    let got = live_groups(&snap, "annotation", Moment::Peak);
    assert!(got.iter().any(|g| g.2 != "-"), "{got:?}");
}

#[test]
fn groupings_parse_and_print_back() {
    for s in ["user-line", "frame", "op", "metadata", "metadata:phase", "category", "annotation"] {
        assert_eq!(GroupBy::parse(s).expect(s).slug(), s);
    }
    assert!(GroupBy::parse("metadata:").is_err());
    assert!(GroupBy::parse("colour").is_err());
    assert!(LibraryRule::with_extra(&["/mylib/".into()]).is_library("/home/u/mylib/x.py"));
    assert!(!LibraryRule::default().is_library("/home/user/project/train.py"));
}

#[test]
fn metadata_keys_become_choices() {
    let snap = fixture("metadata_layers.pickle");
    assert_eq!(metadata_keys(&snap, 0), vec!["phase".to_string(), "layer".to_string()]);
    let c = choices(&snap, 0);
    assert_eq!(c.len(), GroupBy::MENU.len() + 2);
    assert_eq!(c.last().map(GroupBy::slug), Some("metadata:layer".to_string()));
    let snap = synth("metadata_dict.pickle");
    assert_eq!(metadata_keys(&snap, 0), vec!["phase".to_string(), "layer".to_string()]);
}

#[test]
fn colours_go_to_the_groups_that_allocate_most() {
    let snap = fixture("metadata_layers.pickle");
    let r = Replay::build(&snap, 0);
    let g = Grouping::build(&snap, &r, &GroupBy::Metadata(None), &LibraryRule::default());
    let (colour, legend) = g.colours(&r, 3);
    assert_eq!(colour.len(), g.labels.len());
    assert_eq!(legend.len(), 4, "three groups and other: {legend:?}");
    assert_eq!(legend[3].0, "other");
    let total: u64 = r.lives.iter().map(|l| l.size_bytes).sum();
    assert_eq!(legend.iter().map(|l| l.1).sum::<u64>(), total);
    assert!(legend[0].1 >= legend[1].1 && legend[1].1 >= legend[2].1);
    assert_eq!(colour.iter().filter(|&&c| c < 3).count(), 3);
}

/// The bytes of a group after an entry, summed from the lifetimes one by one.
fn group_bytes_by_hand(r: &Replay, g: &Grouping, group: u32, row: Option<u32>) -> u64 {
    r.lives
        .iter()
        .enumerate()
        .filter(|(i, l)| g.group_of(*i as u32) == Some(group) && l.live_after(row))
        .map(|(_, l)| l.size_bytes)
        .sum()
}

#[test]
fn a_group_curve_reads_the_bytes_of_its_group_after_every_entry() {
    use crate::analysis::group_timeline::GroupCurve;
    let snap = fixture("metadata_layers.pickle");
    let r = Replay::build(&snap, 0);
    let g = Grouping::build(&snap, &r, &GroupBy::parse("metadata:phase").expect("by"), &LibraryRule::default());
    let mut groups_checked = 0;
    for group in 0..g.labels.len() as u32 {
        let c = GroupCurve::build(&r, &g, group);
        assert_eq!(c.bytes_after(None), group_bytes_by_hand(&r, &g, group, None));
        let mut peak = (group_bytes_by_hand(&r, &g, group, None), None);
        for row in 0..r.rows as u32 {
            let want = group_bytes_by_hand(&r, &g, group, Some(row));
            assert_eq!(c.bytes_after(Some(row)), want, "group {group} after entry {row}");
            if want > peak.0 {
                peak = (want, Some(row));
            }
        }
        assert_eq!(c.peak(), peak, "group {group}");
        groups_checked += 1;
    }
    assert!(groups_checked >= 2);
    // The forward phase holds 120,995,840 bytes at the file's peak (the Live set's figure).
    let fwd = g.labels.iter().position(|l| l.value.as_deref() == Some("forward")).expect("forward") as u32;
    let peak_row = Moment::Peak.resolve(&r).expect("peak");
    assert_eq!(GroupCurve::build(&r, &g, fwd).bytes_after(peak_row), 120_995_840);
}

/// Every box of the flame graph by group weighs what [`elements_under_by_group`] names under it:
/// the forward phase's box at the peak is the Live set's 120,995,840 bytes.
#[test]
fn a_box_of_the_grouped_flame_graph_names_its_allocations() {
    use crate::analysis::flame::{elements_under_by_group, flame_by_group, node_path, FlameFrames, FlameSource};
    let snap = fixture("metadata_layers.pickle");
    let r = Replay::build(&snap, 0);
    let g = Grouping::build(&snap, &r, &GroupBy::parse("metadata:phase").expect("by"), &LibraryRule::default());
    let source = FlameSource::Live(Moment::Peak);
    let f = flame_by_group(&snap, &r, source, FlameFrames::PythonFirst, &g).expect("graph");
    let weigh = |path: &[String]| -> u128 {
        elements_under_by_group(&snap, &r, source, FlameFrames::PythonFirst, &g, path)
            .iter()
            .map(|&e| u128::from(r.lives[e as usize].size_bytes))
            .sum()
    };
    assert_eq!(weigh(&[]), f.nodes[0].value, "the root: everything");
    let fwd = f.nodes[0].children.iter().copied().find(|&c| f.nodes[c as usize].name == "forward").expect("forward");
    assert_eq!(f.nodes[fwd as usize].value, 120_995_840);
    // Every node down to three levels, each weighed by the allocations named under it.
    let mut checked = 0;
    for (n, node) in f.nodes.iter().enumerate().skip(1) {
        let path = node_path(&f, n as u32);
        if path.len() <= 3 {
            assert_eq!(weigh(&path), node.value, "{path:?}");
            checked += 1;
        }
    }
    assert!(checked > 5, "{checked}");
}
