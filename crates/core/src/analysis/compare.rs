//! Two snapshots side by side: aligned by iteration when both have iterations (see
//! [`super::growth::find_iterations`]), else by position in the trace (entry / entries). Gives
//! both total curves on one x axis (for drawing) and, at matched points (both peaks, each
//! iteration's peak, the end), live bytes per stack that differ, in both directions.
//! It also keeps the per-site differences the verdict in words (`compare_verdict`) rests on.
//!
//! Stacks from different files are matched by content: the visible source frames
//! (`file:line (function)`, innermost first), or the visible C++ frames for stacks without source
//! frames, or by source line only ([`KeyMode::Line`]); or, with [`compare_grouped`], by group
//! (the user's line, the operator, a metadata key, ...), groups matched by their text.
//!
//! Files recorded with different settings (`stacks`, `context`, `enabled`, `time_us`, a trace
//! that starts mid-run) are said to differ in [`Comparison::recording_differences`]. When one has
//! C++ frames and the other none (`stacks="all"` against `"python"`), stacks are matched on their
//! Python frames only ([`Frames::Auto`]): an allocation made in backward has C++ frames only under
//! `"all"` and none under `"python"`, so both sides list it as [`NO_PYTHON_FRAMES_LABEL`] instead
//! of under two names.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::grouping::{GroupBy, Grouping, LibraryRule};
use super::growth::{find_iterations, Iterations};
use super::{
    frame_label, is_source_frame, is_unrecorded, site_label, site_label_cached, visible_frames, FrameClasses, Replay,
    BEFORE_TRACE_LABEL, NO_FRAMES_LABEL,
};
use crate::coverage::coverage_from_lives;
use crate::info::recording;
use crate::snapshot::Snapshot;

/// How stacks of the two files are matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KeyMode {
    /// By the whole visible stack.
    #[default]
    Stack,
    /// By source line (site) only.
    Line,
}

/// Which frames stacks are matched on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Frames {
    /// Python frames only when one file has C++ frames and the other none, else [`Frames::All`].
    #[default]
    Auto,
    /// The visible source frames, or the visible C++ frames of stacks without source frames.
    All,
    /// The visible source frames only: stacks without them share [`NO_PYTHON_FRAMES_LABEL`].
    Python,
}

/// Key and site of stacks without Python frames when matching on Python frames only.
pub const NO_PYTHON_FRAMES_LABEL: &str = "<no Python frames>";

/// Options of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompareOptions {
    /// Curve points.
    pub points: usize,
    /// Stack matching.
    pub key: KeyMode,
    /// Differences kept per direction and point (0: all).
    pub top: usize,
    /// Most per-iteration points compared.
    pub max_iterations: usize,
    /// Which frames stacks are matched on.
    pub frames: Frames,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { points: 500, key: KeyMode::Stack, top: 10, max_iterations: 20, frames: Frames::Auto }
    }
}

/// How the two traces were put on one axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Alignment {
    /// x is the iteration (x = k + fraction of iteration k), over the iterations both have.
    Iterations {
        /// Iterations of A.
        a: usize,
        /// Iterations of B.
        b: usize,
    },
    /// x is the position in the trace, 0 to 1.
    Proportion,
}

/// One x of the overlaid curves: the highest live bytes of each trace over the slice of x.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurvePoint {
    /// Start of the slice.
    pub x: f64,
    /// A's highest live bytes in the slice.
    pub a_bytes: u64,
    /// B's.
    pub b_bytes: u64,
}

/// Live bytes of one stack in both traces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackDiff {
    /// The stack's key (its frames, innermost first, joined by ` ← `).
    pub key: String,
    /// Its site (source line).
    pub site: String,
    /// Bytes in A.
    pub a_bytes: u64,
    /// Bytes in B.
    pub b_bytes: u64,
    /// Allocations in A.
    pub a_count: usize,
    /// Allocations in B.
    pub b_count: usize,
}

impl StackDiff {
    /// B minus A.
    pub fn delta(&self) -> i128 {
        i128::from(self.b_bytes) - i128::from(self.a_bytes)
    }
}

