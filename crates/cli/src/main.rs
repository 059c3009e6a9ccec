//! # memviz
//!
//! The command line of memviz: the same answers as the viewer, as text and JSON.
//! `memviz stats FILE` and `memviz trace FILE` print exactly what PyTorch's
//! `python -m torch.cuda._memory_viz stats|trace FILE` prints; `memviz info FILE` summarizes;
//! `memviz ranks PATH...` compares a training run's per-rank snapshots.
//! Every command reads `-` as standard input. Errors are one line on stderr and exit status 1,
//! output that cannot be written included; a closed pipe (`| head`) ends the command quietly.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use memviz_core::{info, reference};

use error::CliError;

mod analysis_cmds;
mod error;
mod group_cmds;
mod html;
mod info_text;
mod layout_cmd;
mod parquet_export;
mod ranks;
// Where test data lives, shared with the core's tests: a missing file fails the test.
mod read;
#[cfg(test)]
#[path = "../../core/src/test_fixtures.rs"]
#[allow(dead_code)] // not every helper is used here
mod test_fixtures;

/// Viewer and command line for PyTorch CUDA memory snapshots.
#[derive(Parser)]
#[command(name = "memviz", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a self-contained HTML page with the Active Memory Timeline of FILE (works offline,
    /// from file://). Mirrors PyTorch's `_memory_viz trace_plot`.
    TracePlot {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
        /// Output page (`-` for standard output).
        #[arg(short, long, default_value = "output.html")]
        output: String,
        /// Device to show first (default: the device with the longest trace).
        #[arg(short, long)]
        device: Option<i64>,
        /// Plot segments (cudaMalloc/cudaFree) instead of allocations.
        #[arg(short, long)]
        segments: bool,
        /// Hide allocations freed within the trace (only what is never freed remains).
        #[arg(short, long = "filter-freed", alias = "filter_freed")]
        filter_freed: bool,
        /// View to open with, by its name in the page's menu as a slug (`active-memory-timeline`,
        /// `active-cached-segment-timeline`, `allocator-state-history`, `allocator-settings`, ...);
        /// overrides --segments.
        #[arg(long)]
        view: Option<String>,
    },
    /// Write a self-contained HTML page with the Allocator State History of FILE. Mirrors
    /// PyTorch's `_memory_viz segment_plot`.
    SegmentPlot {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
        /// Output page (`-` for standard output).
        #[arg(short, long, default_value = "output.html")]
        output: String,
        /// Device to show first.
        #[arg(short, long)]
        device: Option<i64>,
    },
    /// Write the empty viewer as one offline HTML file that accepts dropped snapshots.
    Viewer {
        /// Output page (`-` for standard output).
        #[arg(short, long, default_value = "memviz.html")]
        output: String,
    },
    /// How the allocator has filled its segments (same text as PyTorch's `_memory_viz stats`).
    Stats {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
    },
    /// Every trace entry in a Pythonic style (same text as PyTorch's `_memory_viz trace`).
    Trace {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
    },
    /// Devices, entries per action, time span, true peaks, segments, inferred recording settings.
    Info {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// What is live at a moment (default: the peak), by source line, by stack and as a tree.
    Live {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
        /// `peak`, `start`, `end`, or an entry number (the state just after that entry).
        #[arg(long, default_value = "peak")]
        at: String,
        /// Device index, or `host` for pinned host memory (default: the device with the longest
        /// trace, else the one with the most memory).
        #[arg(long, value_parser = parse_device, allow_hyphen_values = true)]
        device: Option<i64>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Lines and stacks listed.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Group the live allocations by `user-line` (the first frame outside torch, Python's
        /// library and installed packages), `frame`, `op`, `metadata`, `metadata:KEY`, `category`
        /// or `annotation` instead (JSON: `{"by", "groups": [{"value", "reason", "bytes", "allocations"}]}`).
        #[arg(long, value_name = "BY")]
        by: Option<String>,
        /// A path fragment of files that are not your code, beside torch and installed packages
        /// (for `--by user-line`; may repeat).
        #[arg(long, value_name = "PATH_FRAGMENT")]
        library: Vec<String>,
    },
    /// The laid-out plot as data (what the page draws): y maximum, peak, elements, private-pool
    /// envelopes and stripes, ghosts, each element's hover text.
    Layout {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
        /// Device index, or `host` for pinned host memory (default: the device with the longest
        /// trace, else the one with the most memory).
        #[arg(long, value_parser = parse_device, allow_hyphen_values = true)]
        device: Option<i64>,
        /// Which plot.
        #[arg(long, value_enum, default_value = "active")]
        view: layout_cmd::LayoutView,
        /// How many of the largest allocations get their own band (the page's Detail).
        #[arg(long, default_value_t = memviz_core::timeline::DEFAULT_MAX_ENTRIES)]
        detail: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Iterations, memory growth, memory kept from one iteration into the next, out-of-memory events.
    Insights {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
        /// Device index, or `host` for pinned host memory (default: the device with the longest
        /// trace, else the one with the most memory).
        #[arg(long, value_parser = parse_device, allow_hyphen_values = true)]
        device: Option<i64>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Only the growth across iterations, grouped by `user-line`, `frame`, `op`, `metadata`,
        /// `metadata:KEY`, `category` or `annotation`.
        #[arg(long, value_name = "BY")]
        by: Option<String>,
        /// A path fragment of files that are not your code (for `--by user-line`; may repeat).
        #[arg(long, value_name = "PATH_FRAGMENT")]
        library: Vec<String>,
    },
    /// Explains each out-of-memory event: request, free memory, fragmentation, holders, what to try.
    Oom {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
        /// Device index, or `host` for pinned host memory (default: the device with the longest
        /// trace, else the one with the most memory).
        #[arg(long, value_parser = parse_device, allow_hyphen_values = true)]
        device: Option<i64>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Reserved minus allocated, free memory in segments and the largest free block over time.
    Fragmentation {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
        /// Device index, or `host` for pinned host memory (default: the device with the longest
        /// trace, else the one with the most memory).
        #[arg(long, value_parser = parse_device, allow_hyphen_values = true)]
        device: Option<i64>,
        /// Most points in the series.
        #[arg(long, default_value_t = 200)]
        points: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Compares two snapshots: aligned curves and live bytes per stack at matched moments.
    Compare {
        /// Snapshot A.
        a: String,
        /// Snapshot B.
        b: String,
        /// Device index in both, or `host` for pinned host memory (default: each file's device
        /// with the longest trace).
        #[arg(long, value_parser = parse_device, allow_hyphen_values = true)]
        device: Option<i64>,
        /// Differences listed per direction and moment.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Match by the whole `stack` or the source `line`, or compare groups: `user-line` (the
        /// first frame outside torch, Python's library and installed packages), `frame`, `op`,
        /// `metadata`, `metadata:KEY`, `category` or `annotation`.
        #[arg(long, value_name = "BY", default_value = "stack")]
        by: String,
        /// A path fragment of files that are not your code (for `--by user-line`; may repeat).
        #[arg(long, value_name = "PATH_FRAGMENT")]
        library: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Write the page's Compare view of the two files as one offline HTML page to this file
        /// (`-`: standard output) instead of printing the comparison.
        #[arg(long, value_name = "OUT")]
        html: Option<String>,
    },
    /// Memory by category: a profiler memory timeline (.json, .json.gz) or categories inferred from a snapshot.
    Categories {
        /// Profiler `export_memory_timeline` output or a snapshot; `-` for standard input.
        file: String,
        /// Device index for snapshots, or `host` for pinned host memory (default: the device with
        /// the longest trace, else the one with the most memory).
        #[arg(long, value_parser = parse_device, allow_hyphen_values = true)]
        device: Option<i64>,
        /// Most points in the timeline.
        #[arg(long, default_value_t = 500)]
        points: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// A snapshot's allocations by group instead of category: `user-line`, `frame`, `op`,
        /// `metadata`, `metadata:KEY`, `category` or `annotation` (the 12 largest, then other).
        #[arg(long, value_name = "BY")]
        by: Option<String>,
        /// A path fragment of files that are not your code (for `--by user-line`; may repeat).
        #[arg(long, value_name = "PATH_FRAGMENT")]
        library: Vec<String>,
        /// The profiler's memory timeline of the same run (`export_memory_timeline`'s .json or
        /// .raw.json.gz): the snapshot's allocations take its categories where time and size
        /// match (the rest are inferred).
        #[arg(long, value_name = "TIMELINE")]
        profile: Option<String>,
    },
    /// A flame graph: live bytes by stack at a moment, or bytes x lifetime (byte-entries) over a
    /// window of entries; folded-stack lines (flamegraph.pl, speedscope, inferno) or --json nodes.
    Flame {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        file: String,
        /// `peak`, `start`, `end`, or an entry number (the state just after that entry).
        #[arg(long, default_value = "peak")]
        at: String,
        /// Weigh each allocation by bytes x entries live within entries A..B (inclusive) instead.
        #[arg(long)]
        lifetime: Option<String>,
        /// Device index, or `host` for pinned host memory (default: the device with the longest
        /// trace, else the one with the most memory).
        #[arg(long, value_parser = parse_device, allow_hyphen_values = true)]
        device: Option<i64>,
        /// Print the nodes as JSON instead of folded lines.
        #[arg(long)]
        json: bool,
        /// A first level of groups: `user-line`, `frame`, `op`, `metadata`, `metadata:KEY`,
        /// `category` or `annotation`.
        #[arg(long, value_name = "BY")]
        by: Option<String>,
        /// A path fragment of files that are not your code (for `--by user-line`; may repeat).
        #[arg(long, value_name = "PATH_FRAGMENT")]
        library: Vec<String>,
    },
    /// A training run: one row per rank's snapshot (peaks, OOMs, findings) and the ranks that stand out.
    Ranks {
        /// Snapshot files, or folders searched for them (.pickle, .pkl, .json, .gz, .zst, .xz).
        #[arg(required = true)]
        paths: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Exports the live set at a moment as CSV, JSON or a speedscope profile (bytes by stack), or
    /// every rank's whole trace as Parquet tables (`--format parquet PATH... -o DIR`).
    Export {
        /// Snapshot: pickle or JSON, maybe gzip/xz/zstd compressed, or an HTML page with one inside; `-` for standard input.
        /// With `--format parquet`: snapshot files or folders, one file a rank.
        #[arg(required = true)]
        files: Vec<String>,
        /// Output format.
        #[arg(long, value_enum)]
        format: analysis_cmds::ExportFormat,
        /// `peak`, `start`, `end`, or an entry number.
        #[arg(long, default_value = "peak")]
        at: String,
        /// Device index, or `host` for pinned host memory (default: the device with the longest
        /// trace, else the one with the most memory).
        #[arg(long, value_parser = parse_device, allow_hyphen_values = true)]
        device: Option<i64>,
        /// Write to this file instead of standard output (`--format parquet`: the output folder).
        #[arg(short, long)]
        output: Option<String>,
    },
}

use read::load;

/// A device argument: an index, or `host` / `pinned` for pinned host memory.
fn parse_device(s: &str) -> Result<i64, String> {
    match s.trim() {
        "host" | "pinned" | "pinned-host" => Ok(memviz_core::snapshot::PINNED_HOST_INDEX),
        // A profiler trace's CPU memory.
        "cpu" => Ok(memviz_core::chrome_trace::CPU_DEVICE_INDEX),
        t => t.parse::<i64>().map_err(|_| format!("'{s}' is not a device: use an index, 'host' or 'cpu'")),
    }
}

/// Writes an HTML page with `files` in it to `output` (`-`: `out`, else a file, reported on
/// `out`).
fn write_page(files: &[&str], output: &str, opts: &html::PageOptions, out: &mut dyn Write) -> Result<(), CliError> {
    let viewer = html::VIEWER.as_ref().ok_or_else(|| CliError::Usage(html::NO_VIEWER.into()))?;
    let mut read = Vec::new();
    for f in files {
        let bytes = read::read_for_page(f)?;
        let name = if *f == "-" {
            "snapshot.pickle".to_string()
        } else {
            std::path::Path::new(f).file_name().map_or_else(|| f.to_string(), |n| n.to_string_lossy().into_owned())
        };
        read.push((name, bytes));
    }
    // Two files of one name (two runs' rank0.pickle) are told apart as A and B.
    if read.len() == 2 && read[0].0 == read[1].0 {
        for (tag, r) in ["A", "B"].iter().zip(read.iter_mut()) {
            r.0 = format!("{tag}-{}", r.0);
        }
    }
    let embedded: Vec<html::Embedded<'_>> = read.iter().map(|(n, b)| html::Embedded { name: n, bytes: b }).collect();
    let names: Vec<&str> = read.iter().map(|r| r.0.as_str()).collect();
    let title = if names.is_empty() { "memviz".to_string() } else { format!("{} · memviz", names.join(" vs ")) };
    let page = html::page(viewer, &title, &embedded, opts);
    if output == "-" {
        // The page itself on standard output (what the Python package reads).
        return out.write_all(page.as_bytes()).map_err(CliError::stdout);
    }
    write_file(output, page.as_bytes())?;
    writeln!(out, "wrote {output} ({} bytes)", page.len()).map_err(CliError::stdout)
}

/// Writes `bytes` to the file `path`.
fn write_file(path: &str, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|source| CliError::Write { target: path.to_string(), source })
}

/// Runs one command, writing what it prints to `out` as it is produced (the text of `stats`,
/// `--json` and the smaller reports is made whole first, then written).
fn run(cli: Cli, out: &mut dyn Write) -> Result<(), CliError> {
    let text = match cli.command {
        Command::TracePlot { file, output, device, segments, filter_freed, view } => {
            let view = view.unwrap_or_else(|| {
                if segments { "active-cached-segment-timeline" } else { "active-memory-timeline" }.into()
            });
            let opts = html::PageOptions { view: Some(view), device, filter_freed, compare: false };
            return write_page(&[&file], &output, &opts, out);
        }
        Command::SegmentPlot { file, output, device } => {
            let opts = html::PageOptions {
                view: Some("allocator-state-history".into()),
                device,
                filter_freed: false,
                compare: false,
            };
            return write_page(&[&file], &output, &opts, out);
        }
        Command::Viewer { output } => return write_page(&[], &output, &html::PageOptions::default(), out),
        // PyTorch's stats finds a bad segment only on the way, so its text is made before any is written.
        Command::Stats { file } => {
            reference::stats(load(&file)?).map_err(|source| CliError::Load { path: file, source })?
        }
        Command::Trace { file } => {
            let text = reference::trace_text(load(&file)?).map_err(|source| CliError::Load { path: file, source })?;
            // The largest output of all: written line by line, never held whole.
            return write!(out, "{text}").map_err(CliError::stdout);
        }
        Command::Info { file, json } => {
            let i = info::info(load(&file)?);
            if json {
                info_text::json(&i)?
            } else {
                return info_text::text(out, &file, &i).map_err(CliError::stdout);
            }
        }
        Command::Live { file, at, device, json, top, by: Some(by), library } => {
            let opts = group_cmds::ByOptions::parse(Some(&by), &library)?;
            return group_cmds::live_by(out, &file, load(&file)?, &at, device, &opts, json, top);
        }
        Command::Live { file, at, device, json, top, by: None, library } => {
            let opts = group_cmds::ByOptions::parse(None, &library)?;
            return analysis_cmds::live(out, &file, load(&file)?, &at, device, json, top, &opts);
        }
        Command::Insights { file, device, json, by: Some(by), library } => {
            let opts = group_cmds::ByOptions::parse(Some(&by), &library)?;
            group_cmds::growth_by(&file, load(&file)?, device, &opts, json)?
        }
        Command::Insights { file, device, json, by: None, .. } => {
            analysis_cmds::insights(&file, load(&file)?, device, json)?
        }
        Command::Oom { file, device, json } => analysis_cmds::oom(&file, load(&file)?, device, json)?,
        Command::Layout { file, device, view, detail, json } => {
            layout_cmd::layout(load(&file)?, device, view, detail, json)?
        }
        Command::Fragmentation { file, device, points, json } => {
            analysis_cmds::fragmentation(&file, load(&file)?, device, points, json)?
        }
        Command::Compare { a, b, html: Some(output), device, .. } => {
            let opts = html::PageOptions { view: None, device, filter_freed: false, compare: true };
            return write_page(&[&a, &b], &output, &opts, out);
        }
        Command::Compare { a, b, device, top, by, library, json, html: None } => {
            let by = analysis_cmds::CompareBy::parse(&by, &library)?;
            analysis_cmds::compare(&a, load(&a)?, &b, load(&b)?, device, top, &by, json)?
        }
        Command::Categories { file, device, points, json, by, library, profile } => {
            let by = by.as_deref().map(|b| group_cmds::ByOptions::parse(Some(b), &library)).transpose()?;
            let bytes = analysis_cmds::read_bytes(&file)?;
            let profile = profile.map(|p| analysis_cmds::read_bytes(&p).map(|b| (p, b))).transpose()?;
            let how = analysis_cmds::CategoriesOptions {
                points,
                by: by.as_ref(),
                profile: profile.as_ref().map(|(p, b)| (p.as_str(), b.as_slice())),
                json,
            };
            return analysis_cmds::categories(out, &file, &bytes, device, &how);
        }
        Command::Flame { file, at, lifetime, device, json, by, library } => {
            let by = by.as_deref().map(|b| group_cmds::ByOptions::parse(Some(b), &library)).transpose()?;
            return analysis_cmds::flame(out, load(&file)?, &at, lifetime.as_deref(), device, by.as_ref(), json);
        }
        Command::Ranks { paths, json } => ranks::ranks(&paths, json)?,
        Command::Export { files, format: analysis_cmds::ExportFormat::Parquet, output, .. } => {
            let dir =
                output.ok_or_else(|| CliError::Usage("--format parquet needs an output folder: -o DIR".into()))?;
            parquet_export::export(&files, &dir)?
        }
        Command::Export { files, format, at, device, output } => {
            let [file] = files.as_slice() else {
                let message = format!("--format {format:?} takes one snapshot, not {}", files.len());
                return Err(CliError::Usage(message.to_lowercase()));
            };
            let text = analysis_cmds::export(file, load(file)?, &at, device, format)?;
            match output {
                Some(path) => return write_file(&path, text.as_bytes()),
                None => text,
            }
        }
    };
    out.write_all(text.as_bytes()).map_err(CliError::stdout)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let done = run(cli, &mut out).and_then(|()| out.flush().map_err(CliError::stdout));
    match done {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`| head`): what it read was what it wanted.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memviz: error: {e}");
            ExitCode::FAILURE
        }
    }
}
