//! [`RankSummary`]: what a training run's overview needs of one rank's snapshot, small enough to
//! keep for thousands of ranks once the model is dropped: the peaks and when they happen, the
//! allocated curve down-sampled with its peaks kept, OOM events, iteration starts, the top stacks
//! live at the peak and the insights' findings. [`outliers`] compares the ranks.

use serde_json::{json, Value};

use crate::analysis::growth::{self, BoundarySource, Finding};
use crate::analysis::live::{self, group_label};
use crate::analysis::{frame_label, visible_frames, Moment, Replay};
use crate::snapshot::{Action, Snapshot};

use super::moments::{stacks_at_rows, MomentStacks, MOMENT_STACKS};

/// Most points of [`RankSummary::curve`].
pub const CURVE_POINTS: usize = 4096;

/// Stacks kept in [`RankSummary::top_stacks`].
pub const TOP_STACKS: usize = 5;

/// Iterations whose peaks' stacks are kept in [`RankSummary::iteration_peak_stacks`].
pub const MAX_ITERATION_MOMENTS: usize = 256;

/// Frames kept per stack in [`PeakStack::frames`].
const STACK_FRAMES: usize = 8;

/// A rank whose peak is more than this much above the median rank's peak is an outlier (10%).
pub const PEAK_OUTLIER_RATIO: f64 = 1.1;

/// An out-of-memory event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OomEvent {
    /// Trace entry of the `oom`.
    pub entry: u32,
    /// Bytes requested.
    pub requested_bytes: u64,
    /// When, if recorded.
    pub time_us: Option<i64>,
}

/// A stack live at the peak, with its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeakStack {
    /// Its source line (or "before the trace").
    pub label: String,
    /// Visible frames, innermost first (at most 8).
    pub frames: Vec<String>,
    /// Live requested bytes at the peak.
    pub bytes: u64,
    /// Allocations.
    pub count: usize,
}

/// One rank's snapshot, summarized (its default device: the longest trace).
#[derive(Clone, Debug, PartialEq)]
pub struct RankSummary {
    /// Device index summarized (`None`: the snapshot has no device).
    pub device: Option<i64>,
    /// Trace entries of that device.
    pub entries: usize,
    /// Highest live requested bytes.
    pub peak_allocated_bytes: u64,
    /// First entry reaching it (`None`: before the first entry).
    pub peak_allocated_entry: Option<u32>,
    /// Highest reserved (segment) bytes.
    pub peak_reserved_bytes: u64,
    /// First entry reaching it (`None`: before the first entry).
    pub peak_reserved_entry: Option<u32>,
    /// Live requested bytes after an entry, as (entry, bytes): at most [`CURVE_POINTS`], the highest
    /// of each run of entries, so every peak survives.
    pub curve: Vec<(u32, u64)>,
    /// Out-of-memory events.
    pub oom_events: Vec<OomEvent>,
    /// First entry of each iteration.
    pub iteration_starts: Vec<u32>,
    /// Where the iterations came from: `annotation`, `periodic`, or `None` (not found).
    pub iteration_source: Option<&'static str>,
    /// The stacks with the most bytes live at the peak, most first.
    pub top_stacks: Vec<PeakStack>,
    /// The largest stacks live at the peak ([`MOMENT_STACKS`] of them, with the bound on the
    /// rest): what the rank overview looks another rank's stacks up in. Empty in [`summarize`].
    pub peak_stacks: MomentStacks,
    /// The same at each iteration's peak, for the first [`MAX_ITERATION_MOMENTS`] iterations
    /// ([`crate::ranks::moments`]): the moments another rank's peak is matched with.
    pub iteration_peak_stacks: Vec<MomentStacks>,
    /// The insights' findings, problems first (their element lists left empty).
    pub findings: Vec<Finding>,
}

/// A rank that stands out, and why: `peak`, `oom`, `growth`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outlier {
    /// The rank.
    pub rank: u32,
    /// Reasons, in that order.
    pub reasons: Vec<&'static str>,
}

