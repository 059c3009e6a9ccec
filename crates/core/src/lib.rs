//! # memviz-core
//!
//! Reads PyTorch CUDA memory snapshots (the pickles written by
//! `torch.cuda.memory._dump_snapshot`, every format variant, and their JSON form) into a compact
//! columnar model, and answers questions about them: the text of PyTorch's own CLI, the stacked
//! allocation layout over time, and more. No browser or OS dependencies: bytes in, answers out;
//! it builds for `wasm32-unknown-unknown` as well as natively.
//!
//! ```no_run
//! let bytes = std::fs::read("snapshot.pickle").unwrap();
//! let snap = memviz_core::load(&bytes).unwrap();
//! print!("{}", memviz_core::reference::stats(&snap).unwrap());
//! ```
//!
//! Data flow: [`pickle`] (streaming, non-recursive, never runs code) → [`snapshot`] (the model) →
//! [`reference`](mod@reference) (PyTorch-compatible text), [`info`] (summary).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod analysis;
pub mod bisect;
pub mod chrome_trace;
pub mod coverage;
pub mod describe;
pub mod error;
mod fenwick;
pub mod format;
pub mod info;
pub mod input;
pub mod json;
pub mod pickle;
pub mod plot;
pub mod ranks;
pub mod reference;
pub mod search;
pub mod snapshot;
pub mod state;
#[cfg(test)]
mod test_fixtures;
pub mod timeline;
pub mod timeline_pools;
pub mod tree;
pub mod wire;

pub use error::{Error, FileKind};
pub use input::{Container, Loader};
pub use snapshot::Snapshot;

/// What the first bytes say the input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Pickle,
    Json,
    /// A profiler trace ([`chrome_trace`]).
    Trace,
}

fn detect(head: &[u8]) -> Result<Kind, Error> {
    if head.is_empty() {
        return Err(Error::Empty);
    }
    if let Some(k) = error::sniff(head) {
        if k == FileKind::ProfilerTrace {
            return Ok(Kind::Trace);
        }
        return Err(Error::NotAPickle { kind: k });
    }
    match head.iter().find(|c| !c.is_ascii_whitespace()) {
        Some(b'{') | Some(b'[') => Ok(Kind::Json),
        // Pickles that start with an opcode that runs code keep the message that says so.
        Some(&c) if looks_like_text(head) && !b"(}]cPRiob".contains(&c) => {
            Err(Error::NotAPickle { kind: FileKind::Text })
        }
        Some(_) => Ok(Kind::Pickle),
        None => Err(Error::NotAPickle { kind: FileKind::Text }),
    }
}

/// Printable text throughout: a snapshot pickle starts with the protocol opcode (0x80) or, in
/// the text protocols 0 and 1, with the mark or empty dict/list that opens its top-level value,
/// so text starting with anything else is not a snapshot.
fn looks_like_text(head: &[u8]) -> bool {
    head.iter()
        .all(|&c| c == b'\n' || c == b'\r' || c == b'\t' || (0x20..0x7f).contains(&c) || c >= 0x80 && head[0] != 0x80)
}

/// Loads a snapshot held in memory: a pickle or JSON, compressed or not, or the snapshot inside
/// an HTML page ([`input`]).
pub fn load(bytes: &[u8]) -> Result<Snapshot, Error> {
    if input::sniff(bytes.get(..input::SNIFF_BYTES).unwrap_or(bytes)) != Container::Plain {
        return input::load(bytes);
    }
    match detect(bytes.get(..64).unwrap_or(bytes))? {
        Kind::Json => json::load(bytes),
        Kind::Trace => chrome_trace::load(bytes).map(|(s, _)| s),
        Kind::Pickle => {
            let doc = pickle::parse(bytes)?;
            Snapshot::from_owned_document(doc)
        }
    }
}

/// Loads a plain snapshot (a pickle or JSON, not compressed) fed in chunks, reporting progress
/// (bytes consumed). [`Loader`] puts an [`input::Unpacker`] in front of it.
pub struct PlainLoader {
    kind: Option<Kind>,
    parser: pickle::Parser,
    trace: Option<Box<chrome_trace::TraceLoader>>,
    json: Vec<u8>,
    head: Vec<u8>,
    total_len: Option<u64>,
    fed: u64,
}

impl PlainLoader {
    /// A loader; `total_len` (when known) lets impossible lengths fail early.
    pub fn new(total_len: Option<u64>) -> Self {
        let mut parser = pickle::Parser::new();
        if let Some(n) = total_len {
            parser.set_total_len(n);
        }
        PlainLoader { kind: None, parser, trace: None, json: Vec::new(), head: Vec::new(), total_len, fed: 0 }
    }

    /// Feeds the next chunk.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Error> {
        self.fed += chunk.len() as u64;
        if self.kind.is_none() {
            self.head.extend_from_slice(
                chunk.get(..64usize.saturating_sub(self.head.len()).min(chunk.len())).unwrap_or(&[]),
            );
            if self.head.len() < 64 && self.total_len.is_none_or(|t| self.fed < t) {
                // Wait for enough bytes to tell what this is; keep the chunk.
                self.json.extend_from_slice(chunk);
                return Ok(());
            }
            let kind = detect(&self.head)?;
            self.kind = Some(kind);
            let held = std::mem::take(&mut self.json);
            let first: Vec<u8> = if held.is_empty() { chunk.to_vec() } else { [held.as_slice(), chunk].concat() };
            return match kind {
                Kind::Json => {
                    self.json = first;
                    Ok(())
                }
                Kind::Pickle => self.parser.feed(&first),
                Kind::Trace => self.trace.insert(Box::default()).feed(&first),
            };
        }
        match self.kind {
            Some(Kind::Json) => {
                self.json.extend_from_slice(chunk);
                Ok(())
            }
            Some(Kind::Trace) => match self.trace.as_mut() {
                Some(t) => t.feed(chunk),
                None => Ok(()),
            },
            _ => self.parser.feed(chunk),
        }
    }

    /// Bytes decoded so far (JSON is decoded at the end).
    pub fn consumed_bytes(&self) -> u64 {
        match self.kind {
            Some(Kind::Pickle) => self.parser.consumed_bytes(),
            _ => 0,
        }
    }

    /// Ends the input and builds the model.
    pub fn finish(self) -> Result<Snapshot, Error> {
        Ok(self.finish_unchecked()?.check())
    }

    /// Ends the input and builds the model but for the checks of its traces
    /// ([`snapshot::Unchecked::check`] runs them).
    pub fn finish_unchecked(mut self) -> Result<snapshot::Unchecked, Error> {
        if self.kind.is_none() {
            let held = std::mem::take(&mut self.json);
            return load(&held).map(snapshot::Unchecked::checked);
        }
        match self.kind {
            Some(Kind::Json) => json::load(&self.json).map(snapshot::Unchecked::checked),
            Some(Kind::Trace) => self.trace.take().unwrap_or_default().finish().map(snapshot::Unchecked::checked),
            _ => {
                let doc = self.parser.finish()?;
                Snapshot::from_owned_document_unchecked(doc)
            }
        }
    }
}
