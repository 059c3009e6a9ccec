//! The analysis commands: `live`, `insights`, `oom`, `fragmentation`, `compare`, `categories`,
//! `flame` and `export`. Each prints text, or with `--json` the JSON of the matching
//! `memviz_core::analysis` result (the same the page uses). `live`, `categories` and `flame` write
//! their text to standard output as they make it; the others return it whole (`export` may go to
//! a file).

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::error::CliError;

use memviz_core::analysis::categories::{self, CategoryTimeline};
use memviz_core::analysis::compare::{self, CompareOptions, KeyMode};
use memviz_core::analysis::export;
use memviz_core::analysis::fragmentation;
use memviz_core::analysis::grouping::{GroupBy, GroupTotal, Grouping, LibraryRule};
use memviz_core::analysis::growth::{self, BoundarySource, Edge, Insights};
use memviz_core::analysis::live::{self, LiveSet};
use memviz_core::analysis::oom::{self, OomReport};
use memviz_core::analysis::{device_position, signed_size_text, site_label, size_text, Moment, Replay};
use memviz_core::describe::utc_time;
use memviz_core::Snapshot;

/// Output format of `memviz export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// One allocation a row.
    Csv,
    /// The live set with every allocation.
    Json,
    /// A speedscope profile (bytes by stack).
    Speedscope,
    /// Every rank's whole trace as Parquet tables, partitioned by rank (needs `-o DIR`).
    Parquet,
}

/// How `memviz compare` matches what it compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompareBy {
    /// The whole visible stack.
    Stack,
    /// The source line only.
    Line,
    /// Groups ([`GroupBy`]), with which files are not the user's.
    Group(GroupBy, LibraryRule),
}

impl CompareBy {
    /// `stack`, `line`, or a grouping (`--library` for `user-line`).
    pub fn parse(by: &str, library: &[String]) -> Result<CompareBy, CliError> {
        Ok(match by.trim() {
            "stack" => CompareBy::Stack,
            "line" => CompareBy::Line,
            other => CompareBy::Group(
                GroupBy::parse(other).map_err(|source| CliError::Argument { source, hint: "; or stack, line" })?,
                LibraryRule::with_extra(library),
            ),
        })
    }
}

/// The whole input (`-`: standard input), for inputs that are not snapshots.
pub fn read_bytes(path: &str) -> Result<Vec<u8>, CliError> {
    use std::io::Read;
    if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|source| CliError::Read { path: "standard input".into(), source })?;
        Ok(buf)
    } else {
        std::fs::read(path).map_err(|source| CliError::Read { path: path.to_string(), source })
    }
}

/// `--json` output: the value, pretty, and a newline.
fn write_pretty(out: &mut dyn Write, v: &serde_json::Value) -> Result<(), CliError> {
    out.write_all(pretty(v)?.as_bytes()).map_err(CliError::stdout)
}

fn pretty(v: &serde_json::Value) -> Result<String, CliError> {
    Ok(serde_json::to_string_pretty(v)? + "\n")
}

/// `1.5 GiB (1610612736 bytes)`.
fn sz(bytes: u64) -> String {
    format!("{} ({bytes} bytes)", size_text(bytes))
}

fn when(snap: &Snapshot, replay: &Replay, moment: Moment, row: Option<u32>) -> String {
    let t = row.and_then(|r| snap.devices.get(replay.device_pos)?.trace.time_us_at(r as usize));
    let time = t.map_or(String::new(), |t| format!(" ({})", utc_time(t)));
    match (moment, row) {
        (_, None) => "before the first entry".into(),
        (Moment::Peak, Some(r)) => format!("at the peak, after entry {r}{time}"),
        (Moment::End, Some(r)) => format!("at the end, after entry {r}{time}"),
        (_, Some(r)) => format!("after entry {r}{time}"),
    }
}

fn frames_preview(snap: &Snapshot, stack: u32, n: usize) -> Vec<String> {
    let v: Vec<String> = memviz_core::analysis::visible_frames(snap, stack)
        .take(n + 1)
        .map(|f| memviz_core::analysis::frame_label(snap, f))
        .collect();
    let mut out: Vec<String> = v.iter().take(n).cloned().collect();
    if v.len() > n {
        out.push("...".into());
    }
    out
}

