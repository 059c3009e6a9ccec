//! Searching the elements of a timeline: by address label (`b7f…_3`), by frame text
//! (case-insensitive substring over the visible frames) and by a size range.
//!
//! Frame text is prepared once per snapshot ([`StackTexts`]): one lowercase string per stack id,
//! so a keystroke costs one substring test per element, not formatting every stack again. The
//! frame box also matches the user metadata of the allocation's entry
//! (`_set_memory_metadata`), lowercased once per distinct text.

use crate::format::{addr_label, stack_lines};
use crate::snapshot::{Snapshot, Trace};
use crate::timeline::{Element, ElementIndex, Layout};

/// Lowercase visible frame text of every stack, joined by newlines, indexed by stack id; and the
/// lowercase text of every user metadata string.
#[derive(Clone, Debug, Default)]
pub struct StackTexts {
    texts: Vec<String>,
    metadata: std::collections::HashMap<u32, String>,
}

impl StackTexts {
    /// Formats every stack of the snapshot once, and lowercases every metadata text once.
    pub fn build(snap: &Snapshot) -> StackTexts {
        let texts = (0..snap.stacks.len()).map(|s| stack_lines(snap, s as u32).join("\n").to_lowercase()).collect();
        let mut metadata = std::collections::HashMap::new();
        for t in snap.devices.iter().map(|d| &d.trace).filter(|t| t.user_metadata.is_present()) {
            for row in 0..t.len() {
                if let Some(id) = t.user_metadata.get(row).filter(|&id| id != 0) {
                    metadata.entry(id).or_insert_with(|| snap.strings.get(id).to_lowercase());
                }
            }
        }
        StackTexts { texts, metadata }
    }

    /// Lowercase text of a metadata string id (empty when none).
    pub fn metadata(&self, id: u32) -> &str {
        self.metadata.get(&id).map_or("", String::as_str)
    }

    /// Text of a stack (empty for an unknown id).
    pub fn get(&self, stack: u32) -> &str {
        self.texts.get(stack as usize).map_or("", String::as_str)
    }
}

/// Parses a size such as `4096`, `512KiB`, `1MiB`, `1.5 GB` or `2k` into bytes.
/// Binary units (KiB, MiB, GiB, TiB and the bare K, M, G, T) count in 1024s; KB, MB, GB and TB
/// count in 1000s. `None` for anything else.
pub fn parse_size_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return None,
    };
    let v = (n * mult).round();
    (v.is_finite() && (0.0..1.8e19).contains(&v)).then_some(v as u64)
}

/// A search over elements. Empty fields match everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    /// Address label or part of one (`b7f00_3`, `7f00`), lowercase.
    pub addr: String,
    /// Part of a frame's text, lowercase.
    pub frame: String,
    /// Smallest size.
    pub min_bytes: Option<u64>,
    /// Largest size.
    pub max_bytes: Option<u64>,
}

impl Query {
    /// A query from the text of the boxes (sizes that do not parse are ignored).
    pub fn new(addr: &str, frame: &str, min: &str, max: &str) -> Query {
        Query {
            addr: addr.trim().to_lowercase(),
            frame: frame.trim().to_lowercase(),
            min_bytes: parse_size_bytes(min),
            max_bytes: parse_size_bytes(max),
        }
    }

    /// Whether nothing is asked.
    pub fn is_empty(&self) -> bool {
        self.addr.is_empty() && self.frame.is_empty() && self.min_bytes.is_none() && self.max_bytes.is_none()
    }

    /// Whether an element matches. `prefix` is the label's letter (`b` for blocks, `s` for
    /// segments); an address query with its `_version` must equal the whole label, one without
    /// must be part of the label.
    pub fn matches(&self, e: &Element, prefix: char, texts: &StackTexts) -> bool {
        if self.min_bytes.is_some_and(|m| e.size_bytes < m) || self.max_bytes.is_some_and(|m| e.size_bytes > m) {
            return false;
        }
        if !self.addr.is_empty() {
            let label = addr_label(prefix, e.addr, e.version);
            let ok = if self.addr.contains('_') { label == self.addr } else { label.contains(self.addr.as_str()) };
            if !ok {
                return false;
            }
        }
        self.frame.is_empty() || texts.get(e.stack).contains(self.frame.as_str())
    }

