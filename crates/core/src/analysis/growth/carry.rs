//! Carried over: allocations made in one iteration and still live at the next one's peak, and
//! what kind of memory they are (optimizer state, gradients never freed, held-over tensors, ...).

use std::collections::{BTreeMap, HashSet};

use super::iterations::{Iteration, Iterations};
use crate::analysis::Replay;
use crate::snapshot::Snapshot;

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// What kind of memory crosses an iteration boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CarryKind {
    /// Kept gradients: sizes match the parameters, never freed before the next forward pass.
    Gradients,
    /// Freed during the next iteration, but live at its peak.
    HeldOver,
    /// Optimizer state allocated once (expected).
    OptimizerState,
    /// Other state allocated once and kept (workspaces, caches; expected).
    AllocatedOnce,
}

impl CarryKind {
    /// Short name for JSON.
    pub fn name(self) -> &'static str {
        match self {
            CarryKind::Gradients => "gradients",
            CarryKind::HeldOver => "held_over",
            CarryKind::OptimizerState => "optimizer_state",
            CarryKind::AllocatedOnce => "allocated_once",
        }
    }

    /// Whether this is a problem (as opposed to expected memory).
    pub fn is_problem(self) -> bool {
        matches!(self, CarryKind::Gradients | CarryKind::HeldOver)
    }
}

/// Memory of one kind allocated in one iteration and live at the next one's peak.
#[derive(Clone, Debug, PartialEq)]
pub struct CarryOver {
    /// What it is.
    pub kind: CarryKind,
    /// Iteration it was allocated in.
    pub from_iteration: usize,
    /// Iterations whose peaks it is live at.
    pub live_at_peaks_of: Vec<usize>,
    /// Requested bytes.
    pub bytes: u64,
    /// Allocations.
    pub count: usize,
    /// First and last alloc row.
    pub alloc_rows: (u32, u32),
    /// The allocations (timeline elements).
    pub elements: Vec<u32>,
    /// Of which recorded without frames.
    pub without_frames: usize,
    /// How many match a parameter-sized reference tensor.
    pub size_matches: usize,
    /// Where the reference sizes came from.
    pub reference: &'static str,
    /// Sites, largest first: (label, bytes, count).
    pub sites: Vec<(String, u64, usize)>,
    /// Never freed before the end of the trace.
    pub kept_to_end: usize,
}
fn is_optimizer_stack(snap: &Snapshot, stack: u32) -> bool {
    snap.stack_frames(stack).any(|f| {
        let file = snap.strings.get(f.filename);
        file.contains("torch/optim/") || file.contains("torch\\optim\\")
    })
}

pub(super) fn has_autograd_frames(snap: &Snapshot, stack: u32) -> bool {
    snap.stack_frames(stack).any(|f| {
        let n = snap.strings.get(f.name);
        n.contains("torch::autograd::Engine") || n.contains("AccumulateGrad")
    })
}

