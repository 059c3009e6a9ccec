//! What the page's shell tells [`ViewState`] that only a browser knows: the canvases' measured
//! sizes, a load's progress, an error of an export, the choices kept in storage, a run's rank
//! summaries as workers finish them. Each is a method that keeps the state's rules (the fields
//! are private to this crate).

use memviz_core::analysis::categories::CategoryTimeline;

use super::{flame, panels, OpenFile, PoolHover, ViewState};
use crate::ranks::Run;
use crate::theme::ThemeState;
use crate::view::View;

impl ViewState {
    /// A page's state at the device pixel ratio `dpr`, the History hiding freed blocks where
    /// the embedding page asks it to.
    pub fn new(dpr: f64, hide_freed: bool) -> ViewState {
        let mut s = ViewState { dpr, preview_until_ms: f64::NEG_INFINITY, ..ViewState::default() };
        s.history.hide_freed = hide_freed;
        s
    }

    /// The canvases as measured (device pixel ratio, at least 0.25; plot and minimap sizes, CSS
    /// px); whether any of them changed.
    pub fn measure(&mut self, dpr: f64, plot_css: (f64, f64), minimap_css: (f64, f64)) -> bool {
        let now = (dpr.max(0.25), plot_css, minimap_css);
        let changed = (self.dpr, self.plot_css, self.minimap_css) != now;
        (self.dpr, self.plot_css, self.minimap_css) = now;
        changed
    }

    /// The choices kept in the browser's storage: the theme and the details panel's fold.
    pub fn restore_choices(&mut self, theme: ThemeState, stack_collapsed: bool) {
        self.theme = theme;
        self.stack_collapsed = stack_collapsed;
    }

    /// What a page with snapshots inside it asks for: a view, a device to show first.
    pub fn embedded(&mut self, view: Option<View>, device: Option<i64>) {
        if let Some(v) = view {
            self.view = v;
        }
        self.preferred_device = device;
    }

    /// Files were dropped or chosen: the drop target goes, and the last error with it.
    pub fn opening(&mut self) {
        self.drag_hover = false;
        self.error = None;
    }

    /// An error to show, in words.
    pub fn set_error(&mut self, message: String) {
        self.error = Some(message);
    }

    /// The file `i` was read again from `source`: `f` takes its place (and its name), with its
    /// whole window, and is shown. Whether there was such a file.
    pub fn replace_file(&mut self, i: usize, mut f: OpenFile, source: Option<String>) -> bool {
        let Some(old) = self.files.get_mut(i) else { return false };
        f.name = std::mem::take(&mut old.name);
        f.source = source;
        f.viewport = f.full_viewport();
        *old = f;
        self.current = Some(i);
        true
    }

    /// A released file that cannot be read again leaves the file menu.
    pub fn forget_released(&mut self, j: usize) {
        if j < self.released.len() {
            self.released.remove(j);
        }
    }

    /// The load has lasted long enough to be shown; whether it just became so.
    pub fn show_loading(&mut self) -> bool {
        match self.loading.as_mut().filter(|l| !l.shown) {
            Some(l) => {
                l.shown = true;
                true
            }
            None => false,
        }
    }

    /// The load's phase, in words.
    pub fn load_phase(&mut self, phase: &'static str) {
        if let Some(l) = &mut self.loading {
            l.phase = phase;
        }
    }

    /// How far the load is: the share read (0 to 1), the bytes read, the time left (ms) once
    /// there is enough to go by, its phase.
    pub fn load_progress(&mut self, fraction: f64, read_bytes: u64, left_ms: Option<f64>, phase: &'static str) {
        if let Some(l) = &mut self.loading {
            l.fraction = fraction.clamp(0.0, 1.0);
            l.read_bytes = read_bytes;
            l.left_ms = left_ms;
            l.phase = phase;
        }
    }

    /// The profiler's memory timeline `name` was read: the Categories tab shows it.
    pub fn set_profile(&mut self, name: String, timeline: CategoryTimeline) {
        self.analysis.categories.set_profile(name, timeline);
    }

    /// Highlights a group, a site or a finding's allocations (or nothing).
    pub fn set_highlight(&mut self, h: Option<panels::Highlight>) {
        self.analysis.set_highlight(h);
    }

    /// Highlights what a row named; a second click on the same row clears it.
    pub fn toggle_highlight(&mut self, h: Option<panels::Highlight>) {
        self.analysis.toggle_highlight(h);
    }

    /// Takes the highlight away, to give it to the next file shown.
    pub fn take_highlight(&mut self) -> Option<panels::Highlight> {
        let h = self.analysis.highlight.take();
        self.analysis.canvas_seq += 1;
        h
    }

    /// The flame view's focused frame highlights its allocations in the other views (`h`); a
    /// highlight of an earlier focus goes when the focus names nothing, any other stays.
    pub fn follow_flame_focus(&mut self, h: Option<panels::Highlight>) {
        let a = &mut self.analysis;
        if h.is_some() || a.highlight.as_ref().is_some_and(|o| o.key.starts_with("flame:")) {
            a.set_highlight(h);
        }
    }

    /// Opens the Compare tab on the file shown (A) against file `b`.
    pub fn open_compare(&mut self, b: usize) {
        let a = &mut self.analysis;
        a.open = true;
        a.tab = panels::Tab::Compare;
        a.compare_with = Some(b);
    }

    /// An input of the Allocator State History, with its measured rows.
    pub fn apply_history(
        &mut self,
        input: panels::HistoryInput,
        rows: Option<panels::HistoryRows>,
    ) -> Vec<super::Effect> {
        self.history.apply(input, rows)
    }

    /// An input of the flame view, with the graph it is drawn from.
    pub fn apply_flame(
        &mut self,
        input: flame::FlameInput,
        graph: Option<&memviz_core::analysis::flame::FlameGraph>,
    ) -> flame::FlameChange {
        self.flame.apply(input, graph)
    }

    /// The private pool under the pointer; whether it changed.
    pub fn set_pool_hover(&mut self, h: Option<PoolHover>) -> bool {
        let changed = self.pool_hover != h;
        self.pool_hover = h;
        changed
    }

    /// A run was opened (it replaces any other): the drop target and the last error go. The
    /// rank and overview the URL fragment named, to restore once the run is in.
    pub fn open_run(&mut self, run: Run) -> Option<(Option<u32>, bool)> {
        self.opening();
        self.run = Some(run);
        self.restore_rank.take()
    }

    /// The run `id` while it is the one open, for its ranks' summaries to be told to it.
    pub fn run_mut(&mut self, id: u64) -> Option<&mut Run> {
        self.run.as_mut().filter(|r| r.id == id)
    }

    /// The run's entry `i` is the one its overview points at (its overview stays shown).
    pub fn point_rank(&mut self, i: usize) {
        if let Some(r) = self.run.as_mut().filter(|r| i < r.ranks.len()) {
            r.focused = Some(i);
            r.generation += 1;
        }
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