/// Two moments compared.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchedPoint {
    /// `peak`, `iteration 2 peak`, `end`.
    pub label: String,
    /// Row in A.
    pub a_row: Option<u32>,
    /// Row in B.
    pub b_row: Option<u32>,
    /// Live bytes in A.
    pub a_bytes: u64,
    /// Live bytes in B.
    pub b_bytes: u64,
    /// Stacks with more bytes in B, largest difference first.
    pub more_in_b: Vec<StackDiff>,
    /// Stacks with more bytes in A, largest difference first.
    pub more_in_a: Vec<StackDiff>,
}

/// The comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// How the axes were aligned.
    pub alignment: Alignment,
    /// Peak of A and its row.
    pub a_peak: (u64, Option<u32>),
    /// Peak of B and its row.
    pub b_peak: (u64, Option<u32>),
    /// Iterations of A.
    pub a_iterations: Iterations,
    /// Iterations of B.
    pub b_iterations: Iterations,
    /// Overlaid curves.
    pub curve: Vec<CurvePoint>,
    /// Matched moments.
    pub points: Vec<MatchedPoint>,
    /// How the two recordings' settings differ, one line each (empty: they seem the same).
    pub recording_differences: Vec<String>,
    /// Whether stacks were matched on their Python frames only.
    pub python_frames_only: bool,
    /// Per-site differences the verdict rests on (`Comparison::verdict`).
    pub basis: VerdictBasis,
}

/// How the recording settings of the two sides' devices differ, as inferred from the data
/// ([`crate::info::Recording`], [`crate::coverage`]), one line each.
fn recording_differences(a: &Side<'_>, b: &Side<'_>) -> Vec<String> {
    let (ra, rb) = (&a.recording, &b.recording);
    let mut out = Vec::new();
    let mut differ = |what: &str, x: &str, y: &str| {
        if x != y {
            out.push(format!("{what}: A {x}, B {y}"));
        }
    };
    differ("stacks", ra.stacks, rb.stacks);
    differ("context", ra.context, rb.context);
    differ("enabled", ra.enabled, rb.enabled);
    let time = |r: &crate::info::Recording| if r.has_time { "with time_us" } else { "without time_us" };
    differ("times", time(ra), time(rb));
    // The replays paired the traces as `coverage` does: read off their lives, not a set of addresses.
    let of = |s: &Side<'_>| {
        let lives = s.replay.lives.iter().map(|l| (l.origin, l.size_bytes, l.stack));
        coverage_from_lives(s.snap, s.replay.device_pos, lives)
    };
    let (ca, cb) = (of(a), of(b));
    let start = |c: &crate::coverage::Coverage| if c.starts_mid_run() { "starts mid-run" } else { "from the start" };
    differ("trace (max_entries)", start(&ca), start(&cb));
    out
}

/// What the verdict's largest difference is measured on: per site (source line) bytes at one
/// moment of each file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VerdictBasis {
    /// `Some(k)` (1-based): bytes live at iteration k's peak that were allocated before iteration k
    /// began; `None`: all bytes live at each file's peak.
    pub carried_into: Option<usize>,
    /// Per site, largest |B − A| first (sites equal in both left out).
    pub sites: Vec<StackDiff>,
    /// Where the largest difference has no Python frames (backward, library code): the
    /// gradients each file keeps across iterations (bytes, tensors), A then B, as its Insights
    /// find them (`CarryKind::Gradients`), to name that memory in the verdict; else zeros.
    pub kept_gradients: [(u64, usize); 2],
}

/// Bytes and allocations per site live after `row`, counting only those allocated before row
/// `before` when given (allocations from before the trace count as allocated before).
fn site_bytes(
    snap: &Snapshot,
    replay: &Replay,
    row: Option<u32>,
    before: Option<u32>,
    python_only: bool,
) -> HashMap<String, (u64, usize)> {
    let mut labels: HashMap<u32, String> = HashMap::new();
    let mut classes = FrameClasses::default();
    let mut out: HashMap<String, (u64, usize)> = HashMap::new();
    for l in replay.lives.iter().filter(|l| l.live_after(row)) {
        if let (Some(b), Some(a)) = (before, l.alloc_row) {
            if a >= b {
                continue;
            }
        }
        let site = if is_unrecorded(l) {
            BEFORE_TRACE_LABEL.to_string()
        } else {
            labels.entry(l.stack).or_insert_with(|| site_key_cached(snap, l.stack, python_only, &mut classes)).clone()
        };
        let e = out.entry(site).or_insert((0, 0));
        e.0 = e.0.saturating_add(l.size_bytes);
        e.1 += 1;
    }
    out
}

