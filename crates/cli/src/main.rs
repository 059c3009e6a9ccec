//! # memviz
//!
//! The command line of memviz: the same answers as the viewer, as text and JSON.
//! `memviz stats FILE` and `memviz trace FILE` print exactly what PyTorch's
//! `python -m torch.cuda._memory_viz stats|trace FILE` prints; `memviz info FILE` summarizes.
//! Every command reads `-` as standard input. Errors are one line on stderr and exit status 1.

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use memviz_core::{info, reference, Snapshot};

mod info_text;

/// Viewer and command line for PyTorch CUDA memory snapshots.
#[derive(Parser)]
#[command(name = "memviz", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// How the allocator has filled its segments (same text as PyTorch's `_memory_viz stats`).
    Stats {
        /// Snapshot pickle (or JSON); `-` for standard input.
        file: String,
    },
    /// Every trace entry in a Pythonic style (same text as PyTorch's `_memory_viz trace`).
    Trace {
        /// Snapshot pickle (or JSON); `-` for standard input.
        file: String,
    },
    /// Devices, entries per action, time span, true peaks, segments, inferred recording settings.
    Info {
        /// Snapshot pickle (or JSON); `-` for standard input.
        file: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Bytes read from a file at a time: the whole file is never held in memory.
const CHUNK_BYTES: usize = 4 << 20;

fn load(path: &str) -> Result<Snapshot, String> {
    let (mut reader, total): (Box<dyn Read>, Option<u64>) = if path == "-" {
        (Box::new(std::io::stdin().lock()), None)
    } else {
        let f = std::fs::File::open(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let len = f.metadata().ok().map(|m| m.len());
        (Box::new(f), len)
    };
    let mut loader = memviz_core::Loader::new(total);
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read {path}: {e}")),
        };
        loader.feed(&buf[..n]).map_err(|e| format!("{path}: {e}"))?;
    }
    loader.finish().map_err(|e| format!("{path}: {e}"))
}

fn run(cli: Cli) -> Result<String, String> {
    match cli.command {
        Command::Stats { file } => reference::stats(&load(&file)?).map_err(|e| format!("{file}: {e}")),
        Command::Trace { file } => reference::trace(&load(&file)?).map_err(|e| format!("{file}: {e}")),
        Command::Info { file, json } => {
            let snap = load(&file)?;
            let i = info::info(&snap);
            Ok(if json { info_text::json(&i) } else { info_text::text(&file, &i) })
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("memviz: error: {e}");
            ExitCode::FAILURE
        }
    }
}
