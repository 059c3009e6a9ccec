//! What the page shows around a load: the card in the middle of the plot area with the file,
//! its progress and Cancel (over the drop zone before any file is open), and on the landing page
//! the note that names the file a reloaded address waits for; the keyboard help.

use super::{loading_text, set_text, Frame};

/// Brings the load card and the restore note in line with the state.
pub(crate) fn sync_landing(fr: &Frame<'_>) {
    let doc = &fr.ui.document;
    let by_id = |id: &str| {
        doc.get_element_by_id(id).and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(e).ok())
    };
    if let Some(card) = by_id("load-card") {
        // A relayout (no bytes to read) is one frame: only reading a file gets the card.
        let reading = fr.state.loading_shown().filter(|l| l.total_bytes > 0);
        card.set_hidden(reading.is_none());
        if let Some(empty) = doc.get_element_by_id("empty") {
            let _ = empty.class_list().toggle_with_force("loading", reading.is_some());
        }
        if let Some(l) = reading {
            if let Some(t) = by_id("load-card-text") {
                set_text(&t, &loading_text(l));
            }
            if let Some(p) = doc.get_element_by_id("load-card-progress") {
                if let Ok(p) = wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlProgressElement>(p) {
                    p.set_value(l.fraction);
                }
            }
        }
    }
    if let Some(help) = by_id("help") {
        if help.hidden() == fr.state.help_open() {
            help.set_hidden(!fr.state.help_open());
        }
    }
    if let Some(note) = by_id("restore-note") {
        let text = match (&fr.state.restore_file(), fr.file()) {
            _ if fr.state.run().is_none() && fr.state.restore_rank().is_some() => {
                let what = match fr.state.restore_rank().and_then(|r| r.0) {
                    Some(rank) => format!("rank {rank} of a run"),
                    None => "a run's rank overview".to_string(),
                };
                format!(
                    "This address kept {what}. The page cannot read files without you: open the run's folder or \
                     files again to get back to it."
                )
            }
            (Some(name), None) => {
                format!("Open {name} again to get back to the view this address keeps (zoom, pin, event, search).")
            }
            _ => String::new(),
        };
        note.set_hidden(text.is_empty());
        set_text(&note, &text);
    }
}
