//! A snapshot's allocations given the categories of the profiler's memory timeline of the same
//! run (`export_memory_timeline`, `.json` or `.raw.json.gz`).
//!
//! Both clocks are the host's wall clock, so an allocation of the snapshot and the profiler's
//! record of it are a few microseconds apart. The profiler writes no address or stack, only
//! running bytes per category, so its events are read back from the timeline's steps: a point
//! where one category grows by `b` is an allocation of `b` bytes (the allocator's block: the
//! request rounded up to 512, or up to 1 MiB more for a large block it did not split); a point
//! where one category shrinks by `b` and another grows by `b` is a tensor that changed category.
//! Each such allocation is matched with the snapshot's nearest unmatched allocation of that size
//! made from 10 ms before to 1 ms after it (an exact size first); the memory live when the
//! profiler started takes the timeline's first point's category when that point has one
//! category and the same bytes. The rest keep the categories [`super::categories::infer`] gives,
//! and every element says which it has ([`SnapshotCategories::matched`]).

use std::collections::HashMap;

use super::categories::{summarize, Category, CategoryTimeline, SnapshotCategories, Summary};
use super::growth::Iterations;
use super::Replay;
use crate::Snapshot;

/// How far before the profiler's record an allocation of the snapshot may be, µs.
const BEFORE_US: i64 = 10_000;
/// How far after, µs.
const AFTER_US: i64 = 1_000;
/// Candidates looked at on each side of a profiler allocation, at most (bounded time on
/// timelines with many allocations in a few milliseconds).
const MAX_CANDIDATES: usize = 4096;

/// How the source of joined categories ends.
pub const JOINED_SOURCE: &str = ", matched with the snapshot";

/// What the join found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JoinCounts {
    /// Allocations the profiler's timeline records (its steps where one category grows).
    pub profiler_allocations: usize,
    /// Of those, matched with an allocation of the snapshot.
    pub matched: usize,
    /// Allocations of the snapshot live when the profiler started, given its first category.
    pub preexisting: usize,
    /// Matched allocations whose tensor the profiler later moved to another category.
    pub recategorized: usize,
    /// Steps of the timeline that change several categories at once (records made in the same
    /// microsecond), read as no allocation.
    pub unread_steps: usize,
}

/// One step of the profiler's timeline read as an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Alloc { time_us: i64, size_bytes: u64, category: Category },
    Move { time_us: i64, size_bytes: u64, from: Category, to: Category },
}

/// The allocator's block for a request: rounded up to 512 bytes.
fn block_bytes(size_bytes: u64) -> u64 {
    size_bytes.div_ceil(512).saturating_mul(512)
}

/// Whether the profiler's `block` bytes can be the block of a request of `size_bytes` (and
/// whether exactly).
fn size_fits(size_bytes: u64, block: u64) -> Option<bool> {
    let rounded = block_bytes(size_bytes);
    if rounded == block {
        Some(true)
    } else if size_bytes > 1 << 20 && block > rounded && block - rounded <= 1 << 20 {
        Some(false)
    } else {
        None
    }
}

fn category_of(timeline: &CategoryTimeline, column: usize) -> Category {
    let name = timeline.categories.get(column).map(String::as_str).unwrap_or_default();
    Category::of_name(name)
}

/// The timeline's steps read as allocations and category moves, and the count of those that are
/// neither.
fn steps(timeline: &CategoryTimeline) -> (Vec<Step>, usize) {
    let mut out = Vec::new();
    let mut unread = 0;
    for i in 1..timeline.bytes.len() {
        let (Some(prev), Some(cur), Some(Some(time_us))) =
            (timeline.bytes.get(i - 1), timeline.bytes.get(i), timeline.times_us.get(i))
        else {
            continue;
        };
        let mut grew = Vec::new();
        let mut shrank = Vec::new();
        for (c, (&a, &b)) in prev.iter().zip(cur).enumerate() {
            if b > a {
                grew.push((c, b - a));
            } else if a > b {
                shrank.push((c, a - b));
            }
        }
        match (grew.as_slice(), shrank.as_slice()) {
            ([(c, b)], []) => {
                out.push(Step::Alloc { time_us: *time_us, size_bytes: *b, category: category_of(timeline, *c) })
            }
            ([(to, b)], [(from, b2)]) if b == b2 => out.push(Step::Move {
                time_us: *time_us,
                size_bytes: *b,
                from: category_of(timeline, *from),
                to: category_of(timeline, *to),
            }),
            ([], [_]) | ([], []) => {}
            _ => unread += 1,
        }
    }
    (out, unread)
}

