//! What one plot of one device needs beside its layout: the step → time map for a time axis
//! (built when that axis is first shown), the OOM marks, the `record_function` regions placed
//! in rows, and which device a file opens on. Shared by the page (which lays out in its worker and sends a [`PlotData`] over
//! [`crate::wire`]) and anything else that draws a timeline.

use crate::analysis::metadata_runs::metadata_runs;
use crate::snapshot::{Action, Snapshot, Trace};
use crate::timeline::{self, Layout, Options};

/// The device a new file shows first: `preferred` when the file has it, else the first device
/// with a trace.
pub fn choose_device(snap: &Snapshot, preferred: Option<i64>) -> usize {
    preferred
        .and_then(|index| snap.devices.iter().position(|d| d.index == index))
        .or_else(|| snap.default_device())
        .unwrap_or(0)
}

/// What the views of one device have to show, so that a view that would show nothing is said
/// to be empty (in the view menu and in the view itself) rather than drawn as a chart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceViews {
    /// Expandable segments: mapped pages (`segment_map` entries, or expandable final segments).
    pub mapped_pages: bool,
    /// Private pools (CUDA graph or MemPool): final segments or trace entries of a pool other
    /// than the default `(0, 0)`.
    pub private_pools: bool,
    /// Why there is no history and what is shown instead ([`crate::coverage::Coverage::moment_note`]).
    pub no_history: Option<String>,
}

/// What the views of device `device_pos` have to show. O(entries + segments + blocks).
pub fn device_views(snap: &Snapshot, device_pos: usize) -> DeviceViews {
    let Some(dev) = snap.devices.get(device_pos) else { return DeviceViews::default() };
    let segments = || snap.segments.iter().filter(|s| s.device == dev.index);
    let t = &dev.trace;
    DeviceViews {
        mapped_pages: t.action.contains(&Action::SegmentMap) || segments().any(|s| s.is_expandable),
        private_pools: segments().any(|s| s.pool != 0)
            || (t.pool.is_present() && (0..t.len()).any(|r| t.pool.get(r).is_some_and(|p| p != 0))),
        // Only a trace of at most one entry can lack a history (and coverage is O(entries)).
        no_history: if t.len() <= 1 { crate::coverage::coverage(snap, device_pos).moment_note() } else { None },
    }
}

/// A monotone piecewise-linear map from steps to positions (µs since the first event).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimeMap {
    knot_step: Vec<f64>,
    knot_us: Vec<f64>,
    /// Absolute time of position 0, µs since the epoch.
    pub t0_us: i64,
}

/// Time (µs) of the event at trace row `row`, if recorded (`u32::MAX`, the row of a synthetic
/// event, has none).
fn event_time_us(trace: &Trace, row: u32) -> Option<i64> {
    if row == u32::MAX {
        None
    } else {
        trace.time_us_at(row as usize)
    }
}

impl TimeMap {
    /// Builds the map from a layout's events and their trace times; `None` without times.
    pub fn build(layout: &Layout, trace: &Trace) -> Option<TimeMap> {
        let time_of = |r: u32| event_time_us(trace, r);
        let first = layout.event_row.iter().find_map(|&r| time_of(r))?;
        let mut knot_step = Vec::with_capacity(layout.event_row.len() + 1);
        let mut knot_us = Vec::with_capacity(layout.event_row.len() + 1);
        let mut last = first;
        for (i, &r) in layout.event_row.iter().enumerate() {
            let t = time_of(r).unwrap_or(last).max(last);
            last = t;
            knot_step.push(f64::from(layout.event_step.get(i).copied().unwrap_or(0)));
            knot_us.push((t - first) as f64);
        }
        let end = f64::from(layout.steps);
        if knot_step.last().is_none_or(|&s| s < end) {
            knot_step.push(end);
            knot_us.push((last - first) as f64);
        }
        Some(TimeMap::from_knots(knot_step, knot_us, first))
    }