/// The highest of each run of `live` (bytes after each entry), at most `points` of them.
pub fn downsample_keeping_peaks(live: &[u64], points: usize) -> Vec<(u32, u64)> {
    if points == 0 {
        return Vec::new();
    }
    let per = live.len().div_ceil(points).max(1);
    live.chunks(per)
        .enumerate()
        .filter_map(|(k, c)| {
            let (i, &v) = c.iter().enumerate().rev().max_by_key(|(_, &v)| v)?;
            Some(((k * per + i) as u32, v))
        })
        .collect()
}

/// Highest reserved bytes of a device's trace and the first entry reaching it: the final
/// segments less the trace's net segment change give the start, as [`crate::info`] does.
fn peak_reserved(snap: &Snapshot, device_pos: usize) -> (u64, Option<u32>) {
    let Some(dev) = snap.devices.get(device_pos) else { return (0, None) };
    let t = &dev.trace;
    let final_reserved: i128 =
        snap.segments.iter().filter(|s| s.device == dev.index).map(|s| i128::from(s.total_size)).sum();
    let (mut change, mut highest, mut row_of_highest) = (0i128, 0i128, None);
    for (row, a) in t.action.iter().enumerate() {
        let size = i128::from(t.size_bytes.get(row).copied().unwrap_or(0));
        match a {
            Action::SegmentAlloc | Action::SegmentMap => {
                change += size;
                if change > highest {
                    highest = change;
                    row_of_highest = Some(row as u32);
                }
            }
            Action::SegmentFree | Action::SegmentUnmap => change -= size,
            _ => {}
        }
    }
    let start = (final_reserved - change).max(0);
    (u64::try_from(start + highest).unwrap_or(u64::MAX), row_of_highest)
}

/// The top stacks live at the peak.
fn top_stacks(snap: &Snapshot, replay: &Replay) -> Vec<PeakStack> {
    let Ok(l) = live::live_set(snap, replay, Moment::Peak) else { return Vec::new() };
    l.by_stack
        .iter()
        .take(TOP_STACKS)
        .map(|g| PeakStack {
            label: group_label(snap, g),
            frames: visible_frames(snap, g.stack).take(STACK_FRAMES).map(|f| frame_label(snap, f)).collect(),
            bytes: g.bytes,
            count: g.count,
        })
        .collect()
}

/// Summarizes a snapshot's default device (the longest trace). O(n log n) in its entries.
/// [`RankSummary::iteration_peak_stacks`] stays empty: [`summarize_for_overview`] fills it.
pub fn summarize(snap: &Snapshot) -> RankSummary {
    summarize_with(snap, false)
}

/// [`summarize`], with the stacks at each iteration's peak that the page's rank overview matches
/// an outlier's peak with (the command line prints none of them).
pub fn summarize_for_overview(snap: &Snapshot) -> RankSummary {
    summarize_with(snap, true)
}

fn summarize_with(snap: &Snapshot, iteration_moments: bool) -> RankSummary {
    let Some(pos) = snap.default_device() else {
        return RankSummary {
            device: None,
            entries: 0,
            peak_allocated_bytes: 0,
            peak_allocated_entry: None,
            peak_reserved_bytes: 0,
            peak_reserved_entry: None,
            curve: Vec::new(),
            oom_events: Vec::new(),
            iteration_starts: Vec::new(),
            iteration_source: None,
            top_stacks: Vec::new(),
            peak_stacks: MomentStacks::default(),
            iteration_peak_stacks: Vec::new(),
            findings: Vec::new(),
        };
    };
    let replay = Replay::build(snap, pos);
    let insights = growth::insights_with(snap, &replay);
    let (peak_reserved_bytes, peak_reserved_entry) = peak_reserved(snap, pos);
    let iteration_source = insights.iterations.source.as_ref().map(|s| match s {
        BoundarySource::Annotation { .. } => "annotation",
        BoundarySource::Periodic { .. } => "periodic",
    });
    let peaks: Vec<u32> = insights.iterations.list.iter().take(MAX_ITERATION_MOMENTS).map(|i| i.peak_row).collect();
    let iteration_peak_stacks = if iteration_moments && peaks.windows(2).all(|w| w[0] <= w[1]) {
        stacks_at_rows(snap, &replay, &peaks, MOMENT_STACKS)
    } else {
        Vec::new()
    };
    let peak_stacks = match (iteration_moments, replay.peak_row) {
        (true, Some(row)) => stacks_at_rows(snap, &replay, &[row], MOMENT_STACKS).pop().unwrap_or_default(),
        _ => MomentStacks::default(),
    };
    let findings = insights.findings.into_iter().map(|f| Finding { elements: Vec::new(), ..f }).collect();
    RankSummary {
        device: Some(replay.device),
        entries: replay.rows,
        peak_allocated_bytes: replay.peak_bytes,
        peak_allocated_entry: replay.peak_row,
        peak_reserved_bytes,
        peak_reserved_entry,
        curve: downsample_keeping_peaks(&replay.live_after_bytes, CURVE_POINTS),
        oom_events: insights
            .ooms
            .iter()
            .map(|o| OomEvent { entry: o.row, requested_bytes: o.requested_bytes, time_us: o.time_us })
            .collect(),
        iteration_starts: insights.iterations.list.iter().map(|i| i.start_row).collect(),
        iteration_source,
        top_stacks: top_stacks(snap, &replay),
        peak_stacks,
        iteration_peak_stacks,
        findings,
    }
}

