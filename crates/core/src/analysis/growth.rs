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

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{json, Value};

use super::{signed_size_text, site_label, size_text, time_of_row, Replay};
use crate::snapshot::Snapshot;

/// Which edge of a repeated annotation marks an iteration boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// Each START begins an iteration.
    Start,
    /// Each END ends one.
    End,
}

/// Where the iteration boundaries came from.
#[derive(Clone, Debug, PartialEq)]
pub enum BoundarySource {
    /// A repeated `external_annotations` name.
    Annotation {
        /// The name with numbers replaced by `N` (`ProfilerStep#N`).
        family: String,
        /// Which edge.
        edge: Edge,
    },
    /// The period of the live-bytes curve.
    Periodic {
        /// Entries per iteration.
        period_rows: u32,
        /// Autocorrelation at that period (0..1).
        score: f64,
    },
}

/// One iteration: trace rows `[start_row, end_row)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Iteration {
    /// 0-based position.
    pub index: usize,
    /// The annotation's name (`ProfilerStep#3`) or `iteration N` (1-based).
    pub label: String,
    /// First row.
    pub start_row: u32,
    /// One past the last row.
    pub end_row: u32,
    /// Time of the first row.
    pub start_time_us: Option<i64>,
    /// Live bytes just before the first row.
    pub start_bytes: u64,
    /// First row at which the iteration's highest live bytes are reached.
    pub peak_row: u32,
    /// The iteration's highest live bytes.
    pub peak_bytes: u64,
    /// Live bytes after the last row.
    pub end_bytes: u64,
}

/// The iterations of a trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Iterations {
    /// How they were found (`None`: no iterations).
    pub source: Option<BoundarySource>,
    /// The iterations, in order.
    pub list: Vec<Iteration>,
    /// Rows `[a, b)` inside `Optimizer.step` regions (empty when a step made no entry).
    pub optimizer_windows: Vec<(u32, u32)>,
}

impl Iterations {
    /// The iteration holding a row.
    pub fn of_row(&self, row: u32) -> Option<usize> {
        let i = self.list.partition_point(|it| it.end_row <= row);
        self.list.get(i).filter(|it| it.start_row <= row).map(|it| it.index)
    }

    /// Whether a row lies inside an `Optimizer.step` region (windows are sorted by start).
    pub fn in_optimizer(&self, row: u32) -> bool {
        let i = self.optimizer_windows.partition_point(|&(a, _)| a <= row);
        i.checked_sub(1).and_then(|j| self.optimizer_windows.get(j)).is_some_and(|&(a, b)| a <= row && row < b)
    }
}

/// The name with each run of digits replaced by `N`, and whether it had digits.
fn family_of(name: &str) -> (String, bool) {
    let mut out = String::with_capacity(name.len());
    let mut digits = false;
    let mut in_run = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_run {
                out.push('N');
            }
            in_run = true;
            digits = true;
        } else {
            in_run = false;
            out.push(c);
        }
    }
    (out, digits)
}

/// Rows of a trace by time: (time, row) for rows with a time, in row order.
struct TimeIndex {
    timed: Vec<(i64, u32)>,
    rows: u32,
}

impl TimeIndex {
    fn new(snap: &Snapshot, device_pos: usize) -> TimeIndex {
        let Some(d) = snap.devices.get(device_pos) else { return TimeIndex { timed: Vec::new(), rows: 0 } };
        let t = &d.trace;
        let timed = (0..t.len()).filter_map(|r| t.time_us_at(r).map(|tu| (tu, r as u32))).collect();
        TimeIndex { timed, rows: t.len() as u32 }
    }

    /// First row with time >= t (`after`: > t); the row count when none.
    fn row_at(&self, t: i64, after: bool) -> u32 {
        let i = if after { self.timed.partition_point(|&(x, _)| x <= t) } else { self.timed.partition_point(|&(x, _)| x < t) };
        self.timed.get(i).map_or(self.rows, |&(_, r)| r)
    }
}

#[derive(Default)]
struct Family {
    starts: Vec<(i64, String)>,
    ends: Vec<i64>,
    numbered: bool,
    names: HashSet<String>,
}