    /// [`Query::matches`], the frame text also matching the user metadata of the element's
    /// entry in `trace` (its alloc, else its free).
    pub fn matches_in(&self, e: &Element, prefix: char, texts: &StackTexts, trace: &Trace) -> bool {
        if self.matches(e, prefix, texts) {
            return true;
        }
        if self.frame.is_empty() || !trace.user_metadata.is_present() {
            return false;
        }
        let meta = e.alloc_row.or(e.free_row).and_then(|r| trace.user_metadata.get(r as usize)).filter(|&id| id != 0);
        let Some(id) = meta else { return false };
        let only_frame = Query { frame: String::new(), ..self.clone() };
        texts.metadata(id).contains(self.frame.as_str()) && only_frame.matches(e, prefix, texts)
    }

    /// Indices of the matching elements of a layout (leaving out those the layout hides).
    pub fn matching(&self, layout: &Layout, prefix: char, texts: &StackTexts) -> Vec<ElementIndex> {
        self.matching_in(layout, prefix, texts, None)
    }

    /// [`Query::matching`], the frame text also matching user metadata when `trace` (the
    /// layout's device's) is given.
    pub fn matching_in(
        &self,
        layout: &Layout,
        prefix: char,
        texts: &StackTexts,
        trace: Option<&Trace>,
    ) -> Vec<ElementIndex> {
        if self.is_empty() {
            return Vec::new();
        }
        layout
            .elements
            .iter()
            .enumerate()
            .filter(|(_, e)| !layout.is_hidden(e))
            .filter(|(_, e)| match trace {
                Some(t) => self.matches_in(e, prefix, texts, t),
                None => self.matches(e, prefix, texts),
            })
            .map(|(i, _)| ElementIndex::new(i as u32))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Origin;

    fn el(addr: u64, size_bytes: u64, version: u32) -> Element {
        Element {
            addr,
            size_bytes,
            stack: 0,
            stream: 0,
            alloc_row: None,
            free_row: None,
            origin: Origin::Traced,
            version,
            alloc_step: 0,
            free_step: None,
            total_after_alloc_bytes: 0,
            band: None,
        }
    }

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_size_bytes("4096"), Some(4096));
        assert_eq!(parse_size_bytes("512KiB"), Some(512 * 1024));
        assert_eq!(parse_size_bytes("1MiB"), Some(1 << 20));
        assert_eq!(parse_size_bytes(" 1.5 GiB "), Some(3 << 29));
        assert_eq!(parse_size_bytes("2k"), Some(2048));
        assert_eq!(parse_size_bytes("3MB"), Some(3_000_000));
        assert_eq!(parse_size_bytes(""), None);
        assert_eq!(parse_size_bytes("abc"), None);
        assert_eq!(parse_size_bytes("5 parsecs"), None);
        assert_eq!(parse_size_bytes("1e99"), None);
    }

    #[test]
    fn matches_labels_frames_and_sizes() {
        let texts = StackTexts { texts: vec!["train.py:12:forward\nconv.py:3:conv2d".into()], ..StackTexts::default() };
        let e = el(0x7f00, 2048, 3);
        let q = |a: &str, f: &str, lo: &str, hi: &str| Query::new(a, f, lo, hi).matches(&e, 'b', &texts);
        assert!(q("b7f00_3", "", "", ""));
        assert!(q("B7F00_3", "", "", ""));
        assert!(!q("b7f00_2", "", "", ""));
        assert!(!q("b7f0_3", "", "", ""));
        assert!(q("7f00", "", "", ""));
        assert!(q("", "Conv2D", "", ""));
        assert!(!q("", "linear", "", ""));
        assert!(q("", "", "1KiB", "2KiB"));
        assert!(!q("", "", "4KiB", ""));
        assert!(!q("", "", "", "1KiB"));
        assert!(Query::new("", "", "x", "").is_empty());
    }

    #[test]
    fn the_frame_box_matches_metadata() {
        let p = crate::test_fixtures::real_fixture("metadata_layers.pickle");
        let snap = crate::load(&std::fs::read(&p).expect("read")).expect("load");
        let layout = crate::timeline::Layout::build(&snap, 0, crate::timeline::Options::default());
        let texts = StackTexts::build(&snap);
        let t = &snap.devices[0].trace;
        let q = Query::new("", "\"forward\"", "", "");
        assert!(q.matching(&layout, 'b', &texts).is_empty(), "no frame says \"forward\" in quotes");
        // python3: allocations whose alloc entry's user_metadata contains "forward" (quoted): 167.
        assert_eq!(q.matching_in(&layout, 'b', &texts, Some(t)).len(), 167);
        let q = Query::new("", "optimizer step 1", "", "");
        // Frees only: elements live before the trace whose free carries the text, none here.
        let _ = q.matching_in(&layout, 'b', &texts, Some(t));
        // The size box still applies to metadata matches.
        let q = Query::new("", "\"forward\"", "", "1");
        assert!(q.matching_in(&layout, 'b', &texts, Some(t)).is_empty());
    }
}
