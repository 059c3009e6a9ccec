//! Applying inputs: a [`PageInput`] goes to `memviz_view`'s `ViewState::apply`, picked files and
//! resizes are taken here, and of the [`Effect`]s that come back those that need only the state
//! and what is derived go to [`memviz_view::resolve`]; the rest are carried out here (lay out
//! again, stop a load, show or close a file, read one again, download, keep a choice, refresh
//! the minimap). Then what is
//! derived is brought up to date, the URL fragment written and one frame asked for
//! ([`App::settle`]): painting only reads.

use super::tasks::exact_after;
use super::App;
use crate::input::{Input, PageInput, Source};
use crate::{input, render};
use memviz_view::derived::Derived;
use memviz_view::model::Timings;
use memviz_view::state::{Effect, PanelInput};
use wasm_bindgen::prelude::*;

impl App {
    /// Applies one input: a [`PageInput`] through [`memviz_view::state::ViewState::apply`],
    /// the rest (files, a resize) here; then carries out the effects and settles.
    pub fn handle(&mut self, input: Input) {
        let effects = match input {
            Input::Page(p) => {
                let now_ms = self.ui.now_ms();
                self.state.apply(p, now_ms)
            }
            Input::Resize => {
                if self.measure() {
                    self.refresh_minimap();
                }
                Vec::new()
            }
            Input::Open(sources) => {
                self.open_picked(sources);
                Vec::new()
            }
            Input::OpenRun(files) => {
                self.open_run(files);
                Vec::new()
            }
        };
        self.carry_out(effects);
        self.settle();
    }

    /// Finishes an input of a panel with what the page holds: the event list's measured rows,
    /// the private pools' geometry, the flame graph.
    fn panel_input(&mut self, input: PanelInput) -> Vec<Effect> {
        match input {
            PanelInput::History(h) => {
                let list_px = self.memo.views.list_px();
                let rows = self
                    .derived
                    .ensure_history(&self.state)
                    .and_then(|d| crate::views::history_rows(&self.state, d, list_px));
                self.state.apply_history(h, rows)
            }
            PanelInput::PoolPointer(p) => {
                let pools = self.derived.pools_of(&self.state).map(|p| &**p);
                let h = p.and_then(|(x, y)| memviz_view::pools::pool_at(&self.state, pools, x, y));
                if self.state.set_pool_hover(h) {
                    // The envelope's text replaces the stack text, and back.
                    self.memo.stack.invalidate();
                }
                Vec::new()
            }
            PanelInput::Flame(fi) => {
                let effect = Effect::Panel(PanelInput::Flame(fi));
                memviz_view::resolve::resolve(&mut self.state, &mut self.derived, effect).into_iter().collect()
            }
        }
    }

    /// Shows loaded file `i`.
    pub(crate) fn select_file(&mut self, i: usize) {
        let now_ms = self.ui.now_ms();
        let effects = self.state.apply(PageInput::SelectFile(i), now_ms);
        self.carry_out(effects);
    }

    /// After another file was shown: its derived data and drawings, and the timing of its
    /// first frame.
    fn file_shown(&mut self) {
        // A group's highlight follows its group into this file; any other goes with its file.
        let carried = self.state.take_highlight();
        self.after_plot_change(false);
        let h = carried.and_then(|h| self.derived.carry_highlight(&self.state, &h));
        self.state.set_highlight(h);
        self.ui.mark("memviz:open");
        self.memo.ready_pending = Some(Timings { started_ms: self.ui.now_ms(), ..Timings::default() });
    }

    /// Opens files in name order (`rank2` before `rank10`), the first of them shown; a file open
    /// already (same name, size and time) is read again into its place in the file menu and
    /// shown (never added twice).
    pub(crate) fn open(&mut self, mut sources: Vec<Source>) {
        // The last file's error goes at once, not at the next frame, so that nothing reading the
        // page sees it as the new file's.
        self.state.opening();
        self.ui.error.set_hidden(true);
        self.ui.mark("memviz:open");
        sources.sort_by_cached_key(|s| memviz_view::names::natural_key(&input::source_name(s)));
        if !self.loader_running || self.batch_first.is_none() {
            self.batch_first = Some(self.state.files().len());
        }
        self.queue.extend(sources);
        self.start_loader();
    }

    /// After the shown file was closed; with none left the page is as it was before any file.
    fn file_closed(&mut self) {
        self.prune_handles();
        // What was derived or written was keyed by file index.
        self.derived = Derived::default();
        self.memo.forget_files(&self.ui.document);
        if self.state.files().is_empty() {
            let _ = self.ui.main.class_list().remove_1("has-file");
        }
        crate::views::show_panel_or_timeline(&self.ui, &self.state, &self.memo.views);
        self.after_plot_change(false);
        self.settle_layout();
    }