/// Finds iterations from annotations, else from the periodic shape of the live-bytes curve.
pub fn find_iterations(snap: &Snapshot, replay: &Replay) -> Iterations {
    let idx = TimeIndex::new(snap, replay.device_pos);
    let mut it = from_annotations(snap, replay, &idx).unwrap_or_default();
    if it.list.len() < 2 {
        let windows = std::mem::take(&mut it.optimizer_windows);
        it = from_curve(snap, replay).unwrap_or_default();
        it.optimizer_windows = windows;
    }
    it
}

fn from_annotations(snap: &Snapshot, replay: &Replay, idx: &TimeIndex) -> Option<Iterations> {
    if idx.timed.is_empty() {
        return None;
    }
    let mine: Vec<_> = snap.annotations.iter().filter(|a| a.time_us.is_some() && (a.device == replay.device || a.device < 0)).collect();
    let anns: Vec<_> = if mine.is_empty() { snap.annotations.iter().filter(|a| a.time_us.is_some()).collect() } else { mine };
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    for a in &anns {
        let name = snap.strings.get(a.name);
        let (fam, digits) = family_of(name);
        let f = families.entry(fam).or_default();
        let t = a.time_us.unwrap_or(0);
        if a.start {
            f.starts.push((t, name.to_string()));
        } else {
            f.ends.push(t);
        }
        f.names.insert(name.to_string());
        f.numbered |= digits;
    }
    for f in families.values_mut() {
        f.starts.sort();
        f.ends.sort_unstable();
        f.numbered &= f.names.len() > 1;
    }
    let mut windows = Vec::new();
    for (name, f) in &families {
        if name.starts_with("Optimizer.step") {
            for (i, (s, _)) in f.starts.iter().enumerate() {
                let e = f.ends.iter().copied().find(|&e| e >= *s).or_else(|| f.ends.get(i).copied());
                let a = idx.row_at(*s, false);
                let b = e.map_or(idx.rows, |e| idx.row_at(e, true));
                // Empty windows (steps that allocate nothing) still mark where a step began.
                if a <= b {
                    windows.push((a, b));
                }
            }
        }
    }
    windows.sort_unstable();
    let duration = |f: &Family| -> i64 {
        f.starts.iter().zip(&f.ends).map(|((s, _), e)| e.saturating_sub(*s).max(0)).sum::<i64>() / (f.starts.len().max(1) as i64)
    };
    // 1. Numbered regions, the outermost (longest) first.
    let numbered = families.iter().filter(|(_, f)| f.numbered && f.starts.len() >= 2).max_by_key(|(_, f)| (duration(f), f.starts.len()));
    let chosen: Option<(&String, &Family, Edge)> = if let Some((n, f)) = numbered {
        Some((n, f, Edge::Start))
    } else {
        let opt = |prefix: &str| families.iter().find(|(n, f)| n.starts_with(prefix) && f.ends.len() >= 2);
        if let Some((n, f)) = opt("Optimizer.zero_grad").or_else(|| opt("Optimizer.step")) {
            Some((n, f, Edge::End))
        } else {
            families
                .iter()
                .filter(|(n, f)| !n.starts_with("Optimizer.") && f.starts.len() >= 2)
                .max_by(|a, b| a.1.starts.len().cmp(&b.1.starts.len()).then_with(|| b.1.starts.first().cmp(&a.1.starts.first())))
                .map(|(n, f)| (n, f, Edge::Start))
        }
    };
    let (name, fam, edge) = chosen?;
    let mut ranges: Vec<(u32, u32, String)> = Vec::new();
    match edge {
        Edge::Start => {
            let rows: Vec<(u32, String)> = fam.starts.iter().map(|(t, n)| (idx.row_at(*t, false), n.clone())).collect();
            for (i, (r, n)) in rows.iter().enumerate() {
                let end = match rows.get(i + 1) {
                    Some((nr, _)) => *nr,
                    None => {
                        let last_start = fam.starts.last().map_or(0, |s| s.0);
                        fam.ends.iter().rev().find(|&&e| e >= last_start).map_or(idx.rows, |&e| idx.row_at(e, true))
                    }
                };
                ranges.push((*r, end, n.clone()));
            }
        }
        Edge::End => {
            let mut prev = 0u32;
            for (i, &e) in fam.ends.iter().enumerate() {
                let r = idx.row_at(e, true);
                ranges.push((prev, r, format!("iteration {}", i + 1)));
                prev = r;
            }
        }
    }
    let mut out = Iterations { source: Some(BoundarySource::Annotation { family: name.clone(), edge }), list: Vec::new(), optimizer_windows: windows };
    for (a, b, label) in ranges {
        if a < b && b <= idx.rows && out.list.last().is_none_or(|l| l.end_row <= a) {
            push_iteration(snap, replay, &mut out.list, a, b, label);
        }
    }
    Some(out)
}

