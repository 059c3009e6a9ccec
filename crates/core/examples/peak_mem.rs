//! Loads a snapshot and prints how long it took, the file size and the process's peak memory
//! (`VmHWM` from `/proc/self/status`, Linux only), so peak memory can be stated as a multiple of
//! the file size.
//!
//! ```text
//! cargo run --release -p memviz-core --example peak_mem -- FILE [--whole] [--chunk BYTES]
//! ```
//!
//! By default the file is streamed through [`memviz_core::Loader`] in 1 MiB chunks, as a viewer
//! would; `--whole` reads it into memory first and calls [`memviz_core::load`].

use std::io::Read;
use std::time::Instant;

fn status_kib(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.iter().find(|a| !a.starts_with("--") && a.parse::<usize>().is_err()) else {
        eprintln!("usage: peak_mem FILE [--whole] [--chunk BYTES]");
        std::process::exit(2);
    };
    let whole = args.iter().any(|a| a == "--whole");
    let chunk: usize = args
        .iter()
        .position(|a| a == "--chunk")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 20);
    let size = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let base_kib = status_kib("VmRSS:").unwrap_or(0);
    let t0 = Instant::now();
    let result = if whole {
        std::fs::read(path).map_err(|e| e.to_string()).and_then(|b| memviz_core::load(&b).map_err(|e| e.to_string()))
    } else {
        (|| -> Result<memviz_core::Snapshot, String> {
            let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
            let mut loader = memviz_core::Loader::new(Some(size));
            let mut buf = vec![0u8; chunk.max(1)];
            loop {
                let n = f.read(&mut buf).map_err(|e| e.to_string())?;
                if n == 0 {
                    break;
                }
                loader.feed(&buf[..n]).map_err(|e| e.to_string())?;
            }
            loader.finish().map_err(|e| e.to_string())
        })()
    };
    let elapsed = t0.elapsed();
    let snap = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let hwm_kib = status_kib("VmHWM:").unwrap_or(0);
    let rss_kib = status_kib("VmRSS:").unwrap_or(0);
    let entries: usize = snap.devices.iter().map(|d| d.trace.len()).sum();
    let mb = size as f64 / 1e6;
    let secs = elapsed.as_secs_f64();
    println!("file:        {path}");
    println!(
        "mode:        {}",
        if whole {
            "whole file in memory, load()".to_owned()
        } else {
            format!("streamed, Loader in {chunk}-byte chunks")
        }
    );
    println!("file size:   {size} bytes ({mb:.1} MB)");
    println!(
        "entries:     {entries} in {} devices, {} segments, {} stacks, {} frames",
        snap.devices.len(),
        snap.segments.len(),
        snap.stacks.len(),
        snap.frames.len()
    );
    println!("elapsed:     {:.3} s ({:.0} MB/s)", secs, mb / secs.max(1e-9));
    println!(
        "peak RSS:    {:.1} MB ({:.2}x file size; {:.1} MB before loading)",
        hwm_kib as f64 * 1024.0 / 1e6,
        hwm_kib as f64 * 1024.0 / size.max(1) as f64,
        base_kib as f64 * 1024.0 / 1e6
    );
    println!(
        "RSS after:   {:.1} MB (model heap ~{:.1} MB)",
        rss_kib as f64 * 1024.0 / 1e6,
        snap.heap_bytes() as f64 / 1e6
    );
}