impl RankSummary {
    /// Whether a growth finding was made.
    pub fn grows(&self) -> bool {
        self.findings.iter().any(|f| f.kind == "growth")
    }

    /// Kinds of the problems found (`growth`, `gradients`, `oom`, ...), in order, each once.
    pub fn problem_kinds(&self) -> Vec<&'static str> {
        let mut kinds: Vec<&'static str> = Vec::new();
        for f in self.findings.iter().filter(|f| f.problem) {
            if !kinds.contains(&f.kind) {
                kinds.push(f.kind);
            }
        }
        kinds
    }

    /// JSON of everything but the curve (`curve: true` adds it as `[[entry, bytes], ...]`).
    pub fn to_json(&self, curve: bool) -> Value {
        let mut v = json!({
            "device": self.device,
            "entries": self.entries,
            "peak_allocated_bytes": self.peak_allocated_bytes,
            "peak_allocated_entry": self.peak_allocated_entry,
            "peak_reserved_bytes": self.peak_reserved_bytes,
            "peak_reserved_entry": self.peak_reserved_entry,
            "oom_events": self.oom_events.iter().map(|o| json!({"entry": o.entry, "requested_bytes": o.requested_bytes, "time_us": o.time_us})).collect::<Vec<_>>(),
            "iteration_starts": self.iteration_starts,
            "iteration_source": self.iteration_source,
            "top_stacks": self.top_stacks.iter().map(|s| json!({"label": s.label, "frames": s.frames, "bytes": s.bytes, "count": s.count})).collect::<Vec<_>>(),
            "findings": self.findings.iter().map(|f| json!({"kind": f.kind, "problem": f.problem, "title": f.title, "bytes": f.bytes})).collect::<Vec<_>>(),
        });
        if let (true, Some(o)) = (curve, v.as_object_mut()) {
            o.insert("curve".into(), json!(self.curve.iter().map(|&(e, b)| [u64::from(e), b]).collect::<Vec<_>>()));
        }
        v
    }
}