fn push_iteration(snap: &Snapshot, replay: &Replay, list: &mut Vec<Iteration>, a: u32, b: u32, label: String) {
    let Some((peak_row, peak_bytes)) = replay.peak_between(a, b) else { return };
    let index = list.len();
    list.push(Iteration {
        index,
        label,
        start_row: a,
        end_row: b,
        start_time_us: time_of_row(snap, replay.device_pos, Some(a)),
        start_bytes: replay.live_at(a.checked_sub(1)),
        peak_row,
        peak_bytes,
        end_bytes: replay.live_at(Some(b.saturating_sub(1))),
    });
}

/// Buckets the autocorrelation works on (the curve is averaged down to at most this many).
const ACF_BUCKETS: usize = 4096;

fn from_curve(snap: &Snapshot, replay: &Replay) -> Option<Iterations> {
    let s = &replay.live_after_bytes;
    let n = s.len();
    if n < 256 {
        return None;
    }
    let m = n.min(ACF_BUCKETS);
    let mut xs: Vec<f64> = (0..m)
        .map(|i| {
            let a = i * n / m;
            let b = ((i + 1) * n / m).max(a + 1).min(n);
            let sl = s.get(a..b).unwrap_or(&[]);
            sl.iter().map(|&v| v as f64).sum::<f64>() / (sl.len().max(1) as f64)
        })
        .collect();
    // First difference removes level shifts (state allocated once); then centre.
    let d: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
    xs = d;
    let m = xs.len();
    let mean = xs.iter().sum::<f64>() / m as f64;
    for x in &mut xs {
        *x -= mean;
    }
    let half = m / 2;
    let mut r = vec![0.0f64; half + 1];
    for (lag, slot) in r.iter_mut().enumerate().skip(1) {
        let (a, b) = (&xs[..m - lag], &xs[lag..]);
        let (mut num, mut na, mut nb) = (0.0, 0.0, 0.0);
        for (p, q) in a.iter().zip(b) {
            num += p * q;
            na += p * p;
            nb += q * q;
        }
        let den = (na * nb).sqrt();
        *slot = if den > 0.0 { num / den } else { 0.0 };
    }
    let zero = (1..r.len()).find(|&i| r[i] < 0.0)?;
    let peaks: Vec<(usize, f64)> = (zero.max(2)..r.len().saturating_sub(1)).filter(|&i| r[i] >= r[i - 1] && r[i] >= r[i + 1]).map(|i| (i, r[i])).collect();
    let best = peaks.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    if best < 0.3 {
        return None;
    }
    let &(lag, score) = peaks.iter().find(|p| p.1 >= 0.8 * best)?;
    let period = lag as f64 * n as f64 / (m + 1) as f64;
    if period < 8.0 || (n as f64) / period < 2.5 {
        return None;
    }
    // Boundaries at the curve's low points, one period apart.
    let argmin = |a: usize, b: usize| -> Option<usize> {
        let b = b.min(n);
        (a..b).min_by_key(|&i| (s.get(i).copied().unwrap_or(u64::MAX), i))
    };
    let p = period;
    let mut bounds = vec![argmin(0, p.ceil() as usize)?];
    loop {
        let last = *bounds.last()?;
        let pred = last as f64 + p;
        if pred >= n as f64 {
            break;
        }
        let lo = ((pred - p / 4.0).max(last as f64 + 1.0)) as usize;
        let hi = (pred + p / 4.0) as usize + 1;
        match argmin(lo, hi) {
            Some(b) if b > last => bounds.push(b),
            _ => break,
        }
    }
    let mut out = Iterations { source: Some(BoundarySource::Periodic { period_rows: p.round() as u32, score }), ..Iterations::default() };
    for (i, w) in bounds.windows(2).enumerate() {
        push_iteration(snap, replay, &mut out.list, w[0] as u32, w[1] as u32, format!("iteration {}", i + 1));
    }
    if let Some(&last) = bounds.last() {
        if (n - last) as f64 >= 0.75 * p {
            let k = out.list.len();
            push_iteration(snap, replay, &mut out.list, last as u32, n as u32, format!("iteration {}", k + 1));
        }
    }
    (out.list.len() >= 2).then_some(out)
}

