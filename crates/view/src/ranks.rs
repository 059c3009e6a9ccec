//! A training run in the page: its ranks (told from the files' paths by `core::ranks`), each
//! rank's [`RankDigest`] as a loading worker sends it (its `RankSummary` less what the overview
//! never shows), which rank is in focus, the outliers (core's rule, per iteration), the keys
//! that move the focus, and the overview's geometry: bar lengths, the curves' points (aligned by
//! iteration where every rank has iterations, else by trace entry) and what a point of the
//! overlaid curves is nearest to.

use memviz_core::analysis::growth::Finding;
use memviz_core::ranks::{self, sorted_by_key, MomentStacks, NamingRule, OomEvent, RankSummary, StackBytes};

/// Full models kept at most: the rank (or file) shown and the one shown before it.
pub const MAX_RESIDENT_MODELS: usize = 2;

/// What the overview keeps of one rank's snapshot (a few kilobytes, sent by a loading worker as
/// bytes: `core::wire`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankDigest {
    /// Trace entries of the summarized device.
    pub entries: u64,
    /// Highest live requested bytes.
    pub peak_allocated_bytes: u64,
    /// First entry reaching it.
    pub peak_allocated_entry: Option<u32>,
    /// Highest reserved bytes.
    pub peak_reserved_bytes: u64,
    /// First entry reaching it.
    pub peak_reserved_entry: Option<u32>,
    /// Live bytes after an entry, (entry, bytes), at most 4,096 points with every peak kept.
    pub curve: Vec<(u32, u64)>,
    /// Entries of the out-of-memory events.
    pub oom_entries: Vec<u32>,
    /// First entry of each iteration.
    pub iteration_starts: Vec<u32>,
    /// Whether the insights found growth across iterations.
    pub grows: bool,
    /// Kinds of the problems found, in order.
    pub problems: Vec<String>,
    /// The stacks with the most bytes live at the peak: (label, bytes), most first.
    pub top_stacks: Vec<(String, u64)>,
    /// The largest stacks live at the peak, with the bound on those left out: what another
    /// rank's stacks are looked up in.
    pub peak_stacks: MomentStacks,
    /// The same at each iteration's peak (the first iterations, as core keeps them).
    pub iteration_peak_stacks: Vec<MomentStacks>,
}

memviz_core::wire_struct!(RankDigest {
    entries,
    peak_allocated_bytes,
    peak_allocated_entry,
    peak_reserved_bytes,
    peak_reserved_entry,
    curve,
    oom_entries,
    iteration_starts,
    grows,
    problems,
    top_stacks,
    peak_stacks,
    iteration_peak_stacks
});

impl RankDigest {
    /// The digest of a summary.
    pub fn of(s: &RankSummary) -> RankDigest {
        RankDigest {
            entries: s.entries as u64,
            peak_allocated_bytes: s.peak_allocated_bytes,
            peak_allocated_entry: s.peak_allocated_entry,
            peak_reserved_bytes: s.peak_reserved_bytes,
            peak_reserved_entry: s.peak_reserved_entry,
            curve: s.curve.clone(),
            oom_entries: s.oom_events.iter().map(|o| o.entry).collect(),
            iteration_starts: s.iteration_starts.clone(),
            grows: s.grows(),
            problems: s.problem_kinds().into_iter().map(str::to_string).collect(),
            top_stacks: s.top_stacks.iter().map(|t| (t.label.clone(), t.bytes)).collect(),
            peak_stacks: s.peak_stacks.clone(),
            iteration_peak_stacks: s.iteration_peak_stacks.clone(),
        }
    }

    /// A summary with what [`ranks::outliers`] reads (peak, OOMs, growth), to ask core.
    fn as_summary(&self) -> RankSummary {
        let growth = Finding {
            problem: true,
            kind: "growth",
            title: String::new(),
            details: Vec::new(),
            suggestions: Vec::new(),
            bytes: 0,
            elements: Vec::new(),
        };
        RankSummary {
            device: Some(0),
            entries: self.entries as usize,
            peak_allocated_bytes: self.peak_allocated_bytes,
            peak_allocated_entry: self.peak_allocated_entry,
            peak_reserved_bytes: self.peak_reserved_bytes,
            peak_reserved_entry: self.peak_reserved_entry,
            curve: Vec::new(),
            oom_events: self
                .oom_entries
                .iter()
                .map(|&entry| OomEvent { entry, requested_bytes: 0, time_us: None })
                .collect(),
            iteration_starts: Vec::new(),
            iteration_source: None,
            top_stacks: Vec::new(),
            peak_stacks: MomentStacks::default(),
            iteration_peak_stacks: Vec::new(),
            findings: if self.grows { vec![growth] } else { Vec::new() },
        }
    }
}

