//! Property tests: no input makes the reader (or anything run on what it read) panic, and every
//! input finishes quickly. Inputs are arbitrary bytes, bytes that start like a pickle, and real
//! pickles with random flips, insertions, deletions and cuts.

use std::time::{Duration, Instant};

use memviz_core::{info, load, pickle, reference, Loader};

use crate::common;
use proptest::prelude::*;

/// Everything a user can run on a file; returns whether it loaded.
fn exercise(bytes: &[u8]) -> bool {
    let t0 = Instant::now();
    let ok = match load(bytes) {
        Ok(s) => {
            // Memory stays proportional to the input (shared references do not multiply it).
            let heap = s.heap_bytes();
            assert!(heap <= 64 * bytes.len() + (16 << 20), "{} bytes of input hold {heap} bytes of model", bytes.len());
            let _ = reference::stats(&s);
            let _ = reference::trace(&s);
            let _ = info::info(&s);
            let _ = s.default_device();
            true
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty() && !msg.contains('\n') && msg.len() < 2000, "{msg:?}");
            false
        }
    };
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(5), "{} bytes took {took:?}", bytes.len());
    ok
}

/// The chunked loader agrees with the whole-slice one.
fn chunked_agrees(bytes: &[u8], chunk: usize) {
    let whole = load(bytes);
    let mut l = Loader::new(None);
    let r = bytes.chunks(chunk.max(1)).try_for_each(|c| l.feed(c)).and_then(|()| l.finish());
    assert_eq!(whole.is_ok(), r.is_ok(), "whole: {:?}, chunked: {:?}", whole.err(), r.err());
}

fn seed_pickle() -> Vec<u8> {
    common::read(&common::fixture("real", "oom.pickle"))
}

/// A mutation of the seed.
#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, xor: u8 },
    Set { at: usize, byte: u8 },
    Insert { at: usize, bytes: Vec<u8> },
    Delete { at: usize, len: usize },
    Truncate { at: usize },
    Duplicate { at: usize, len: usize, to: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<prop::sample::Index>();
    prop_oneof![
        (at.clone(), 1u8..=255)
            .prop_map(|(a, x)| (a, x))
            .prop_map(|(a, xor)| Mutation::Flip { at: a.index(1 << 20), xor }),
        (at.clone(), any::<u8>()).prop_map(|(a, byte)| Mutation::Set { at: a.index(1 << 20), byte }),
        (at.clone(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(a, bytes)| Mutation::Insert { at: a.index(1 << 20), bytes }),
        (at.clone(), 1usize..64).prop_map(|(a, len)| Mutation::Delete { at: a.index(1 << 20), len }),
        at.clone().prop_map(|a| Mutation::Truncate { at: a.index(1 << 20) }),
        (at.clone(), 1usize..256, at).prop_map(|(a, len, t)| Mutation::Duplicate {
            at: a.index(1 << 20),
            len,
            to: t.index(1 << 20)
        }),
    ]
}

fn apply(seed: &[u8], muts: &[Mutation]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for m in muts {
        if b.is_empty() {
            break;
        }
        let n = b.len();
        match m {
            Mutation::Flip { at, xor } => b[at % n] ^= xor,
            Mutation::Set { at, byte } => b[at % n] = *byte,
            Mutation::Insert { at, bytes } => {
                let at = at % (n + 1);
                b.splice(at..at, bytes.iter().copied());
            }
            Mutation::Delete { at, len } => {
                let at = at % n;
                b.drain(at..(at + len).min(n));
            }
            Mutation::Truncate { at } => b.truncate(at % n),
            Mutation::Duplicate { at, len, to } => {
                let at = at % n;
                let piece: Vec<u8> = b[at..(at + len).min(n)].to_vec();
                let to = to % (n + 1);
                if b.len() + piece.len() <= 64 * 1024 {
                    b.splice(to..to, piece);
                }
            }
        }
    }
    b
}

/// Bytes that are mostly pickle opcodes, so the decoder gets past the first byte.
/// Keys and values of real snapshots, as SHORT_BINUNICODE opcodes.
const WORDS: &[&[u8]] = &[
    b"\x8c\x06action\x8c\x05alloc",
    b"\x8c\x04addr",
    b"\x8c\x04size",
    b"\x8c\x08segments",
    b"\x8c\x0ddevice_traces",
    b"\x8c\x06blocks",
    b"\x8c\x05state\x8c\x10active_allocated",
    b"\x8c\x06frames",
    b"\x8c\x0atotal_size",
    b"\x8c\x04line\x8c\x04name\x8c\x08filename",
];

fn opcode_soup() -> impl Strategy<Value = Vec<u8>> {
    const OPS: &[u8] = b"()]}N.012aesuldt\x85\x86\x87\x88\x89\x8f\x90\x91\x94KMJhjqrGXI\x8a\x8c\x95";
    let unit = prop_oneof![
        4 => prop::sample::select(OPS).prop_map(|o| vec![o]),
        1 => (any::<u8>(), prop::collection::vec(any::<u8>(), 0..8)).prop_map(|(o, mut rest)| {
            rest.insert(0, o);
            rest
        }),
        1 => prop::sample::select(WORDS).prop_map(|s| s.to_vec()),
    ];
    prop::collection::vec(unit, 0..400).prop_map(|units| {
        let mut b = vec![0x80, 4];
        for u in units {
            b.extend_from_slice(&u);
        }
        b.push(b'.');
        b
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        exercise(&bytes);
        let _ = pickle::parse(&bytes);
    }

    #[test]
    fn arbitrary_bytes_behind_a_protocol_header_never_panic(proto in 0u8..=5, body in prop::collection::vec(any::<u8>(), 0..4096)) {
        let mut b = vec![0x80, proto];
        b.extend_from_slice(&body);
        exercise(&b);
    }

    #[test]
    fn opcode_soup_never_panics(bytes in opcode_soup(), chunk in 1usize..64) {
        exercise(&bytes);
        chunked_agrees(&bytes, chunk);
    }

    #[test]
    fn mutated_real_pickles_never_panic(muts in prop::collection::vec(mutation(), 1..8), chunk in 1usize..512) {
        let seed = seed_pickle();
        let b = apply(&seed, &muts);
        prop_assume!(b.len() <= 64 * 1024);
        exercise(&b);
        chunked_agrees(&b, chunk);
    }

    #[test]
    fn truncated_real_pickles_are_errors(cut in any::<prop::sample::Index>()) {
        let seed = seed_pickle();
        let n = cut.index(seed.len());
        prop_assert!(load(&seed[..n]).is_err());
    }
}

#[test]
fn large_random_inputs_finish_quickly() {
    // A few 64 KiB inputs from a fixed generator (no shrinking needed to be useful).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..16 {
        let mut b: Vec<u8> = (0..64 * 1024).map(|_| next() as u8).collect();
        if round % 2 == 0 {
            b[0] = 0x80;
            b[1] = 4;
        }
        exercise(&b);
    }
}