/// A stack whose live bytes grow from iteration to iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct GrowingStack {
    /// Stack id.
    pub stack: u32,
    /// Least-squares slope of its live bytes at iteration ends.
    pub bytes_per_iteration: i64,
    /// Its live bytes at the end of each iteration.
    pub end_bytes: Vec<u64>,
    /// How many iterations ended higher than the one before.
    pub increases: usize,
}

/// Growth across iterations.
#[derive(Clone, Debug, PartialEq)]
pub struct Growth {
    /// Least-squares slope of the total live bytes at iteration ends.
    pub bytes_per_iteration: i64,
    /// Total live bytes at the end of each iteration.
    pub end_bytes: Vec<u64>,
    /// Stacks that keep growing, fastest first.
    pub stacks: Vec<GrowingStack>,
    /// Whether the growth is large and steady enough to report as a problem.
    pub significant: bool,
}

/// Steadily growing: ends higher than it starts, grows in at least 60% of the steps and shrinks in
/// at most 25% of them.
fn grows(v: &[u64]) -> (bool, usize) {
    let steps = v.len().saturating_sub(1);
    let inc = v.windows(2).filter(|w| w[1] > w[0]).count();
    let dec = v.windows(2).filter(|w| w[1] < w[0]).count();
    let ok = steps >= 2 && v.last() > v.first() && inc * 5 >= steps * 3 && dec * 4 <= steps;
    (ok, inc)
}

/// Least-squares slope of `v` over 0, 1, 2, ...
pub fn slope(v: &[u64]) -> f64 {
    let n = v.len() as f64;
    if v.len() < 2 {
        return 0.0;
    }
    let mx = (n - 1.0) / 2.0;
    let my = v.iter().map(|&x| x as f64).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for (i, &y) in v.iter().enumerate() {
        let dx = i as f64 - mx;
        num += dx * (y as f64 - my);
        den += dx * dx;
    }
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

/// Growth per stack at iteration ends (needs 3 iterations).
pub fn growth(replay: &Replay, its: &Iterations) -> Option<Growth> {
    let m = its.list.len();
    if m < 3 {
        return None;
    }
    let ends: Vec<u32> = its.list.iter().map(|i| i.end_row.saturating_sub(1)).collect();
    let mut diffs: HashMap<(u32, u32), i128> = HashMap::new();
    for l in &replay.lives {
        let lo = match l.alloc_row {
            None => 0,
            Some(a) => ends.partition_point(|&e| e < a),
        };
        let hi = match l.free_row {
            None => m,
            Some(f) => ends.partition_point(|&e| e < f),
        };
        if lo < hi {
            *diffs.entry((l.stack, lo as u32)).or_default() += i128::from(l.size_bytes);
            *diffs.entry((l.stack, hi as u32)).or_default() -= i128::from(l.size_bytes);
        }
    }
    let mut keys: Vec<(u32, u32)> = diffs.keys().copied().collect();
    keys.sort_unstable();
    let mut stacks = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        let stack = keys[i].0;
        let mut v = vec![0u64; m];
        let mut cur: i128 = 0;
        let mut k = 0usize;
        let mut j = i;
        for (slot, x) in v.iter_mut().enumerate() {
            while j < keys.len() && keys[j].0 == stack && keys[j].1 as usize <= slot {
                cur += diffs.get(&keys[j]).copied().unwrap_or(0);
                j += 1;
            }
            *x = cur.clamp(0, i128::from(u64::MAX)) as u64;
            k = slot;
        }
        let _ = k;
        while j < keys.len() && keys[j].0 == stack {
            j += 1;
        }
        let (ok, inc) = grows(&v);
        if ok {
            stacks.push(GrowingStack { stack, bytes_per_iteration: slope(&v).round() as i64, end_bytes: v, increases: inc });
        }
        i = j;
    }
    stacks.sort_by(|a, b| b.bytes_per_iteration.cmp(&a.bytes_per_iteration).then(a.stack.cmp(&b.stack)));
    let end_bytes: Vec<u64> = its.list.iter().map(|i| i.end_bytes).collect();
    let total = slope(&end_bytes).round() as i64;
    let max_peak = its.list.iter().map(|i| i.peak_bytes).max().unwrap_or(0);
    let threshold = (64u64 << 10).max(max_peak / 1000) as i64;
    let significant = grows(&end_bytes).0 && total >= threshold && stacks.iter().any(|s| s.bytes_per_iteration >= threshold / 2);
    Some(Growth { bytes_per_iteration: total, end_bytes, stacks, significant })
}

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

