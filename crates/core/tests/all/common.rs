//! Helpers shared by the integration tests: where the test data lives, readable diffs, and a
//! small pickle writer for building snapshots in code (every protocol, with memoized sharing).

use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

// The one place that knows where test data lives (shared with the unit tests); every helper
// panics with the path when the data is missing.
#[path = "../../src/test_fixtures.rs"]
#[allow(dead_code)] // not every helper is used by both kinds of tests
mod test_fixtures;

pub use test_fixtures::{fixture, fixture_dir, fixture_files, fixture_files_with};

/// The folders that hold snapshots with `.ref.stats.txt` / `.ref.trace.txt` next to them.
pub const REFERENCE_DIRS: [&str; 2] = ["real", "synth"];

/// Bytes of a file; panics with the path when it cannot be read.
pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `None` when equal, else a message naming the first differing line.
pub fn first_diff(expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    let el: Vec<&str> = expected.split('\n').collect();
    let al: Vec<&str> = actual.split('\n').collect();
    for i in 0..el.len().max(al.len()) {
        let (e, a) = (el.get(i), al.get(i));
        if e != a {
            return Some(format!(
                "first difference at line {} (expected {} lines, got {}):\n  expected: {}\n  actual:   {}",
                i + 1,
                el.len(),
                al.len(),
                e.map_or_else(|| "<end of text>".to_owned(), |s| format!("{s:?}")),
                a.map_or_else(|| "<end of text>".to_owned(), |s| format!("{s:?}")),
            ));
        }
    }
    Some("texts differ in a way split('\\n') does not show".into())
}

/// A Python value to pickle.
#[derive(Clone, Debug)]
pub enum Py {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    // Kept so the writer covers every type a snapshot may hold; no test writes bytes yet.
    #[allow(dead_code)]
    Bytes(Vec<u8>),
    List(Vec<Py>),
    Tuple(Vec<Py>),
    Dict(Vec<(Py, Py)>),
    /// One object referenced from several places: written once, then fetched from the memo.
    Shared(Rc<Py>),
}

pub fn s(x: &str) -> Py {
    Py::Str(x.to_owned())
}

pub fn i(x: i128) -> Py {
    Py::Int(x)
}

pub fn list(items: Vec<Py>) -> Py {
    Py::List(items)
}

pub fn dict(pairs: Vec<(&str, Py)>) -> Py {
    Py::Dict(pairs.into_iter().map(|(k, v)| (s(k), v)).collect())
}

pub fn shared(v: Py) -> Py {
    Py::Shared(Rc::new(v))
}

/// Pickles a value with the given protocol (0 to 5), the way CPython lays the opcodes out.
pub fn dumps(v: &Py, protocol: u8) -> Vec<u8> {
    let mut w = Writer { out: Vec::new(), protocol, memo: HashMap::new(), next: 0 };
    if protocol >= 2 {
        w.out.extend_from_slice(&[0x80, protocol]);
    }
    let body_start = w.out.len();
    w.value(v);
    w.out.push(b'.');
    if protocol >= 4 {
        // One FRAME around everything, as CPython does for small pickles.
        let body = w.out.split_off(body_start);
        w.out.push(0x95);
        w.out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        w.out.extend_from_slice(&body);
    }
    w.out
}

struct Writer {
    out: Vec<u8>,
    protocol: u8,
    memo: HashMap<*const Py, u32>,
    next: u32,
}

impl Writer {
    fn put(&mut self) -> u32 {
        let idx = self.next;
        self.next += 1;
        match self.protocol {
            0 => self.out.extend_from_slice(format!("p{idx}\n").as_bytes()),
            4 | 5 => self.out.push(0x94),
            _ if idx < 256 => {
                self.out.push(b'q');
                self.out.push(idx as u8);
            }
            _ => {
                self.out.push(b'r');
                self.out.extend_from_slice(&idx.to_le_bytes());
            }
        }
        idx
    }

    fn get(&mut self, idx: u32) {
        match self.protocol {
            0 => self.out.extend_from_slice(format!("g{idx}\n").as_bytes()),
            _ if idx < 256 => {
                self.out.push(b'h');
                self.out.push(idx as u8);
            }
            _ => {
                self.out.push(b'j');
                self.out.extend_from_slice(&idx.to_le_bytes());
            }
        }
    }

