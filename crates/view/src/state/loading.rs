//! A load's life in the state: [`ViewState::begin_load`] (the last error and note go; the card
//! waits a moment before it shows, so a quick load flashes nothing), then
//! [`ViewState::load_failed`] (the error, and no progress), [`ViewState::load_stopped`] (a note
//! that says so) or [`ViewState::load_ended`]. The page reads the bytes; this says what shows,
//! and where a file read joins the others ([`ViewState::add_loaded`]).

use memviz_core::plot::PlotData;
use memviz_core::snapshot::Snapshot;

use super::{Loading, OpenFile, ViewState};
use crate::protocol::Phase;

/// Where a file read joined the page ([`ViewState::add_loaded`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// It was open already (same source): read again into its place `i`, under its name, and
    /// shown; what was derived from its old model must go.
    ReadAgain(usize),
    /// Added to the file menu and shown.
    Shown,
    /// Added to the file menu behind the first file of its batch; the view stays.
    Behind,
}

impl ViewState {
    /// A load of `name` (`total_bytes` long) starts: no error or note from before, the progress
    /// at nothing and not shown yet.
    pub fn begin_load(&mut self, name: &str, total_bytes: u64) {
        self.error = None;
        self.status_note = None;
        self.loading = Some(Loading {
            name: name.to_string(),
            fraction: 0.0,
            phase: Phase::Reading.label(),
            read_bytes: 0,
            total_bytes,
            left_ms: None,
            shown: false,
        });
    }

    /// The load failed with `message`: shown as the error, the progress gone.
    pub fn load_failed(&mut self, message: String) {
        self.error = Some(message);
        self.loading = None;
    }

    /// The user stopped the load of `name`: the progress gone, a note in its place.
    pub fn load_stopped(&mut self, name: &str) {
        self.loading = None;
        self.status_note = Some(format!("Stopped loading {name}."));
    }

    /// A file was read and shown: no progress, and no error of an earlier file of its batch.
    pub fn file_opened(&mut self) {
        self.loading = None;
        self.error = None;
    }

    /// A file read from `source`: a file open from the same source is replaced by it; else it
    /// is added under a name no open file has, and shown unless an earlier file of its batch
    /// (the batch began with `batch_first` files open) was. Its whole trace is in view.
    pub fn add_loaded(
        &mut self,
        name: String,
        snap: Snapshot,
        plot: PlotData,
        source: Option<String>,
        batch_first: Option<usize>,
    ) -> Added {
        let mut f = OpenFile::new(name, snap, plot);
        if let Some(i) = source.as_deref().and_then(|k| self.file_from(k)) {
            if self.replace_file(i, f, source) {
                // A file shown is its timeline, also where two were compared.
                self.leave_compare();
                return Added::ReadAgain(i);
            }
            return Added::Behind;
        }
        let show = batch_first.is_none_or(|b| self.files.len() <= b);
        f.name = crate::names::name_beside(self.files.iter().map(|g| g.name.as_str()), &f.name);
        self.push_file(f, source, show);
        if show {
            self.leave_compare();
            Added::Shown
        } else {
            Added::Behind
        }
    }

    /// The load (or the batch of loads) ended: no progress.
    pub fn load_ended(&mut self) {
        self.loading = None;
    }
}

#[cfg(test)]
#[path = "loading_tests.rs"]
mod tests;