fn live_text(
    out: &mut dyn Write,
    file: &str,
    snap: &Snapshot,
    replay: &Replay,
    l: &LiveSet,
    top: usize,
    (grouping, groups): (&Grouping, &[GroupTotal]),
) -> io::Result<()> {
    writeln!(out, "{file}: {}, live {}", device_label(snap, l.device), when(snap, replay, l.moment, l.row))?;
    writeln!(out, "{} in {} allocations", sz(l.total_bytes), l.count)?;
    writeln!(out, "\nBy {} (top {}):", grouping.by.title(), top.min(groups.len()))?;
    writeln!(out, "{:>14} {:>10} {:>7}  {}", "bytes", "", "count", grouping.by.slug())?;
    for g in groups.iter().take(top) {
        writeln!(out, "{:>14} {:>10} {:>7}  {}", g.bytes, size_text(g.bytes), g.allocations, grouping.label(g.group))?;
    }
    writeln!(out, "\nBy source line (top {}):", top.min(l.by_site.len()))?;
    writeln!(out, "{:>14} {:>10} {:>7}  line", "bytes", "", "count")?;
    for g in l.by_site.iter().take(top) {
        writeln!(out, "{:>14} {:>10} {:>7}  {}", g.bytes, size_text(g.bytes), g.count, g.label)?;
    }
    writeln!(out, "\nBy stack (top {}):", top.min(l.by_stack.len()))?;
    for g in l.by_stack.iter().take(top) {
        writeln!(out, "{:>14} {:>10} {:>7}  {}", g.bytes, size_text(g.bytes), g.count, live::group_label(snap, g))?;
        for f in frames_preview(snap, g.stack, 4).into_iter().skip(1) {
            writeln!(out, "{:>34}  {f}", "")?;
        }
    }
    Ok(())
}

/// `device N`, or `pinned host`.
fn device_label(snap: &Snapshot, index: i64) -> String {
    match snap.device(index) {
        Some(d) if d.is_pinned_host() => d.name(),
        _ => format!("device {index}"),
    }
}

/// Annotations (`annotate` entries) of the live allocations, one line each.
fn annotation_lines(out: &mut dyn Write, snap: &Snapshot, replay: &Replay, l: &LiveSet) -> io::Result<()> {
    let ann = memviz_core::analysis::annotations::annotations(snap, replay);
    let live: Vec<u32> = l.elements.iter().copied().filter(|e| !ann.of(*e).is_empty()).collect();
    if live.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nAnnotations of live allocations:")?;
    for e in live {
        let Some(life) = replay.lives.get(e as usize) else { continue };
        writeln!(out, "  0x{:x} {}", life.addr, size_text(life.size_bytes))?;
        for a in ann.of(e) {
            let when = a.time_us.map_or(String::new(), |t| format!(" ({})", utc_time(t)));
            writeln!(out, "    entry {}{when}: {:?}  at {}", a.row, a.text, site_label(snap, a.stack))?;
        }
    }
    Ok(())
}

/// `memviz flame`: the folded lines written as they are made.
pub fn flame(
    out: &mut dyn Write,
    snap: &Snapshot,
    at: &str,
    lifetime: Option<&str>,
    device: Option<i64>,
    by: Option<&crate::group_cmds::ByOptions>,
    json: bool,
) -> Result<(), CliError> {
    use memviz_core::analysis::flame;
    let pos = device_position(snap, device)?;
    let replay = Replay::build(snap, pos);
    let source = match lifetime {
        Some(w) => {
            let (a, b) = w
                .split_once("..")
                .ok_or_else(|| CliError::Usage(format!("'{w}' is not a window: use A..B (entry numbers)")))?;
            let num =
                |x: &str| x.trim().parse::<u32>().map_err(|_| CliError::Usage(format!("'{x}' is not an entry number")));
            flame::FlameSource::Lifetime { first: num(a)?, last: num(b)? }
        }
        None => flame::FlameSource::Live(Moment::parse(at).map_err(CliError::argument)?),
    };
    let graph = match (by, source) {
        (Some(o), _) => {
            let grouping = Grouping::build(snap, &replay, &o.by, &o.library);
            flame::flame_by_group(snap, &replay, source, flame::FlameFrames::All, &grouping)
        }
        (None, flame::FlameSource::Lifetime { first, last }) => flame::lifetime_flame(snap, &replay, first, last),
        (None, flame::FlameSource::Live(at)) => flame::live_flame(snap, &replay, at),
    }?;
    if json {
        return write_pretty(out, &graph.to_json());
    }
    write!(out, "{}", graph.folded_text()).map_err(CliError::stdout)
}

