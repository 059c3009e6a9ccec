//! Memory by category (parameter, optimizer state, input, temporary, activation, gradient,
//! autograd detail, unknown) as a stacked timeline.
//!
//! Two sources:
//!
//! 1. The profiler's `export_memory_timeline` output (`.json`, or `.json.gz`): `[times_us, sizes]`
//!    where each row of `sizes` holds running byte totals per category. The row has one leading
//!    slot PyTorch never fills, then the categories in `_CATEGORY_TO_INDEX` order of
//!    `torch/profiler/_memory_profiler.py`: parameter, optimizer state, input, temporary,
//!    activation, gradient, autograd detail, unknown. The raw export (`*.raw.json.gz`:
//!    `[time_ns, action, signed bytes, category index]` tuples) is read too.
//! 2. A snapshot: the `category` of entries written by `profile_plot`, when present; otherwise
//!    categories **inferred** from stacks, lifetimes and annotations (clearly flagged), see
//!    [`infer`].

use std::collections::{HashMap, HashSet};
use std::io::Read;

use serde_json::{json, Value};

use super::growth::{find_iterations, Iterations};
use super::{AnalysisError, Replay};
use crate::snapshot::{Action, Snapshot};

/// Categories in the profiler's order.
pub const CATEGORY_NAMES: [&str; 8] =
    ["parameter", "optimizer_state", "input", "temporary", "activation", "gradient", "autograd_detail", "unknown"];

/// A memory category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// Model parameters (inferred: tensors live since before the trace and never freed).
    Parameter = 0,
    /// Optimizer state.
    OptimizerState = 1,
    /// Inputs.
    Input = 2,
    /// Short-lived tensors.
    Temporary = 3,
    /// Forward results kept for backward.
    Activation = 4,
    /// Gradients.
    Gradient = 5,
    /// Autograd bookkeeping.
    AutogradDetail = 6,
    /// Unknown.
    Unknown = 7,
}

impl Category {
    /// The category named `name` (the profiler's names, any case, spaces for underscores);
    /// unknown for any other name.
    pub fn of_name(name: &str) -> Category {
        let name = name.to_ascii_lowercase().replace(' ', "_");
        CATEGORY_NAMES
            .iter()
            .position(|&n| n == name)
            .and_then(|i| Category::ALL.get(i).copied())
            .unwrap_or(Category::Unknown)
    }

    /// All, in the profiler's order.
    pub const ALL: [Category; 8] = [
        Category::Parameter,
        Category::OptimizerState,
        Category::Input,
        Category::Temporary,
        Category::Activation,
        Category::Gradient,
        Category::AutogradDetail,
        Category::Unknown,
    ];

    /// Name (`optimizer_state`).
    pub fn name(self) -> &'static str {
        CATEGORY_NAMES.get(self as usize).copied().unwrap_or("unknown")
    }
}

/// Most decompressed bytes read from a `.gz` timeline.
const MAX_TIMELINE_BYTES: u64 = 1 << 30;

/// Bytes per category over time, for a stacked area chart.
#[derive(Clone, Debug, PartialEq)]
pub struct CategoryTimeline {
    /// Category names (columns of `bytes`).
    pub categories: Vec<String>,
    /// Time of each point, µs (absent for snapshots without times).
    pub times_us: Vec<Option<i64>>,
    /// Trace row of each point (snapshots only).
    pub rows: Vec<Option<u32>>,
    /// Bytes per category at each point.
    pub bytes: Vec<Vec<u64>>,
    /// Whether the categories were inferred by memviz (not recorded by PyTorch).
    pub inferred: bool,
    /// Where the categories came from, in words.
    pub source: String,
}

impl CategoryTimeline {
    /// Total bytes at a point.
    pub fn total_at(&self, i: usize) -> u64 {
        self.bytes.get(i).map_or(0, |r| r.iter().fold(0u64, |a, &b| a.saturating_add(b)))
    }

