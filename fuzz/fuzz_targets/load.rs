//! Any bytes: `load` (and the chunked `Loader`) must return, never panic, and whatever loads must
//! survive `stats`, `trace` and `info`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let whole = memviz_core::load(data);
    if let Err(e) = &whole {
        // Errors are one line a user can read, whatever the file holds.
        let m = e.to_string();
        assert!(!m.is_empty() && !m.contains('\n') && m.len() < 2000, "{m:?}");
    }
    if let Ok(snap) = &whole {
        let _ = memviz_core::reference::stats(snap);
        let _ = memviz_core::reference::trace(snap);
        let _ = memviz_core::info::info(snap);
        let _ = snap.default_device();
    }
    // The same bytes in uneven chunks: the same outcome.
    let chunk = 1 + data.first().map_or(0, |&b| usize::from(b) % 61);
    let mut loader = memviz_core::Loader::new(None);
    let streamed = data.chunks(chunk).try_for_each(|c| loader.feed(c)).and_then(|()| loader.finish());
    assert_eq!(whole.is_ok(), streamed.is_ok(), "whole: {:?}, streamed: {:?}", whole.err(), streamed.err());
});