/// `memviz live`: the text written as it is made.
#[allow(clippy::too_many_arguments)]
pub fn live(
    out: &mut dyn Write,
    file: &str,
    snap: &Snapshot,
    at: &str,
    device: Option<i64>,
    json: bool,
    top: usize,
    by: &crate::group_cmds::ByOptions,
) -> Result<(), CliError> {
    let pos = device_position(snap, device)?;
    let moment = Moment::parse(at).map_err(CliError::argument)?;
    let replay = Replay::build(snap, pos);
    let l = live::live_set(snap, &replay, moment)?;
    let grouping = Grouping::build(snap, &replay, &by.by, &by.library);
    let groups = grouping.totals(&replay, &l.elements);
    if json {
        let mut v = l.to_json(snap, top);
        if let (Some(o), serde_json::Value::Object(g)) = (v.as_object_mut(), grouping.totals_json(&groups, top)) {
            o.extend(g);
        }
        let ann = memviz_core::analysis::annotations::annotations(snap, &replay);
        let list: Vec<serde_json::Value> = l
            .elements
            .iter()
            .flat_map(|&e| ann.of(e).iter().map(move |a| (e, a)))
            .map(|(e, a)| {
                serde_json::json!({"element": e, "entry": a.row, "text": a.text, "time_us": a.time_us,
                    "stack": live::stack_json(snap, a.stack)})
            })
            .collect();
        if let Some(o) = v.as_object_mut() {
            o.insert("annotations".into(), serde_json::Value::Array(list));
            o.insert("device_name".into(), serde_json::json!(snap.devices.get(pos).map(|d| d.name())));
        }
        return write_pretty(out, &v);
    }
    live_text(out, file, snap, &replay, &l, top, (&grouping, &groups))
        .and_then(|()| annotation_lines(out, snap, &replay, &l))
        .map_err(CliError::stdout)
}

fn oom_text(snap: &Snapshot, o: &OomReport, s: &mut String) {
    let _ = writeln!(
        s,
        "Out of memory at entry {}{}",
        o.row,
        o.time_us.map_or(String::new(), |t| format!(" ({})", utc_time(t)))
    );
    let _ = writeln!(s, "  requested:            {}", sz(o.requested_bytes));
    if let Some(df) = o.device_free_bytes {
        let _ = writeln!(s, "  device free:          {}", sz(df));
    }
    let _ = writeln!(s, "  reserved:             {}", sz(o.reserved_bytes));
    let _ = writeln!(
        s,
        "  allocated:            {} (blocks {})",
        sz(o.allocated_bytes),
        size_text(o.allocated_block_bytes)
    );
    let _ = writeln!(s, "  free in segments:     {}", sz(o.free_in_segments_bytes));
    let _ = writeln!(s, "  largest free block:   {} on the request's stream", sz(o.largest_free_bytes));
    let _ = writeln!(s, "  requested from:       {}", site_label(snap, o.stack));
    if o.pools.len() > 1 || o.pools.iter().any(|p| p.pool != 0) {
        let _ = writeln!(s, "  by stream and pool:");
        for p in &o.pools {
            let pool =
                snap.pools.get(p.pool as usize).map_or_else(String::new, |x| format!(" pool ({}, {})", x.0, x.1));
            let _ = writeln!(
                s,
                "    stream {}{pool}: {} segments, {} reserved, {} free, largest free block {}",
                p.stream,
                p.segments,
                size_text(p.reserved_bytes),
                size_text(p.free_bytes),
                size_text(p.largest_free_bytes)
            );
        }
    }
    let _ = writeln!(s, "  what happened:");
    for d in &o.diagnosis {
        let _ = writeln!(s, "    - {d}");
    }
    let _ = writeln!(s, "  top holders:");
    for g in o.holders.by_site.iter().take(5) {
        let _ = writeln!(s, "    {:>14} {:>10} {:>5}  {}", g.bytes, size_text(g.bytes), g.count, g.label);
    }
    let _ = writeln!(s, "  what to try:");
    for t in &o.suggestions {
        let _ = writeln!(s, "    - {t}");
    }
}

