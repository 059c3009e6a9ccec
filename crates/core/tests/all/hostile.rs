//! Malformed and malicious inputs: the files of `tests/data/hostile` (with the outcome its
//! `manifest.json` expects), plus cases generated here: every truncation point of a real pickle,
//! each refused opcode, nesting a million levels deep on a small stack, huge declared lengths,
//! memo bombs and sharing bombs.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{self, dumps, fixture, fixture_files, read, snap};
use memviz_core::{info, load, pickle, reference, Error, Loader};

/// Most time one hostile file may take (unoptimized builds are far slower).
const TIME_LIMIT: Duration = Duration::from_secs(if cfg!(debug_assertions) { 30 } else { 3 });

/// Runs everything a user can ask for; none of it may panic.
fn exercise(bytes: &[u8]) -> Result<memviz_core::Snapshot, Error> {
    let s = load(bytes)?;
    let _ = reference::stats(&s);
    let _ = reference::trace(&s);
    let _ = info::info(&s);
    Ok(s)
}

/// Hostile files whose manifest entry asks for more than the reader's design does, and why the
/// reader's outcome is fine. Each is still run (no panic, bounded time).
const DESIGN_DIFFERENCES: &[(&str, &str)] = &[
    (
        "memo_long_binput_2pow32m1.pickle",
        "memo indices live in a map (cost bounded by the number of memo writes, not the index), so a large index is harmless and the snapshot loads",
    ),
    (
        "schema_entries_not_dicts.pickle",
        "trace entries that are not dicts are skipped with a warning, like other inconsistent trace content, so the rest of the file stays usable",
    ),
    (
        "deep_nesting_append.pickle",
        "decoding never recurses, so depth is not limited; the file is refused because its content is not a snapshot (a list of lists)",
    ),
    (
        "deep_nesting_marks.pickle",
        "decoding never recurses, so depth is not limited; the file is refused because its content is not a snapshot (a list of lists)",
    ),
];

