//! The one numbering of a trace: its entries, indexed from 0 in the device's trace (as
//! `memviz trace` and the Allocator State History count them). Every position the page shows
//! is an entry: the x axis's ticks ([`entry_ticks`]: the layout's steps are only where an entry
//! is drawn), the cursor ([`cursor_label`]), lifetimes, History rows, the analyses' texts.
//! Positions are written bare ("entry 2302", "entries 0..1996"), counts with thousands
//! separators ([`count`]: "5,593 entries"), so a position can be typed as it is read.
//! [`entry_refs`] finds citations in a text so the page can make each one a link that puts the
//! cursor on the timeline.

use memviz_core::timeline::Layout;

use crate::axis;

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

/// What the cursor at trace entry `entry` says.
pub fn cursor_label(entry: u32) -> String {
    format!("entry {entry}")
}

/// A count with its noun, digits grouped by thousands: `count(5593, "entries")` is
/// "5,593 entries".
pub fn count(n: usize, noun: &str) -> String {
    format!("{} {noun}", axis::step_label(n as f64))
}

/// The trace entry drawn at `step` of `layout`: the last event at or before it (`None` before
/// the first event, or in a layout without events).
pub fn entry_at_step(layout: &Layout, step: f64) -> Option<u32> {
    layout.row_at(step)
}

/// Where the x axis puts trace entry `entry` (in steps): at its event, or for an entry that is
/// not an event of this layout (a `free_requested`, a segment's entry on the allocations'
/// timeline, an `oom`), at the first event after it.
pub fn step_of_entry(layout: &Layout, entry: u32) -> f64 {
    f64::from(layout.step_of_row(entry).unwrap_or_else(|| layout.step_for_row(entry)))
}

/// Ticks of an x axis in steps over `[s0, s1]`, labelled with trace entries: about `target`
/// round entry numbers (1, 2 or 5 times a power of ten apart) from the entry drawn at `s0` to
/// the one at `s1`, each at its step; never two at one step, never one outside the window.
pub fn entry_ticks(layout: &Layout, s0: f64, s1: f64, target: usize) -> Vec<(f64, u32)> {
    if s1.is_nan() || s0.is_nan() || s1 < s0 {
        return Vec::new();
    }
    // No entry drawn by the window's right edge: nothing to label.
    let Some(last) = entry_at_step(layout, s1) else { return Vec::new() };
    let first = entry_at_step(layout, s0).unwrap_or(0).min(last);
    let every = axis::nice_step(f64::from(last - first) / target.max(1) as f64).max(1.0);
    let mut out: Vec<(f64, u32)> = Vec::new();
    for t in axis::ticks_with_step(f64::from(first), f64::from(last), every) {
        let entry = t as u32;
        let step = step_of_entry(layout, entry);
        if step < s0 || step > s1 || out.last().is_some_and(|&(s, _)| s >= step) {
            continue;
        }
        out.push((step, entry));
    }
    out
}

#[cfg(test)]
#[allow(clippy::expect_used)]
pub(crate) mod tests {
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
    fn the_cursor_names_its_entry_and_counts_group_digits() {
        assert_eq!(cursor_label(2302), "entry 2302");
        assert_eq!(count(5593, "entries"), "5,593 entries");
        assert_eq!(count(2029, "allocations"), "2,029 allocations");
        assert_eq!(count(7, "entries"), "7 entries");
    }

    /// A snapshot of one device whose trace is `entries` (action, address, size).
    pub(crate) fn snapshot_of(entries: &[(&str, u64, u64)]) -> memviz_core::snapshot::Snapshot {
        let rows: Vec<String> = entries
            .iter()
            .map(|(a, addr, size)| format!(r#"{{"action":"{a}","addr":{addr},"size":{size},"stream":0}}"#))
            .collect();
        let json = format!(r#"{{"segments":[],"device_traces":[[{}]]}}"#, rows.join(","));
        memviz_core::load(json.as_bytes()).expect("the trace loads")
    }

    /// A trace of allocs and frees: each alloc one step, each free one (plus a slide when
    /// something live is above it), and a `free_requested` that is no event of the layout.
    fn layout() -> (memviz_core::snapshot::Snapshot, Layout) {
        let snap = snapshot_of(&[
            ("alloc", 0x100, 1024),
            ("alloc", 0x200, 2048),
            ("free_requested", 0x100, 1024),
            ("free_completed", 0x100, 1024),
            ("alloc", 0x300, 512),
            ("free_completed", 0x200, 2048),
            ("free_completed", 0x300, 512),
        ]);
        let l = Layout::build(&snap, 0, memviz_core::timeline::Options::default());
        (snap, l)
    }

    #[test]
    fn entries_and_steps_map_both_ways() {
        let (_s, l) = layout();
        for entry in [0u32, 1, 3, 4, 5, 6] {
            let step = step_of_entry(&l, entry);
            assert_eq!(entry_at_step(&l, step), Some(entry), "entry {entry} at step {step}");
        }
        // The free_requested is drawn where its free_completed is.
        assert_eq!(step_of_entry(&l, 2), step_of_entry(&l, 3));
        // Inside a slide the entry is the free's.
        let free = step_of_entry(&l, 3);
        assert_eq!(entry_at_step(&l, free + 1.5), Some(3));
    }

    #[test]
    fn ticks_are_round_entries_at_their_steps() {
        let (_s, l) = layout();
        let all = entry_ticks(&l, 0.0, f64::from(l.steps), 10);
        let entries: Vec<u32> = all.iter().map(|t| t.1).collect();
        // Entry 2 (free_requested) shares its step with entry 3: one tick there.
        assert_eq!(entries, vec![0, 1, 2, 4, 5, 6]);
        for &(step, entry) in &all {
            assert_eq!(step, step_of_entry(&l, entry));
        }
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
        // A narrow window: only what is inside it.
        let (a, b) = (step_of_entry(&l, 4), step_of_entry(&l, 5));
        assert!(entry_ticks(&l, a, b, 10).iter().all(|&(s, e)| s >= a && s <= b && (4..=5).contains(&e)));
        assert!(entry_ticks(&Layout::default(), 0.0, 10.0, 10).is_empty());
    }
}