/// `memviz oom`.
pub fn oom(file: &str, snap: &Snapshot, device: Option<i64>, json: bool) -> Result<String, CliError> {
    let pos = device_position(snap, device)?;
    let replay = Replay::build(snap, pos);
    let reports = oom::explain(snap, &replay);
    if json {
        let ooms: Vec<_> = reports.iter().map(|o| o.to_json(snap)).collect();
        return pretty(&serde_json::json!({"device": replay.device, "ooms": ooms}));
    }
    let mut s = format!("{file}: device {}\n", replay.device);
    if reports.is_empty() {
        s.push_str("no out-of-memory entries in the trace\n");
    }
    for o in &reports {
        oom_text(snap, o, &mut s);
    }
    Ok(s)
}

fn insights_text(file: &str, snap: &Snapshot, i: &Insights) -> String {
    let mut s = format!("{file}: {}\n", device_label(snap, i.device));
    let list = &i.iterations.list;
    match &i.iterations.source {
        None => s.push_str("iterations: none found (no repeated annotation, no periodic shape)\n"),
        Some(BoundarySource::Annotation { family, edge }) => {
            let _ = writeln!(
                s,
                "iterations: {} ({} of the '{family}' annotations)",
                list.len(),
                if *edge == Edge::Start { "from the STARTs" } else { "ending at the ENDs" }
            );
        }
        Some(BoundarySource::Periodic { period_rows, score }) => {
            let _ = writeln!(s, "iterations: {} (periodic live-bytes curve, about {period_rows} entries each, autocorrelation {score:.2})", list.len());
        }
    }
    if !list.is_empty() {
        let _ = writeln!(
            s,
            "  {:>3}  {:<20} {:>15}  {:>14} {:>10}  {:>14}",
            "#", "entries", "label", "peak bytes", "", "end bytes"
        );
        for it in list.iter().filter(|it| list.len() <= 15 || it.index < 10 || it.index + 3 >= list.len()) {
            if list.len() > 15 && it.index + 3 == list.len() {
                let _ = writeln!(s, "  ... {} more", list.len() - 13);
            }
            let _ = writeln!(
                s,
                "  {:>3}  {:<20} {:>15}  {:>14} {:>10}  {:>14}   peak at entry {}",
                it.index + 1,
                format!("{}..{}", it.start_row, it.end_row),
                it.label,
                it.peak_bytes,
                size_text(it.peak_bytes),
                it.end_bytes,
                it.peak_row
            );
        }
    }
    if let Some(g) = &i.growth {
        if g.significant {
            let _ = writeln!(
                s,
                "growth: {} per iteration ({} bytes)",
                signed_size_text(i128::from(g.bytes_per_iteration)),
                g.bytes_per_iteration
            );
            let _ = writeln!(s, "  by your line:");
            for n in i.growth_by_line.iter().take(10) {
                let b = n.growth.bytes_per_iteration;
                let _ = writeln!(s, "  {:>12} bytes/iteration {:>10}  {}", b, signed_size_text(i128::from(b)), n.label);
            }
            let _ = writeln!(s, "  by innermost frame:");
            for st in g.stacks.iter().take(10) {
                let _ = writeln!(s, "  {:>12} bytes/iteration  {}", st.bytes_per_iteration, site_label(snap, st.stack));
            }
        } else {
            let _ = writeln!(
                s,
                "growth: no steady growth (trend of live bytes at iteration ends: {} bytes per iteration)",
                g.bytes_per_iteration
            );
        }
    }
    s.push('\n');
    for f in &i.findings {
        let _ = writeln!(s, "[{}] {}", if f.problem { "problem" } else { "note" }, f.title);
        for d in &f.details {
            let _ = writeln!(s, "    - {d}");
        }
        for t in &f.suggestions {
            let _ = writeln!(s, "    try: {t}");
        }
    }
    if i.findings.is_empty() {
        s.push_str("no findings (too few iterations to judge growth; no out-of-memory entries)\n");
    }
    for o in &i.ooms {
        s.push('\n');
        oom_text(snap, o, &mut s);
    }
    s
}

