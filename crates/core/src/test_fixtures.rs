//! Where the tests' data lives, for the unit tests of this crate and of the CLI and for the core's
//! integration tests (which include this file by path): the read-only real snapshots beside the
//! project (`"shared"`: `../shared/fixtures`; `"external"`: the public snapshots in its
//! `external/` folder) and the folders of the repository's `tests/data`
//! (`"real"`, `"synth"`, `"hostile"`). Every function panics with the path when the data is
//! missing: a test that needs its data fails without it, it never passes by skipping.

use std::path::{Path, PathBuf};

/// A fixture folder (see the module doc); panics with the path when it is absent.
pub fn fixture_dir(which: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = match which {
        "shared" => root.join("../shared/fixtures"),
        "external" => root.join("../shared/fixtures/external"),
        _ => root.join("tests/data").join(which),
    };
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
        let dir = fixture_dir(w);
        let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect();
        files.sort();
        assert!(!files.is_empty(), "fixture folder {} is empty", dir.display());
        out.extend(files);
    }
    out
}

/// The files of fixture folders with one of these extensions (`"pickle"`, `"json"`).
pub fn fixture_files_with(which: &[&str], extensions: &[&str]) -> Vec<PathBuf> {
    let keep = |p: &PathBuf| p.extension().and_then(|x| x.to_str()).is_some_and(|x| extensions.contains(&x));
    fixture_files(which).into_iter().filter(keep).collect()
}

/// A real snapshot by name, from the shared fixtures or else `tests/data/real`; panics when it is
/// in neither.
pub fn real_fixture(name: &str) -> PathBuf {
    ["shared", "real"].into_iter().map(|w| fixture_dir(w).join(name)).find(|p| p.is_file()).unwrap_or_else(|| {
        panic!(
            "fixture {name} is missing from {} and {}",
            fixture_dir("shared").display(),
            fixture_dir("real").display()
        )
    })
}
