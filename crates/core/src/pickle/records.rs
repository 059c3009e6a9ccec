//! Trace entries stored as columns while they are decoded.
//!
//! A snapshot's trace holds up to millions of small dicts with the same few keys (`action`,
//! `addr`, `size`, `stream`, `time_us`, `compile_context`, `user_metadata`, `frames`). A dict whose
//! keys are all among these (with `action` present) and whose values have the usual types is kept
//! as one row of a [`RecordTable`] rather than as generic dict values; the model reads the columns
//! back without decoding anything. Every value round-trips exactly, so such a dict looks the same
//! through every [`Document`](super::Document) accessor as any other dict.

use super::same_column::{Col, SameColumn};
use super::Value;

/// A field a trace record may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    /// `action`: a string.
    Action,
    /// `addr`: a non-negative int below 2^64.
    Addr,
    /// `size`: a non-negative int below 2^64.
    Size,
    /// `stream`: an int of 64 bits.
    Stream,
    /// `time_us`: an int of 64 bits.
    TimeUs,
    /// `compile_context`: a string.
    CompileContext,
    /// `user_metadata`: a string.
    UserMetadata,
    /// `frames`: a list.
    Frames,
}

impl Field {
    /// The field for a dict key, if it is one.
    pub(crate) fn from_key(key: &str) -> Option<Field> {
        Some(match key {
            "action" => Field::Action,
            "addr" => Field::Addr,
            "size" => Field::Size,
            "stream" => Field::Stream,
            "time_us" => Field::TimeUs,
            "compile_context" => Field::CompileContext,
            "user_metadata" => Field::UserMetadata,
            "frames" => Field::Frames,
            _ => return None,
        })
    }

    /// The field's bit in a presence mask.
    fn bit(self) -> u8 {
        1 << (self as u8)
    }

    /// The presence mask of a layout.
    pub(crate) fn mask(fields: &[Field]) -> u8 {
        fields.iter().fold(0, |m, f| m | f.bit())
    }

    /// The fields for a shape's keys, when they all are fields and include `action`.
    pub(crate) fn layout(keys: impl Iterator<Item = Option<Field>>) -> Option<Box<[Field]>> {
        let fields: Option<Vec<Field>> = keys.collect();
        let fields = fields?;
        fields.contains(&Field::Action).then(|| fields.into_boxed_slice())
    }
}

/// A non-negative int as stored: `Int` below 2^63, `UInt` at or above (as the reader makes them).
fn unsigned_of(v: Value) -> Option<u64> {
    match v {
        Value::Int(i) if i >= 0 => Some(i as u64),
        Value::UInt(u) if u > i64::MAX as u64 => Some(u),
        _ => None,
    }
}

fn value_of_unsigned(x: u64) -> Value {
    match i64::try_from(x) {
        Ok(i) => Value::Int(i),
        Err(_) => Value::UInt(x),
    }
}

/// One record's fields; `None` where the dict lacks the key.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TraceRecord {
    /// `action`: string id.
    pub action: Option<u32>,
    /// `addr`.
    pub addr: Option<u64>,
    /// `size`.
    pub size_bytes: Option<u64>,
    /// `stream`.
    pub stream: Option<i64>,
    /// `time_us`.
    pub time_us: Option<i64>,
    /// `compile_context`: string id.
    pub compile_context: Option<u32>,
    /// `user_metadata`: string id.
    pub user_metadata: Option<u32>,
    /// `frames`: list id.
    pub frames: Option<u32>,
}

/// One record's values as the columns keep them: 0 where the dict lacks the key (its shape
/// says which keys it has), so nothing marks presence per value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct RowValues {
    /// `action`: string id.
    pub(crate) action: u32,
    /// `addr`.
    pub(crate) addr: u64,
    /// `size`.
    pub(crate) size_bytes: u64,
    /// `stream`.
    pub(crate) stream: i64,
    /// `time_us`.
    pub(crate) time_us: i64,
    /// `compile_context`: string id.
    pub(crate) compile_context: u32,
    /// `user_metadata`: string id.
    pub(crate) user_metadata: u32,
    /// `frames`: list id.
    pub(crate) frames: u32,
}

