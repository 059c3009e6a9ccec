//! `memviz flame` (both modes, folded text and --json), `memviz info`, `live` and `insights` on
//! small generated snapshots: one with pinned host memory beside its CUDA device, one with
//! `annotate` entries. Every number checked is computed here from the list of entries the test
//! writes, by a replay of its own (live bytes after each entry, the peak, bytes by stack, bytes ×
//! entries over a window), not taken from memviz.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::run::{json, memviz};

use crate::common::snap::{block, entry, frame, segment, snapshot};
use crate::common::{dict, dumps, i, list, s, Py};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const BASE: u64 = 0x7f00_0000_0000;
const HOST_BASE: u64 = 1 << 33;

/// The sites the test's allocations come from: (function, file, line); every stack is the site
/// called from `main` in train.py, line 1.
const SITES: [(&str, &str, i128); 3] =
    [("forward", "model.py", 10), ("backward", "model.py", 20), ("step", "opt.py", 5)];

/// One trace entry as the test knows it.
#[derive(Clone, Copy)]
struct Ev {
    action: &'static str,
    addr: u64,
    size_bytes: u64,
    /// Index into [`SITES`].
    site: usize,
}

fn ev(action: &'static str, addr: u64, size_bytes: u64, site: usize) -> Ev {
    Ev { action, addr, size_bytes, site }
}

/// The CUDA trace: four allocations at three sites, freed in another order than allocated.
fn cuda_events() -> Vec<Ev> {
    let (a, b, c, d) = (BASE, BASE + MIB, BASE + 3 * MIB, BASE + 4 * MIB);
    let mut v = vec![ev("segment_alloc", BASE, 16 * MIB, 0)];
    v.push(ev("alloc", a, MIB, 0));
    v.push(ev("alloc", b, 2 * MIB, 1));
    v.push(ev("alloc", c, 512 * KIB, 0));
    v.extend([ev("free_requested", a, MIB, 1), ev("free_completed", a, MIB, 1)]);
    v.push(ev("alloc", d, 4 * MIB, 2));
    for (addr, size) in [(b, 2 * MIB), (c, 512 * KIB), (d, 4 * MIB)] {
        v.extend([ev("free_requested", addr, size, 1), ev("free_completed", addr, size, 1)]);
    }
    v
}

fn stack_of(site: usize) -> Py {
    let (name, file, line) = SITES[site];
    list(vec![frame(name, file, line), frame("main", "train.py", 1)])
}

/// The label memviz gives a source frame: `file:line (function)`.
fn label(site: usize) -> String {
    let (name, file, line) = SITES[site];
    format!("{file}:{line} ({name})")
}

fn entries(events: &[Ev], t0: i128) -> Vec<Py> {
    events
        .iter()
        .enumerate()
        .map(|(k, e)| {
            entry(
                e.action,
                i128::from(e.addr),
                i128::from(e.size_bytes),
                Some(t0 + 10 * k as i128),
                Some(stack_of(e.site)),
            )
        })
        .collect()
}

/// A lifetime of the test's own replay: rows `[alloc_row, free_row)` it is live after.
struct Life {
    size_bytes: u64,
    site: usize,
    alloc_row: usize,
    free_row: Option<usize>,
}

/// The test's replay: lifetimes, and live bytes after each entry.
fn replay(events: &[Ev]) -> (Vec<Life>, Vec<u64>) {
    let mut lives: Vec<Life> = Vec::new();
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    let mut live = 0u64;
    let mut after = Vec::new();
    for (row, e) in events.iter().enumerate() {
        match e.action {
            "alloc" => {
                open.insert(e.addr, lives.len());
                lives.push(Life { size_bytes: e.size_bytes, site: e.site, alloc_row: row, free_row: None });
                live += e.size_bytes;
            }
            "free_completed" => {
                let l = open.remove(&e.addr).expect("freed what was allocated");
                lives[l].free_row = Some(row);
                live -= lives[l].size_bytes;
            }
            _ => {}
        }
        after.push(live);
    }
    (lives, after)
}

/// The first row where live bytes are highest.
fn peak(after: &[u64]) -> (usize, u64) {
    let max = *after.iter().max().unwrap();
    (after.iter().position(|&b| b == max).unwrap(), max)
}