/// `memviz insights`.
pub fn insights(file: &str, snap: &Snapshot, device: Option<i64>, json: bool) -> Result<String, CliError> {
    let pos = device_position(snap, device)?;
    let i = growth::insights(snap, pos);
    if json {
        return pretty(&i.to_json(snap));
    }
    Ok(insights_text(file, snap, &i))
}

/// `memviz fragmentation`.
pub fn fragmentation(
    file: &str,
    snap: &Snapshot,
    device: Option<i64>,
    points: usize,
    json: bool,
) -> Result<String, CliError> {
    let pos = device_position(snap, device)?;
    let f = fragmentation::fragmentation_series(snap, pos, points.max(2));
    if json {
        return pretty(&f.to_json());
    }
    let mut s = format!("{file}: device {}, {} entries\n{}\n", f.device, f.entries, f.summary());
    if let Some(p) = f.max_scattered {
        let _ = writeln!(
            s,
            "most free memory outside the largest free block: {} of {} free{} (largest free block {})",
            size_text(p.free_bytes.saturating_sub(p.largest_free_bytes)),
            size_text(p.free_bytes),
            p.row.map_or_else(|| " before the first entry".into(), |r| format!(" at entry {r}")),
            size_text(p.largest_free_bytes)
        );
    }
    let _ = writeln!(
        s,
        "{:>8} {:>14} {:>14} {:>14} {:>14} {:>14}",
        "entry", "reserved", "allocated", "unused", "free", "largest free"
    );
    let step = (f.points.len() / 20).max(1);
    for p in f.points.iter().step_by(step) {
        let _ = writeln!(
            s,
            "{:>8} {:>14} {:>14} {:>14} {:>14} {:>14}",
            p.row.map_or("start".to_string(), |r| r.to_string()),
            p.reserved_bytes,
            p.allocated_bytes,
            p.unused_bytes(),
            p.free_bytes,
            p.largest_free_bytes
        );
    }
    Ok(s)
}

/// `memviz compare`.
#[allow(clippy::too_many_arguments)]
pub fn compare(
    a_name: &str,
    a: &Snapshot,
    b_name: &str,
    b: &Snapshot,
    device: Option<i64>,
    top: usize,
    by: &CompareBy,
    json: bool,
) -> Result<String, CliError> {
    let pa = device_position(a, device).map_err(|source| CliError::AnalysisOf { path: a_name.into(), source })?;
    let pb = device_position(b, device).map_err(|source| CliError::AnalysisOf { path: b_name.into(), source })?;
    let key = if *by == CompareBy::Line { KeyMode::Line } else { KeyMode::Stack };
    let opts = CompareOptions { key, top, ..CompareOptions::default() };
    let c = match by {
        CompareBy::Group(g, rule) => compare::compare_grouped(a, pa, b, pb, opts, g, rule),
        CompareBy::Stack | CompareBy::Line => compare::compare(a, pa, b, pb, opts),
    };
    if json {
        return pretty(&c.to_json());
    }
    let mut s = format!("A: {a_name}\nB: {b_name}\ndifferences are B - A (positive: B holds more)\n");
    let _ = writeln!(s, "verdict: {}", c.verdict());
    let _ = writeln!(s, "aligned {}", c.alignment_text());
    if !c.recording_differences.is_empty() {
        let _ = writeln!(s, "recorded with different settings: {}", c.recording_differences.join("; "));
    }
    if c.python_frames_only {
        let _ = writeln!(s, "stacks matched on their Python frames only (one file has C++ frames, the other none)");
    }
    let _ = writeln!(
        s,
        "peak: A {} at entry {}, B {} at entry {} ({})",
        sz(c.a_peak.0),
        c.a_peak.1.map_or("-".into(), |r| r.to_string()),
        sz(c.b_peak.0),
        c.b_peak.1.map_or("-".into(), |r| r.to_string()),
        signed_size_text(i128::from(c.b_peak.0) - i128::from(c.a_peak.0))
    );
    let peaks = c.iteration_peaks();
    if !peaks.is_empty() {
        let _ = writeln!(s, "\n{:>9} {:>12} {:>12} {:>12}", "iteration", "peak of A", "peak of B", "B - A");
        for p in &peaks {
            let _ = writeln!(
                s,
                "{:>9} {:>12} {:>12} {:>12}",
                p.iteration,
                size_text(p.peak_a_bytes),
                size_text(p.peak_b_bytes),
                signed_size_text(i128::from(p.peak_b_bytes) - i128::from(p.peak_a_bytes))
            );
        }
    }
    let _ = writeln!(
        s,
        "\n{:<22} {:>14} {:>8} {:>14} {:>8} {:>12}",
        "moment", "A bytes", "A entry", "B bytes", "B entry", "B - A"
    );
    for p in &c.points {
        let _ = writeln!(
            s,
            "{:<22} {:>14} {:>8} {:>14} {:>8} {:>12}",
            p.label,
            p.a_bytes,
            p.a_row.map_or("-".into(), |r| r.to_string()),
            p.b_bytes,
            p.b_row.map_or("-".into(), |r| r.to_string()),
            signed_size_text(i128::from(p.b_bytes) - i128::from(p.a_bytes))
        );
    }
    for p in c.points.iter().filter(|p| p.label == "peak" || p.label == "end") {
        let _ = writeln!(
            s,
            "\nat the {}: A {} (entry {}), B {} (entry {}), B - A = {}",
            p.label,
            size_text(p.a_bytes),
            p.a_row.map_or("-".into(), |r| r.to_string()),
            size_text(p.b_bytes),
            p.b_row.map_or("-".into(), |r| r.to_string()),
            signed_size_text(i128::from(p.b_bytes) - i128::from(p.a_bytes))
        );
        for (title, list) in [("more in B", &p.more_in_b), ("more in A", &p.more_in_a)] {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(s, "  {title}:");
            for d in list {
                let key = if d.key.chars().count() > 140 {
                    format!("{}...", d.key.chars().take(140).collect::<String>())
                } else {
                    d.key.clone()
                };
                let _ = writeln!(
                    s,
                    "    {:>11}  A {:>10} ({:>4})  B {:>10} ({:>4})  {key}",
                    signed_size_text(d.delta()),
                    size_text(d.a_bytes),
                    d.a_count,
                    size_text(d.b_bytes),
                    d.b_count
                );
            }
        }
    }
    Ok(s)
}