/// Where one rank's file is.
#[derive(Clone, Debug, PartialEq)]
pub enum RankStatus {
    /// Not started.
    Waiting,
    /// Being read: share of the file read, 0 to 1.
    Reading(f64),
    /// Summarized.
    Done(Box<RankDigest>),
    /// Could not be read; why, for the user.
    Failed(String),
}

/// One file of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct RankEntry {
    /// Its rank.
    pub rank: u32,
    /// Its iteration (from an `iteration_N` / `step_N` folder).
    pub iteration: Option<u64>,
    /// Its path as given (file name, or relative path in a folder).
    pub path: String,
    /// Index of its file in the list the run was opened from.
    pub source: usize,
    /// How far it is.
    pub status: RankStatus,
}

impl RankEntry {
    /// Its digest, once summarized.
    pub fn digest(&self) -> Option<&RankDigest> {
        match &self.status {
            RankStatus::Done(d) => Some(d),
            _ => None,
        }
    }

    /// "rank 3" (and its iteration).
    pub fn label(&self) -> String {
        match self.iteration {
            Some(i) => format!("rank {} · iteration {i}", self.rank),
            None => format!("rank {}", self.rank),
        }
    }
}

/// A training run opened in the page.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// How ranks were told apart.
    pub rule: NamingRule,
    /// Its files, by iteration then rank.
    pub ranks: Vec<RankEntry>,
    /// The rank in focus (index into `ranks`).
    pub focused: Option<usize>,
    /// Whether the overview is shown (else the focused rank's timeline).
    pub overview: bool,
    /// Changes with everything the overview shows (the page redraws it when it changes).
    pub generation: u64,
    /// Which run of the page's this is (the page numbers them), so a worker's late answer about
    /// an earlier run is dropped.
    pub id: u64,
}

/// Whether files picked together make a run: their names give ranks (not just their order).
pub fn names_give_ranks(paths: &[String]) -> bool {
    paths.len() >= 2 && ranks::assign_ranks(paths).rule != NamingRule::FileOrder
}

impl Run {
    /// A run of the files at `paths` (in the order given), none read yet.
    pub fn new(paths: &[String]) -> Run {
        let assigned = ranks::assign_ranks(paths);
        let entries = assigned.files.into_iter().enumerate().map(|(source, f)| RankEntry {
            rank: f.rank,
            iteration: f.iteration,
            path: f.path,
            source,
            status: RankStatus::Waiting,
        });
        let entries = sorted_by_key(entries, |e| (e.iteration, e.rank));
        Run { rule: assigned.rule, ranks: entries, focused: None, overview: true, generation: 0, id: 0 }
    }

