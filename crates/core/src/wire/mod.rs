//! Moving a model between threads as bytes: a [`Snapshot`](crate::Snapshot) or a timeline
//! [`Layout`](crate::timeline::Layout) built in one place (a Web Worker) and used in another (the
//! page), without building it twice.
//!
//! The encoding has two parts: a *head* with every small value, and *parts*, one per large
//! column (a trace's addresses, a layout's event steps, ...), written little-endian as raw
//! values. The parts are handed out one by one as they are written ([`Encoder::new`] takes a
//! sink), so the sender can pass each on and free it; the receiver feeds them back through
//! [`Parts`] in the same order, in pieces, so a column is copied straight into its vector and
//! never held twice. Columns below [`PART_MIN_BYTES`] stay in the head.
//!
//! Both ends are the same program, but a decoder still never panics or allocates more than the
//! input justifies: every count is checked against the bytes left, and trees are as deep as
//! [`tree::MAX_DEPTH`] allows, no deeper.

use crate::tree;

mod by_field;
mod codec;
mod trees;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;

pub use by_field::{
    chunk_len, decode_field, encode_by_field, get_chunk, put_chunk, ByField, MessageSink, NESTED_FIELDS,
};
pub use codec::{ColumnItem, Decoder, Encoder, PartList, Parts, Plain, Wire};

/// Columns of at least this many bytes travel as parts of their own.
pub const PART_MIN_BYTES: usize = 64 << 10;

/// Deepest tree a decoder accepts (the model never holds deeper ones).
const MAX_TREE_DEPTH: usize = tree::MAX_DEPTH + 8;

/// What went wrong while decoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "model transfer: {}", self.0)
    }
}

impl std::error::Error for WireError {}

fn err<T>(what: impl Into<String>) -> Result<T, WireError> {
    Err(WireError(what.into()))
}

/// Encodes a value: returns the head and the parts in order.
pub fn encode<T: Wire>(v: &T) -> (Vec<u8>, Vec<Vec<u8>>) {
    encode_with_part_min(v, PART_MIN_BYTES)
}

/// Encodes a value with every column of at least `part_min_bytes` (and not empty) as a part.
pub fn encode_with_part_min<T: Wire>(v: &T, part_min_bytes: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut parts = Vec::new();
    let mut sink = |p: &[u8]| parts.push(p.to_vec());
    let mut e = Encoder::with_part_min(&mut sink, part_min_bytes);
    v.put(&mut e);
    let head = e.finish();
    (head, parts)
}

/// Decodes a value from a head and its parts; the head must be read to its end.
pub fn decode<T: Wire>(head: &[u8], parts: &mut dyn Parts) -> Result<T, WireError> {
    let mut d = Decoder::new(head, parts);
    let v = T::get(&mut d)?;
    if !d.at_end() {
        return err("bytes left over after the value");
    }
    Ok(v)
}

/// Every snapshot the tests know: the shared fixtures, the real and synthetic test files.
#[cfg(test)]
pub(crate) fn test_snapshots() -> Vec<(std::path::PathBuf, crate::Snapshot)> {
    let mut out = Vec::new();
    for path in crate::test_fixtures::fixture_files(&["real", "synth"]) {
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Ok(snap) = crate::load(&bytes) {
            out.push((path, snap));
        }
    }
    out
}
