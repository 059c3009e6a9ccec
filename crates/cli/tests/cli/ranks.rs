//! `memviz ranks` and `memviz export --format parquet` over a generated training run of 8 ranks
//! with known differences: rank 3 runs 3x the batch, rank 5 keeps 4 MiB more every iteration,
//! rank 6 runs out of memory; the other ranks are alike. The export is queried with DuckDB (its
//! Python package, installed by `scripts/setup.sh` into `target/duckdb-venv`; the test fails
//! without it).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::snap::{entry, frame, snapshot};
use crate::common::{dict, dumps, i, list, s, Py};
use crate::run::memviz;

const MIB: i128 = 1 << 20;
const RANKS: u32 = 8;
const ITERATIONS: i128 = 5;
const PARAMS: i128 = 10;
const PARAM_BYTES: i128 = 10 * MIB;
const ACTIVATIONS: i128 = 8;
const ACTIVATION_BYTES: i128 = 32 * MIB;
const LEAK_BYTES: i128 = 4 * MIB;

/// The known peaks: parameters plus one iteration's activations (and rank 5's leaks of the
/// four iterations before its last).
fn expected_peak_bytes(rank: u32) -> u64 {
    let base = PARAMS * PARAM_BYTES;
    let peak = match rank {
        3 => base + 3 * ACTIVATIONS * ACTIVATION_BYTES,
        5 => base + ACTIVATIONS * ACTIVATION_BYTES + (ITERATIONS - 1) * LEAK_BYTES,
        _ => base + ACTIVATIONS * ACTIVATION_BYTES,
    };
    peak as u64
}

/// The segment each rank reserves once, at the start.
fn reserved_bytes(rank: u32) -> u64 {
    if rank == 3 {
        1 << 30
    } else {
        512 << 20
    }
}

struct Trace {
    entries: Vec<Py>,
    annotations: Vec<Py>,
    time_us: i128,
}

impl Trace {
    fn push(&mut self, action: &str, addr: i128, size: i128, stack: &Py) {
        self.time_us += 10;
        self.entries.push(entry(action, addr, size, Some(self.time_us), Some(stack.clone())));
    }

    fn alloc_free(&mut self, addr: i128, size: i128, stack: &Py) {
        self.push("alloc", addr, size, stack);
    }
}

fn stack(name: &str, line: i128) -> Py {
    list(vec![frame(name, "train.py", line), frame("main", "train.py", 1)])
}

/// One rank's snapshot.
fn rank_snapshot(rank: u32) -> Vec<u8> {
    let (params, act, free, leak) =
        (stack("init_params", 10), stack("forward", 20), stack("backward", 30), stack("keep_loss", 40));
    let base: i128 = 0x7f00_0000_0000;
    let mut t = Trace { entries: Vec::new(), annotations: Vec::new(), time_us: 1_700_000_000_000_000 };
    t.push("segment_alloc", base, i128::from(reserved_bytes(rank)), &params);
    for p in 0..PARAMS {
        t.alloc_free(base + p * PARAM_BYTES, PARAM_BYTES, &params);
    }
    let batch = if rank == 3 { 3 } else { 1 };
    let act_base = base + PARAMS * PARAM_BYTES;
    let leak_base = base + 400 * MIB;
    for it in 0..ITERATIONS {
        t.annotations.push(dict(vec![
            ("stage", s("START")),
            ("name", s(&format!("ProfilerStep#{it}"))),
            ("device", i(0)),
            ("time_us", i(t.time_us + 1)),
        ]));
        let n = ACTIVATIONS * batch;
        for a in 0..n {
            t.alloc_free(act_base + a * ACTIVATION_BYTES, ACTIVATION_BYTES, &act);
        }
        if rank == 6 && it == 3 {
            t.time_us += 10;
            let mut oom = vec![("action", s("oom")), ("device_free", i(64 * MIB)), ("size", i(2048 * MIB))];
            oom.extend([("stream", i(0)), ("time_us", i(t.time_us)), ("frames", act.clone())]);
            t.entries.push(dict(oom));
            break;
        }
        for a in (0..n).rev() {
            let addr = act_base + a * ACTIVATION_BYTES;
            t.push("free_requested", addr, ACTIVATION_BYTES, &free);
            t.push("free_completed", addr, ACTIVATION_BYTES, &free);
        }
        if rank == 5 {
            t.alloc_free(leak_base + it * LEAK_BYTES, LEAK_BYTES, &leak);
        }
    }
    let mut snap = snapshot(vec![], vec![t.entries]);
    if let Py::Dict(pairs) = &mut snap {
        pairs.push((s("external_annotations"), list(t.annotations)));
    }
    dumps(&snap, 4)
}