#[test]
#[allow(clippy::too_many_lines)] // checks every hostile file against its manifest entry; not split yet
fn hostile_files_give_the_expected_outcome() {
    let files = fixture_files(&["hostile"]);
    let mpath = fixture("hostile", "manifest.json");
    let manifest: serde_json::Value =
        serde_json::from_slice(&read(&mpath)).unwrap_or_else(|e| panic!("{}: {e}", mpath.display()));
    let Some(expected) = manifest.get("files").and_then(|f| f.as_object()) else {
        panic!("{}: no 'files' object", mpath.display());
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name == "manifest.json" {
            continue;
        }
        let bytes = read(f);
        let t0 = Instant::now();
        let result = exercise(&bytes);
        let took = t0.elapsed();
        if took > TIME_LIMIT {
            failures.push(format!("{name}: took {took:?}"));
        }
        // The chunked loader must agree with the whole-slice one on success or failure.
        let mut l = Loader::new(None);
        let chunked = bytes.chunks(4096).try_for_each(|c| l.feed(c)).and_then(|()| l.finish());
        if chunked.is_ok() != result.is_ok() {
            failures.push(format!(
                "{name}: whole-slice load {} but chunked load {}",
                if result.is_ok() { "succeeds" } else { "fails" },
                if chunked.is_ok() { "succeeds" } else { "fails" }
            ));
        }
        let Some(exp) = expected.get(name) else {
            eprintln!("note: {name} is not in the manifest; only checked that it does not panic");
            continue;
        };
        checked += 1;
        let want = exp.get("expect").and_then(|v| v.as_str()).unwrap_or("");
        let needle = exp.get("error_contains").and_then(|v| v.as_str()).unwrap_or("").to_lowercase();
        if let Some((_, why)) = DESIGN_DIFFERENCES.iter().find(|(n, _)| *n == name) {
            // Still no panic (checked above), and still the same outcome every time.
            eprintln!(
                "note: {name}: the manifest expects {want} ({needle:?}); memviz {}: {why}",
                match &result {
                    Ok(_) => "loads it".to_owned(),
                    Err(e) => format!("says {e:?}"),
                }
            );
            continue;
        }
        // A file that loads but holds no allocator state or no trace fails at the command that
        // needs it: that error counts.
        let result = match (want, result) {
            ("error", Ok(s)) => match (reference::stats(&s), reference::trace(&s)) {
                (Err(e), _) if e.to_string().to_lowercase().contains(&needle) => Err(e),
                (_, Err(e)) if e.to_string().to_lowercase().contains(&needle) => Err(e),
                _ => Ok(s),
            },
            (_, r) => r,
        };
        match (want, &result) {
            ("error", Err(e)) => {
                let msg = e.to_string();
                if !msg.to_lowercase().contains(&needle) {
                    failures.push(format!("{name}: message lacks {needle:?}: {msg}"));
                }
                if msg.contains('\n') {
                    failures.push(format!("{name}: message is more than one line: {msg:?}"));
                }
                // The error kind, where the file's name says what it is.
                let kind_ok = match name {
                    n if n.starts_with("truncated_") || n.ends_with("_huge.pickle") || n == "missing_stop.pickle" => {
                        matches!(e, Error::Truncated { .. })
                    }
                    "empty.pickle" => matches!(e, Error::Empty),
                    n if n.ends_with(".zip.pt") || n.ends_with(".gz") => matches!(e, Error::NotAPickle { .. }),
                    n if n.starts_with("schema_top_level") => matches!(e, Error::NotASnapshot { .. }),
                    "unknown_opcode.pickle" | "random_bytes.bin" => matches!(e, Error::UnknownOpcode { .. }),
                    "protocol_6.pickle" => matches!(e, Error::UnsupportedProtocol { version: 6, .. }),
                    "global_reduce_os_system.pickle" => matches!(e, Error::ForbiddenOpcode { name: "GLOBAL", .. }),
                    "stack_global_reduce.pickle" => matches!(e, Error::ForbiddenOpcode { name: "STACK_GLOBAL", .. }),
                    "reduce_without_global.pickle"
                    | "build.pickle"
                    | "newobj.pickle"
                    | "newobj_ex.pickle"
                    | "inst.pickle"
                    | "obj.pickle"
                    | "persid.pickle"
                    | "binpersid.pickle"
                    | "ext1.pickle" => matches!(e, Error::ForbiddenOpcode { .. }),
                    _ => true,
                };
                if !kind_ok {
                    failures.push(format!("{name}: unexpected error kind {e:?}"));
                }
            }
            ("ok_with_warnings", Ok(_)) => {}
            (w, r) => failures.push(format!(
                "{name}: expected {w}, got {}",
                match r {
                    Ok(_) => "a snapshot".to_owned(),
                    Err(e) => format!("error: {e}"),
                }
            )),
        }
    }
    eprintln!("checked {checked} hostile files against the manifest");
    assert!(failures.is_empty(), "{} problems:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn text_files_are_called_text() {
    for text in [
        &b"hello world\nthis is text\n"[..],
        b"step,bytes\n1,200\n",
        b"# notes\n\xc3\xa4\n",
        b"Traceback (most recent call last):\n",
    ] {
        let e = load(text).expect_err("text is not a snapshot");
        assert!(e.to_string().contains("text file"), "{e}");
    }
    // A protocol 0 pickle is text too, and still read as one.
    assert!(load(b"(dp0\nVsegments\np1\n(lp2\nsVdevice_traces\np3\n(lp4\ns.").is_ok());
}

fn small_real_pickle() -> Vec<u8> {
    read(&fixture("real", "oom.pickle"))
}

#[test]
fn every_truncation_point_is_a_truncation_error() {
    let bytes = small_real_pickle();
    for n in 0..bytes.len() {
        match load(&bytes[..n]) {
            Err(Error::Empty) if n == 0 => {}
            Err(Error::Truncated { offset, .. }) => {
                assert_eq!(offset, n as u64, "cut at {n}: the error should name the end of the file");
            }
            other => panic!("cut at {n}: expected a truncation error, got {other:?}"),
        }
    }
}

#[test]
fn every_truncation_point_fails_through_the_chunked_loader_too() {
    let bytes = small_real_pickle();
    // Without a known length the error only comes at finish; with it, it may come earlier.
    for n in (1..bytes.len()).step_by(7) {
        for total in [None, Some(n as u64)] {
            let mut l = Loader::new(total);
            let r = bytes[..n].chunks(13).try_for_each(|c| l.feed(c)).and_then(|()| l.finish());
            assert!(matches!(r, Err(Error::Truncated { .. })), "cut at {n} (total {total:?}): {:?}", r.err());
        }
    }
}

#[test]
fn truncation_message_names_offset_and_declared_length() {
    // SHORT_BINUNICODE declaring 200 bytes with 3 present.
    let b = b"\x80\x04\x8c\xc8abc";
    let e = load(b).expect_err("must fail");
    let msg = e.to_string();
    assert!(msg.contains("ends at byte 7 inside a string of declared length 200"), "{msg}");
}

/// The refused opcodes, each with a minimal pickle that reaches it at offset 2.
const FORBIDDEN: &[(u8, &str)] = &[
    (b'c', "GLOBAL"),
    (0x93, "STACK_GLOBAL"),
    (b'R', "REDUCE"),
    (b'b', "BUILD"),
    (0x81, "NEWOBJ"),
    (0x92, "NEWOBJ_EX"),
    (b'i', "INST"),
    (b'o', "OBJ"),
    (b'P', "PERSID"),
    (b'Q', "BINPERSID"),
    (0x82, "EXT1"),
    (0x83, "EXT2"),
    (0x84, "EXT4"),
];

#[test]
fn forbidden_opcodes_are_named_with_their_offset() {
    for &(op, name) in FORBIDDEN {
        // Behind a protocol header and a few harmless opcodes, so the offset is not trivially 0.
        let mut b = vec![0x80, 4, b'N', b'0', b'}'];
        let at = b.len() as u64;
        b.push(op);
        b.extend_from_slice(b"os\nsystem\n.");
        match load(&b) {
            Err(Error::ForbiddenOpcode { name: n, opcode, offset }) => {
                assert_eq!(n, name);
                assert_eq!(opcode, op);
                assert_eq!(offset, at, "{name}");
                let msg = load(&b).err().map(|e| e.to_string()).unwrap_or_default();
                assert!(msg.contains(name) && msg.contains(&format!("byte {at}")), "{msg}");
            }
            other => panic!("{name}: expected a refusal, got {other:?}"),
        }
        // The same through the chunked loader, one byte at a time.
        let mut l = Loader::new(None);
        let r = b.chunks(1).try_for_each(|c| l.feed(c)).and_then(|()| l.finish());
        assert!(
            matches!(r, Err(Error::ForbiddenOpcode { offset, .. }) if offset == at),
            "{name} chunked: {:?}",
            r.err()
        );
    }
}

#[test]
fn a_real_pickle_with_a_global_spliced_in_is_refused() {
    let mut bytes = small_real_pickle();
    // Replace the STOP with GLOBAL os.system + REDUCE + STOP.
    let stop = bytes.len() - 1;
    bytes.truncate(stop);
    bytes.extend_from_slice(b"cos\nsystem\n(S'echo hi'\ntR.");
    assert!(
        matches!(load(&bytes), Err(Error::ForbiddenOpcode { name: "GLOBAL", offset, .. }) if offset == stop as u64)
    );
}

/// Runs `f` on a thread with a 256 KiB stack: recursion on input depth would overflow it.
#[allow(clippy::expect_used)] // a test helper: a thread that cannot start fails the test
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .expect("spawn a thread")
        .join()
        .unwrap_or_else(|_| panic!("the thread panicked (or overflowed its stack)"))
}

