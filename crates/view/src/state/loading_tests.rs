//! A load's life in the state, and where a file read joins the others.

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
