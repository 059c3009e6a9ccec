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

/// [`Iterations::of_row`] and [`Iterations::in_optimizer`] for many rows: when a row falls where
/// the last one did (the same iteration, the same place among the optimizer windows), the answer
/// comes without a search; otherwise by the same binary search.
struct RowIndex<'a> {
    its: &'a Iterations,
    /// The last `partition_point` into the iterations.
    it: usize,
    /// The last `partition_point` into the optimizer windows.
    window: usize,
}

impl RowIndex<'_> {
    fn of_row(&mut self, row: u32) -> Option<usize> {
        let list = &self.its.list;
        let i = self.it;
        // `i` is the partition point of `end_row <= row` when it splits the sorted list there.
        let fits = i.checked_sub(1).is_none_or(|j| list.get(j).is_some_and(|it| it.end_row <= row))
            && list.get(i).is_none_or(|it| it.end_row > row);
        if !fits {
            self.it = list.partition_point(|it| it.end_row <= row);
        }
        list.get(self.it).filter(|it| it.start_row <= row).map(|it| it.index)
    }

    fn in_optimizer(&mut self, row: u32) -> bool {
        let w = &self.its.optimizer_windows;
        let i = self.window;
        let fits = i.checked_sub(1).is_none_or(|j| w.get(j).is_some_and(|&(a, _)| a <= row))
            && w.get(i).is_none_or(|&(a, _)| a > row);
        if !fits {
            self.window = w.partition_point(|&(a, _)| a <= row);
        }
        self.window.checked_sub(1).and_then(|j| w.get(j)).is_some_and(|&(a, b)| a <= row && row < b)
    }
}

/// Per lifetime, once: the iteration of its alloc ([`Iterations::of_row`]) and whether it is the
/// optimizer's memory (allocated in an `Optimizer.step` region, or from an optimizer's stack).
fn life_facts(snap: &Snapshot, replay: &Replay, its: &Iterations) -> (Vec<Option<usize>>, Vec<bool>) {
    let mut optim_stacks: HashMap<u32, bool> = HashMap::default();
    for l in &replay.lives {
        optim_stacks.entry(l.stack).or_insert_with(|| is_optimizer_stack(snap, l.stack));
    }
    let mut rows = RowIndex { its, it: 0, window: 0 };
    replay
        .lives
        .iter()
        .map(|l| {
            let it = l.alloc_row.and_then(|a| rows.of_row(a));
            let optimizer = l.alloc_row.is_some_and(|a| rows.in_optimizer(a))
                || optim_stacks.get(&l.stack).copied().unwrap_or(false);
            (it, optimizer)
        })
        .unzip()
}

/// Reference sizes (how many tensors of each size) and what they are: the optimizer's persistent
/// state, else what was live before the trace.
fn reference_sizes(
    replay: &Replay,
    list: &[Iteration],
    life_iteration: &[Option<usize>],
    life_optimizer: &[bool],
) -> (HashMap<u64, usize>, &'static str) {
    let mut reference: HashMap<u64, usize> = HashMap::default();
    for (e, l) in replay.lives.iter().enumerate() {
        let Some(a) = l.alloc_row else { continue };
        if !life_optimizer.get(e).copied().unwrap_or(false) {
            continue;
        }
        let end_of_its = life_iteration.get(e).copied().flatten().and_then(|i| list.get(i)).map_or(a, |i| i.end_row);
        if l.free_row.is_none_or(|f| f >= end_of_its) {
            *reference.entry(l.size_bytes).or_default() += 1;
        }
    }
    if !reference.is_empty() {
        return (reference, "optimizer state tensors");
    }
    for l in replay.lives.iter().filter(|l| l.alloc_row.is_none() && l.free_row.is_none()) {
        *reference.entry(l.size_bytes).or_default() += 1;
    }
    (reference, "tensors live since before the trace")
}