#[test]
fn a_million_nested_lists_do_not_overflow_a_small_stack() {
    on_small_stack(|| {
        let n = 1_000_000;
        // EMPTY_LIST n times, APPEND n-1 times: [[[...]]].
        let mut b = vec![0x80, 2];
        b.extend(std::iter::repeat_n(b']', n));
        b.extend(std::iter::repeat_n(b'a', n - 1));
        b.push(b'.');
        let r = exercise(&b);
        assert!(r.is_err(), "a nested list is not a snapshot");
        // MARK + LIST (protocol 0 style): a mark stack a million deep.
        let mut b = Vec::new();
        b.extend(std::iter::repeat_n(b'(', n));
        b.extend(std::iter::repeat_n(b'l', n));
        b.push(b'.');
        let _ = exercise(&b);
        // Nested dicts under a real key, so the model builder walks into them.
        let mut b = vec![0x80, 4, b'}', 0x8c, 8];
        b.extend_from_slice(b"segments");
        b.push(b']');
        b.push(b's');
        b.push(0x8c);
        b.push(5);
        b.extend_from_slice(b"other");
        b.extend(std::iter::repeat_n(b']', n));
        b.extend(std::iter::repeat_n(b'a', n - 1));
        b.push(b's');
        b.push(b'.');
        let _ = exercise(&b);
    });
}

