//! The Compare view: the file shown (A) and the file it is compared with (B, the Compare tab's
//! choice) on one aligned x axis, shown in place of the timeline. Positions are iterations
//! (`k + share of iteration k`) where both files have them, else the share of each trace
//! ([`aligned_map`] maps them to each layout's steps), so one window, one zoom and one cursor
//! hold for both timelines and the chart of their totals between them. Which of the two views in
//! the timeline's place is shown (this one, a run's overview) is decided here too. The window is kept as a
//! share of the aligned domain ([`CompareView`]), which the comparison decides; the page maps
//! it ([`window_in`]).

use memviz_core::analysis::compare::{Alignment, Comparison};
use memviz_core::analysis::growth::Iterations;
use memviz_core::plot::TimeMap;
use memviz_core::timeline::Layout;

use super::{Effect, ViewState};

/// Narrowest window, as a share of the aligned domain.
const MIN_WIDTH: f64 = 1e-6;

/// An input of the Compare view; `at` is a share of the plot area's width (0 left, 1 right).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CompareInput {
    /// Compare the file shown with file `i` (B).
    SelectB(usize),
    /// Show B and compare it with A: the two change places.
    Swap,
    /// The wheel turned over a chart.
    Wheel {
        /// Where, as a share of the width.
        at: f64,
        /// How far (CSS px, positive: towards the user, zoom out).
        delta_y_px: f64,
    },
    /// A button went down over a chart.
    Down {
        /// Where.
        at: f64,
    },
    /// The pointer moved over a chart (dragging when a button is down).
    Move {
        /// Where.
        at: f64,
        /// Over which timeline and how high, when over one of the two (not the totals).
        on: Option<OnTimeline>,
    },
    /// The button went up.
    Up,
    /// The pointer left the charts.
    Leave,
    /// Show the whole aligned domain (double click, `0`).
    Reset,
}

/// The pointer over one of the two timelines.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OnTimeline {
    /// Over B's (else A's).
    pub b: bool,
    /// Its height as a share of the plot area's (0 bottom, 1 top).
    pub up: f64,
}

/// A row of the Compare tab's tables (by source line), picked: its allocations are marked in
/// both timelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PickedRow {
    /// The matched point (index into the comparison's points).
    pub point: usize,
    /// The "More in B" table (else "More in A").
    pub more_in_b: bool,
    /// The row of that table.
    pub i: usize,
}

/// The Compare view's own state: shown or not, the window and the cursor as shares of the
/// aligned domain, a drag in progress, the timeline under the pointer and a picked row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompareView {
    /// The pair a link names (A, B), until both files are open ([`ViewState::restore_compare`]).
    pub(crate) restore: Option<(String, String)>,
    shown: bool,
    window: Option<(f64, f64)>,
    cursor: Option<f64>,
    drag: Option<(f64, (f64, f64))>,
    on: Option<OnTimeline>,
    /// The row picked, with the pair (A, B) its indices are of.
    picked: Option<((usize, usize), PickedRow)>,
    /// Until when (the page's clock, ms) a wheel's frames stretch the last exact charts.
    preview_until_ms: f64,
}

impl CompareView {
    /// The window, as shares of the aligned domain (the whole: `(0, 1)`).
    pub fn window(&self) -> (f64, f64) {
        self.window.unwrap_or((0.0, 1.0))
    }

    /// The cursor, as a share of the aligned domain.
    pub fn cursor(&self) -> Option<f64> {
        self.cursor
    }

    /// Whether frames at `now_ms` stretch the last exact charts (the wheel turns: each notch
    /// holds them [`crate::state::PREVIEW_HOLD_MS`], then the charts are drawn exactly).
    pub fn previewing(&self, now_ms: f64) -> bool {
        now_ms < self.preview_until_ms
    }

    /// The timeline under the pointer and how high (none while dragging).
    pub fn on(&self) -> Option<OnTimeline> {
        self.on.filter(|_| self.drag.is_none())
    }

    fn set_window(&mut self, a: f64, b: f64) {
        let w = (b - a).clamp(MIN_WIDTH, 1.0);
        let a = a.clamp(0.0, 1.0 - w);
        self.window = if w >= 1.0 { None } else { Some((a, a + w)) };
    }

