//! A load's life in the state: [`ViewState::begin_load`] (the last error and note go; the card
//! waits a moment before it shows, so a quick load flashes nothing), then
//! [`ViewState::load_failed`] (the error, and no progress), [`ViewState::load_stopped`] (a note
//! that says so) or [`ViewState::load_ended`]. The page reads the bytes; this says what shows,
//! and where a file read joins the others ([`ViewState::add_loaded`]).

use memviz_core::plot::PlotData;
use memviz_core::snapshot::Snapshot;
use memviz_core::timeline::DEFAULT_MAX_ENTRIES;

use super::{Loading, OpenFile, ViewState};
use crate::protocol::Phase;
use crate::viewport::Viewport;
use crate::xmap::XAxis;

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
        let mut f = OpenFile {
            name,
            snap,
            plot,
            max_entries: DEFAULT_MAX_ENTRIES,
            x_axis: XAxis::Steps,
            viewport: Viewport::new(1.0, 1.0, 1.0),
            source: None,
            other_windows: Vec::new(),
        };
        if let Some(i) = source.as_deref().and_then(|k| self.file_from(k)) {
            if self.replace_file(i, f, source) {
                return Added::ReadAgain(i);
            }
            return Added::Behind;
        }
        let show = batch_first.is_none_or(|b| self.files.len() <= b);
        f.name = crate::names::name_beside(self.files.iter().map(|g| g.name.as_str()), &f.name);
        f.viewport = f.full_viewport();
        self.push_file(f, source, show);
        if show {
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
mod tests {
    use super::*;

    static REUSE: &[u8] = include_bytes!("../../../../tests/data/synth/segment_reuse.pickle");

    fn read(s: &mut ViewState, name: &str, source: &str, batch_first: Option<usize>) -> Added {
        let f = crate::test_state::open_file(REUSE, name, 100);
        s.add_loaded(name.into(), f.snap, f.plot, Some(source.into()), batch_first)
    }

    #[test]
    fn a_batch_shows_its_first_file_names_stay_apart_and_a_file_read_again_keeps_its_place() {
        let mut s = ViewState::default();
        assert_eq!(read(&mut s, "a.pickle", "a|1", Some(0)), Added::Shown);
        assert_eq!(read(&mut s, "a.pickle", "b|1", Some(0)), Added::Behind, "behind the batch's first");
        assert_eq!(s.current, Some(0));
        let names: Vec<&str> = s.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a.pickle", "a.pickle (2)"], "one name for two files would be ambiguous");
        assert_eq!(read(&mut s, "c.pickle", "c|1", None), Added::Shown, "a file of its own is shown");
        assert_eq!(s.current, Some(2));
        assert_eq!(read(&mut s, "renamed.pickle", "b|1", None), Added::ReadAgain(1));
        assert_eq!((s.files.len(), s.current), (3, Some(1)));
        assert_eq!(s.files[1].name, "a.pickle (2)", "read again under the name it had");
        let f = &s.files[1];
        assert_eq!((f.viewport.x0, f.viewport.x1), (0.0, f.viewport.full_x1), "the whole trace in view");
    }

    #[test]
    fn a_load_clears_the_last_error_and_ends_in_an_error_a_note_or_nothing() {
        let mut s = ViewState::default();
        s.load_failed("bad.pickle: not a snapshot".into());
        assert_eq!(s.error.as_deref(), Some("bad.pickle: not a snapshot"));
        s.begin_load("big.pickle", 1 << 30);
        assert!(s.error.is_none() && s.status_note.is_none());
        let l = s.loading.as_ref().expect("loading");
        assert_eq!((l.name.as_str(), l.total_bytes, l.fraction, l.shown), ("big.pickle", 1 << 30, 0.0, false));
        assert_eq!(l.phase, Phase::Reading.label());
        s.load_stopped("big.pickle");
        assert!(s.loading.is_none());
        assert_eq!(s.status_note.as_deref(), Some("Stopped loading big.pickle."));
        s.begin_load("next.pickle", 10);
        assert!(s.status_note.is_none(), "a new load says nothing of the one stopped");
        s.load_ended();
        assert!(s.loading.is_none() && s.error.is_none());
        s.load_failed("first.pickle: truncated".into());
        s.load_ended();
        assert!(s.error.is_some(), "the end of a batch keeps the error of a file in it");
        s.begin_load("second.pickle", 10);
        s.file_opened();
        assert!(s.loading.is_none() && s.error.is_none());
    }
}