    /// The rule used, in words.
    pub fn rule_text(&self) -> &'static str {
        self.rule.describe()
    }

    /// Marks a change the overview shows.
    fn changed(&mut self) {
        self.generation += 1;
    }

    /// Rank `i` is being read, `fraction` of it so far.
    pub fn set_reading(&mut self, i: usize, fraction: f64) {
        if let Some(e) = self.ranks.get_mut(i) {
            e.status = RankStatus::Reading(fraction.clamp(0.0, 1.0));
            self.changed();
        }
    }

    /// Rank `i` is summarized.
    pub fn set_done(&mut self, i: usize, d: RankDigest) {
        if let Some(e) = self.ranks.get_mut(i) {
            e.status = RankStatus::Done(Box::new(d));
            self.changed();
        }
    }

    /// Rank `i` could not be read.
    pub fn set_failed(&mut self, i: usize, why: String) {
        if let Some(e) = self.ranks.get_mut(i) {
            e.status = RankStatus::Failed(why);
            self.changed();
        }
    }

    /// Whether every rank is summarized or failed.
    pub fn all_done(&self) -> bool {
        self.ranks.iter().all(|e| matches!(e.status, RankStatus::Done(_) | RankStatus::Failed(_)))
    }

    /// Ranks summarized so far.
    pub fn done_count(&self) -> usize {
        self.ranks.iter().filter(|e| e.digest().is_some()).count()
    }

    /// Index of the entry of `rank` (in `iteration`).
    pub fn index_of(&self, rank: u32, iteration: Option<u64>) -> Option<usize> {
        self.ranks.iter().position(|e| e.rank == rank && (iteration.is_none() || e.iteration == iteration))
    }

    /// Indices of the summarized entries of each iteration, in rank order.
    fn groups(&self) -> Vec<Vec<usize>> {
        let mut out: Vec<(Option<u64>, Vec<usize>)> = Vec::new();
        for (i, e) in self.ranks.iter().enumerate().filter(|(_, e)| e.digest().is_some()) {
            match out.iter_mut().find(|(it, _)| *it == e.iteration) {
                Some((_, v)) => v.push(i),
                None => out.push((e.iteration, vec![i])),
            }
        }
        out.into_iter().map(|(_, v)| v).collect()
    }

    /// The outliers (core's rule: peak more than 10% above the median, an OOM, growth), within
    /// each iteration: (index, reasons), in index order.
    pub fn outliers(&self) -> Vec<(usize, Vec<&'static str>)> {
        let mut out = Vec::new();
        for g in self.groups() {
            let summaries: Vec<(u32, RankSummary)> =
                g.iter().filter_map(|&i| Some((i as u32, self.ranks.get(i)?.digest()?.as_summary()))).collect();
            let refs: Vec<(u32, &RankSummary)> = summaries.iter().map(|(i, s)| (*i, s)).collect();
            out.extend(ranks::outliers(&refs).into_iter().map(|o| (o.rank as usize, o.reasons)));
        }
        // Groups follow the entries' order and core answers in the order given: in index order.
        out
    }

    /// The reasons entry `i` is an outlier (empty when it is not).
    pub fn reasons_of(&self, i: usize) -> Vec<&'static str> {
        self.outliers().into_iter().find(|o| o.0 == i).map(|o| o.1).unwrap_or_default()
    }

    /// The median entry of `i`'s iteration by peak allocated (the lower middle one, as core
    /// picks it).
    pub fn median_of(&self, i: usize) -> Option<usize> {
        let it = self.ranks.get(i)?.iteration;
        let g = self
            .ranks
            .iter()
            .enumerate()
            .filter(|(_, e)| e.iteration == it)
            .filter_map(|(k, e)| Some((e.digest()?.peak_allocated_bytes, k)));
        let g = sorted_by_key(g, |p| *p);
        g.get(g.len().checked_sub(1)? / 2).map(|p| p.1)
    }

    /// The entry `by` after the focused one (wrapping; the first or last when none is focused).
    pub fn step_focus(&self, by: i32) -> Option<usize> {
        let n = self.ranks.len() as i64;
        if n == 0 {
            return None;
        }
        Some(match self.focused {
            Some(f) => (f as i64 + i64::from(by)).rem_euclid(n) as usize,
            None if by >= 0 => 0,
            None => (n - 1) as usize,
        })
    }

    /// Highest peak reserved (and allocated) over the summarized ranks: the bars' full length.
    pub fn bar_scale_bytes(&self) -> u64 {
        self.ranks
            .iter()
            .filter_map(RankEntry::digest)
            .map(|d| d.peak_reserved_bytes.max(d.peak_allocated_bytes))
            .max()
            .unwrap_or(0)
    }

    /// Lengths of entry `i`'s bars, as shares of the longest: (allocated, reserved).
    pub fn bar_shares(&self, i: usize) -> (f64, f64) {
        let scale = self.bar_scale_bytes() as f64;
        match self.ranks.get(i).and_then(RankEntry::digest) {
            Some(d) if scale > 0.0 => (d.peak_allocated_bytes as f64 / scale, d.peak_reserved_bytes as f64 / scale),
            _ => (0.0, 0.0),
        }
    }

    /// Whether curves are aligned by iteration: every summarized rank has iterations.
    pub fn by_iteration(&self) -> bool {
        let mut ds = self.ranks.iter().filter_map(RankEntry::digest).peekable();
        ds.peek().is_some() && ds.all(|d| !d.iteration_starts.is_empty())
    }

    /// Where `entry` of digest `d` goes on the shared x axis: its trace entry, or, by
    /// iteration, the iteration's number plus the share of it done (the entries before the
    /// first iteration in [-1, 0)).
    pub fn x_of(d: &RankDigest, entry: u32, by_iteration: bool) -> f64 {
        if !by_iteration {
            return f64::from(entry);
        }
        let starts = &d.iteration_starts;
        let k = starts.partition_point(|&s| s <= entry);
        let end = d.entries.max(u64::from(entry) + 1) as f64;
        if k == 0 {
            let first = starts.first().map_or(end, |&s| f64::from(s)).max(1.0);
            return f64::from(entry) / first - 1.0;
        }
        let s0 = f64::from(starts[k - 1]);
        let s1 = starts.get(k).map_or(end, |&s| f64::from(s));
        (k - 1) as f64 + (f64::from(entry) - s0) / (s1 - s0).max(1.0)
    }

    /// The shared x domain of every curve.
    pub fn x_domain(&self) -> (f64, f64) {
        let by_it = self.by_iteration();
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for d in self.ranks.iter().filter_map(RankEntry::digest) {
            let last = u32::try_from(d.entries.saturating_sub(1)).unwrap_or(u32::MAX);
            lo = lo.min(Self::x_of(d, 0, by_it));
            hi = hi.max(Self::x_of(d, last, by_it) + if by_it { 0.0 } else { 1.0 });
        }
        if lo.is_finite() && hi > lo {
            (lo, hi)
        } else {
            (0.0, 1.0)
        }
    }

    /// Highest live bytes of any curve: the curves' shared y scale.
    pub fn curve_scale_bytes(&self) -> u64 {
        self.ranks.iter().filter_map(RankEntry::digest).map(|d| d.peak_allocated_bytes).max().unwrap_or(0)
    }

    /// Entry `i`'s curve in a box of `w_px` by `h_px` (CSS px, y down), on the shared axes: the
    /// highest and lowest point of each pixel column.
    pub fn curve_px(&self, i: usize, w_px: f64, h_px: f64) -> Vec<(f64, f64)> {
        let Some(d) = self.ranks.get(i).and_then(RankEntry::digest) else { return Vec::new() };
        let by_it = self.by_iteration();
        let (x0, x1) = self.x_domain();
        let y_max = self.curve_scale_bytes().max(1) as f64;
        let pts = d.curve.iter().map(|&(e, b)| {
            let x = (Self::x_of(d, e, by_it) - x0) / (x1 - x0) * w_px;
            (x, h_px - b as f64 / y_max * h_px)
        });
        per_column(pts)
    }

    /// The entry whose overlaid curve passes nearest to a point of its `w_px` by `h_px` box,
    /// within `slop_px` (vertically, at the point's x).
    pub fn curve_at(&self, w_px: f64, h_px: f64, x_px: f64, y_px: f64, slop_px: f64) -> Option<usize> {
        let mut best: Option<(f64, usize)> = None;
        for i in 0..self.ranks.len() {
            let pts = self.curve_px(i, w_px, h_px);
            let k = pts.partition_point(|p| p.0 < x_px);
            let y = match (k.checked_sub(1).and_then(|j| pts.get(j)), pts.get(k)) {
                (Some(a), Some(b)) if b.0 > a.0 => a.1 + (b.1 - a.1) * (x_px - a.0) / (b.0 - a.0),
                (Some(a), _) => a.1,
                (None, Some(b)) => b.1,
                (None, None) => continue,
            };
            let dist = (y - y_px).abs();
            if dist <= slop_px && best.is_none_or(|(bd, _)| dist < bd) {
                best = Some((dist, i));
            }
        }
        best.map(|b| b.1)
    }
}

