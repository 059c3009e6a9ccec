//! `--by` for `memviz live` and `memviz insights`: allocations grouped by the user's line, the
//! innermost frame, the operator, the metadata (or one key of it), the category or the annotation
//! (`memviz_core::analysis::grouping`), as text or `{"by": ..., "groups": [...]}`.

use std::fmt::Write as _;
use std::io::Write;

use crate::error::CliError;

use memviz_core::analysis::grouping::{GroupBy, Grouping, LibraryRule};
use memviz_core::analysis::growth::{find_iterations, named_growth};
use memviz_core::analysis::{device_position, signed_size_text, size_text, Moment, Replay};
use memviz_core::Snapshot;

/// How `--by` and `--library` read.
pub struct ByOptions {
    /// The grouping.
    pub by: GroupBy,
    /// Which files are not the user's.
    pub library: LibraryRule,
}

impl ByOptions {
    /// `--by` (default: the user's line) and the extra `--library` path fragments.
    pub fn parse(by: Option<&str>, library: &[String]) -> Result<ByOptions, CliError> {
        let by = match by {
            Some(s) => GroupBy::parse(s).map_err(CliError::argument)?,
            None => GroupBy::UserLine,
        };
        Ok(ByOptions { by, library: LibraryRule::with_extra(library) })
    }
}

/// `memviz live --by BY`: the live set at a moment by group; `top` limits the rows (0: all).
#[allow(clippy::too_many_arguments)]
pub fn live_by(
    out: &mut dyn Write,
    file: &str,
    snap: &Snapshot,
    at: &str,
    device: Option<i64>,
    opts: &ByOptions,
    json: bool,
    top: usize,
) -> Result<(), CliError> {
    let pos = device_position(snap, device)?;
    let moment = Moment::parse(at).map_err(CliError::argument)?;
    let replay = Replay::build(snap, pos);
    let row = moment.resolve(&replay)?;
    let live = replay.live_elements(row);
    let grouping = Grouping::build(snap, &replay, &opts.by, &opts.library);
    let totals = grouping.totals(&replay, &live);
    let total_bytes = replay.live_at(row);
    if json {
        let mut v = grouping.totals_json(&totals, top);
        if let Some(o) = v.as_object_mut() {
            o.insert("device".into(), serde_json::json!(replay.device));
            o.insert("moment".into(), serde_json::json!(memviz_core::analysis::live::moment_text(moment)));
            o.insert("entry".into(), serde_json::json!(row));
            o.insert("total_bytes".into(), serde_json::json!(total_bytes));
            o.insert("allocations".into(), serde_json::json!(live.len()));
        }
        let s = serde_json::to_string_pretty(&v)? + "\n";
        return out.write_all(s.as_bytes()).map_err(CliError::stdout);
    }
    let text = |out: &mut dyn Write| -> std::io::Result<()> {
        let at_text = row.map_or_else(|| "before the first entry".to_string(), |r| format!("after entry {r}"));
        writeln!(
            out,
            "{file}: device {}, live {at_text} ({})",
            replay.device,
            memviz_core::analysis::live::moment_text(moment)
        )?;
        writeln!(out, "{} ({total_bytes} bytes) in {} allocations", size_text(total_bytes), live.len())?;
        let n = if top == 0 { totals.len() } else { totals.len().min(top) };
        writeln!(out, "\nBy {} (top {n} of {}):", opts.by.title(), totals.len())?;
        writeln!(out, "{:>14} {:>10} {:>7}  {}", "bytes", "", "count", opts.by.slug())?;
        for t in totals.iter().take(n) {
            writeln!(
                out,
                "{:>14} {:>10} {:>7}  {}",
                t.bytes,
                size_text(t.bytes),
                t.allocations,
                grouping.label(t.group)
            )?;
        }
        Ok(())
    };
    text(out).map_err(CliError::stdout)
}

