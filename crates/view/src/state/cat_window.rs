//! The Categories chart's window over time: zoomed with the wheel at the pointer, panned by a
//! drag or the arrow keys, reset by a double click or `0`. The points drawn are the whole
//! timeline's inside the window (and one on either side, so the bands reach its edges), cut to
//! [`PROFILE_POINTS`] keeping each bucket's highest total, so every zoom shows its detail. The
//! minimap under it shows the whole timeline and the window; a click or drag there moves the
//! window. The pointer reads the point in force at its time (the chart is a staircase).

use memviz_core::analysis::categories::CategoryTimeline;
use memviz_core::bisect::count_while;
use memviz_core::plot::AnnotationSpan;

use super::panels::{CategoriesState, Profile, PROFILE_POINTS};

/// Plot area of the chart inside its canvas (CSS px): the y labels on the left, a margin on the
/// right, as the page's chart draws them.
pub const CHART_LEFT_PX: f64 = 60.0;
/// Right margin of the chart's plot area (CSS px).
pub const CHART_RIGHT_PX: f64 = 18.0;

/// Narrowest window, in points of the timeline.
const MIN_WINDOW_POINTS: f64 = 4.0;

impl Profile {
    /// Whether it is the profiler's memory timeline (not a grouping's chart of a snapshot), whose
    /// categories can be joined with a snapshot of the same run.
    pub fn is_profilers(&self) -> bool {
        self.full.source.starts_with("PyTorch profiler")
    }

    /// The shown file's timeline of `full`, windowed to the whole of it.
    pub(crate) fn new(name: String, full: CategoryTimeline) -> Profile {
        let peak = full.peak();
        let peak_time_us = peak.and_then(|(i, _)| full.times_us.get(i).copied().flatten());
        let points = full.bytes.len();
        // No points until the window's are picked.
        let timeline = full.pick(&[]);
        let mut p = Profile { name, timeline, shown_x: Vec::new(), peak, peak_time_us, points, full, window: None };
        (p.timeline, p.shown_x) = p.shown();
        p
    }

    /// x of point `i`: µs since the first point, or its index where the file has no times.
    pub fn x_of(&self, i: usize) -> f64 {
        let first = self.full.times_us.first().copied().flatten();
        match (self.full.times_us.get(i).copied().flatten(), first) {
            (Some(t), Some(t0)) => (t - t0) as f64,
            _ => i as f64,
        }
    }

    /// x of the last point (at least 1).
    pub fn span(&self) -> f64 {
        self.x_of(self.points.saturating_sub(1)).max(1.0)
    }

    /// The window shown, on the x of [`Profile::x_of`].
    pub fn window(&self) -> (f64, f64) {
        self.window.unwrap_or((0.0, self.span()))
    }

    /// Whether the whole timeline is shown.
    pub fn is_whole(&self) -> bool {
        self.window.is_none()
    }

    /// The points inside the window and one on either side, cut to [`PROFILE_POINTS`] (the
    /// ends kept, and the highest total of each slice between), with their x.
    fn shown(&self) -> (CategoryTimeline, Vec<f64>) {
        let (x0, x1) = self.window();
        let n = self.points;
        let first = count_while(n, |i| self.x_of(i) < x0).saturating_sub(1);
        let last = count_while(n, |i| self.x_of(i) <= x1);
        let keep = self.full.downsample_range(first, last, PROFILE_POINTS);
        (self.full.pick(&keep), keep.iter().map(|&i| self.x_of(i)).collect())
    }

    /// The point of the whole timeline in force at `x`: the last at or before it (each point's
    /// bytes hold until the next), or the first where `x` is before every point.
    pub fn point_at(&self, x: f64) -> Option<usize> {
        (self.points > 0).then(|| count_while(self.points, |i| self.x_of(i) <= x).saturating_sub(1))
    }

    /// The whole timeline for the minimap: x and total bytes of at most `max_points` points
    /// (the highest total of each slice, so no peak is lost).
    pub fn overview(&self, max_points: usize) -> Vec<(f64, u64)> {
        let keep = self.full.downsample_range(0, self.points.saturating_sub(1), max_points);
        keep.into_iter().map(|i| (self.x_of(i), self.full.total_at(i))).collect()
    }

    /// Shows `[x0, x1]`, kept inside the timeline and at least a few points wide.
    fn set_window(&mut self, x0: f64, x1: f64) {
        let span = self.span();
        let min = (span / self.points.max(1) as f64 * MIN_WINDOW_POINTS).max(1.0).min(span);
        let width = (x1 - x0).clamp(min, span);
        let x0 = x0.clamp(0.0, span - width);
        self.window = if width >= span { None } else { Some((x0, x0 + width)) };
        (self.timeline, self.shown_x) = self.shown();
    }
}