/// The highest and lowest point of each pixel column, in x order: what a column can show of a
/// curve, every peak kept.
fn per_column(pts: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    /// A pixel column, and its highest and lowest point so far.
    type Column = (i64, (f64, f64), (f64, f64));
    let mut out = Vec::new();
    let mut column: Option<Column> = None;
    let flush = |out: &mut Vec<(f64, f64)>, lo: (f64, f64), hi: (f64, f64)| {
        let (a, b) = if lo.0 <= hi.0 { (lo, hi) } else { (hi, lo) };
        out.push(a);
        if b != a {
            out.push(b);
        }
    };
    for p in pts {
        let c = p.0.floor() as i64;
        match &mut column {
            Some((k, lo, hi)) if *k == c => {
                if p.1 < lo.1 {
                    *lo = p;
                }
                if p.1 > hi.1 {
                    *hi = p;
                }
            }
            _ => {
                if let Some((_, lo, hi)) = column {
                    flush(&mut out, lo, hi);
                }
                column = Some((c, p, p));
            }
        }
    }
    if let Some((_, lo, hi)) = column {
        flush(&mut out, lo, hi);
    }
    out
}

/// Where the median rank is read against an outlier's peak: the peak of the iteration the
/// outlier peaks in (`Some(k)`, 0-based), as the compare analysis matches moments, where both
/// have it; else the median's own peak (`None`).
pub fn matched_iteration(outlier: &RankDigest, median: &RankDigest) -> Option<usize> {
    let peak = outlier.peak_allocated_entry?;
    let k = outlier.iteration_starts.partition_point(|&s| s <= peak).checked_sub(1)?;
    (median.iteration_peak_stacks.len() > k && median.iteration_starts.len() > k).then_some(k)
}