#[test]
fn deep_values_inside_a_snapshot_are_printed_without_recursing_deeply() {
    on_small_stack(|| {
        // A valid snapshot whose trace has an unknown action carrying a deeply nested value:
        // `trace` prints such entries verbatim.
        let n = 100_000;
        let mut deep = Vec::new();
        deep.extend(std::iter::repeat_n(b']', n));
        deep.extend(std::iter::repeat_n(b'a', n - 1));
        let mut b = vec![0x80, 4, b'}', b'('];
        for (k, v) in [("segments", &b"]"[..]), ("device_traces", &b"]]}("[..])] {
            b.push(0x8c);
            b.push(k.len() as u8);
            b.extend_from_slice(k.as_bytes());
            b.extend_from_slice(v);
        }
        b.extend_from_slice(b"\x8c\x06action\x8c\x05weird\x8c\x04deep");
        b.extend_from_slice(&deep);
        b.extend_from_slice(b"ua"); // close the entry dict, append it to the trace
        b.extend_from_slice(b"a"); // append the trace to device_traces
        b.extend_from_slice(b"u."); // close the top-level dict
        let s = exercise(&b).expect("loads");
        let t = reference::trace(&s).expect("trace");
        assert!(t.contains("'weird'"), "{t}");
    });
}

#[test]
fn huge_declared_lengths_fail_without_allocating() {
    // 100 bytes in all, declaring 2^60 bytes: allocating first would abort the process.
    let declared: u64 = 1 << 60;
    for op in [0x8d_u8, 0x8e, 0x96] {
        let mut b = vec![0x80, 4, op];
        b.extend_from_slice(&declared.to_le_bytes());
        b.resize(100, b'x');
        match load(&b) {
            Err(Error::Truncated { declared: Some(d), offset, .. }) => {
                assert_eq!(d, declared, "op 0x{op:02x}");
                assert_eq!(offset, 100, "op 0x{op:02x}");
            }
            other => panic!("op 0x{op:02x}: {other:?}"),
        }
        // Streaming, without a known total length: still no allocation, the error comes at finish.
        let mut l = Loader::new(None);
        let r = b.chunks(10).try_for_each(|c| l.feed(c)).and_then(|()| l.finish());
        assert!(matches!(r, Err(Error::Truncated { .. })), "op 0x{op:02x}: {:?}", r.err());
    }
    // u64::MAX: the length plus the header overflows.
    let mut b = vec![0x80, 4, 0x8d];
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    b.resize(100, b'x');
    assert!(matches!(load(&b), Err(Error::Truncated { .. })));
    // 32-bit lengths.
    for op in [b'X', b'B', b'T'] {
        let mut b = vec![0x80, 3, op];
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        b.resize(100, b'x');
        assert!(matches!(load(&b), Err(Error::Truncated { .. })), "op {}", op as char);
    }
    // LONG4 with a negative length.
    let b = b"\x80\x02\x8b\x00\x00\x00\x80\x00\x00.";
    let msg = load(b).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.to_lowercase().contains("long"), "{msg}");
}