    fn int(&mut self, x: i128) {
        let p = self.protocol;
        if p >= 1 && (0..256).contains(&x) {
            self.out.push(b'K');
            self.out.push(x as u8);
        } else if p >= 1 && (0..65536).contains(&x) {
            self.out.push(b'M');
            self.out.extend_from_slice(&(x as u16).to_le_bytes());
        } else if p >= 1 && i128::from(i32::MIN) <= x && x <= i128::from(i32::MAX) {
            self.out.push(b'J');
            self.out.extend_from_slice(&(x as i32).to_le_bytes());
        } else if p >= 2 {
            // LONG1: minimal little-endian two's complement.
            let bytes = x.to_le_bytes();
            let mut n = 16;
            while n > 1 {
                let top = bytes[n - 1];
                let next_sign = bytes[n - 2] & 0x80 != 0;
                if (top == 0 && !next_sign) || (top == 0xff && next_sign) {
                    n -= 1;
                } else {
                    break;
                }
            }
            self.out.push(0x8a);
            self.out.push(n as u8);
            self.out.extend_from_slice(&bytes[..n]);
        } else if i128::from(i64::MIN) <= x && x <= i128::from(i64::MAX) {
            self.out.extend_from_slice(format!("I{x}\n").as_bytes());
        } else {
            self.out.extend_from_slice(format!("L{x}L\n").as_bytes());
        }
    }

    fn string(&mut self, x: &str) {
        match self.protocol {
            0 => {
                self.out.push(b'V');
                for c in x.chars() {
                    match c {
                        '\\' => self.out.extend_from_slice(b"\\u005c"),
                        '\n' => self.out.extend_from_slice(b"\\u000a"),
                        '\r' => self.out.extend_from_slice(b"\\u000d"),
                        '\0' => self.out.extend_from_slice(b"\\u0000"),
                        c if (c as u32) < 256 => self.out.push(c as u32 as u8),
                        c if (c as u32) < 0x10000 => {
                            self.out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes())
                        }
                        c => self.out.extend_from_slice(format!("\\U{:08x}", c as u32).as_bytes()),
                    }
                }
                self.out.push(b'\n');
            }
            4 | 5 if x.len() < 256 => {
                self.out.push(0x8c);
                self.out.push(x.len() as u8);
                self.out.extend_from_slice(x.as_bytes());
            }
            _ => {
                self.out.push(b'X');
                self.out.extend_from_slice(&(x.len() as u32).to_le_bytes());
                self.out.extend_from_slice(x.as_bytes());
            }
        }
    }

    #[allow(clippy::too_many_lines)] // the pickle writer: one arm per value type
    fn value(&mut self, v: &Py) {
        let p = self.protocol;
        match v {
            Py::None => self.out.push(b'N'),
            Py::Bool(b) => {
                if p >= 2 {
                    self.out.push(if *b { 0x88 } else { 0x89 });
                } else {
                    self.out.extend_from_slice(if *b { b"I01\n" } else { b"I00\n" });
                }
            }
            Py::Int(x) => self.int(*x),
            Py::Float(f) => {
                if p >= 1 {
                    self.out.push(b'G');
                    self.out.extend_from_slice(&f.to_be_bytes());
                } else {
                    self.out.extend_from_slice(format!("F{f:?}\n").as_bytes());
                }
            }
            Py::Str(x) => self.string(x),
            Py::Bytes(b) => {
                if p >= 3 {
                    self.out.push(b'B');
                    self.out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                    self.out.extend_from_slice(b);
                } else {
                    // Older protocols have no bytes type; write a latin-1 string instead.
                    let text: String = b.iter().map(|&c| c as char).collect();
                    self.string(&text);
                }
            }
            Py::List(items) => {
                if p == 0 {
                    self.out.extend_from_slice(b"(l");
                    for x in items {
                        self.value(x);
                        self.out.push(b'a');
                    }
                } else {
                    self.out.push(b']');
                    for chunk in items.chunks(1000) {
                        self.out.push(b'(');
                        for x in chunk {
                            self.value(x);
                        }
                        self.out.push(b'e');
                    }
                }
            }
            Py::Tuple(items) => {
                if p >= 2 && items.len() <= 3 {
                    for x in items {
                        self.value(x);
                    }
                    self.out.push(match items.len() {
                        0 => b')',
                        1 => 0x85,
                        2 => 0x86,
                        _ => 0x87,
                    });
                } else {
                    self.out.push(b'(');
                    for x in items {
                        self.value(x);
                    }
                    self.out.push(b't');
                }
            }
            Py::Dict(pairs) => {
                if p == 0 {
                    self.out.extend_from_slice(b"(d");
                    for (k, x) in pairs {
                        self.value(k);
                        self.value(x);
                        self.out.push(b's');
                    }
                } else {
                    self.out.push(b'}');
                    for chunk in pairs.chunks(1000) {
                        self.out.push(b'(');
                        for (k, x) in chunk {
                            self.value(k);
                            self.value(x);
                        }
                        self.out.push(b'u');
                    }
                }
            }
            Py::Shared(rc) => {
                let key = Rc::as_ptr(rc);
                if let Some(&idx) = self.memo.get(&key) {
                    self.get(idx);
                } else {
                    // Containers are memoized before their items, as Python does (the value on
                    // the stack is the container itself, which its items then fill).
                    match &**rc {
                        Py::List(items) if p > 0 => {
                            self.out.push(b']');
                            let idx = self.put();
                            self.memo.insert(key, idx);
                            self.out.push(b'(');
                            for x in items {
                                self.value(x);
                            }
                            self.out.push(b'e');
                        }
                        Py::Dict(pairs) if p > 0 => {
                            self.out.push(b'}');
                            let idx = self.put();
                            self.memo.insert(key, idx);
                            self.out.push(b'(');
                            for (k, x) in pairs {
                                self.value(k);
                                self.value(x);
                            }
                            self.out.push(b'u');
                        }
                        other => {
                            self.value(other);
                            let idx = self.put();
                            self.memo.insert(key, idx);
                        }
                    }
                }
            }
        }
    }
}

