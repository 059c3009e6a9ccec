//! The Active Memory Timeline of a 1,000,000-entry snapshot (`target/bench-1m.pickle`, made by
//! `cargo bench --bench read` or `python3 tests/gen/big_snapshot.py --entries 1000000 --out
//! target/bench-1m.pickle`; `MEMVIZ_BENCH_FILE=path` for another file): building the layout, and
//! one frame's worth of drawing queries (for a window of 2,000 pixel columns: the envelope of the
//! stack per column, the sample steps, and the sweep of the edges of the bands that show), whole
//! trace and zoomed in; a hover (the stack at a step and the band under a point); and the runs of
//! user metadata of the strip above the plot.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use memviz_core::timeline::{Layout, Options};

fn snapshot() -> Option<memviz_core::snapshot::Snapshot> {
    let path = std::env::var("MEMVIZ_BENCH_FILE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-1m.pickle"));
    let Ok(bytes) = std::fs::read(&path) else {
        eprintln!("{}: missing; see this file's docs", path.display());
        return None;
    };
    memviz_core::load(&bytes).ok()
}

/// The bands of a window at least half a pixel tall on a 600-pixel-high plot.
fn visible(l: &Layout, s_left: f64, s_right: f64) -> Vec<u32> {
    let min_bytes = l.peak_bytes as f64 / 1200.0;
    let mut bands = l.bands_overlapping(s_left as u32, s_right as u32);
    bands.retain(|&b| l.band_size(b) as f64 >= min_bytes);
    bands.sort_unstable();
    bands
}

fn bench(c: &mut Criterion) {
    let Some(snap) = snapshot() else { return };
    let dev = snap.default_device().unwrap_or(0);
    let mut g = c.benchmark_group("layout-1m");
    g.sample_size(10);
    g.bench_function("build", |b| b.iter(|| Layout::build(&snap, dev, Options::default())));
    // The strip's runs of user metadata, part of every plot's build (a file without metadata
    // is told by one pass over the column).
    g.bench_function("metadata runs", |b| b.iter(|| memviz_core::analysis::metadata_runs::metadata_runs(&snap, dev)));
    let l = Layout::build(&snap, dev, Options::default());
    let steps = f64::from(l.steps);
    for (name, s_left, s_right) in [("frame-whole", 0.0, steps), ("frame-zoomed", steps * 0.5, steps * 0.5 + 3000.0)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let bands = visible(&l, s_left, s_right);
                let samples = l.sample_steps(s_left, s_right, 2000);
                let bounds: Vec<f64> =
                    (0..=2000).map(|c| s_left + (s_right - s_left) * f64::from(c) / 2000.0).collect();
                (l.band_edges(&bands, &samples).vertex_count(), l.column_envelopes(&bounds).len())
            })
        });
    }
    g.bench_function("envelopes-whole", |b| {
        let bounds: Vec<f64> = (0..=2000).map(|c| steps * f64::from(c) / 2000.0).collect();
        b.iter(|| l.column_envelopes(&bounds).len())
    });
    let mut stack = Vec::new();
    g.bench_function("hover", |b| {
        let mut k = 0u64;
        b.iter(|| {
            k = k.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let x = (k >> 11) as f64 / (1u64 << 53) as f64 * steps;
            l.offsets_at(x, &mut stack);
            l.hit_test(x, l.live_bytes_at(x) as f64 / 2.0)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