    /// The point with the highest total (first one) and that total.
    pub fn peak(&self) -> Option<(usize, u64)> {
        let mut best: Option<(usize, u64)> = None;
        for i in 0..self.bytes.len() {
            let t = self.total_at(i);
            if best.is_none_or(|(_, b)| t > b) {
                best = Some((i, t));
            }
        }
        best
    }

    /// At most `max_points` points: from each slice, the point with the highest total (first and
    /// last points always kept).
    pub fn downsample(&self, max_points: usize) -> CategoryTimeline {
        if max_points == 0 || self.bytes.len() <= max_points {
            return self.clone();
        }
        self.pick(&self.downsample_range(0, self.bytes.len() - 1, max_points))
    }

    /// Indices of at most `max_points` of the points `first..=last` (clamped to the timeline):
    /// the first, the last, and between them the point of the highest total of each of
    /// `max_points - 2` equal slices (the earliest among equals). All of them when they are few.
    pub fn downsample_range(&self, first: usize, last: usize, max_points: usize) -> Vec<usize> {
        if self.bytes.is_empty() {
            return Vec::new();
        }
        let last = last.min(self.bytes.len() - 1);
        let first = first.min(last);
        let n = last - first + 1;
        if max_points == 0 || n <= max_points.max(2) {
            return (first..=last).collect();
        }
        let inner = max_points.saturating_sub(2).max(1);
        let mut keep: Vec<usize> = vec![first];
        for b in 0..inner {
            let a0 = first + 1 + b * (n - 2) / inner;
            let a1 = (first + 1 + (b + 1) * (n - 2) / inner).max(a0 + 1).min(last);
            if let Some(i) = (a0..a1).max_by_key(|&i| (self.total_at(i), std::cmp::Reverse(i))) {
                keep.push(i);
            }
        }
        keep.push(last);
        keep.dedup();
        keep
    }

    /// The points at `keep` (indices in order; one past the end is left out).
    pub fn pick(&self, keep: &[usize]) -> CategoryTimeline {
        let keep: Vec<usize> = keep.iter().copied().filter(|&i| i < self.bytes.len()).collect();
        CategoryTimeline {
            categories: self.categories.clone(),
            times_us: keep.iter().map(|&i| self.times_us.get(i).copied().flatten()).collect(),
            rows: keep.iter().map(|&i| self.rows.get(i).copied().flatten()).collect(),
            bytes: keep.iter().filter_map(|&i| self.bytes.get(i).cloned()).collect(),
            inferred: self.inferred,
            source: self.source.clone(),
        }
    }

    /// JSON for the page and `memviz categories --json`.
    pub fn to_json(&self) -> Value {
        let peak = self.peak();
        json!({
            "source": self.source,
            "inferred": self.inferred,
            "categories": self.categories,
            "times_us": self.times_us,
            "entries": self.rows,
            "bytes": self.bytes,
            "peak": peak.map(|(i, t)| json!({
                "index": i,
                "time_us": self.times_us.get(i).copied().flatten(),
                "entry": self.rows.get(i).copied().flatten(),
                "total_bytes": t,
                "bytes": self.bytes.get(i),
            })),
        })
    }
}

fn as_i64(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| u.min(i64::MAX as u64) as i64))
        .or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
}

