//! `memviz ranks PATH...`: a training run's snapshots, one per rank, side by side. Folders are
//! searched for snapshot files; ranks and iterations come from the paths
//! (`memviz_core::ranks::naming`); files are read in parallel, a worker a core, each summarized
//! as it is loaded and its model dropped at once (`memviz_core::ranks::summary`), so memory
//! grows with the workers, not with the run.

use std::fmt::Write as _;
use std::path::Path;

use rayon::prelude::*;
use serde_json::{json, Value};

use memviz_core::analysis::size_text;
use memviz_core::ranks::{self, NamingRule, Outlier, RankFile, RankFiles, RankSummary};

use crate::error::CliError;

/// The snapshot files under `paths` (files as given, folders searched recursively, each folder's
/// entries in name order), then their ranks.
pub fn find_rank_files(paths: &[String]) -> Result<RankFiles, CliError> {
    let mut files = Vec::new();
    for p in paths {
        let path = Path::new(p);
        if path.is_dir() {
            walk(path, &mut files)?;
        } else if path.is_file() {
            files.push(p.clone());
        } else {
            let source = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder");
            return Err(CliError::Read { path: p.clone(), source });
        }
    }
    if files.is_empty() {
        let under = paths.join(", ");
        return Err(CliError::Usage(format!("no snapshot files (.pickle, .pkl, .json, .gz, .zst, .xz) under {under}")));
    }
    Ok(ranks::assign_ranks(&files))
}

/// Adds the snapshot files under `dir` to `out`, folder by folder (no recursion on the stack).
fn walk(dir: &Path, out: &mut Vec<String>) -> Result<(), CliError> {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let rd = std::fs::read_dir(&d).map_err(|source| CliError::List { path: d.display().to_string(), source })?;
        let mut entries: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        let mut subdirs = Vec::new();
        for e in entries {
            if e.is_dir() {
                subdirs.push(e);
            } else if e.file_name().and_then(|n| n.to_str()).is_some_and(ranks::is_snapshot_name) {
                out.push(e.to_string_lossy().into_owned());
            }
        }
        // Popped in name order.
        pending.extend(subdirs.into_iter().rev());
    }
    Ok(())
}

/// Runs `f` on every file in parallel (a worker a core); the results in the files' order.
pub fn per_file<T: Send>(
    files: &[RankFile],
    f: impl Fn(&RankFile) -> Result<T, CliError> + Sync + Send,
) -> Vec<Result<T, CliError>> {
    files.par_iter().map(f).collect()
}

/// A file that could not be summarized, and why.
struct Skipped<'a> {
    file: &'a RankFile,
    error: CliError,
}

/// One rank's row: its file and summary.
struct Row<'a> {
    file: &'a RankFile,
    summary: RankSummary,
}

