//! The "Allocated Memory (incl. Private Pools)" view's hover: which private pool's envelope, or
//! which pool's stripe of small allocations in the summarized band, is under the pointer
//! ([`pool_at`]), and what the tooltip then says ([`envelope_text`], [`stripe_text`], worded as
//! PyTorch's viewer words them).

use memviz_core::describe::viewer_size;
use memviz_core::timeline_pools::Pools;

use crate::state::{PoolHover, Target, ViewState};
use crate::view::View;

/// The hover text of an envelope: PyTorch's `Private Pool (<a>,<b>,s<stream>): capacity <size>`,
/// with the stream numbered in order of first appearance as the reference viewer numbers it.
pub fn envelope_text(snap: &memviz_core::snapshot::Snapshot, e: &memviz_core::timeline_pools::PoolEnvelope) -> String {
    let stream = snap.streams.iter().position(|&s| s == e.stream_id).unwrap_or(0);
    format!(
        "Private Pool ({},{},s{stream}): capacity {}\n{} allocations in this pool; the envelope is the most the pool has reserved or had allocated so far.\n",
        e.pool_id.0,
        e.pool_id.1,
        viewer_size(e.capacity_bytes()),
        e.elements.len()
    )
}

/// The hover text of a pool's stripe of small allocations.
pub fn stripe_text(
    snap: &memviz_core::snapshot::Snapshot,
    e: &memviz_core::timeline_pools::PoolEnvelope,
    live_bytes: u64,
) -> String {
    let stream = snap.streams.iter().position(|&s| s == e.stream_id).unwrap_or(0);
    format!(
        "Private Pool ({},{},s{stream}): small allocations, folded into one stripe\n{} live here, of {} allocations of this pool too small to draw one by one (below Detail). Raise Detail to draw them.\n",
        e.pool_id.0,
        e.pool_id.1,
        memviz_core::format::human_size(live_bytes as f64),
        e.small_count
    )
}

/// The pool at a pointer position (CSS px): its stripe of small allocations, where the pointer
/// is in the summarized band, else its envelope, unless the pointer is on one of its
/// allocations.
pub fn pool_at(state: &ViewState, pools: Option<&Pools>, x_px: f64, y_px: f64) -> Option<PoolHover> {
    if let (Some(Target::Summarized), Some(p), Some(f)) = (state.hover(), pools, state.file()) {
        if state.view() == View::AllocatedMemoryPools && state.drag().is_none() {
            let rect = state.plot_rect();
            let v = &f.viewport;
            let step = f.xmap().step(v.pos_at(&rect, x_px));
            let bytes = v.bytes_at(&rect, y_px);
            let mut top = f.plot.layout.live_bytes_at(step.floor().max(0.0)) as f64;
            for (i, e) in p.envelopes.iter().enumerate().rev() {
                let small = e.small_at(step.floor().max(0.0));
                if small > 0 && bytes <= top && bytes >= top - small as f64 {
                    return Some(PoolHover { envelope: i, small_bytes: Some(small) });
                }
                top -= small as f64;
            }
        }
    }
    envelope_at(state, pools, x_px, y_px).map(|envelope| PoolHover { envelope, small_bytes: None })
}

/// The envelope at a pointer position (CSS px), unless the pointer is on one of its allocations.
fn envelope_at(state: &ViewState, pools: Option<&Pools>, x_px: f64, y_px: f64) -> Option<usize> {
    if state.view() != View::AllocatedMemoryPools || state.drag().is_some() {
        return None;
    }
    let f = state.file()?;
    let rect = state.plot_rect();
    if !rect.contains(x_px, y_px) {
        return None;
    }
    let p = pools?;
    let v = &f.viewport;
    let step = f.xmap().step(v.pos_at(&rect, x_px));
    let bytes = v.bytes_at(&rect, y_px);
    let hit = p.envelopes.iter().enumerate().rev().find(|(_, e)| {
        let top = e.offset_bytes as f64 + e.height_at(step) as f64;
        step >= f64::from(e.first_step) && bytes >= e.offset_bytes as f64 && bytes <= top
    })?;
    match state.hover() {
        Some(Target::Element(el)) if p.of_element(el) == Some(hit.0) => None,
        _ => Some(hit.0),
    }
}

#[cfg(test)]
#[path = "pools_tests.rs"]
mod tests;
