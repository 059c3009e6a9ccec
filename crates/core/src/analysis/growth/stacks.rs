//! Growth: live bytes by stack at the end of every iteration, and the stacks that keep growing
//! with their least-squares bytes per iteration.

use super::iterations::Iterations;
use crate::analysis::Replay;

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

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
pub(super) fn grows(v: &[u64]) -> (bool, usize) {
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

/// A group of allocations ([`crate::analysis::grouping::Grouping`]) whose live bytes grow from
/// iteration to iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct GrowingGroup {
    /// Group id.
    pub group: u32,
    /// Least-squares slope of its live bytes at iteration ends.
    pub bytes_per_iteration: i64,
    /// Its live bytes at the end of each iteration.
    pub end_bytes: Vec<u64>,
    /// How many iterations ended higher than the one before.
    pub increases: usize,
}

/// Keys (a stack, a group) whose live bytes at iteration ends keep growing, as
/// `(key, slope, end bytes, increases)`, in key order. `key_of` gives a lifetime's key.
fn growing_keys(replay: &Replay, ends: &[u32], key_of: impl Fn(usize) -> u32) -> Vec<(u32, i64, Vec<u64>, usize)> {
    let m = ends.len();
    let mut diffs: HashMap<(u32, u32), i128> = HashMap::default();
    for (idx, l) in replay.lives.iter().enumerate() {
        let lo = match l.alloc_row {
            None => 0,
            Some(a) => ends.partition_point(|&e| e < a),
        };
        let hi = match l.free_row {
            None => m,
            Some(f) => ends.partition_point(|&e| e < f),
        };
        if lo < hi {
            let key = key_of(idx);
            *diffs.entry((key, lo as u32)).or_default() += i128::from(l.size_bytes);
            *diffs.entry((key, hi as u32)).or_default() -= i128::from(l.size_bytes);
        }
    }
    let mut keys: Vec<(u32, u32)> = diffs.keys().copied().collect();
    keys.sort_unstable();
    let mut out = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        let key = keys[i].0;
        let mut v = vec![0u64; m];
        let mut cur: i128 = 0;
        let mut j = i;
        for (slot, x) in v.iter_mut().enumerate() {
            while j < keys.len() && keys[j].0 == key && keys[j].1 as usize <= slot {
                cur += diffs.get(&keys[j]).copied().unwrap_or(0);
                j += 1;
            }
            *x = cur.clamp(0, i128::from(u64::MAX)) as u64;
        }
        while j < keys.len() && keys[j].0 == key {
            j += 1;
        }
        let (ok, inc) = grows(&v);
        if ok {
            out.push((key, slope(&v).round() as i64, v, inc));
        }
        i = j;
    }
    out
}

/// The last row of each iteration.
fn iteration_ends(its: &Iterations) -> Vec<u32> {
    its.list.iter().map(|i| i.end_row.saturating_sub(1)).collect()
}

/// Groups that keep growing across iterations (needs 3 iterations), fastest first.
pub fn growth_by_group(
    replay: &Replay,
    its: &Iterations,
    grouping: &crate::analysis::grouping::Grouping,
) -> Vec<GrowingGroup> {
    if its.list.len() < 3 {
        return Vec::new();
    }
    let key_of = |i: usize| grouping.of_life.get(i).copied().unwrap_or(u32::MAX);
    let mut v: Vec<GrowingGroup> = growing_keys(replay, &iteration_ends(its), key_of)
        .into_iter()
        .filter(|k| k.0 != u32::MAX)
        .map(|(group, bytes_per_iteration, end_bytes, increases)| GrowingGroup {
            group,
            bytes_per_iteration,
            end_bytes,
            increases,
        })
        .collect();
    v.sort_by(|a, b| b.bytes_per_iteration.cmp(&a.bytes_per_iteration).then(a.group.cmp(&b.group)));
    v
}

/// Growth per stack at iteration ends (needs 3 iterations).
pub fn growth(replay: &Replay, its: &Iterations) -> Option<Growth> {
    if its.list.len() < 3 {
        return None;
    }
    let key_of = |i: usize| replay.lives.get(i).map_or(0, |l| l.stack);
    let mut stacks: Vec<GrowingStack> = growing_keys(replay, &iteration_ends(its), key_of)
        .into_iter()
        .map(|(stack, bytes_per_iteration, end_bytes, increases)| GrowingStack {
            stack,
            bytes_per_iteration,
            end_bytes,
            increases,
        })
        .collect();
    stacks.sort_by(|a, b| b.bytes_per_iteration.cmp(&a.bytes_per_iteration).then(a.stack.cmp(&b.stack)));
    let end_bytes: Vec<u64> = its.list.iter().map(|i| i.end_bytes).collect();
    let total = slope(&end_bytes).round() as i64;
    let max_peak = its.list.iter().map(|i| i.peak_bytes).max().unwrap_or(0);
    let threshold = (64u64 << 10).max(max_peak / 1000) as i64;
    let significant =
        grows(&end_bytes).0 && total >= threshold && stacks.iter().any(|s| s.bytes_per_iteration >= threshold / 2);
    Some(Growth { bytes_per_iteration: total, end_bytes, stacks, significant })
}
