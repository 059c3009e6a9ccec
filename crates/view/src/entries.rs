//! The one numbering of a trace: its entries, indexed from 0 as PyTorch's History lists them.
//! Texts cite them ("peak at entry 2302", "entries 0..1996"); [`entry_refs`] finds those
//! citations so the page can make each one a link that puts a cursor on the timeline, and
//! [`cursor_label`] is what that cursor says: the entry and the step the x axis puts it at.

/// A citation of a trace entry inside a text: byte range of the words and the entry cited (the
/// first of a range "entries A..B").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryRef {
    /// Byte offset of "entry" / "entries".
    pub start: usize,
    /// Byte offset just after the last digit.
    pub end: usize,
    /// The entry cited.
    pub entry: u32,
}

/// Every "entry N" and "entries A..B" of `text`, in order. Words must stand alone ("sentry 3"
/// is not one) and be followed by a space and a number.
pub fn entry_refs(text: &str) -> Vec<EntryRef> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let Some(found) = text.get(i..).and_then(|t| t.find("entr")) else { break };
        let start = i + found;
        i = start + 4;
        if start > 0 && bytes.get(start - 1).is_some_and(u8::is_ascii_alphanumeric) {
            continue;
        }
        let word_len = if text[start..].starts_with("entry ") {
            6
        } else if text[start..].starts_with("entries ") {
            8
        } else {
            continue;
        };
        let digits_at = start + word_len;
        let digits = bytes[digits_at..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            continue;
        }
        let Ok(entry) = text[digits_at..digits_at + digits].parse::<u32>() else { continue };
        let mut end = digits_at + digits;
        // A range: "A..B".
        if word_len == 8 && text[end..].starts_with("..") {
            let more = bytes[end + 2..].iter().take_while(|b| b.is_ascii_digit()).count();
            if more > 0 {
                end += 2 + more;
            }
        }
        out.push(EntryRef { start, end, entry });
        i = end;
    }
    out
}

/// What the cursor at trace entry `entry` says: the entry, and where the x axis puts it.
pub fn cursor_label(entry: u32, step: u32) -> String {
    format!("entry {entry} · step {step}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cited(text: &str) -> Vec<(&str, u32)> {
        entry_refs(text).into_iter().map(|r| (&text[r.start..r.end], r.entry)).collect()
    }

    #[test]
    fn citations_are_found_with_their_entry() {
        assert_eq!(
            cited("peak of iteration 2: 1.2 GiB at entry 2302, of which 3 are these"),
            vec![("entry 2302", 2302)]
        );
        assert_eq!(
            cited("made in iteration 1 (entries 0..1996) are still live; OOM at entry 7"),
            vec![("entries 0..1996", 0), ("entry 7", 7)]
        );
        assert_eq!(cited("entry 0"), vec![("entry 0", 0)]);
    }

    #[test]
    fn other_words_and_numbers_are_not_citations() {
        assert!(cited("sentry 3, entry point, entries: 4, 5 entries, entry").is_empty());
        assert!(cited("entry 99999999999 overflows").is_empty());
        assert_eq!(cited("entries 3.. then"), vec![("entries 3", 3)]);
        assert_eq!(cited("é entry 5é"), vec![("entry 5", 5)]);
    }

    #[test]
    fn the_cursor_names_its_entry_and_step() {
        assert_eq!(cursor_label(2302, 3009), "entry 2302 · step 3009");
    }
}