/// Outliers within each iteration (all files at once when there are no iterations).
fn outliers_by_iteration(rows: &[Row<'_>]) -> Vec<(Option<u64>, Outlier)> {
    let mut its: Vec<Option<u64>> = rows.iter().map(|r| r.file.iteration).collect();
    its.sort_unstable();
    its.dedup();
    its.into_iter()
        .flat_map(|it| {
            let group: Vec<(u32, &RankSummary)> =
                rows.iter().filter(|r| r.file.iteration == it).map(|r| (r.file.rank, &r.summary)).collect();
            ranks::outliers(&group).into_iter().map(move |o| (it, o))
        })
        .collect()
}

fn median_peak(rows: &[Row<'_>], it: Option<u64>) -> u64 {
    let mut peaks: Vec<u64> =
        rows.iter().filter(|r| r.file.iteration == it).map(|r| r.summary.peak_allocated_bytes).collect();
    peaks.sort_unstable();
    peaks.get(peaks.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

fn json_out(
    rows: &[Row<'_>],
    outliers: &[(Option<u64>, Outlier)],
    rule: NamingRule,
    skipped: &[Skipped<'_>],
) -> Result<String, serde_json::Error> {
    let ranks: Vec<Value> = rows
        .iter()
        .map(|r| {
            let s = &r.summary;
            json!({
                "rank": r.file.rank,
                "file": r.file.path,
                "entries": s.entries,
                "peak_allocated_bytes": s.peak_allocated_bytes,
                "peak_reserved_bytes": s.peak_reserved_bytes,
                "oom_events": s.oom_events.len(),
                "findings": s.findings.iter().map(|f| json!({"kind": f.kind, "problem": f.problem, "title": f.title, "bytes": f.bytes})).collect::<Vec<_>>(),
                "iteration": r.file.iteration,
                "device": s.device,
                "peak_allocated_entry": s.peak_allocated_entry,
                "peak_reserved_entry": s.peak_reserved_entry,
            })
        })
        .collect();
    let outliers: Vec<Value> =
        outliers.iter().map(|(it, o)| json!({"rank": o.rank, "reasons": o.reasons, "iteration": it})).collect();
    let errors: Vec<Value> = skipped
        .iter()
        .map(|k| json!({"rank": k.file.rank, "file": k.file.path, "error": k.error.to_string()}))
        .collect();
    let all = json!({"ranks": ranks, "outliers": outliers, "rule": rule.name(), "errors": errors});
    Ok(serde_json::to_string_pretty(&all)? + "\n")
}

fn text_out(
    rows: &[Row<'_>],
    outliers: &[(Option<u64>, Outlier)],
    rule: NamingRule,
    skipped: &[Skipped<'_>],
) -> String {
    let mut s = format!("{} snapshot files; {}\n", rows.len() + skipped.len(), rule.describe());
    for k in skipped {
        let _ = writeln!(s, "skipped rank {}: {}", k.file.rank, k.error);
    }
    s.push('\n');
    let with_it = rows.iter().any(|r| r.file.iteration.is_some());
    let _ = write!(s, "{:>5} ", "rank");
    if with_it {
        let _ = write!(s, "{:>9} ", "iteration");
    }
    let _ = writeln!(
        s,
        "{:>10} {:>14} {:>14} {:>5}  {:<20} file",
        "entries", "peak alloc", "peak reserved", "OOMs", "findings"
    );
    for r in rows {
        let m = &r.summary;
        let _ = write!(s, "{:>5} ", r.file.rank);
        if with_it {
            let _ = write!(s, "{:>9} ", r.file.iteration.map_or(String::from("-"), |i| i.to_string()));
        }
        let kinds = m.problem_kinds();
        let _ = writeln!(
            s,
            "{:>10} {:>14} {:>14} {:>5}  {:<20} {}",
            m.entries,
            size_text(m.peak_allocated_bytes),
            size_text(m.peak_reserved_bytes),
            m.oom_events.len(),
            if kinds.is_empty() { "-".to_string() } else { kinds.join(",") },
            r.file.path
        );
    }
    if outliers.is_empty() {
        s.push_str("\nno outliers (no peak more than 10% above the median rank's, no OOM, no growth)\n");
        return s;
    }
    s.push_str("\noutliers:\n");
    for (it, o) in outliers {
        let Some(r) = rows.iter().find(|r| r.file.rank == o.rank && r.file.iteration == *it) else { continue };
        let m = &r.summary;
        let why: Vec<String> = o
            .reasons
            .iter()
            .map(|&reason| match reason {
                "peak" => {
                    let median = median_peak(rows, *it);
                    format!(
                        "peak {} is {:.2}x the median rank's {}",
                        size_text(m.peak_allocated_bytes),
                        m.peak_allocated_bytes as f64 / median.max(1) as f64,
                        size_text(median)
                    )
                }
                "oom" => format!("{} out-of-memory event(s)", m.oom_events.len()),
                "growth" => m.findings.iter().find(|f| f.kind == "growth").map_or("growth".into(), |f| f.title.clone()),
                other => other.to_string(),
            })
            .collect();
        let at = it.map_or(String::new(), |i| format!(" (iteration {i})"));
        let _ = writeln!(s, "  rank {}{at}: {}", o.rank, why.join("; "));
    }
    s
}

/// `memviz ranks`. A file that does not load is listed as skipped (`errors` in the JSON) and the
/// others are still compared; only when none loads is it an error.
pub fn ranks(paths: &[String], json: bool) -> Result<String, CliError> {
    let found = find_rank_files(paths)?;
    let summaries = per_file(&found.files, |f| {
        let snap = crate::read::load_owned(&f.path)?;
        Ok(ranks::summarize(&snap))
        // The model is dropped here, before the worker takes its next file.
    });
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    for (file, summary) in found.files.iter().zip(summaries) {
        match summary {
            Ok(summary) => rows.push(Row { file, summary }),
            Err(error) => skipped.push(Skipped { file, error }),
        }
    }
    if rows.is_empty() {
        let first = skipped.into_iter().next().map(|k| k.error);
        return Err(first.unwrap_or_else(|| CliError::Usage("no snapshot files".into())));
    }
    rows.sort_by_key(|r| (r.file.iteration, r.file.rank));
    let outliers = outliers_by_iteration(&rows);
    Ok(if json {
        json_out(&rows, &outliers, found.rule, &skipped)?
    } else {
        text_out(&rows, &outliers, found.rule, &skipped)
    })
}