/// Categories of a snapshot's allocations (device `replay.device_pos`) from the profiler's
/// memory timeline `profile`, where they match; [`super::categories::infer`]'s elsewhere.
pub fn join(
    snap: &Snapshot,
    replay: &Replay,
    its: &Iterations,
    profile: &CategoryTimeline,
    max_points: usize,
) -> (SnapshotCategories, JoinCounts) {
    let trace = snap.devices.get(replay.device_pos).map(|d| &d.trace);
    let time_of = |row: Option<u32>| row.and_then(|r| trace.and_then(|t| t.time_us_at(r as usize)));
    let (mut per_element, names, _, mut notes) = super::categories::classify(snap, replay, its);
    let mut matched = vec![false; replay.lives.len()];
    let mut counts = JoinCounts::default();
    // The snapshot's allocations by time.
    let mut by_time: Vec<(i64, u32)> =
        replay.lives.iter().enumerate().filter_map(|(e, l)| Some((time_of(l.alloc_row)?, e as u32))).collect();
    by_time.sort_unstable();
    let (steps, unread) = steps(profile);
    counts.unread_steps = unread;
    // Matched allocations by (block bytes, category), in the order they were made.
    let mut held: HashMap<(u64, Category), Vec<u32>> = HashMap::new();
    for step in steps {
        match step {
            Step::Alloc { time_us, size_bytes, category } => {
                counts.profiler_allocations += 1;
                let at = by_time.partition_point(|&(t, _)| t < time_us);
                let lo = by_time
                    .partition_point(|&(t, _)| t < time_us.saturating_sub(BEFORE_US))
                    .max(at.saturating_sub(MAX_CANDIDATES));
                let hi =
                    by_time.partition_point(|&(t, _)| t <= time_us.saturating_add(AFTER_US)).min(at + MAX_CANDIDATES);
                let best = by_time
                    .get(lo..hi)
                    .unwrap_or_default()
                    .iter()
                    .filter(|&&(_, e)| !matched.get(e as usize).copied().unwrap_or(true))
                    .filter_map(|&(t, e)| {
                        let exact = size_fits(replay.lives.get(e as usize)?.size_bytes, size_bytes)?;
                        Some(((!exact, t.abs_diff(time_us)), e))
                    })
                    .min();
                if let Some((_, e)) = best {
                    if let (Some(m), Some(c)) = (matched.get_mut(e as usize), per_element.get_mut(e as usize)) {
                        *m = true;
                        *c = category;
                    }
                    counts.matched += 1;
                    held.entry((size_bytes, category)).or_default().push(e);
                }
            }
            Step::Move { time_us, size_bytes, from, to } => {
                // The latest made of the matched allocations of that size and category live then.
                let Some(list) = held.get_mut(&(size_bytes, from)) else { continue };
                let live = |e: u32| {
                    replay.lives.get(e as usize).is_some_and(|l| {
                        time_of(l.alloc_row).is_some_and(|t| t <= time_us)
                            && time_of(l.free_row).is_none_or(|t| t > time_us)
                    })
                };
                let Some(k) = list.iter().rposition(|&e| live(e)) else { continue };
                let e = list.remove(k);
                if let Some(c) = per_element.get_mut(e as usize) {
                    *c = to;
                }
                counts.recategorized += 1;
                let dest = held.entry((size_bytes, to)).or_default();
                let t = replay.lives.get(e as usize).and_then(|l| time_of(l.alloc_row));
                let pos =
                    dest.partition_point(|&d| replay.lives.get(d as usize).and_then(|l| time_of(l.alloc_row)) <= t);
                dest.insert(pos, e);
            }
        }
    }
    counts.preexisting = preexisting(replay, profile, &time_of, &mut matched, &mut per_element);
    let rest = matched.iter().filter(|&&m| !m).count();
    notes.retain(|n| !n.starts_with("categories inferred"));
    notes.insert(
        0,
        format!(
            "{} of the profiler's {} allocations matched with the snapshot's by time and size{}; {}",
            counts.matched,
            counts.profiler_allocations,
            if counts.preexisting > 0 {
                format!(", and the {} live when it started", counts.preexisting)
            } else {
                String::new()
            },
            match rest {
                0 => "no category is inferred".to_string(),
                1 => "the category of the other allocation is inferred".to_string(),
                n => format!("the categories of the other {n} allocations are inferred"),
            }
        ),
    );
    let source = format!("{}{JOINED_SOURCE}", profile.source);
    let sum = Summary { per_element, names, inferred: rest > 0, source, notes };
    let mut out = summarize(snap, replay, sum, max_points);
    out.matched = matched;
    (out, counts)
}