/// Consecutive rows of records: a trace as the reader stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRun {
    /// The first row.
    pub first_row: u32,
    /// Number of rows.
    pub len: u32,
}

/// A field of a trace record, named outside the reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordField(Field);

impl RecordField {
    /// `time_us`.
    pub const TIME_US: RecordField = RecordField(Field::TimeUs);
    /// `stream`.
    pub const STREAM: RecordField = RecordField(Field::Stream);
    /// `frames`.
    pub const FRAMES: RecordField = RecordField(Field::Frames);
    /// `compile_context`.
    pub const COMPILE_CONTEXT: RecordField = RecordField(Field::CompileContext);
    /// `user_metadata`.
    pub const USER_METADATA: RecordField = RecordField(Field::UserMetadata);
}

/// The columns of a [`RecordRun`], one slice per field (fields a row lacks hold 0 there).
#[derive(Clone, Copy, Debug)]
pub struct RecordColumns<'a> {
    /// The shape of each row.
    shape: Col<'a, u32>,
    /// The presence mask of each shape.
    shape_masks: &'a [u8],
    /// `action` string ids.
    pub action: &'a [u32],
    /// `addr`.
    pub addr: &'a [u64],
    /// `size`.
    pub size_bytes: &'a [u64],
    /// `stream`.
    pub stream: Col<'a, i64>,
    /// `time_us`.
    pub time_us: &'a [i64],
    /// `compile_context` string ids.
    pub compile_context: Col<'a, u32>,
    /// `user_metadata` string ids.
    pub user_metadata: Col<'a, u32>,
    /// `frames` list ids.
    pub frames: &'a [u32],
}

impl RecordColumns<'_> {
    /// The presence mask of row `k` of the run (see [`RecordColumns::has`]).
    #[inline]
    pub fn mask(&self, k: usize) -> u8 {
        self.shape.get(k).and_then(|s| self.shape_masks.get(s as usize)).copied().unwrap_or(0)
    }

    /// Whether every row of the run has one shape (so one presence mask), one `user_metadata`
    /// and one `compile_context`.
    pub fn one_shape_and_strings(&self) -> bool {
        matches!(
            (&self.shape, &self.user_metadata, &self.compile_context),
            (Col::Same(..), Col::Same(..), Col::Same(..))
        )
    }

    /// The `stream` of every row, when the column holds one value.
    pub fn one_stream(&self) -> Option<i64> {
        match self.stream {
            Col::Same(raw, _) => Some(raw),
            Col::Rows(_) => None,
        }
    }

    /// Whether a presence mask has `field`.
    #[inline]
    pub fn has(mask: u8, field: RecordField) -> bool {
        mask & field.0.bit() != 0
    }
}

/// The 64-bit columns of a [`RecordRun`], owned.
#[derive(Debug, Default)]
pub struct WideColumns {
    /// `addr`.
    pub addr: Vec<u64>,
    /// `size`.
    pub size_bytes: Vec<u64>,
    /// `time_us`.
    pub time_us: Vec<i64>,
}

impl WideColumns {
    /// Columns of `n` zeros.
    pub fn zeros(n: usize) -> Self {
        WideColumns { addr: vec![0; n], size_bytes: vec![0; n], time_us: vec![0; n] }
    }
}

/// Marks a row's shape slot as holding the index of the generic dict the row became (when a
/// record is given more items after it was made).
const MOVED_BIT: u32 = 1 << 31;