    /// The share of the domain at `at` (a share of the width) in the window.
    fn at(&self, at: f64) -> f64 {
        let (a, b) = self.window();
        a + at.clamp(0.0, 1.0) * (b - a)
    }
}

/// Maps a window of shares to the aligned domain `(lo, hi)`.
pub fn window_in(share: (f64, f64), domain: (f64, f64)) -> (f64, f64) {
    let w = domain.1 - domain.0;
    (domain.0 + share.0 * w, domain.0 + share.1 * w)
}

/// The aligned domain of a comparison: `(0, n)` for the `n` iterations both files have, else
/// `(0, 1)`, the share of each trace.
pub fn aligned_domain(c: &Comparison) -> (f64, f64) {
    match c.alignment {
        Alignment::Iterations { .. } => {
            let used = c.a_iterations.list.len().min(c.b_iterations.list.len());
            (0.0, used.max(1) as f64)
        }
        Alignment::Proportion => (0.0, 1.0),
    }
}

/// How one file's steps map to the aligned axis: iteration `k` starts at position `k`, the last
/// compared one ends at `n`, each iteration's steps spread evenly over its unit (by
/// `Alignment::Iterations`); else step 0 at 0 and the last step at 1. As a [`TimeMap`] (whose
/// "µs" are these positions), so an [`crate::xmap::XMap`] draws a layout on it.
pub fn aligned_map(c: &Comparison, its: &Iterations, layout: &Layout) -> TimeMap {
    let (mut steps, mut xs) = (vec![0.0], vec![0.0]);
    let push = |step: f64, x: f64, steps: &mut Vec<f64>, xs: &mut Vec<f64>| {
        if steps.last().is_none_or(|&s| step > s) {
            steps.push(step);
            xs.push(x);
        }
    };
    let end = f64::from(layout.steps.max(1));
    if matches!(c.alignment, Alignment::Iterations { .. }) {
        let used = c.a_iterations.list.len().min(c.b_iterations.list.len());
        // Position 0 is the first iteration's start: what comes before it is left of the axis.
        steps.clear();
        xs.clear();
        for (k, it) in its.list.iter().take(used).enumerate() {
            push(f64::from(layout.step_for_row(it.start_row)), k as f64, &mut steps, &mut xs);
        }
        if let Some(last) = its.list.get(used.saturating_sub(1)) {
            push(f64::from(layout.step_for_row(last.end_row)), used as f64, &mut steps, &mut xs);
        }
        if steps.len() < 2 {
            return TimeMap::from_knots(vec![0.0, end], vec![0.0, 1.0], 0);
        }
    } else {
        push(end, 1.0, &mut steps, &mut xs);
    }
    TimeMap::from_knots(steps, xs, 0)
}

/// The trace rows each file of the pair shows in the Compare view's window (A's, B's; `None`:
/// the whole trace, for the whole view), for Detail to follow ([`ViewState::refocus_compare`]).
pub fn compare_focus_rows(c: &Comparison, s: &ViewState) -> Option<[Option<(u32, u32)>; 2]> {
    let (a, b) = s.compare_pair()?;
    let share = s.compare_view().window();
    if share == (0.0, 1.0) {
        return Some([None, None]);
    }
    let (x0, x1) = window_in(share, aligned_domain(c));
    let rows = |f: &super::OpenFile, its: &Iterations| {
        let m = aligned_map(c, its, &f.plot.layout);
        let xm = crate::xmap::XMap::time(&m);
        f.plot.layout.focus_rows_between(xm.step(x0), xm.step(x1))
    };
    Some([rows(s.files.get(a)?, &c.a_iterations), rows(s.files.get(b)?, &c.b_iterations)])
}

/// The matched moment the verdict rests on, as (A's row, B's row, its name): the peak of the last
/// iteration both files have, else each file's peak.
pub fn parting_moment(c: &Comparison) -> Option<(Option<u32>, Option<u32>, String)> {
    let p = c.points.get(parting_point(c)?)?;
    Some((p.a_row, p.b_row, p.label.clone()))
}