/// A problem or a note, in words, with the figures and elements behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// Whether it is a problem worth fixing.
    pub problem: bool,
    /// `growth`, `gradients`, `held_over`, `optimizer_state`, `allocated_once`, `oom`, `steady`.
    pub kind: &'static str,
    /// One line.
    pub title: String,
    /// Evidence, one line each.
    pub details: Vec<String>,
    /// What to try.
    pub suggestions: Vec<String>,
    /// Bytes concerned.
    pub bytes: u64,
    /// Timeline elements concerned.
    pub elements: Vec<u32>,
}

/// Everything `memviz insights` reports for one device.
#[derive(Clone, Debug, PartialEq)]
pub struct Insights {
    /// Device index.
    pub device: i64,
    /// Iterations found.
    pub iterations: Iterations,
    /// Growth per stack (3 iterations or more).
    pub growth: Option<Growth>,
    /// Memory crossing iteration boundaries, by kind and iteration.
    pub carry_over: Vec<CarryOver>,
    /// Out-of-memory explanations.
    pub ooms: Vec<super::oom::OomReport>,
    /// Findings, problems first.
    pub findings: Vec<Finding>,
}

fn is_optimizer_stack(snap: &Snapshot, stack: u32) -> bool {
    snap.stack_frames(stack).any(|f| {
        let file = snap.strings.get(f.filename);
        file.contains("torch/optim/") || file.contains("torch\\optim\\")
    })
}

fn has_autograd_frames(snap: &Snapshot, stack: u32) -> bool {
    snap.stack_frames(stack).any(|f| {
        let n = snap.strings.get(f.name);
        n.contains("torch::autograd::Engine") || n.contains("AccumulateGrad")
    })
}

