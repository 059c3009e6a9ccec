//! What the page reads of [`ViewState`]: its fields are private to this crate, so that every
//! change goes through a method or an input that keeps the state's rules; these give them out
//! by value or by shared reference.

use memviz_core::search::Query;

use super::{flame, matches, panels, Drag, Loading, OpenFile, PoolHover, ReleasedFile, Surface, Target, ViewState};
use crate::view::View;

impl ViewState {
    /// The open files.
    pub fn files(&self) -> &[OpenFile] {
        &self.files
    }

    /// Files let go to keep at most two, still listed (oldest first).
    pub fn released(&self) -> &[ReleasedFile] {
        &self.released
    }

    /// Index of the file shown in [`ViewState::files`].
    pub fn current(&self) -> Option<usize> {
        self.current
    }

    /// The view shown.
    pub fn view(&self) -> View {
        self.view
    }

    /// What the pointer is over.
    pub fn hover(&self) -> Option<Target> {
        self.hover
    }

    /// A drag in progress.
    pub fn drag(&self) -> Option<Drag> {
        self.drag
    }

    /// The last pointer position (canvas, CSS px).
    pub fn last_pointer(&self) -> Option<(Surface, f64, f64)> {
        self.last_pointer
    }

    /// The plot canvas's size, CSS px.
    pub fn plot_css(&self) -> (f64, f64) {
        self.plot_css
    }

    /// The minimap canvas's size, CSS px.
    pub fn minimap_css(&self) -> (f64, f64) {
        self.minimap_css
    }

    /// The device pixel ratio the canvases are drawn at.
    pub fn dpr(&self) -> f64 {
        self.dpr
    }

    /// Until when (ms) the timeline is drawn from held copies.
    pub fn preview_until_ms(&self) -> f64 {
        self.preview_until_ms
    }

    /// The load in progress.
    pub fn loading(&self) -> Option<&Loading> {
        self.loading.as_ref()
    }

    /// The last error, in words.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The status line's note (such as a stopped load).
    pub fn status_note(&self) -> Option<&str> {
        self.status_note.as_deref()
    }

    /// Whether files are being dragged over the page.
    pub fn drag_hover(&self) -> bool {
        self.drag_hover
    }

    /// The Detail slider's value while it is dragged.
    pub fn detail_preview(&self) -> Option<usize> {
        self.detail_preview
    }

    /// The device to show first when a file has it.
    pub fn preferred_device(&self) -> Option<i64> {
        self.preferred_device
    }

    /// The layouts' counter: anything computed from a layout is keyed by it.
    pub fn generation(&self) -> usize {
        self.generation
    }

    /// The analysis panel.
    pub fn analysis(&self) -> &panels::AnalysisState {
        &self.analysis
    }

    /// The Allocator State History.
    pub fn history(&self) -> &panels::HistoryState {
        &self.history
    }

    /// The search boxes' text.
    pub fn search_boxes(&self) -> &panels::SearchBoxes {
        &self.search_boxes
    }

    /// The search boxes' query.
    pub fn search(&self) -> &Query {
        &self.search
    }

    /// Which match was stepped to last (`n` / `N`).
    pub fn search_cursor(&self) -> Option<matches::MatchIndex> {
        self.search_cursor
    }

    /// The file the URL fragment names, until it is opened.
    pub fn restore_file(&self) -> Option<&str> {
        self.restore_file.as_deref()
    }

    /// Whether the keyboard help is shown.
    pub fn help_open(&self) -> bool {
        self.help_open
    }

    /// The private pool under the pointer.
    pub fn pool_hover(&self) -> Option<PoolHover> {
        self.pool_hover
    }

    /// Whether the stack panel lists C++ frames.
    pub fn native_frames_open(&self) -> bool {
        self.native_frames_open
    }

    /// The trace entry the cursor is on.
    pub fn cursor_entry(&self) -> Option<u32> {
        self.cursor_entry
    }

    /// The training run opened, if one was.
    pub fn run(&self) -> Option<&crate::ranks::Run> {
        self.run.as_ref()
    }

    /// The run the URL fragment names, until a run is opened.
    pub fn restore_rank(&self) -> Option<(Option<u32>, bool)> {
        self.restore_rank
    }

    /// The flame view.
    pub fn flame(&self) -> &flame::FlameState {
        &self.flame
    }

    /// The theme: the user's choice and the system's preference.
    pub fn theme(&self) -> &crate::theme::ThemeState {
        &self.theme
    }

    /// Whether the stack panel is folded to its header line.
    pub fn stack_collapsed(&self) -> bool {
        self.stack_collapsed
    }
}