/// Per site B − A of two [`site_bytes`] maps, largest |B − A| first, then by site.
fn site_diffs(a: &HashMap<String, (u64, usize)>, b: &HashMap<String, (u64, usize)>) -> Vec<StackDiff> {
    let mut sites: Vec<&String> = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))).collect();
    sites.sort();
    let mut out: Vec<StackDiff> = sites
        .into_iter()
        .map(|s| {
            let (ab, ac) = a.get(s).copied().unwrap_or((0, 0));
            let (bb, bc) = b.get(s).copied().unwrap_or((0, 0));
            StackDiff { key: s.clone(), site: s.clone(), a_bytes: ab, b_bytes: bb, a_count: ac, b_count: bc }
        })
        .filter(|d| d.delta() != 0)
        .collect();
    out.sort_by(|x, y| y.delta().abs().cmp(&x.delta().abs()).then_with(|| x.site.cmp(&y.site)));
    out
}

/// The key of a stack for matching across files.
pub fn stack_key(snap: &Snapshot, stack: u32, mode: KeyMode) -> String {
    stack_key_with(snap, stack, mode, false)
}

/// Whether a stack has a visible source (Python) frame.
fn has_python_frame(snap: &Snapshot, stack: u32) -> bool {
    visible_frames(snap, stack).any(is_source_frame)
}

/// The site of a stack: [`site_label`], or with `python_only` [`NO_PYTHON_FRAMES_LABEL`] for
/// stacks without Python frames.
pub fn site_key(snap: &Snapshot, stack: u32, python_only: bool) -> String {
    if python_only && !has_python_frame(snap, stack) {
        NO_PYTHON_FRAMES_LABEL.to_string()
    } else {
        site_label(snap, stack)
    }
}

/// [`site_key`], frames' classes read from `classes`.
pub fn site_key_cached(snap: &Snapshot, stack: u32, python_only: bool, classes: &mut FrameClasses) -> String {
    if python_only && !has_python_frame(snap, stack) {
        NO_PYTHON_FRAMES_LABEL.to_string()
    } else {
        site_label_cached(snap, stack, classes)
    }
}

/// [`stack_key`], on Python frames only when `python_only`.
pub fn stack_key_with(snap: &Snapshot, stack: u32, mode: KeyMode, python_only: bool) -> String {
    if mode == KeyMode::Line || python_only && !has_python_frame(snap, stack) {
        return site_key(snap, stack, python_only);
    }
    let src: Vec<String> =
        visible_frames(snap, stack).filter(|f| is_source_frame(f)).map(|f| frame_label(snap, f)).collect();
    if !src.is_empty() {
        return src.join(" ← ");
    }
    let all: Vec<String> = visible_frames(snap, stack).map(|f| frame_label(snap, f)).collect();
    if all.is_empty() {
        NO_FRAMES_LABEL.to_string()
    } else {
        all.join(" ← ")
    }
}

