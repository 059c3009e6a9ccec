//! A small mutation fuzzer for `memviz_core` that needs neither nightly nor libFuzzer.
//!
//! It mutates seed files (the fixtures and the test data) with a fixed-seed PRNG, runs every input
//! through `load`, the chunked `Loader`, `stats`, `trace` and `info`, and records panics (with the
//! input), inputs that take longer than a second, and disagreements between `load` and `Loader`.
//! Inputs that give an outcome not seen before (the error kind and reason, or the warnings of a
//! successful load) join the corpus, a cheap stand-in for coverage feedback.
//!
//! ```text
//! cargo run --release --manifest-path fuzz/loop/Cargo.toml -- --seconds 300
//! ```
//!
//! Options: `--seconds N` (default 60), `--seed N`, `--out DIR` (default `fuzz/artifacts/loop`),
//! and any number of seed files or folders (default: `tests/data/*`).

use std::collections::{HashMap, HashSet};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memviz_core::{info, load, reference, Error, Loader};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Bytes a mutation likes to write: opcodes and boundary values.
const INTERESTING: &[u8] = b"\x00\x01\x7f\x80\xff()]}N.012aesuldt\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x94\x95\x96\x98KMJhjqrGXBCTUVIFLSpg";
const LENGTHS: &[u64] = &[0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 1 << 32, 1 << 60, u64::MAX];