/// How the source of joined categories ends ([`memviz_core::analysis::categories_join`]).
const JOINED: &str = memviz_core::analysis::categories_join::JOINED_SOURCE;

fn timeline_text(out: &mut dyn Write, t: &CategoryTimeline) -> io::Result<()> {
    writeln!(
        out,
        "source: {}{}",
        t.source,
        match (t.inferred, t.source.ends_with(JOINED)) {
            (true, true) => " (the rest INFERRED: a best guess)",
            (true, false) => " (INFERRED: a best guess, not recorded by PyTorch)",
            _ => "",
        }
    )?;
    writeln!(out, "points: {}", t.bytes.len())?;
    if let Some((i, total)) = t.peak() {
        let at = match (t.rows.get(i).copied().flatten(), t.times_us.get(i).copied().flatten()) {
            (Some(r), _) => format!("entry {r}"),
            (None, Some(tu)) => format!("time {tu} us"),
            _ => "start".into(),
        };
        writeln!(out, "peak: {} at {at}", sz(total))?;
        if let Some(row) = t.bytes.get(i) {
            for (name, b) in t.categories.iter().zip(row) {
                writeln!(out, "  {:<16} {:>14} {:>10}", name, b, size_text(*b))?;
            }
        }
    }
    Ok(())
}

/// How `memviz categories` reads its file.
pub struct CategoriesOptions<'a> {
    /// Most points in the timeline.
    pub points: usize,
    /// A snapshot's groups instead of its categories.
    pub by: Option<&'a crate::group_cmds::ByOptions>,
    /// The profiler's memory timeline of the same run (its path and bytes), joined with a
    /// snapshot.
    pub profile: Option<(&'a str, &'a [u8])>,
    /// JSON instead of text.
    pub json: bool,
}