/// Live bytes and allocations per key (and site) just after each of `rows` (`None`: before the
/// first entry), as [`Life::live_after`] says, one map per row: one pass over the lives, each
/// added to the rows it is live at (found by two binary searches among the sorted rows), then
/// each stack's key looked up once.
///
/// [`Life::live_after`]: super::Life::live_after
fn by_key_at(
    snap: &Snapshot,
    replay: &Replay,
    rows: &[Option<u32>],
    mode: KeyMode,
    python_only: bool,
    cache: &mut SiteCache,
) -> Vec<HashMap<String, (String, u64, usize)>> {
    // A row as a number: before the first entry is -1, below every row.
    let at = |r: Option<u32>| r.map_or(-1, i64::from);
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| rows.get(i).map_or(-1, |&r| at(r)));
    let sorted: Vec<i64> = order.iter().map(|&i| rows.get(i).map_or(-1, |&r| at(r))).collect();
    let mut per_stack: Vec<HashMap<u32, (u64, usize)>> = vec![HashMap::new(); rows.len()];
    let mut unrecorded = vec![(0u64, 0usize); rows.len()];
    for l in &replay.lives {
        // Live at the rows in [allocated, freed): allocated before the trace is live from -1 on.
        let from = l.alloc_row.map_or(i64::MIN, i64::from);
        let to = l.free_row.map_or(i64::MAX, i64::from);
        let (j0, j1) = (sorted.partition_point(|&k| k < from), sorted.partition_point(|&k| k < to));
        for &i in order.get(j0..j1).unwrap_or(&[]) {
            let e = if is_unrecorded(l) {
                unrecorded.get_mut(i)
            } else {
                per_stack.get_mut(i).map(|m| m.entry(l.stack).or_insert((0, 0)))
            };
            if let Some(e) = e {
                e.0 = e.0.saturating_add(l.size_bytes);
                e.1 += 1;
            }
        }
    }
    per_stack
        .into_iter()
        .zip(unrecorded)
        .map(|(stacks, before)| {
            let mut out: HashMap<String, (String, u64, usize)> = HashMap::new();
            let mut add = |k: &str, s: &str, (bytes, count): (u64, usize)| {
                let e = out.entry(k.to_string()).or_insert_with(|| (s.to_string(), 0, 0));
                e.1 = e.1.saturating_add(bytes);
                e.2 += count;
            };
            if before.1 > 0 {
                add(BEFORE_TRACE_LABEL, BEFORE_TRACE_LABEL, before);
            }
            for (stack, totals) in stacks {
                let (k, s) = cache.by_stack.entry(stack).or_insert_with(|| {
                    let site = site_key_cached(snap, stack, python_only, &mut cache.classes);
                    let key = if mode == KeyMode::Line {
                        site.clone()
                    } else {
                        stack_key_with(snap, stack, mode, python_only)
                    };
                    (key, site)
                });
                add(k, s, totals);
            }
            out
        })
        .collect()
}

/// Each stack's (key, site) as compared, and the frames' classes they were found with.
#[derive(Default)]
struct SiteCache {
    by_stack: HashMap<u32, (String, String)>,
    classes: FrameClasses,
}

struct Side<'a> {
    snap: &'a Snapshot,
    replay: Replay,
    its: Iterations,
    cache: SiteCache,
    /// With a grouping ([`compare_grouped`]): every lifetime's group, whose text is the key.
    grouping: Option<Grouping>,
    /// How the file was recorded, inferred once (a pass over its trace and frames).
    recording: crate::info::Recording,
}

/// Live bytes and allocations per group's text (as key and site) after `row`.
fn by_group(replay: &Replay, grouping: &Grouping, row: Option<u32>) -> HashMap<String, (String, u64, usize)> {
    let mut out: HashMap<String, (String, u64, usize)> = HashMap::new();
    for (i, l) in replay.lives.iter().enumerate().filter(|(_, l)| l.live_after(row)) {
        let label = grouping.group_of(i as u32).map_or_else(String::new, |g| grouping.label(g));
        let e = out.entry(label.clone()).or_insert((label, 0, 0));
        e.1 = e.1.saturating_add(l.size_bytes);
        e.2 += 1;
    }
    out
}

/// Maps x (iteration coordinate) to a row of a side.
fn row_at_x(its: &Iterations, x: f64) -> u32 {
    let k = (x.floor().max(0.0) as usize).min(its.list.len().saturating_sub(1));
    let Some(it) = its.list.get(k) else { return 0 };
    let frac = (x - k as f64).clamp(0.0, 1.0);
    it.start_row + (f64::from(it.end_row.saturating_sub(it.start_row)) * frac) as u32
}

fn max_in(replay: &Replay, a: u32, b: u32) -> u64 {
    let hi = (b as usize).min(replay.live_after_bytes.len());
    let lo = (a as usize).min(hi);
    let m = replay.live_after_bytes.get(lo..hi).and_then(|s| s.iter().copied().max());
    m.unwrap_or_else(|| replay.live_at(if lo == 0 { None } else { Some(lo as u32 - 1) }))
}

/// Compares device `a_pos` of `a` with device `b_pos` of `b`.
pub fn compare(a: &Snapshot, a_pos: usize, b: &Snapshot, b_pos: usize, opts: CompareOptions) -> Comparison {
    compare_with((a, Replay::build(a, a_pos)), (b, Replay::build(b, b_pos)), opts, None)
}

/// [`compare`] of the devices two replays were made of, with those replays (the page reads them
/// off the files' layouts: [`Replay::from_layout`]).
pub fn compare_replayed(a: (&Snapshot, Replay), b: (&Snapshot, Replay), opts: CompareOptions) -> Comparison {
    compare_with(a, b, opts, None)
}

