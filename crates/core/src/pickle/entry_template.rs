//! A byte template for trace entries.
//!
//! CPython writes every trace entry the same way: `EMPTY_DICT MEMOIZE MARK`, then for each key a
//! memo GET of the key string (the keys were memoized by the first entry) and the value, then
//! `SETITEMS`. Once one entry has been read as a record, its key GETs are kept; the next entries
//! are matched against them byte for byte and only their values are decoded, straight into a
//! [`TraceRecord`]. Anything unexpected (another key, a value of another type or encoding, input
//! that ends early) leaves the entry to the general path with nothing changed. A memo slot
//! written twice retires the template, since a key GET may then mean another string.

use super::records::{Field, TraceRecord};
use super::{small_long, Parser, Value, RECORD_BIT};

/// A key written as a memo GET of slot `idx` (`BINGET` or `LONG_BINGET`).
#[derive(Clone, Copy, Debug)]
pub(super) struct KeyCode {
    idx: u32,
    long: bool,
}

impl KeyCode {
    /// The code of a GET opcode `op` of slot `idx` (`None` for other opcodes).
    pub(super) fn of(op: u8, idx: u64) -> Option<KeyCode> {
        let idx = u32::try_from(idx).ok()?;
        match op {
            b'h' => Some(KeyCode { idx, long: false }),
            b'j' => Some(KeyCode { idx, long: true }),
            _ => None,
        }
    }

    /// The bytes this GET takes when `rest` starts with it.
    #[inline(always)]
    fn matches(self, rest: &[u8]) -> Option<usize> {
        if self.long {
            let b = rest.get(..5)?;
            (b[0] == b'j' && u32::from_le_bytes([b[1], b[2], b[3], b[4]]) == self.idx).then_some(5)
        } else {
            let b = rest.get(..2)?;
            (b[0] == b'h' && u32::from(b[1]) == self.idx).then_some(2)
        }
    }
}

/// The keys of a trace entry as written, with their fields, for entries of one shape.
#[derive(Debug)]
pub(super) struct EntryTemplate {
    shape: u32,
    keys: Vec<(KeyCode, Field)>,
    /// `Parser::memo_rebinds` when it was made.
    rebinds: u64,
}

/// A memo GET at the start of `rest`: (slot, bytes taken).
#[inline(always)]
fn get_index(rest: &[u8]) -> Option<(u64, usize)> {
    match *rest.first()? {
        b'h' => Some((u64::from(*rest.get(1)?), 2)),
        b'j' => {
            let b = rest.get(1..5)?;
            Some((u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])), 5))
        }
        _ => None,
    }
}

/// A `BININT1`, `BININT2`, `BININT` or short `LONG1` at the start of `rest`: (value, bytes taken).
#[inline(always)]
fn small_int(rest: &[u8]) -> Option<(i64, usize)> {
    match *rest.first()? {
        b'K' => Some((i64::from(*rest.get(1)?), 2)),
        b'M' => {
            let b = rest.get(1..3)?;
            Some((i64::from(u16::from_le_bytes([b[0], b[1]])), 3))
        }
        b'J' => {
            let b = rest.get(1..5)?;
            Some((i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])), 5))
        }
        0x8a => {
            let len = usize::from(*rest.get(1)?);
            if len == 0 || len > 8 {
                return None;
            }
            Some((small_long(rest.get(2..2 + len)?), 2 + len))
        }
        _ => None,
    }
}

impl Parser {
    /// Reads the trace entry at the start of `rest` (an `EMPTY_DICT`) with the template; the
    /// bytes taken, or `None` with nothing changed.
    #[inline(always)]
    pub(super) fn template_entry(&mut self, rest: &[u8]) -> Option<usize> {
        let t = self.entry_template.as_ref()?;
        if t.rebinds != self.memo_rebinds || rest.get(1..3)? != [0x94, b'('] {
            return None;
        }
        let own_slot = self.memo_len();
        let mut p = 3;
        let mut rec = TraceRecord::default();
        for &(key, field) in &t.keys {
            p += key.matches(rest.get(p..)?)?;
            p += self.template_value(rest.get(p..)?, field, own_slot, &mut rec)?;
        }
        if rest.get(p) != Some(&b'u') {
            return None;
        }
        let shape = t.shape;
        if self.doc.records.len() >= RECORD_BIT as usize {
            return None;
        }
        let row = self.doc.records.push_record(shape, &rec)?;
        let d = Value::Dict(RECORD_BIT | row);
        self.fresh = None;
        self.stack.push(d);
        self.memo_put(own_slot, d);
        Some(p + 1)
    }

