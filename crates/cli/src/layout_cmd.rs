//! `memviz layout FILE [--device N] [--view active|pools|segments] [--detail N] --json`: the
//! laid-out plot as data, from the layout the page draws (`memviz_core::timeline` and
//! `memviz_core::timeline_pools`), so what is checked here is what the page shows. It is what
//! the conformance suite (`tests/data/conformance`, PyTorch's viewer tests restated) reads.

use crate::error::CliError;
use memviz_core::analysis::device_position;
use memviz_core::describe::element_text;
use memviz_core::timeline::{ElementIndex, Layout, Mode, Options, Origin};
use memviz_core::timeline_pools::pools;
use memviz_core::Snapshot;
use serde_json::json;

/// Which plot: the Active Memory Timeline, the same with private-pool envelopes ("Allocated
/// Memory (incl. Private Pools)"), or the Active Cached Segment Timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutView {
    /// Allocations (PyTorch's `include_private_inactive=false`).
    Active,
    /// Allocations with private-pool envelopes (`include_private_inactive=true`).
    Pools,
    /// Segments (`plot_segments=true`).
    Segments,
}

/// Highest and last value of a step function given as (step, bytes) points.
fn max_and_last(points: &[(u32, u64)]) -> (u64, u64) {
    (points.iter().map(|p| p.1).max().unwrap_or(0), points.last().map_or(0, |p| p.1))
}

/// `memviz layout`.
pub fn layout(
    snap: &Snapshot,
    device: Option<i64>,
    view: LayoutView,
    detail: usize,
    json: bool,
) -> Result<String, CliError> {
    let pos = device_position(snap, device)?;
    let mode = if view == LayoutView::Segments { Mode::Segments } else { Mode::Allocations };
    let layout = Layout::build(snap, pos, Options { max_entries: detail, mode, hide_freed: false, focus_rows: None });
    let pools = (view == LayoutView::Pools).then(|| pools(snap, pos, &layout));
    let envelopes = pools.as_ref().map(|p| p.envelopes.as_slice()).unwrap_or_default();
    // Each envelope is drawn from the live bytes where its pool appeared (docs/layout.md): its
    // top may be the plot's highest point.
    let envelope_top = envelopes.iter().map(|e| e.offset_bytes.saturating_add(e.capacity_bytes())).max().unwrap_or(0);
    let pool_of =
        |e: u32| pools.as_ref().and_then(|p| p.of_element(ElementIndex::new(e))).and_then(|i| envelopes.get(i));
    let mut stripes = Vec::new();
    for &el in &layout.band_element {
        if let Some(env) = pool_of(el) {
            let size = layout.elements.get(el as usize).map_or(0, |e| e.size_bytes);
            stripes.push(json!({"pool": format!("pool:{}", env.key()), "element": el, "size_bytes": size}));
        }
    }
    let ghosts: Vec<_> = layout
        .elements
        .iter()
        .enumerate()
        .filter(|(_, e)| e.origin == Origin::Ghost)
        .map(|(i, e)| json!({"element": i, "size_bytes": e.size_bytes}))
        .collect();
    let summaries: Vec<_> = envelopes
        .iter()
        .filter(|e| e.small_count > 0)
        .map(|e| {
            // The bytes live before the first event count too, as the summarized band's do.
            let (max, last) = max_and_last(&e.small);
            let max = max.max(e.small_initial_bytes);
            json!({"pool": format!("pool:{}", e.key()), "max_bytes": max, "final_bytes": last, "count": e.small_count})
        })
        .collect();
    let summarized =
        std::iter::once(layout.initial_summarized_bytes).chain(layout.event_summarized_bytes.iter().copied());
    let summarized_max = summarized.clone().max().unwrap_or(0);
    let summarized_final = summarized.last().unwrap_or(0);
    let context: Vec<String> =
        (0..layout.elements.len() as u32).map(|i| element_text(snap, pos, &layout, ElementIndex::new(i))).collect();
    let v = json!({
        "device": snap.devices.get(pos).map(|d| d.index),
        "view": format!("{view:?}").to_lowercase(),
        "detail": detail,
        "max_size_bytes": layout.peak_bytes.max(envelope_top),
        "peak_bytes": layout.peak_bytes,
        "elements": layout.elements.len(),
        "bands": layout.band_element.len(),
        "envelopes": envelopes.iter().map(|e| json!({"key": format!("pool:{}", e.key()), "size_bytes": e.capacity_bytes(), "offset_bytes": e.offset_bytes})).collect::<Vec<_>>(),
        "stripes": stripes,
        "ghosts": ghosts,
        "pool_summaries": summaries,
        "summarized": {"max_bytes": summarized_max, "final_bytes": summarized_final},
        "context": context,
    });
    if json {
        let mut s = serde_json::to_string_pretty(&v)?;
        s.push('\n');
        return Ok(s);
    }
    let mut s = format!(
        "y max {} bytes, peak {} bytes, {} elements, {} drawn\n",
        layout.peak_bytes.max(envelope_top),
        layout.peak_bytes,
        layout.elements.len(),
        layout.band_element.len()
    );
    for e in envelopes {
        s.push_str(&format!("envelope pool:{} {} bytes from {} bytes\n", e.key(), e.capacity_bytes(), e.offset_bytes));
    }
    Ok(s)
}