/// Writes the 8 files under a fresh folder, torchtitan style (`rankR_memory_snapshot.pickle`),
/// in a sub-folder to check that folders are searched.
fn write_run(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("run")).unwrap();
    for r in 0..RANKS {
        std::fs::write(dir.join(format!("run/rank{r}_memory_snapshot.pickle")), rank_snapshot(r)).unwrap();
    }
    std::fs::write(dir.join("run/notes.txt"), "not a snapshot").unwrap();
    dir
}

#[test]
fn ranks_json_names_the_three_outliers() {
    let dir = write_run("ranks-json");
    let text = memviz(&["ranks", "--json", dir.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["rule"], "rank-in-name");
    let ranks = v["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), RANKS as usize);
    for (r, row) in ranks.iter().enumerate() {
        let r = r as u32;
        let keys: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).take(7).collect();
        assert_eq!(
            keys,
            ["rank", "file", "entries", "peak_allocated_bytes", "peak_reserved_bytes", "oom_events", "findings"]
        );
        assert_eq!(row["rank"], r);
        assert!(row["file"].as_str().unwrap().ends_with(&format!("rank{r}_memory_snapshot.pickle")));
        assert_eq!(row["peak_allocated_bytes"], expected_peak_bytes(r), "rank {r}");
        assert_eq!(row["peak_reserved_bytes"], reserved_bytes(r), "rank {r}");
        assert_eq!(row["oom_events"], u64::from(r == 6), "rank {r}");
        let grows = row["findings"].as_array().unwrap().iter().any(|f| f["kind"] == "growth");
        assert_eq!(grows, r == 5, "rank {r}: {}", row["findings"]);
    }
    // 1 segment + 10 parameters + 5 iterations of 8 allocs and 16 frees.
    assert_eq!(ranks[0]["entries"], 1 + 10 + 5 * 24);
    let outliers: Vec<(u64, Vec<&str>)> = v["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let reasons = o["reasons"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
            (o["rank"].as_u64().unwrap(), reasons)
        })
        .collect();
    assert_eq!(outliers, vec![(3, vec!["peak"]), (5, vec!["growth"]), (6, vec!["oom"])]);

    let text = memviz(&["ranks", dir.join("run").to_str().unwrap()]);
    assert!(text.starts_with("8 snapshot files; ranks from 'rankN'"), "{text}");
    assert!(text.contains("rank 3: peak 868 MiB is 2.44x the median rank's 356 MiB"), "{text}");
    assert!(text.contains("rank 6: 1 out-of-memory event(s)"), "{text}");
    assert!(text.contains("rank 5: Memory grows by 4 MiB per iteration"), "{text}");
}

/// DuckDB's Python: `target/duckdb-venv` (made by `scripts/setup.sh`) or `$MEMVIZ_DUCKDB_PYTHON`.
fn duckdb_python() -> PathBuf {
    let python = std::env::var_os("MEMVIZ_DUCKDB_PYTHON").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/duckdb-venv/bin/python"),
        PathBuf::from,
    );
    let ok = Command::new(&python).args(["-c", "import duckdb"]).status().is_ok_and(|s| s.success());
    assert!(ok, "DuckDB's Python package is missing at {}: run scripts/setup.sh", python.display());
    python
}