/// [`compare`] with the live bytes at the matched points per group of `by` (the user's line, the
/// operator, a metadata key, ...: [`GroupBy`]) instead of per stack; groups of the two files are
/// matched by their text.
pub fn compare_grouped(
    a: &Snapshot,
    a_pos: usize,
    b: &Snapshot,
    b_pos: usize,
    opts: CompareOptions,
    by: &GroupBy,
    rule: &LibraryRule,
) -> Comparison {
    compare_with((a, Replay::build(a, a_pos)), (b, Replay::build(b, b_pos)), opts, Some((by, rule)))
}

#[allow(clippy::too_many_lines)] // fills every part of the Comparison in one pass; not split yet
fn compare_with(
    (a, replay_a): (&Snapshot, Replay),
    (b, replay_b): (&Snapshot, Replay),
    opts: CompareOptions,
    group: Option<(&GroupBy, &LibraryRule)>,
) -> Comparison {
    let mk = |snap, replay: Replay| {
        let its = find_iterations(snap, &replay);
        let grouping = group.map(|(by, rule)| Grouping::build(snap, &replay, by, rule));
        Side { snap, replay, its, cache: SiteCache::default(), grouping, recording: recording(snap) }
    };
    let mut sa = mk(a, replay_a);
    let mut sb = mk(b, replay_b);
    let recording_differences = recording_differences(&sa, &sb);
    let python_frames_only = match opts.frames {
        Frames::All => false,
        Frames::Python => true,
        Frames::Auto => {
            let stacks = [sa.recording.stacks, sb.recording.stacks];
            stacks.contains(&"all") && stacks.contains(&"python")
        }
    };
    let used = sa.its.list.len().min(sb.its.list.len());
    let alignment = if used >= 2 {
        Alignment::Iterations { a: sa.its.list.len(), b: sb.its.list.len() }
    } else {
        Alignment::Proportion
    };
    let np = opts.points.max(1);
    let mut curve = Vec::with_capacity(np);
    for i in 0..np {
        let (x0, x1) = match alignment {
            Alignment::Iterations { .. } => {
                (i as f64 * used as f64 / np as f64, (i + 1) as f64 * used as f64 / np as f64)
            }
            Alignment::Proportion => (i as f64 / np as f64, (i + 1) as f64 / np as f64),
        };
        let bytes = |s: &Side| -> u64 {
            let (r0, r1) = match alignment {
                Alignment::Iterations { .. } => (row_at_x(&s.its, x0), row_at_x(&s.its, x1)),
                Alignment::Proportion => {
                    let n = s.replay.rows as f64;
                    ((x0 * n) as u32, (x1 * n) as u32)
                }
            };
            max_in(&s.replay, r0, r1.max(r0 + 1))
        };
        curve.push(CurvePoint { x: x0, a_bytes: bytes(&sa), b_bytes: bytes(&sb) });
    }
    let mut pairs: Vec<(String, Option<u32>, Option<u32>)> =
        vec![("peak".into(), sa.replay.peak_row, sb.replay.peak_row)];
    if used >= 2 {
        for k in 0..used.min(opts.max_iterations) {
            if let (Some(ia), Some(ib)) = (sa.its.list.get(k), sb.its.list.get(k)) {
                pairs.push((format!("iteration {} peak", k + 1), Some(ia.peak_row), Some(ib.peak_row)));
            }
        }
    }
    pairs.push((
        "end".into(),
        sa.replay.rows.checked_sub(1).map(|r| r as u32),
        sb.replay.rows.checked_sub(1).map(|r| r as u32),
    ));
    let mut points = Vec::new();
    let side_keys = |s: &mut Side, rows: Vec<Option<u32>>| match &s.grouping {
        Some(g) => rows.iter().map(|&r| by_group(&s.replay, g, r)).collect::<Vec<_>>(),
        None => by_key_at(s.snap, &s.replay, &rows, opts.key, python_frames_only, &mut s.cache),
    };
    let keys_a = side_keys(&mut sa, pairs.iter().map(|p| p.1).collect());
    let keys_b = side_keys(&mut sb, pairs.iter().map(|p| p.2).collect());
    for (((label, ra, rb), ka), kb) in pairs.into_iter().zip(keys_a).zip(keys_b) {
        let mut diffs: Vec<StackDiff> = Vec::new();
        for (k, (site, bytes, count)) in &ka {
            let (bb, bc) = kb.get(k).map_or((0, 0), |x| (x.1, x.2));
            diffs.push(StackDiff {
                key: k.clone(),
                site: site.clone(),
                a_bytes: *bytes,
                b_bytes: bb,
                a_count: *count,
                b_count: bc,
            });
        }
        for (k, (site, bytes, count)) in &kb {
            if !ka.contains_key(k) {
                diffs.push(StackDiff {
                    key: k.clone(),
                    site: site.clone(),
                    a_bytes: 0,
                    b_bytes: *bytes,
                    a_count: 0,
                    b_count: *count,
                });
            }
        }
        let mut more_in_b: Vec<StackDiff> = diffs.iter().filter(|d| d.delta() > 0).cloned().collect();
        let mut more_in_a: Vec<StackDiff> = diffs.into_iter().filter(|d| d.delta() < 0).collect();
        more_in_b.sort_by(|x, y| y.delta().cmp(&x.delta()).then_with(|| x.key.cmp(&y.key)));
        more_in_a.sort_by(|x, y| x.delta().cmp(&y.delta()).then_with(|| x.key.cmp(&y.key)));
        if opts.top > 0 {
            more_in_b.truncate(opts.top);
            more_in_a.truncate(opts.top);
        }
        points.push(MatchedPoint {
            label,
            a_row: ra,
            b_row: rb,
            a_bytes: sa.replay.live_at(ra),
            b_bytes: sb.replay.live_at(rb),
            more_in_b,
            more_in_a,
        });
    }
    let basis = verdict_basis(&sa, &sb, used, python_frames_only);
    Comparison {
        alignment,
        a_peak: (sa.replay.peak_bytes, sa.replay.peak_row),
        b_peak: (sb.replay.peak_bytes, sb.replay.peak_row),
        a_iterations: sa.its,
        b_iterations: sb.its,
        curve,
        points,
        recording_differences,
        python_frames_only,
        basis,
    }
}