/// `memviz categories`: a profiler timeline (`.json`, `.json.gz`) or a snapshot.
pub fn categories(
    out: &mut dyn Write,
    file: &str,
    bytes: &[u8],
    device: Option<i64>,
    how: &CategoriesOptions<'_>,
) -> Result<(), CliError> {
    let CategoriesOptions { points, by, json, .. } = *how;
    let head = bytes.iter().find(|c| !c.is_ascii_whitespace()).copied();
    let is_timeline = bytes.starts_with(&[0x1f, 0x8b]) || head == Some(b'[');
    if is_timeline && by.is_some() {
        return Err(CliError::Usage(format!(
            "{file}: --by groups a snapshot's allocations; a profiler memory timeline holds categories only"
        )));
    }
    if is_timeline && how.profile.is_some() {
        return Err(CliError::Usage(format!(
            "{file}: --profile joins a profiler memory timeline with a snapshot; give the snapshot as the file"
        )));
    }
    if is_timeline {
        let t = categories::read_profiler_timeline(bytes)
            .map_err(|source| CliError::AnalysisOf { path: file.into(), source })?;
        let t = t.downsample(points);
        if json {
            return write_pretty(out, &t.to_json());
        }
        return writeln!(out, "{file}").and_then(|()| timeline_text(out, &t)).map_err(CliError::stdout);
    }
    let snap = memviz_core::load(bytes).map_err(|source| CliError::Load { path: file.into(), source })?;
    let pos = device_position(&snap, device)?;
    if let Some(o) = by {
        let replay = Replay::build(&snap, pos);
        let grouping = Grouping::build(&snap, &replay, &o.by, &o.library);
        let t = memviz_core::analysis::group_timeline::group_timeline(&snap, pos, &replay, &grouping, points, 12);
        if json {
            return write_pretty(out, &t.to_json());
        }
        return writeln!(out, "{file}: device {}", snap.devices.get(pos).map_or(0, |d| d.index))
            .and_then(|()| timeline_text(out, &t))
            .map_err(CliError::stdout);
    }
    let c = match how.profile {
        Some((path, b)) => {
            let t = categories::read_profiler_timeline(b)
                .map_err(|source| CliError::AnalysisOf { path: path.into(), source })?;
            if !memviz_core::analysis::categories_join::overlaps(&snap, pos, &t) {
                return Err(CliError::Usage(format!(
                    "{path}: this memory timeline and {file} do not overlap in time: they are not of the same run"
                )));
            }
            memviz_core::analysis::categories_join::join_categories(&snap, pos, &t, points).0
        }
        None => categories::infer_categories(&snap, pos, points),
    };
    if json {
        return write_pretty(out, &c.to_json());
    }
    let text = |out: &mut dyn Write| -> io::Result<()> {
        writeln!(out, "{file}: device {}", snap.devices.get(pos).map_or(0, |d| d.index))?;
        for n in &c.notes {
            writeln!(out, "note: {n}")?;
        }
        timeline_text(out, &c.timeline)
    };
    text(out).map_err(CliError::stdout)
}