/// The index of [`parting_moment`]'s point in the comparison's points.
pub fn parting_point(c: &Comparison) -> Option<usize> {
    let label = c.basis.carried_into.map_or_else(|| "peak".to_string(), |k| format!("iteration {k} peak"));
    c.points.iter().position(|p| p.label == label).or_else(|| (!c.points.is_empty()).then_some(0))
}

/// Where the two files part, on their timelines: at [`parting_moment`], the allocations live in
/// one file that have no counterpart live in the other, a counterpart being an allocation of the
/// same source line (as the comparison matches lines) and the same size. Where one file holds
/// more of a line and size than the other, its oldest ones are the extra (memory kept across
/// iterations is the older); A's, then B's.
pub fn parting_elements(
    c: &Comparison,
    a: (&memviz_core::snapshot::Snapshot, &Layout),
    b: (&memviz_core::snapshot::Snapshot, &Layout),
) -> [Vec<memviz_core::timeline::ElementIndex>; 2] {
    use std::collections::HashMap;
    /// Live elements by (line, size): their alloc rows and indices.
    type Groups = HashMap<(String, u64), Vec<(Option<u32>, usize)>>;
    let Some((ra, rb, _)) = parting_moment(c) else { return [Vec::new(), Vec::new()] };
    // Each side's live elements at its row, by (line, size), oldest first.
    let live = |(snap, l): (&memviz_core::snapshot::Snapshot, &Layout), row: Option<u32>| {
        let mut groups: Groups = HashMap::new();
        let Some(r) = row else { return groups };
        let mut sites: HashMap<u32, String> = HashMap::new();
        let mut classes = memviz_core::analysis::FrameClasses::default();
        for (i, e) in l.elements.iter().enumerate() {
            if l.is_hidden(e) || e.alloc_row.is_some_and(|x| x > r) || e.free_row.is_some_and(|f| f <= r) {
                continue;
            }
            let site = sites
                .entry(e.stack)
                .or_insert_with(|| {
                    memviz_core::analysis::compare::site_key_cached(snap, e.stack, c.python_frames_only, &mut classes)
                })
                .clone();
            groups.entry((site, e.size_bytes)).or_default().push((e.alloc_row, i));
        }
        for v in groups.values_mut() {
            v.sort_unstable();
        }
        groups
    };
    let (ga, gb) = (live(a, ra), live(b, rb));
    let extra = |mine: &Groups, other: &Groups| {
        let mut out: Vec<memviz_core::timeline::ElementIndex> = Vec::new();
        for (k, v) in mine {
            let matched = other.get(k).map_or(0, Vec::len);
            let n = v.len().saturating_sub(matched);
            out.extend(v.iter().take(n).map(|&(_, i)| memviz_core::timeline::ElementIndex::new(i as u32)));
        }
        out.sort_unstable();
        out
    };
    [extra(&ga, &gb), extra(&gb, &ga)]
}

/// A picked row's allocations on both timelines ([`picked_elements`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Picked {
    /// The row's source line.
    pub site: String,
    /// The matched moment's name.
    pub moment: String,
    /// A's elements, then B's.
    pub elements: [Vec<memviz_core::timeline::ElementIndex>; 2],
    /// Their bytes in A, in B.
    pub bytes: [u64; 2],
}

/// The allocations of a row of the Compare tab (by source line) in both files: those live just
/// after the row's matched moment whose source line is the row's, as the comparison counts them
/// (so their bytes are the row's A and B). `None` when the comparison has no such row.
pub fn picked_elements(
    c: &Comparison,
    row: PickedRow,
    a: (&memviz_core::snapshot::Snapshot, &Layout),
    b: (&memviz_core::snapshot::Snapshot, &Layout),
) -> Option<Picked> {
    let p = c.points.get(row.point)?;
    let d = if row.more_in_b { p.more_in_b.get(row.i) } else { p.more_in_a.get(row.i) }?;
    let side = |(snap, l), at| elements_of_site(snap, l, at, &d.key, c.python_frames_only);
    let (ea, ba) = side(a, p.a_row);
    let (eb, bb) = side(b, p.b_row);
    Some(Picked { site: d.site.clone(), moment: p.label.clone(), elements: [ea, eb], bytes: [ba, bb] })
}