/// Reads the profiler's memory timeline (`export_memory_timeline` `.json` / `.json.gz`, or the
/// raw export).
#[allow(clippy::too_many_lines)] // reads both export layouts field by field; not split yet
pub fn read_profiler_timeline(bytes: &[u8]) -> Result<CategoryTimeline, AnalysisError> {
    let data: Vec<u8>;
    let text: &[u8] = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes)
            .take(MAX_TIMELINE_BYTES)
            .read_to_end(&mut out)
            .map_err(|e| AnalysisError::BadTimeline(format!("cannot decompress the gzip data: {e}")))?;
        data = out;
        &data
    } else {
        bytes
    };
    let v: Value =
        serde_json::from_slice(text).map_err(|e| AnalysisError::BadTimeline(format!("not a memory timeline: {e}")))?;
    let bad = |why: &str| AnalysisError::BadTimeline(format!("not a profiler memory timeline: {why}"));
    let top = v.as_array().ok_or_else(|| bad("expected a JSON list"))?;
    // [times, sizes]
    if let (2, Some(times), Some(sizes)) =
        (top.len(), top.first().and_then(Value::as_array), top.get(1).and_then(Value::as_array))
    {
        if times.len() == sizes.len() && sizes.iter().all(Value::is_array) {
            let width = sizes.first().and_then(Value::as_array).map_or(CATEGORY_NAMES.len() + 1, Vec::len);
            let mut rows: Vec<Vec<i64>> = Vec::with_capacity(sizes.len());
            for (i, r) in sizes.iter().enumerate() {
                let r = r.as_array().ok_or_else(|| bad("a row of sizes is not a list"))?;
                if r.len() != width {
                    return Err(bad(&format!("row {i} of sizes has {} values, the first has {width}", r.len())));
                }
                rows.push(
                    r.iter()
                        .map(|x| as_i64(x).ok_or_else(|| bad(&format!("row {i} holds a value that is not a number"))))
                        .collect::<Result<_, _>>()?,
                );
            }
            // The profiler writes 1 + 8 columns; column 0 stays 0 (its `+ 1` offset).
            let lead_unused =
                width == CATEGORY_NAMES.len() + 1 && rows.iter().all(|r| r.first().copied().unwrap_or(0) == 0);
            let (skip, names): (usize, Vec<String>) = if width == CATEGORY_NAMES.len() + 1 {
                if lead_unused {
                    (1, CATEGORY_NAMES.iter().map(|s| s.to_string()).collect())
                } else {
                    (
                        0,
                        std::iter::once("other".to_string())
                            .chain(CATEGORY_NAMES.iter().map(|s| s.to_string()))
                            .collect(),
                    )
                }
            } else if width == CATEGORY_NAMES.len() {
                (0, CATEGORY_NAMES.iter().map(|s| s.to_string()).collect())
            } else {
                (0, (0..width).map(|i| format!("category {i}")).collect())
            };
            let mut times_us = Vec::with_capacity(times.len());
            for (i, t) in times.iter().enumerate() {
                times_us.push(Some(as_i64(t).ok_or_else(|| bad(&format!("time {i} is not a number")))?));
            }
            return Ok(CategoryTimeline {
                categories: names,
                rows: vec![None; times_us.len()],
                times_us,
                bytes: rows.into_iter().map(|r| r.into_iter().skip(skip).map(|x| x.max(0) as u64).collect()).collect(),
                inferred: false,
                source: "PyTorch profiler (export_memory_timeline)".into(),
            });
        }
    }
    // Raw events: [time_ns, action, signed bytes, category index].
    if !top.is_empty() && top.iter().all(|e| e.as_array().is_some_and(|a| a.len() == 4)) {
        let mut events: Vec<(i64, i64, usize)> = Vec::with_capacity(top.len());
        for (i, e) in top.iter().enumerate() {
            let a = e.as_array().ok_or_else(|| bad("an event is not a list"))?;
            let num = |j: usize| {
                a.get(j).and_then(as_i64).ok_or_else(|| bad(&format!("event {i} holds a value that is not a number")))
            };
            let cat = num(3)?;
            let cat = usize::try_from(cat)
                .ok()
                .filter(|&c| c < CATEGORY_NAMES.len())
                .ok_or_else(|| bad(&format!("event {i} has category index {cat}")))?;
            events.push((num(0)?, num(2)?, cat));
        }
        let t_min = events.iter().map(|e| e.0).filter(|&t| t > 0).min().unwrap_or(0);
        let mut times_us: Vec<Option<i64>> = Vec::new();
        let mut bytes: Vec<Vec<u64>> = Vec::new();
        let mut cur = [0i128; 8];
        // Events of one microsecond make one point; what was live before the profiler started
        // (time -1) makes its own first point, as in export_memory_timeline.
        let mut last: Option<(bool, i64)> = None;
        for (t, delta, cat) in events {
            let key = if t < 0 { (true, t_min / 1000) } else { (false, t / 1000) };
            if last != Some(key) {
                times_us.push(Some(key.1));
                bytes.push(Vec::new());
                last = Some(key);
            }
            if let Some(c) = cur.get_mut(cat) {
                *c += i128::from(delta);
            }
            if let Some(row) = bytes.last_mut() {
                *row = cur.iter().map(|&x| x.clamp(0, i128::from(u64::MAX)) as u64).collect();
            }
        }
        return Ok(CategoryTimeline {
            categories: CATEGORY_NAMES.iter().map(|s| s.to_string()).collect(),
            rows: vec![None; times_us.len()],
            times_us,
            bytes,
            inferred: false,
            source: "PyTorch profiler (export_memory_timeline_raw)".into(),
        });
    }
    Err(bad("expected [times, sizes] or a list of [time, action, bytes, category] events"))
}