/// `memviz export`: the text to write.
pub fn export(
    file: &str,
    snap: &Snapshot,
    at: &str,
    device: Option<i64>,
    format: ExportFormat,
) -> Result<String, CliError> {
    let pos = device_position(snap, device)?;
    let moment = Moment::parse(at).map_err(CliError::argument)?;
    let replay = Replay::build(snap, pos);
    let l = live::live_set(snap, &replay, moment)?;
    Ok(match format {
        ExportFormat::Csv => export::live_set_csv(snap, &replay, &l),
        ExportFormat::Json => pretty(&export::live_set_json(snap, &replay, &l))?,
        ExportFormat::Speedscope => {
            let name = format!(
                "{} live at {} (device {})",
                file.rsplit('/').next().unwrap_or(file),
                live::moment_text(moment),
                l.device
            );
            let mut s = serde_json::to_string(&export::speedscope(snap, &l, &name))?;
            s.push('\n');
            s
        }
        ExportFormat::Parquet => return Err(CliError::Usage("--format parquet writes a folder: use -o DIR".into())),
    })
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A real snapshot by name; panics when it is missing.
    fn path(name: &str) -> PathBuf {
        crate::test_fixtures::real_fixture(name)
    }

    /// What a command that writes as it goes wrote, or its error.
    fn written(command: impl FnOnce(&mut dyn Write) -> Result<(), CliError>) -> Result<String, CliError> {
        let mut out = Vec::new();
        command(&mut out)?;
        Ok(String::from_utf8(out).expect("UTF-8"))
    }

    /// A real snapshot by name, loaded; panics when it is missing or does not load.
    fn load(name: &str) -> (String, Snapshot) {
        let p = path(name);
        let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        (name.to_string(), memviz_core::load(&b).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
    }

    // The figures below are those of tests/gen/verify_*.py (see the tests in memviz_core::analysis).
    #[test]
    fn live_text_shows_verified_figures() {
        let (f, s) = load("resnet50_buggy.pickle");
        let by = crate::group_cmds::ByOptions::parse(None, &[]).expect("by");
        let t = written(|o| live(o, &f, &s, "peak", None, false, 5, &by)).expect("live");
        assert!(t.contains("at the peak, after entry 2302"), "{t}");
        assert!(t.contains("(470210256 bytes) in 857 allocations"), "{t}");
        assert!(t.contains("145840288"), "{t}");
        let j = written(|o| live(o, &f, &s, "peak", None, true, 5, &by)).expect("json");
        let v: serde_json::Value = serde_json::from_str(&j).expect("valid json");
        assert_eq!(v["total_bytes"], 470_210_256u64);
        assert!(live(&mut Vec::new(), &f, &s, "99999", None, false, 5, &by).is_err());
        assert!(live(&mut Vec::new(), &f, &s, "peak", Some(7), false, 5, &by).is_err());
    }

    #[test]
    fn insights_text_on_the_resnet_pair() {
        let (f, s) = load("resnet50_buggy.pickle");
        let t = insights(&f, &s, None, false).expect("insights");
        assert!(t.contains("[problem] Gradients stay alive"), "{t}");
        assert!(t.contains("97.5 MiB (161 tensors)"), "{t}");
        assert!(t.contains("zero_grad(set_to_none=True)"), "{t}");
        let (f, s) = load("resnet50_fixed.pickle");
        let t = insights(&f, &s, None, false).expect("insights");
        assert!(!t.contains("[problem]"), "{t}");
    }

    #[test]
    fn insights_text_on_growth_leak() {
        let (f, s) = load("growth_leak.pickle");
        let t = insights(&f, &s, None, false).expect("insights");
        assert!(t.contains("growth: +8 MiB per iteration (8398852 bytes)"), "{t}");
        assert!(t.contains("8388608 bytes/iteration  torch/nn/functional.py:1723 (relu)"), "{t}");
    }

    #[test]
    fn oom_text_shows_verified_figures() {
        let (f, s) = load("oom.pickle");
        let t = oom(&f, &s, None, false).expect("oom");
        assert!(t.contains("(546068992 bytes)"), "{t}");
        assert!(t.contains("(146806013952 bytes)"), "{t}");
        let j = oom(&f, &s, None, true).expect("json");
        let v: serde_json::Value = serde_json::from_str(&j).expect("valid json");
        assert_eq!(v["ooms"][0]["requested_bytes"], 546_068_992u64);
    }

    #[test]
    fn categories_reads_the_profiler_export() {
        let p = path("resnet50_profile.timeline.json.gz");
        let b = std::fs::read(&p).expect("read");
        let t = written(|o| {
            categories(
                o,
                "x.json.gz",
                &b,
                None,
                &CategoriesOptions { points: 200, by: None, profile: None, json: false },
            )
        })
        .expect("categories");
        assert!(t.contains("PyTorch profiler"), "{t}");
        let p = path("growth_leak.pickle");
        let b = std::fs::read(&p).expect("read");
        let t = written(|o| {
            categories(
                o,
                "g.pickle",
                &b,
                None,
                &CategoriesOptions { points: 200, by: None, profile: None, json: false },
            )
        })
        .expect("categories");
        assert!(t.contains("INFERRED"), "{t}");
    }

    #[test]
    fn exports_are_well_formed() {
        let (f, s) = load("growth_leak.pickle");
        let csv = export(&f, &s, "peak", None, ExportFormat::Csv).expect("csv");
        assert!(csv.starts_with("element,address,size_bytes"));
        let ss = export(&f, &s, "peak", None, ExportFormat::Speedscope).expect("speedscope");
        let v: serde_json::Value = serde_json::from_str(&ss).expect("json");
        assert_eq!(v["profiles"][0]["endValue"], 191_109_188u64);
    }
}