/// Helpers to build snapshot-shaped values.
pub mod snap {
    use super::*;

    pub fn frame(name: &str, filename: &str, line: i128) -> Py {
        dict(vec![("filename", s(filename)), ("line", i(line)), ("name", s(name))])
    }

    /// A trace entry with the usual keys; `frames` may be `None` to leave the key out.
    pub fn entry(action: &str, addr: i128, size: i128, time_us: Option<i128>, frames: Option<Py>) -> Py {
        let mut pairs = vec![("action", s(action)), ("addr", i(addr)), ("size", i(size)), ("stream", i(0))];
        if let Some(t) = time_us {
            pairs.push(("time_us", i(t)));
        }
        if let Some(f) = frames {
            pairs.push(("frames", f));
        }
        dict(pairs)
    }

    pub fn block(size: i128, requested: i128, state: &str, frames: Py) -> Py {
        dict(vec![("size", i(size)), ("requested_size", i(requested)), ("state", s(state)), ("frames", frames)])
    }

    pub fn segment(device: i128, address: i128, total: i128, blocks: Vec<Py>) -> Py {
        let allocated: i128 = 0;
        dict(vec![
            ("device", i(device)),
            ("address", i(address)),
            ("total_size", i(total)),
            ("allocated_size", i(allocated)),
            ("active_size", i(allocated)),
            ("requested_size", i(allocated)),
            ("stream", i(0)),
            ("segment_type", s(if total >= 1 << 20 { "large" } else { "small" })),
            ("segment_pool_id", Py::Tuple(vec![i(0), i(0)])),
            ("is_expandable", Py::Bool(false)),
            ("frames", list(vec![])),
            ("blocks", list(blocks)),
        ])
    }

    pub fn snapshot(segments: Vec<Py>, traces: Vec<Vec<Py>>) -> Py {
        dict(vec![("segments", list(segments)), ("device_traces", list(traces.into_iter().map(list).collect()))])
    }
}

/// JSON text of a value (tuples become arrays; dict keys must be strings), as `json.dumps` writes it.
pub fn to_json(v: &Py) -> String {
    let mut out = String::new();
    json_into(v, &mut out);
    out
}

fn json_into(v: &Py, out: &mut String) {
    match v {
        Py::None => out.push_str("null"),
        Py::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Py::Int(x) => out.push_str(&x.to_string()),
        Py::Float(f) => out.push_str(&format!("{f:?}")),
        Py::Str(x) => out.push_str(&serde_json::to_string(x).unwrap_or_default()),
        Py::Bytes(b) => out.push_str(&serde_json::to_string(&String::from_utf8_lossy(b)).unwrap_or_default()),
        Py::List(items) | Py::Tuple(items) => {
            out.push('[');
            for (k, x) in items.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                json_into(x, out);
            }
            out.push(']');
        }
        Py::Dict(pairs) => {
            out.push('{');
            for (k, (key, x)) in pairs.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                match key {
                    Py::Str(_) => json_into(key, out),
                    other => out.push_str(&serde_json::to_string(&to_json(other)).unwrap_or_default()),
                }
                out.push_str(": ");
                json_into(x, out);
            }
            out.push('}');
        }
        Py::Shared(rc) => json_into(rc, out),
    }
}