/// Whether the profiler's timeline and device `device_pos` of the snapshot overlap in time (both
/// clocks are the host's): a timeline of another run has nothing to match.
pub fn overlaps(snap: &Snapshot, device_pos: usize, profile: &CategoryTimeline) -> bool {
    let Some(t) = snap.devices.get(device_pos).map(|d| &d.trace) else { return false };
    let snap_times = (0..t.len()).filter_map(|r| t.time_us_at(r));
    let (lo, hi) = snap_times.fold((i64::MAX, i64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let profile_times = profile.times_us.iter().flatten();
    let (plo, phi) = profile_times.fold((i64::MAX, i64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    lo <= hi && plo <= phi && lo <= phi && plo <= hi
}

/// [`join`] with the replay and iterations made here.
pub fn join_categories(
    snap: &Snapshot,
    device_pos: usize,
    profile: &CategoryTimeline,
    max_points: usize,
) -> (SnapshotCategories, JoinCounts) {
    let replay = Replay::build(snap, device_pos);
    let its = super::growth::find_iterations(snap, &replay);
    join(snap, &replay, &its, profile, max_points)
}

/// Memory live when the profiler started, given its first point's category when that point has
/// one category and the same bytes; how many allocations took it.
fn preexisting(
    replay: &Replay,
    profile: &CategoryTimeline,
    time_of: &dyn Fn(Option<u32>) -> Option<i64>,
    matched: &mut [bool],
    per_element: &mut [Category],
) -> usize {
    let mut n = 0;
    if let (Some(first), Some(Some(start_us))) = (profile.bytes.first(), profile.times_us.first()) {
        let nonzero: Vec<usize> = (0..first.len()).filter(|&c| first.get(c).is_some_and(|&b| b > 0)).collect();
        let before: Vec<usize> = replay
            .lives
            .iter()
            .enumerate()
            .filter(|&(e, l)| {
                !matched.get(e).copied().unwrap_or(true)
                    && (l.alloc_row.is_none() || time_of(l.alloc_row).is_some_and(|t| t < *start_us))
                    && time_of(l.free_row).is_none_or(|t| t >= *start_us)
            })
            .map(|(e, _)| e)
            .collect();
        // The profiler counts a tensor's own bytes here (the request), blocks elsewhere.
        let lives = || before.iter().filter_map(|&e| replay.lives.get(e));
        let requested: u64 = lives().map(|l| l.size_bytes).sum();
        let blocks: u64 = lives().map(|l| block_bytes(l.size_bytes)).sum();
        if let [c] = nonzero.as_slice() {
            if first.get(*c).is_some_and(|&b| b == requested || b == blocks) {
                let category = category_of(profile, *c);
                for e in before {
                    if let (Some(m), Some(slot)) = (matched.get_mut(e), per_element.get_mut(e)) {
                        *m = true;
                        *slot = category;
                    }
                    n += 1;
                }
            }
        }
    }
    n
}

#[cfg(test)]
#[path = "categories_join_tests.rs"]
mod tests;
