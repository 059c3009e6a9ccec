//! Splits a Chrome trace fed in chunks into the JSON text of each element of its `traceEvents`
//! list, holding only the element being read: the rest of the document (device properties,
//! metadata) is skipped byte by byte, so a trace of any size is read in bounded memory.

use crate::error::Error;

/// Where the scanner is in the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the top-level object opens.
    Start,
    /// Inside the top-level object, looking for the `traceEvents` key.
    Keys,
    /// After the `traceEvents` key, before its `[`.
    Colon,
    /// Inside the `traceEvents` list, between elements.
    List,
    /// Inside one element of the list.
    Element,
    /// After the list, until the top-level object closes.
    Rest,
    /// The top-level object has closed.
    Done,
}

/// The most bytes one event may take (Kineto's events are well under a kilobyte; a Python
/// stack's text or a long list of shapes a few kilobytes).
pub const MAX_EVENT_BYTES: usize = 16 << 20;

/// The push-based splitter.
pub struct Scanner {
    phase: Phase,
    /// Nesting depth of objects and lists, the top-level object being 1.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The text of the last string at depth 1 (a key), up to a few bytes.
    key: Vec<u8>,
    /// Whether the last completed string at depth 1 was `traceEvents`.
    key_is_events: bool,
    /// Reading the number after the `baseTimeNanoseconds` key.
    in_base_time: bool,
    /// Its digits.
    base_time: Vec<u8>,
    /// The element being read, across chunks.
    element: Vec<u8>,
    /// Bytes fed so far.
    offset: u64,
    /// Elements handed on so far.
    elements: u64,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

fn shape_error(offset: u64, reason: &str) -> Error {
    Error::Trace { reason: format!("not a profiler trace memviz can read: {reason} (at byte {offset})") }
}

impl Scanner {
    /// A scanner at the start of a document.
    pub fn new() -> Self {
        Scanner {
            phase: Phase::Start,
            depth: 0,
            in_string: false,
            escaped: false,
            key: Vec::new(),
            key_is_events: false,
            in_base_time: false,
            base_time: Vec::new(),
            element: Vec::new(),
            offset: 0,
            elements: 0,
        }
    }

    /// Elements handed on so far.
    pub fn elements(&self) -> u64 {
        self.elements
    }

    /// The trace's `baseTimeNanoseconds` (what its timestamps count from), when it has one.
    pub fn base_time_ns(&self) -> Option<i64> {
        std::str::from_utf8(&self.base_time).ok().and_then(|t| t.parse().ok())
    }

    /// Feeds the next chunk; `each` gets the text of every element completed in it.
    #[allow(clippy::too_many_lines)] // one state machine over bytes: a match arm per byte class
    pub fn feed(&mut self, chunk: &[u8], each: &mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> {
        let mut start = if self.phase == Phase::Element { Some(0) } else { None };
        for (i, &c) in chunk.iter().enumerate() {
            let at = self.offset + i as u64;
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_string = false;
                    if self.phase == Phase::Keys && self.depth == 1 {
                        self.key_is_events = self.key == b"traceEvents";
                    }
                } else if self.phase == Phase::Keys && self.depth == 1 && self.key.len() <= 24 {
                    self.key.push(c);
                }
                continue;
            }
            match c {
                b'"' => {
                    self.in_string = true;
                    self.in_base_time = false;
                    if self.phase == Phase::Keys && self.depth == 1 {
                        self.key.clear();
                        self.key_is_events = false;
                    }
                }
                b'{' | b'[' => {
                    match self.phase {
                        Phase::Start if c == b'{' => self.phase = Phase::Keys,
                        Phase::Start => {
                            return Err(shape_error(
                                at,
                                "the file is a JSON list, not an object with a traceEvents list",
                            ))
                        }
                        Phase::Colon if c == b'[' => self.phase = Phase::List,
                        Phase::Colon => return Err(shape_error(at, "traceEvents is not a list")),
                        Phase::List if c == b'{' => {
                            self.phase = Phase::Element;
                            start = Some(i);
                        }
                        Phase::List => {
                            return Err(shape_error(at, "an element of traceEvents is a list, not an event object"))
                        }
                        Phase::Done => return Err(shape_error(at, "more data after the end of the trace's object")),
                        _ => {}
                    }
                    self.depth += 1;
                }
                b'}' | b']' => {
                    self.in_base_time = false;
                    if self.depth == 0 {
                        return Err(shape_error(at, "a bracket closes that never opened"));
                    }
                    self.depth -= 1;
                    match self.phase {
                        Phase::Element if self.depth == 2 => {
                            let s = start.take().unwrap_or(0);
                            let piece = chunk.get(s..=i).unwrap_or_default();
                            if self.element.is_empty() {
                                each(piece)?;
                            } else {
                                self.element.extend_from_slice(piece);
                                let whole = std::mem::take(&mut self.element);
                                each(&whole)?;
                                self.element = whole;
                                self.element.clear();
                            }
                            self.elements += 1;
                            self.phase = Phase::List;
                        }
                        Phase::List if self.depth == 1 => self.phase = Phase::Rest,
                        Phase::Keys if self.depth == 0 => {
                            return Err(shape_error(at, "the object has no traceEvents list"));
                        }
                        Phase::Rest if self.depth == 0 => self.phase = Phase::Done,
                        _ => {}
                    }
                }
                b':' if self.phase == Phase::Keys && self.depth == 1 && self.key_is_events => self.phase = Phase::Colon,
                b':' if self.phase == Phase::Keys && self.depth == 1 && self.key == b"baseTimeNanoseconds" => {
                    self.in_base_time = true;
                    self.base_time.clear();
                }
                b' ' | b'\n' | b'\r' | b'\t' => {}
                b',' | b':' => self.in_base_time = false,
                _ => {
                    if self.in_base_time && c.is_ascii_digit() && self.base_time.len() < 20 {
                        self.base_time.push(c);
                    }
                    match self.phase {
                        Phase::Start => return Err(shape_error(at, "the file does not start with a JSON object")),
                        Phase::Colon => return Err(shape_error(at, "traceEvents is not a list")),
                        Phase::List => return Err(shape_error(at, "an element of traceEvents is not an event object")),
                        Phase::Done => return Err(shape_error(at, "more data after the end of the trace's object")),
                        _ => {}
                    }
                }
            }
        }
        if let Some(s) = start {
            self.element.extend_from_slice(chunk.get(s..).unwrap_or_default());
            if self.element.len() > MAX_EVENT_BYTES {
                return Err(shape_error(
                    self.offset + chunk.len() as u64,
                    &format!("one event is over {} MiB long", MAX_EVENT_BYTES >> 20),
                ));
            }
        }
        self.offset += chunk.len() as u64;
        Ok(())
    }

