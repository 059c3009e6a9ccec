//! Which pool is under the pointer, read back through the same pixel mapping the page draws
//! with.

#![allow(clippy::expect_used)]

use super::*;
use crate::test_state::open_state;

static POOLS: &[u8] = include_bytes!("../../../tests/data/synth/private_pools.pickle");

fn pools_state() -> (ViewState, Pools) {
    let mut s = open_state(POOLS, "pools.pickle", 15_000, (1000.0, 60.0));
    s.view = View::AllocatedMemoryPools;
    let f = s.file().expect("file");
    let p = memviz_core::timeline_pools::pools(&f.snap, f.plot.device_pos, &f.plot.layout);
    assert!(!p.envelopes.is_empty(), "the fixture has private pools");
    (s, p)
}

/// A pixel inside envelope `i` (at the middle of its height, a step after it starts).
fn inside(s: &ViewState, p: &Pools, i: usize) -> (f64, f64) {
    let f = s.file().expect("file");
    let e = &p.envelopes[i];
    let rect = s.plot_rect();
    let step = f64::from(e.first_step) + 0.5;
    let mid_bytes = e.offset_bytes as f64 + e.height_at(step) as f64 / 2.0;
    (f.viewport.x_px(&rect, step), f.viewport.y_px(&rect, mid_bytes))
}

#[test]
fn the_pointer_inside_an_envelope_names_its_pool_only_in_the_pools_view() {
    let (mut s, p) = pools_state();
    let i =
        p.envelopes.iter().position(|e| e.height_at(f64::from(e.first_step) + 0.5) > 0).expect("a pool with height");
    let (x, y) = inside(&s, &p, i);
    let h = pool_at(&s, Some(&p), x, y).expect("a pool under the pointer");
    assert_eq!(h.small_bytes, None, "on the envelope, not a stripe");
    assert!(p.envelopes[h.envelope].height_at(f64::from(p.envelopes[h.envelope].first_step) + 0.5) > 0);
    assert_eq!(pool_at(&s, None, x, y), None, "no pools derived yet");
    assert_eq!(pool_at(&s, Some(&p), -50.0, y), None, "left of the plot");
    s.view = View::ActiveMemoryTimeline;
    assert_eq!(pool_at(&s, Some(&p), x, y), None, "only the pools view has envelopes");
}

#[test]
fn the_pool_texts_say_its_id_stream_and_capacity_as_pytorch_does() {
    let (s, p) = pools_state();
    let f = s.file().expect("file");
    let e = &p.envelopes[0];
    let t = envelope_text(&f.snap, e);
    assert!(t.starts_with(&format!("Private Pool ({},{},s", e.pool_id.0, e.pool_id.1)), "{t}");
    assert!(t.contains(&format!("capacity {}", viewer_size(e.capacity_bytes()))), "{t}");
    let t = stripe_text(&f.snap, e, 3 << 20);
    assert!(t.contains("3 MiB live here"), "{t}");
    assert!(t.contains(&format!("of {} allocations", e.small_count)), "{t}");
}