/// The ranks that stand out: a peak more than 10% above the median rank's peak (`peak`; the
/// median of an even count is the lower middle one), an OOM (`oom`), a growth finding (`growth`).
/// In rank order.
pub fn outliers(ranks: &[(u32, &RankSummary)]) -> Vec<Outlier> {
    let peaks = super::sorted_by_key(ranks.iter().map(|(_, s)| s.peak_allocated_bytes), |p| *p);
    let median = peaks.get(peaks.len().saturating_sub(1) / 2).copied().unwrap_or(0);
    let out = ranks.iter().filter_map(|&(rank, s)| {
        let mut reasons = Vec::new();
        if s.peak_allocated_bytes as f64 > median as f64 * PEAK_OUTLIER_RATIO {
            reasons.push("peak");
        }
        if !s.oom_events.is_empty() {
            reasons.push("oom");
        }
        if s.grows() {
            reasons.push("growth");
        }
        (!reasons.is_empty()).then_some(Outlier { rank, reasons })
    });
    super::sorted_by_key(out, |o| o.rank)
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::analysis::test_util::fixture;

    #[test]
    fn downsampling_keeps_every_peak() {
        let live: Vec<u64> = (0..10_000u64).map(|i| if i == 7_777 { 1 << 40 } else { i % 97 }).collect();
        let c = downsample_keeping_peaks(&live, CURVE_POINTS);
        assert!(c.len() <= CURVE_POINTS);
        assert!(c.contains(&(7_777, 1 << 40)));
        assert_eq!(downsample_keeping_peaks(&[3, 5, 4], 4096), vec![(0, 3), (1, 5), (2, 4)]);
        assert!(downsample_keeping_peaks(&[], 4096).is_empty());
    }

    #[test]
    fn summary_agrees_with_info_and_insights() {
        let snap = fixture("oom.pickle");
        let s = summarize(&snap);
        assert!(s.iteration_peak_stacks.is_empty(), "the command line's summary keeps no moments");
        assert_eq!(s.peak_stacks, MomentStacks::default());
        let o = summarize_for_overview(&snap);
        assert_eq!(o.iteration_peak_stacks.len(), o.iteration_starts.len().min(MAX_ITERATION_MOMENTS));
        let top: Vec<(String, u64)> = o.top_stacks.iter().map(|t| (t.label.clone(), t.bytes)).collect();
        assert_eq!(o.peak_stacks.stacks.iter().take(TOP_STACKS).cloned().collect::<Vec<_>>(), top);
        assert_eq!(RankSummary { iteration_peak_stacks: Vec::new(), peak_stacks: MomentStacks::default(), ..o }, s);
        let i = crate::info::info(&snap);
        let d = i.devices.iter().find(|d| Some(d.device) == s.device).expect("device");
        assert_eq!(s.entries, d.entries);
        assert_eq!(s.peak_allocated_bytes, d.peak_allocated_bytes);
        assert_eq!(s.peak_allocated_entry.map(|r| r as usize), d.peak_allocated_row);
        assert_eq!(s.peak_reserved_bytes, d.peak_reserved_bytes);
        assert_eq!(s.oom_events.len(), d.ooms);
        assert!(!s.oom_events.is_empty() && s.findings.iter().any(|f| f.kind == "oom"));
        assert!(s.curve.iter().any(|&p| Some(p.0) == s.peak_allocated_entry && p.1 == s.peak_allocated_bytes));
        assert!(!s.top_stacks.is_empty() && s.top_stacks.len() <= TOP_STACKS);
        let j = s.to_json(true);
        assert_eq!(j["peak_allocated_bytes"], s.peak_allocated_bytes);
        assert_eq!(j["curve"].as_array().map(Vec::len), Some(s.curve.len()));
        assert!(s.to_json(false).get("curve").is_none());
    }

    fn with_peak(b: u64) -> RankSummary {
        RankSummary {
            device: Some(0),
            entries: 1,
            peak_allocated_bytes: b,
            peak_allocated_entry: Some(0),
            peak_reserved_bytes: b,
            peak_reserved_entry: Some(0),
            curve: Vec::new(),
            oom_events: Vec::new(),
            iteration_starts: Vec::new(),
            iteration_source: None,
            top_stacks: Vec::new(),
            peak_stacks: MomentStacks::default(),
            iteration_peak_stacks: Vec::new(),
            findings: Vec::new(),
        }
    }

    #[test]
    fn outliers_by_median_peak() {
        let a = with_peak(100);
        let b = with_peak(110);
        let c = with_peak(111);
        let mut d = with_peak(100);
        d.oom_events.push(OomEvent { entry: 0, requested_bytes: 1, time_us: None });
        let o = outliers(&[(3, &c), (0, &a), (1, &b), (2, &d)]);
        assert_eq!(o, vec![Outlier { rank: 2, reasons: vec!["oom"] }, Outlier { rank: 3, reasons: vec!["peak"] }]);
        assert!(outliers(&[]).is_empty());
    }
}
