//! One way in: every input of the page that is a plain value ([`PageInput`]) is applied by
//! [`ViewState::apply`], which changes the state and returns what the page must do
//! ([`Effect`]s): lay out again, show or forget a file's drawings, read a file again, keep a
//! choice in storage. The page turns DOM events into these values and carries out the effects;
//! only the inputs that hold browser objects (picked files) or need a measurement (a resize)
//! stay with it.

use super::flame::FlameInput;
use super::panels::{Action, HistoryInput, SearchBoxes};
use super::{Effect, TimelineInput, ViewState};
use crate::view::View;

/// One user action that is a plain value.
#[derive(Clone, Debug, PartialEq)]
pub enum PageInput {
    /// The pointer, the wheel, a key or the x axis on the timeline ([`ViewState::update`]).
    Timeline(TimelineInput),
    /// Something asked of the analysis panel.
    Analysis(Action),
    /// Open the timeline of a run's entry.
    FocusRank(usize),
    /// Show the run's overview, or go back to the focused rank's timeline.
    ToggleOverview,
    /// Open a run's entry and its iteration's median rank, and compare them.
    CompareRank(usize),
    /// Close the file shown.
    CloseFile,
    /// Stop the load in progress (and drop the files queued after it).
    CancelLoad,
    /// Close the error box.
    DismissError,
    /// Something is being dragged over the page (true) or left it (false).
    DragHover(bool),
    /// Show another loaded file.
    SelectFile(usize),
    /// Read again a file whose model was let go (index into [`ViewState::released`]).
    ReopenFile(usize),
    /// Show another device (index into the snapshot's devices).
    SelectDevice(usize),
    /// Show another view.
    SelectView(View),
    /// The Detail slider moves (label only).
    PreviewDetail(usize),
    /// The Detail slider was released.
    SetDetail(usize),
    /// Something in the Allocator State History.
    History(HistoryInput),
    /// The search boxes hold new text.
    Search(SearchBoxes),
    /// The pointer moved over the plot (CSS px) or left it, for the private pools' envelopes.
    PoolPointer(Option<(f64, f64)>),
    /// A cited trace entry's link outside the analysis panel: the cursor there, on the timeline.
    Cursor(u32),
    /// Something in the flame view.
    Flame(FlameInput),
    /// The theme control was clicked: the next choice (auto, light, dark).
    CycleTheme,
    /// The system's theme changed (`prefers-color-scheme: dark` holds now, or not).
    SystemTheme(bool),
    /// Fold or unfold the details panel.
    ToggleStack,
    /// The path fragments typed as "not my code" (for the user's line).
    Library(String),
    /// Show the Compare view, or go back to the timeline.
    ToggleCompare,
    /// Something in the Compare view.
    Compare(super::compare_view::CompareInput),
}

/// An input the page finishes with what it has (the event list's measured rows, the pools'
/// geometry, the flame graph): [`Effect::Panel`].
#[derive(Clone, Debug, PartialEq)]
pub enum PanelInput {
    /// Something in the Allocator State History.
    History(HistoryInput),
    /// The pointer over the private pools' envelopes.
    PoolPointer(Option<(f64, f64)>),
    /// Something in the flame view.
    Flame(FlameInput),
}

impl ViewState {
    /// An action of the analysis panel, on the file shown.
    pub(crate) fn apply_analysis(&mut self, a: super::panels::Action) -> Vec<Effect> {
        if let super::panels::Action::CompareRow { point, more_in_b, i } = a {
            return self.pick_compare_row(super::compare_view::PickedRow { point, more_in_b, i });
        }
        let rect = self.plot_rect();
        let file = self.current.and_then(|i| self.files.get_mut(i));
        self.analysis.apply(a, file, &rect)
    }

    /// Applies one input at `now_ms` (the page's clock) and says what the page must do.
    #[allow(clippy::too_many_lines)] // one short arm per input: the page's one way in
    pub fn apply(&mut self, input: PageInput, now_ms: f64) -> Vec<Effect> {
        match input {
            PageInput::Timeline(t) => self.update(t, now_ms),
            PageInput::SelectView(v) => self.update(TimelineInput::SelectView(v), now_ms),
            PageInput::Cursor(entry) => self.update(TimelineInput::Cursor(entry), now_ms),
            PageInput::Analysis(a) => self.apply_analysis(a),
            PageInput::DismissError => {
                self.error = None;
                Vec::new()
            }
            PageInput::CancelLoad => vec![Effect::CancelLoad],
            PageInput::DragHover(on) => {
                self.drag_hover = on;
                Vec::new()
            }
            PageInput::CloseFile => {
                let closed = self.current.is_some_and(|i| self.close_file(i));
                if closed {
                    vec![Effect::FileClosed]
                } else {
                    Vec::new()
                }
            }
            PageInput::SelectFile(i) => {
                if i < self.files.len() && self.current != Some(i) {
                    self.current = Some(i);
                    vec![Effect::FileShown]
                } else {
                    Vec::new()
                }
            }
            PageInput::ReopenFile(j) if j < self.released.len() => vec![Effect::ReadAgain(j)],
            PageInput::ReopenFile(_) => Vec::new(),
            PageInput::FocusRank(i) => vec![Effect::FocusRank(i)],
            PageInput::CompareRank(i) => vec![Effect::CompareRank(i)],
            PageInput::ToggleOverview => {
                let on = !self.overview_shown();
                self.show_overview(on);
                self.compare_view = super::compare_view::CompareView::default();
                vec![Effect::LayoutChanged]
            }
            PageInput::ToggleCompare => self.toggle_compare(),
            PageInput::Compare(c) => self.apply_compare(c, now_ms),
            PageInput::SelectDevice(d) => {
                let other = self.file().is_some_and(|f| f.plot.device_pos != d && d < f.snap.devices.len());
                if other {
                    vec![Effect::LayOut { device: Some(d), detail: None }]
                } else {
                    Vec::new()
                }
            }
            PageInput::PreviewDetail(n) => {
                self.detail_preview = Some(n);
                Vec::new()
            }
            PageInput::SetDetail(n) => {
                self.detail_preview = None;
                if self.file().is_some_and(|f| f.max_entries != n) {
                    vec![Effect::LayOut { device: None, detail: Some(n) }]
                } else {
                    Vec::new()
                }
            }
            PageInput::Search(boxes) => {
                if boxes != self.search_boxes {
                    self.search = boxes.query();
                    self.search_boxes = boxes;
                    self.search_cursor = None;
                }
                Vec::new()
            }
            PageInput::History(h) => vec![Effect::Panel(PanelInput::History(h))],
            PageInput::PoolPointer(p) => vec![Effect::Panel(PanelInput::PoolPointer(p))],
            PageInput::Flame(f) => vec![Effect::Panel(PanelInput::Flame(f))],
            PageInput::CycleTheme => {
                let before = self.theme.theme();
                self.theme.choice = self.theme.choice.next();
                let mut out = vec![Effect::KeepTheme];
                if self.theme.theme() != before {
                    out.push(Effect::ThemeChanged);
                }
                out
            }
            PageInput::SystemTheme(dark) => {
                let before = self.theme.theme();
                self.theme.system_dark = dark;
                if self.theme.theme() == before {
                    Vec::new()
                } else {
                    vec![Effect::ThemeChanged]
                }
            }
            PageInput::Library(typed) => {
                self.analysis.set_library(&typed);
                Vec::new()
            }
            PageInput::ToggleStack => {
                self.stack_collapsed = !self.stack_collapsed;
                // The plot takes the panel's room or gives it back: the resize observer measures it.
                vec![Effect::KeepStackFold]
            }
        }
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