/// `memviz insights --by BY`: the groups that grow across iterations.
pub fn growth_by(
    file: &str,
    snap: &Snapshot,
    device: Option<i64>,
    opts: &ByOptions,
    json: bool,
) -> Result<String, CliError> {
    let pos = device_position(snap, device)?;
    let replay = Replay::build(snap, pos);
    let its = find_iterations(snap, &replay);
    let rows = named_growth(snap, &replay, &its, &opts.by, &opts.library);
    if json {
        let groups: Vec<serde_json::Value> = rows
            .iter()
            .map(|n| {
                serde_json::json!({"value": n.label, "bytes_per_iteration": n.growth.bytes_per_iteration,
                    "end_bytes": n.growth.end_bytes, "increases": n.growth.increases})
            })
            .collect();
        let v = serde_json::json!({"device": replay.device, "iterations": its.list.len(), "by": opts.by.slug(), "groups": groups});
        return Ok(serde_json::to_string_pretty(&v)? + "\n");
    }
    let mut s = format!("{file}: device {}, {} iterations\n", replay.device, its.list.len());
    if its.list.len() < 3 {
        s.push_str("growth: too few iterations to judge (3 needed)\n");
        return Ok(s);
    }
    if rows.is_empty() {
        let _ = writeln!(s, "growth: no {} grows steadily", opts.by.title());
    }
    for n in &rows {
        let _ = writeln!(
            s,
            "  {:>12} bytes/iteration {:>12}  {}",
            n.growth.bytes_per_iteration,
            signed_size_text(i128::from(n.growth.bytes_per_iteration)),
            n.label
        );
    }
    Ok(s)
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    /// What `live_by` wrote, or its error.
    fn written(command: impl FnOnce(&mut dyn Write) -> Result<(), CliError>) -> Result<String, CliError> {
        let mut out = Vec::new();
        command(&mut out)?;
        Ok(String::from_utf8(out).expect("UTF-8"))
    }

    fn load(name: &str) -> Snapshot {
        let p = crate::test_fixtures::real_fixture(name);
        let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        memviz_core::load(&b).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    // python3 tests/gen/verify_groups.py tests/data/real/metadata_layers.pickle metadata:phase
    #[test]
    fn live_by_metadata_phase_prints_the_forward_bytes() {
        let s = load("metadata_layers.pickle");
        let opts = ByOptions::parse(Some("metadata:phase"), &[]).expect("by");
        let j = written(|o| live_by(o, "m", &s, "peak", None, &opts, true, 0)).expect("json");
        let v: serde_json::Value = serde_json::from_str(&j).expect("valid json");
        assert_eq!(v["by"], "metadata:phase");
        assert_eq!(v["total_bytes"], 289_077_028u64);
        let g = &v["groups"];
        assert_eq!(
            (g[1]["value"].as_str(), g[1]["bytes"].as_u64(), g[1]["allocations"].as_u64()),
            (Some("forward"), Some(120_995_840), Some(45))
        );
        assert_eq!(g[0]["value"], serde_json::Value::Null);
        let t = written(|o| live_by(o, "m", &s, "peak", None, &opts, false, 0)).expect("text");
        assert!(t.contains("     120995840  115.4 MiB      45  forward"), "{t}");
        assert!(t.contains("<allocated in autograd's backward thread: metadata is per thread>"), "{t}");
        assert!(ByOptions::parse(Some("colour"), &[]).is_err());
    }

    // python3 tests/gen/verify_groups.py tests/data/real/growth_leak.pickle user-line end
    #[test]
    fn growth_by_user_line_puts_the_leak_on_the_users_line() {
        let s = load("growth_leak.pickle");
        let opts = ByOptions::parse(None, &[]).expect("by");
        let t = growth_by("g", &s, None, &opts, false).expect("text");
        let first = t.lines().nth(1).expect("a row");
        assert!(first.contains("8398848") && first.contains("/home/user/project/train.py:20 (growth_leak)"), "{t}");
        let t = written(|o| live_by(o, "g", &s, "end", None, &opts, false, 1)).expect("text");
        assert!(t.contains("101793792") && t.contains("train.py:20 (growth_leak)"), "{t}");
    }
}