#[test]
fn memo_bombs_stay_cheap() {
    // Sparse memo indices near 2^32: a reader that sizes its memo by index would allocate GiBs.
    let mut b = vec![0x80, 2, b']'];
    for k in 0..1000u32 {
        b.push(b'r');
        b.extend_from_slice(&(u32::MAX - k * 7919).to_le_bytes());
    }
    b.push(b'j');
    b.extend_from_slice(&u32::MAX.to_le_bytes());
    b.extend_from_slice(b"\x86.");
    let d = pickle::parse(&b).expect("parses");
    assert_eq!(d.items(d.root()).len(), 2);
    // GET of an index that was never stored.
    let b = b"\x80\x02]j\xff\xff\xff\x7f.";
    let msg = load(b).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("memo"), "{msg}");
    // Protocol 0 PUT/GET with an enormous decimal index.
    let b = b"(lp99999999999999999999\n.";
    assert!(load(b).is_err());
    let b = b"(lp18446744073709551615\ng18446744073709551615\na.";
    let d = pickle::parse(b).expect("parses");
    assert_eq!(d.items(d.root()).len(), 1);
}

/// A file that expands through shared references: `count` references to one list of `len` items.
/// Building the model must cost time and memory in proportion to the file, not to the expansion.
fn sharing_bomb(what: &str, len: usize, count: usize) -> Vec<u8> {
    use common::{i, list, s, shared, Py};
    let big = match what {
        // A trace with `len` entries, referenced as `count` devices' traces.
        "traces" => {
            let e = shared(snap::entry("alloc", 4096, 512, Some(1), None));
            let t = shared(list(vec![e; len]));
            snap::snapshot(vec![], vec![]).with("device_traces", list(vec![t; count]))
        }
        // A segment with `len` blocks, referenced `count` times.
        "blocks" => {
            let bl = shared(snap::block(0, 0, "inactive", list(vec![])));
            let seg = shared(snap::segment(0, 1 << 40, 0, vec![bl; len]));
            snap::snapshot(vec![seg; count], vec![])
        }
        // Entries printed verbatim (unknown action) that each carry the same big value.
        "verbatim" => {
            let payload = shared(list(vec![i(7); len]));
            let e = shared(common::dict(vec![("action", s("mystery")), ("payload", payload)]));
            snap::snapshot(vec![], vec![vec![e; count]])
        }
        // forward_frames lists shared by every entry.
        "forward" => {
            let names = shared(list((0..len).map(|k| s(&format!("f{k}"))).collect()));
            let e = shared(common::dict(vec![
                ("action", s("alloc")),
                ("addr", i(4096)),
                ("size", i(512)),
                ("stream", i(0)),
                ("forward_frames", names),
            ]));
            snap::snapshot(vec![], vec![vec![e; count]])
        }
        // Top-level keys the model keeps verbatim, each the same big value.
        _ => {
            let payload = shared(list(vec![Py::Float(1.5); len]));
            let mut pairs = vec![(s("segments"), list(vec![])), (s("device_traces"), list(vec![]))];
            for k in 0..count {
                pairs.push((s(&format!("extra_{k}")), payload.clone()));
            }
            Py::Dict(pairs)
        }
    };
    dumps(&big, 4)
}

trait With {
    fn with(self, key: &str, v: common::Py) -> common::Py;
}

impl With for common::Py {
    fn with(self, key: &str, v: common::Py) -> common::Py {
        match self {
            common::Py::Dict(mut pairs) => {
                for p in &mut pairs {
                    if matches!(&p.0, common::Py::Str(k) if k == key) {
                        p.1 = v;
                        return common::Py::Dict(pairs);
                    }
                }
                pairs.push((common::s(key), v));
                common::Py::Dict(pairs)
            }
            other => other,
        }
    }
}