/// The source line an element is counted under by a comparison (its [`site_key`], or
/// [`memviz_core::analysis::BEFORE_TRACE_LABEL`] for one allocated before the trace).
///
/// [`site_key`]: memviz_core::analysis::compare::site_key
pub fn element_site(
    c: &Comparison,
    snap: &memviz_core::snapshot::Snapshot,
    e: &memviz_core::timeline::Element,
) -> String {
    if e.alloc_row.is_none() && e.stack == 0 {
        memviz_core::analysis::BEFORE_TRACE_LABEL.to_string()
    } else {
        memviz_core::analysis::compare::site_key(snap, e.stack, c.python_frames_only)
    }
}

/// A file's elements live just after trace row `at` (`None`: before the first entry) that a
/// comparison counts under source line `site`, and their bytes.
pub fn elements_of_site(
    snap: &memviz_core::snapshot::Snapshot,
    l: &Layout,
    at: Option<u32>,
    site: &str,
    python_only: bool,
) -> (Vec<memviz_core::timeline::ElementIndex>, u64) {
    let mut of_stack: std::collections::HashMap<u32, bool> = std::collections::HashMap::new();
    let mut classes = memviz_core::analysis::FrameClasses::default();
    let (mut out, mut bytes) = (Vec::new(), 0u64);
    for (i, e) in l.elements.iter().enumerate() {
        // `Life::live_after`: allocated at or before the moment, not freed by it.
        let allocated = match (e.alloc_row, at) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(r), Some(m)) => r <= m,
        };
        let freed = matches!((e.free_row, at), (Some(f), Some(m)) if f <= m);
        if !allocated || freed {
            continue;
        }
        let hit = if e.alloc_row.is_none() && e.stack == 0 {
            site == memviz_core::analysis::BEFORE_TRACE_LABEL
        } else {
            *of_stack.entry(e.stack).or_insert_with(|| {
                memviz_core::analysis::compare::site_key_cached(snap, e.stack, python_only, &mut classes) == site
            })
        };
        if hit {
            out.push(memviz_core::timeline::ElementIndex::new(i as u32));
            bytes = bytes.saturating_add(e.size_bytes);
        }
    }
    (out, bytes)
}

impl ViewState {
    /// Shows the run's overview (`true`) or the focused rank's timeline.
    pub fn show_overview(&mut self, on: bool) {
        if let Some(run) = self.run.as_mut() {
            run.overview = on || run.focused.is_none();
            run.generation += 1;
        }
    }

    /// Whether the run's overview is shown in place of the timeline.
    pub fn overview_shown(&self) -> bool {
        self.run.as_ref().is_some_and(|r| r.overview)
    }

    /// Whether the Compare view is shown: asked for, with a file shown and another to compare,
    /// and no run's overview in its place.
    pub fn compare_shown(&self) -> bool {
        self.compare_view.shown && self.compare_pair().is_some() && !self.overview_shown()
    }

    /// The pair the Compare view (and the Compare tab) shows: (A, the file shown; B).
    pub fn compare_pair(&self) -> Option<(usize, usize)> {
        let a = self.current?;
        Some((a, self.analysis.compare_other(self.current, self.files.len())?))
    }

    /// The Compare view's window and cursor.
    pub fn compare_view(&self) -> &CompareView {
        &self.compare_view
    }

    /// The Compare tab's row picked for the pair shown.
    pub fn compare_picked(&self) -> Option<PickedRow> {
        let (pair, row) = self.compare_view.picked?;
        (Some(pair) == self.compare_pair()).then_some(row)
    }

    /// Picks a row of the Compare tab's tables (again: none) and shows the Compare view, where
    /// its allocations are marked in both timelines.
    pub(crate) fn pick_compare_row(&mut self, row: PickedRow) -> Vec<Effect> {
        let Some(pair) = self.compare_pair() else { return Vec::new() };
        if self.compare_picked() == Some(row) {
            self.compare_view.picked = None;
        } else {
            self.compare_view.picked = Some((pair, row));
            self.show_compare();
        }
        vec![Effect::LayoutChanged]
    }