    /// A map through the given knots (steps strictly increasing, µs non-decreasing).
    pub fn from_knots(knot_step: Vec<f64>, knot_us: Vec<f64>, t0_us: i64) -> TimeMap {
        TimeMap { knot_step, knot_us, t0_us }
    }

    /// Last position (µs).
    pub fn end_us(&self) -> f64 {
        self.knot_us.last().copied().unwrap_or(0.0)
    }

    /// Position (µs since the first event) of a step.
    pub fn us_at_step(&self, step: f64) -> f64 {
        let n = self.knot_step.len();
        if n == 0 {
            return 0.0;
        }
        let i = self.knot_step.partition_point(|&s| s <= step);
        if i == 0 {
            return self.knot_us[0];
        }
        if i >= n {
            return self.knot_us[n - 1];
        }
        let (s0, s1) = (self.knot_step[i - 1], self.knot_step[i]);
        let (u0, u1) = (self.knot_us[i - 1], self.knot_us[i]);
        u0 + (u1 - u0) * (step - s0) / (s1 - s0)
    }

    /// Step at a position (µs since the first event); in a stretch where time stands still, the
    /// last step of it.
    pub fn step_at_us(&self, us: f64) -> f64 {
        let n = self.knot_us.len();
        if n == 0 {
            return 0.0;
        }
        let i = self.knot_us.partition_point(|&u| u <= us);
        if i == 0 {
            return self.knot_step[0];
        }
        if i >= n {
            return self.knot_step[n - 1];
        }
        let (s0, s1) = (self.knot_step[i - 1], self.knot_step[i]);
        let (u0, u1) = (self.knot_us[i - 1], self.knot_us[i]);
        if u1 > u0 {
            s0 + (s1 - s0) * (us - u0) / (u1 - u0)
        } else {
            s0
        }
    }
}

/// An `oom` entry placed on the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OomMark {
    /// Trace row of the entry.
    pub row: u32,
    /// Step it is drawn at.
    pub step: f64,
}

/// A `record_function` region from `external_annotations`, START to END, or a run of entries that
/// share a user-metadata value ([`crate::analysis::metadata_runs`]), drawn in a row of its own.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnotationSpan {
    /// Region name (a run: its value).
    pub name: String,
    /// Step of the START (the event nearest in time).
    pub start_step: f64,
    /// Step of the END.
    pub end_step: f64,
    /// Time of the START, µs since the epoch.
    pub start_us: i64,
    /// Time of the END, µs since the epoch (the last event's time for a region never ended).
    pub end_us: i64,
    /// A run of metadata: its first and last trace rows (`None`: a region).
    pub metadata_rows: Option<(u32, u32)>,
}

/// Everything one plot of one device needs.
pub struct PlotData {
    /// Index into the snapshot's devices.
    pub device_pos: usize,
    /// The layout.
    pub layout: Layout,
    /// Whether the events have times (the x axis can show time).
    pub has_time: bool,
    /// Step → time map: built when the time axis is first shown ([`PlotData::build_time_map`]),
    /// since it takes 16 bytes an event.
    pub time: Option<TimeMap>,
    /// OOM entries.
    pub ooms: Vec<OomMark>,
    /// Annotated regions of this device, in start order, then the runs of user metadata in
    /// trace order.
    pub annotations: Vec<AnnotationSpan>,
    /// Row of each annotation in the strip above the plot (nested regions get lower rows; the
    /// runs of metadata the last row).
    pub annotation_rows: Vec<usize>,
    /// Rows the strip needs.
    pub annotation_row_count: usize,
}

crate::wire_struct!(OomMark { row, step });
crate::wire_struct!(AnnotationSpan { name, start_step, end_step, start_us, end_us, metadata_rows });
crate::wire_struct!(PlotData {
    device_pos,
    layout,
    has_time,
    time,
    ooms,
    annotations,
    annotation_rows,
    annotation_row_count
});

/// Most rows the annotation strip gets; deeper nesting shares the last row.
pub const MAX_ANNOTATION_ROWS: usize = 3;