#[test]
fn sharing_bombs_do_not_expand() {
    // 20,000 x 20,000 = 4e8 expanded items from files of a few hundred KiB.
    for what in ["traces", "blocks", "verbatim", "forward", "keys"] {
        let b = sharing_bomb(what, 20_000, 20_000);
        assert!(b.len() < 1 << 20, "{what}: {} bytes", b.len());
        let t0 = Instant::now();
        let r = load(&b);
        let took = t0.elapsed();
        match &r {
            Ok(s) => {
                let heap = s.heap_bytes();
                assert!(
                    heap < 64 * b.len() + (16 << 20),
                    "{what}: model holds {heap} bytes for a {}-byte file",
                    b.len()
                );
            }
            Err(e) => eprintln!("{what}: refused: {e}"),
        }
        assert!(took < TIME_LIMIT, "{what}: load took {took:?}");
    }
}

#[test]
fn huge_integers_are_cheap_to_print() {
    // A 1 MiB LONG4 inside an entry that `trace` prints verbatim: decimal conversion must not be
    // quadratic in the integer's size.
    let n: usize = 1 << 20;
    let mut big = vec![0x8b];
    big.extend_from_slice(&(n as u32).to_le_bytes());
    big.extend(std::iter::repeat_n(0x11u8, n - 1));
    big.push(0x01);
    let mut b = vec![0x80, 4, b'}', b'('];
    b.extend_from_slice(b"\x8c\x08segments]\x8c\x0ddevice_traces]]}(\x8c\x06action\x8c\x05weird\x8c\x03big");
    b.extend_from_slice(&big);
    b.extend_from_slice(b"uaau\x8c\x05other");
    b.extend_from_slice(&big);
    b.extend_from_slice(b"s.");
    let t0 = Instant::now();
    let s = exercise(&b).expect("loads");
    let _ = reference::trace(&s);
    assert!(t0.elapsed() < TIME_LIMIT, "took {:?}", t0.elapsed());
}

#[test]
fn text_protocol_oddities_are_errors_not_panics() {
    let cases: &[&[u8]] = &[
        b"I\n.",
        b"Inot a number\n.",
        b"F1.2.3\n.",
        b"S'unterminated\n.",
        b"S'\\x4'\n.",
        b"S'\\\n.",
        b"V\\u12\n.",
        b"V\\U0011ffff\n.",
        b"L123\n.",
        b"L-\n.",
        b"I99999999999999999999999999999999999999999\n.",
        b"p\n.",
        b"Np1\ng2\n.",
        b"a.",
        b"s.",
        b"(u.",
        b"}(Nu.",
        b"](Ns.",
        b"}Ne.",
        b"0.",
        b"1.",
        b"2.",
        b"t.",
        b"\x85.",
        b"\x87.",
        b"N\x86.",
        b"(\x90.",
        b"\x8f(Nl\x90.",
        b"\x80\x05\x98.",
        b"\x80\x05\x97.",
        b"\x8a\xff.",
        b".",
        b"(.",
        b"N(.",
        b"NN.",
        b"\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\xffN.",
    ];
    for &c in cases {
        on_small_stack(move || {
            let _ = exercise(c);
            let _ = pickle::parse(c);
        });
    }
}

#[test]
fn hostile_files_fed_in_small_chunks_do_not_panic() {
    for f in fixture_files(&["hostile"]) {
        let bytes = read(&f);
        if bytes.len() > 1 << 16 {
            continue;
        }
        let mut l = Loader::new(Some(bytes.len() as u64));
        let _ = bytes.chunks(3).try_for_each(|c| l.feed(c)).and_then(|()| l.finish());
        let _ = Path::new(&f);
    }
}

#[test]
fn messages_quoting_the_file_stay_on_one_short_line() {
    // Top-level keys are named in the message: newlines, escape sequences and huge keys from the
    // file must not reach the terminal as they are.
    let long = "k".repeat(100_000);
    let v = common::Py::Dict(vec![
        (common::s("evil\nkey\x1b[2J"), common::i(1)),
        (common::s(&long), common::i(2)),
        (common::s("\r\t\u{0}"), common::i(3)),
    ]);
    let msg = load(&dumps(&v, 4)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.starts_with("not a memory snapshot: top-level keys are evil\\nkey\\u{1b}[2J, kkk"), "{msg}");
    assert!(!msg.chars().any(char::is_control), "{msg:?}");
    assert!(msg.len() < 400, "{} bytes", msg.len());
}