/// A small but complete snapshot: segments with blocks in every state, a trace with every common
/// action, shared frame lists (Python and C++ frames), annotations, allocator settings, a second
/// stream, and an address above 2^63.
pub fn typical() -> Py {
    use snap::*;
    let mb = 1i128 << 20;
    let base: i128 = 139_724_914_106_368;
    let high: i128 = (1i128 << 63) + (1 << 40);
    let py_a = shared(list(vec![
        frame("forward", "/home/user/project/model.py", 42),
        frame("_call_impl", "/opt/conda/lib/python3.12/site-packages/torch/nn/modules/module.py", 1750),
        frame("<module>", "/home/user/project/train.py", 7),
    ]));
    let py_b = shared(list(vec![
        frame("backward", "/home/user/project/train.py", 19),
        frame("c10::cuda::CUDACachingAllocator::malloc", "", 0),
        frame("at::native::empty_cuda(c10::ArrayRef<long>)", "??:0", 0),
    ]));
    let mut trace0 = Vec::new();
    let clock = std::cell::Cell::new(1_700_000_000_000_000i128);
    let tick = || {
        clock.set(clock.get() + 37);
        Some(clock.get())
    };
    trace0.push(entry("segment_alloc", base, 2 * mb, tick(), Some(py_a.clone())));
    for k in 0..6 {
        let addr = base + k * 262_144;
        trace0.push(entry(
            "alloc",
            addr,
            200_000 + k,
            tick(),
            Some(if k % 2 == 0 { py_a.clone() } else { py_b.clone() }),
        ));
    }
    for k in 0..3 {
        let addr = base + k * 262_144;
        trace0.push(entry("free_requested", addr, 200_000 + k, tick(), Some(py_b.clone())));
        trace0.push(entry("free_completed", addr, 200_000 + k, tick(), Some(py_b.clone())));
    }
    trace0.push(entry("segment_alloc", high, 20 * mb, tick(), Some(py_b.clone())));
    trace0.push(entry("alloc", high, 20 * mb, tick(), Some(py_a.clone())));
    trace0.push(dict(vec![
        ("action", s("oom")),
        ("size", i(40 * mb)),
        ("stream", i(0)),
        ("device_free", i(3 * mb)),
        ("time_us", i(clock.get() + 1)),
        ("frames", py_b.clone()),
    ]));
    let mut e = entry("alloc", base + 6 * 262_144, 1000, tick(), Some(py_a.clone()));
    if let Py::Dict(p) = &mut e {
        p[3].1 = i(94_000_000_000_000);
    }
    trace0.push(e);
    let blocks0 = vec![
        block(262_144, 200_000, "inactive", list(vec![])),
        block(262_144, 200_001, "inactive", list(vec![])),
        block(262_144, 200_002, "inactive", list(vec![])),
        block(262_144, 200_003, "active_allocated", py_b.clone()),
        block(262_144, 200_004, "active_allocated", py_a.clone()),
        block(262_144, 200_005, "active_allocated", py_b.clone()),
        block(524_288, 1000, "active_allocated", py_a.clone()),
    ];
    let seg0 = segment(0, base, 2 * mb, blocks0);
    let seg1 = segment(0, high, 20 * mb, vec![block(20 * mb, 20 * mb, "active_allocated", py_a.clone())]);
    let settings = dict(vec![
        ("PYTORCH_CUDA_ALLOC_CONF", s("expandable_segments:False")),
        ("max_split_size", i(-1)),
        ("garbage_collection_threshold", Py::Float(0.0)),
        ("expandable_segments", Py::Bool(false)),
        ("release_lock_on_malloc", Py::Bool(true)),
        ("pinned_use_host_register", Py::None),
        ("roundup_power2_divisions", dict(vec![("1", i(2)), ("2", i(4))])),
    ]);
    let ann = |name: &str, stage: &str, time: i128| {
        dict(vec![("device", i(0)), ("name", s(name)), ("stage", s(stage)), ("time_us", i(time))])
    };
    dict(vec![
        ("segments", list(vec![seg0, seg1])),
        ("device_traces", list(vec![list(trace0), list(vec![])])),
        ("allocator_settings", settings),
        (
            "external_annotations",
            list(vec![
                ann("Optimizer.step#SGD.step", "START", 1_700_000_000_000_100),
                ann("Optimizer.step#SGD.step", "END", 1_700_000_000_000_200),
            ]),
        ),
    ])
}
