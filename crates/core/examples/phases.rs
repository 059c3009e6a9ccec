//! Times the phases of opening a snapshot as the page does: decoding (fed in 1 MiB chunks from
//! memory), building the model, and laying out the first plot; prints milliseconds per phase.
//!
//! ```text
//! cargo run --release -p memviz-core --example phases -- FILE [RUNS]
//! ```

use std::time::Instant;

use memviz_core::plot::{choose_device, PlotData};
use memviz_core::timeline::{Mode, Options};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: phases FILE [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    for run in 0..runs {
        let t0 = Instant::now();
        let mut loader = memviz_core::Loader::new(Some(bytes.len() as u64));
        for chunk in bytes.chunks(1 << 20) {
            if let Err(e) = loader.feed(chunk) {
                eprintln!("{path}: {e}");
                std::process::exit(1);
            }
        }
        let t1 = Instant::now();
        let snap = match loader.finish() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(1);
            }
        };
        let t2 = Instant::now();
        let device_pos = choose_device(&snap, None);
        let options = Options { max_entries: 15_000, mode: Mode::Allocations, hide_freed: false, focus_rows: None };
        let plot = PlotData::build(&snap, device_pos, options);
        let t3 = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        println!(
            "run {run}: parse {:.1} ms, model {:.1} ms, layout {:.1} ms ({} bands, {} steps)",
            ms(t0, t1),
            ms(t1, t2),
            ms(t2, t3),
            plot.layout.band_element.len(),
            plot.layout.steps
        );
    }
}
