//! The profiler's files through the `memviz` binary: a Chrome trace read as memory by `info`,
//! `live`, `insights` and `trace-plot`; the memory timeline picture and a trace without memory
//! events refused with what to export instead. Figures from
//! `python3 tests/gen/verify_profiler_trace.py tests/data/real/gpt_profile.trace.json.gz`.

use crate::run::{memviz, run};
use crate::test_fixtures;

fn trace() -> String {
    test_fixtures::fixture("real", "gpt_profile.trace.json.gz").to_string_lossy().into_owned()
}

#[test]
fn info_of_a_trace_has_the_profilers_peak_per_device() {
    let t = trace();
    let json: serde_json::Value = serde_json::from_str(&memviz(&["info", &t, "--json"])).expect("JSON");
    let devices = json["devices"].as_array().expect("devices");
    let by_name = |n: &str| devices.iter().find(|d| d["name"] == n).unwrap_or_else(|| panic!("no {n}: {json}"));
    let cuda = by_name("cuda:0");
    assert_eq!(cuda["peak_allocated_bytes"], 653_884_928, "{cuda}");
    assert_eq!(cuda["entries"], 1596);
    assert_eq!(by_name("cpu")["peak_allocated_bytes"], 204);
    let text = memviz(&["info", &t]);
    assert!(text.contains("device 0: 1596 entries") && text.contains("cpu: 81 entries"), "{text}");
    assert!(text.contains("peak allocated: 623.6 MiB (653884928 bytes)"), "{text}");
}

#[test]
fn live_of_a_trace_names_ops_and_python_lines() {
    let t = trace();
    let text = memviz(&["live", &t, "--top", "40"]);
    // The peak is in the backward pass: the loss's and the linear layers' memory.
    assert!(text.contains("623.6 MiB (653884928 bytes)"), "{text}");
    assert!(text.contains("train.py") || text.contains("linear.py"), "{text}");
    // The backward pass's largest: the innermost op (no Python frames on autograd's thread),
    // and the memory from before the profiler started, as the script has them.
    assert!(text.contains("132153344    126 MiB       3  aten::sum"), "{text}");
    assert!(text.contains("46491648   44.3 MiB       1  <no frames, allocated before the trace>"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&memviz(&["live", &t, "--json"])).expect("JSON");
    assert_eq!(json["total_bytes"], 653_884_928, "{json}");
    // CPU memory is its own device.
    let cpu: serde_json::Value =
        serde_json::from_str(&memviz(&["live", &t, "--device", "cpu", "--json"])).expect("JSON");
    assert_eq!(cpu["total_bytes"], 204, "{cpu}");
}

#[test]
fn insights_run_on_a_trace() {
    let t = trace();
    let text = memviz(&["insights", &t]);
    assert!(!text.trim().is_empty());
}

#[test]
fn profiler_files_memviz_cannot_draw_say_what_to_export() {
    let page = test_fixtures::fixture("profiler", "memory_timeline_picture.html");
    let out = run(&["info", &page.to_string_lossy()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("export_memory_timeline(\\\"x.json\\\"") || err.contains("export_memory_timeline(\"x.json\""),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("memviz-profiler-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let empty = dir.join("no_memory.json");
    std::fs::write(&empty, br#"{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}"#)
        .expect("write");
    let out = run(&["info", &empty.to_string_lossy()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("profile_memory=True"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Both forms of the profiler's memory timeline give the same categories at the peak as
/// `python3 tests/gen/verify_categories.py tests/data/real/gpt_profile.timeline.json`.
#[test]
fn categories_of_the_memory_timeline_json_and_raw_agree_with_the_script() {
    for name in ["gpt_profile.timeline.json", "gpt_profile.timeline.raw.json.gz"] {
        let p = test_fixtures::fixture("real", name).to_string_lossy().into_owned();
        let text = memviz(&["categories", &p]);
        assert!(text.contains("peak: 623 MiB (653294848 bytes)"), "{name}: {text}");
        for (category, bytes) in [
            ("parameter", "45901568"),
            ("optimizer_state", "93179904"),
            ("input", "16896"),
            ("activation", "231867392"),
            ("gradient", "12320256"),
            ("autograd_detail", "69730304"),
            ("unknown", "200278528"),
        ] {
            let line = text.lines().find(|l| l.trim_start().starts_with(category)).unwrap_or_default();
            assert!(line.split_whitespace().nth(1) == Some(bytes), "{name}: {category}: {line}");
        }
    }
}

/// `--profile` joins the profiler's memory timeline with the snapshot of the same run: the
/// counts and, at the snapshot's peak (the moment of the profiler's own peak), each category's
/// bytes as `python3 tests/gen/verify_join.py tests/data/real/gpt_profile.pickle
/// tests/data/real/gpt_profile.timeline.raw.json.gz` finds for the matched allocations live
/// then (every allocation live then was matched). A timeline of another run is refused.
#[test]
fn a_snapshot_takes_the_categories_of_its_runs_memory_timeline() {
    let snap = test_fixtures::fixture("real", "gpt_profile.pickle").to_string_lossy().into_owned();
    for name in ["gpt_profile.timeline.json", "gpt_profile.timeline.raw.json.gz"] {
        let t = test_fixtures::fixture("real", name).to_string_lossy().into_owned();
        let text = memviz(&["categories", &snap, "--profile", &t]);
        assert!(text.contains("note: 837 of the profiler's 840 allocations matched with the snapshot's by time and size, and the 39 live when it started"), "{text}");
        assert!(text.contains("matched with the snapshot (the rest INFERRED"), "{text}");
        for (category, bytes) in [
            ("parameter", "45901568"),
            ("optimizer_state", "91803136"),
            ("input", "16448"),
            ("temporary", "0"),
            ("activation", "229408776"),
            ("gradient", "12320000"),
            ("autograd_detail", "68681728"),
            ("unknown", "199229692"),
        ] {
            let line = text.lines().find(|l| l.trim_start().starts_with(category)).unwrap_or_default();
            assert_eq!(line.split_whitespace().nth(1), Some(bytes), "{name}: {category}: {line}");
        }
        let json: serde_json::Value =
            serde_json::from_str(&memviz(&["categories", &snap, "--profile", &t, "--json"])).expect("JSON");
        assert_eq!(json["matched_allocations"], 837 + 39);
    }
    let other = test_fixtures::fixture("real", "resnet50_profile.timeline.json").to_string_lossy().into_owned();
    let out = run(&["categories", &snap, "--profile", &other]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("do not overlap in time"), "{err}");
}