/// Categories of a snapshot's allocations.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotCategories {
    /// Category of each timeline element.
    pub per_element: Vec<Category>,
    /// Whether each element's category is the profiler's, matched by time and size
    /// ([`super::categories_join`]); empty when no profiler timeline was joined.
    pub matched: Vec<bool>,
    /// Bytes per category over the trace.
    pub timeline: CategoryTimeline,
    /// Bytes per category at the peak of live bytes.
    pub at_peak: Vec<(Category, u64)>,
    /// How the categories were decided, one line each.
    pub notes: Vec<String>,
}

fn stack_is_backward(snap: &Snapshot, stack: u32) -> bool {
    snap.stack_frames(stack).any(|f| {
        let n = snap.strings.get(f.name);
        let file = snap.strings.get(f.filename);
        (file.contains("torch/autograd/") && (n == "backward" || n == "_make_grads" || n == "_engine_run_backward"))
            || n.contains("torch::autograd::Engine")
    })
}

fn stack_is_optimizer(snap: &Snapshot, stack: u32) -> bool {
    snap.stack_frames(stack).any(|f| snap.strings.get(f.filename).contains("torch/optim/"))
}

/// Categories of a snapshot: recorded (`profile_plot` pickles) or inferred. Inference rules:
///
/// - live since before the trace and never freed: parameter (or other state created before
///   recording);
/// - allocated inside `Optimizer.step` or with `torch/optim` frames: optimizer state if still live
///   when its iteration ends, else temporary;
/// - each iteration's backward starts at its first allocation made by autograd (`_make_grads`,
///   the autograd engine, or a region named like `backward`); before it: activation when still
///   live when backward starts, else temporary;
/// - from backward on: gradient when the size is a parameter's (the sizes of the optimizer's
///   persistent state, else of the tensors live since before the trace) and it is still live
///   when the optimizer step starts (the iteration's end without one), else temporary when freed
///   within the iteration, else unknown;
/// - iterations without a backward: activation when still live at the iteration's end, else
///   temporary; outside iterations: unknown.
pub fn infer(snap: &Snapshot, replay: &Replay, its: &Iterations, max_points: usize) -> SnapshotCategories {
    let (per_element, names, recorded, notes) = classify(snap, replay, its);
    let source = if recorded { "snapshot (profile_plot categories)" } else { "inferred from the snapshot" };
    summarize(
        snap,
        replay,
        Summary { per_element, names, inferred: !recorded, source: source.into(), notes },
        max_points,
    )
}

/// What [`summarize`] turns into a [`SnapshotCategories`].
pub(crate) struct Summary {
    /// Category of each element.
    pub per_element: Vec<Category>,
    /// Category names, in the order of [`Category::ALL`].
    pub names: Vec<String>,
    /// Whether any category was inferred.
    pub inferred: bool,
    /// Where the categories come from.
    pub source: String,
    /// How they were decided.
    pub notes: Vec<String>,
}

