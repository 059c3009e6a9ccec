//! The `memviz` binary end to end: the same text as PyTorch's CLI, one-line errors with exit
//! status 1, `-` for standard input, help and version, and `info --json`.

use crate::run::{bin, run, run_stdin};
use crate::test_fixtures;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

fn fixtures() -> PathBuf {
    test_fixtures::fixture_dir("real")
}

/// A file of the shared fixtures; panics with the path when it is absent.
fn fixture(name: &str) -> PathBuf {
    test_fixtures::fixture("real", name)
}

fn first_diff(expected: &[u8], actual: &[u8]) -> String {
    let e = String::from_utf8_lossy(expected);
    let a = String::from_utf8_lossy(actual);
    for (i, (x, y)) in e.split('\n').zip(a.split('\n')).enumerate() {
        if x != y {
            return format!("line {}: expected {x:?}, got {y:?}", i + 1);
        }
    }
    format!("expected {} lines, got {}", e.split('\n').count(), a.split('\n').count())
}

/// Stdout, when the command succeeded with nothing on stderr.
fn ok_stdout(args: &[&str], out: &Output) -> Vec<u8> {
    assert!(out.status.success(), "memviz {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout.clone()
}

#[test]
fn stats_and_trace_print_what_pytorch_prints() {
    let mut n = 0;
    let mut failures = Vec::new();
    for which in ["real", "synth"] {
        let dir = test_fixtures::fixture_dir(which);
        for f in test_fixtures::fixture_files(&[which]) {
            let name = f.file_name().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
            let Some(stem) = name.strip_suffix(".pickle") else { continue };
            for cmd in ["stats", "trace"] {
                let reference = dir.join(format!("{stem}.ref.{cmd}.txt"));
                let Ok(expected) = std::fs::read(&reference) else { continue };
                let path = f.to_string_lossy().into_owned();
                let out = run(&[cmd, &path]);
                n += 1;
                if !out.status.success() {
                    failures.push(format!(
                        "{cmd} {name}: exit {:?}: {}",
                        out.status.code(),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                } else if out.stdout != expected {
                    failures.push(format!("{cmd} {name}: {}", first_diff(&expected, &out.stdout)));
                } else if !out.stderr.is_empty() {
                    failures.push(format!("{cmd} {name}: unexpected stderr {}", String::from_utf8_lossy(&out.stderr)));
                }
            }
        }
    }
    eprintln!("compared {n} outputs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn dash_reads_standard_input() {
    let p = fixture("oom.pickle");
    let bytes = std::fs::read(&p).expect("read");
    for cmd in ["stats", "trace"] {
        let expected = std::fs::read(fixtures().join(format!("oom.ref.{cmd}.txt"))).expect("reference");
        let out = run_stdin(&[cmd, "-"], &bytes);
        assert_eq!(ok_stdout(&[cmd, "-"], &out), expected, "{cmd} -: {}", first_diff(&expected, &out.stdout));
    }
    let from_file = run(&["info", "--json", &p.to_string_lossy()]);
    let from_stdin = run_stdin(&["info", "--json", "-"], &bytes);
    assert_eq!(ok_stdout(&[], &from_stdin), ok_stdout(&[], &from_file));
    // A bad file on stdin is named "-" in the message.
    let out = run_stdin(&["stats", "-"], b"PK\x03\x04not really a zip");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("-: ") && err.contains("zip"), "{err}");
}

#[test]
fn bad_files_exit_1_with_one_line_on_stderr() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("memviz-cli-tests");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut cases: Vec<(PathBuf, &str)> = vec![(dir.join("does-not-exist.pickle"), "cannot read")];
    let mut write = |name: &str, bytes: &[u8], needle: &'static str| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).expect("write");
        cases.push((p, needle));
    };
    write("empty.pickle", b"", "empty");
    write("checkpoint.pt", b"PK\x03\x04\x14\x00\x00\x00\x08\x00archive/data.pkl", "torch.save");
    write("page.html", b"<!DOCTYPE html><html><body></body></html>", "HTML");
    write("truncated.pickle", b"\x80\x04\x8c\x20abc", "truncated");
    write("evil.pickle", b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.", "GLOBAL");
    write(
        "not_a_snapshot.pickle",
        b"\x80\x04}\x94(\x8c\x03foo\x94K\x01\x8c\x03bar\x94]\x94u.",
        "top-level keys are foo, bar",
    );
    {
        let p = fixture("oom.pickle");
        let b = std::fs::read(p).expect("read");
        write("cut.pickle", &b[..b.len() / 2], "truncated");
    }
    for (p, needle) in &cases {
        let path = p.to_string_lossy().into_owned();
        for args in [
            vec!["stats", path.as_str()],
            vec!["trace", path.as_str()],
            vec!["info", path.as_str()],
            vec!["info", "--json", path.as_str()],
        ] {
            let out = run(&args);
            assert_eq!(out.status.code(), Some(1), "memviz {args:?}");
            assert!(out.stdout.is_empty(), "memviz {args:?} wrote to stdout");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.lines().count(), 1, "memviz {args:?}: stderr is not one line: {err:?}");
            assert!(err.ends_with('\n'));
            assert!(err.starts_with("memviz: error: "), "{err}");
            assert!(err.contains(&path), "the message names the file: {err}");
            assert!(err.contains(needle), "memviz {args:?}: {err:?} lacks {needle:?}");
        }
    }
    // `trace` on a snapshot without a trace (and `stats` on one without segments).
    let bare = b"\x80\x04]\x94.";
    let p = dir.join("bare.pickle");
    std::fs::write(&p, bare).expect("write");
    let out = run(&["trace", &p.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

#[test]
fn help_and_version() {
    let out = run(&["--version"]);
    let v = String::from_utf8_lossy(&ok_stdout(&["--version"], &out)).into_owned();
    assert_eq!(v.trim(), format!("memviz {}", env!("CARGO_PKG_VERSION")));
    let out = run(&["--help"]);
    let h = String::from_utf8_lossy(&ok_stdout(&["--help"], &out)).into_owned();
    for cmd in ["stats", "trace", "info"] {
        assert!(h.contains(cmd), "--help lists {cmd}: {h}");
        let out = run(&[cmd, "--help"]);
        let h = String::from_utf8_lossy(&ok_stdout(&[cmd, "--help"], &out)).into_owned();
        assert!(h.contains("Usage: memviz") && h.contains(cmd) && h.contains("<FILE>"), "{cmd} --help: {h}");
        assert!(h.contains("standard input"), "{cmd} --help mentions `-`: {h}");
    }
    // No arguments or an unknown command: usage on stderr, non-zero exit, nothing on stdout.
    for args in [&[][..], &["frobnicate"][..], &["stats"][..]] {
        let out = run(args);
        assert!(!out.status.success(), "memviz {args:?}");
        assert!(out.stdout.is_empty());
        assert!(String::from_utf8_lossy(&out.stderr).contains("Usage"), "memviz {args:?}");
    }
}

/// Peaks computed independently by `tests/gen/check_info.py` (plain `pickle.load`, the definition
/// of crates/core/src/info.rs).
const PEAKS: &[(&str, u64, u64, Option<u64>)] = &[
    // (fixture, entries, peak allocated bytes, row of the peak)
    ("resnet50_fixed.pickle", 10_184, 443_710_928, Some(3133)),
    ("resnet50_buggy.pickle", 9_870, 470_210_256, Some(2302)),
    ("oom.pickle", 46, 2_740_593_636, Some(44)),
    ("state_only.pickle", 1, 2_640_957_440, None),
];

#[test]
fn info_json_has_the_independently_checked_peaks() {
    for &(name, entries, peak, row) in PEAKS {
        let p = fixture(name);
        let args = ["info", "--json", &p.to_string_lossy()].map(str::to_owned);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        let v: serde_json::Value =
            serde_json::from_slice(&ok_stdout(&args, &out)).unwrap_or_else(|e| panic!("{name}: not JSON: {e}"));
        let d = &v["devices"][0];
        assert_eq!(d["device"], 0, "{name}");
        assert_eq!(d["entries"].as_u64(), Some(entries), "{name}");
        assert_eq!(d["peak_allocated_bytes"].as_u64(), Some(peak), "{name}");
        assert_eq!(d["peak_allocated_entry"].as_u64(), row, "{name}");
        assert_eq!(v["protocol"], 4, "{name}");
        assert!(v["recording"]["stacks"].is_string());
        // The text form states the same peak.
        let out = run(&["info", &p.to_string_lossy()]);
        let text = String::from_utf8_lossy(&ok_stdout(&[], &out)).into_owned();
        assert!(text.contains(&format!("({peak} bytes)")), "{name}: {text}");
    }
}

/// Every command that prints: its output sent to `/dev/full` (a disk that is full) ends with exit
/// status 1 and one line naming standard output, never silently.
#[test]
fn output_that_cannot_be_written_is_an_error() {
    let p = test_fixtures::fixture("synth", "oom.pickle");
    let f = p.to_string_lossy().into_owned();
    let ranks_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("memviz-full-ranks");
    std::fs::create_dir_all(&ranks_dir).expect("temp dir");
    std::fs::copy(&p, ranks_dir.join("rank0.pickle")).expect("copy");
    let ranks = ranks_dir.to_string_lossy().into_owned();
    let timeline = fixture("resnet50_profile.timeline.json.gz").to_string_lossy().into_owned();
    let commands: Vec<Vec<&str>> = vec![
        vec!["stats", &f],
        vec!["trace", &f],
        vec!["info", &f],
        vec!["info", "--json", &f],
        vec!["live", &f],
        vec!["live", "--json", &f],
        vec!["live", "--by", "op", &f],
        vec!["live", "--by", "op", "--json", &f],
        vec!["insights", &f],
        vec!["insights", "--json", &f],
        vec!["insights", "--by", "frame", &f],
        vec!["oom", &f],
        vec!["oom", "--json", &f],
        vec!["fragmentation", &f],
        vec!["fragmentation", "--json", &f],
        vec!["compare", &f, &f],
        vec!["compare", "--json", &f, &f],
        vec!["categories", &f],
        vec!["categories", "--json", &f],
        vec!["categories", "--by", "op", &f],
        vec!["categories", &timeline],
        vec!["flame", &f],
        vec!["flame", "--json", &f],
        vec!["flame", "--lifetime", "0..8", &f],
        vec!["layout", &f],
        vec!["layout", "--json", &f],
        vec!["ranks", &ranks],
        vec!["ranks", "--json", &ranks],
        vec!["export", "--format", "csv", &f],
        vec!["export", "--format", "json", &f],
        vec!["export", "--format", "speedscope", &f],
    ];
    for args in commands {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("open /dev/full");
        let out = bin().args(&args).stdout(full).stderr(Stdio::piped()).output().expect("run memviz");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "memviz {args:?} > /dev/full: {err}");
        assert_eq!(err.lines().count(), 1, "memviz {args:?}: {err:?}");
        assert!(err.starts_with("memviz: error: cannot write standard output: "), "memviz {args:?}: {err}");
    }
    // An output file that cannot be written is named.
    let out = run(&["export", "--format", "csv", &f, "-o", "/dev/full"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write /dev/full"));
}

/// A missing file is named with the system's reason, the same whichever command reads it: the
/// cause (`std::io::Error`) stays attached to the message.
#[test]
fn a_missing_file_is_named_with_the_systems_reason() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("memviz-cli-tests");
    let path = dir.join("not-there.pickle").to_string_lossy().into_owned();
    // What the system says, e.g. "No such file or directory (os error 2)".
    let reason = std::fs::File::open(&path).expect_err("the file is not there");
    let expected = format!("memviz: error: cannot read {path}: {reason}\n");
    for args in [
        vec!["stats", &path],
        vec!["info", "--json", &path],
        vec!["live", &path],
        vec!["categories", &path],
        vec!["compare", &path, &path],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "memviz {args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), expected, "memviz {args:?}");
    }
}

/// Bad arguments say what is wrong in one line, as the analyses word it.
#[test]
fn bad_arguments_are_one_line() {
    let f = test_fixtures::fixture("synth", "oom.pickle").to_string_lossy().into_owned();
    let cases: [(Vec<&str>, &str); 5] = [
        (vec!["live", "--at", "noon", &f], "'noon' is not a moment: use peak, start, end or an entry number"),
        (vec!["compare", "--by", "colour", &f, &f], "; or stack, line"),
        (vec!["flame", "--lifetime", "3", &f], "'3' is not a window: use A..B (entry numbers)"),
        (vec!["export", "--format", "parquet", &f], "--format parquet needs an output folder: -o DIR"),
        (vec!["export", "--format", "csv", &f, &f], "--format csv takes one snapshot, not 2"),
    ];
    for (args, needle) in cases {
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "memviz {args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "memviz {args:?}: {err:?}");
        assert!(err.starts_with("memviz: error: ") && err.contains(needle), "memviz {args:?}: {err:?}");
    }
}

/// A reader that stops early (`memviz trace x | head -1`) ends the command quietly, with status 0.
#[test]
fn a_closed_pipe_ends_quietly() {
    let p = test_fixtures::fixture("containers", "oom.pickle.gz");
    let mut child = bin()
        .args(["trace", &p.to_string_lossy()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn memviz");
    // Closing the pipe's reading end before memviz writes makes every write fail with EPIPE.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait for memviz");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A snapshot that `memviz.record` wrote on a GPU (tests/data/real/record_oom.pickle, see its
/// manifest line): the out-of-memory error it caught is in it, with the request and the cap.
#[test]
fn the_snapshot_memviz_record_wrote_holds_its_out_of_memory_error() {
    let path = fixture("record_oom.pickle");
    let p = path.to_str().expect("path");
    let args = ["info", "--json", p];
    let v: serde_json::Value = serde_json::from_slice(&ok_stdout(&args, &run(&args))).expect("json");
    assert_eq!(v["protocol"], 4, "memviz.record writes protocol 4");
    assert_eq!(v["devices"][0]["ooms"], 1);
    assert_eq!(v["devices"][0]["entries"], 403);
    let args = ["oom", p];
    let text = String::from_utf8(ok_stdout(&args, &run(&args))).expect("utf-8");
    assert!(text.contains("Out of memory at entry 402"), "{text}");
    assert!(text.contains("requested:            8 GiB (8589934592 bytes)"), "{text}");
    assert!(text.contains("set_per_process_memory_fraction"), "{text}");
    assert!(text.contains("record_run.py:67 (rank_main)"), "{text}");
}

/// A real recording with `skip_actions=["free_requested"]`: memviz says what was left out, and
/// still prints what PyTorch's CLI prints (the reference test covers the bytes).
#[test]
fn a_real_skip_actions_recording_says_what_it_left_out() {
    let path = fixture("skip_actions.pickle");
    let args = ["info", path.to_str().expect("path")];
    let text = String::from_utf8(ok_stdout(&args, &run(&args))).expect("utf-8");
    assert!(text.contains("left out by the recording (inferred, skip_actions): free_requested\n"), "{text}");
    assert!(text.contains("actions: alloc=78 free_completed=75 segment_alloc=6\n"), "{text}");
}

/// `memviz compare` on resnet50 fixed (A) against buggy (B, never calls `zero_grad`): the verdict
/// and the per-iteration peaks on top, the same in `--json` beside every earlier field. Figures
/// from `memviz insights` of each file: peaks 375,664,840 then 443,710,928 (fixed) and
/// 470,210,256 (buggy) bytes; buggy keeps 102,228,128 bytes of gradients (97.5 MiB).
#[test]
fn compare_prints_a_verdict_and_the_peak_of_each_iteration() {
    let (a, b) = (fixture("resnet50_fixed.pickle"), fixture("resnet50_buggy.pickle"));
    let (a, b) = (a.to_string_lossy(), b.to_string_lossy());
    let args = ["compare", &a, &b];
    let text = String::from_utf8(ok_stdout(&args, &run(&args))).expect("utf-8");
    let head: Vec<&str> = text.lines().take(5).collect();
    assert_eq!(head[2], "differences are B - A (positive: B holds more)", "{text}");
    assert!(
        head[3].starts_with(
            "verdict: B holds 25.3 MiB more at its peak; the largest difference: +97.5 MiB from `<no Python frames>`"
        ),
        "{text}"
    );
    assert_eq!(head[4], "aligned by iteration annotations (A has 5, B has 5)", "{text}");
    assert!(
        head[3].contains(
            "(the gradients B keeps across iterations: 161 tensors, 97.5 MiB, made in backward; A keeps none)"
        ),
        "{text}"
    );
    let table = "iteration    peak of A    peak of B        B - A\n        1    358.3 MiB    358.3 MiB         +0 B\n        2    423.2 MiB    448.4 MiB    +25.3 MiB\n";
    let at = text.find(table).unwrap_or_else(|| panic!("{text}"));
    assert!(at < text.find("moment ").expect("moment table"), "{text}");
    let args = ["compare", &a, &b, "--json"];
    let v: serde_json::Value = serde_json::from_slice(&ok_stdout(&args, &run(&args))).expect("JSON");
    let its = v["iterations"].as_array().expect("iterations");
    assert_eq!(its.len(), 5);
    assert_eq!(
        its[0],
        serde_json::json!({"iteration": 1, "peak_a_bytes": 375_664_840u64, "peak_b_bytes": 375_664_840u64})
    );
    for (k, it) in its.iter().enumerate().skip(1) {
        assert_eq!(it["iteration"], k + 1);
        assert_eq!((it["peak_a_bytes"].as_u64(), it["peak_b_bytes"].as_u64()), (Some(443_710_928), Some(470_210_256)));
    }
    assert_eq!(v["verdict"].as_str(), head[3].strip_prefix("verdict: "));
    assert_eq!(v["aligned_by"], "by iteration annotations (A has 5, B has 5)");
    for field in ["alignment", "recording_differences", "python_frames_only", "a", "b", "curve", "points"] {
        assert!(v.get(field).is_some(), "{field} missing");
    }
    assert_eq!(v["alignment"]["kind"], "iterations");
    assert_eq!(v["b"]["peak_bytes"], 470_210_256u64);
    // Two files without iterations: matched by position, no iteration rows, and the verdict says so.
    let (a, b) =
        (test_fixtures::fixture("synth", "oom.pickle"), test_fixtures::fixture("synth", "multi_stream.pickle"));
    let (a, b) = (a.to_string_lossy(), b.to_string_lossy());
    let args = ["compare", &a, &b, "--json"];
    let v: serde_json::Value = serde_json::from_slice(&ok_stdout(&args, &run(&args))).expect("JSON");
    assert_eq!(v["iterations"], serde_json::json!([]));
    assert_eq!(v["aligned_by"], "by trace position scaled (no iterations in both)");
    assert!(v["verdict"].as_str().is_some_and(|s| s.ends_with("matched by trace position scaled")), "{v}");
}

/// `memviz compare A B --html OUT`: one page with both files inside, asking for the Compare
/// view of the two (the page itself is opened in the browser test `offline.test.mjs`); `-`
/// writes it to standard output.
#[test]
fn compare_writes_the_compare_view_as_a_page() {
    let (a, b) = (fixture("resnet50_fixed.pickle"), fixture("resnet50_buggy.pickle"));
    let (a, b) = (a.to_string_lossy(), b.to_string_lossy());
    let dir = std::env::temp_dir().join(format!("memviz-compare-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let page = dir.join("compare.html");
    let args = ["compare", &a, &b, "--html", page.to_str().expect("path")];
    let said = String::from_utf8(ok_stdout(&args, &run(&args))).expect("utf-8");
    assert!(said.starts_with(&format!("wrote {} (", page.display())), "{said}");
    let html = std::fs::read_to_string(&page).expect("page");
    assert!(html.contains("<title>resnet50_fixed.pickle vs resnet50_buggy.pickle · memviz</title>"));
    assert_eq!(html.matches("\"base64\":").count(), 2, "both files inside");
    assert!(html.contains("\"compare\":true"));
    let args = ["compare", &a, &b, "--html", "-"];
    assert_eq!(ok_stdout(&args, &run(&args)), html.as_bytes(), "--html - writes the same page");
    let _ = std::fs::remove_dir_all(&dir);
}
