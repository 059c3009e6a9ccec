//! PyTorch's own tests of its viewer's layout (`test/profiler/test_memory_viz.js`), restated as
//! data in `tests/data/conformance` (`tests/gen/make_conformance.py`), run against
//! `memviz layout --json`. Every check passes or is listed in docs/layout.md as a difference on
//! purpose, and that list names exactly the checks that differ: a listed check that passes fails
//! the test as much as an unlisted one that does not.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::test_fixtures;
use serde_json::Value;

fn layout_json(file: &Path, view: &str, detail: u64) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(["layout", &file.to_string_lossy(), "--device", "0", "--view", view, "--detail", &detail.to_string()])
        .arg("--json")
        .output()
        .expect("run memviz");
    assert!(out.status.success(), "memviz layout {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("layout JSON")
}

/// A snapshot whose trace is given as a rule (`expand_trace`), written out whole.
fn expanded(snapshot: &Path, rule: &Value, dir: &Path) -> PathBuf {
    let mut snap: Value = serde_json::from_slice(&std::fs::read(snapshot).unwrap()).unwrap();
    let n = rule["repeat"].as_u64().unwrap();
    let (start, step) = (rule["addr_start"].as_u64().unwrap(), rule["addr_step"].as_u64().unwrap());
    let entries: Vec<Value> = (0..n)
        .map(|i| {
            serde_json::json!({"action": rule["action"], "addr": start + i * step, "size": rule["size"],
                "frames": [], "stream": 0})
        })
        .collect();
    snap["device_traces"] = serde_json::json!([entries]);
    let path = dir.join(snapshot.file_name().unwrap());
    std::fs::write(&path, serde_json::to_vec(&snap).unwrap()).unwrap();
    path
}

fn sorted_numbers(items: &Value, key: &str) -> Value {
    let mut v: Vec<u64> = items.as_array().unwrap().iter().map(|x| x[key].as_u64().unwrap()).collect();
    v.sort_unstable();
    Value::from(v)
}