/// Assigns each span (sorted by start) the first row free at its start.
pub fn assign_rows(spans: &[(f64, f64)], max_rows: usize) -> (Vec<usize>, usize) {
    let mut row_end: Vec<f64> = Vec::new();
    let mut rows = Vec::with_capacity(spans.len());
    for &(a, b) in spans {
        let r = match row_end.iter().position(|&e| e <= a) {
            Some(r) => r,
            None if row_end.len() < max_rows.max(1) => {
                row_end.push(f64::NEG_INFINITY);
                row_end.len() - 1
            }
            None => row_end.len() - 1,
        };
        row_end[r] = row_end[r].max(b);
        rows.push(r);
    }
    (rows, row_end.len())
}

impl PlotData {
    /// Lays out one device.
    pub fn build(snap: &Snapshot, device_pos: usize, options: Options) -> PlotData {
        PlotData::from_layout(snap, device_pos, Layout::build(snap, device_pos, options))
    }

    /// The plot of one device around its layout (built by [`Layout::build`] or in steps by
    /// [`crate::timeline::LayoutBuilder`]).
    pub fn from_layout(snap: &Snapshot, device_pos: usize, layout: Layout) -> PlotData {
        let Some(dev) = snap.devices.get(device_pos) else {
            return PlotData {
                device_pos,
                layout,
                has_time: false,
                time: None,
                ooms: Vec::new(),
                annotations: Vec::new(),
                annotation_rows: Vec::new(),
                annotation_row_count: 0,
            };
        };
        let t = &dev.trace;
        let time_of = |r: u32| event_time_us(t, r);
        // A trace that recorded no times is known as such without a look at its events.
        let first_us = if t.has_time() { layout.event_row.iter().find_map(|&r| time_of(r)) } else { None };
        let ooms = t
            .action
            .iter()
            .enumerate()
            .filter(|(_, &a)| a == Action::Oom)
            .map(|(row, _)| OomMark { row: row as u32, step: f64::from(layout.step_for_row(row as u32)) })
            .collect();
        let mut annotations = Vec::new();
        let annotated = snap.annotations.iter().any(|a| a.device == dev.index && a.time_us.is_some());
        if let (Some(t0_us), true) = (first_us, annotated) {
            // Where the time map ends (times are kept non-decreasing in event order).
            let end_us = layout.event_row.iter().filter_map(|&r| time_of(r)).fold(t0_us, i64::max);
            let mut open: Vec<(u32, i64)> = Vec::new();
            let step_of = |tu: i64| timeline::step_at_time(&layout, t, tu).unwrap_or(0.0);
            let push = |name: u32, a: i64, b: i64, out: &mut Vec<AnnotationSpan>| {
                out.push(AnnotationSpan {
                    name: snap.strings.get(name).to_string(),
                    start_step: step_of(a),
                    end_step: step_of(b),
                    start_us: a,
                    end_us: b,
                    metadata_rows: None,
                });
            };
            for a in snap.annotations.iter().filter(|a| a.device == dev.index) {
                let Some(tu) = a.time_us else { continue };
                if a.start {
                    open.push((a.name, tu));
                } else if let Some(i) = open.iter().rposition(|&(n, _)| n == a.name) {
                    let (n, s) = open.remove(i);
                    push(n, s, tu, &mut annotations);
                } else {
                    push(a.name, t0_us, tu, &mut annotations);
                }
            }
            for (n, s) in open {
                push(n, s, end_us.max(s), &mut annotations);
            }
            annotations.sort_by(|a, b| a.start_us.cmp(&b.start_us).then(b.end_us.cmp(&a.end_us)));
        }
        let spans: Vec<(f64, f64)> = annotations.iter().map(|a| (a.start_us as f64, a.end_us as f64)).collect();
        let (mut annotation_rows, mut annotation_row_count) = assign_rows(&spans, MAX_ANNOTATION_ROWS);
        // Runs of user metadata: one row below the regions.
        let runs = metadata_runs(snap, device_pos);
        if !runs.runs.is_empty() {
            let rows = t.len() as u32;
            for r in &runs.runs {
                // The run covers its entries up to the next one's.
                let end_row = (r.last_row + 1).min(rows.saturating_sub(1));
                let us = |row: u32| time_of(row).or(first_us).unwrap_or(0);
                annotations.push(AnnotationSpan {
                    name: runs.value_of(r).to_string(),
                    start_step: f64::from(layout.step_for_row(r.first_row)),
                    end_step: f64::from(layout.step_for_row(r.last_row + 1)),
                    start_us: us(r.first_row),
                    end_us: us(end_row).max(us(r.first_row)),
                    metadata_rows: Some((r.first_row, r.last_row)),
                });
                annotation_rows.push(annotation_row_count);
            }
            annotation_row_count += 1;
        }
        PlotData {
            device_pos,
            layout,
            has_time: first_us.is_some(),
            time: None,
            ooms,
            annotations,
            annotation_rows,
            annotation_row_count,
        }
    }