/// Memory carried from each iteration into the next one's peak.
pub fn carry_over(snap: &Snapshot, replay: &Replay, its: &Iterations, growing: &HashSet<u32>) -> Vec<CarryOver> {
    let list = &its.list;
    let (life_iteration, life_optimizer) = life_facts(snap, replay, its);
    let optimizer = |e: usize| life_optimizer.get(e).copied().unwrap_or(false);
    let (reference, reference_name) = reference_sizes(replay, list, &life_iteration, &life_optimizer);
    let mut by_iteration: Vec<Vec<u32>> = vec![Vec::new(); list.len()];
    for (e, it) in life_iteration.iter().enumerate() {
        if let Some(k) = *it {
            if let Some(v) = by_iteration.get_mut(k) {
                v.push(e as u32);
            }
        }
    }
    let mut out: Vec<CarryOver> = Vec::new();
    // Site labels by stack, made once for all iterations (a label walks the stack's frames).
    let mut labels: HashMap<u32, String> = HashMap::default();
    for k in 0..list.len().saturating_sub(1) {
        let (Some(next), Some(mine)) = (list.get(k + 1), by_iteration.get(k)) else { continue };
        let p = next.peak_row;
        let mut groups: BTreeMap<u8, Vec<u32>> = BTreeMap::new();
        for &e in mine {
            let Some(l) = replay.lives.get(e as usize) else { continue };
            if !l.live_after(Some(p)) || growing.contains(&l.stack) {
                continue;
            }
            let kind = if optimizer(e as usize) {
                0
            } else if l.free_row.is_none_or(|f| f >= next.end_row) {
                1
            } else {
                2
            };
            groups.entry(kind).or_default().push(e);
        }
        let mut make = |kind, elements, size_matches| {
            make_carry(snap, replay, list, kind, k, elements, size_matches, reference_name, &mut labels)
        };
        for (kind, elements) in groups {
            match kind {
                0 => out.push(make(CarryKind::OptimizerState, elements, 0)),
                2 => out.push(make(CarryKind::HeldOver, elements, 0)),
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
                        out.push(make(CarryKind::Gradients, grads, n));
                    } else {
                        once.extend(grads);
                    }
                    if !once.is_empty() {
                        out.push(make(CarryKind::AllocatedOnce, once, 0));
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
    labels: &mut HashMap<u32, String>,
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
    // Bytes and count per (stack, live before the trace) first, so each label is looked up once
    // (and made once per stack, in `labels`: a label walks the stack's frames), then per label.
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
            labels.entry(stack).or_insert_with(|| crate::analysis::site_label(snap, stack)).clone()
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

#[cfg(test)]
mod tests {
    use super::super::iterations::{Iteration, Iterations};
    use super::RowIndex;

    #[test]
    fn row_index_answers_as_the_searches_do() {
        let iteration = |index: usize, start_row: u32, end_row: u32| Iteration {
            index,
            label: format!("iteration {}", index + 1),
            start_row,
            end_row,
            start_time_us: None,
            start_bytes: 0,
            peak_row: start_row,
            peak_bytes: 0,
            end_bytes: 0,
        };
        // A gap before the first iteration and between the second and third.
        let its = Iterations {
            source: None,
            list: vec![iteration(0, 5, 10), iteration(1, 10, 20), iteration(2, 25, 30)],
            optimizer_windows: vec![(7, 9), (15, 20), (28, 29)],
        };
        let mut rows = RowIndex { its: &its, it: 0, window: 0 };
        // In order, backwards, and jumping about.
        let order: Vec<u32> = (0..35).chain((0..35).rev()).chain([3, 29, 0, 17, 17, 34, 9, 10, 25, 24]).collect();
        for row in order {
            assert_eq!(rows.of_row(row), its.of_row(row), "row {row}");
            assert_eq!(rows.in_optimizer(row), its.in_optimizer(row), "row {row}");
        }
    }
}