/// The value a check names, read off `memviz layout --json`; `None` for a check about PyTorch's
/// series' points (`op: "points"`), which a layout of lifetimes has no counterpart for.
fn value_of(out: &Value, what: &str) -> Option<Value> {
    let count = |k: &str| Value::from(out[k].as_array().map_or(0, Vec::len));
    Some(match what {
        "max_size_bytes" | "peak_bytes" | "elements" | "bands" => out[what].clone(),
        "envelopes.count" => count("envelopes"),
        "stripes.count" => count("stripes"),
        "ghosts.count" => count("ghosts"),
        "pool_summaries.count" => count("pool_summaries"),
        "envelopes.keys" => {
            let mut keys: Vec<String> =
                out["envelopes"].as_array().unwrap().iter().map(|e| e["key"].as_str().unwrap().to_owned()).collect();
            keys.sort();
            Value::from(keys)
        }
        "stripes.sizes" => sorted_numbers(&out["stripes"], "size_bytes"),
        "ghosts.sizes" => sorted_numbers(&out["ghosts"], "size_bytes"),
        "non_pool_bands" => {
            Value::from(out["bands"].as_u64().unwrap() - out["stripes"].as_array().unwrap().len() as u64)
        }
        "summarized.max_bytes" => out["summarized"]["max_bytes"].clone(),
        "summarized.final_bytes" => out["summarized"]["final_bytes"].clone(),
        "ghost_contexts" => {
            let ctx = out["context"].as_array().unwrap();
            let texts: Vec<Value> = out["ghosts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| ctx[g["element"].as_u64().unwrap() as usize].clone())
                .collect();
            Value::from(texts)
        }
        w => {
            if let Some(rest) = w.strip_prefix("context[") {
                let i: usize = rest.trim_end_matches(']').parse().unwrap();
                out["context"].get(i).cloned().unwrap_or(Value::Null)
            } else if let Some(rest) = w.strip_prefix("stripes[") {
                let (i, field) = rest.split_once("].").unwrap();
                out["stripes"].get(i.parse::<usize>().unwrap()).map_or(Value::Null, |s| s[field].clone())
            } else if let Some(rest) = w.strip_prefix("pool_summaries[") {
                let (i, field) = rest.split_once("].").unwrap();
                out["pool_summaries"].get(i.parse::<usize>().unwrap()).map_or(Value::Null, |s| s[field].clone())
            } else if let Some(rest) = w.strip_prefix("envelope:") {
                let (key, field) = rest.rsplit_once('.').unwrap();
                let env = out["envelopes"].as_array().unwrap().iter().find(|e| e["key"] == key);
                env.map_or(Value::Null, |e| e[field].clone())
            } else {
                return None;
            }
        }
    })
}

fn passes(actual: Option<&Value>, op: &str, expected: &Value) -> bool {
    let Some(actual) = actual else { return false };
    match op {
        "eq" => actual == expected,
        "le" => actual.as_f64().zip(expected.as_f64()).is_some_and(|(a, e)| a <= e),
        "contains" => {
            let needle = expected.as_str().unwrap();
            match actual {
                Value::String(s) => s.contains(needle),
                Value::Array(items) => {
                    !items.is_empty() && items.iter().all(|s| s.as_str().is_some_and(|s| s.contains(needle)))
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// The check ids docs/layout.md lists as differences on purpose: the first backquoted text of
/// each row of its conformance table.
fn documented() -> BTreeSet<String> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/layout.md");
    let text = std::fs::read_to_string(&doc).unwrap();
    let start =
        text.find("## Conformance with PyTorch's viewer tests").expect("docs/layout.md: no conformance section");
    let section = &text[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    section[..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(id, _)| id.to_owned()))
        .collect()
}

#[test]
fn pytorch_viewer_tests_pass_or_are_documented_differences() {
    let dir = test_fixtures::fixture_dir("conformance");
    let cases: Value = serde_json::from_slice(&std::fs::read(dir.join("cases.json")).unwrap()).unwrap();
    let tmp = std::env::temp_dir().join(format!("memviz-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let (mut calls, mut checks, mut passed) = (0, 0, 0);
    let mut failing = BTreeSet::new();
    let mut report = Vec::new();
    for case in cases["cases"].as_array().unwrap() {
        let mut file = test_fixtures::fixture("conformance", case["snapshot"].as_str().unwrap());
        if let Some(rule) = case.get("expand_trace") {
            file = expanded(&file, rule, &tmp);
        }
        for call in case["calls"].as_array().unwrap() {
            calls += 1;
            let out = layout_json(&file, call["view"].as_str().unwrap(), call["detail"].as_u64().unwrap());
            for check in call["checks"].as_array().unwrap() {
                checks += 1;
                let id = check["id"].as_str().unwrap().to_owned();
                let actual = value_of(&out, check["what"].as_str().unwrap());
                if passes(actual.as_ref(), check["op"].as_str().unwrap(), &check["value"]) {
                    passed += 1;
                } else {
                    let shown = actual.map_or("(no counterpart)".to_owned(), |a| {
                        let s = a.to_string();
                        if s.len() > 160 {
                            format!("{}...", &s[..160])
                        } else {
                            s
                        }
                    });
                    report.push(format!("{id}: memviz gives {shown}"));
                    failing.insert(id);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert_eq!(calls, cases["calls"].as_u64().unwrap(), "calls run");
    assert_eq!(checks, cases["checks"].as_u64().unwrap(), "checks run");
    let documented = documented();
    println!(
        "PyTorch viewer conformance: {passed} of {checks} checks pass ({calls} calls of process_alloc_data); {} differ, each listed in docs/layout.md",
        failing.len()
    );
    let undocumented: Vec<&String> = failing.difference(&documented).collect();
    let stale: Vec<&String> = documented.difference(&failing).collect();
    assert!(
        undocumented.is_empty() && stale.is_empty(),
        "checks that differ but are not in docs/layout.md:\n{}\n\nlisted in docs/layout.md but passing (or unknown):\n{}\n\nall differences:\n{}",
        undocumented.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"),
        stale.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"),
        report.join("\n")
    );
}