    /// Carries out what an update asked for.
    pub(super) fn carry_out(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            let Some(effect) = memviz_view::resolve::resolve(&mut self.state, &mut self.derived, effect) else {
                continue;
            };
            match effect {
                Effect::HoldPreview { until_ms } => exact_after((until_ms - self.ui.now_ms()).ceil() as i32 + 1),
                Effect::RefreshMinimap => self.refresh_minimap(),
                Effect::CancelLoad => {
                    if self.state.loading().is_some() {
                        self.cancel_requested = true;
                        self.queue.clear();
                        if let Some(cancel) = self.cancel_load.take() {
                            let _ = cancel.call0(&JsValue::NULL);
                        }
                    }
                }
                Effect::Relayout => self.relayout(None, None),
                // Carried out by memviz_view::resolve above.
                Effect::GroupTimeline | Effect::Highlight(_) | Effect::StepMatch(_) | Effect::Cursor(_) => {}
                Effect::Export(memviz_view::state::panels::ExportKind::Png) => {
                    // The Compare view exports its three charts, the timeline itself.
                    let compare = self.state.compare_shown();
                    let image = if compare {
                        render::export_compare_png(&self.frame().0)
                    } else {
                        render::export_png(&self.frame().0)
                    };
                    match image {
                        Ok(image) if compare => {
                            crate::panels::export::download_compare_png(&self.ui, &self.state, &image)
                        }
                        Ok(image) => crate::panels::export::download_png(&self.ui, &self.state, &image),
                        Err(e) => {
                            let why = e.as_string().unwrap_or_default();
                            self.state.set_error(format!("Could not export the timeline: {why}"));
                        }
                    }
                }
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
                        self.state.set_error(e);
                    }
                }
                Effect::LayOut { device, detail } => self.relayout(device, detail),
                Effect::FileShown => self.file_shown(),
                Effect::FileClosed => self.file_closed(),
                Effect::ReadAgain(j) => self.reopen_file(j),
                Effect::CompareRank(i) => self.compare_rank(i),
                Effect::LayoutChanged => self.settle_layout(),
                Effect::Panel(p) => {
                    let more = self.panel_input(p);
                    self.carry_out(more);
                }
                Effect::KeepTheme => {
                    crate::chrome::store(&self.ui, crate::chrome::THEME_KEY, self.state.theme().choice.value());
                }
                Effect::ThemeChanged => {
                    // The charts and the segment map keep what they drew: they are drawn again.
                    self.memo.forget_files(&self.ui.document);
                }
                Effect::KeepStackFold => {
                    let folded = if self.state.stack_collapsed() { "1" } else { "0" };
                    crate::chrome::store(&self.ui, crate::chrome::STACK_KEY, folded);
                }
            }
        }
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
        self.await_rest_for_detail();
    }

    /// A window Detail was not chosen for waits for the input to rest
    /// ([`super::tasks::refocus_when_rested`]), once per window.
    fn await_rest_for_detail(&mut self) {
        if self.state.compare_shown() {
            // Both timelines of the Compare view follow its window ([`App::refocus_compare`]).
            let window = self.state.compare_view().window();
            let seen = self.state.compare_pair().map(|p| (p, window));
            if self.compare_refocus_seen != seen {
                self.compare_refocus_seen = seen;
                super::tasks::refocus_compare_when_rested(window);
            }
            return;
        }
        // Shown again later, the Compare view chooses Detail again (the timeline may have).
        self.compare_refocus_seen = None;
        let window = self.state.file().map(|f| (f.viewport.x0, f.viewport.x1));
        if window.is_some() && window != self.refocus_pending && self.state.wants_refocus() {
            self.refocus_pending = window;
            super::tasks::refocus_when_rested(window);
        }
    }

    /// The Compare view is gone: when it is shown again, Detail is checked again.
    pub(crate) fn compare_refocus_forget(&mut self) {
        self.compare_refocus_seen = None;
    }

    /// Chooses Detail for the Compare view's window now, in both files
    /// ([`memviz_view::state::ViewState::refocus_compare`]); whether a layout changed.
    pub(crate) fn refocus_compare(&mut self) -> bool {
        let rows = self
            .derived
            .view_comparison_of(&self.state)
            .and_then(|c| memviz_view::state::compare_view::compare_focus_rows(c, &self.state));
        let Some(rows) = rows else { return false };
        self.ui.mark_latest("memviz:refocus-start");
        if !self.state.refocus_compare(rows) {
            return false;
        }
        self.ui.mark_latest("memviz:refocus-end");
        self.ui.measure_latest("memviz:refocus", "memviz:refocus-start", "memviz:refocus-end");
        true
    }

    /// Chooses Detail for the shown window now where it is wanted
    /// ([`memviz_view::state::ViewState::refocus_detail`]); whether the layout changed.
    pub(crate) fn refocus_detail(&mut self) -> bool {
        self.refocus_pending = None;
        if !self.state.wants_refocus() {
            return false;
        }
        // The latest refocus's time, for the benchmarks: the measure `memviz:refocus`.
        self.ui.mark_latest("memviz:refocus-start");
        if !self.state.refocus_detail() {
            return false;
        }
        self.ui.mark_latest("memviz:refocus-end");
        self.ui.measure_latest("memviz:refocus", "memviz:refocus-start", "memviz:refocus-end");
        self.refresh_minimap();
        true
    }
}