    /// Decodes one value of `field` into `rec`; the bytes taken.
    #[inline(always)]
    fn template_value(
        &self,
        rest: &[u8],
        field: Field,
        own_slot: u64,
        rec: &mut TraceRecord,
    ) -> Option<usize> {
        match field {
            Field::Addr | Field::Size | Field::Stream | Field::TimeUs => {
                let (x, used) = small_int(rest)?;
                match field {
                    Field::Addr => rec.addr = Some(u64::try_from(x).ok()?),
                    Field::Size => rec.size_bytes = Some(u64::try_from(x).ok()?),
                    Field::Stream => rec.stream = Some(x),
                    _ => rec.time_us = Some(x),
                }
                Some(used)
            }
            Field::Action | Field::CompileContext | Field::UserMetadata | Field::Frames => {
                let (idx, used) = get_index(rest)?;
                if idx == own_slot {
                    return None;
                }
                match (field, self.memo_peek(idx)?) {
                    (Field::Action, Value::Str(s)) => rec.action = Some(s),
                    (Field::CompileContext, Value::Str(s)) => rec.compile_context = Some(s),
                    (Field::UserMetadata, Value::Str(s)) => rec.user_metadata = Some(s),
                    (Field::Frames, Value::List(l)) => rec.frames = Some(l),
                    _ => return None,
                }
                Some(used)
            }
        }
    }

    /// Keeps the keys of a record just read (`codes`, one per key) as the template, unless the
    /// template in use already stands for them.
    pub(super) fn remember_template(&mut self, shape: u32, codes: &[Option<KeyCode>]) {
        if self
            .entry_template
            .as_ref()
            .is_some_and(|t| t.shape == shape && t.rebinds == self.memo_rebinds)
        {
            return;
        }
        let Some(Some(fields)) = self.doc.shape_fields.get(shape as usize) else {
            return;
        };
        if codes.len() != fields.len() {
            return;
        }
        let keys: Option<Vec<(KeyCode, Field)>> = codes
            .iter()
            .zip(fields.iter())
            .map(|(c, &f)| c.map(|c| (c, f)))
            .collect();
        if let Some(keys) = keys {
            self.entry_template = Some(EntryTemplate {
                shape,
                keys,
                rebinds: self.memo_rebinds,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::pickle::{parse, Document, Parser, Value};

    /// Four trace entries; the second and third are read with the template; before the fourth, the
    /// memo slot of the key `addr` is rebound to the string `size`.
    fn entries_with_a_rebound_key() -> Vec<u8> {
        let mut b = vec![0x80, 4, b']', 0x94, b'('];
        b.extend_from_slice(b"}\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x04addr\x94K\x10u");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x20u");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x30u");
        b.extend_from_slice(b"\x8c\x04sizeq\x040");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x40u");
        b.extend_from_slice(b"e.");
        b
    }

    fn chunked(bytes: &[u8], chunk: usize) -> Document {
        let mut p = Parser::new();
        for c in bytes.chunks(chunk) {
            p.feed(c).expect("feeds");
        }
        p.finish().expect("finishes")
    }

    fn summary(d: &Document) -> Vec<Vec<(String, Value)>> {
        d.items(d.root())
            .iter()
            .map(|e| {
                d.dict_iter(e)
                    .map(|(k, v)| (d.as_str(k).unwrap_or("?").to_owned(), v))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn rebound_key_slot_retires_the_template() {
        let bytes = entries_with_a_rebound_key();
        let d = parse(&bytes).expect("parses");
        let s = summary(&d);
        assert_eq!(s.len(), 4);
        for (i, e) in s.iter().take(3).enumerate() {
            assert_eq!(e[1], ("addr".to_owned(), Value::Int(16 * (i as i64 + 1))));
        }
        assert_eq!(s[3][1], ("size".to_owned(), Value::Int(64)));
        assert!(d
            .trace_record(d.items(d.root()).get(2).unwrap_or(Value::None))
            .is_some());
    }

    #[test]
    fn template_agrees_with_the_general_path() {
        let bytes = entries_with_a_rebound_key();
        let whole = summary(&parse(&bytes).expect("parses"));
        for chunk in [1, 2, 3, 5, 7, 11] {
            assert_eq!(summary(&chunked(&bytes, chunk)), whole, "chunks of {chunk}");
        }
    }
}