    /// Shows files `a` and `b` (by name) in the Compare view once both are open (a page written
    /// by `memviz compare A B --html`).
    pub fn compare_when_open(&mut self, a: String, b: String) {
        self.compare_view.restore = Some((a, b));
    }

    /// Whether a pair waits to be compared once open (a link's, or two files dropped together).
    pub fn compare_waiting(&self) -> bool {
        self.compare_view.restore.is_some()
    }

    /// Forgets a pair waiting to be compared once open ([`ViewState::compare_when_open`]).
    pub fn forget_compare_when_open(&mut self) {
        self.compare_view.restore = None;
    }

    /// Once both files a link's `compare=A,B` names are open: A shown, compared with B, in the
    /// Compare view; whether it did (nothing until then, and nothing after).
    pub fn restore_compare(&mut self) -> bool {
        let Some((a, b)) = self.compare_view.restore.clone() else { return false };
        let find = |name: &str| self.files.iter().position(|f| crate::fragment::base_name(&f.name) == name);
        let (Some(ia), Some(ib)) = (find(&a), find(&b)) else { return false };
        self.compare_view.restore = None;
        if ia == ib {
            return false;
        }
        self.current = Some(ia);
        self.analysis.compare_with = Some(ib);
        self.show_compare();
        true
    }

    /// Goes back to the timeline from the Compare view (a file opened is shown as its timeline).
    pub(crate) fn leave_compare(&mut self) {
        self.compare_view.shown = false;
        self.compare_view.drag = None;
    }

    /// Shows the Compare view (of the pair [`ViewState::compare_pair`] gives).
    pub fn show_compare(&mut self) {
        self.compare_view.shown = true;
        self.show_overview(false);
    }

    /// Shows the Compare view or goes back to the timeline.
    pub(crate) fn toggle_compare(&mut self) -> Vec<Effect> {
        let on = !self.compare_view.shown && self.compare_pair().is_some();
        self.compare_view.shown = on;
        self.compare_view.drag = None;
        if on {
            // The view takes the timeline's place; the run's overview gives it back.
            self.show_overview(false);
        }
        vec![Effect::LayoutChanged]
    }

    /// An input of the Compare view, at `now_ms`.
    pub(crate) fn apply_compare(&mut self, input: CompareInput, now_ms: f64) -> Vec<Effect> {
        let v = &mut self.compare_view;
        match input {
            CompareInput::SelectB(i) => {
                if Some(i) != self.current && i < self.files.len() {
                    self.analysis.compare_with = Some(i);
                    return vec![Effect::LayoutChanged];
                }
            }
            CompareInput::Swap => {
                if let Some((a, b)) = self.compare_pair() {
                    self.current = Some(b);
                    self.analysis.compare_with = Some(a);
                    return vec![Effect::FileShown];
                }
            }
            CompareInput::Wheel { at, delta_y_px } => {
                let factor = crate::keys::wheel_zoom_factor(delta_y_px);
                let p = v.at(at);
                let (a, b) = v.window();
                v.set_window(p - (p - a) * factor, p + (b - p) * factor);
                v.cursor = Some(v.at(at));
                v.preview_until_ms = now_ms + crate::state::PREVIEW_HOLD_MS;
                return vec![Effect::HoldPreview { until_ms: v.preview_until_ms }];
            }
            CompareInput::Down { at } => v.drag = Some((at, v.window())),
            CompareInput::Move { at, on } => {
                if let Some((down, (a, b))) = v.drag {
                    let shift = -(at - down) * (b - a);
                    v.set_window(a + shift, b + shift);
                }
                v.cursor = Some(v.at(at));
                v.on = on;
            }
            CompareInput::Up => v.drag = None,
            CompareInput::Leave => {
                v.cursor = None;
                v.drag = None;
                v.on = None;
            }
            CompareInput::Reset => v.window = None,
        }
        Vec::new()
    }
}

#[cfg(test)]
#[path = "compare_view_tests.rs"]
mod tests;