/// The categories of [`infer`]'s rules (or recorded), each element's, with the names, whether
/// they were recorded, and the notes.
#[allow(clippy::too_many_lines)] // the category rules listed on `infer`, in one pass; not split yet
pub(crate) fn classify(
    snap: &Snapshot,
    replay: &Replay,
    its: &Iterations,
) -> (Vec<Category>, Vec<String>, bool, Vec<String>) {
    let t = snap.devices.get(replay.device_pos).map(|d| &d.trace);
    let recorded = t.is_some_and(|t| t.category.is_present());
    let mut notes = Vec::new();
    let mut per_element = vec![Category::Unknown; replay.lives.len()];
    let names: Vec<String>;
    if recorded {
        // profile_plot pickles: the category of the alloc entry.
        let mut order: Vec<String> = CATEGORY_NAMES.iter().map(|s| s.to_string()).collect();
        for (e, l) in replay.lives.iter().enumerate() {
            let c = l
                .alloc_row
                .or(l.free_row)
                .and_then(|r| t.and_then(|t| t.category.get(r as usize)))
                .map_or(Category::Unknown, |c| Category::of_name(snap.strings.get(c)));
            if let Some(slot) = per_element.get_mut(e) {
                *slot = c;
            }
        }
        order.dedup();
        names = order;
        notes.push("categories recorded in the snapshot (profile_plot)".into());
    } else {
        names = CATEGORY_NAMES.iter().map(|s| s.to_string()).collect();
        let mut optim: HashMap<u32, bool> = HashMap::new();
        let mut is_opt = |l: &super::Life| {
            l.alloc_row.is_some_and(|a| its.in_optimizer(a))
                || *optim.entry(l.stack).or_insert_with_key(|&s| stack_is_optimizer(snap, s))
        };
        // Parameter sizes: those of the optimizer's persistent state, else of what was live before the trace.
        let mut param_sizes: HashSet<u64> = HashSet::new();
        let mut opt_flags = vec![false; replay.lives.len()];
        for (e, l) in replay.lives.iter().enumerate() {
            let o = is_opt(l);
            if let Some(slot) = opt_flags.get_mut(e) {
                *slot = o;
            }
            if let (true, Some(a)) = (o, l.alloc_row) {
                let end = its.of_row(a).and_then(|k| its.list.get(k)).map_or(a, |it| it.end_row);
                if l.free_row.is_none_or(|f| f >= end) {
                    param_sizes.insert(l.size_bytes);
                }
            }
        }
        let from_optimizer = !param_sizes.is_empty();
        if !from_optimizer {
            param_sizes = replay
                .lives
                .iter()
                .filter(|l| l.alloc_row.is_none() && l.free_row.is_none())
                .map(|l| l.size_bytes)
                .collect();
        }
        let mut backward: HashMap<u32, bool> = HashMap::new();
        // Backward start per iteration.
        let bw_regions: Vec<u32> = {
            let idx: Vec<(i64, u32)> = t
                .map(|t| (0..t.len()).filter_map(|r| t.time_us_at(r).map(|x| (x, r as u32))).collect())
                .unwrap_or_default();
            snap.annotations
                .iter()
                .filter(|a| a.start && snap.strings.get(a.name).to_ascii_lowercase().contains("backward"))
                .filter_map(|a| a.time_us)
                .map(|tu| idx.get(idx.partition_point(|&(x, _)| x < tu)).map_or(u32::MAX, |&(_, r)| r))
                .collect()
        };
        let mut bw_start: Vec<Option<u32>> = vec![None; its.list.len()];
        for (k, it) in its.list.iter().enumerate() {
            let by_region = bw_regions.iter().copied().filter(|&r| r >= it.start_row && r < it.end_row).min();
            let by_stack = (it.start_row..it.end_row).find(|&r| {
                let Some(t) = t else { return false };
                t.action.get(r as usize) == Some(&Action::Alloc)
                    && *backward
                        .entry(t.stack.get(r as usize).copied().unwrap_or(0))
                        .or_insert_with_key(|&s| stack_is_backward(snap, s))
            });
            if let Some(slot) = bw_start.get_mut(k) {
                *slot = match (by_region, by_stack) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        let opt_start_in = |k: usize| -> Option<u32> {
            let it = its.list.get(k)?;
            its.optimizer_windows.iter().find(|w| w.0 >= it.start_row && w.0 < it.end_row).map(|w| w.0)
        };
        for (e, l) in replay.lives.iter().enumerate() {
            let c = match l.alloc_row {
                None => {
                    if l.free_row.is_none() {
                        Category::Parameter
                    } else {
                        Category::Unknown
                    }
                }
                Some(a) => {
                    let k = its.of_row(a);
                    let it = k.and_then(|k| its.list.get(k));
                    let is_opt = opt_flags.get(e).copied().unwrap_or(false);
                    match (k, it) {
                        _ if is_opt => {
                            let end = it.map_or(a, |i| i.end_row);
                            if l.free_row.is_none_or(|f| f >= end) {
                                Category::OptimizerState
                            } else {
                                Category::Temporary
                            }
                        }
                        (Some(k), Some(it)) => match bw_start.get(k).copied().flatten() {
                            Some(bw) if a < bw => {
                                if l.free_row.is_none_or(|f| f >= bw) {
                                    Category::Activation
                                } else {
                                    Category::Temporary
                                }
                            }
                            Some(_) => {
                                // Still live when the optimizer step starts (or the iteration ends).
                                let due = opt_start_in(k).unwrap_or(it.end_row);
                                if param_sizes.contains(&l.size_bytes) && l.free_row.is_none_or(|f| f >= due) {
                                    Category::Gradient
                                } else if l.free_row.is_some_and(|f| f < it.end_row) {
                                    Category::Temporary
                                } else {
                                    Category::Unknown
                                }
                            }
                            None => {
                                if l.free_row.is_none_or(|f| f >= it.end_row) {
                                    Category::Activation
                                } else {
                                    Category::Temporary
                                }
                            }
                        },
                        _ => Category::Unknown,
                    }
                }
            };
            if let Some(slot) = per_element.get_mut(e) {
                *slot = c;
            }
        }
        notes.push(
            "categories inferred by memviz from stacks, lifetimes and annotations, not recorded by PyTorch".into(),
        );
        if its.list.is_empty() {
            notes.push("no iterations found: allocations made during the trace are unknown".into());
        }
        if from_optimizer {
            notes.push("gradients recognised by the sizes of the optimizer's state tensors".into());
        } else if param_sizes.is_empty() {
            notes.push(
                "no optimizer state and nothing live before the trace: no parameter sizes to recognise gradients by"
                    .into(),
            );
        } else {
            notes.push("gradients recognised by the sizes of tensors live since before the trace".into());
        }
    }
    (per_element, names, recorded, notes)
}

/// Bytes per category after every row of the replay, given each element's category, sampled to
/// at most `max_points`, and at the peak of live bytes.
pub(crate) fn summarize(snap: &Snapshot, replay: &Replay, sum: Summary, max_points: usize) -> SnapshotCategories {
    let Summary { per_element, names, inferred, source, notes } = sum;
    let t = snap.devices.get(replay.device_pos).map(|d| &d.trace);
    // Bytes per category after every row, sampled on the fly: for each slice of rows, the row
    // with the highest total (memory stays proportional to the points kept).
    let n = replay.rows;
    let mut offsets = vec![0u32; n + 1];
    let mut cur = [0i128; 8];
    for (l, &c) in replay.lives.iter().zip(&per_element) {
        match l.alloc_row {
            None => {
                if let Some(x) = cur.get_mut(c as usize) {
                    *x += i128::from(l.size_bytes);
                }
            }
            Some(a) => {
                if let Some(o) = offsets.get_mut(a as usize + 1) {
                    *o += 1;
                }
            }
        }
        if let Some(o) = l.free_row.and_then(|f| offsets.get_mut(f as usize + 1)) {
            *o += 1;
        }
    }
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
    let mut fill = offsets.clone();
    // (category, freed, bytes): 16 bytes an event.
    let mut events: Vec<(u8, bool, u64)> = vec![(0, false, 0); offsets.last().copied().unwrap_or(0) as usize];
    for (l, &c) in replay.lives.iter().zip(&per_element) {
        let mut put = |row: u32, freed: bool| {
            if let Some(slot) = fill.get_mut(row as usize) {
                if let Some(e) = events.get_mut(*slot as usize) {
                    *e = (c as u8, freed, l.size_bytes);
                }
                *slot += 1;
            }
        };
        if let Some(a) = l.alloc_row {
            put(a, false);
        }
        if let Some(f) = l.free_row {
            put(f, true);
        }
    }
    let snapshot =
        |cur: &[i128; 8]| -> Vec<u64> { cur.iter().map(|&x| x.clamp(0, i128::from(u64::MAX)) as u64).collect() };
    let mut timeline = CategoryTimeline {
        categories: names,
        times_us: vec![None],
        rows: vec![None],
        bytes: vec![snapshot(&cur)],
        inferred,
        source,
    };
    let mut at_peak: Vec<(Category, u64)> = Category::ALL.iter().zip(snapshot(&cur)).map(|(&c, b)| (c, b)).collect();
    let buckets = max_points.max(3) - 2;
    let per = n.div_ceil(buckets).max(1);
    let mut best: Option<(u64, u32, Vec<u64>)> = None;
    for row in 0..n {
        let (a, b) =
            (offsets.get(row).copied().unwrap_or(0) as usize, offsets.get(row + 1).copied().unwrap_or(0) as usize);
        for &(ci, freed, size) in events.get(a..b).unwrap_or(&[]) {
            if let Some(x) = cur.get_mut(ci as usize) {
                *x += if freed { -i128::from(size) } else { i128::from(size) };
            }
        }
        let now = snapshot(&cur);
        let total = now.iter().fold(0u64, |s, &x| s.saturating_add(x));
        if Some(row as u32) == replay.peak_row {
            at_peak = Category::ALL.iter().zip(now.iter().copied()).map(|(&c, b)| (c, b)).collect();
        }
        let last = row + 1 == n;
        if best.as_ref().is_none_or(|b| total > b.0) {
            best = Some((total, row as u32, now.clone()));
        }
        if (row + 1) % per == 0 || last {
            if let Some((_, r, v)) = best.take() {
                let is_last = r as usize + 1 == n;
                timeline.times_us.push(t.and_then(|t| t.time_us_at(r as usize)));
                timeline.rows.push(Some(r));
                timeline.bytes.push(v);
                if last && !is_last {
                    timeline.times_us.push(t.and_then(|t| t.time_us_at(row)));
                    timeline.rows.push(Some(row as u32));
                    timeline.bytes.push(now);
                }
            }
        }
    }
    SnapshotCategories { per_element, matched: Vec::new(), timeline, at_peak, notes }
}

/// [`infer`] with iterations found from the snapshot.
pub fn infer_categories(snap: &Snapshot, device_pos: usize, max_points: usize) -> SnapshotCategories {
    let replay = Replay::build(snap, device_pos);
    let its = find_iterations(snap, &replay);
    infer(snap, &replay, &its, max_points)
}

impl SnapshotCategories {
    /// JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "inferred": self.timeline.inferred,
            "matched_allocations": self.matched.iter().filter(|&&m| m).count(),
            "notes": self.notes,
            "at_peak": self.at_peak.iter().map(|(c, b)| json!({"category": c.name(), "bytes": b})).collect::<Vec<_>>(),
            "timeline": self.timeline.to_json(),
            "element_categories": self.per_element.iter().map(|c| *c as u8).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::analysis::test_util::{fixture, fixture_path};

    /// A window of the timeline cut to a few points keeps its ends and its highest total, and
    /// stays inside the timeline.
    #[test]
    fn a_range_is_cut_to_its_ends_and_each_slices_highest_point() {
        let t = read_profiler_timeline(&std::fs::read(fixture_path("resnet50_profile.timeline.json")).expect("read"))
            .expect("json");
        let keep = t.downsample_range(2000, 3000, 50);
        assert_eq!((keep.len(), keep.first(), keep.last()), (50, Some(&2000), Some(&3000)));
        assert!(keep.windows(2).all(|w| w[0] < w[1]), "in order");
        let highest = (2000..=3000).map(|i| t.total_at(i)).max();
        assert_eq!(keep.iter().map(|&i| t.total_at(i)).max(), highest);
        assert_eq!(t.downsample_range(7830, 99_999, 50), (7830..=7833).collect::<Vec<_>>(), "clamped, all of few");
        assert_eq!(t.pick(&[0, 99_999]).bytes.len(), 1, "a point past the end is left out");
        assert_eq!(t.downsample(100), t.pick(&t.downsample_range(0, 7833, 100)));
    }

    // Figures from: python3 tests/gen/verify_categories.py tests/data/real/resnet50_profile.timeline.json.gz
    #[test]
    fn profiler_timeline_json_and_gz_agree() {
        let (a, b) =
            (fixture_path("resnet50_profile.timeline.json"), fixture_path("resnet50_profile.timeline.json.gz"));
        let ta = read_profiler_timeline(&std::fs::read(a).expect("read")).expect("json");
        let tb = read_profiler_timeline(&std::fs::read(b).expect("read")).expect("gz");
        assert_eq!(ta, tb);
        assert_eq!(ta.categories.len(), 8);
        assert_eq!(ta.bytes.len(), 7834);
        assert!(!ta.inferred);
        assert_eq!(ta.peak(), Some((2551, 415_178_728)));
        assert_eq!(ta.times_us[2551], Some(1_795_967_804_567_671));
        assert_eq!(
            ta.bytes[2551],
            vec![102_440_608, 105_115_648, 606_112, 0, 70_457_344, 91_183_104, 1_204_224, 44_171_688]
        );
        let d = ta.downsample(100);
        assert!(d.bytes.len() <= 100);
        assert_eq!(d.peak().map(|p| p.1), ta.peak().map(|p| p.1));
    }

    fn at_peak(name: &str) -> Option<Vec<u64>> {
        let snap = fixture(name);
        let c = infer_categories(&snap, 0, 200);
        assert!(c.timeline.inferred);
        assert!(c.timeline.bytes.len() <= 200);
        Some(c.at_peak.iter().map(|x| x.1).collect())
    }

    // python3 tests/gen/verify_categories.py tests/data/real/resnet50_fixed.pickle (and _buggy)
    #[test]
    fn inferred_categories_at_the_peak() {
        if let Some(v) = at_peak("resnet50_fixed.pickle") {
            assert_eq!(v, vec![137_650_152, 102_228_128, 0, 11_821_060, 69_109_156, 89_348_000, 0, 33_554_432]);
        }
        if let Some(v) = at_peak("resnet50_buggy.pickle") {
            assert_eq!(v, vec![137_650_152, 102_228_128, 0, 10_057_732, 84_491_684, 102_228_128, 0, 33_554_432]);
        }
        if let Some(v) = at_peak("gpt_amp_annotated.pickle") {
            assert_eq!(v, vec![368_450_624, 736_835_584, 0, 1_048_576_004, 1_645_609_060, 0, 0, 33_554_432]);
        }
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(read_profiler_timeline(b"{}").is_err());
        assert!(read_profiler_timeline(&[0x1f, 0x8b, 0, 1, 2]).is_err());
        assert!(read_profiler_timeline(b"[[1,2],[[0,1]]]").is_err());
        let raw = read_profiler_timeline(b"[[-1,1,100,0],[5000,2,50,4],[9000,4,-50,4]]").expect("raw");
        assert_eq!(raw.bytes.last().map(|r| r[0]), Some(100));
        assert_eq!(raw.times_us, vec![Some(5), Some(5), Some(9)], "what was live before is its own point");
    }
}
