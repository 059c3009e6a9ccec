//! Reading a 1,000,000-entry snapshot (about 90 MB): decoding the pickle alone, `load` from a
//! slice, and the chunked `Loader` in 1 MiB chunks. Throughput is reported in bytes/s.
//!
//! The input is `target/bench-1m.pickle`. When it is absent it is made by
//! `python3 tests/gen/big_snapshot.py --entries 1000000 --out target/bench-1m.pickle` (a real
//! trace replayed, as PyTorch writes it), or, without Python or the fixture it replays, by the
//! generator below, which writes the same shape: trace entries {action, addr, size, stream,
//! time_us, frames} with 3 to 60 frames each, most frame lists shared through the memo, protocol 4
//! with CPython's framing. `MEMVIZ_BENCH_FILE=path` benchmarks another file instead;
//! `MEMVIZ_BENCH_BUILTIN=1` uses the built-in generator (`target/bench-1m-builtin.pickle`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const ENTRIES: usize = 1_000_000;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn input() -> Vec<u8> {
    if let Ok(p) = std::env::var("MEMVIZ_BENCH_FILE") {
        return std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    }
    if std::env::var_os("MEMVIZ_BENCH_BUILTIN").is_some() {
        // The built-in generator only (for checking it, or where Python is missing).
        let path = workspace().join("target/bench-1m-builtin.pickle");
        if !path.is_file() {
            let _ = std::fs::create_dir_all(workspace().join("target"));
            std::fs::write(&path, generate(ENTRIES, 0x5eed)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        return std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let path = workspace().join("target/bench-1m.pickle");
    if !path.is_file() {
        let _ = std::fs::create_dir_all(workspace().join("target"));
        let script = workspace().join("tests/gen/big_snapshot.py");
        let made = script.is_file()
            && Command::new("python3")
                .arg(&script)
                .args(["--entries", &ENTRIES.to_string(), "--out"])
                .arg(&path)
                .status()
                .is_ok_and(|s| s.success());
        if !made {
            eprintln!("note: {} could not run; using the built-in generator", script.display());
            let bytes = generate(ENTRIES, 0x5eed);
            std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn bench(c: &mut Criterion) {
    let bytes = input();
    let mut g = c.benchmark_group("read_1m_entries");
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("pickle_parse", |b| b.iter(|| memviz_core::pickle::parse(&bytes).map(|d| d.str_count())));
    g.bench_function("load", |b| b.iter(|| memviz_core::load(&bytes).map(|s| s.devices.len())));
    g.bench_function("loader_1mib_chunks", |b| {
        b.iter(|| {
            let mut l = memviz_core::Loader::new(Some(bytes.len() as u64));
            for c in bytes.chunks(1 << 20) {
                if l.feed(c).is_err() {
                    break;
                }
            }
            l.finish().map(|s| s.devices.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

/// Writes a protocol-4 snapshot pickle the way CPython's pickler lays it out.
#[allow(clippy::too_many_lines)] // writes a whole snapshot in CPython's order, top to bottom
fn generate(entries: usize, seed: u64) -> Vec<u8> {
    let mut w =
        Gen { out: Vec::new(), frame: Vec::new(), memo_len: 0, strs: std::collections::HashMap::new(), rng: seed | 1 };
    // Frames and stacks: 600 distinct frames, 2,000 stacks of 3 to 60 frames.
    let files = [
        "/home/user/project/train.py",
        "/home/user/project/model.py",
        "/opt/conda/lib/python3.12/site-packages/torch/nn/modules/module.py",
        "/opt/conda/lib/python3.12/site-packages/torch/_tensor.py",
        "??:0",
        "",
    ];
    let frames: Vec<(usize, i64, String)> =
        (0..600).map(|k| (k % files.len(), (k * 37 % 2000) as i64, format!("function_{k}"))).collect();
    let stacks: Vec<Vec<usize>> = (0..2000)
        .map(|_| {
            let n = 3 + w.next() as usize % 58;
            (0..n).map(|_| w.next() as usize % frames.len()).collect()
        })
        .collect();
    let mut frame_memo: Vec<Option<u32>> = vec![None; frames.len()];
    let mut stack_memo: Vec<Option<u32>> = vec![None; stacks.len()];

    w.out.extend_from_slice(&[0x80, 4]);
    w.op(b'}');
    w.memoize();
    w.op(b'(');
    w.str("segments");
    w.op(b']');
    w.memoize();
    w.str("device_traces");
    w.op(b']');
    w.memoize();
    w.op(b']');
    w.memoize();
    let base: u64 = 139_724_914_106_368;
    let mut t: u64 = 1_764_412_345_678_000;
    let actions = ["alloc", "free_requested", "free_completed", "segment_alloc", "segment_free"];
    for k in 0..entries {
        if k % 1000 == 0 {
            if k > 0 {
                w.op(b'e');
            }
            w.op(b'(');
        }
        let action = actions[match w.next() % 100 {
            0..=39 => 0,
            40..=69 => 1,
            70..=97 => 2,
            98 => 3,
            _ => 4,
        }];
        t += 1 + w.next() % 900;
        w.op(b'}');
        w.memoize();
        w.op(b'(');
        w.str("action");
        w.str(action);
        w.str("addr");
        let addr = base + (w.next() % 4_000_000) * 512;
        w.long(addr);
        w.str("size");
        let size = 512 * (1 + w.next() % 200_000);
        w.int(size);
        w.str("stream");
        w.int(0);
        w.str("time_us");
        w.long(t);
        w.str("frames");
        // Most entries reuse a stack written before; some write a fresh copy of one.
        let s = (w.next() % stacks.len() as u64) as usize;
        match stack_memo[s] {
            Some(idx) if w.next() % 10 != 0 => w.get(idx),
            _ => {
                w.op(b']');
                let idx = w.memoize();
                stack_memo[s] = Some(idx);
                w.op(b'(');
                for &f in &stacks[s] {
                    match frame_memo[f] {
                        Some(fi) => w.get(fi),
                        None => {
                            let (file, line, name) = &frames[f];
                            w.op(b'}');
                            frame_memo[f] = Some(w.memoize());
                            w.op(b'(');
                            w.str("filename");
                            w.str(files[*file]);
                            w.str("line");
                            w.int(*line as u64);
                            w.str("name");
                            w.str(name);
                            w.op(b'u');
                        }
                    }
                }
                w.op(b'e');
            }
        }
        w.op(b'u');
        w.end_frame_if_full();
    }
    if entries > 0 {
        w.op(b'e');
    }
    w.op(b'a'); // the trace into device_traces
    w.op(b'u');
    w.op(b'.');
    w.flush_frame();
    w.out
}

struct Gen {
    out: Vec<u8>,
    frame: Vec<u8>,
    memo_len: u32,
    strs: std::collections::HashMap<String, u32>,
    rng: u64,
}

impl Gen {
    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn op(&mut self, o: u8) {
        self.frame.push(o);
    }

    fn memoize(&mut self) -> u32 {
        self.frame.push(0x94);
        self.memo_len += 1;
        self.memo_len - 1
    }

    fn get(&mut self, idx: u32) {
        if idx < 256 {
            self.frame.extend_from_slice(&[b'h', idx as u8]);
        } else {
            self.frame.push(b'j');
            self.frame.extend_from_slice(&idx.to_le_bytes());
        }
    }

    /// Strings are memoized by content, as interned strings are.
    fn str(&mut self, s: &str) {
        if let Some(&idx) = self.strs.get(s) {
            self.get(idx);
            return;
        }
        self.frame.push(0x8c);
        self.frame.push(s.len() as u8);
        self.frame.extend_from_slice(s.as_bytes());
        let idx = self.memoize();
        self.strs.insert(s.to_owned(), idx);
    }

    fn int(&mut self, x: u64) {
        if x < 256 {
            self.frame.extend_from_slice(&[b'K', x as u8]);
        } else if x < 65536 {
            self.frame.push(b'M');
            self.frame.extend_from_slice(&(x as u16).to_le_bytes());
        } else if x < 1 << 31 {
            self.frame.push(b'J');
            self.frame.extend_from_slice(&(x as u32).to_le_bytes());
        } else {
            self.long(x);
        }
    }

    fn long(&mut self, x: u64) {
        let b = x.to_le_bytes();
        let mut n = 8;
        while n > 1 && b[n - 1] == 0 && b[n - 2] & 0x80 == 0 {
            n -= 1;
        }
        let extra = usize::from(b[n - 1] & 0x80 != 0);
        self.frame.push(0x8a);
        self.frame.push((n + extra) as u8);
        self.frame.extend_from_slice(&b[..n]);
        if extra == 1 {
            self.frame.push(0);
        }
    }

    fn end_frame_if_full(&mut self) {
        if self.frame.len() >= 64 * 1024 {
            self.flush_frame();
        }
    }

    fn flush_frame(&mut self) {
        if self.frame.is_empty() {
            return;
        }
        self.out.push(0x95);
        self.out.extend_from_slice(&(self.frame.len() as u64).to_le_bytes());
        self.out.append(&mut self.frame);
    }
}