#[test]
fn parquet_export_answers_the_readme_query() {
    let dir = write_run("ranks-parquet");
    let out = dir.join("parquet");
    let text =
        memviz(&["export", "--format", "parquet", dir.join("run").to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(text.contains("8 ranks"), "{text}");
    for table in ["events", "frames", "stacks", "segments"] {
        for r in 0..RANKS {
            let p = out.join(format!("{table}/rank={r}/part-0.parquet"));
            assert!(p.is_file(), "{} is missing", p.display());
        }
    }
    // The README's query, as written there.
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let sql = readme
        .split("```sql\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("README has a ```sql block")
        .replace("export/", &format!("{}/", out.display()));
    let script = format!("import duckdb\nfor row in duckdb.sql({sql:?}).fetchall(): print(*row)\n");
    let res = Command::new(duckdb_python()).args(["-c", &script]).output().expect("run python");
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    let got = String::from_utf8(res.stdout).unwrap();
    let want: String = (0..RANKS).map(|r| format!("{r} {}\n", expected_peak_bytes(r))).collect();
    assert_eq!(got, want);
}

#[test]
fn iteration_folders_group_the_ranks() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ranks-iterations");
    let _ = std::fs::remove_dir_all(&dir);
    for it in [10, 20] {
        std::fs::create_dir_all(dir.join(format!("iteration_{it}"))).unwrap();
        for (name, r) in [("a", 0), ("b", 3)] {
            // No rank in the names: file order within each iteration.
            std::fs::write(dir.join(format!("iteration_{it}/{name}.pickle")), rank_snapshot(r)).unwrap();
        }
    }
    let v: serde_json::Value = serde_json::from_str(&memviz(&["ranks", "--json", dir.to_str().unwrap()])).unwrap();
    assert_eq!(v["rule"], "file-order");
    let got: Vec<(u64, u64, u64)> = v["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (r["iteration"].as_u64().unwrap(), r["rank"].as_u64().unwrap(), r["peak_allocated_bytes"].as_u64().unwrap())
        })
        .collect();
    let (normal, big) = (expected_peak_bytes(0), expected_peak_bytes(3));
    assert_eq!(got, vec![(10, 0, normal), (10, 1, big), (20, 0, normal), (20, 1, big)]);
    // Outliers are picked within each iteration: the lower middle of two peaks is the median.
    let outliers: Vec<(u64, u64)> = v["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["iteration"].as_u64().unwrap(), o["rank"].as_u64().unwrap()))
        .collect();
    assert_eq!(outliers, vec![(10, 1), (20, 1)]);
}

#[test]
fn other_export_formats_take_one_snapshot() {
    let dir = write_run("ranks-csv");
    let a = dir.join("run/rank0_memory_snapshot.pickle");
    let b = dir.join("run/rank1_memory_snapshot.pickle");
    let out = Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(["export", "--format", "csv", a.to_str().unwrap(), b.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "memviz: error: --format csv takes one snapshot, not 2\n");
    let csv = memviz(&["export", "--format", "csv", a.to_str().unwrap()]);
    assert!(csv.lines().count() > 10, "{csv}");
    let out = Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(["export", "--format", "parquet", a.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "memviz: error: --format parquet needs an output folder: -o DIR\n"
    );
}

#[test]
fn a_file_that_does_not_load_is_skipped() {
    let dir = write_run("ranks-skipped");
    std::fs::write(dir.join("run/rank8_config.json"), "{\"lr\": 0.1}").unwrap();
    let v: serde_json::Value = serde_json::from_str(&memviz(&["ranks", "--json", dir.to_str().unwrap()])).unwrap();
    assert_eq!(v["ranks"].as_array().unwrap().len(), RANKS as usize);
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["rank"], 8);
    assert!(errors[0]["file"].as_str().unwrap().ends_with("rank8_config.json"));
    assert_eq!(v["outliers"].as_array().unwrap().len(), 3);
    let text = memviz(&["ranks", dir.to_str().unwrap()]);
    assert!(text.starts_with("9 snapshot files;"), "{text}");
    assert!(text.contains("skipped rank 8: "), "{text}");
    // Nothing that loads: an error.
    let bad = dir.join("run/rank8_config.json");
    let out = Command::new(env!("CARGO_BIN_EXE_memviz")).args(["ranks", bad.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}