/// Rows of trace records; absent fields hold 0 and are known absent from the row's shape.
#[derive(Default, Debug)]
pub(crate) struct RecordTable {
    /// The shape of each row, or `MOVED_BIT | generic dict index`.
    shape: SameColumn<u32>,
    action: Vec<u32>,
    addr: Vec<u64>,
    size_bytes: Vec<u64>,
    stream: SameColumn<i64>,
    time_us: Vec<i64>,
    compile_context: SameColumn<u32>,
    user_metadata: SameColumn<u32>,
    frames: Vec<u32>,
}

impl RecordTable {
    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.shape.len()
    }

    /// Rows there is room for without growing.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.action.capacity()
    }

    /// Makes room for `rows` more rows.
    pub(crate) fn reserve(&mut self, rows: usize) {
        self.shape.reserve(rows);
        self.action.reserve(rows);
        self.addr.reserve(rows);
        self.size_bytes.reserve(rows);
        self.stream.reserve(rows);
        self.time_us.reserve(rows);
        self.compile_context.reserve(rows);
        self.user_metadata.reserve(rows);
        self.frames.reserve(rows);
    }

    /// Appends the values of a dict laid out as `fields` (values at the odd positions of `pairs`);
    /// returns the row, or `None` (and appends nothing) when a value has another type.
    pub(crate) fn push(&mut self, shape: u32, fields: &[Field], pairs: &[Value]) -> Option<u32> {
        let mut row = RowValues::default();
        for (&f, kv) in fields.iter().zip(pairs.chunks_exact(2)) {
            let v = kv[1];
            match (f, v) {
                (Field::Action, Value::Str(s)) => row.action = s,
                (Field::CompileContext, Value::Str(s)) => row.compile_context = s,
                (Field::UserMetadata, Value::Str(s)) => row.user_metadata = s,
                (Field::Frames, Value::List(l)) => row.frames = l,
                (Field::Stream, Value::Int(i)) => row.stream = i,
                (Field::TimeUs, Value::Int(i)) => row.time_us = i,
                (Field::Addr, _) => row.addr = unsigned_of(v)?,
                (Field::Size, _) => row.size_bytes = unsigned_of(v)?,
                _ => return None,
            }
        }
        self.push_record(shape, &row)
    }

    /// Appends a record of shape `shape`; its row.
    #[inline(always)]
    pub(crate) fn push_record(&mut self, shape: u32, row: &RowValues) -> Option<u32> {
        let r = u32::try_from(self.shape.len()).ok()?;
        if shape & MOVED_BIT != 0 {
            return None;
        }
        self.shape.push(shape);
        self.action.push(row.action);
        self.addr.push(row.addr);
        self.size_bytes.push(row.size_bytes);
        self.stream.push(row.stream);
        self.time_us.push(row.time_us);
        self.compile_context.push(row.compile_context);
        self.user_metadata.push(row.user_metadata);
        self.frames.push(row.frames);
        Some(r)
    }

    /// The shape of a row (`None` once the row became a generic dict).
    #[inline]
    pub(crate) fn shape(&self, row: u32) -> Option<u32> {
        self.shape.get(row as usize).filter(|s| s & MOVED_BIT == 0)
    }

    /// The generic dict a row became, if it did.
    #[inline]
    pub(crate) fn moved_to(&self, row: u32) -> Option<u32> {
        self.shape.get(row as usize).filter(|s| s & MOVED_BIT != 0).map(|s| s & !MOVED_BIT)
    }

    /// Records that a row became generic dict `g`.
    pub(crate) fn set_moved(&mut self, row: u32, g: u32) {
        self.shape.set(row as usize, MOVED_BIT | g);
    }

    /// The rows `first..first + len` when they exist and none became a generic dict.
    pub(crate) fn run(&self, first: u32, len: u32) -> Option<RecordRun> {
        let rows = first as usize..(first as usize).checked_add(len as usize)?;
        let shapes = self.shape.slice(rows)?;
        shapes.all(|s| s & MOVED_BIT == 0).then_some(RecordRun { first_row: first, len })
    }

    /// The columns of a run; `shape_masks` holds the presence mask of each shape.
    pub(crate) fn columns<'a>(&'a self, run: RecordRun, shape_masks: &'a [u8]) -> Option<RecordColumns<'a>> {
        let rows = run.first_row as usize..run.first_row as usize + run.len as usize;
        Some(RecordColumns {
            shape: self.shape.slice(rows.clone())?,
            shape_masks,
            action: self.action.get(rows.clone())?,
            addr: self.addr.get(rows.clone())?,
            size_bytes: self.size_bytes.get(rows.clone())?,
            stream: self.stream.slice(rows.clone())?,
            time_us: self.time_us.get(rows.clone())?,
            compile_context: self.compile_context.slice(rows.clone())?,
            user_metadata: self.user_metadata.slice(rows.clone())?,
            frames: self.frames.get(rows)?,
        })
    }

    /// The `addr`, `size` and `time_us` columns of a run, moved out when the run is every row
    /// (the table's columns are left empty) and copied otherwise.
    pub(crate) fn take_wide_columns(&mut self, run: RecordRun) -> Option<WideColumns> {
        let rows = run.first_row as usize..run.first_row as usize + run.len as usize;
        if rows.start == 0 && rows.end == self.shape.len() {
            // The columns may have been reserved for more rows than came.
            fn take_exact<T>(col: &mut Vec<T>) -> Vec<T> {
                let mut col = std::mem::take(col);
                col.shrink_to_fit();
                col
            }
            return Some(WideColumns {
                addr: take_exact(&mut self.addr),
                size_bytes: take_exact(&mut self.size_bytes),
                time_us: take_exact(&mut self.time_us),
            });
        }
        Some(WideColumns {
            addr: self.addr.get(rows.clone())?.to_vec(),
            size_bytes: self.size_bytes.get(rows.clone())?.to_vec(),
            time_us: self.time_us.get(rows)?.to_vec(),
        })
    }

    /// The value of one field of a row.
    pub(crate) fn value(&self, row: u32, field: Field) -> Value {
        let r = row as usize;
        let str_at = |s: Option<u32>| s.map_or(Value::None, Value::Str);
        match field {
            Field::Action => str_at(self.action.get(r).copied()),
            Field::CompileContext => str_at(self.compile_context.get(r)),
            Field::UserMetadata => str_at(self.user_metadata.get(r)),
            Field::Frames => self.frames.get(r).map_or(Value::None, |&l| Value::List(l)),
            Field::Addr => self.addr.get(r).map_or(Value::None, |&x| value_of_unsigned(x)),
            Field::Size => self.size_bytes.get(r).map_or(Value::None, |&x| value_of_unsigned(x)),
            Field::Stream => self.stream.get(r).map_or(Value::None, Value::Int),
            Field::TimeUs => self.time_us.get(r).map_or(Value::None, |&x| Value::Int(x)),
        }
    }

    /// All fields of a row, given the presence mask of its shape ([`Field::mask`]).
    #[inline]
    pub(crate) fn record(&self, row: u32, mask: u8) -> TraceRecord {
        let r = row as usize;
        let has = |f: Field| mask & f.bit() != 0;
        TraceRecord {
            action: self.action.get(r).copied().filter(|_| has(Field::Action)),
            addr: self.addr.get(r).copied().filter(|_| has(Field::Addr)),
            size_bytes: self.size_bytes.get(r).copied().filter(|_| has(Field::Size)),
            stream: self.stream.get(r).filter(|_| has(Field::Stream)),
            time_us: self.time_us.get(r).copied().filter(|_| has(Field::TimeUs)),
            compile_context: self.compile_context.get(r).filter(|_| has(Field::CompileContext)),
            user_metadata: self.user_metadata.get(r).filter(|_| has(Field::UserMetadata)),
            frames: self.frames.get(r).copied().filter(|_| has(Field::Frames)),
        }
    }

    /// Approximate heap bytes (a column of one value counted as if it held every row).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.shape.counted_bytes()
            + self.action.capacity() * 4
            + self.addr.capacity() * 8
            + self.size_bytes.capacity() * 8
            + self.stream.counted_bytes()
            + self.time_us.capacity() * 8
            + self.compile_context.counted_bytes()
            + self.user_metadata.counted_bytes()
            + self.frames.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let fields = [Field::Action, Field::Addr, Field::Size, Field::Stream, Field::TimeUs, Field::Frames];
        let pairs = [
            Value::Str(1),
            Value::Str(2),
            Value::Str(3),
            Value::UInt(1 << 63),
            Value::Str(4),
            Value::Int(512),
            Value::Str(5),
            Value::Int(-7),
            Value::Str(6),
            Value::Int(1_700_000_000_000_000),
            Value::Str(7),
            Value::List(9),
        ];
        let mut t = RecordTable::default();
        let row = t.push(3, &fields, &pairs).expect("a record");
        for (&f, kv) in fields.iter().zip(pairs.chunks_exact(2)) {
            assert_eq!(t.value(row, f), kv[1]);
        }
        assert_eq!(t.shape(row), Some(3));
        assert_eq!(t.record(row, Field::mask(&fields)).addr, Some(1 << 63));
        assert_eq!(t.record(row, Field::mask(&fields)).user_metadata, None);
    }

    #[test]
    fn columns_of_one_value_read_back_until_and_after_a_row_differs() {
        let fields = [Field::Action, Field::Stream, Field::CompileContext, Field::UserMetadata];
        let mask = Field::mask(&fields);
        let mut t = RecordTable::default();
        t.reserve(8);
        let row = |t: &mut RecordTable, stream: i64, cc: u32| {
            let pairs = [Value::Str(0), Value::Str(1), Value::Str(2), Value::Int(stream)];
            let pairs = [&pairs[..], &[Value::Str(3), Value::Str(cc), Value::Str(4), Value::Str(5)]].concat();
            t.push(1, &fields, &pairs).expect("a record")
        };
        for _ in 0..3 {
            row(&mut t, 0, 7);
        }
        assert_eq!(t.stream.heap_bytes() + t.compile_context.heap_bytes(), 0, "one value a column takes no room");
        assert_eq!(t.heap_bytes(), 8 * (4 + 8 + 8 + 8 + 4) + 3 * (4 + 8 + 4 + 4), "counted as if held");
        row(&mut t, 94_000_000_000_123, 7);
        row(&mut t, 0, 8);
        let streams: Vec<_> = (0..5).map(|r| t.record(r, mask).stream).collect();
        assert_eq!(streams, [Some(0), Some(0), Some(0), Some(94_000_000_000_123), Some(0)]);
        assert_eq!(t.value(4, Field::CompileContext), Value::Str(8));
        assert_eq!(t.value(0, Field::CompileContext), Value::Str(7));
        assert_eq!(t.value(2, Field::UserMetadata), Value::Str(5));
        let run = t.run(0, 5).expect("a run");
        let masks = [0, mask];
        let cols = t.columns(run, &masks).expect("columns");
        assert_eq!(
            (cols.stream.get(3), cols.compile_context.get(4), cols.mask(2)),
            (Some(94_000_000_000_123), Some(8), mask)
        );
        t.set_moved(1, 9);
        assert_eq!((t.shape(0), t.shape(1), t.moved_to(1)), (Some(1), None, Some(9)));
        assert!(t.run(0, 5).is_none() && t.run(2, 3).is_some());
    }

    #[test]
    fn odd_types_are_refused() {
        let mut t = RecordTable::default();
        assert_eq!(t.push(0, &[Field::Addr], &[Value::Str(0), Value::Int(-1)]), None);
        assert_eq!(t.push(0, &[Field::Addr], &[Value::Str(0), Value::UInt(5)]), None);
        assert_eq!(t.push(0, &[Field::Action], &[Value::Str(0), Value::Int(1)]), None);
        assert_eq!(t.len(), 0);
    }
}
