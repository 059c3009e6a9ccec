//! Applying inputs: each [`Input`] goes to the part of the state it concerns (the timeline's,
//! a panel's: plain functions of `memviz-view`), and the [`Effect`]s that come back are carried
//! out here (lay out again, stop a load, highlight, download, refresh the minimap, show a
//! window of the timeline). Then what is
//! derived is brought up to date, the URL fragment written and one frame asked for
//! ([`App::settle`]): painting only reads.

use super::tasks::exact_after;
use super::App;
use crate::input::{Input, Source};
use crate::{input, render};
use memviz_view::derived::Derived;
use memviz_view::model::Timings;
use memviz_view::state::flame::FlameChange;
use memviz_view::state::{Effect, TimelineInput};
use std::rc::Rc;
use wasm_bindgen::prelude::*;

impl App {
    /// Applies an input about a training run (its overview and the rank in focus).
    fn run_input(&mut self, input: Input) {
        match input {
            Input::OpenRun(files) => self.open_run(files),
            Input::FocusRank(i) => self.focus_rank(i),
            Input::CompareRank(i) => self.compare_rank(i),
            Input::ToggleOverview => {
                let on = !self.state.overview_shown();
                self.state.show_overview(on);
                self.settle_layout();
            }
            _ => {}
        }
    }

    /// Applies one input.
    pub fn handle(&mut self, input: Input) {
        let effects = match input {
            Input::Timeline(t) => {
                let now_ms = self.ui.now_ms();
                self.state.update(t, now_ms)
            }
            Input::Resize => {
                if self.measure() {
                    self.refresh_minimap();
                }
                Vec::new()
            }
            Input::DismissError => {
                self.state.error = None;
                Vec::new()
            }
            Input::CancelLoad => vec![Effect::CancelLoad],
            Input::Open(sources) => {
                self.open_picked(sources);
                Vec::new()
            }
            Input::CloseFile => {
                if let Some(i) = self.state.current {
                    self.close_file(i);
                }
                Vec::new()
            }
            Input::DragHover(on) => {
                self.state.drag_hover = on;
                Vec::new()
            }
            Input::SelectFile(i) => {
                self.select_file(i);
                Vec::new()
            }
            Input::ReopenFile(j) => {
                self.reopen_file(j);
                Vec::new()
            }
            Input::OpenRun(_) | Input::FocusRank(_) | Input::CompareRank(_) | Input::ToggleOverview => {
                self.run_input(input);
                Vec::new()
            }
            Input::SelectDevice(d) => {
                if self.file().is_some_and(|f| f.plot.device_pos != d && d < f.snap.devices.len()) {
                    self.relayout(Some(d), None);
                }
                Vec::new()
            }
            Input::SelectView(v) => {
                let now_ms = self.ui.now_ms();
                self.state.update(TimelineInput::SelectView(v), now_ms)
            }
            Input::PreviewDetail(n) => {
                self.state.detail_preview = Some(n);
                Vec::new()
            }
            Input::SetDetail(n) => {
                self.state.detail_preview = None;
                if self.file().is_some_and(|f| f.max_entries != n) {
                    self.relayout(None, Some(n));
                }
                Vec::new()
            }
            Input::Cursor(entry) => {
                let now_ms = self.ui.now_ms();
                self.state.update(TimelineInput::Cursor(entry), now_ms)
            }
            Input::History(_) | Input::Analysis(_) | Input::Search(_) | Input::PoolPointer(_) | Input::Flame(_) => {
                self.panel_input(input)
            }
            Input::CycleTheme | Input::SystemTheme(_) | Input::ToggleStack => {
                self.chrome_input(&input);
                Vec::new()
            }
        };
        self.carry_out(effects);
        self.settle();
    }

