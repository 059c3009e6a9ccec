//! Iterations, growth and memory carried from one iteration into the next.
//!
//! **Iterations** come from `external_annotations` when a name repeats: numbered regions
//! (`ProfilerStep#N`, `## step N ##`) start an iteration at each START; the optimizer's own regions
//! (`Optimizer.zero_grad#...`, else `Optimizer.step#...`) end one at each END; any other repeated
//! region starts one at each START. Annotation times map to trace rows through the entries'
//! `time_us`. Without usable annotations, the period of the live-bytes curve (autocorrelation of
//! its first difference) gives iterations, cut at the curve's low points.
//!
//! **Growth**: live bytes by stack at the end of every iteration; stacks that keep growing are
//! reported with their least-squares bytes per iteration.
//!
//! **Carried over**: allocations made in iteration k that are still live at the peak of iteration
//! k+1. Optimizer state (allocated inside `Optimizer.step`, or with `torch/optim` frames) and
//! other state allocated once (workspaces, caches) are expected and only noted. Kept allocations
//! whose sizes match the optimizer's per-parameter state (or, without it, the tensors live since
//! before the trace: the parameters) are gradients that were never freed: the classic missing
//! `zero_grad(set_to_none=True)`. Allocations freed during iteration k+1 but live at its peak are
//! tensors held over from the previous iteration.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::grouping::{GroupBy, Grouping, LibraryRule};
use super::{signed_size_text, site_label, size_text, Replay};
use crate::format::plural;
use crate::snapshot::Snapshot;
use carry::has_autograd_frames;

mod carry;
mod iterations;
mod stacks;

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests;

pub use super::finding::Finding;
pub use carry::{carry_over, CarryKind, CarryOver};
pub use iterations::{find_iterations, BoundarySource, Edge, Iteration, Iterations};
pub use stacks::{growth, growth_by_group, slope, GrowingGroup, GrowingStack, Growth};

/// Everything `memviz insights` reports for one device.
#[derive(Clone, Debug, PartialEq)]
pub struct Insights {
    /// Device index.
    pub device: i64,
    /// Iterations found.
    pub iterations: Iterations,
    /// Growth per stack (3 iterations or more).
    pub growth: Option<Growth>,
    /// Growth per line of the user's code (the default grouping), fastest first.
    pub growth_by_line: Vec<NamedGrowth>,
    /// Memory crossing iteration boundaries, by kind and iteration.
    pub carry_over: Vec<CarryOver>,
    /// Out-of-memory explanations.
    pub ooms: Vec<super::oom::OomReport>,
    /// Findings, problems first.
    pub findings: Vec<Finding>,
}

/// A growing group with its label and the allocations of it live at the last iteration's end.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedGrowth {
    /// The group's label (`train.py:20 (growth_leak)`).
    pub label: String,
    /// Its growth.
    pub growth: GrowingGroup,
    /// Its allocations live at the end of the last iteration ([`Replay::lives`] indices).
    pub elements: Vec<u32>,
}

/// Growth by `by` (the user's line under `rule`), labelled, with the allocations to highlight.
pub fn named_growth(
    snap: &Snapshot,
    replay: &Replay,
    its: &Iterations,
    by: &GroupBy,
    rule: &LibraryRule,
) -> Vec<NamedGrowth> {
    if its.list.len() < 3 {
        return Vec::new();
    }
    let grouping = Grouping::build(snap, replay, by, rule);
    let last = its.list.last().map(|l| l.end_row.saturating_sub(1));
    growth_by_group(replay, its, &grouping)
        .into_iter()
        .map(|g| {
            let elements = (0..replay.lives.len() as u32)
                .filter(|&e| {
                    grouping.group_of(e) == Some(g.group)
                        && replay.lives.get(e as usize).is_some_and(|l| l.live_after(last))
                })
                .collect();
            NamedGrowth { label: grouping.label(g.group), growth: g, elements }
        })
        .collect()
}

/// `1 allocation`, `3 allocations`.
fn iter_range_text(list: &[Iteration], idx: &[usize]) -> String {
    let labels: Vec<String> = idx.iter().map(|&i| (i + 1).to_string()).collect();
    match (idx.first(), idx.last()) {
        (Some(&a), Some(&b)) if b > a && b - a + 1 == idx.len() && idx.len() > 2 => {
            format!("iterations {}–{}", a + 1, b + 1)
        }
        _ if idx.len() == 1 => format!("iteration {}", labels.join("")),
        _ => {
            let _ = list;
            format!("iterations {}", labels.join(", "))
        }
    }
}

