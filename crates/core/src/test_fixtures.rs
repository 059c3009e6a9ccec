//! Where the tests' data lives, for the unit tests of this crate and of the CLI and for the core's
//! integration tests (which include this file by path): the folders of the repository's
//! `tests/data` (`"real"`: snapshots recorded on GPUs; `"synth"`, `"hostile"`, `"containers"`).
//! Nothing outside the repository is read: the public corpus of other people's snapshots is an
//! opt-in check of its own (`MEMVIZ_CORPUS`, `crates/cli/tests/corpus.rs`). Every function
//! panics with the path when the data is missing: a test that needs its data fails without it,
//! it never passes by skipping.

use std::path::{Path, PathBuf};

/// A fixture folder of `tests/data` (see the module doc); panics with the path when it is absent.
pub fn fixture_dir(which: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(which);
    assert!(dir.is_dir(), "fixture folder {} is missing", dir.display());
    dir
}

/// A file of a fixture folder; panics with the path when it is absent.
pub fn fixture(which: &str, name: &str) -> PathBuf {
    let p = fixture_dir(which).join(name);
    assert!(p.is_file(), "fixture {} is missing", p.display());
    p
}

/// The files of fixture folders, each folder's in name order; panics when a folder is absent or
/// empty.
pub fn fixture_files(which: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for w in which {
        out.extend(files_of(&fixture_dir(w)));
    }
    out
}

/// The files of one folder in name order; panics when it cannot be listed or is empty.
pub fn files_of(dir: &Path) -> Vec<PathBuf> {
    let rd = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect();
    files.sort();
    assert!(!files.is_empty(), "fixture folder {} is empty", dir.display());
    files
}

/// The files of fixture folders with one of these extensions (`"pickle"`, `"json"`).
pub fn fixture_files_with(which: &[&str], extensions: &[&str]) -> Vec<PathBuf> {
    let keep = |p: &PathBuf| p.extension().and_then(|x| x.to_str()).is_some_and(|x| extensions.contains(&x));
    fixture_files(which).into_iter().filter(keep).collect()
}

/// A real snapshot of `tests/data/real` by name; panics when it is missing.
pub fn real_fixture(name: &str) -> PathBuf {
    fixture("real", name)
}
