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

/// Growth per stack at iteration ends (needs 3 iterations).
pub fn growth(replay: &Replay, its: &Iterations) -> Option<Growth> {
    let m = its.list.len();
    if m < 3 {
        return None;
    }
    let ends: Vec<u32> = its.list.iter().map(|i| i.end_row.saturating_sub(1)).collect();
    let mut diffs: HashMap<(u32, u32), i128> = HashMap::default();
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
            stacks.push(GrowingStack {
                stack,
                bytes_per_iteration: slope(&v).round() as i64,
                end_bytes: v,
                increases: inc,
            });
        }
        i = j;
    }
    stacks.sort_by(|a, b| b.bytes_per_iteration.cmp(&a.bytes_per_iteration).then(a.stack.cmp(&b.stack)));
    let end_bytes: Vec<u64> = its.list.iter().map(|i| i.end_bytes).collect();
    let total = slope(&end_bytes).round() as i64;
    let max_peak = its.list.iter().map(|i| i.peak_bytes).max().unwrap_or(0);
    let threshold = (64u64 << 10).max(max_peak / 1000) as i64;
    let significant =
        grows(&end_bytes).0 && total >= threshold && stacks.iter().any(|s| s.bytes_per_iteration >= threshold / 2);
    Some(Growth { bytes_per_iteration: total, end_bytes, stacks, significant })
}