/// With `used` ≥ 2 matched iterations: per site, bytes live at the last one's peak allocated
/// before it began; else all bytes live at each peak.
fn verdict_basis(sa: &Side, sb: &Side, used: usize, python_only: bool) -> VerdictBasis {
    let last = used.checked_sub(1).filter(|_| used >= 2);
    let pick = |s: &Side| match last.and_then(|k| s.its.list.get(k)) {
        Some(it) => site_bytes(s.snap, &s.replay, Some(it.peak_row), Some(it.start_row), python_only),
        None => site_bytes(s.snap, &s.replay, s.replay.peak_row, None, python_only),
    };
    let sites = site_diffs(&pick(sa), &pick(sb));
    let frameless = sites.first().is_some_and(|d| d.site == NO_PYTHON_FRAMES_LABEL || d.site == NO_FRAMES_LABEL);
    let kept = |s: &Side| {
        let carry = super::growth::insights_with(s.snap, &s.replay).carry_over;
        let grads = carry.iter().filter(|c| c.kind == super::growth::CarryKind::Gradients);
        grads.fold((0u64, 0usize), |(b, n), c| (b.saturating_add(c.bytes), n + c.count))
    };
    let kept_gradients = if frameless && last.is_some() { [kept(sa), kept(sb)] } else { [(0, 0); 2] };
    VerdictBasis { carried_into: last.map(|k| k + 1), sites, kept_gradients }
}

fn diff_json(d: &StackDiff) -> Value {
    json!({"key": d.key, "site": d.site, "a_bytes": d.a_bytes, "b_bytes": d.b_bytes, "delta_bytes": i64::try_from(d.delta()).unwrap_or(if d.delta() < 0 { i64::MIN } else { i64::MAX }), "a_count": d.a_count, "b_count": d.b_count})
}

