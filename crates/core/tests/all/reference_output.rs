//! `memviz_core::reference::stats` / `trace` against the text PyTorch's own CLI printed
//! (`NAME.ref.stats.txt`, `NAME.ref.trace.txt` next to each snapshot), byte for byte, for every
//! snapshot found at test time in the fixtures, `tests/data/real` and `tests/data/synth`. Also the
//! same through the chunked [`memviz_core::Loader`].

use std::path::{Path, PathBuf};

use crate::common::{first_diff, fixture, fixture_dir, fixture_files, read, REFERENCE_DIRS};
use memviz_core::{info, reference, Loader, Snapshot};

/// A snapshot file and the reference texts next to it.
struct Case {
    file: PathBuf,
    stats: Option<PathBuf>,
    trace: Option<PathBuf>,
}

/// `NAME.pickle` (and `NAME.json`) files with at least one `NAME.ref.*.txt` beside them.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for which in REFERENCE_DIRS {
        let dir = fixture_dir(which);
        for f in fixture_files(&[which]) {
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            let Some(stem) = name.strip_suffix(".pickle").or_else(|| name.strip_suffix(".json")) else { continue };
            let stats = dir.join(format!("{stem}.ref.stats.txt"));
            let trace = dir.join(format!("{stem}.ref.trace.txt"));
            let (stats, trace) = (stats.is_file().then_some(stats), trace.is_file().then_some(trace));
            if stats.is_some() || trace.is_some() {
                out.push(Case { file: f, stats, trace });
            }
        }
    }
    out
}

fn text(p: &Path) -> String {
    String::from_utf8(read(p)).unwrap_or_else(|e| panic!("{} is not UTF-8: {e}", p.display()))
}

/// Compares one output against its reference file; returns a failure message.
fn check(file: &Path, what: &str, expected: &Path, actual: Result<String, memviz_core::Error>) -> Option<String> {
    let expected = text(expected);
    match actual {
        Err(e) => Some(format!("{}: {what} failed: {e}", file.display())),
        Ok(a) => first_diff(&expected, &a).map(|d| format!("{}: {what} differs from {}: {d}", file.display(), what)),
    }
}

#[test]
fn stats_and_trace_match_pytorch_byte_for_byte() {
    let cases = cases();
    assert!(!cases.is_empty(), "no snapshot with reference output in {REFERENCE_DIRS:?}");
    let mut failures = Vec::new();
    let mut compared = 0;
    for c in &cases {
        let snap = match memviz_core::load(&read(&c.file)) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{}: load failed: {e}", c.file.display()));
                continue;
            }
        };
        if let Some(p) = &c.stats {
            compared += 1;
            failures.extend(check(&c.file, "stats", p, reference::stats(&snap)));
        }
        if let Some(p) = &c.trace {
            compared += 1;
            failures.extend(check(&c.file, "trace", p, reference::trace(&snap)));
        }
    }
    eprintln!("compared {compared} outputs of {} snapshots", cases.len());
    assert!(failures.is_empty(), "{} of {compared} outputs differ:\n{}", failures.len(), failures.join("\n"));
}

/// Everything observable about a model, as text: stats, trace (or their errors) and the summary.
fn fingerprint(snap: &Snapshot) -> String {
    let stats = reference::stats(snap).unwrap_or_else(|e| format!("error: {e}"));
    let trace = reference::trace(snap).unwrap_or_else(|e| format!("error: {e}"));
    format!("{stats}\n---\n{trace}\n---\n{:?}\n---\n{:?}", info::info(snap), snap.warnings)
}

fn load_chunked(bytes: &[u8], chunk: usize, announce_len: bool) -> Result<(Snapshot, u64), memviz_core::Error> {
    let mut l = Loader::new(announce_len.then_some(bytes.len() as u64));
    let mut last = 0;
    for c in bytes.chunks(chunk) {
        l.feed(c)?;
        let now = l.consumed_bytes();
        assert!(now >= last, "consumed_bytes went backwards ({last} -> {now})");
        assert!(now <= bytes.len() as u64, "consumed_bytes {now} is past the input ({})", bytes.len());
        last = now;
    }
    let consumed = l.consumed_bytes();
    Ok((l.finish()?, consumed))
}

#[test]
fn chunked_loader_builds_the_same_model() {
    let cases = cases();
    assert!(!cases.is_empty(), "no snapshot with reference output in {REFERENCE_DIRS:?}");
    let mut failures = Vec::new();
    for c in &cases {
        let bytes = read(&c.file);
        let whole = match memviz_core::load(&bytes) {
            Ok(s) => fingerprint(&s),
            Err(e) => {
                failures.push(format!("{}: load failed: {e}", c.file.display()));
                continue;
            }
        };
        let is_json = c.file.extension().is_some_and(|e| e == "json");
        // One-byte chunks cost a call per byte; keep them to files where that stays quick.
        let sizes: &[usize] = if bytes.len() <= 256 * 1024 { &[1, 7, 4096, 65_537] } else { &[7, 4096, 65_537] };
        for &chunk in sizes {
            for announce in [false, true] {
                match load_chunked(&bytes, chunk, announce) {
                    Err(e) => failures.push(format!("{}: chunks of {chunk}: {e}", c.file.display())),
                    Ok((snap, consumed)) => {
                        if let Some(d) = first_diff(&whole, &fingerprint(&snap)) {
                            failures.push(format!("{}: chunks of {chunk} give another model: {d}", c.file.display()));
                        }
                        if !is_json && consumed != bytes.len() as u64 {
                            failures.push(format!(
                                "{}: chunks of {chunk}: consumed_bytes is {consumed}, the file has {} bytes",
                                c.file.display(),
                                bytes.len()
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_snapshot_in_the_data_folders_loads() {
    // Files without reference output (variants PyTorch's CLI cannot print) must still load.
    let mut failures = Vec::new();
    let mut n = 0;
    for which in REFERENCE_DIRS {
        for f in fixture_files(&[which]) {
            if f.extension().is_none_or(|e| e != "pickle") {
                continue;
            }
            n += 1;
            match memviz_core::load(&read(&f)) {
                Ok(s) => {
                    let _ = info::info(&s);
                }
                Err(e) => failures.push(format!("{}: {e}", f.display())),
            }
        }
    }
    eprintln!("loaded {n} snapshots");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Where the reference CLI failed on a synthetic snapshot (the manifest records it), the snapshot
/// still loads and the same command returns (an error message or a result, never a panic).
#[test]
fn commands_pytorch_cannot_run_still_return() {
    let path = fixture("synth", "manifest.json");
    let m: serde_json::Value =
        serde_json::from_slice(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let Some(fails) = m.get("reference_failures").and_then(|v| v.as_object()) else {
        panic!("{}: no 'reference_failures' object", path.display());
    };
    let mut problems = Vec::new();
    for (file, cmds) in fails {
        let p = fixture("synth", file);
        let snap = match memviz_core::load(&read(&p)) {
            Ok(s) => s,
            Err(e) => {
                problems.push(format!("{file}: load failed: {e}"));
                continue;
            }
        };
        for (cmd, why) in cmds.as_object().into_iter().flatten() {
            let r = match cmd.as_str() {
                "stats" => reference::stats(&snap),
                "trace" => reference::trace(&snap),
                _ => continue,
            };
            match r {
                Err(e) => eprintln!("{file} {cmd}: PyTorch: {why}; here: {e}"),
                Ok(_) => eprintln!("note: {file} {cmd}: PyTorch fails ({why}); memviz prints a result"),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