/// Memory carried from each iteration into the next one's peak.
pub fn carry_over(snap: &Snapshot, replay: &Replay, its: &Iterations, growing: &HashSet<u32>) -> Vec<CarryOver> {
    let list = &its.list;
    let mut optim_stacks: HashMap<u32, bool> = HashMap::default();
    for l in &replay.lives {
        optim_stacks.entry(l.stack).or_insert_with(|| is_optimizer_stack(snap, l.stack));
    }
    let optimizer = |l: &crate::analysis::Life| {
        l.alloc_row.is_some_and(|a| its.in_optimizer(a)) || optim_stacks.get(&l.stack).copied().unwrap_or(false)
    };
    // Reference sizes: the optimizer's persistent state, else what was live before the trace.
    let mut reference: HashMap<u64, usize> = HashMap::default();
    let mut reference_name = "optimizer state tensors";
    for l in &replay.lives {
        let Some(a) = l.alloc_row else { continue };
        if !optimizer(l) {
            continue;
        }
        let end_of_its = its.of_row(a).and_then(|i| list.get(i)).map_or(a, |i| i.end_row);
        if l.free_row.is_none_or(|f| f >= end_of_its) {
            *reference.entry(l.size_bytes).or_default() += 1;
        }
    }
    if reference.is_empty() {
        reference_name = "tensors live since before the trace";
        for l in replay.lives.iter().filter(|l| l.alloc_row.is_none() && l.free_row.is_none()) {
            *reference.entry(l.size_bytes).or_default() += 1;
        }
    }
    let mut by_iteration: Vec<Vec<u32>> = vec![Vec::new(); list.len()];
    for (e, l) in replay.lives.iter().enumerate() {
        if let Some(k) = l.alloc_row.and_then(|a| its.of_row(a)) {
            if let Some(v) = by_iteration.get_mut(k) {
                v.push(e as u32);
            }
        }
    }
    let mut out: Vec<CarryOver> = Vec::new();
    for k in 0..list.len().saturating_sub(1) {
        let (Some(next), Some(mine)) = (list.get(k + 1), by_iteration.get(k)) else { continue };
        let p = next.peak_row;
        let mut groups: BTreeMap<u8, Vec<u32>> = BTreeMap::new();
        for &e in mine {
            let Some(l) = replay.lives.get(e as usize) else { continue };
            if !l.live_after(Some(p)) || growing.contains(&l.stack) {
                continue;
            }
            let kind = if optimizer(l) {
                0
            } else if l.free_row.is_none_or(|f| f >= next.end_row) {
                1
            } else {
                2
            };
            groups.entry(kind).or_default().push(e);
        }
        for (kind, elements) in groups {
            match kind {
                0 => {
                    out.push(make_carry(snap, replay, list, CarryKind::OptimizerState, k, elements, 0, reference_name))
                }
                2 => out.push(make_carry(snap, replay, list, CarryKind::HeldOver, k, elements, 0, reference_name)),
                _ => {
                    // Split kept allocations into parameter-sized (gradients) and the rest.
                    let mut left = reference.clone();
                    let (mut grads, mut once) = (Vec::new(), Vec::new());
                    for e in elements {
                        let size = replay.lives.get(e as usize).map_or(0, |l| l.size_bytes);
                        match left.get_mut(&size) {
                            Some(c) if *c > 0 => {
                                *c -= 1;
                                grads.push(e);
                            }
                            _ => once.push(e),
                        }
                    }
                    if grads.len() >= 2 {
                        let n = grads.len();
                        out.push(make_carry(snap, replay, list, CarryKind::Gradients, k, grads, n, reference_name));
                    } else {
                        once.extend(grads);
                    }
                    if !once.is_empty() {
                        out.push(make_carry(snap, replay, list, CarryKind::AllocatedOnce, k, once, 0, reference_name));
                    }
                }
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn make_carry(
    snap: &Snapshot,
    replay: &Replay,
    list: &[Iteration],
    kind: CarryKind,
    k: usize,
    mut elements: Vec<u32>,
    size_matches: usize,
    reference: &'static str,
) -> CarryOver {
    elements.sort_unstable();
    let lives: Vec<&crate::analysis::Life> = elements.iter().filter_map(|&e| replay.lives.get(e as usize)).collect();
    let bytes = lives.iter().map(|l| l.size_bytes).fold(0u64, u64::saturating_add);
    let rows: Vec<u32> = lives.iter().filter_map(|l| l.alloc_row).collect();
    let alloc_rows = (rows.iter().copied().min().unwrap_or(0), rows.iter().copied().max().unwrap_or(0));
    // Live at a peak row p for all of them: latest alloc <= p < earliest free.
    let last_alloc = rows.iter().copied().max().unwrap_or(0);
    let first_free = lives.iter().filter_map(|l| l.free_row).min().unwrap_or(u32::MAX);
    let live_at_peaks_of: Vec<usize> = list
        .iter()
        .skip(k + 1)
        .filter(|it| last_alloc <= it.peak_row && it.peak_row < first_free)
        .map(|it| it.index)
        .collect();
    // Bytes and count per (stack, live before the trace) first, so each label is made once (a
    // label walks the stack's frames), then per label.
    let mut by_stack: HashMap<(u32, bool), (u64, usize)> = HashMap::default();
    for l in &lives {
        let s = by_stack.entry((l.stack, crate::analysis::is_unrecorded(l))).or_default();
        s.0 = s.0.saturating_add(l.size_bytes);
        s.1 += 1;
    }
    let mut sites: HashMap<String, (u64, usize)> = HashMap::default();
    for ((stack, unrecorded), (b, c)) in by_stack {
        let label = if unrecorded {
            crate::analysis::BEFORE_TRACE_LABEL.to_string()
        } else {
            crate::analysis::site_label(snap, stack)
        };
        let s = sites.entry(label).or_default();
        s.0 = s.0.saturating_add(b);
        s.1 += c;
    }
    let mut sites: Vec<(String, u64, usize)> = sites.into_iter().map(|(k, (b, c))| (k, b, c)).collect();
    crate::analysis::sort_groups(&mut sites);
    CarryOver {
        kind,
        from_iteration: k,
        live_at_peaks_of,
        bytes,
        count: lives.len(),
        alloc_rows,
        without_frames: lives.iter().filter(|l| l.stack == 0).count(),
        size_matches,
        reference,
        sites,
        kept_to_end: lives.iter().filter(|l| l.never_freed()).count(),
        elements,
    }
}