/// Analyses one device: iterations, growth, carry-over and OOMs, with findings in words.
pub fn insights(snap: &Snapshot, device_pos: usize) -> Insights {
    let replay = Replay::build(snap, device_pos);
    insights_with(snap, &replay)
}

/// [`insights`] from an existing replay.
#[allow(clippy::too_many_lines)] // one finding after another, each a few lines of text; not split yet
pub fn insights_with(snap: &Snapshot, replay: &Replay) -> Insights {
    let its = find_iterations(snap, replay);
    let growth = growth(replay, &its);
    let growing: HashSet<u32> = growth
        .as_ref()
        .filter(|g| g.significant)
        .map(|g| g.stacks.iter().map(|s| s.stack).collect())
        .unwrap_or_default();
    let carry = if its.list.len() >= 2 { carry_over(snap, replay, &its, &growing) } else { Vec::new() };
    let growth_by_line = if growth.as_ref().is_some_and(|g| g.significant) {
        named_growth(snap, replay, &its, &GroupBy::UserLine, &LibraryRule::default())
    } else {
        Vec::new()
    };
    let ooms = super::oom::explain(snap, replay);
    let mut findings = Vec::new();
    let list = &its.list;
    let max_peak = list.iter().map(|i| i.peak_bytes).max().unwrap_or(replay.peak_bytes);
    let threshold = (1u64 << 20).max(max_peak / 100);

    for o in &ooms {
        findings.push(super::oom::finding(o));
    }
    if let Some(g) = growth.as_ref().filter(|g| g.significant) {
        let mut details = vec![format!(
            "live bytes at the end of each of the {} iterations: {}",
            g.end_bytes.len(),
            g.end_bytes.iter().map(|&b| size_text(b)).collect::<Vec<_>>().join(" → ")
        )];
        for n in growth_by_line.iter().take(10) {
            let s = &n.growth;
            details.push(format!(
                "{} per iteration from {} (grew in {} of {} iterations, {} at the end)",
                signed_size_text(i128::from(s.bytes_per_iteration)),
                n.label,
                s.increases,
                s.end_bytes.len().saturating_sub(1),
                size_text(s.end_bytes.last().copied().unwrap_or(0))
            ));
        }
        if growth_by_line.len() > 10 {
            details.push(format!("and {} more growing lines", growth_by_line.len() - 10));
        }
        let inner: Vec<String> = g
            .stacks
            .iter()
            .take(5)
            .map(|s| format!("{} {}", site_label(snap, s.stack), signed_size_text(i128::from(s.bytes_per_iteration))))
            .collect();
        if !inner.is_empty() {
            details.push(format!("innermost frames: {}", inner.join(", ")));
        }
        let grow_set: HashSet<u32> = g.stacks.iter().map(|s| s.stack).collect();
        let last = list.last().map(|l| l.end_row.saturating_sub(1));
        let elements: Vec<u32> = replay
            .lives
            .iter()
            .enumerate()
            .filter(|(_, l)| grow_set.contains(&l.stack) && l.live_after(last))
            .map(|(e, _)| e as u32)
            .collect();
        findings.push(Finding {
            problem: true,
            kind: "growth",
            title: format!("Memory grows by {} per iteration over {} iterations", size_text(g.bytes_per_iteration.max(0) as u64), g.end_bytes.len()),
            details,
            suggestions: vec![
                "Something keeps a reference to each iteration's tensors: a list of losses or outputs (append `loss.item()` or `loss.detach()` instead), a growing cache, or tensors stored on `self`.".into(),
                "Keeping a loss that requires grad keeps its whole autograd graph and saved activations alive.".into(),
            ],
            bytes: g.end_bytes.last().copied().unwrap_or(0).saturating_sub(g.end_bytes.first().copied().unwrap_or(0)),
            elements,
        });
    }
    let grads: Vec<&CarryOver> =
        carry.iter().filter(|c| c.kind == CarryKind::Gradients && c.bytes >= threshold).collect();
    if let Some(&c) = grads.first() {
        let from = list.get(c.from_iteration);
        let mut details = vec![format!(
            "{} allocations ({}) made in iteration {} (entries {}..{}) are still live at the peak of {}{}",
            c.count,
            size_text(c.bytes),
            c.from_iteration + 1,
            c.alloc_rows.0,
            c.alloc_rows.1,
            iter_range_text(list, &c.live_at_peaks_of),
            if c.kept_to_end == c.count { " and never freed" } else { "" }
        )];
        details.push(format!("their sizes match {} of the {} (the parameters' shapes)", c.size_matches, c.reference));
        if c.without_frames * 2 >= c.count {
            details.push(format!(
                "{} of them have no frames: allocated on the autograd engine's thread, that is, in backward",
                c.without_frames
            ));
        } else if c
            .elements
            .iter()
            .filter_map(|&e| replay.lives.get(e as usize))
            .any(|l| has_autograd_frames(snap, l.stack))
        {
            details.push("their stacks run through the autograd engine: allocated in backward".into());
        }
        for &i in c.live_at_peaks_of.iter().take(3) {
            if let Some(it) = list.get(i) {
                details.push(format!(
                    "peak of iteration {}: {} at entry {}, of which {} are these",
                    i + 1,
                    size_text(it.peak_bytes),
                    it.peak_row,
                    size_text(c.bytes)
                ));
            }
        }
        if let Some((row, bytes)) = from.and_then(|f| replay.peak_between(f.start_row, c.alloc_rows.0)) {
            details.push(format!(
                "for comparison, iteration {} peaked at {} (entry {}) before the first of them was allocated",
                c.from_iteration + 1,
                size_text(bytes),
                row
            ));
        }
        if grads.len() > 1 {
            let more: Vec<String> = grads.iter().skip(1).take(8).map(|g| (g.from_iteration + 1).to_string()).collect();
            details.push(format!(
                "the same happens after {} more iterations ({}{})",
                grads.len() - 1,
                more.join(", "),
                if grads.len() > 9 { ", ..." } else { "" }
            ));
        }
        findings.push(Finding {
            problem: true,
            kind: "gradients",
            title: format!(
                "Gradients stay alive into the next forward pass: {} ({} tensors) raise the peak of {}",
                size_text(c.bytes),
                c.count,
                iter_range_text(list, &c.live_at_peaks_of)
            ),
            details,
            suggestions: vec![
                "Call `optimizer.zero_grad(set_to_none=True)` after `optimizer.step()` (or `model.zero_grad(set_to_none=True)` before the forward pass) so gradients are freed before the next forward pass; `set_to_none=False` zeroes them in place and keeps the memory.".into(),
                "If gradients are accumulated across iterations on purpose, this memory is expected.".into(),
            ],
            bytes: c.bytes,
            elements: grads.iter().flat_map(|g| g.elements.iter().copied()).collect(),
        });
    }
    let held: Vec<&CarryOver> =
        carry.iter().filter(|c| c.kind == CarryKind::HeldOver && c.bytes >= threshold).collect();
    if !held.is_empty() && held.len() * 2 >= list.len().saturating_sub(1) {
        let max = held.iter().map(|c| c.bytes).max().unwrap_or(0);
        let mut details: Vec<String> = held
            .iter()
            .take(5)
            .map(|c| {
                format!(
                    "{} ({}) from iteration {} live at the peak of iteration {}, mostly {}",
                    size_text(c.bytes),
                    plural(c.count, "allocation"),
                    c.from_iteration + 1,
                    c.from_iteration + 2,
                    c.sites.first().map_or("", |s| s.0.as_str())
                )
            })
            .collect();
        if held.len() > 5 {
            details.push(format!("and in {} more iterations", held.len() - 5));
        }
        findings.push(Finding {
            problem: true,
            kind: "held_over",
            title: format!("Tensors from the previous iteration are still live at each iteration's peak (up to {})", size_text(max)),
            details,
            suggestions: vec![
                "Drop references before the next forward pass (`del loss, output` at the end of the iteration); a name rebound only after the next forward keeps the old tensor alive during it.".into(),
            ],
            bytes: max,
            elements: held.iter().flat_map(|c| c.elements.iter().copied()).collect(),
        });
    }
    for kind in [CarryKind::OptimizerState, CarryKind::AllocatedOnce] {
        let all: Vec<&CarryOver> = carry.iter().filter(|c| c.kind == kind && c.bytes >= (1 << 20)).collect();
        if let Some(&c) = all.first() {
            let (title, why) = match kind {
                CarryKind::OptimizerState => (
                    format!("Optimizer state: {} ({}) allocated in iteration {} and kept (expected)", size_text(c.bytes), plural(c.count, "tensor"), c.from_iteration + 1),
                    "allocated by the optimizer (momentum buffers, Adam moments) on its first step; its size stays the same afterwards",
                ),
                _ => (
                    format!("Allocated once in iteration {} and kept: {} ({}, expected)", c.from_iteration + 1, size_text(c.bytes), plural(c.count, "allocation")),
                    "state created on first use (library workspaces such as cuBLAS's, caches) that later iterations reuse",
                ),
            };
            let mut details = vec![why.to_string()];
            details.extend(
                c.sites
                    .iter()
                    .take(3)
                    .map(|(s, b, n)| format!("{} in {} from {}", size_text(*b), plural(*n, "allocation"), s)),
            );
            if all.len() > 1 {
                details.push(format!("allocated afresh {} more times (the state was freed in between)", all.len() - 1));
            }
            findings.push(Finding {
                problem: false,
                kind: c.kind.name(),
                title,
                details,
                suggestions: Vec::new(),
                bytes: c.bytes,
                elements: c.elements.clone(),
            });
        }
    }
    if list.len() >= 2 && !findings.iter().any(|f| f.problem) {
        let src = match &its.source {
            Some(BoundarySource::Annotation { family, .. }) => format!("from the '{family}' annotations"),
            Some(BoundarySource::Periodic { period_rows, .. }) => {
                format!("from the curve's period of about {period_rows} entries")
            }
            None => String::new(),
        };
        findings.push(Finding {
            problem: false,
            kind: "steady",
            title: format!(
                "No growth and nothing carried into the next forward pass across {} iterations ({src})",
                list.len()
            ),
            details: vec![if list.len() <= 8 {
                format!(
                    "peaks per iteration: {}",
                    list.iter().map(|i| size_text(i.peak_bytes)).collect::<Vec<_>>().join(", ")
                )
            } else {
                format!(
                    "peaks per iteration from {} to {}",
                    size_text(list.iter().map(|i| i.peak_bytes).min().unwrap_or(0)),
                    size_text(list.iter().map(|i| i.peak_bytes).max().unwrap_or(0))
                )
            }],
            suggestions: Vec::new(),
            bytes: 0,
            elements: Vec::new(),
        });
    }
    findings.extend(super::recording::findings(snap, replay));
    findings.extend(super::cache::unused_cache_finding(snap, replay));
    findings.sort_by_key(|f| !f.problem);
    Insights { device: replay.device, iterations: its, growth, growth_by_line, carry_over: carry, ooms, findings }
}