/// Bytes by site of what is live after `row`.
fn live_by_site(lives: &[Life], row: usize) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in lives.iter().filter(|l| l.alloc_row <= row && l.free_row.is_none_or(|f| f > row)) {
        *m.entry(label(l.site)).or_insert(0) += l.size_bytes;
    }
    m
}

/// Bytes × entries by site within rows `a..=b`.
fn lifetime_by_site(lives: &[Life], rows: usize, a: usize, b: usize) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in lives {
        let start = l.alloc_row.max(a);
        let end = l.free_row.unwrap_or(rows).min(b + 1);
        if end > start {
            *m.entry(label(l.site)).or_insert(0) += l.size_bytes * (end - start) as u64;
        }
    }
    m
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("analyses");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The CUDA trace alone.
fn cuda_file(name: &str) -> PathBuf {
    let v = snapshot(vec![], vec![entries(&cuda_events(), 1_700_000_000_000_000)]);
    write(name, &dumps(&v, 4))
}

/// Folded lines as (path, value).
fn folded(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .map(|l| {
            let (path, v) = l.rsplit_once(' ').expect("a value after the path");
            (path.to_string(), v.parse().expect("a number"))
        })
        .collect()
}

/// The flame graph's JSON nodes: the root's value and, under `train.py:1 (main)`, each child's.
fn flame_json_children(v: &serde_json::Value) -> (u64, BTreeMap<String, u64>) {
    let nodes = v["nodes"].as_array().expect("nodes");
    let value = |n: &serde_json::Value| n["value"].as_f64().unwrap() as u64;
    assert_eq!(nodes[0]["name"], "all");
    let main = nodes[0]["children"].as_array().unwrap();
    assert_eq!(main.len(), 1, "one outermost frame");
    let main = &nodes[main[0].as_u64().unwrap() as usize];
    assert_eq!(main["name"], "train.py:1 (main)");
    assert_eq!(value(main), value(&nodes[0]));
    let kids = main["children"].as_array().unwrap();
    let values: Vec<u64> = kids.iter().map(|c| value(&nodes[c.as_u64().unwrap() as usize])).collect();
    assert!(values.windows(2).all(|w| w[0] >= w[1]), "children largest first: {values:?}");
    let by = kids
        .iter()
        .map(|c| {
            let n = &nodes[c.as_u64().unwrap() as usize];
            (n["name"].as_str().unwrap().to_string(), value(n))
        })
        .collect();
    (value(&nodes[0]), by)
}

#[test]
fn flame_of_the_live_set_at_the_peak_and_at_an_entry() {
    let p = cuda_file("flame.pickle");
    let f = p.to_str().unwrap();
    let events = cuda_events();
    let (lives, after) = replay(&events);
    let (peak_row, peak_bytes) = peak(&after);
    assert_eq!(peak_bytes, 6 * MIB + 512 * KIB, "the test's own replay");

    let want = live_by_site(&lives, peak_row);
    let text = memviz(&["flame", f]);
    let got = folded(&text);
    let want_lines: BTreeMap<String, u64> =
        want.iter().map(|(site, &b)| (format!("train.py:1 (main);{site}"), b)).collect();
    assert_eq!(got, want_lines, "{text}");
    let (root, by) = flame_json_children(&json(&["flame", f, "--json"]));
    assert_eq!(root, peak_bytes);
    assert_eq!(by, want);

    // After entry 3: the first three allocations.
    let (root, by) = flame_json_children(&json(&["flame", f, "--at", "3", "--json"]));
    assert_eq!(root, after[3]);
    assert_eq!(by, live_by_site(&lives, 3));
    // The same bytes as `memviz live` at the same moment.
    let live = json(&["live", f, "--json"]);
    assert_eq!(live["total_bytes"], peak_bytes);
    assert_eq!(live["entry"], peak_row);
    assert_eq!(json(&["live", f, "--at", "3", "--json"])["total_bytes"], after[3]);
}

