//! A streaming, non-recursive reader for Python pickles of plain data.
//!
//! Snapshot files are pickles of dicts, lists, tuples, strings, numbers, booleans and `None`. This
//! reader decodes exactly that subset, protocols 0 to 5, into a [`Document`]: an arena of values in
//! which shared (memoized) objects stay shared, so a frame list referenced a thousand times is
//! decoded once. It never imports or calls anything: opcodes that would (`GLOBAL`, `REDUCE`,
//! `BUILD`, ...) are refused with an error that names the opcode and its byte offset.
//!
//! Safety on hostile input:
//! - no recursion anywhere (decoding is a stack machine; the arena drops flat);
//! - every declared length is checked against the input before anything is allocated for it;
//! - memo indices are bounded by the number of memo writes, never by the index value.
//!
//! Input can be a whole slice ([`parse`]) or chunks ([`Parser::feed`] then [`Parser::finish`]), and
//! [`Parser::consumed_bytes`] reports progress.
//!
//! Speed: the opcodes that make up most of a snapshot are decoded by fast paths; flat dicts are
//! read in one go; trace entries become rows of typed columns (`records`; a column whose rows
//! are all one value takes no room, `same_column`) that the model reads without decoding values
//! again; and once one entry has been read, the next ones are matched
//! against its key bytes (`entry_template`), so only their values are decoded. Frame lists whose
//! frame dicts are written inline (each entry holding its own copies) are read whole, each dict
//! found by its bytes among the equal dicts already read (`inline_frames`). Every fast path
//! has the same effects as the general one and hands over to it on anything unexpected.

use crate::error::Error;

mod document;
mod packed;
mod parser;
mod records;
mod same_column;
mod text;
mod value;

#[cfg(test)]
mod tests;

pub use document::{DictIter, Document, Items, ItemsIter};
pub use parser::Parser;
pub use records::TraceRecord;
pub(crate) use records::{RecordColumns, RecordField, RecordRun, WideColumns};
pub use text::SURROGATE_BASE;
pub use value::Value;

/// Parses a whole pickle held in memory.
pub fn parse(bytes: &[u8]) -> Result<Document, Error> {
    let mut p = Parser::new();
    p.set_total_len(bytes.len() as u64);
    p.feed(bytes)?;
    p.finish()
}