    /// Builds the step → time map of `snap` (the snapshot this plot was laid out from), unless
    /// it is built or the events have no times.
    pub fn build_time_map(&mut self, snap: &Snapshot) {
        if self.time.is_none() && self.has_time {
            self.time = snap.devices.get(self.device_pos).and_then(|d| TimeMap::build(&self.layout, &d.trace));
        }
    }
}

crate::wire_by_field!(TimeMap { t0_us } chunked { knot_step, knot_us });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn time_maps_cross_field_by_field() {
        use crate::wire::{decode_field, encode_by_field, PartList};
        let m = TimeMap::from_knots((0..50).map(f64::from).collect(), (0..50).map(|k| f64::from(k * k)).collect(), -3);
        for chunk_bytes in [1, 24, 1 << 20] {
            let mut back = TimeMap::default();
            for (field, head, parts) in encode_by_field(&m, chunk_bytes) {
                decode_field(&mut back, field, &head, &mut PartList::new(parts)).unwrap();
            }
            assert_eq!(back, m);
        }
    }

    #[test]
    fn time_map_interpolates_and_inverts() {
        let m = TimeMap::from_knots(vec![0.0, 1.0, 5.0, 6.0, 10.0], vec![0.0, 100.0, 100.0, 300.0, 400.0], 7);
        assert_eq!(m.us_at_step(0.5), 50.0);
        assert_eq!(m.us_at_step(3.0), 100.0);
        assert_eq!(m.us_at_step(5.5), 200.0);
        assert_eq!(m.us_at_step(99.0), 400.0);
        assert_eq!(m.us_at_step(-1.0), 0.0);
        assert_eq!(m.step_at_us(50.0), 0.5);
        assert_eq!(m.step_at_us(100.0), 5.0);
        assert_eq!(m.step_at_us(200.0), 5.5);
        assert_eq!(m.step_at_us(1e9), 10.0);
        assert_eq!(m.end_us(), 400.0);
    }

    /// The map is built when asked for, the same as at once; a plot of events without times
    /// gets none; annotations are placed without it.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn the_time_map_is_built_when_asked_for() {
        let json = br#"{"segments":[],"device_traces":[[{"action":"alloc","addr":4096,"size":512,"stream":0,"time_us":10},{"action":"alloc","addr":8192,"size":256,"stream":0,"time_us":40},{"action":"free_completed","addr":4096,"size":512,"stream":0,"time_us":25}]]}"#;
        let snap = crate::load(json).unwrap();
        let mut p = PlotData::build(&snap, 0, Options::default());
        assert!(p.has_time && p.time.is_none());
        p.build_time_map(&snap);
        let m = p.time.clone().unwrap();
        assert_eq!(Some(m.clone()), TimeMap::build(&p.layout, &snap.devices[0].trace));
        // Times kept non-decreasing in event order: the free at 25 after the alloc at 40.
        assert_eq!((m.t0_us, m.end_us()), (10, 30.0));
        p.build_time_map(&snap);
        assert_eq!(p.time, Some(m));

        let untimed = br#"{"segments":[],"device_traces":[[{"action":"alloc","addr":4096,"size":512,"stream":0},{"action":"free_completed","addr":4096,"size":512,"stream":0}]]}"#;
        let snap = crate::load(untimed).unwrap();
        let mut p = PlotData::build(&snap, 0, Options::default());
        p.build_time_map(&snap);
        assert!(!p.has_time && p.time.is_none());

        let demo = crate::load(&std::fs::read(crate::test_fixtures::real_fixture("gpt_amp_annotated.pickle")).unwrap())
            .unwrap();
        let dev = demo.default_device().unwrap();
        let mut p = PlotData::build(&demo, dev, Options::default());
        assert!(!p.annotations.is_empty() && p.time.is_none());
        p.build_time_map(&demo);
        assert!(p.time.is_some());
    }

    /// The real files: none has expandable segments or private pools; the state-only one has no
    /// history and says why, a traced one has a history.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn device_views_of_the_real_files() {
        let load =
            |name: &str| crate::load(&std::fs::read(crate::test_fixtures::fixture("real", name)).unwrap()).unwrap();
        let snap = load("state_only.pickle");
        let v = device_views(&snap, snap.default_device().unwrap());
        assert!(!v.mapped_pages && !v.private_pools);
        assert!(v.no_history.unwrap().contains("enabled='state'"));
        let snap = load("resnet50_buggy.pickle");
        assert_eq!(device_views(&snap, 0), DeviceViews::default());
        let json = br#"{"segments":[{"device":0,"address":4096,"total_size":2097152,"stream":0,"segment_type":"large","segment_pool_id":[1,2],"is_expandable":true,"allocated_size":0,"active_size":0,"requested_size":0,"blocks":[{"address":4096,"size":2097152,"requested_size":0,"state":"inactive"}]}],"device_traces":[[{"action":"alloc","addr":4096,"size":512,"stream":0},{"action":"free_completed","addr":4096,"size":512,"stream":0}]]}"#;
        let snap = crate::load(json).unwrap();
        let v = device_views(&snap, 0);
        assert!(v.mapped_pages && v.private_pools && v.no_history.is_none(), "{v:?}");
    }

    /// Detail and hide freed change what is drawn, not where things are: the annotations, OOM
    /// marks and time map of an annotated trace stay put.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn marks_stay_put_whatever_is_drawn() {
        for (which, name) in [("real", "gpt_amp_annotated.pickle"), ("real", "oom.pickle")] {
            let snap = crate::load(&std::fs::read(crate::test_fixtures::fixture(which, name)).unwrap()).unwrap();
            let dev = choose_device(&snap, None);
            let full = PlotData::build(&snap, dev, Options::default());
            for options in [
                Options { max_entries: 10, ..Options::default() },
                Options { max_entries: 0, ..Options::default() },
                Options { hide_freed: true, ..Options::default() },
            ] {
                let p = PlotData::build(&snap, dev, options);
                assert_eq!(p.layout.steps, full.layout.steps, "{name} {options:?}");
                assert_eq!(p.annotations, full.annotations, "{name} {options:?}");
                assert_eq!(p.ooms, full.ooms, "{name} {options:?}");
                assert_eq!(p.time, full.time, "{name} {options:?}");
            }
            assert!(!full.annotations.is_empty() || !full.ooms.is_empty(), "{name} has marks to check");
        }
    }

    #[test]
    fn rows_keep_overlapping_spans_apart() {
        let (rows, n) = assign_rows(&[(0.0, 10.0), (1.0, 3.0), (2.0, 2.5), (3.0, 5.0), (11.0, 12.0)], 3);
        assert_eq!(rows, vec![0, 1, 2, 1, 0]);
        assert_eq!(n, 3);
        let (rows, n) = assign_rows(&[(0.0, 10.0), (1.0, 9.0), (2.0, 8.0), (3.0, 7.0)], 2);
        assert_eq!(rows, vec![0, 1, 1, 1]);
        assert_eq!(n, 2);
    }
}