#[test]
fn flame_of_bytes_times_lifetime_over_a_window() {
    let p = cuda_file("flame-lifetime.pickle");
    let f = p.to_str().unwrap();
    let events = cuda_events();
    let (lives, _) = replay(&events);
    for (a, b) in [(2, 9), (0, events.len() - 1), (6, 6)] {
        let window = format!("{a}..{b}");
        let want = lifetime_by_site(&lives, events.len(), a, b);
        let v = json(&["flame", f, "--lifetime", &window, "--json"]);
        assert_eq!(v["unit"], "byte_entries");
        let (root, by) = flame_json_children(&v);
        assert_eq!(root, want.values().sum::<u64>(), "{window}");
        assert_eq!(by, want, "{window}");
        let text = memviz(&["flame", f, "--lifetime", &window]);
        let lines: BTreeMap<String, u64> =
            want.iter().map(|(site, &b)| (format!("train.py:1 (main);{site}"), b)).collect();
        assert_eq!(folded(&text), lines, "{window}: {text}");
    }
    // A window of one entry weighs each allocation once: the live set after it.
    let (_, after) = replay(&events);
    let (root, _) = flame_json_children(&json(&["flame", f, "--lifetime", "6..6", "--json"]));
    assert_eq!(root, after[6]);
    // A window past the trace is an error, said in words.
    let out = Command::new(env!("CARGO_BIN_EXE_memviz")).args(["flame", f, "--lifetime", "0..99"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("99"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The pinned host memory's entries: what a DataLoader's pin_memory thread might record.
fn host_events() -> Vec<Ev> {
    vec![
        ev("segment_alloc", HOST_BASE, 64 * KIB, 0),
        ev("alloc", HOST_BASE, 3000, 0),
        ev("alloc", HOST_BASE + 8192, 40_000, 1),
        ev("alloc", HOST_BASE + 49_152, 500, 0),
        ev("free_requested", HOST_BASE + 8192, 40_000, 1),
        ev("free_completed", HOST_BASE + 8192, 40_000, 1),
    ]
}

fn host_file(name: &str) -> PathBuf {
    let t0 = 1_700_000_000_000_000;
    let base = snapshot(vec![], vec![entries(&cuda_events(), t0)]);
    // The final state: the blocks at HOST_BASE and HOST_BASE + 48 KiB still allocated.
    let host_blocks = vec![
        block(4096, 3000, "active_allocated", stack_of(0)),
        block(45_056, 45_056, "inactive", list(vec![])),
        block(16_384, 500, "active_allocated", stack_of(0)),
    ];
    let mut host_seg = segment(-1, i128::from(HOST_BASE), i128::from(64 * KIB), host_blocks);
    if let Py::Dict(p) = &mut host_seg {
        p.retain(|(k, _)| !matches!(k, Py::Str(x) if x == "segment_pool_id"));
    }
    let Py::Dict(mut pairs) = base else { panic!("a dict") };
    pairs.push((s("host_segments"), list(vec![host_seg])));
    pairs.push((s("host_traces"), list(entries(&host_events(), t0 + 5))));
    write(name, &dumps(&Py::Dict(pairs), 4))
}

#[test]
fn info_live_and_insights_see_pinned_host_memory() {
    let p = host_file("host.pickle");
    let f = p.to_str().unwrap();
    let (host_lives, host_after) = replay(&host_events());
    let (host_peak_row, host_peak) = peak(&host_after);
    let (_, cuda_after) = replay(&cuda_events());

    let info = json(&["info", f, "--json"]);
    let devices = info["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    assert_eq!(devices[0]["name"], "cuda:0");
    assert_eq!(devices[0]["peak_allocated_bytes"], peak(&cuda_after).1);
    assert_eq!(devices[1]["name"], "pinned host");
    assert_eq!(devices[1]["pinned_host"], true);
    assert_eq!(devices[1]["entries"], host_events().len());
    assert_eq!(devices[1]["peak_allocated_bytes"], host_peak);
    assert_eq!(devices[1]["peak_allocated_entry"], host_peak_row);
    assert_eq!(devices[1]["final_reserved_bytes"], 64 * KIB);
    let text = memviz(&["info", f]);
    assert!(text.contains(&format!("pinned host: {} entries", host_events().len())), "{text}");
    assert!(text.contains(&format!("({host_peak} bytes) at entry {host_peak_row}")), "{text}");

    // The CUDA device opens by default; `--device host` picks the pinned memory.
    assert_eq!(json(&["live", f, "--json"])["total_bytes"], peak(&cuda_after).1);
    let live = json(&["live", f, "--device", "host", "--json"]);
    assert_eq!(live["device"], -1);
    assert_eq!(live["total_bytes"], host_peak);
    assert_eq!(live["count"], 3);
    let by_line: BTreeMap<String, u64> = live["by_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["label"].as_str().unwrap().to_string(), r["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(by_line, live_by_site(&host_lives, host_peak_row));
    let at_end = json(&["live", f, "--device", "host", "--at", "end", "--json"]);
    assert_eq!(at_end["total_bytes"], *host_after.last().unwrap());
    let text = memviz(&["live", f, "--device", "host"]);
    assert!(text.contains("pinned host"), "{text}");

    let ins = json(&["insights", f, "--device", "host", "--json"]);
    assert_eq!(ins["device"], -1, "{ins}");
    let text = memviz(&["insights", f, "--device", "host"]);
    assert!(text.starts_with(&format!("{f}: pinned host\n")), "{text}");
    let (root, _) = flame_json_children(&json(&["flame", f, "--device", "host", "--json"]));
    assert_eq!(root, host_peak);
}

#[test]
fn compare_takes_the_pinned_host_device() {
    let a = host_file("host_a.pickle");
    let b = host_file("host_b.pickle");
    let (_, host_after) = replay(&host_events());
    let (host_peak_row, host_peak) = peak(&host_after);
    let (a, b) = (a.to_string_lossy(), b.to_string_lossy());
    let c = json(&["compare", &a, &b, "--device", "host", "--json"]);
    for side in ["a", "b"] {
        assert_eq!(c[side]["peak_bytes"], host_peak, "{c}");
        assert_eq!(c[side]["peak_entry"], host_peak_row, "{c}");
    }
    // The CUDA device, by its index, differs from the host's peak.
    let (_, cuda_after) = replay(&cuda_events());
    let c = json(&["compare", &a, &b, "--device", "0", "--json"]);
    assert_eq!(c["a"]["peak_bytes"], peak(&cuda_after).1, "{c}");
    assert_ne!(peak(&cuda_after).1, host_peak);
}

#[test]
fn live_and_info_on_annotate_entries() {
    let t0 = 1_700_000_000_000_000i128;
    let events = cuda_events();
    let mut rows = entries(&events, t0);
    // Annotations: one on the allocation at BASE + 1 MiB (alive from entry 2 to 8), one at an
    // address that holds nothing. They go in after entry 2, so the rows after move by two.
    let annotate = |addr: u64, text: &str, t: i128| {
        dict(vec![
            ("action", s("annotate")),
            ("addr", i(i128::from(addr))),
            ("size", i(0)),
            ("stream", i(0)),
            ("time_us", i(t)),
            ("frames", stack_of(1)),
            ("user_metadata", s(text)),
        ])
    };
    rows.insert(3, annotate(BASE + MIB, "kv cache", t0 + 21));
    rows.insert(4, annotate(BASE + 12 * MIB, "nowhere", t0 + 22));
    let p = write("annotate.pickle", &dumps(&snapshot(vec![], vec![rows]), 4));
    let f = p.to_str().unwrap();
    let (lives, after) = replay(&events);
    let (peak_row, peak_bytes) = peak(&after);

    let info = json(&["info", f, "--json"]);
    let d = &info["devices"][0];
    assert_eq!(d["entries"], events.len() + 2);
    assert_eq!(d["actions"]["annotate"], 2, "{d}");
    assert_eq!(d["peak_allocated_bytes"], peak_bytes, "annotate entries allocate nothing");
    assert_eq!(d["peak_allocated_entry"], peak_row + 2);

    let live = json(&["live", f, "--json"]);
    assert_eq!(live["total_bytes"], peak_bytes);
    assert_eq!(live["entry"], peak_row + 2);
    let ann = live["annotations"].as_array().unwrap();
    assert_eq!(ann.len(), 1, "{ann:?}");
    assert_eq!(ann[0]["text"], "kv cache");
    assert_eq!(ann[0]["entry"], 3);
    let text = memviz(&["live", f]);
    assert!(text.contains("Annotations of live allocations:"), "{text}");
    assert!(text.contains(&format!("0x{:x} 2 MiB", BASE + MIB)), "{text}");
    assert!(text.contains("entry 3 ") && text.contains("\"kv cache\""), "{text}");
    // Before the annotated allocation is made, nothing annotated is live.
    let early = memviz(&["live", f, "--at", "1"]);
    assert!(!early.contains("Annotations of live allocations"), "{early}");

    // Flame graphs ignore annotate entries: the same bytes as the plain trace.
    let (root, by) = flame_json_children(&json(&["flame", f, "--json"]));
    assert_eq!(root, peak_bytes);
    assert_eq!(by, live_by_site(&lives, peak_row));
    let text = memviz(&["insights", f]);
    assert!(text.starts_with(&format!("{f}: device 0\n")), "{text}");
}

/// `compare --by GROUP` lists, at each matched moment, each group's bytes on both sides: they
/// equal `live --by GROUP` of each file at the moment's entry (read independently of compare).
#[test]
fn compare_by_group_equals_the_grouped_live_sets_at_the_matched_entries() {
    let a = crate::test_fixtures::fixture("real", "resnet50_fixed.pickle");
    let b = crate::test_fixtures::fixture("real", "resnet50_buggy.pickle");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    for by in ["op", "user-line"] {
        let c = json(&["compare", a, b, "--by", by, "--top", "0", "--json"]);
        let live = |file: &str, entry: &serde_json::Value| -> BTreeMap<String, u64> {
            let at = entry.as_u64().expect("an entry").to_string();
            let v = json(&["live", file, "--at", &at, "--by", by, "--top", "0", "--json"]);
            v["groups"]
                .as_array()
                .expect("groups")
                .iter()
                .map(|g| {
                    let key = match (g["value"].as_str(), g["reason"].as_str()) {
                        (Some(v), _) => v.to_string(),
                        (None, Some(r)) => format!("<{r}>"),
                        (None, None) => "<none>".to_string(),
                    };
                    (key, g["bytes"].as_u64().expect("bytes"))
                })
                .collect()
        };
        let mut checked = 0;
        for p in c["points"].as_array().expect("points").iter().filter(|p| p["label"] == "peak" || p["label"] == "end")
        {
            let (la, lb) = (live(a, &p["a_entry"]), live(b, &p["b_entry"]));
            for d in p["more_in_b"].as_array().into_iter().chain(p["more_in_a"].as_array()).flatten() {
                let key = d["key"].as_str().expect("key");
                assert_eq!(
                    d["a_bytes"].as_u64(),
                    Some(la.get(key).copied().unwrap_or(0)),
                    "{by} {} A {key}",
                    p["label"]
                );
                assert_eq!(
                    d["b_bytes"].as_u64(),
                    Some(lb.get(key).copied().unwrap_or(0)),
                    "{by} {} B {key}",
                    p["label"]
                );
                checked += 1;
            }
        }
        assert!(checked >= 4, "{by}: {checked} groups differ");
    }
    let bad = crate::run::run(&["compare", a, b, "--by", "colour"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("stack, line"), "{}", String::from_utf8_lossy(&bad.stderr));
}

/// `flame --by GROUP`: the first level is the groups, each weighing what `live --by GROUP`
/// gives it at the same moment; every node weighs at least the sum of its children.
#[test]
fn flame_by_group_starts_with_the_groups_of_the_live_set() {
    let f = crate::test_fixtures::fixture("real", "metadata_layers.pickle");
    let f = f.to_str().unwrap();
    for by in ["metadata:phase", "op"] {
        let g = json(&["flame", f, "--by", by, "--json"]);
        let nodes = g["nodes"].as_array().expect("nodes");
        let value = |i: u64| nodes[i as usize]["value"].as_f64().expect("value") as u64;
        let first: BTreeMap<String, u64> = nodes[0]["children"]
            .as_array()
            .expect("children")
            .iter()
            .map(|c| {
                (nodes[c.as_u64().unwrap() as usize]["name"].as_str().unwrap().to_string(), value(c.as_u64().unwrap()))
            })
            .collect();
        let live = json(&["live", f, "--by", by, "--top", "0", "--json"]);
        let mut expect: BTreeMap<String, u64> = BTreeMap::new();
        for grp in live["groups"].as_array().expect("groups") {
            let key = match (grp["value"].as_str(), grp["reason"].as_str()) {
                (Some(v), _) => v.to_string(),
                (None, Some(r)) => format!("<{r}>"),
                (None, None) => "<none>".to_string(),
            };
            *expect.entry(key).or_insert(0) += grp["bytes"].as_u64().expect("bytes");
        }
        assert_eq!(first, expect, "{by}");
        for (i, n) in nodes.iter().enumerate() {
            let kids: u64 = n["children"].as_array().unwrap().iter().map(|c| value(c.as_u64().unwrap())).sum();
            assert!(kids <= value(i as u64), "{by}: node {i} weighs less than its children");
        }
    }
}

/// `categories --by GROUP`: at every point, each column holds what `live --by GROUP` gives its
/// group at that entry (the groups past the 12 largest summed as "other"), and the peak is the
/// file's peak.
#[test]
fn categories_by_group_are_the_grouped_live_sets_over_time() {
    for (name, by) in [("metadata_layers.pickle", "metadata:phase"), ("resnet50_buggy.pickle", "op")] {
        let f = crate::test_fixtures::fixture("real", name);
        let f = f.to_str().unwrap();
        let t = json(&["categories", f, "--by", by, "--points", "6", "--json"]);
        let columns: Vec<String> =
            t["categories"].as_array().expect("columns").iter().map(|c| c.as_str().unwrap().to_string()).collect();
        let entries = t["entries"].as_array().expect("entries");
        assert!(entries.len() >= 2, "{name}: {entries:?}");
        for (p, entry) in entries.iter().enumerate() {
            let at = entry.as_u64().expect("entry").to_string();
            let live = json(&["live", f, "--at", &at, "--by", by, "--top", "0", "--json"]);
            let mut expect = vec![0u64; columns.len()];
            for g in live["groups"].as_array().expect("groups") {
                let key = match (g["value"].as_str(), g["reason"].as_str()) {
                    (Some(v), _) => v.to_string(),
                    (None, Some(r)) => format!("<{r}>"),
                    (None, None) => "<none>".to_string(),
                };
                let c = columns.iter().position(|c| *c == key).or_else(|| columns.iter().position(|c| c == "other"));
                expect[c.unwrap_or_else(|| panic!("{name}: {key} has no column"))] += g["bytes"].as_u64().unwrap();
            }
            let got: Vec<u64> = t["bytes"][p].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).collect();
            assert_eq!(got, expect, "{name} {by} at entry {at}");
        }
        let info = json(&["info", f, "--json"]);
        let peak = info["devices"][0]["peak_allocated_bytes"].as_u64().or_else(|| info["peak_bytes"].as_u64());
        let top: u64 = t["bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).sum())
            .max()
            .unwrap();
        if let Some(peak) = peak {
            assert_eq!(top, peak, "{name}: the peak is a point");
        }
    }
    let timeline = crate::test_fixtures::fixture("real", "resnet50_profile.timeline.json");
    let out = crate::run::run(&["categories", timeline.to_str().unwrap(), "--by", "op"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("categories only"));
}

/// `insights --by user-line --library FRAGMENT`: the fragment's files are not the user's code
/// there as in `live` (the leak's line, train.py:20, was still named).
#[test]
fn insights_by_user_line_reads_the_library_fragments() {
    let f = crate::test_fixtures::fixture("real", "growth_leak.pickle");
    let f = f.to_str().unwrap();
    let first = |extra: &[&str]| -> String {
        let mut args = vec!["insights", f, "--by", "user-line", "--json"];
        args.extend_from_slice(extra);
        json(&args)["groups"][0]["value"].as_str().unwrap_or("<none>").to_string()
    };
    assert_eq!(first(&[]), "/home/user/project/train.py:20 (growth_leak)");
    assert_eq!(first(&["--library", "project/train.py"]), "<no frame outside libraries>");
}
