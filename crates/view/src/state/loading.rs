//! A load's life in the state: [`ViewState::begin_load`] (the last error and note go; the card
//! waits a moment before it shows, so a quick load flashes nothing), then
//! [`ViewState::load_failed`] (the error, and no progress), [`ViewState::load_stopped`] (a note
//! that says so) or [`ViewState::load_ended`]. The page reads the bytes; this says what shows.

use super::{Loading, ViewState};
use crate::protocol::Phase;

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

    /// The load (or the batch of loads) ended: no progress.
    pub fn load_ended(&mut self) {
        self.loading = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
