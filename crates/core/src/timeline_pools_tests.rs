//! The layout rules PyTorch's viewer states in its own tests (`test/profiler/test_memory_viz.js`:
//! pool envelopes, ghost blocks, frees without allocs), case by case on small snapshots of our
//! own, where memviz draws the same; docs/layout.md says where it differs on purpose.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::timeline::{Layout, Options, Origin};

const MIB: u64 = 1 << 20;

/// A final segment: address, total size, pool, stream, blocks as (size, state).
type Seg<'a> = (u64, u64, (i64, i64), u32, &'a [(u64, &'a str)]);

/// A one-device JSON snapshot: trace entries as `(action, addr, size, stream)` and segments.
fn snap(entries: &[(&str, u64, u64, u32)], segments: &[Seg<'_>]) -> Snapshot {
    let trace: Vec<String> = entries
        .iter()
        .map(|(a, addr, size, stream)| {
            format!(r#"{{"action":"{a}","addr":{addr},"size":{size},"stream":{stream},"frames":[]}}"#)
        })
        .collect();
    let segs: Vec<String> = segments
        .iter()
        .map(|(address, total, (p0, p1), stream, blocks)| {
            let blocks: Vec<String> = blocks
                .iter()
                .map(|(size, state)| {
                    format!(r#"{{"size":{size},"requested_size":{size},"state":"{state}","frames":[]}}"#)
                })
                .collect();
            format!(
                r#"{{"device":0,"address":{address},"total_size":{total},"allocated_size":0,"active_size":0,"requested_size":0,"stream":{stream},"segment_type":"large","segment_pool_id":[{p0},{p1}],"is_expandable":false,"frames":[],"blocks":[{}]}}"#,
                blocks.join(",")
            )
        })
        .collect();
    let json = format!(r#"{{"segments":[{}],"device_traces":[[{}]]}}"#, segs.join(","), trace.join(","));
    crate::load(json.as_bytes()).unwrap_or_else(|e| panic!("{e}: {json}"))
}

fn pools_of(s: &Snapshot) -> (Layout, Pools) {
    let layout = Layout::build(s, 0, Options::default());
    let p = pools(s, 0, &layout);
    (layout, p)
}

fn keys(p: &Pools) -> Vec<String> {
    let mut k: Vec<String> = p.envelopes.iter().map(PoolEnvelope::key).collect();
    k.sort();
    k
}

/// One pool, two streams: an envelope each, keyed `pool,s<stream>`.
#[test]
fn an_envelope_per_pool_and_stream() {
    let s = snap(
        &[
            ("alloc", 1000, 500, 1),
            ("alloc", 2000, 300, 2),
            ("free_completed", 1000, 500, 1),
            ("free_completed", 2000, 300, 2),
        ],
        &[(0, 4096, (1, 5), 0, &[])],
    );
    assert_eq!(keys(&pools_of(&s).1), ["1,5,s1", "1,5,s2"]);
}

/// The default pool `(0, 0)` never gets an envelope, whatever its segment events.
#[test]
fn the_default_pool_has_no_envelope() {
    let s = snap(
        &[("segment_map", 100, 5000, 0), ("alloc", 100, 200, 0), ("free_completed", 100, 200, 0)],
        &[(0, 5000, (0, 0), 0, &[])],
    );
    let (layout, p) = pools_of(&s);
    assert!(p.envelopes.is_empty());
    assert_eq!(layout.peak_bytes, 200, "the peak is the live allocations only");
}

/// An envelope is the pool's reserved memory (the final segments less what the trace mapped
/// since), or what is allocated in it when that is more, and never shrinks.
#[test]
fn envelopes_are_sized_by_reserved_memory() {
    // Mapped 500, freed, mapped 400 more: 900 reserved, though never more than 500 allocated.
    let s = snap(
        &[
            ("segment_map", 0x1000, 500, 0),
            ("alloc", 0x1000, 500, 0),
            ("free_completed", 0x1000, 500, 0),
            ("segment_map", 0x1200, 400, 0),
            ("alloc", 0x1200, 400, 0),
        ],
        &[(0x1000, 900, (1, 10), 0, &[])],
    );
    let (layout, p) = pools_of(&s);
    assert_eq!(p.envelopes.len(), 1);
    assert_eq!(p.envelopes[0].capacity_bytes(), 900);
    let mut sizes: Vec<u64> = p.envelopes[0].elements.iter().map(|&e| layout.elements[e as usize].size_bytes).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [400, 500], "the allocations inside keep their own sizes");
    // Reserved before the trace and never mapped in it: the final segment's size.
    let s = snap(&[("alloc", 0x2000, 300, 0)], &[(0x2000, 2000, (1, 20), 0, &[])]);
    assert_eq!(pools_of(&s).1.envelopes[0].capacity_bytes(), 2000);
    // Mapped in the trace and in the final segments: counted once.
    let s = snap(&[("segment_map", 0x3000, 600, 0), ("alloc", 0x3000, 600, 0)], &[(0x3000, 600, (1, 30), 0, &[])]);
    assert_eq!(pools_of(&s).1.envelopes[0].capacity_bytes(), 600);
    // More allocated than reserved (segment events lost): the allocated bytes.
    let s = snap(
        &[("segment_map", 0x4000, 500, 0), ("alloc", 0x4000, 800, 0), ("alloc", 0x4400, 200, 0)],
        &[(0x4000, 1000, (1, 40), 0, &[])],
    );
    let e = &pools_of(&s).1.envelopes[0];
    assert_eq!(e.capacity_bytes(), 1000);
    assert!(e.height.windows(2).all(|w| w[0].1 <= w[1].1), "never shrinks: {:?}", e.height);
    // Allocated and freed within the trace: the segment's reserved bytes.
    let s = snap(&[("alloc", 2000, 500, 0), ("free_completed", 2000, 500, 0)], &[(0, 8192, (1, 7), 0, &[])]);
    assert_eq!(pools_of(&s).1.envelopes[0].capacity_bytes(), 8192);
}

/// A block of a pool freed in the trace without its alloc was live from the start: it is one
/// lifetime, the envelope the larger of it and the reserved bytes, nothing counted twice.
#[test]
fn frees_without_allocs_in_a_pool_do_not_inflate_it() {
    let (seg, addr, big) = (0x0788_c000_0000_u64, 0x0788_c200_0000_u64, 94_371_840u64);
    let s = snap(&[("free_completed", addr, big, 0), ("alloc", addr, 256, 0)], &[(seg, 83_886_080, (1, 42), 0, &[])]);
    let (layout, p) = pools_of(&s);
    assert_eq!(layout.elements.len(), 2);
    assert_eq!(layout.elements[0].origin, Origin::FreedWithoutAlloc);
    assert_eq!(keys(&p), ["1,42,s0"]);
    assert_eq!(p.envelopes[0].capacity_bytes(), big, "max(allocated, reserved)");
    assert_eq!(layout.peak_bytes, big);
    // Several such frees: never more than the pool's segment.
    let s = snap(
        &[("free_completed", 1000, 500, 0), ("free_completed", 2000, 500, 0), ("free_completed", 3000, 500, 0)],
        &[(0, 16384, (1, 99), 0, &[])],
    );
    let (layout, p) = pools_of(&s);
    assert_eq!(p.envelopes[0].capacity_bytes(), 16384);
    assert_eq!(layout.peak_bytes, 1500);
}

/// An allocation outside any pool and one in a pool: the envelope sits on what was live when
/// the pool appeared, so its top is what PyTorch counts as the peak (200 + 8192).
#[test]
fn an_envelope_sits_on_the_live_bytes_below_it() {
    let s = snap(
        &[
            ("alloc", 100, 200, 0),
            ("alloc", 5000, 400, 0),
            ("free_completed", 100, 200, 0),
            ("free_completed", 5000, 400, 0),
        ],
        &[(0, 4096, (0, 0), 0, &[]), (4096, 8192, (1, 5), 0, &[])],
    );
    let (_, p) = pools_of(&s);
    let e = &p.envelopes[0];
    assert_eq!((e.offset_bytes, e.capacity_bytes()), (200, 8192));
    assert_eq!(e.offset_bytes + e.capacity_bytes(), 8392);
}

/// PyTorch's "full snapshot" case: 512 KiB allocations in the default pool and in pool (0, 1),
/// whose 2 MiB segment is its envelope; three allocations inside it, three outside.
#[test]
fn a_full_snapshot_with_one_private_pool() {
    let (a, b) = (0x7f08_cde0_0000u64, 0x7f08_d280_0000u64);
    let k = 512 * 1024;
    let s = snap(
        &[
            ("segment_alloc", a, 2 * MIB, 0),
            ("alloc", a, k, 0),
            ("segment_alloc", b, 2 * MIB, 0),
            ("alloc", b, k, 0),
            ("free_requested", a, k, 0),
            ("free_completed", a, k, 0),
            ("free_requested", b, k, 0),
            ("free_completed", b, k, 0),
            ("alloc", a, k, 0),
            ("alloc", b, k, 0),
            ("alloc", b + 0x80000, k, 0),
            ("alloc", a + 0x80000, k, 0),
        ],
        &[(a, 2 * MIB, (0, 0), 0, &[]), (b, 2 * MIB, (0, 1), 0, &[])],
    );
    let (layout, p) = pools_of(&s);
    assert_eq!(layout.elements.len(), 6, "free_requested ends nothing; free_completed does");
    assert_eq!(keys(&p), ["0,1,s0"]);
    assert_eq!(p.envelopes[0].capacity_bytes(), 2 * MIB);
    assert_eq!(p.envelopes[0].elements.len(), 3);
    assert_eq!(p.element_pool.iter().filter(|&&x| x == u32::MAX).count(), 3);
}

/// Ghost blocks: allocated in the final segments at an address the trace never names (allocated
/// before recording, or its alloc overwritten in the ring buffer) are live across the whole
/// timeline; inactive blocks are not allocations; an address in the trace is no ghost.
#[test]
fn ghost_blocks_come_from_the_final_segments() {
    let big = 4 * MIB;
    let s = snap(
        &[
            ("free_completed", 0x6a0_0000, big, 0),
            ("alloc", 0x6a0_0000, big, 0),
            ("free_completed", 0x6a0_0000, big, 0),
            ("alloc", 0x6a0_0000, big, 0),
            ("free_completed", 0x6a0_0000, big, 0),
        ],
        &[
            (0x1e0_0000, 2 * MIB, (0, 0), 0, &[(MIB, "active_allocated"), (MIB, "inactive")]),
            (0x680_0000, 20 * MIB, (0, 0), 0, &[(2 * MIB, "active_allocated"), (18 * MIB, "inactive")]),
        ],
    );
    let layout = Layout::build(&s, 0, Options::default());
    assert_eq!(layout.elements.len(), 5, "2 traced, 1 freed without alloc, 2 ghosts");
    let mut ghosts: Vec<u64> =
        layout.elements.iter().filter(|e| e.origin == Origin::Ghost).map(|e| e.size_bytes).collect();
    ghosts.sort_unstable();
    assert_eq!(ghosts, [MIB, 2 * MIB]);
    assert!(layout
        .elements
        .iter()
        .filter(|e| e.origin == Origin::Ghost)
        .all(|e| e.alloc_step == 0 && e.free_step.is_none()));
    // No trace: an allocated block is one ghost, an inactive one nothing.
    let s = snap(&[], &[(4096, 8192, (0, 0), 0, &[(1000, "active_allocated")])]);
    assert_eq!(Layout::build(&s, 0, Options::default()).elements.len(), 1);
    let s = snap(&[], &[(4096, 8192, (1, 42), 0, &[(1000, "inactive")])]);
    assert_eq!(Layout::build(&s, 0, Options::default()).elements.len(), 0);
    // The address is in the trace: the traced lifetime only.
    let s = snap(&[("alloc", 0, 512, 0)], &[(0, 4096, (0, 0), 0, &[(512, "active_allocated")])]);
    let layout = Layout::build(&s, 0, Options::default());
    assert_eq!(layout.elements.len(), 1);
    assert_eq!(layout.elements[0].origin, Origin::Traced);
}

/// A ghost in a private pool is inside that pool's envelope, which starts at the pool's whole
/// reserved memory; a ghost of the default pool is no envelope's.
#[test]
fn a_ghost_in_a_private_pool_belongs_to_its_envelope() {
    let s = snap(
        &[("alloc", 0xe60_0000, 3 * MIB, 0), ("alloc", 0x6a0_0000, 4 * MIB, 0)],
        &[
            (0x1e0_0000, 2 * MIB, (0, 1), 0, &[(MIB, "active_allocated"), (MIB, "inactive")]),
            (0x680_0000, 20 * MIB, (0, 0), 0, &[(2 * MIB, "active_allocated"), (4 * MIB, "active_allocated")]),
            (0xe60_0000, 20 * MIB, (0, 1), 0, &[(3 * MIB, "active_allocated")]),
        ],
    );
    let (layout, p) = pools_of(&s);
    assert_eq!(keys(&p), ["0,1,s0"]);
    let env = &p.envelopes[0];
    assert_eq!(env.first_step, 0, "the ghost is live from the start");
    assert_eq!(env.height.first().map(|h| h.1), Some(22 * MIB), "the pool's reserved memory");
    assert_eq!(env.capacity_bytes(), 22 * MIB);
    let ghost_in_pool = |size: u64| {
        layout.elements.iter().enumerate().any(|(i, e)| {
            e.origin == Origin::Ghost
                && e.size_bytes == size
                && p.of_element(crate::timeline::ElementIndex::new(i as u32)) == Some(0)
        })
    };
    assert!(ghost_in_pool(MIB), "the pool's ghost is in its envelope");
    assert!(!ghost_in_pool(2 * MIB), "the default pool's ghost is not");
    assert!(layout.elements.iter().any(|e| e.origin == Origin::Ghost && e.size_bytes == 2 * MIB));
}