fn mutate(rng: &mut Rng, input: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    let mut b = input.to_vec();
    let rounds = 1 + rng.below(8);
    for _ in 0..rounds {
        let n = b.len();
        match rng.below(11) {
            0 if n > 0 => {
                let i = rng.below(n);
                b[i] ^= 1 << rng.below(8);
            }
            1 if n > 0 => {
                let i = rng.below(n);
                b[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => {
                let i = rng.below(n + 1);
                let len = 1 + rng.below(8);
                let ins: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                b.splice(i..i, ins);
            }
            3 => {
                let i = rng.below(n + 1);
                b.insert(i, INTERESTING[rng.below(INTERESTING.len())]);
            }
            4 if n > 0 => {
                let i = rng.below(n);
                let len = 1 + rng.below(64.min(n - i));
                b.drain(i..i + len);
            }
            5 if n > 0 && n < 1 << 20 => {
                let i = rng.below(n);
                let len = 1 + rng.below(256.min(n - i));
                let piece = b[i..i + len].to_vec();
                let to = rng.below(n + 1);
                b.splice(to..to, piece);
            }
            6 if n > 0 => {
                b.truncate(rng.below(n));
            }
            7 if !others.is_empty() => {
                // Splice in a piece of another input.
                let o = &others[rng.below(others.len())];
                if !o.is_empty() {
                    let i = rng.below(o.len());
                    let len = 1 + rng.below(512.min(o.len() - i));
                    let to = rng.below(n + 1);
                    b.splice(to..to, o[i..i + len].iter().copied());
                }
            }
            8 if n > 8 => {
                // Overwrite what may be a length field with a boundary value.
                let i = rng.below(n - 8);
                let v = LENGTHS[rng.below(LENGTHS.len())].to_le_bytes();
                let w = [1usize, 2, 4, 8][rng.below(4)];
                b[i..i + w].copy_from_slice(&v[..w]);
            }
            9 if n > 0 => {
                // Repeat one byte many times (deep nesting, long runs of MARK or APPEND).
                let i = rng.below(n);
                let byte = INTERESTING[rng.below(INTERESTING.len())];
                let len = 1 + rng.below(4096);
                b.splice(i..i, std::iter::repeat_n(byte, len));
            }
            _ => {
                if n > 0 {
                    let i = rng.below(n);
                    b[i] = b[i].wrapping_add(1 + rng.below(3) as u8);
                }
            }
        }
    }
    b
}

/// A short description of what an input did, used to decide whether it found something new.
fn outcome(r: &Result<memviz_core::Snapshot, Error>) -> String {
    match r {
        Ok(s) => {
            let mut w: Vec<String> = s.warnings.iter().map(|w| format!("{:?}", w.kind)).collect();
            w.sort();
            format!(
                "ok stats={} trace={} {}",
                reference::stats(s).is_ok(),
                reference::trace(s).is_ok(),
                w.join(",")
            )
        }
        Err(e) => {
            let d = format!("{e:?}");
            // Keep the variant and the start of the reason, not offsets or numbers.
            let words: String = d.split(|c: char| !c.is_ascii_alphabetic()).filter(|w| w.len() > 2).take(8).collect::<Vec<_>>().join(" ");
            format!("err {words}")
        }
    }
}

fn exercise(data: &[u8], chunk: usize) -> Result<String, String> {
    let whole = load(data);
    if let Ok(s) = &whole {
        let _ = reference::stats(s);
        let _ = reference::trace(s);
        let _ = info::info(s);
        let _ = s.default_device();
    }
    let mut l = Loader::new(if chunk % 2 == 0 { Some(data.len() as u64) } else { None });
    let streamed = data.chunks(chunk.max(1)).try_for_each(|c| l.feed(c)).and_then(|()| l.finish());
    if whole.is_ok() != streamed.is_ok() {
        return Err(format!("load and Loader disagree: {:?} vs {:?}", whole.as_ref().err(), streamed.as_ref().err()));
    }
    if let Err(e) = &whole {
        let m = e.to_string();
        if m.is_empty() || m.contains('\n') || m.len() > 2000 {
            return Err(format!("error message empty, several lines or long: {:?}", m.chars().take(200).collect::<String>()));
        }
    }
    Ok(outcome(&whole))
}

fn collect(path: &Path, out: &mut Vec<Vec<u8>>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path).into_iter().flatten().flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            collect(&p, out);
        }
    } else if let Ok(m) = std::fs::metadata(path) {
        // Small files keep the execution rate up; big ones add little.
        if m.len() <= 256 * 1024 && !path.extension().is_some_and(|e| e == "txt" || e == "md") {
            if let Ok(b) = std::fs::read(path) {
                out.push(b);
            }
        }
    }
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut seconds = 60u64;
    let mut seed = 0x6d65_6d76_697a_u64;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out_dir = repo.join("fuzz/artifacts/loop");
    let mut seeds_from: Vec<PathBuf> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--seconds" => {
                seconds = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(seconds);
                i += 1;
            }
            "--seed" => {
                seed = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(seed);
                i += 1;
            }
            "--out" => {
                if let Some(p) = args.get(i + 1) {
                    out_dir = PathBuf::from(p);
                }
                i += 1;
            }
            other => seeds_from.push(PathBuf::from(other)),
        }
        i += 1;
    }
    if seeds_from.is_empty() {
        seeds_from = vec![repo.join("tests/data/real"), repo.join("tests/data/synth"), repo.join("tests/data/hostile")];
    }
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    for p in &seeds_from {
        collect(p, &mut corpus);
    }
    corpus.push(b"\x80\x04}\x94(\x8c\x08segments\x94]\x94\x8c\x0ddevice_traces\x94]\x94]\x94au.".to_vec());
    let seeds = corpus.len();
    eprintln!("fuzz_loop: {seeds} seed inputs, {seconds} s, seed {seed}, artifacts in {}", out_dir.display());

    // Panics are caught and recorded; keep their messages off the terminal.
    let last_panic: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    {
        let slot = Arc::clone(&last_panic);
        panic::set_hook(Box::new(move |info| {
            let loc = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
            let msg = info.payload().downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| info.payload().downcast_ref::<String>().cloned()).unwrap_or_default();
            if let Ok(mut s) = slot.lock() {
                *s = Some(format!("{loc}: {msg}"));
            }
        }));
    }

    let mut rng = Rng(seed | 1);
    let mut seen: HashSet<String> = HashSet::new();
    let mut crashes: HashMap<String, usize> = HashMap::new();
    let mut slow = 0usize;
    let mut slowest = Duration::ZERO;
    let mut execs = 0u64;
    let start = Instant::now();
    let deadline = start + Duration::from_secs(seconds);
    let mut next_report = start + Duration::from_secs(10);
    let _ = std::fs::create_dir_all(&out_dir);
    while Instant::now() < deadline {
        let base = &corpus[rng.below(corpus.len())];
        let input = mutate(&mut rng, base, &corpus[..seeds]);
        if input.len() > 4 << 20 {
            continue;
        }
        let chunk = 1 + rng.below(4096);
        let t0 = Instant::now();
        let r = panic::catch_unwind(AssertUnwindSafe(|| exercise(&input, chunk)));
        let took = t0.elapsed();
        execs += 1;
        slowest = slowest.max(took);
        let problem = match r {
            Ok(Ok(sig)) => {
                if seen.insert(sig) && corpus.len() < 20_000 {
                    corpus.push(input.clone());
                }
                None
            }
            Ok(Err(msg)) => Some(format!("check failed: {msg}")),
            Err(_) => Some(format!("panic at {}", last_panic.lock().ok().and_then(|s| s.clone()).unwrap_or_default())),
        };
        if let Some(p) = problem {
            // One entry per kind of problem: the panic location, or the check that failed.
            let key: String = p.split(['"', '\'']).next().unwrap_or_default().chars().take(160).collect();
            let n = crashes.entry(key.clone()).or_insert(0);
            *n += 1;
            if *n == 1 {
                let f = out_dir.join(format!("crash-{:016x}.bin", fnv(&input)));
                let _ = std::fs::write(&f, &input);
                eprintln!("NEW: {key}\n     input saved to {}", f.display());
            }
        }
        if took > Duration::from_secs(1) {
            slow += 1;
            let f = out_dir.join(format!("slow-{:016x}.bin", fnv(&input)));
            let _ = std::fs::write(&f, &input);
            eprintln!("SLOW: {} bytes took {took:?}; saved to {}", input.len(), f.display());
        }
        if Instant::now() >= next_report {
            next_report += Duration::from_secs(10);
            let s = start.elapsed().as_secs_f64();
            eprintln!(
                "{:>5.0} s  {execs} execs ({:.0}/s)  corpus {}  outcomes {}  problems {}  slow {slow}",
                s,
                execs as f64 / s,
                corpus.len(),
                seen.len(),
                crashes.len()
            );
        }
    }
    let s = start.elapsed().as_secs_f64();
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.trim_start_matches("VmHWM:").trim().to_owned()))
        .unwrap_or_default();
    println!("ran {s:.0} s: {execs} executions ({:.0}/s), {} distinct outcomes, corpus {}", execs as f64 / s, seen.len(), corpus.len());
    println!("slowest input: {slowest:?}; inputs over 1 s: {slow}; peak RSS {hwm}");
    if crashes.is_empty() {
        println!("no panics, no disagreements");
    } else {
        println!("{} distinct problems:", crashes.len());
        let mut v: Vec<_> = crashes.into_iter().collect();
        v.sort();
        for (k, n) in v {
            println!("  {n:>6} x {k}");
        }
        std::process::exit(1);
    }
}