/// Memory carried from each iteration into the next one's peak.
pub fn carry_over(snap: &Snapshot, replay: &Replay, its: &Iterations, growing: &HashSet<u32>) -> Vec<CarryOver> {
    let list = &its.list;
    let mut optim_stacks: HashMap<u32, bool> = HashMap::new();
    for l in &replay.lives {
        optim_stacks.entry(l.stack).or_insert_with(|| is_optimizer_stack(snap, l.stack));
    }
    let optimizer = |l: &super::Life| l.alloc_row.is_some_and(|a| its.in_optimizer(a)) || optim_stacks.get(&l.stack).copied().unwrap_or(false);
    // Reference sizes: the optimizer's persistent state, else what was live before the trace.
    let mut reference: HashMap<u64, usize> = HashMap::new();
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
                0 => out.push(make_carry(snap, replay, list, CarryKind::OptimizerState, k, elements, 0, reference_name)),
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
    let lives: Vec<&super::Life> = elements.iter().filter_map(|&e| replay.lives.get(e as usize)).collect();
    let bytes = lives.iter().map(|l| l.size_bytes).fold(0u64, u64::saturating_add);
    let rows: Vec<u32> = lives.iter().filter_map(|l| l.alloc_row).collect();
    let alloc_rows = (rows.iter().copied().min().unwrap_or(0), rows.iter().copied().max().unwrap_or(0));
    // Live at a peak row p for all of them: latest alloc <= p < earliest free.
    let last_alloc = rows.iter().copied().max().unwrap_or(0);
    let first_free = lives.iter().filter_map(|l| l.free_row).min().unwrap_or(u32::MAX);
    let live_at_peaks_of: Vec<usize> = list.iter().skip(k + 1).filter(|it| last_alloc <= it.peak_row && it.peak_row < first_free).map(|it| it.index).collect();
    let mut sites: HashMap<String, (u64, usize)> = HashMap::new();
    for l in &lives {
        let s = sites.entry(super::life_site_label(snap, l)).or_default();
        s.0 = s.0.saturating_add(l.size_bytes);
        s.1 += 1;
    }
    let mut sites: Vec<(String, u64, usize)> = sites.into_iter().map(|(k, (b, c))| (k, b, c)).collect();
    super::sort_groups(&mut sites);
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

/// `1 allocation`, `3 allocations`.
fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn iter_range_text(list: &[Iteration], idx: &[usize]) -> String {
    let labels: Vec<String> = idx.iter().map(|&i| (i + 1).to_string()).collect();
    match (idx.first(), idx.last()) {
        (Some(&a), Some(&b)) if b > a && b - a + 1 == idx.len() && idx.len() > 2 => format!("iterations {}–{}", a + 1, b + 1),
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
pub fn insights_with(snap: &Snapshot, replay: &Replay) -> Insights {
    let its = find_iterations(snap, replay);
    let growth = growth(replay, &its);
    let growing: HashSet<u32> = growth.as_ref().filter(|g| g.significant).map(|g| g.stacks.iter().map(|s| s.stack).collect()).unwrap_or_default();
    let carry = if its.list.len() >= 2 { carry_over(snap, replay, &its, &growing) } else { Vec::new() };
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
        for s in g.stacks.iter().take(10) {
            details.push(format!(
                "{} per iteration from {} (grew in {} of {} iterations, {} at the end)",
                signed_size_text(i128::from(s.bytes_per_iteration)),
                site_label(snap, s.stack),
                s.increases,
                s.end_bytes.len().saturating_sub(1),
                size_text(s.end_bytes.last().copied().unwrap_or(0))
            ));
        }
        if g.stacks.len() > 10 {
            details.push(format!("and {} more growing stacks", g.stacks.len() - 10));
        }
        let grow_set: HashSet<u32> = g.stacks.iter().map(|s| s.stack).collect();
        let last = list.last().map(|l| l.end_row.saturating_sub(1));
        let elements: Vec<u32> = replay.lives.iter().enumerate().filter(|(_, l)| grow_set.contains(&l.stack) && l.live_after(last)).map(|(e, _)| e as u32).collect();
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
    let grads: Vec<&CarryOver> = carry.iter().filter(|c| c.kind == CarryKind::Gradients && c.bytes >= threshold).collect();
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
        } else if c.elements.iter().filter_map(|&e| replay.lives.get(e as usize)).any(|l| has_autograd_frames(snap, l.stack)) {
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
    let held: Vec<&CarryOver> = carry.iter().filter(|c| c.kind == CarryKind::HeldOver && c.bytes >= threshold).collect();
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
            details.extend(c.sites.iter().take(3).map(|(s, b, n)| format!("{} in {} from {}", size_text(*b), plural(*n, "allocation"), s)));
            if all.len() > 1 {
                details.push(format!("allocated afresh {} more times (the state was freed in between)", all.len() - 1));
            }
            findings.push(Finding { problem: false, kind: c.kind.name(), title, details, suggestions: Vec::new(), bytes: c.bytes, elements: c.elements.clone() });
        }
    }
    if list.len() >= 2 && !findings.iter().any(|f| f.problem) {
        let src = match &its.source {
            Some(BoundarySource::Annotation { family, .. }) => format!("from the '{family}' annotations"),
            Some(BoundarySource::Periodic { period_rows, .. }) => format!("from the curve's period of about {period_rows} entries"),
            None => String::new(),
        };
        findings.push(Finding {
            problem: false,
            kind: "steady",
            title: format!("No growth and nothing carried into the next forward pass across {} iterations ({src})", list.len()),
            details: vec![if list.len() <= 8 {
                format!("peaks per iteration: {}", list.iter().map(|i| size_text(i.peak_bytes)).collect::<Vec<_>>().join(", "))
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
    findings.sort_by_key(|f| !f.problem);
    Insights { device: replay.device, iterations: its, growth, carry_over: carry, ooms, findings }
}

impl Iterations {
    /// JSON.
    pub fn to_json(&self) -> Value {
        let source = match &self.source {
            None => Value::Null,
            Some(BoundarySource::Annotation { family, edge }) => {
                json!({"kind": "annotation", "name": family, "edge": if *edge == Edge::Start { "start" } else { "end" }})
            }
            Some(BoundarySource::Periodic { period_rows, score }) => json!({"kind": "periodic", "period_entries": period_rows, "score": score}),
        };
        json!({
            "source": source,
            "iterations": self.list.iter().map(|i| json!({
                "index": i.index,
                "label": i.label,
                "start_entry": i.start_row,
                "end_entry": i.end_row,
                "start_time_us": i.start_time_us,
                "start_bytes": i.start_bytes,
                "peak_entry": i.peak_row,
                "peak_bytes": i.peak_bytes,
                "end_bytes": i.end_bytes,
            })).collect::<Vec<_>>(),
            "optimizer_windows": self.optimizer_windows.iter().map(|w| json!([w.0, w.1])).collect::<Vec<_>>(),
        })
    }
}

impl Finding {
    /// JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "problem": self.problem,
            "kind": self.kind,
            "title": self.title,
            "details": self.details,
            "suggestions": self.suggestions,
            "bytes": self.bytes,
            "elements": self.elements,
        })
    }
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

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::analysis::test_util::fixture;

    #[test]
    fn families_replace_numbers() {
        assert_eq!(family_of("ProfilerStep#12"), ("ProfilerStep#N".into(), true));
        assert_eq!(family_of("## step 3 ##"), ("## step N ##".into(), true));
        assert_eq!(family_of("Optimizer.step#SGD.step"), ("Optimizer.step#SGD.step".into(), false));
    }

    fn problems(i: &Insights) -> Vec<&'static str> {
        i.findings.iter().filter(|f| f.problem).map(|f| f.kind).collect()
    }

    // Figures from: python3 tests/gen/verify_growth.py ../shared/fixtures/resnet50_buggy.pickle
    #[test]
    fn buggy_resnet_keeps_its_gradients() {
        let Some(snap) = fixture("resnet50_buggy.pickle") else { return };
        let i = insights(&snap, 0);
        assert_eq!(i.iterations.source, Some(BoundarySource::Annotation { family: "Optimizer.step#SGD.step".into(), edge: Edge::End }));
        let rows: Vec<(u32, u32, u32, u64)> = i.iterations.list.iter().map(|it| (it.start_row, it.end_row, it.peak_row, it.peak_bytes)).collect();
        assert_eq!(
            rows,
            vec![
                (0, 1846, 1845, 375_664_840),
                (1846, 3867, 2302, 470_210_256),
                (3867, 5868, 4303, 470_210_256),
                (5868, 7869, 6304, 470_210_256),
                (7869, 9870, 8305, 470_210_256)
            ]
        );
        assert_eq!(problems(&i), vec!["gradients"]);
        let g = i.carry_over.iter().find(|c| c.kind == CarryKind::Gradients).expect("gradients");
        assert_eq!((g.count, g.bytes, g.alloc_rows, g.without_frames, g.size_matches), (161, 102_228_128, (371, 1673), 161, 161));
        assert_eq!(g.live_at_peaks_of, vec![1, 2, 3, 4]);
        let once = i.carry_over.iter().find(|c| c.kind == CarryKind::AllocatedOnce).expect("once");
        assert_eq!((once.count, once.bytes), (1, 33_554_432));
        let f = i.findings.iter().find(|f| f.kind == "gradients").expect("finding");
        assert!(f.suggestions[0].contains("zero_grad(set_to_none=True)"));
        assert_eq!(f.elements.len(), 161);
        assert_eq!(i.growth.as_ref().map(|g| (g.bytes_per_iteration, g.significant)), Some((0, false)));
    }

    // python3 tests/gen/verify_growth.py ../shared/fixtures/resnet50_fixed.pickle
    #[test]
    fn fixed_resnet_has_no_problem() {
        let Some(snap) = fixture("resnet50_fixed.pickle") else { return };
        let i = insights(&snap, 0);
        assert_eq!(i.iterations.source, Some(BoundarySource::Annotation { family: "Optimizer.zero_grad#SGD.zero_grad".into(), edge: Edge::End }));
        let ends: Vec<u32> = i.iterations.list.iter().map(|it| it.end_row).collect();
        assert_eq!(ends, vec![2168, 4181, 6182, 8183, 10184]);
        assert!(problems(&i).is_empty(), "{:?}", i.findings);
        let kinds: Vec<(CarryKind, usize, u64)> = i.carry_over.iter().map(|c| (c.kind, c.count, c.bytes)).collect();
        assert_eq!(kinds, vec![(CarryKind::OptimizerState, 161, 102_228_128), (CarryKind::AllocatedOnce, 1, 33_554_432)]);
    }

    // python3 tests/gen/verify_growth.py tests/data/real/growth_leak.pickle
    #[test]
    fn growth_leak_grows_by_the_kept_graph() {
        let Some(snap) = fixture("growth_leak.pickle") else { return };
        let i = insights(&snap, 0);
        assert_eq!(i.iterations.source, Some(BoundarySource::Annotation { family: "ProfilerStep#N".into(), edge: Edge::Start }));
        assert_eq!(i.iterations.list.len(), 8);
        assert_eq!(i.iterations.list[7].label, "ProfilerStep#7");
        let g = i.growth.as_ref().expect("growth");
        assert!(g.significant);
        assert_eq!(g.bytes_per_iteration, 8_398_852);
        assert_eq!(g.end_bytes, vec![128_133_164, 136_532_016, 144_930_868, 153_329_720, 161_728_572, 170_127_424, 178_526_276, 186_925_128]);
        let per: Vec<(String, i64)> = g.stacks.iter().map(|s| (site_label(&snap, s.stack), s.bytes_per_iteration)).collect();
        assert_eq!(
            per,
            vec![
                ("torch/nn/functional.py:1723 (relu)".to_string(), 8_388_608),
                ("torch/nn/modules/linear.py:134 (forward)".to_string(), 10_240),
                ("/home/user/project/train.py:21 (growth_leak)".to_string(), 4),
            ]
        );
        assert_eq!(problems(&i), vec!["growth"]);
    }

    // python3 tests/gen/verify_growth.py tests/data/real/gpt_amp_annotated.pickle
    #[test]
    fn gpt_steps_are_the_outermost_numbered_regions() {
        let Some(snap) = fixture("gpt_amp_annotated.pickle") else { return };
        let i = insights(&snap, 0);
        let rows: Vec<(u32, u32, u64)> = i.iterations.list.iter().map(|it| (it.start_row, it.end_row, it.peak_bytes)).collect();
        assert_eq!(rows, vec![(0, 1996, 3_062_635_688), (1996, 3796, 3_833_025_704), (3796, 5593, 3_833_025_704)]);
        assert!(problems(&i).is_empty());
    }

    #[test]
    fn without_annotations_the_curve_gives_iterations() {
        let Some(mut snap) = fixture("resnet50_buggy.pickle") else { return };
        snap.annotations.clear();
        let i = insights(&snap, 0);
        assert!(matches!(i.iterations.source, Some(BoundarySource::Periodic { .. })));
        assert_eq!(i.iterations.list.len(), 5);
        assert_eq!(problems(&i), vec!["gradients"]);
        assert_eq!(i.carry_over.iter().find(|c| c.kind == CarryKind::Gradients).map(|c| c.bytes), Some(102_228_128));
        let Some(mut snap) = fixture("resnet50_fixed.pickle") else { return };
        snap.annotations.clear();
        let i = insights(&snap, 0);
        assert_eq!(i.iterations.list.len(), 5);
        assert!(problems(&i).is_empty());
        // Short or aperiodic traces give no iterations rather than made-up ones.
        for name in ["multistream.pickle", "metadata_mempool.pickle", "oom.pickle"] {
            let Some(mut snap) = fixture(name) else { continue };
            snap.annotations.clear();
            assert!(find_iterations(&snap, &Replay::build(&snap, 0)).list.is_empty(), "{name}");
        }
    }

    #[test]
    fn slopes() {
        assert_eq!(slope(&[10, 20, 30, 40]), 10.0);
        assert_eq!(slope(&[5]), 0.0);
        assert!(grows(&[1, 2, 3, 4]).0);
        assert!(!grows(&[4, 4, 4, 4]).0);
        assert!(!grows(&[0, 10, 10, 10]).0);
    }
}