    /// Applies an input of the page's chrome: the theme (kept, and everything painted again in
    /// its colours) and the details panel's fold.
    fn chrome_input(&mut self, input: &Input) {
        let before = self.state.theme.theme();
        match input {
            Input::CycleTheme => {
                self.state.theme.choice = self.state.theme.choice.next();
                crate::chrome::store(&self.ui, crate::chrome::THEME_KEY, self.state.theme.choice.value());
            }
            Input::SystemTheme(dark) => self.state.theme.system_dark = *dark,
            Input::ToggleStack => {
                self.state.stack_collapsed = !self.state.stack_collapsed;
                crate::chrome::store(
                    &self.ui,
                    crate::chrome::STACK_KEY,
                    if self.state.stack_collapsed { "1" } else { "0" },
                );
                // The plot takes the panel's room or gives it back: the resize observer measures it.
            }
            _ => {}
        }
        if self.state.theme.theme() != before {
            // The charts and the segment map keep what they drew: they are drawn again.
            self.memo.forget_files(&self.ui.document);
        }
    }

    /// Applies an input of one of the panels (the history, the analysis panel, the search boxes,
    /// the private pools' envelopes).
    fn panel_input(&mut self, input: Input) -> Vec<Effect> {
        match input {
            Input::History(h) => {
                let list_px = self.memo.views.list_px();
                let rows = self
                    .derived
                    .ensure_history(&self.state)
                    .and_then(|d| crate::views::history_rows(&self.state, d, list_px));
                self.state.history.apply(h, rows)
            }
            Input::Analysis(a) => {
                let rect = self.state.plot_rect();
                let file = self.state.current.and_then(|i| self.state.files.get(i));
                self.state.analysis.apply(a, file, &rect)
            }
            Input::Search(boxes) => {
                if boxes != self.state.search_boxes {
                    self.state.search = boxes.query();
                    self.state.search_boxes = boxes;
                    self.state.search_cursor = None;
                }
                Vec::new()
            }
            Input::PoolPointer(p) => {
                let pools = self.derived.pools_of(&self.state).map(|p| &**p);
                let h = p.and_then(|(x, y)| crate::pools::pool_at(&self.state, pools, x, y));
                if self.state.pool_hover != h {
                    self.state.pool_hover = h;
                    // The envelope's text replaces the stack text, and back.
                    self.memo.stack.invalidate();
                }
                Vec::new()
            }
            Input::Flame(fi) => {
                self.derived.ensure_flame(&self.state);
                let graph = self.derived.flame_of(&self.state).map(|f| &f.graph);
                if self.state.flame.apply(fi, graph) == FlameChange::Focus {
                    // The focused frame's allocations are highlighted in the other views.
                    let h = self.derived.flame_highlight(&self.state);
                    let a = &mut self.state.analysis;
                    if h.is_some() || a.highlight.as_ref().is_some_and(|o| o.key.starts_with("flame:")) {
                        a.highlight = h;
                        a.canvas_seq += 1;
                    }
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Shows loaded file `i`.
    pub(crate) fn select_file(&mut self, i: usize) {
        if i < self.state.files.len() && self.state.current != Some(i) {
            self.state.current = Some(i);
            self.after_plot_change(false);
            self.ui.mark("memviz:open");
            self.memo.ready_pending = Some(Timings { started_ms: self.ui.now_ms(), ..Timings::default() });
        }
    }

    /// Opens files in name order (`rank2` before `rank10`), the first of them shown; a file open
    /// already (same name, size and time) is read again into its place in the file menu and
    /// shown (never added twice).
    pub(crate) fn open(&mut self, mut sources: Vec<Source>) {
        self.state.drag_hover = false;
        // The last file's error goes at once, not at the next frame, so that nothing reading the
        // page sees it as the new file's.
        self.state.error = None;
        self.ui.error.set_hidden(true);
        self.ui.mark("memviz:open");
        sources.sort_by_cached_key(|s| input::natural_key(&input::source_name(s)));
        if !self.loader_running || self.batch_first.is_none() {
            self.batch_first = Some(self.state.files.len());
        }
        self.queue.extend(sources);
        self.start_loader();
    }

    /// Closes file `i`; with none left the page is as it was before any file.
    fn close_file(&mut self, i: usize) {
        if !self.state.close_file(i) {
            return;
        }
        self.prune_handles();
        // What was derived or written was keyed by file index.
        self.derived = Derived::default();
        self.memo.forget_files(&self.ui.document);
        if self.state.files.is_empty() {
            let _ = self.ui.main.class_list().remove_1("has-file");
        }
        crate::views::show_panel_or_timeline(&self.ui, &self.state, &self.memo.views);
        self.after_plot_change(false);
        self.settle_layout();
    }

    /// Carries out what an update asked for.
    fn carry_out(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::HoldPreview { until_ms } => exact_after((until_ms - self.ui.now_ms()).ceil() as i32 + 1),
                Effect::RefreshMinimap => self.refresh_minimap(),
                Effect::ClickedPlot { x_px } => {
                    // With the live set shown, a click moves its moment there.
                    let a = &self.state.analysis;
                    if a.open && a.tab == memviz_view::state::panels::Tab::Live {
                        self.handle(Input::Analysis(memviz_view::state::panels::Action::LiveAtPx(x_px)));
                    }
                }
                Effect::CancelLoad => {
                    if self.state.loading.is_some() {
                        self.cancel_requested = true;
                        self.queue.clear();
                        if let Some(cancel) = self.cancel_load.take() {
                            let _ = cancel.call0(&JsValue::NULL);
                        }
                    }
                }
                Effect::Relayout => self.relayout(None, None),
                Effect::Highlight(action) => {
                    let h = self.derived.highlight_of(&self.state, action);
                    self.state.analysis.toggle_highlight(h);
                }
                Effect::StepMatch(by) => self.step_match(by),
                Effect::ShowWindow { x0, x1, y_max_bytes } => {
                    if let Some(f) = self.state.file_mut() {
                        f.viewport.set_window(x0, x1);
                        f.viewport.fit_y(y_max_bytes);
                    }
                }
                Effect::Export(memviz_view::state::panels::ExportKind::Png) => {
                    match render::export_png(&self.frame().0) {
                        Ok(image) => crate::panels::export::download_png(&self.ui, &self.state, &image),
                        Err(e) => {
                            let why = e.as_string().unwrap_or_default();
                            self.state.error = Some(format!("Could not export the timeline: {why}"));
                        }
                    }
                }
                Effect::Cursor(entry) => self.state.toggle_cursor(entry),
                Effect::FocusRank(i) => self.focus_rank(i),
                Effect::ViewShown { relayout } => {
                    // Scroll the selected row into view once the list is laid out.
                    self.memo.views.forget_rows();
                    // The timeline's canvases were hidden (0 px) while a panel was shown.
                    crate::views::show_panel_or_timeline(&self.ui, &self.state, &self.memo.views);
                    self.on_resize();
                    if relayout {
                        self.relayout(None, None);
                    }
                }
                Effect::Export(kind) => {
                    if let Some(e) = crate::panels::export(&self.ui, &self.state, &self.derived, kind) {
                        self.state.error = Some(e);
                    }
                }
            }
        }
    }

    /// Pins the search match `by` matches after the current one and brings it into view.
    fn step_match(&mut self, by: i32) {
        let Some(m) = self.derived.matches_of(&self.state) else { return };
        let elements = Rc::clone(&m.elements);
        self.state.step_match(&elements, by);
    }

    /// After the state changed: computes what is derived and missing, writes the URL fragment
    /// and asks for a frame.
    pub(crate) fn settle(&mut self) {
        self.settle_writing(crate::url::sync);
    }

    /// As [`App::settle`], for a file just shown: its fragment is written after this task, so
    /// its first frame does not wait for it.
    pub(crate) fn settle_shown(&mut self) {
        self.settle_writing(crate::url::sync_after_task);
    }

    fn settle_writing(&mut self, write_fragment: fn(&memviz_view::state::ViewState)) {
        self.derived.refresh(&self.state);
        write_fragment(&self.state);
        self.request_redraw();
    }
}