    /// Checks the document ended where it may.
    pub fn finish(&self) -> Result<(), Error> {
        let cut = |inside: String| {
            Error::Trace {
            reason: format!(
                "the profiler trace is cut off: it ends at byte {} {inside} (was the export interrupted or the download incomplete?)",
                self.offset
            ),
        }
        };
        match self.phase {
            Phase::Done => Ok(()),
            Phase::Start => Err(shape_error(self.offset, "the file holds no JSON object")),
            Phase::Keys => Err(cut("before its traceEvents list".into())),
            Phase::Colon | Phase::List | Phase::Element => {
                Err(cut(format!("inside its traceEvents list, after {} complete events", self.elements)))
            }
            Phase::Rest => Err(cut("after its traceEvents list, before the object closes".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(doc: &[u8], chunk: usize) -> Result<Vec<String>, Error> {
        let mut s = Scanner::new();
        let mut out = Vec::new();
        for c in doc.chunks(chunk.max(1)) {
            s.feed(c, &mut |e| {
                out.push(String::from_utf8_lossy(e).into_owned());
                Ok(())
            })?;
        }
        s.finish()?;
        Ok(out)
    }

    #[test]
    fn elements_come_whole_at_any_chunk_size() {
        let doc = br#"{"schemaVersion": 1, "deviceProperties": [{"id": 0}], "traceEvents": [
            {"ph": "X", "name": "a}]\"{", "args": {"x": [1, 2]}}, {"ph": "i"}
        ], "traceName": "t"}"#;
        for chunk in [1, 2, 3, 7, 64, 4096] {
            let got = split(doc, chunk).unwrap_or_else(|e| panic!("chunk {chunk}: {e}"));
            assert_eq!(got, vec![r#"{"ph": "X", "name": "a}]\"{", "args": {"x": [1, 2]}}"#, r#"{"ph": "i"}"#]);
        }
        let mut s = Scanner::new();
        s.feed(br#"{"baseTimeNanoseconds": 1790857026000000000, "traceEvents": []}"#, &mut |_| Ok(())).ok();
        assert_eq!(s.base_time_ns(), Some(1_790_857_026_000_000_000));
    }

    #[test]
    fn a_cut_trace_says_where() {
        let doc = br#"{"traceEvents": [{"ph": "X"}, {"ph": "#;
        let e = split(doc, 5).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("cut off") && e.contains("after 1 complete events"), "{e}");
        let e = split(br#"{"traceEvents": [], "a": "#, 5).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("after its traceEvents list"), "{e}");
    }

    #[test]
    fn wrong_shapes_are_named() {
        for (doc, want) in [
            (&b"[[1, 2], [3]]"[..], "JSON list"),
            (&b"{\"traceEvents\": 3}"[..], "not a list"),
            (&b"{\"traceEvents\": [[1]]}"[..], "is a list"),
            (&b"{\"traceEvents\": [1]}"[..], "not an event object"),
            (&b"{\"schemaVersion\": 1}"[..], "no traceEvents"),
            (&b"{\"traceEvents\": []} {"[..], "after the end"),
        ] {
            let e = split(doc, 3).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(want), "{}: {e}", String::from_utf8_lossy(doc));
        }
    }
}
