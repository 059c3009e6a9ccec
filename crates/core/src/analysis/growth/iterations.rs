//! Iterations: from repeated `external_annotations` regions, or from the period of the
//! live-bytes curve; their JSON.

use std::collections::HashSet;

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::analysis::{time_of_row, Replay};
use crate::snapshot::{Snapshot, Trace};

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
pub(super) fn family_of(name: &str) -> (String, bool) {
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

/// Rows of a trace by time: the first row at or after a time, found by bisection over the
/// rows with a time, in row order (their times rise with the rows, as a recording writes them).
/// Where every row has a time (the usual trace) that is the trace's own column: no list of rows is
/// made (16 MB at 1M entries, in the page a tenth of the Compare view's comparison).
struct TimeIndex<'a> {
    trace: Option<&'a Trace>,
    /// The rows with a time, where some rows have none (`None`: every row has one).
    timed_rows: Option<Vec<u32>>,
    /// Whether any row has a time.
    any: bool,
    rows: u32,
}

impl<'a> TimeIndex<'a> {
    fn new(snap: &'a Snapshot, device_pos: usize) -> TimeIndex<'a> {
        let Some(d) = snap.devices.get(device_pos) else {
            return TimeIndex { trace: None, timed_rows: None, any: false, rows: 0 };
        };
        let t = &d.trace;
        let n = t.len();
        let untimed = (0..n).filter(|&r| t.time_us_at(r).is_none()).count();
        let timed_rows = (untimed > 0).then(|| {
            let mut rows = Vec::with_capacity(n - untimed);
            rows.extend((0..n as u32).filter(|&r| t.time_us_at(r as usize).is_some()));
            rows
        });
        TimeIndex { trace: Some(t), timed_rows, any: untimed < n, rows: n as u32 }
    }

    /// Whether no row has a time.
    fn is_empty(&self) -> bool {
        !self.any
    }

    /// First row with time >= t (`after`: > t); the row count when none.
    fn row_at(&self, t: i64, after: bool) -> u32 {
        let Some(trace) = self.trace.filter(|_| self.any) else { return self.rows };
        let before = |row: u32| trace.time_us_at(row as usize).is_some_and(|x| if after { x <= t } else { x < t });
        match &self.timed_rows {
            Some(rows) => rows.get(rows.partition_point(|&r| before(r))).copied().unwrap_or(self.rows),
            None => crate::bisect::count_while(self.rows as usize, |row| before(row as u32)) as u32,
        }
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

#[allow(clippy::too_many_lines)] // finding repeated regions and placing boundaries share state; not split yet
fn from_annotations(snap: &Snapshot, replay: &Replay, idx: &TimeIndex) -> Option<Iterations> {
    if idx.is_empty() {
        return None;
    }
    let mine: Vec<_> = snap
        .annotations
        .iter()
        .filter(|a| a.time_us.is_some() && (a.device == replay.device || a.device < 0))
        .collect();
    let anns: Vec<_> =
        if mine.is_empty() { snap.annotations.iter().filter(|a| a.time_us.is_some()).collect() } else { mine };
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
        f.starts.iter().zip(&f.ends).map(|((s, _), e)| e.saturating_sub(*s).max(0)).sum::<i64>()
            / (f.starts.len().max(1) as i64)
    };
    // 1. Numbered regions, the outermost (longest) first.
    let numbered = families
        .iter()
        .filter(|(_, f)| f.numbered && f.starts.len() >= 2)
        .max_by_key(|(_, f)| (duration(f), f.starts.len()));
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
                .max_by(|a, b| {
                    a.1.starts.len().cmp(&b.1.starts.len()).then_with(|| b.1.starts.first().cmp(&a.1.starts.first()))
                })
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
    let mut out = Iterations {
        source: Some(BoundarySource::Annotation { family: name.clone(), edge }),
        list: Vec::new(),
        optimizer_windows: windows,
    };
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
    let peaks: Vec<(usize, f64)> = (zero.max(2)..r.len().saturating_sub(1))
        .filter(|&i| r[i] >= r[i - 1] && r[i] >= r[i + 1])
        .map(|i| (i, r[i]))
        .collect();
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
    let mut out = Iterations {
        source: Some(BoundarySource::Periodic { period_rows: p.round() as u32, score }),
        ..Iterations::default()
    };
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

impl Iterations {
    /// JSON.
    pub fn to_json(&self) -> Value {
        let source = match &self.source {
            None => Value::Null,
            Some(BoundarySource::Annotation { family, edge }) => {
                json!({"kind": "annotation", "name": family, "edge": if *edge == Edge::Start { "start" } else { "end" }})
            }
            Some(BoundarySource::Periodic { period_rows, score }) => {
                json!({"kind": "periodic", "period_entries": period_rows, "score": score})
            }
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

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::TimeIndex;
    use crate::snapshot::{SparseColumn, Trace};

    /// The (time, row) of a trace's timed rows, in row order.
    fn timed(t: &Trace) -> Vec<(i64, u32)> {
        (0..t.len()).filter_map(|r| t.time_us_at(r).map(|x| (x, r as u32))).collect()
    }

    /// The first row at or after a time, as a list of the timed rows finds it.
    fn by_list(timed: &[(i64, u32)], rows: usize, time: i64, after: bool) -> u32 {
        let i = timed.partition_point(|&(x, _)| if after { x <= time } else { x < time });
        timed.get(i).map_or(rows as u32, |&(_, r)| r)
    }

    /// On every device of the timed fixtures, as they are and with every third row's time taken
    /// away: the row found for each row's time (and one before, one after), for times before and
    /// after all, is the one a list of the timed rows gives.
    #[test]
    fn rows_at_times_are_those_of_a_list_of_timed_rows() {
        let mut checked = [0, 0];
        for name in ["resnet50_buggy.pickle", "gpt_amp_annotated.pickle", "multistream.pickle", "growth_leak.pickle"] {
            let snap = crate::analysis::test_util::fixture(name);
            for gaps in [false, true] {
                let mut snap = snap.clone();
                for d in &mut snap.devices {
                    if gaps {
                        let times = (0..d.trace.len())
                            .map(|r| if r % 3 == 1 { i64::MIN } else { d.trace.time_us_at(r).unwrap_or(i64::MIN) })
                            .collect();
                        d.trace.time_us = SparseColumn::from_rows(times);
                    }
                }
                for pos in 0..snap.devices.len() {
                    let t = &snap.devices[pos].trace;
                    let idx = TimeIndex::new(&snap, pos);
                    assert_eq!(idx.timed_rows.is_some(), gaps && t.len() > 1, "{name}");
                    let list = timed(t);
                    let mut times: Vec<i64> = list.iter().map(|&(x, _)| x).collect();
                    times.extend([i64::MIN + 1, i64::MAX]);
                    for &x in &times {
                        for time in [x.saturating_sub(1), x, x.saturating_add(1)] {
                            for after in [false, true] {
                                assert_eq!(
                                    idx.row_at(time, after),
                                    by_list(&list, t.len(), time, after),
                                    "{name} {time} {after}"
                                );
                            }
                        }
                    }
                    checked[usize::from(gaps)] += usize::from(!times.is_empty());
                }
            }
        }
        assert!(checked[0] >= 4 && checked[1] >= 4, "{checked:?}");
    }
}
