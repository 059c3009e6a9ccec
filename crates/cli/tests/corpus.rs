//! The opt-in corpus: real snapshots other people committed to public repositories, which the
//! project does not redistribute. Built only with `--features corpus` and run by the test command
//! when `MEMVIZ_CORPUS=DIR` names a folder: every `*.pickle` there loads, and `memviz stats` /
//! `memviz trace` print exactly its `NAME.ref.stats.txt` / `NAME.ref.trace.txt` (PyTorch's own CLI
//! output); files this project knows by name are also checked for what they are known to hold.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use memviz_core::analysis::{recording, Replay};
use memviz_core::coverage::{coverage, EmptyTrace, TraceStart};
use memviz_core::timeline::{Layout, Options, Origin};
use memviz_core::Snapshot;

fn corpus_dir() -> PathBuf {
    let dir = std::env::var_os("MEMVIZ_CORPUS").expect("MEMVIZ_CORPUS names the corpus folder");
    let dir = PathBuf::from(dir);
    assert!(dir.is_dir(), "MEMVIZ_CORPUS={} is not a folder", dir.display());
    dir
}

fn pickles(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "pickle"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no *.pickle in {}", dir.display());
    files
}

fn load(path: &Path) -> Snapshot {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    memviz_core::load(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_corpus_file_prints_what_pytorch_prints() {
    let dir = corpus_dir();
    let (mut files, mut compared, mut failures) = (0, 0, Vec::new());
    for f in pickles(&dir) {
        files += 1;
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
        let _ = load(&f);
        for cmd in ["stats", "trace"] {
            let Ok(expected) = std::fs::read(dir.join(format!("{stem}.ref.{cmd}.txt"))) else { continue };
            let out = Command::new(env!("CARGO_BIN_EXE_memviz")).arg(cmd).arg(&f).output().expect("run memviz");
            compared += 1;
            if !out.status.success() {
                failures.push(format!("{cmd} {stem}: {}", String::from_utf8_lossy(&out.stderr)));
            } else if out.stdout != expected {
                failures.push(format!("{cmd} {stem}: differs from {stem}.ref.{cmd}.txt"));
            }
        }
    }
    println!("corpus: {files} files in {}, {compared} outputs compared byte for byte", dir.display());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What the public files known by name hold (each checked when the corpus has it).
#[test]
fn known_corpus_files_hold_what_they_are_known_to_hold() {
    let dir = corpus_dir();
    let mut checked = 0;
    let known = |name: &str| {
        let p = dir.join(name);
        p.is_file().then(|| load(&p))
    };
    // enabled='state' on four devices: only cuda:1 holds memory, 179 blocks, no history.
    if let Some(snap) = known("maphsge4__snapshot_dec166a.pickle") {
        checked += 1;
        assert_eq!(snap.devices.len(), 4);
        let pos = snap.default_device().unwrap();
        assert_eq!(snap.devices[pos].index, 1, "the device with memory, not the first empty one");
        let c = coverage(&snap, pos);
        assert_eq!(c.empty, Some(EmptyTrace::StateOnly { blocks_have_frames: false }));
        assert_eq!((c.ghost_allocations, c.ghost_bytes), (179, 544_460_336));
        assert_eq!(coverage(&snap, 0).empty, Some(EmptyTrace::NothingRecorded));
        assert!(c.moment_note().unwrap().contains("179 allocated blocks (519.2 MiB)"));
        let replay = Replay::build(&snap, pos);
        assert_eq!((replay.lives.len(), replay.initial_bytes), (179, 544_460_336));
        assert!(replay.lives.iter().all(|l| l.origin == Origin::Ghost));
        assert!(recording::findings(&snap, &replay).iter().any(|f| f.kind == "no_history" && !f.problem));
    }
    if let Some(snap) = known("zijiandu__memory.pickle") {
        checked += 1;
        assert_eq!(snap.default_device(), Some(0));
        assert_eq!(coverage(&snap, 0).empty, Some(EmptyTrace::StateOnly { blocks_have_frames: true }));
    }
    if let Some(snap) = known("wedsonlin__results_medium_128_training_memory_snapshot.pickle") {
        checked += 1;
        let c = coverage(&snap, 0);
        assert_eq!((c.empty, c.start, c.unseen_frees), (None, TraceStart::StartedLate, 438));
        assert!(c.starts_mid_run() && c.reason().unwrap().contains("max_entries"));
        let f = recording::findings(&snap, &Replay::build(&snap, 0));
        assert!(f.iter().any(|f| f.kind == "trace_starts_mid_run" && f.suggestions[0].contains("max_entries")));
        let layout = Layout::build(&snap, 0, Options::default());
        let e = layout.elements.iter().position(|e| e.origin == Origin::Ghost).unwrap();
        let text =
            memviz_core::describe::element_text(&snap, 0, &layout, memviz_core::timeline::ElementIndex::new(e as u32));
        assert!(text.contains("live for the whole trace"), "{text}");
    }
    if let Some(snap) = known("cranberrii__memory_snapshot.pickle") {
        checked += 1;
        assert!(!coverage(&snap, 0).starts_mid_run());
    }
    println!("corpus: {checked} files known by name checked for what they hold");
}
