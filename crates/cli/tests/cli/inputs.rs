//! The files people have: gzip, xz and zstd compressed snapshots and the HTML pages of PyTorch's
//! `_memory_viz trace_plot` and of memviz itself give the same `stats` and `trace` as the plain
//! pickle, byte for byte (tests/data/containers, made by tests/gen/make_containers.py), from a
//! path and from standard input.

use crate::run::{run, run_stdin};
use std::path::{Path, PathBuf};

fn containers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/containers")
}

/// Every wrapped snapshot and its NAME.ref.*.txt.
fn cases() -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(containers())
        .expect("tests/data/containers")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            if name.contains(".ref.") || name == "manifest.json" {
                return None;
            }
            let stem = name.split('.').next()?.to_string();
            Some((p, stem))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn wrapped_snapshots_give_the_plain_pickles_text() {
    let cases = cases();
    assert!(cases.len() >= 8, "expected the containers test data, found {}", cases.len());
    for (path, stem) in cases {
        let p = path.to_str().expect("path");
        let bytes = std::fs::read(&path).expect("read");
        for cmd in ["stats", "trace"] {
            let want = std::fs::read(containers().join(format!("{stem}.ref.{cmd}.txt"))).expect("reference");
            for out in [run(&[cmd, p]), run_stdin(&[cmd, "-"], &bytes)] {
                assert!(out.status.success(), "memviz {cmd} {p}: {}", String::from_utf8_lossy(&out.stderr));
                assert!(out.stdout == want, "memviz {cmd} {p} differs from {stem}.ref.{cmd}.txt");
            }
        }
        let info = run(&["info", "--json", p]);
        assert!(info.status.success());
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).expect("json");
        let warnings = v["warnings"].as_array().map(Vec::len).unwrap_or(0);
        assert!(
            !v["warnings"].to_string().contains("after the pickle"),
            "{p}: PyTorch's NUL padding reached the reader ({warnings} warnings: {})",
            v["warnings"]
        );
    }
}

#[test]
fn damaged_and_foreign_files_get_one_line_naming_the_format() {
    let dir = std::env::temp_dir().join(format!("memviz-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let gz = std::fs::read(containers().join("oom.pickle.gz")).expect("gz");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("cut.pickle.gz", gz[..gz.len() / 2].to_vec(), "gzip"),
        ("photo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(), "image"),
        ("trace.json", b"{\"schemaVersion\": 1, \"traceEvents\": []}".to_vec(), "profiler trace"),
        ("page.html", b"<!DOCTYPE html><html><body>hi</body></html>".to_vec(), "no memory snapshot"),
    ];
    for (name, bytes, needle) in cases {
        let p = dir.join(name);
        std::fs::write(&p, &bytes).expect("write");
        let out = run(&["stats", p.to_str().expect("path")]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.to_lowercase().contains(needle), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pages_written_from_wrapped_snapshots_open_again() {
    let probe = run(&["viewer", "-o", "-"]);
    if !probe.status.success() {
        eprintln!("note: this memviz has no viewer built in; skipping: {}", String::from_utf8_lossy(&probe.stderr));
        return;
    }
    let want = std::fs::read(containers().join("oom.ref.stats.txt")).expect("reference");
    let dir = std::env::temp_dir().join(format!("memviz-pages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    for src in ["oom.pickle.gz", "oom.pickle.zst", "oom.html"] {
        let input = containers().join(src);
        let page = dir.join(format!("{src}.memviz.html"));
        let out = run(&["trace-plot", input.to_str().expect("path"), "-o", page.to_str().expect("path")]);
        assert!(out.status.success(), "trace-plot {src}: {}", String::from_utf8_lossy(&out.stderr));
        // The page memviz wrote opens as the snapshot inside it.
        let stats = run(&["stats", page.to_str().expect("path")]);
        assert!(stats.status.success(), "stats of the page of {src}: {}", String::from_utf8_lossy(&stats.stderr));
        assert!(stats.stdout == want, "stats of the page of {src} differ");
        // `-o -` writes the same page to standard output.
        let out = run(&["trace-plot", input.to_str().expect("path"), "-o", "-"]);
        assert!(out.status.success());
        assert_eq!(out.stdout, std::fs::read(&page).expect("page"), "{src}: -o - differs from the file");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