/// Rows of "what differs" per side: the largest stacks of each side's moment.
pub const DIFFER_ROWS_PER_SIDE: usize = 5;

/// One row of "what differs": a stack and its live bytes in the outlier (at its peak) and in the
/// median rank (at the matched moment), each exact or, where that rank's digest did not keep
/// the stack, a bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackDifference {
    /// The stack's site label.
    pub label: String,
    /// The outlier's bytes.
    pub outlier: StackBytes,
    /// The median rank's bytes.
    pub median: StackBytes,
}

impl StackDifference {
    /// Outlier minus median, when both are exact.
    pub fn delta_bytes(&self) -> Option<i128> {
        match (self.outlier, self.median) {
            (StackBytes::Exact(a), StackBytes::Exact(b)) => Some(i128::from(a) - i128::from(b)),
            _ => None,
        }
    }

    /// The least the difference can be, in bytes (what the rows are ordered by).
    fn least_abs_delta_bytes(&self) -> u64 {
        match (self.outlier, self.median) {
            (StackBytes::Exact(a), StackBytes::Exact(b)) => a.abs_diff(b),
            (StackBytes::Exact(a), StackBytes::AtMost(b)) | (StackBytes::AtMost(b), StackBytes::Exact(a)) => {
                a.saturating_sub(b)
            }
            (StackBytes::AtMost(_), StackBytes::AtMost(_)) => 0,
        }
    }
}

/// The median rank's moment that an outlier's peak is read against ([`matched_iteration`]).
fn median_moment<'a>(outlier: &RankDigest, median: &'a RankDigest) -> &'a MomentStacks {
    match matched_iteration(outlier, median).and_then(|k| median.iteration_peak_stacks.get(k)) {
        Some(s) => s,
        None => &median.peak_stacks,
    }
}

/// How the stacks live at an outlier's peak differ from the median rank's at the matched moment
/// ([`matched_iteration`]): the [`DIFFER_ROWS_PER_SIDE`] largest of each side, each looked up in
/// both (never a 0 that only means "not kept"); rows equal on both sides left out; the largest
/// difference first.
pub fn stack_differences(outlier: &RankDigest, median: &RankDigest) -> Vec<StackDifference> {
    let (mine, theirs) = (&outlier.peak_stacks, median_moment(outlier, median));
    let mut labels: Vec<&str> = Vec::new();
    for (l, _) in mine.stacks.iter().take(DIFFER_ROWS_PER_SIDE).chain(theirs.stacks.iter().take(DIFFER_ROWS_PER_SIDE)) {
        if !labels.contains(&l.as_str()) {
            labels.push(l);
        }
    }
    let rows = labels.into_iter().map(|l| StackDifference {
        label: l.to_string(),
        outlier: mine.bytes_of(l),
        median: theirs.bytes_of(l),
    });
    let rows = rows.filter(|r| r.delta_bytes() != Some(0));
    sorted_by_key(rows, |r| std::cmp::Reverse(r.least_abs_delta_bytes()))
}

#[cfg(test)]
#[path = "ranks_tests.rs"]
pub(crate) mod tests;