impl Comparison {
    /// JSON for the page and `memviz compare --json`.
    pub fn to_json(&self) -> Value {
        let alignment = match &self.alignment {
            Alignment::Iterations { a, b } => json!({"kind": "iterations", "a_iterations": a, "b_iterations": b}),
            Alignment::Proportion => json!({"kind": "proportion"}),
        };
        let (iterations, verdict, aligned_by) = self.verdict_json();
        json!({
            "verdict": verdict,
            "aligned_by": aligned_by,
            "iterations": iterations,
            "alignment": alignment,
            "recording_differences": self.recording_differences,
            "python_frames_only": self.python_frames_only,
            "a": {"peak_bytes": self.a_peak.0, "peak_entry": self.a_peak.1, "iterations": self.a_iterations.to_json()},
            "b": {"peak_bytes": self.b_peak.0, "peak_entry": self.b_peak.1, "iterations": self.b_iterations.to_json()},
            "curve": {
                "x": self.curve.iter().map(|p| p.x).collect::<Vec<_>>(),
                "a_bytes": self.curve.iter().map(|p| p.a_bytes).collect::<Vec<_>>(),
                "b_bytes": self.curve.iter().map(|p| p.b_bytes).collect::<Vec<_>>(),
            },
            "points": self.points.iter().map(|p| json!({
                "label": p.label,
                "a_entry": p.a_row,
                "b_entry": p.b_row,
                "a_bytes": p.a_bytes,
                "b_bytes": p.b_bytes,
                "more_in_b": p.more_in_b.iter().map(diff_json).collect::<Vec<_>>(),
                "more_in_a": p.more_in_a.iter().map(diff_json).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::analysis::test_util::fixture;

    /// Read off a replay's lives, the coverage is the one counted from the trace, on every device
    /// of every real and synthetic snapshot (so the recording differences are those of before).
    #[test]
    fn coverage_from_a_replay_is_the_one_counted() {
        let files = crate::test_fixtures::fixture_files_with(&["real", "synth"], &["pickle"]);
        let mut late = 0;
        for path in &files {
            let Ok(snap) = crate::load(&std::fs::read(path).expect("reads")) else { continue };
            for pos in 0..snap.devices.len() {
                let r = Replay::build(&snap, pos);
                let counted = crate::coverage::coverage(&snap, pos);
                late += usize::from(counted.unseen_frees > 0 || counted.ghost_allocations > 0);
                let lives = r.lives.iter().map(|l| (l.origin, l.size_bytes, l.stack));
                assert_eq!(coverage_from_lives(&snap, pos, lives), counted, "{} device {pos}", path.display());
            }
        }
        assert!(files.len() >= 10 && late >= 5, "{} files, {late} devices with unseen frees or ghosts", files.len());
    }

    /// The live bytes per key at many rows in one pass are each row's own, summed life by life
    /// with `Life::live_after`: before the first entry, the first and last rows, rows out of
    /// order and repeated.
    #[test]
    fn keys_at_many_rows_are_each_rows_own() {
        for name in ["resnet50_buggy.pickle", "oom.pickle", "growth_leak.pickle", "expandable_segments.pickle"] {
            let snap = fixture(name);
            let replay = Replay::build(&snap, 0);
            let n = replay.rows as u32;
            let rows: Vec<Option<u32>> = vec![
                None,
                Some(0),
                Some(n.saturating_sub(1)),
                Some(n / 2),
                Some(n / 3),
                Some(n / 2),
                None,
                Some(n / 7),
            ];
            let mut cache = SiteCache::default();
            let got = by_key_at(&snap, &replay, &rows, KeyMode::Line, false, &mut cache);
            for (r, got) in rows.iter().zip(&got) {
                let mut want: HashMap<String, (String, u64, usize)> = HashMap::new();
                for l in replay.lives.iter().filter(|l| l.live_after(*r)) {
                    let k =
                        if is_unrecorded(l) { BEFORE_TRACE_LABEL.to_string() } else { site_key(&snap, l.stack, false) };
                    let e = want.entry(k.clone()).or_insert((k, 0, 0));
                    e.1 += l.size_bytes;
                    e.2 += 1;
                }
                assert_eq!(got, &want, "{name} at {r:?}");
            }
        }
    }

    // Figures from: python3 tests/gen/verify_compare.py tests/data/real/resnet50_fixed.pickle tests/data/real/resnet50_buggy.pickle
    #[test]
    fn buggy_against_fixed() {
        let (a, b) = (fixture("resnet50_fixed.pickle"), fixture("resnet50_buggy.pickle"));
        let c = compare(
            &a,
            0,
            &b,
            0,
            CompareOptions { key: KeyMode::Line, top: 0, frames: Frames::All, ..CompareOptions::default() },
        );
        assert!(!c.python_frames_only);
        assert_eq!(c.alignment, Alignment::Iterations { a: 5, b: 5 });
        assert_eq!(c.a_peak, (443_710_928, Some(3133)));
        assert_eq!(c.b_peak, (470_210_256, Some(2302)));
        let p = &c.points[0];
        assert_eq!((p.label.as_str(), p.a_bytes, p.b_bytes), ("peak", 443_710_928, 470_210_256));
        let total: i128 = p.more_in_b.iter().chain(&p.more_in_a).map(StackDiff::delta).sum();
        assert_eq!(total, 26_499_328);
        let b3: Vec<(&str, u64, usize, u64, usize)> =
            p.more_in_b.iter().take(3).map(|d| (d.key.as_str(), d.a_bytes, d.a_count, d.b_bytes, d.b_count)).collect();
        assert_eq!(
            b3,
            vec![
                (NO_FRAMES_LABEL, 0, 0, 145_840_288, 167),
                ("torch/nn/modules/conv.py:548 (_conv_forward)", 36_126_720, 29, 43_954_176, 51),
                ("torch/nn/functional.py:2846 (batch_norm)", 30_569_984, 84, 38_125_056, 149),
            ]
        );
        let a2: Vec<(&str, i128)> = p.more_in_a.iter().take(2).map(|d| (d.key.as_str(), d.delta())).collect();
        assert_eq!(
            a2,
            vec![
                ("torch::autograd::generated::ConvolutionBackward0_apply_functional", -91_820_032),
                ("torch::autograd::generated::details::mm_mat1_backward", -33_554_432)
            ]
        );
        assert_eq!(c.points.len(), 1 + 5 + 1);
        assert_eq!(c.curve.len(), 500);
        // Curves reach each trace's peak.
        assert_eq!(c.curve.iter().map(|p| p.a_bytes).max(), Some(443_710_928));
        assert_eq!(c.curve.iter().map(|p| p.b_bytes).max(), Some(470_210_256));
    }

    /// fixed was recorded with stacks="all", buggy with "python": the comparison says so and
    /// matches on Python frames, so backward's gradients (C++ frames only in fixed, none in buggy)
    /// are one row, not a C++ name in one direction and `<no frames>` in the other.
    #[test]
    fn different_stacks_settings_match_on_python_frames() {
        let (a, b) = (fixture("resnet50_fixed.pickle"), fixture("resnet50_buggy.pickle"));
        for key in [KeyMode::Line, KeyMode::Stack] {
            let c = compare(&a, 0, &b, 0, CompareOptions { key, top: 0, ..CompareOptions::default() });
            assert!(c.python_frames_only);
            assert!(
                c.recording_differences.iter().any(|d| d == "stacks: A all, B python"),
                "{:?}",
                c.recording_differences
            );
            let p = &c.points[0];
            let all: Vec<&StackDiff> = p.more_in_b.iter().chain(&p.more_in_a).collect();
            // No C++ names, no frameless rows apart from the one key of both.
            assert!(
                all.iter().all(|d| !d.site.contains("::")),
                "{:?}",
                all.iter().map(|d| &d.site).collect::<Vec<_>>()
            );
            assert!(all.iter().all(|d| d.site != NO_FRAMES_LABEL));
            let none: Vec<&&StackDiff> = all.iter().filter(|d| d.key == NO_PYTHON_FRAMES_LABEL).collect();
            assert_eq!(none.len(), 1);
            // Both sides have it: the gradients of buggy are kept, those of fixed freed.
            assert!(none[0].a_bytes > 0 && none[0].b_bytes > 0, "{:?}", none[0]);
            // The totals still add up to B − A.
            let total: i128 = all.iter().map(|d| d.delta()).sum();
            assert_eq!(total, 26_499_328);
        }
        // Forced either way.
        let all = compare(&a, 0, &b, 0, CompareOptions { frames: Frames::All, ..CompareOptions::default() });
        assert!(!all.python_frames_only && !all.recording_differences.is_empty());
        let same = compare(&a, 0, &a, 0, CompareOptions::default());
        assert!(!same.python_frames_only && same.recording_differences.is_empty());
    }

    #[test]
    fn without_iterations_by_proportion() {
        let (a, b) = (fixture("oom.pickle"), fixture("multistream.pickle"));
        let c = compare(&a, 0, &b, 0, CompareOptions { points: 40, ..CompareOptions::default() });
        assert_eq!(c.alignment, Alignment::Proportion);
        assert_eq!(c.curve.len(), 40);
        assert_eq!(c.points.len(), 2);
    }
}