impl CategoriesState {
    /// A key over the chart: `+` `-` zoom, arrows pan, `0` shows the whole timeline.
    pub(crate) fn key(&mut self, k: char) {
        match k {
            '+' | '=' => self.zoom_middle(0.5),
            '-' => self.zoom_middle(2.0),
            '←' => self.pan_by(-0.25),
            '→' => self.pan_by(0.25),
            '0' => self.reset_window(),
            _ => {}
        }
    }

    /// Zooms by `factor` (below 1: in) around the chart's point at `x_px` of a `width_px` canvas.
    pub(crate) fn zoom_at(&mut self, x_px: f64, width_px: f64, factor: f64) {
        let Some(p) = &mut self.profile else { return };
        let (x0, x1) = p.window();
        let at = plot_fraction(x_px, width_px);
        let anchor = x0 + at * (x1 - x0);
        let width = (x1 - x0) * factor.clamp(0.05, 20.0);
        p.set_window(anchor - at * width, anchor - at * width + width);
        self.changed();
    }

    /// Pans by `dx_px` of a `width_px` canvas (a drag to the right shows earlier times).
    pub(crate) fn pan_px(&mut self, dx_px: f64, width_px: f64) {
        let plot_px = (width_px - CHART_LEFT_PX - CHART_RIGHT_PX).max(1.0);
        self.pan_by(-dx_px / plot_px);
    }

    /// Pans by `share` of the window's width (positive: later).
    pub(crate) fn pan_by(&mut self, share: f64) {
        let Some(p) = &mut self.profile else { return };
        let (x0, x1) = p.window();
        let dx = share * (x1 - x0);
        p.set_window(x0 + dx, x1 + dx);
        self.changed();
    }

    /// Zooms by `factor` around the window's middle.
    pub(crate) fn zoom_middle(&mut self, factor: f64) {
        let Some(p) = &mut self.profile else { return };
        let (x0, x1) = p.window();
        let (mid, half) = ((x0 + x1) / 2.0, (x1 - x0) / 2.0 * factor);
        p.set_window(mid - half, mid + half);
        self.changed();
    }

    /// Moves the window (its width kept) so that its middle is at `x_px` of a `width_px`
    /// minimap, whose plot area lines up with the chart's.
    pub(crate) fn centre_at(&mut self, x_px: f64, width_px: f64) {
        let Some(p) = &mut self.profile else { return };
        let (x0, x1) = p.window();
        let mid = plot_fraction(x_px, width_px) * p.span();
        let half = (x1 - x0) / 2.0;
        p.set_window(mid - half, mid + half);
        self.changed();
    }

    /// The whole timeline again.
    pub(crate) fn reset_window(&mut self) {
        let Some(p) = &mut self.profile else { return };
        p.set_window(0.0, p.span());
        self.changed();
    }

    /// The chart is drawn again, its pointer's reading with it.
    fn changed(&mut self) {
        self.window_seq += 1;
    }
}

/// A region of a file of the same run (`ProfilerStep#N`, a `record_function`) over the
/// profile's chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// Its name.
    pub name: String,
    /// Its row in the strip (nested regions lower).
    pub row: usize,
    /// Where it starts and ends across the plot area, 0 to 1 (cut to the window).
    pub from: f64,
    /// See `from`.
    pub to: f64,
    /// Its start and end, µs since the epoch.
    pub start_us: i64,
    /// See `start_us`.
    pub end_us: i64,
}

impl Profile {
    /// The regions of `spans` (a plot's annotations, `rows` their rows) in the window shown, at
    /// their place on the chart; none where the profile has no times.
    pub fn phases(&self, spans: &[AnnotationSpan], rows: &[usize]) -> Vec<Phase> {
        let Some(Some(first_us)) = self.full.times_us.first() else { return Vec::new() };
        let (x0, x1) = self.window();
        let width = (x1 - x0).max(1.0);
        spans
            .iter()
            .zip(rows)
            .filter(|(a, _)| a.metadata_rows.is_none())
            .filter_map(|(a, &row)| {
                let (from, to) = ((a.start_us - first_us) as f64, (a.end_us - first_us) as f64);
                (to >= x0 && from <= x1).then(|| Phase {
                    name: a.name.clone(),
                    row,
                    from: ((from - x0) / width).clamp(0.0, 1.0),
                    to: ((to - x0) / width).clamp(0.0, 1.0),
                    start_us: a.start_us,
                    end_us: a.end_us,
                })
            })
            .collect()
    }
}

/// Where `x_px` is across the plot area of a `width_px` wide chart canvas, 0 to 1.
pub fn plot_fraction(x_px: f64, width_px: f64) -> f64 {
    let plot_px = (width_px - CHART_LEFT_PX - CHART_RIGHT_PX).max(1.0);
    ((x_px - CHART_LEFT_PX) / plot_px).clamp(0.0, 1.0)
}

#[cfg(test)]
#[path = "cat_window_tests.rs"]
mod tests;