impl Insights {
    /// JSON for the page and `memviz insights --json`.
    pub fn to_json(&self, snap: &Snapshot) -> Value {
        let growth = self.growth.as_ref().map(|g| {
            json!({
                "bytes_per_iteration": g.bytes_per_iteration,
                "end_bytes": g.end_bytes,
                "significant": g.significant,
                "stacks": g.stacks.iter().map(|s| json!({
                    "stack": s.stack,
                    "site": site_label(snap, s.stack),
                    "bytes_per_iteration": s.bytes_per_iteration,
                    "end_bytes": s.end_bytes,
                    "increases": s.increases,
                    "frames": super::live::stack_json(snap, s.stack),
                })).collect::<Vec<_>>(),
                "by": GroupBy::UserLine.slug(),
                "groups": self.growth_by_line.iter().map(|n| json!({
                    "value": n.label,
                    "bytes_per_iteration": n.growth.bytes_per_iteration,
                    "end_bytes": n.growth.end_bytes,
                    "increases": n.growth.increases,
                    "elements": n.elements,
                })).collect::<Vec<_>>(),
            })
        });
        let carry: Vec<Value> = self
            .carry_over
            .iter()
            .map(|c| {
                json!({
                    "kind": c.kind.name(),
                    "problem": c.kind.is_problem(),
                    "from_iteration": c.from_iteration,
                    "live_at_peaks_of": c.live_at_peaks_of,
                    "bytes": c.bytes,
                    "count": c.count,
                    "alloc_entries": [c.alloc_rows.0, c.alloc_rows.1],
                    "without_frames": c.without_frames,
                    "size_matches": c.size_matches,
                    "reference": c.reference,
                    "kept_to_end": c.kept_to_end,
                    "sites": c.sites.iter().map(|(s, b, n)| json!({"label": s, "bytes": b, "count": n})).collect::<Vec<_>>(),
                    "elements": c.elements,
                })
            })
            .collect();
        json!({
            "device": self.device,
            "findings": self.findings.iter().map(Finding::to_json).collect::<Vec<_>>(),
            "iterations": self.iterations.to_json(),
            "growth": growth,
            "carry_over": carry,
            "ooms": self.ooms.iter().map(|o| o.to_json(snap)).collect::<Vec<_>>(),
        })
    }
}
