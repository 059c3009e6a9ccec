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
//! read in one go; trace entries become rows of typed columns (`records`) that the model reads
//! without decoding values again; and once one entry has been read, the next ones are matched
//! against its key bytes (`entry_template`), so only their values are decoded. Every fast path
//! has the same effects as the general one and hands over to it on anything unexpected.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use crate::error::Error;

mod entry_template;
mod records;

use entry_template::{EntryTemplate, InlineMemo, KeyCode};

pub use records::TraceRecord;
use records::{Field, RecordTable};
pub(crate) use records::{RecordColumns, RecordField, RecordRun, WideColumns};

/// A decoded value. Containers and strings are indices into the owning [`Document`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// Python `None`.
    None,
    /// Python `bool`.
    Bool(bool),
    /// A Python `int` that fits in `i64`.
    Int(i64),
    /// A Python `int` in `i64::MAX+1 ..= u64::MAX` (pointers at or above 2^63).
    UInt(u64),
    /// A larger Python `int`: index into [`Document::bigints`] (little-endian two's complement).
    BigInt(u32),
    /// Python `float`.
    Float(f64),
    /// Python `str`: index into the interned string table.
    Str(u32),
    /// Python `bytes` or `bytearray`: index into the byte-string table.
    Bytes(u32),
    /// Python `list`.
    List(u32),
    /// Python `tuple`.
    Tuple(u32),
    /// Python `dict`.
    Dict(u32),
    /// Python `set`.
    Set(u32),
    /// Python `frozenset`.
    FrozenSet(u32),
}

const MEMO_OTHER: u8 = 255;
/// The memo tag of a dict.
const MEMO_DICT: u8 = 3;

impl Value {
    fn hash_bits<H: Hasher>(&self, h: &mut H) {
        match *self {
            Value::None => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Int(i) => (2u8, i).hash(h),
            Value::UInt(u) => (3u8, u).hash(h),
            Value::Float(f) => (4u8, f.to_bits()).hash(h),
            Value::Str(s) => (5u8, s).hash(h),
            Value::BigInt(i)
            | Value::Bytes(i)
            | Value::List(i)
            | Value::Tuple(i)
            | Value::Dict(i)
            | Value::Set(i)
            | Value::FrozenSet(i) => (6u8, i).hash(h),
        }
    }
}
const TAG_NONE: u8 = 0;
const TAG_BOOL: u8 = 1;
const TAG_INT: u8 = 2;
const TAG_UINT: u8 = 3;
const TAG_BIGINT: u8 = 4;
const TAG_FLOAT: u8 = 5;
const TAG_STR: u8 = 6;
const TAG_BYTES: u8 = 7;
const TAG_LIST: u8 = 8;
const TAG_TUPLE: u8 = 9;
const TAG_DICT: u8 = 10;
const TAG_SET: u8 = 11;
const TAG_FROZENSET: u8 = 12;

/// Values packed by width: a tag byte each, 32-bit payloads (ids, small ints) in one column and
/// 64-bit payloads (addresses, times, floats) in another; a prefix count every 16 values keeps
/// random access O(16). About 5 bytes a value for snapshot records instead of 16.
#[derive(Default, Debug)]
struct Packed {
    tags: Vec<u8>,
    w32: Vec<u32>,
    w64: Vec<u64>,
    block_w32: Vec<u32>,
    block_w64: Vec<u32>,
}

const TAG_BOOL_TRUE: u8 = 13;
const TAG_INT32: u8 = 14;
const PACK_BLOCK: usize = 16;

/// 0: no payload, 1: 32-bit, 2: 64-bit.
fn tag_width(t: u8) -> u8 {
    match t {
        TAG_NONE | TAG_BOOL | TAG_BOOL_TRUE => 0,
        TAG_INT | TAG_UINT | TAG_FLOAT => 2,
        _ => 1,
    }
}

impl Packed {
    fn push(&mut self, v: Value) {
        if self.tags.len() % PACK_BLOCK == 0 {
            self.block_w32.push(self.w32.len() as u32);
            self.block_w64.push(self.w64.len() as u32);
        }
        let (t, p): (u8, u64) = match v {
            Value::None => (TAG_NONE, 0),
            Value::Bool(false) => (TAG_BOOL, 0),
            Value::Bool(true) => (TAG_BOOL_TRUE, 0),
            Value::Int(i) => match i32::try_from(i) {
                Ok(small) => (TAG_INT32, u64::from(small as u32)),
                Err(_) => (TAG_INT, i as u64),
            },
            Value::UInt(u) => (TAG_UINT, u),
            Value::BigInt(i) => (TAG_BIGINT, u64::from(i)),
            Value::Float(f) => (TAG_FLOAT, f.to_bits()),
            Value::Str(i) => (TAG_STR, u64::from(i)),
            Value::Bytes(i) => (TAG_BYTES, u64::from(i)),
            Value::List(i) => (TAG_LIST, u64::from(i)),
            Value::Tuple(i) => (TAG_TUPLE, u64::from(i)),
            Value::Dict(i) => (TAG_DICT, u64::from(i)),
            Value::Set(i) => (TAG_SET, u64::from(i)),
            Value::FrozenSet(i) => (TAG_FROZENSET, u64::from(i)),
        };
        self.tags.push(t);
        match tag_width(t) {
            1 => self.w32.push(p as u32),
            2 => self.w64.push(p),
            _ => {}
        }
    }

    fn get(&self, i: usize) -> Value {
        let Some(&t) = self.tags.get(i) else {
            return Value::None;
        };
        let b = i / PACK_BLOCK;
        let (mut n32, mut n64) = (
            self.block_w32.get(b).copied().unwrap_or(0) as usize,
            self.block_w64.get(b).copied().unwrap_or(0) as usize,
        );
        for &bt in self.tags.get(b * PACK_BLOCK..i).unwrap_or(&[]) {
            match tag_width(bt) {
                1 => n32 += 1,
                2 => n64 += 1,
                _ => {}
            }
        }
        let p32 = || self.w32.get(n32).copied().unwrap_or(0);
        let p64 = || self.w64.get(n64).copied().unwrap_or(0);
        match t {
            TAG_BOOL => Value::Bool(false),
            TAG_BOOL_TRUE => Value::Bool(true),
            TAG_INT32 => Value::Int(i64::from(p32() as i32)),
            TAG_INT => Value::Int(p64() as i64),
            TAG_UINT => Value::UInt(p64()),
            TAG_FLOAT => Value::Float(f64::from_bits(p64())),
            TAG_BIGINT => Value::BigInt(p32()),
            TAG_STR => Value::Str(p32()),
            TAG_BYTES => Value::Bytes(p32()),
            TAG_LIST => Value::List(p32()),
            TAG_TUPLE => Value::Tuple(p32()),
            TAG_DICT => Value::Dict(p32()),
            TAG_SET => Value::Set(p32()),
            TAG_FROZENSET => Value::FrozenSet(p32()),
            _ => Value::None,
        }
    }

    /// Appends values `start..start+n`, decoding sequentially.
    fn get_run(&self, start: usize, n: usize, out: &mut Vec<Value>) {
        if n == 0 {
            return;
        }
        let b = start / PACK_BLOCK;
        let (mut n32, mut n64) = (
            self.block_w32.get(b).copied().unwrap_or(0) as usize,
            self.block_w64.get(b).copied().unwrap_or(0) as usize,
        );
        for &bt in self.tags.get(b * PACK_BLOCK..start).unwrap_or(&[]) {
            match tag_width(bt) {
                1 => n32 += 1,
                2 => n64 += 1,
                _ => {}
            }
        }
        for &t in self.tags.get(start..start + n).unwrap_or(&[]) {
            let p32 = self.w32.get(n32).copied().unwrap_or(0);
            let p64 = self.w64.get(n64).copied().unwrap_or(0);
            match tag_width(t) {
                1 => n32 += 1,
                2 => n64 += 1,
                _ => {}
            }
            out.push(match t {
                TAG_BOOL => Value::Bool(false),
                TAG_BOOL_TRUE => Value::Bool(true),
                TAG_INT32 => Value::Int(i64::from(p32 as i32)),
                TAG_INT => Value::Int(p64 as i64),
                TAG_UINT => Value::UInt(p64),
                TAG_FLOAT => Value::Float(f64::from_bits(p64)),
                TAG_BIGINT => Value::BigInt(p32),
                TAG_STR => Value::Str(p32),
                TAG_BYTES => Value::Bytes(p32),
                TAG_LIST => Value::List(p32),
                TAG_TUPLE => Value::Tuple(p32),
                TAG_DICT => Value::Dict(p32),
                TAG_SET => Value::Set(p32),
                TAG_FROZENSET => Value::FrozenSet(p32),
                _ => Value::None,
            });
        }
    }

    fn len(&self) -> usize {
        self.tags.len()
    }

    fn heap_bytes(&self) -> usize {
        self.tags.capacity()
            + self.w32.capacity() * 4
            + self.w64.capacity() * 8
            + self.block_w32.capacity() * 8
    }
}

/// A list's items: lists of dicts only (frame lists, traces) take 4 bytes an item.
#[derive(Debug, Clone)]
enum ListStore {
    Dicts(Vec<u32>),
    Values(Vec<Value>),
    /// Dicts only, held in `Document::list_items[start..start + len]`: frame lists read whole by
    /// the entry template. Lists with equal items share one span.
    Shared {
        start: u32,
        len: u32,
    },
}

impl ListStore {
    /// Appends items (a `Shared` list is given items of its own first, by `Parser::list_extend`).
    fn extend(&mut self, items: &[Value]) {
        if let ListStore::Dicts(ids) = self {
            if items.iter().all(|v| matches!(v, Value::Dict(_))) {
                ids.extend(items.iter().map(|v| match v {
                    Value::Dict(i) => *i,
                    _ => 0,
                }));
                return;
            }
            let vals: Vec<Value> = ids.iter().map(|&i| Value::Dict(i)).collect();
            *self = ListStore::Values(vals);
        }
        if let ListStore::Values(vals) = self {
            vals.extend_from_slice(items);
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            ListStore::Dicts(v) => v.capacity() * 4 + 32,
            ListStore::Values(v) => v.capacity() * 16 + 32,
            // Counted as if the list held its items, as the generic path stores it: the model
            // builder's expansion budget is a share of this.
            ListStore::Shared { len, .. } => *len as usize * 4 + 32,
        }
    }
}

/// The items of a list, tuple or set, as stored.
#[derive(Clone, Copy, Debug)]
pub enum Items<'a> {
    /// Any values.
    Values(&'a [Value]),
    /// Dicts only, by id.
    Dicts(&'a [u32]),
}

impl<'a> Items<'a> {
    /// Number of items.
    pub fn len(&self) -> usize {
        match self {
            Items::Values(v) => v.len(),
            Items::Dicts(v) => v.len(),
        }
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The item at `i`.
    pub fn get(&self, i: usize) -> Option<Value> {
        match self {
            Items::Values(v) => v.get(i).copied(),
            Items::Dicts(v) => v.get(i).map(|&d| Value::Dict(d)),
        }
    }

    /// The first item.
    pub fn first(&self) -> Option<Value> {
        self.get(0)
    }

    /// Whether every item is a dict.
    pub fn all_dicts(&self) -> bool {
        match self {
            Items::Values(v) => v.iter().all(|x| matches!(x, Value::Dict(_))),
            Items::Dicts(_) => true,
        }
    }

    /// The items in order.
    pub fn iter(&self) -> ItemsIter<'a> {
        ItemsIter {
            items: *self,
            pos: 0,
        }
    }

    /// The items collected.
    pub fn to_vec(&self) -> Vec<Value> {
        self.iter().collect()
    }
}

/// Iterator over [`Items`].
pub struct ItemsIter<'a> {
    items: Items<'a>,
    pos: usize,
}

impl Iterator for ItemsIter<'_> {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        let v = self.items.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.items.len().saturating_sub(self.pos);
        (n, Some(n))
    }
}

impl<'a> IntoIterator for Items<'a> {
    type Item = Value;
    type IntoIter = ItemsIter<'a>;

    fn into_iter(self) -> ItemsIter<'a> {
        self.iter()
    }
}

/// How a dict's items are stored.
#[derive(Clone, Copy, Debug)]
enum DictRec {
    /// A dict that has not been given items yet.
    Empty,
    /// String keys given once by a shared shape; values at `start..start+shape.len()` of `dict_vals`.
    Compact { shape: u32, start: u32 },
    /// Anything else: an index into `generic_dicts`.
    Generic(u32),
    /// A trace entry: a row of `records`.
    Record(u32),
}

/// A generic dict: ordered pairs plus, for large dicts, an index for Python's "last write wins".
#[derive(Default, Debug)]
struct GenericDict {
    items: Vec<(Value, Value)>,
    index: Option<HashMap<HashKey, usize>>,
}

/// Keys that compare equal in Python compare equal here (strings are interned by content).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum HashKey {
    Int(i128),
    Str(u32),
    Unique(u32),
}

/// The decoded pickle: the root value and the arenas it points into.
#[derive(Default, Debug)]
pub struct Document {
    root: Option<Value>,
    str_data: String,
    str_spans: Vec<(usize, usize)>,
    str_index: FxHashMap<Box<str>, u32>,
    bytes: Vec<Box<[u8]>>,
    /// Integers too large for 64 bits, little-endian two's complement.
    pub bigints: Vec<Box<[u8]>>,
    lists: Vec<ListStore>,
    /// Items of [`ListStore::Shared`] lists.
    list_items: Vec<u32>,
    /// Spans of `list_items` by a hash of their items, so equal frame lists share one span.
    list_spans: FxHashMap<u64, (u32, u32)>,
    tuple_items: Vec<Value>,
    tuples: Vec<(u32, u32)>,
    shapes: Vec<Box<[u32]>>,
    /// Per shape: the record fields of its keys, when dicts of that shape can be records.
    shape_fields: Vec<Option<Box<[Field]>>>,
    /// Per shape: the presence mask of its record fields (0 when it has none).
    shape_masks: Vec<u8>,
    shape_index: FxHashMap<Box<[u32]>, u32>,
    records: RecordTable,
    dict_vals: Packed,
    dicts: Vec<DictRec>,
    generic_dicts: Vec<GenericDict>,
    sets: Vec<Vec<Value>>,
    /// Count of non-fatal oddities (invalid UTF-8 replaced, duplicate keys, ...), with a sample.
    pub oddities: Vec<String>,
    /// Highest protocol number announced by a PROTO opcode (0 when none).
    pub protocol: u8,
}

impl Document {
    /// The top-level value.
    pub fn root(&self) -> Value {
        self.root.unwrap_or(Value::None)
    }

    /// The text of a string value.
    pub fn str(&self, id: u32) -> &str {
        match self.str_spans.get(id as usize) {
            Some(&(s, e)) => self.str_data.get(s..e).unwrap_or(""),
            None => "",
        }
    }

    /// Number of lists.
    pub fn list_count(&self) -> usize {
        self.lists.len()
    }

    /// Number of dicts.
    pub fn dict_count(&self) -> usize {
        self.dicts.len()
    }

    /// Number of distinct strings.
    pub fn str_count(&self) -> usize {
        self.str_spans.len()
    }

    /// The text of `v` if it is a string.
    pub fn as_str(&self, v: Value) -> Option<&str> {
        match v {
            Value::Str(i) => Some(self.str(i)),
            _ => None,
        }
    }

    /// The bytes of a bytes value.
    pub fn bytes(&self, id: u32) -> &[u8] {
        self.bytes.get(id as usize).map_or(&[], |b| b)
    }

    /// Items of a list, tuple, set or frozenset (empty for anything else).
    pub fn items(&self, v: Value) -> Items<'_> {
        match v {
            Value::List(i) => match self.lists.get(i as usize) {
                Some(ListStore::Dicts(ids)) => Items::Dicts(ids),
                Some(ListStore::Values(vals)) => Items::Values(vals),
                Some(&ListStore::Shared { start, len }) => {
                    Items::Dicts(self.shared_items(start, len))
                }
                None => Items::Values(&[]),
            },
            Value::Tuple(i) => Items::Values(match self.tuples.get(i as usize) {
                Some(&(s, n)) => self
                    .tuple_items
                    .get(s as usize..(s + n) as usize)
                    .unwrap_or(&[]),
                None => &[],
            }),
            Value::Set(i) | Value::FrozenSet(i) => {
                Items::Values(self.sets.get(i as usize).map_or(&[], |l| l.as_slice()))
            }
            _ => Items::Values(&[]),
        }
    }

    /// The items of a shared span.
    fn shared_items(&self, start: u32, len: u32) -> &[u32] {
        let start = start as usize;
        self.list_items
            .get(start..start + len as usize)
            .unwrap_or(&[])
    }

    /// For a list whose items are a shared span, the span (start and length as one number):
    /// lists with the same span hold equal items (a cheap key for interning frame lists).
    pub(crate) fn shared_list_key(&self, list: Value) -> Option<u64> {
        let Value::List(i) = list else { return None };
        match self.lists.get(i as usize) {
            Some(&ListStore::Shared { start, len }) => {
                Some(u64::from(start) << 32 | u64::from(len))
            }
            _ => None,
        }
    }

    /// Adds the items at `list_items[start..]` as a new shared list, reusing an earlier span
    /// with the same items; the list's id.
    fn push_shared_list(&mut self, start: usize) -> u32 {
        let items = self.list_items.get(start..).unwrap_or(&[]);
        let len = items.len() as u32;
        let mut h = FxHasher::default();
        items.hash(&mut h);
        let key = h.finish();
        let span = match self.list_spans.get(&key) {
            Some(&(s, n)) if self.shared_items(s, n) == items => {
                self.list_items.truncate(start);
                (s, n)
            }
            Some(_) => (start as u32, len),
            None => {
                self.list_spans.insert(key, (start as u32, len));
                (start as u32, len)
            }
        };
        self.lists.push(ListStore::Shared {
            start: span.0,
            len: span.1,
        });
        (self.lists.len() - 1) as u32
    }

    /// Number of items of a dict (0 for anything else).
    pub fn dict_len(&self, v: Value) -> usize {
        let Value::Dict(i) = v else { return 0 };
        match self.dict_rec(i).as_ref() {
            Some(DictRec::Compact { shape, .. }) => self.shape_keys(*shape).len(),
            Some(DictRec::Record(row)) => self
                .records
                .shape(*row)
                .map_or(0, |s| self.shape_keys(s).len()),
            Some(DictRec::Generic(g)) => self
                .generic_dicts
                .get(*g as usize)
                .map_or(0, |d| d.items.len()),
            Some(DictRec::Empty) | None => 0,
        }
    }

    /// The (key, value) pairs of a dict in insertion order.
    pub fn dict_iter(&self, v: Value) -> DictIter<'_> {
        let rec = match v {
            Value::Dict(i) => self.dict_rec(i),
            _ => None,
        };
        DictIter {
            doc: self,
            rec,
            pos: 0,
        }
    }

    /// Looks up a string key in a dict. Linear in the dict's size, which is small for snapshot records.
    pub fn get(&self, dict: Value, key: &str) -> Option<Value> {
        let Value::Dict(i) = dict else { return None };
        match &self.dict_rec(i)? {
            DictRec::Compact { shape, start } => {
                let keys = self.shapes.get(*shape as usize)?;
                let pos = keys.iter().position(|&k| self.str(k) == key)?;
                Some(self.dict_vals.get(*start as usize + pos))
            }
            DictRec::Record(row) => {
                let keys = self.shape_keys(self.records.shape(*row)?);
                let pos = keys.iter().position(|&k| self.str(k) == key)?;
                self.record_value(*row, pos)
            }
            DictRec::Generic(g) => {
                let d = self.generic_dicts.get(*g as usize)?;
                d.items
                    .iter()
                    .find(|(k, _)| self.as_str(*k) == Some(key))
                    .map(|(_, v)| *v)
            }
            DictRec::Empty => None,
        }
    }

    /// The shape id of a compact dict (dicts with the same string keys in the same order share it).
    pub fn dict_shape(&self, dict: Value) -> Option<u32> {
        let Value::Dict(i) = dict else { return None };
        match &self.dict_rec(i)? {
            DictRec::Compact { shape, .. } => Some(*shape),
            DictRec::Record(row) => self.records.shape(*row),
            DictRec::Generic(_) | DictRec::Empty => None,
        }
    }

    /// The key string ids of a shape.
    pub fn shape_keys(&self, shape: u32) -> &[u32] {
        self.shapes.get(shape as usize).map_or(&[], |s| s)
    }

    /// Appends all values of a compact dict, in key order, decoding them in one pass.
    pub fn compact_values(&self, dict: Value, out: &mut Vec<Value>) {
        let Value::Dict(i) = dict else { return };
        match self.dict_rec(i).as_ref() {
            Some(DictRec::Compact { shape, start }) => {
                let n = self.shapes.get(*shape as usize).map_or(0, |s| s.len());
                self.dict_vals.get_run(*start as usize, n, out);
            }
            Some(DictRec::Record(row)) => {
                let n = self.dict_len(dict);
                out.extend((0..n).filter_map(|pos| self.record_value(*row, pos)));
            }
            _ => {}
        }
    }

    /// The fields of a trace entry kept as a record (`None` for any other value).
    pub fn trace_record(&self, dict: Value) -> Option<TraceRecord> {
        let Value::Dict(i) = dict else { return None };
        let DictRec::Record(row) = self.dict_rec(i)? else {
            return None;
        };
        let mask = *self.shape_masks.get(self.records.shape(row)? as usize)?;
        Some(self.records.record(row, mask))
    }

    /// When the items of `list` are trace records of one shape in consecutive rows (a trace as
    /// this reader stores it), those rows.
    pub(crate) fn record_run(&self, list: Value) -> Option<RecordRun> {
        let Items::Dicts(ids) = self.items(list) else {
            return None;
        };
        let first_row = self.record_row_of(*ids.first()?)?;
        let consecutive = ids
            .iter()
            .zip(first_row..)
            .all(|(&id, want)| id == RECORD_BIT | want || self.record_row_of(id) == Some(want));
        if !consecutive {
            return None;
        }
        self.records.run(first_row, u32::try_from(ids.len()).ok()?)
    }

    /// The record row of dict `id`, if it is kept as a record.
    fn record_row_of(&self, id: u32) -> Option<u32> {
        match self.dict_rec(id)? {
            DictRec::Record(row) => Some(row),
            _ => None,
        }
    }

    /// The columns of a run of records.
    pub(crate) fn record_columns(&self, run: RecordRun) -> Option<RecordColumns<'_>> {
        self.records.columns(run, &self.shape_masks)
    }

    /// The 64-bit columns of a run of records, moved out of the document when the run holds
    /// every record (the document then reads those fields as absent) and copied otherwise.
    pub(crate) fn take_record_columns(&mut self, run: RecordRun) -> Option<WideColumns> {
        self.records.take_wide_columns(run)
    }

    /// How dict `id` is stored. Ids with [`RECORD_BIT`] set name record rows directly.
    #[inline]
    fn dict_rec(&self, id: u32) -> Option<DictRec> {
        if id & RECORD_BIT == 0 {
            return self.dicts.get(id as usize).copied();
        }
        let row = id & !RECORD_BIT;
        match self.records.moved_to(row) {
            Some(g) => Some(DictRec::Generic(g)),
            None => self.records.shape(row).map(|_| DictRec::Record(row)),
        }
    }

    /// Stores dict `id` as generic dict `g`.
    fn set_generic(&mut self, id: u32, g: u32) {
        if id & RECORD_BIT == 0 {
            if let Some(r) = self.dicts.get_mut(id as usize) {
                *r = DictRec::Generic(g);
            }
        } else {
            self.records.set_moved(id & !RECORD_BIT, g);
        }
    }

    /// The value at key position `pos` of record `row`.
    fn record_value(&self, row: u32, pos: usize) -> Option<Value> {
        let fields = self
            .shape_fields
            .get(self.records.shape(row)? as usize)?
            .as_deref()?;
        Some(self.records.value(row, *fields.get(pos)?))
    }

    /// The pairs of a dict, in order.
    fn dict_pairs(&self, dict: Value) -> Vec<(Value, Value)> {
        self.dict_iter(dict).collect()
    }

    /// The value at position `pos` of a compact dict (the shape's `pos`-th key).
    pub fn compact_value(&self, dict: Value, pos: usize) -> Option<Value> {
        let Value::Dict(i) = dict else { return None };
        match &self.dict_rec(i)? {
            DictRec::Compact { start, .. } => Some(self.dict_vals.get(*start as usize + pos)),
            DictRec::Record(row) => self.record_value(*row, pos),
            DictRec::Generic(_) | DictRec::Empty => None,
        }
    }

    /// Python's type name of a value with an article, for error messages ("an int", "a str").
    pub fn type_name(v: Value) -> &'static str {
        match v {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::UInt(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Dict(_) => "dict",
            Value::Set(_) => "set",
            Value::FrozenSet(_) => "frozenset",
        }
    }

    /// [`Document::type_name`] with "a"/"an" in front.
    pub fn a_type_name(v: Value) -> String {
        let n = Self::type_name(v);
        match n {
            "None" => "None".into(),
            "int" => "an int".into(),
            _ => format!("a {n}"),
        }
    }

    /// Approximate heap bytes held by the arenas (lists that share items counted whole).
    pub fn heap_bytes(&self) -> usize {
        self.str_data.capacity()
            + self.str_spans.capacity() * 16
            + self.lists.iter().map(ListStore::heap_bytes).sum::<usize>()
            + self.tuple_items.capacity() * 16
            + self.dict_vals.heap_bytes()
            + self.dicts.capacity() * 12
            + self.records.heap_bytes()
    }

    fn intern_str(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.str_index.get(s) {
            return id;
        }
        let id = self.str_spans.len() as u32;
        let start = self.str_data.len();
        self.str_data.push_str(s);
        self.str_spans.push((start, self.str_data.len()));
        self.str_index.insert(s.into(), id);
        id
    }

    fn hash_key(&self, v: Value, unique: u32) -> HashKey {
        match v {
            Value::Int(i) => HashKey::Int(i128::from(i)),
            Value::UInt(u) => HashKey::Int(i128::from(u)),
            Value::Bool(b) => HashKey::Int(i128::from(b)),
            Value::Str(s) => HashKey::Str(s),
            _ => HashKey::Unique(unique),
        }
    }
}

/// Iterator over a dict's pairs.
pub struct DictIter<'a> {
    doc: &'a Document,
    rec: Option<DictRec>,
    pos: usize,
}

impl Iterator for DictIter<'_> {
    type Item = (Value, Value);

    fn next(&mut self) -> Option<(Value, Value)> {
        let r = match self.rec? {
            DictRec::Compact { shape, start } => {
                let keys = self.doc.shapes.get(shape as usize)?;
                let k = *keys.get(self.pos)?;
                (
                    Value::Str(k),
                    self.doc.dict_vals.get(start as usize + self.pos),
                )
            }
            DictRec::Record(row) => {
                let keys = self.doc.shape_keys(self.doc.records.shape(row)?);
                (
                    Value::Str(*keys.get(self.pos)?),
                    self.doc.record_value(row, self.pos)?,
                )
            }
            DictRec::Generic(g) => *self
                .doc
                .generic_dicts
                .get(g as usize)?
                .items
                .get(self.pos)?,
            DictRec::Empty => return None,
        };
        self.pos += 1;
        Some(r)
    }
}

/// Parses a whole pickle held in memory.
pub fn parse(bytes: &[u8]) -> Result<Document, Error> {
    let mut p = Parser::new();
    p.set_total_len(bytes.len() as u64);
    p.feed(bytes)?;
    p.finish()
}

/// Opcodes that would import or call code, or that need objects this reader never builds.
fn forbidden_name(op: u8) -> Option<&'static str> {
    Some(match op {
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        b'b' => "BUILD",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        b'i' => "INST",
        b'o' => "OBJ",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        0x97 => "NEXT_BUFFER",
        _ => return None,
    })
}

/// Why an opcode could not run yet.
enum Step {
    /// Done; `n` bytes consumed.
    Done(usize),
    /// Need more input; `what` describes what is incomplete, `declared` its length when known.
    More {
        what: &'static str,
        declared: Option<u64>,
    },
    /// STOP reached after `n` bytes.
    Stop(usize),
}

/// Most pairs a dict may have for [`Parser::flat_dict`]; larger dicts take the generic path.
const FLAT_DICT_MAX_PAIRS: usize = 16;

/// Bytes of the next chunk joined to an opcode cut at a chunk boundary before the chunk itself is
/// decoded in place (longer opcodes are joined whole).
const BRIDGE_BYTES: usize = 4096;

/// Dict ids with this bit set are trace records made straight from the bytes: the other bits are
/// the record's row, and the dict has no slot of its own. Plain dict ids stay below it.
const RECORD_BIT: u32 = 1 << 31;

/// A resumable pickle decoder.
pub struct Parser {
    doc: Document,
    stack: Vec<Value>,
    marks: Vec<usize>,
    /// Memo slots packed as (tag, id): values the pickler memoizes are strings and containers,
    /// all held by u32 ids. Tag 0 = unset, `MEMO_OTHER` = look in `memo_other`.
    memo_tags: Vec<u8>,
    memo_ids: Vec<u32>,
    memo_other: FxHashMap<u64, Value>,
    memo_sparse: FxHashMap<u64, Value>,
    memo_writes: u64,
    /// Bytes of an incomplete opcode carried over between chunks.
    pending: Vec<u8>,
    consumed: u64,
    total_len: Option<u64>,
    stopped: bool,
    trailing: u64,
    unique: u32,
    /// Reused buffer for items popped off the stack.
    scratch: Vec<Value>,
    /// Last shape used, to skip hashing for runs of same-shaped dicts.
    last_shape: u32,
    /// Leaf dicts (string keys, scalar values) by content hash, for deduplication.
    leaf_index: FxHashMap<u64, u32>,
    /// The most recently created dict, while it may still be deduplicated: (dict id, memo slot
    /// that holds it, whether it escaped through DUP/GET or a second memo write).
    fresh: Option<(u32, Option<u64>, bool)>,
    /// How trace entries are written, once one has been read (see [`entry_template`]).
    entry_template: Option<EntryTemplate>,
    /// Whether room for the trace entries has been made (once, at the first template).
    entries_reserved: bool,
    /// Memo writes that did not simply append a slot (a template made before one is retired).
    memo_rebinds: u64,
    /// The string last read inline by a fast path, to skip hashing repeats of it.
    last_inline_str: Option<u32>,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

impl Parser {
    /// A parser with no input yet.
    pub fn new() -> Self {
        Parser {
            doc: Document::default(),
            stack: Vec::new(),
            marks: Vec::new(),
            memo_tags: Vec::new(),
            memo_ids: Vec::new(),
            memo_other: FxHashMap::default(),
            memo_sparse: FxHashMap::default(),
            memo_writes: 0,
            pending: Vec::new(),
            consumed: 0,
            total_len: None,
            stopped: false,
            trailing: 0,
            unique: 0,
            scratch: Vec::new(),
            last_shape: u32::MAX,
            entries_reserved: false,
            leaf_index: FxHashMap::default(),
            entry_template: None,
            memo_rebinds: 0,
            last_inline_str: None,
            fresh: None,
        }
    }

    /// Declares the total input length, so impossible declared lengths fail at once.
    pub fn set_total_len(&mut self, n: u64) {
        self.total_len = Some(n);
    }

    /// Bytes fully decoded so far.
    pub fn consumed_bytes(&self) -> u64 {
        self.consumed
    }

    /// Whether STOP has been seen.
    pub fn is_done(&self) -> bool {
        self.stopped
    }

    /// Feeds the next chunk of input.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Error> {
        if self.stopped {
            self.trailing += chunk.len() as u64;
            return Ok(());
        }
        if self.pending.is_empty() {
            let used = self.run(chunk)?;
            if !self.stopped {
                self.pending
                    .extend_from_slice(chunk.get(used..).unwrap_or(&[]));
            } else {
                self.trailing += (chunk.len() - used) as u64;
            }
        } else {
            self.feed_after_cut(chunk)?;
        }
        Ok(())
    }

    /// Feeds a chunk while `pending` holds an opcode cut at the previous chunk's end: the cut
    /// opcode is completed from the chunk's first bytes, and the rest of the chunk is decoded in
    /// place rather than copied after the held bytes.
    fn feed_after_cut(&mut self, chunk: &[u8]) -> Result<(), Error> {
        let (head, tail) = chunk.split_at(chunk.len().min(BRIDGE_BYTES));
        let mut buf = std::mem::take(&mut self.pending);
        let held = buf.len();
        buf.extend_from_slice(head);
        let used = self.run(&buf)?;
        if self.stopped {
            self.trailing += (buf.len() - used + tail.len()) as u64;
            return Ok(());
        }
        if used >= held {
            let rest = chunk.get(used - held..).unwrap_or(&[]);
            buf.clear();
            self.pending = buf;
            return self.feed(rest);
        }
        buf.drain(..used);
        buf.extend_from_slice(tail);
        self.pending = buf;
        Ok(())
    }

    /// Ends the input and returns the document.
    pub fn finish(mut self) -> Result<Document, Error> {
        if !self.stopped {
            let offset = self.consumed;
            if self.consumed == 0 && self.pending.is_empty() {
                return Err(Error::Empty);
            }
            // Re-run the leftover to learn what it was in the middle of.
            let pending = std::mem::take(&mut self.pending);
            let (what, declared) = match self.step(&pending, 0) {
                Ok(Step::More { what, declared }) => (what, declared),
                Ok(_) => ("the pickle (no STOP opcode)", None),
                Err(e) => return Err(e),
            };
            return Err(Error::Truncated {
                offset: offset + pending.len() as u64,
                inside: what,
                declared,
            });
        }
        if self.trailing > 0 {
            self.doc.oddities.push(format!(
                "{} bytes after the pickle's STOP opcode were ignored",
                self.trailing
            ));
        }
        Ok(self.doc)
    }

    /// Runs opcodes over `data` until it needs more input or hits STOP; returns bytes used.
    fn run(&mut self, data: &[u8]) -> Result<usize, Error> {
        let base = self.consumed;
        let mut pos = 0;
        while pos < data.len() {
            // Fast paths for the opcodes that make up most of a snapshot; everything else (and
            // any incomplete opcode) goes through `step`.
            if let Some(n) = self.fast_op(data, pos, base)? {
                pos += n;
                continue;
            }
            self.consumed = base + pos as u64;
            match self.step(data, pos)? {
                Step::Done(n) => {
                    pos += n;
                }
                Step::Stop(n) => {
                    pos += n;
                    self.consumed = base + pos as u64;
                    self.stopped = true;
                    return Ok(pos);
                }
                Step::More { what, declared } => {
                    if let (Some(total), Some(d)) = (self.total_len, declared) {
                        let remaining = total.saturating_sub(self.consumed);
                        if d > remaining {
                            return Err(Error::Truncated {
                                offset: total,
                                inside: what,
                                declared: Some(d),
                            });
                        }
                    }
                    return Ok(pos);
                }
            }
        }
        self.consumed = base + pos as u64;
        Ok(pos)
    }

    /// Decodes a whole flat dict in one go when the bytes are exactly
    /// `EMPTY_DICT [MEMOIZE|BINPUT|LONG_BINPUT] MARK (key value)* SETITEMS` with simple values
    /// (memo gets, ints, floats, None, booleans): the shape of every trace entry. Anything else,
    /// or input that ends early, returns `None` with nothing changed, and the generic path runs.
    #[inline(always)]
    fn flat_dict(&mut self, rest: &[u8], offset: u64) -> Result<Option<usize>, Error> {
        let mut p = 1;
        let memo_idx = match rest.get(p) {
            Some(0x94) => {
                p += 1;
                Some(self.memo_len())
            }
            Some(b'q') => {
                let Some(&i) = rest.get(p + 1) else {
                    return Ok(None);
                };
                p += 2;
                Some(u64::from(i))
            }
            Some(b'r') => {
                let Some(b) = rest.get(p + 1..p + 5) else {
                    return Ok(None);
                };
                p += 5;
                Some(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            }
            _ => None,
        };
        if rest.get(p) != Some(&b'(') {
            return Ok(None);
        }
        p += 1;
        let mut vals = [Value::None; 2 * FLAT_DICT_MAX_PAIRS];
        let mut key_codes = [None; FLAT_DICT_MAX_PAIRS];
        let mut inline_memo = InlineMemo::new();
        let mut n = 0;
        loop {
            let Some(&op) = rest.get(p) else {
                return Ok(None);
            };
            if op == b'u' {
                p += 1;
                break;
            }
            if n == vals.len() {
                return Ok(None);
            }
            let (v, used) = match op {
                b'h' | b'j' => {
                    let (idx, used) = if op == b'h' {
                        let Some(&i) = rest.get(p + 1) else {
                            return Ok(None);
                        };
                        (u64::from(i), 2)
                    } else {
                        let Some(b) = rest.get(p + 1..p + 5) else {
                            return Ok(None);
                        };
                        (u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])), 5)
                    };
                    if Some(idx) == memo_idx {
                        return Ok(None);
                    }
                    let Some(v) = self.memo_peek(idx) else {
                        return Ok(None);
                    };
                    if n % 2 == 0 {
                        key_codes[n / 2] = KeyCode::of(op, idx);
                    }
                    (v, used)
                }
                b'K' => {
                    let Some(&i) = rest.get(p + 1) else {
                        return Ok(None);
                    };
                    (Value::Int(i64::from(i)), 2)
                }
                b'M' => {
                    let Some(b) = rest.get(p + 1..p + 3) else {
                        return Ok(None);
                    };
                    (Value::Int(i64::from(u16::from_le_bytes([b[0], b[1]]))), 3)
                }
                b'J' => {
                    let Some(b) = rest.get(p + 1..p + 5) else {
                        return Ok(None);
                    };
                    (
                        Value::Int(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
                        5,
                    )
                }
                0x8a => {
                    let Some(&len) = rest.get(p + 1) else {
                        return Ok(None);
                    };
                    if len == 0 || len > 8 {
                        return Ok(None);
                    }
                    let Some(b) = rest.get(p + 2..p + 2 + len as usize) else {
                        return Ok(None);
                    };
                    (Value::Int(small_long(b)), 2 + len as usize)
                }
                b'G' => {
                    let Some(b) = rest.get(p + 1..p + 9) else {
                        return Ok(None);
                    };
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    (Value::Float(f64::from_be_bytes(a)), 9)
                }
                b'N' => (Value::None, 1),
                0x88 => (Value::Bool(true), 1),
                0x89 => (Value::Bool(false), 1),
                // A string value written inline; its memo write waits for the dict's own.
                0x8c | b'X' if n % 2 == 1 && self.memo_sparse.is_empty() => {
                    let Some((id, used)) = self.inline_str(&rest[p..], &mut inline_memo) else {
                        return Ok(None);
                    };
                    (Value::Str(id), used)
                }
                _ => return Ok(None),
            };
            vals[n] = v;
            n += 1;
            p += used;
        }
        if n % 2 != 0 {
            return Ok(None);
        }
        // A trace entry becomes a record row at once; the effects on the stack and memo are those
        // of the generic path.
        if let Some((d, shape)) = self.flat_record(&vals[..n]) {
            self.remember_template(shape, &key_codes[..n / 2], p, rest.len());
            self.fresh = None;
            self.stack.push(d);
            if let Some(idx) = memo_idx {
                self.memo_put(idx, d);
            }
            self.put_inline_memo(&inline_memo);
            return Ok(Some(p));
        }
        // Commit: the same effects as the generic path, in the same order.
        let d = self.new_dict(offset)?;
        self.stack.push(d);
        if let Some(idx) = memo_idx {
            self.memo_put(idx, d);
        }
        self.put_inline_memo(&inline_memo);
        for v in &vals[..n] {
            self.note_escape(*v);
        }
        self.dict_set(d, &vals[..n], offset)?;
        Ok(Some(p))
    }

    /// Decodes one common opcode in place; `None` when `step` must handle it.
    #[inline(always)]
    fn fast_op(&mut self, data: &[u8], pos: usize, base: u64) -> Result<Option<usize>, Error> {
        let rest = &data[pos..];
        let Some(&op) = rest.first() else {
            return Ok(None);
        };
        let n = match op {
            b'h' => {
                let Some(&i) = rest.get(1) else {
                    return Ok(None);
                };
                let v = self.memo_get(u64::from(i), base + pos as u64)?;
                self.stack.push(v);
                2
            }
            b'j' => {
                let Some(b) = rest.get(1..5) else {
                    return Ok(None);
                };
                let i = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                let v = self.memo_get(u64::from(i), base + pos as u64)?;
                self.stack.push(v);
                5
            }
            b'K' => {
                let Some(&i) = rest.get(1) else {
                    return Ok(None);
                };
                self.stack.push(Value::Int(i64::from(i)));
                2
            }
            b'M' => {
                let Some(b) = rest.get(1..3) else {
                    return Ok(None);
                };
                self.stack
                    .push(Value::Int(i64::from(u16::from_le_bytes([b[0], b[1]]))));
                3
            }
            b'J' => {
                let Some(b) = rest.get(1..5) else {
                    return Ok(None);
                };
                self.stack.push(Value::Int(i64::from(i32::from_le_bytes([
                    b[0], b[1], b[2], b[3],
                ]))));
                5
            }
            0x8a => {
                let Some(&len) = rest.get(1) else {
                    return Ok(None);
                };
                if len == 0 || len > 8 {
                    return Ok(None);
                }
                let Some(b) = rest.get(2..2 + len as usize) else {
                    return Ok(None);
                };
                self.stack.push(Value::Int(small_long(b)));
                2 + len as usize
            }
            b'(' => {
                self.marks.push(self.stack.len());
                1
            }
            0x94 => {
                let Some(&top) = self.stack.last() else {
                    return Ok(None);
                };
                let idx = self.memo_len();
                self.memo_put(idx, top);
                1
            }
            b'}' => {
                if let Some(n) = self.template_entry(rest) {
                    return Ok(Some(n));
                }
                if let Some(n) = self.flat_dict(rest, base + pos as u64)? {
                    return Ok(Some(n));
                }
                let v = self.new_dict(base + pos as u64)?;
                self.stack.push(v);
                1
            }
            b']' => {
                let v = self.new_list(Vec::new());
                self.stack.push(v);
                1
            }
            _ => return Ok(None),
        };
        Ok(Some(n))
    }

    fn pop(&mut self, offset: u64, op: &'static str) -> Result<Value, Error> {
        // A pop may not reach below the innermost mark.
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(Error::Malformed {
                offset,
                reason: format!("{op} on an empty stack"),
            });
        }
        self.stack.pop().ok_or_else(|| Error::Malformed {
            offset,
            reason: format!("{op} on an empty stack"),
        })
    }

    fn pop_mark(&mut self, offset: u64, op: &'static str) -> Result<usize, Error> {
        self.marks.pop().ok_or_else(|| Error::Malformed {
            offset,
            reason: format!("{op} without a MARK"),
        })
    }

    fn push_str(&mut self, raw: &[u8]) -> Value {
        match std::str::from_utf8(raw) {
            Ok(s) => Value::Str(self.doc.intern_str(s)),
            Err(_) => {
                let s = decode_surrogatepass(raw);
                if self.doc.oddities.len() < 16 && s.contains('\u{fffd}') {
                    self.doc
                        .oddities
                        .push("a string with invalid UTF-8 was decoded lossily".into());
                }
                Value::Str(self.doc.intern_str(&s))
            }
        }
    }

    fn new_bytes(&mut self, raw: &[u8]) -> Value {
        self.doc.bytes.push(raw.into());
        Value::Bytes((self.doc.bytes.len() - 1) as u32)
    }

    fn new_list(&mut self, items: Vec<Value>) -> Value {
        let mut store = ListStore::Dicts(Vec::new());
        store.extend(&items);
        self.doc.lists.push(store);
        Value::List((self.doc.lists.len() - 1) as u32)
    }

    fn new_tuple(&mut self, items: &[Value]) -> Value {
        let start = self.doc.tuple_items.len() as u32;
        self.doc.tuple_items.extend_from_slice(items);
        self.doc.tuples.push((start, items.len() as u32));
        Value::Tuple((self.doc.tuples.len() - 1) as u32)
    }

    #[inline]
    fn new_dict(&mut self, offset: u64) -> Result<Value, Error> {
        if self.doc.dicts.len() >= RECORD_BIT as usize {
            return Err(Error::Malformed {
                offset,
                reason: "more than 2^31 dicts".into(),
            });
        }
        self.doc.dicts.push(DictRec::Empty);
        let id = (self.doc.dicts.len() - 1) as u32;
        self.fresh = Some((id, None, false));
        Ok(Value::Dict(id))
    }

    fn new_set(&mut self, items: Vec<Value>, frozen: bool) -> Value {
        self.doc.sets.push(items);
        let i = (self.doc.sets.len() - 1) as u32;
        if frozen {
            Value::FrozenSet(i)
        } else {
            Value::Set(i)
        }
    }

    #[inline]
    fn memo_put(&mut self, idx: u64, v: Value) {
        self.memo_writes += 1;
        if let (Some((id, slot, escaped)), Value::Dict(d)) = (self.fresh.as_mut(), v) {
            if *id == d {
                if slot.is_some() {
                    *escaped = true;
                }
                *slot = Some(idx);
            }
        }
        let (tag, id) = match v {
            Value::Str(i) => (1, i),
            Value::List(i) => (2, i),
            Value::Dict(i) => (MEMO_DICT, i),
            Value::Tuple(i) => (4, i),
            Value::Bytes(i) => (5, i),
            Value::Set(i) => (6, i),
            Value::FrozenSet(i) => (7, i),
            Value::BigInt(i) => (8, i),
            _ => (MEMO_OTHER, 0),
        };
        let dense = self.memo_tags.len() as u64;
        if idx != dense || !self.memo_sparse.is_empty() {
            self.memo_rebinds += 1;
        }
        if idx < dense {
            let i = idx as usize;
            self.memo_tags[i] = tag;
            self.memo_ids[i] = id;
        } else if idx == dense {
            self.memo_tags.push(tag);
            self.memo_ids.push(id);
        } else {
            self.memo_sparse.insert(idx, v);
            return;
        }
        if tag == MEMO_OTHER {
            self.memo_other.insert(idx, v);
        }
    }

    #[inline]
    fn memo_len(&self) -> u64 {
        self.memo_tags.len() as u64 + self.memo_sparse.len() as u64
    }

    /// The memo value at `idx`, if stored (no side effects).
    #[inline(always)]
    fn memo_peek(&self, idx: u64) -> Option<Value> {
        if idx < self.memo_tags.len() as u64 {
            let i = idx as usize;
            let id = self.memo_ids[i];
            match self.memo_tags[i] {
                1 => Some(Value::Str(id)),
                2 => Some(Value::List(id)),
                3 => Some(Value::Dict(id)),
                4 => Some(Value::Tuple(id)),
                5 => Some(Value::Bytes(id)),
                6 => Some(Value::Set(id)),
                7 => Some(Value::FrozenSet(id)),
                8 => Some(Value::BigInt(id)),
                MEMO_OTHER => self.memo_other.get(&idx).copied(),
                _ => None,
            }
        } else {
            self.memo_sparse.get(&idx).copied()
        }
    }

    #[inline(always)]
    fn memo_get(&mut self, idx: u64, offset: u64) -> Result<Value, Error> {
        let v = self.memo_peek(idx);
        let v = v.ok_or_else(|| Error::Malformed {
            offset,
            reason: format!("memo index {idx} was never stored"),
        })?;
        self.note_escape(v);
        Ok(v)
    }

    /// A second reference to the fresh dict exists: it can no longer be deduplicated.
    #[inline]
    fn note_escape(&mut self, v: Value) {
        if let (Some((id, _, escaped)), Value::Dict(d)) = (self.fresh.as_mut(), v) {
            if *id == d {
                *escaped = true;
            }
        }
    }

    /// Drains the stack above `mark` into the scratch buffer.
    fn take_items(&mut self, mark: usize) -> Vec<Value> {
        let mut items = std::mem::take(&mut self.scratch);
        items.clear();
        let m = mark.min(self.stack.len());
        items.extend_from_slice(self.stack.get(m..).unwrap_or(&[]));
        self.stack.truncate(m);
        items
    }

    fn give_back(&mut self, items: Vec<Value>) {
        self.scratch = items;
    }

    /// The shape for a batch of pairs whose keys are all distinct strings (`None` otherwise).
    fn shape_for(&mut self, pairs: &[Value]) -> Option<u32> {
        let n = pairs.len() / 2;
        if n == 0 || n > 32 {
            return None;
        }
        // Fast path: same keys as the last dict.
        if let Some(keys) = self.doc.shapes.get(self.last_shape as usize) {
            if keys.len() == n
                && pairs
                    .chunks_exact(2)
                    .zip(keys.iter())
                    .all(|(kv, &k)| kv[0] == Value::Str(k))
            {
                return Some(self.last_shape);
            }
        }
        let mut keys = Vec::with_capacity(n);
        for kv in pairs.chunks_exact(2) {
            match kv[0] {
                Value::Str(s) => keys.push(s),
                _ => return None,
            }
        }
        for (i, a) in keys.iter().enumerate() {
            if keys[i + 1..].contains(a) {
                return None;
            }
        }
        let shape = match self.doc.shape_index.get(keys.as_slice()) {
            Some(&s) => s,
            None => {
                let s = self.doc.shapes.len() as u32;
                let boxed: Box<[u32]> = keys.into_boxed_slice();
                let fields = Field::layout(boxed.iter().map(|&k| Field::from_key(self.doc.str(k))));
                self.doc
                    .shape_masks
                    .push(fields.as_deref().map_or(0, Field::mask));
                self.doc.shape_fields.push(fields);
                self.doc.shapes.push(boxed.clone());
                self.doc.shape_index.insert(boxed, s);
                s
            }
        };
        self.last_shape = shape;
        Some(shape)
    }

    /// Makes the fresh dict `di` an alias of the equal leaf dict `canon`: the new dict's slot is
    /// dropped and the stack and memo point at `canon`. Returns false when that is not safe.
    fn try_alias(&mut self, di: u32, canon: u32, shape: u32, pairs: &[Value]) -> bool {
        let Some(DictRec::Compact { shape: cs, start }) =
            self.doc.dicts.get(canon as usize).copied()
        else {
            return false;
        };
        if cs != shape
            || pairs
                .chunks_exact(2)
                .enumerate()
                .any(|(i, kv)| self.doc.dict_vals.get(start as usize + i) != kv[1])
        {
            return false;
        }
        let Some((fid, slot, escaped)) = self.fresh else {
            return false;
        };
        let last = self.doc.dicts.len() as u32 - 1;
        if fid != di || escaped || di != last || self.stack.last() != Some(&Value::Dict(di)) {
            return false;
        }
        self.doc.dicts.pop();
        if let Some(top) = self.stack.last_mut() {
            *top = Value::Dict(canon);
        }
        if let Some(idx) = slot {
            self.memo_rebinds += 1;
            if idx < self.memo_tags.len() as u64 {
                self.memo_ids[idx as usize] = canon;
            } else if let Some(v) = self.memo_sparse.get_mut(&idx) {
                *v = Value::Dict(canon);
            }
        }
        self.fresh = None;
        true
    }

    /// A new dict holding `pairs` as a trace record with an id of its own kind, when the keys and
    /// value types allow (`None`, with nothing stored, otherwise).
    fn flat_record(&mut self, pairs: &[Value]) -> Option<(Value, u32)> {
        let shape = self.shape_for(pairs)?;
        let fields = self.doc.shape_fields.get(shape as usize)?.as_deref()?;
        if self.doc.records.len() >= RECORD_BIT as usize {
            return None;
        }
        let row = self.doc.records.push(shape, fields, pairs)?;
        Some((Value::Dict(RECORD_BIT | row), shape))
    }

    /// Stores the fresh dict `di` as a trace record when its shape and value types allow.
    fn try_record(&mut self, di: usize, shape: u32, pairs: &[Value]) -> bool {
        let Some(Some(fields)) = self.doc.shape_fields.get(shape as usize) else {
            return false;
        };
        let Some(row) = self.doc.records.push(shape, fields, pairs) else {
            return false;
        };
        if let Some(rec) = self.doc.dicts.get_mut(di) {
            *rec = DictRec::Record(row);
        }
        true
    }

    /// Adds key/value pairs to a dict, honouring Python semantics (later duplicate keys win).
    fn dict_set(&mut self, dict: Value, pairs: &[Value], offset: u64) -> Result<(), Error> {
        let Value::Dict(di) = dict else {
            return Err(Error::Malformed {
                offset,
                reason: format!(
                    "SETITEM(S) on {} (only dicts are supported)",
                    Document::a_type_name(dict)
                ),
            });
        };
        let di = di as usize;
        if pairs.len() % 2 != 0 {
            return Err(Error::Malformed {
                offset,
                reason: "SETITEMS with an odd number of items".into(),
            });
        }
        let fresh = matches!(self.doc.dicts.get(di), Some(DictRec::Empty));
        if fresh && !pairs.is_empty() {
            if let Some(shape) = self.shape_for(pairs) {
                if self.try_record(di, shape, pairs) {
                    return Ok(());
                }
                // Leaf dicts (scalars and strings only) are deduplicated by content.
                let leaf = pairs.len() <= 16
                    && pairs.chunks_exact(2).all(|kv| {
                        matches!(
                            kv[1],
                            Value::None
                                | Value::Bool(_)
                                | Value::Int(_)
                                | Value::UInt(_)
                                | Value::Float(_)
                                | Value::Str(_)
                        )
                    });
                let mut hash = None;
                if leaf {
                    let mut h = FxHasher::default();
                    shape.hash(&mut h);
                    for kv in pairs.chunks_exact(2) {
                        kv[1].hash_bits(&mut h);
                    }
                    let hv = h.finish();
                    hash = Some(hv);
                    if let Some(&canon) = self.leaf_index.get(&hv) {
                        if self.try_alias(di as u32, canon, shape, pairs) {
                            return Ok(());
                        }
                    }
                }
                let start = self.doc.dict_vals.len() as u32;
                for kv in pairs.chunks_exact(2) {
                    self.doc.dict_vals.push(kv[1]);
                }
                if let Some(rec) = self.doc.dicts.get_mut(di) {
                    *rec = DictRec::Compact { shape, start };
                }
                if let Some(hv) = hash {
                    self.leaf_index.entry(hv).or_insert(di as u32);
                }
                return Ok(());
            }
        }
        // Generic path: move a compact dict or record to generic storage first.
        let id = di as u32;
        let g = match self.doc.dict_rec(id) {
            Some(DictRec::Generic(g)) => g as usize,
            Some(DictRec::Empty) => {
                let g = self.doc.generic_dicts.len();
                self.doc.generic_dicts.push(GenericDict::default());
                self.doc.set_generic(id, g as u32);
                g
            }
            Some(DictRec::Compact { .. } | DictRec::Record(_)) => {
                let items = self.doc.dict_pairs(Value::Dict(id));
                let g = self.doc.generic_dicts.len();
                self.doc
                    .generic_dicts
                    .push(GenericDict { items, index: None });
                self.doc.set_generic(id, g as u32);
                g
            }
            None => {
                return Err(Error::Malformed {
                    offset,
                    reason: "unknown dict".into(),
                })
            }
        };
        for kv in pairs.chunks_exact(2) {
            let (k, v) = (kv[0], kv[1]);
            self.unique += 1;
            let hk = self.doc.hash_key(k, self.unique);
            let Some(d) = self.doc.generic_dicts.get_mut(g) else {
                break;
            };
            if d.index.is_none() && d.items.len() >= 16 {
                let mut idx = HashMap::new();
                for (i, (ek, _)) in d.items.iter().enumerate() {
                    let ehk = match *ek {
                        Value::Int(x) => HashKey::Int(i128::from(x)),
                        Value::UInt(x) => HashKey::Int(i128::from(x)),
                        Value::Bool(x) => HashKey::Int(i128::from(x)),
                        Value::Str(s) => HashKey::Str(s),
                        _ => HashKey::Unique(u32::MAX - i as u32),
                    };
                    idx.insert(ehk, i);
                }
                d.index = Some(idx);
            }
            let existing = match &d.index {
                Some(idx) => idx.get(&hk).copied(),
                None => d.items.iter().position(|(ek, _)| {
                    let ehk = match *ek {
                        Value::Int(x) => HashKey::Int(i128::from(x)),
                        Value::UInt(x) => HashKey::Int(i128::from(x)),
                        Value::Bool(x) => HashKey::Int(i128::from(x)),
                        Value::Str(s) => HashKey::Str(s),
                        _ => HashKey::Unique(u32::MAX),
                    };
                    ehk == hk && !matches!(hk, HashKey::Unique(_))
                }),
            };
            match existing {
                Some(i) => {
                    if let Some(slot) = d.items.get_mut(i) {
                        slot.1 = v;
                    }
                }
                None => {
                    if let Some(idx) = d.index.as_mut() {
                        idx.insert(hk, d.items.len());
                    }
                    d.items.push((k, v));
                }
            }
        }
        Ok(())
    }

    fn list_extend(
        doc: &mut Document,
        list: Value,
        items: &[Value],
        offset: u64,
    ) -> Result<(), Error> {
        match list {
            Value::List(i) => {
                if let Some(&ListStore::Shared { start, len }) = doc.lists.get(i as usize) {
                    // A list read whole is appended to later: it gets items of its own.
                    let own = ListStore::Dicts(doc.shared_items(start, len).to_vec());
                    if let Some(l) = doc.lists.get_mut(i as usize) {
                        *l = own;
                    }
                }
                if let Some(l) = doc.lists.get_mut(i as usize) {
                    l.extend(items);
                }
                Ok(())
            }
            other => Err(Error::Malformed {
                offset,
                reason: format!(
                    "APPEND(S) on {} (only lists are supported)",
                    Document::a_type_name(other)
                ),
            }),
        }
    }

    /// Decodes one opcode at `data[pos..]`.
    #[allow(clippy::too_many_lines)]
    fn step(&mut self, data: &[u8], pos: usize) -> Result<Step, Error> {
        let offset = self.consumed; // absolute offset of this opcode
        let rest = data.get(pos..).unwrap_or(&[]);
        let Some(&op) = rest.first() else {
            return Ok(Step::More {
                what: "an opcode",
                declared: None,
            });
        };
        let arg = rest.get(1..).unwrap_or(&[]);
        macro_rules! need {
            ($n:expr, $what:expr) => {{
                let n: u64 = $n;
                if (arg.len() as u64) < n {
                    return Ok(Step::More {
                        what: $what,
                        declared: Some(n),
                    });
                }
                &arg[..n as usize]
            }};
        }
        macro_rules! need_payload {
            ($header:expr, $n:expr, $what:expr) => {{
                let header: u64 = $header;
                let n: u64 = $n;
                match header.checked_add(n) {
                    Some(total) if (arg.len() as u64) >= total => {
                        &arg[header as usize..total as usize]
                    }
                    _ => {
                        return Ok(Step::More {
                            what: $what,
                            declared: Some(n),
                        })
                    }
                }
            }};
        }
        macro_rules! le_u {
            ($n:expr, $what:expr) => {{
                let b = need!($n, $what);
                let mut x: u64 = 0;
                for (i, &byte) in b.iter().enumerate() {
                    x |= u64::from(byte) << (8 * i);
                }
                x
            }};
        }
        if let Some(name) = forbidden_name(op) {
            return Err(Error::ForbiddenOpcode {
                name,
                opcode: op,
                offset,
            });
        }
        let step = match op {
            0x80 => {
                // PROTO
                let v = *need!(1, "the PROTO argument").first().unwrap_or(&0);
                if v > 5 {
                    return Err(Error::UnsupportedProtocol { version: v, offset });
                }
                self.doc.protocol = self.doc.protocol.max(v);
                Step::Done(2)
            }
            0x95 => {
                let _ = le_u!(8, "a FRAME header");
                Step::Done(9)
            }
            b'.' => {
                let v = self.pop(offset, "STOP")?;
                if !self.stack.is_empty() || !self.marks.is_empty() {
                    self.doc
                        .oddities
                        .push("values were left on the pickle stack at STOP".into());
                }
                self.doc.root = Some(v);
                Step::Stop(1)
            }
            b'(' => {
                self.marks.push(self.stack.len());
                Step::Done(1)
            }
            b'0' => {
                // POP: pops the top item, or a mark when the top of the stack is a mark.
                if self.marks.last().copied() == Some(self.stack.len()) {
                    self.marks.pop();
                } else {
                    self.pop(offset, "POP")?;
                }
                Step::Done(1)
            }
            b'1' => {
                let m = self.pop_mark(offset, "POP_MARK")?;
                self.stack.truncate(m);
                Step::Done(1)
            }
            b'2' => {
                let top = *self.stack.last().ok_or_else(|| Error::Malformed {
                    offset,
                    reason: "DUP on an empty stack".into(),
                })?;
                self.note_escape(top);
                self.stack.push(top);
                Step::Done(1)
            }
            b'N' => {
                self.stack.push(Value::None);
                Step::Done(1)
            }
            0x88 => {
                self.stack.push(Value::Bool(true));
                Step::Done(1)
            }
            0x89 => {
                self.stack.push(Value::Bool(false));
                Step::Done(1)
            }
            b'J' => {
                let x = le_u!(4, "a BININT") as u32 as i32;
                self.stack.push(Value::Int(i64::from(x)));
                Step::Done(5)
            }
            b'K' => {
                let x = le_u!(1, "a BININT1");
                self.stack.push(Value::Int(x as i64));
                Step::Done(2)
            }
            b'M' => {
                let x = le_u!(2, "a BININT2");
                self.stack.push(Value::Int(x as i64));
                Step::Done(3)
            }
            0x8a => {
                let n = le_u!(1, "a LONG1 length");
                let b = need_payload!(1, n, "a LONG1 integer");
                let v = self.long_from_le(b);
                self.stack.push(v);
                Step::Done(2 + n as usize)
            }
            0x8b => {
                let n = le_u!(4, "a LONG4 length") as u32 as i32;
                if n < 0 {
                    return Err(Error::Malformed {
                        offset,
                        reason: "LONG4 with a negative length".into(),
                    });
                }
                let n = n as u64;
                let b = need_payload!(4, n, "a LONG4 integer");
                let v = self.long_from_le(b);
                self.stack.push(v);
                Step::Done(5 + n as usize)
            }
            b'G' => {
                let b = need!(8, "a BINFLOAT");
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                self.stack.push(Value::Float(f64::from_be_bytes(a)));
                Step::Done(9)
            }
            0x8c => {
                let n = le_u!(1, "a SHORT_BINUNICODE length");
                let b = need_payload!(1, n, "a string");
                let v = self.push_str(b);
                self.stack.push(v);
                Step::Done(2 + n as usize)
            }
            b'X' => {
                let n = le_u!(4, "a BINUNICODE length");
                let b = need_payload!(4, n, "a string");
                let v = self.push_str(b);
                self.stack.push(v);
                Step::Done(5 + n as usize)
            }
            0x8d => {
                let n = le_u!(8, "a BINUNICODE8 length");
                let b = need_payload!(8, n, "a string");
                let v = self.push_str(b);
                self.stack.push(v);
                Step::Done(9 + n as usize)
            }
            b'T' | b'U' | b'B' | b'C' | 0x8e | 0x96 => {
                // BINSTRING (4), SHORT_BINSTRING (1), BINBYTES (4), SHORT_BINBYTES (1), BINBYTES8, BYTEARRAY8
                let width: u64 = match op {
                    b'U' | b'C' => 1,
                    b'T' | b'B' => 4,
                    _ => 8,
                };
                let n = le_u!(width, "a length");
                let payload = need_payload!(width, n, "a byte string");
                let total = width + n;
                let v = if op == b'T' || op == b'U' {
                    // Python 2 str: decoded as ASCII/latin-1 text by Python 3's default.
                    let s: String = payload.iter().map(|&c| c as char).collect();
                    Value::Str(self.doc.intern_str(&s))
                } else {
                    self.new_bytes(payload)
                };
                self.stack.push(v);
                Step::Done(1 + total as usize)
            }
            b'I' | b'L' | b'F' | b'S' | b'V' | b'p' | b'g' => {
                // Text opcodes: argument runs to the next newline.
                let Some(nl) = arg.iter().position(|&c| c == b'\n') else {
                    return Ok(Step::More {
                        what: "a text-protocol argument line",
                        declared: None,
                    });
                };
                if nl > 1 << 20 && !matches!(op, b'S' | b'V') {
                    return Err(Error::Malformed {
                        offset,
                        reason: "a text opcode argument longer than 1 MiB".into(),
                    });
                }
                let line = &arg[..nl];
                self.text_op(op, line, offset)?;
                Step::Done(2 + nl)
            }
            b'h' => {
                let i = le_u!(1, "a BINGET index");
                let v = self.memo_get(i, offset)?;
                self.stack.push(v);
                Step::Done(2)
            }
            b'j' => {
                let i = le_u!(4, "a LONG_BINGET index");
                let v = self.memo_get(i, offset)?;
                self.stack.push(v);
                Step::Done(5)
            }
            b'q' => {
                let i = le_u!(1, "a BINPUT index");
                let top = *self.stack.last().ok_or_else(|| Error::Malformed {
                    offset,
                    reason: "BINPUT on an empty stack".into(),
                })?;
                self.memo_put(i, top);
                Step::Done(2)
            }
            b'r' => {
                let i = le_u!(4, "a LONG_BINPUT index");
                let top = *self.stack.last().ok_or_else(|| Error::Malformed {
                    offset,
                    reason: "LONG_BINPUT on an empty stack".into(),
                })?;
                self.memo_put(i, top);
                Step::Done(5)
            }
            0x94 => {
                let top = *self.stack.last().ok_or_else(|| Error::Malformed {
                    offset,
                    reason: "MEMOIZE on an empty stack".into(),
                })?;
                let idx = self.memo_len();
                self.memo_put(idx, top);
                Step::Done(1)
            }
            b']' => {
                let v = self.new_list(Vec::new());
                self.stack.push(v);
                Step::Done(1)
            }
            b'}' => {
                let v = self.new_dict(offset)?;
                self.stack.push(v);
                Step::Done(1)
            }
            b')' => {
                let v = self.new_tuple(&[]);
                self.stack.push(v);
                Step::Done(1)
            }
            0x8f => {
                let v = self.new_set(Vec::new(), false);
                self.stack.push(v);
                Step::Done(1)
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                let floor = self.marks.last().copied().unwrap_or(0);
                if self.stack.len() < floor + n {
                    return Err(Error::Malformed {
                        offset,
                        reason: format!("TUPLE{n} with fewer than {n} items on the stack"),
                    });
                }
                let at = self.stack.len() - n;
                let items = self.take_items(at);
                let v = self.new_tuple(&items);
                self.give_back(items);
                self.stack.push(v);
                Step::Done(1)
            }
            b't' | b'l' | b'd' | 0x91 => {
                let m = self.pop_mark(offset, "TUPLE/LIST/DICT/FROZENSET")?;
                let items = self.take_items(m);
                let v = match op {
                    b't' => self.new_tuple(&items),
                    b'l' => self.new_list(items.clone()),
                    b'd' => {
                        let d = self.new_dict(offset)?;
                        self.fresh = None;
                        self.dict_set(d, &items, offset)?;
                        d
                    }
                    _ => self.new_set(items.clone(), true),
                };
                self.give_back(items);
                self.stack.push(v);
                Step::Done(1)
            }
            b'a' => {
                let item = self.pop(offset, "APPEND")?;
                let list = *self.stack.last().ok_or_else(|| Error::Malformed {
                    offset,
                    reason: "APPEND without a list".into(),
                })?;
                Self::list_extend(&mut self.doc, list, &[item], offset)?;
                Step::Done(1)
            }
            b'e' => {
                // The items are appended straight from the stack.
                let m = self.pop_mark(offset, "APPENDS")?.min(self.stack.len());
                let list = *m
                    .checked_sub(1)
                    .and_then(|i| self.stack.get(i))
                    .ok_or_else(|| Error::Malformed {
                        offset,
                        reason: "APPENDS without a list".into(),
                    })?;
                Self::list_extend(
                    &mut self.doc,
                    list,
                    self.stack.get(m..).unwrap_or(&[]),
                    offset,
                )?;
                self.stack.truncate(m);
                Step::Done(1)
            }
            b's' => {
                let v = self.pop(offset, "SETITEM")?;
                let k = self.pop(offset, "SETITEM")?;
                let d = *self.stack.last().ok_or_else(|| Error::Malformed {
                    offset,
                    reason: "SETITEM without a dict".into(),
                })?;
                self.dict_set(d, &[k, v], offset)?;
                Step::Done(1)
            }
            b'u' => {
                let m = self.pop_mark(offset, "SETITEMS")?;
                let items = self.take_items(m);
                let d = *self.stack.last().ok_or_else(|| Error::Malformed {
                    offset,
                    reason: "SETITEMS without a dict".into(),
                })?;
                let r = self.dict_set(d, &items, offset);
                self.give_back(items);
                r?;
                Step::Done(1)
            }
            0x90 => {
                let m = self.pop_mark(offset, "ADDITEMS")?;
                let items: Vec<Value> = self.stack.drain(m.min(self.stack.len())..).collect();
                match self.stack.last() {
                    Some(Value::Set(i)) => {
                        let i = *i as usize;
                        if let Some(s) = self.doc.sets.get_mut(i) {
                            s.extend_from_slice(&items);
                        }
                    }
                    _ => {
                        return Err(Error::Malformed {
                            offset,
                            reason: "ADDITEMS without a set".into(),
                        })
                    }
                }
                Step::Done(1)
            }
            0x98 => Step::Done(1), // READONLY_BUFFER: a no-op on an in-band buffer
            other => {
                return Err(Error::UnknownOpcode {
                    opcode: other,
                    offset,
                })
            }
        };
        Ok(step)
    }

    fn long_from_le(&mut self, b: &[u8]) -> Value {
        if b.is_empty() {
            return Value::Int(0);
        }
        let negative = b.last().is_some_and(|&x| x & 0x80 != 0);
        // Strip redundant sign-extension bytes.
        let mut n = b.len();
        while n > 1 {
            let top = b[n - 1];
            let next_sign = b[n - 2] & 0x80 != 0;
            if (top == 0 && !next_sign && !negative) || (top == 0xff && next_sign && negative) {
                n -= 1;
            } else {
                break;
            }
        }
        let b = &b[..n];
        if b.len() <= 8 {
            let mut x: u64 = if negative { u64::MAX } else { 0 };
            for (i, &byte) in b.iter().enumerate() {
                x &= !(0xffu64 << (8 * i));
                x |= u64::from(byte) << (8 * i);
            }
            return Value::Int(x as i64);
        }
        if b.len() == 9 && !negative && b[8] == 0 {
            let mut x: u64 = 0;
            for (i, &byte) in b.iter().take(8).enumerate() {
                x |= u64::from(byte) << (8 * i);
            }
            return Value::UInt(x);
        }
        self.doc.bigints.push(b.into());
        Value::BigInt((self.doc.bigints.len() - 1) as u32)
    }

    fn text_op(&mut self, op: u8, line: &[u8], offset: u64) -> Result<(), Error> {
        let bad = |what: &str| Error::Malformed {
            offset,
            reason: format!("bad {what} argument in a text-protocol opcode"),
        };
        match op {
            b'I' => {
                let s = std::str::from_utf8(line).map_err(|_| bad("INT"))?.trim();
                let v = match s {
                    "01" => Value::Bool(true),
                    "00" => Value::Bool(false),
                    _ => self.parse_decimal(s).ok_or_else(|| bad("INT"))?,
                };
                self.stack.push(v);
            }
            b'L' => {
                let s = std::str::from_utf8(line).map_err(|_| bad("LONG"))?.trim();
                let s = s.strip_suffix('L').unwrap_or(s);
                let v = self.parse_decimal(s).ok_or_else(|| bad("LONG"))?;
                self.stack.push(v);
            }
            b'F' => {
                let s = std::str::from_utf8(line).map_err(|_| bad("FLOAT"))?.trim();
                let f: f64 = match s {
                    "nan" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    _ => s.parse().map_err(|_| bad("FLOAT"))?,
                };
                self.stack.push(Value::Float(f));
            }
            b'S' => {
                let raw = unescape_py_string_literal(line).ok_or_else(|| bad("STRING"))?;
                let s: String = raw.iter().map(|&c| c as char).collect();
                let v = Value::Str(self.doc.intern_str(&s));
                self.stack.push(v);
            }
            b'V' => {
                let s = raw_unicode_escape(line).ok_or_else(|| bad("UNICODE"))?;
                let v = Value::Str(self.doc.intern_str(&s));
                self.stack.push(v);
            }
            b'p' => {
                let s = std::str::from_utf8(line).map_err(|_| bad("PUT"))?.trim();
                let i: u64 = s.parse().map_err(|_| bad("PUT"))?;
                let top = *self.stack.last().ok_or_else(|| Error::Malformed {
                    offset,
                    reason: "PUT on an empty stack".into(),
                })?;
                self.memo_put(i, top);
            }
            b'g' => {
                let s = std::str::from_utf8(line).map_err(|_| bad("GET"))?.trim();
                let i: u64 = s.parse().map_err(|_| bad("GET"))?;
                let v = self.memo_get(i, offset)?;
                self.stack.push(v);
            }
            _ => return Err(Error::UnknownOpcode { opcode: op, offset }),
        }
        Ok(())
    }

    fn parse_decimal(&mut self, s: &str) -> Option<Value> {
        if let Ok(i) = s.parse::<i64>() {
            return Some(Value::Int(i));
        }
        if let Ok(u) = s.parse::<u64>() {
            return Some(Value::UInt(u));
        }
        // Arbitrary precision: build little-endian two's complement bytes.
        let (neg, digits) = match s.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        if digits.is_empty() || digits.len() > 10_000 || !digits.bytes().all(|c| c.is_ascii_digit())
        {
            return None;
        }
        let mut mag: Vec<u8> = vec![0];
        for d in digits.bytes() {
            let mut carry = u32::from(d - b'0');
            for byte in &mut mag {
                let x = u32::from(*byte) * 10 + carry;
                *byte = (x & 0xff) as u8;
                carry = x >> 8;
            }
            while carry > 0 {
                mag.push((carry & 0xff) as u8);
                carry >>= 8;
            }
        }
        mag.push(0); // room for the sign bit
        if neg {
            let mut carry = 1u16;
            for byte in &mut mag {
                let x = u16::from(!*byte) + carry;
                *byte = (x & 0xff) as u8;
                carry = x >> 8;
            }
        }
        Some(self.long_from_le(&mag))
    }
}

/// A little-endian two's complement integer of 1 to 8 bytes (LONG1's payload).
#[inline]
fn small_long(b: &[u8]) -> i64 {
    let fill = if b.last().is_some_and(|&t| t & 0x80 != 0) { 0xff } else { 0 };
    let mut le = [fill; 8];
    let n = b.len().min(8);
    if let (Some(dst), Some(src)) = (le.get_mut(..n), b.get(..n)) {
        dst.copy_from_slice(src);
    }
    i64::from_le_bytes(le)
}

/// First code point of the range that stands for lone surrogates (U+D800..U+DFFF), which Python
/// pickles with the `surrogatepass` error handler but Rust strings cannot hold.
pub const SURROGATE_BASE: u32 = 0x10_F800;

/// Decodes UTF-8 as Python's `surrogatepass` does: encoded lone surrogates become
/// `SURROGATE_BASE + (cp - 0xD800)`; other invalid bytes become U+FFFD.
fn decode_surrogatepass(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or(""));
                match bad {
                    [0xed, b1 @ 0xa0..=0xbf, b2 @ 0x80..=0xbf, ..] => {
                        let cp = 0xd000 | (u32::from(b1 & 0x3f) << 6) | u32::from(b2 & 0x3f);
                        out.push(
                            char::from_u32(SURROGATE_BASE + (cp - 0xd800)).unwrap_or('\u{fffd}'),
                        );
                        rest = &bad[3..];
                    }
                    _ => {
                        out.push('\u{fffd}');
                        let skip = e.error_len().unwrap_or(bad.len()).max(1);
                        rest = bad.get(skip..).unwrap_or(&[]);
                    }
                }
            }
        }
    }
    out
}

/// Decodes a Python 2 `repr`-style quoted string literal (protocol 0 `STRING`).
fn unescape_py_string_literal(line: &[u8]) -> Option<Vec<u8>> {
    let q = *line.first()?;
    if (q != b'\'' && q != b'"') || line.len() < 2 || *line.last()? != q {
        return None;
    }
    let body = &line[1..line.len() - 1];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let e = *body.get(i + 1)?;
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'\\' => out.push(b'\\'),
            b'\'' => out.push(b'\''),
            b'"' => out.push(b'"'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'x' => {
                let h = std::str::from_utf8(body.get(i..i + 2)?).ok()?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 2;
            }
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                let mut k = 0;
                while k < 2 {
                    match body.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                            k += 1;
                        }
                        _ => break,
                    }
                }
                out.push((v & 0xff) as u8);
            }
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

/// Decodes Python's `raw-unicode-escape` (protocol 0 `UNICODE`): only `\uXXXX` and `\UXXXXXXXX` escape.
fn raw_unicode_escape(line: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        let c = line[i];
        if c == b'\\' && matches!(line.get(i + 1), Some(b'u') | Some(b'U')) {
            let w = if line[i + 1] == b'u' { 4 } else { 8 };
            let h = std::str::from_utf8(line.get(i + 2..i + 2 + w)?).ok()?;
            let cp = u32::from_str_radix(h, 16).ok()?;
            out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
            i += 2 + w;
        } else {
            out.push(c as char);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(bytes: &[u8]) -> Result<Document, Error> {
        parse(bytes)
    }

    #[test]
    fn reads_small_protocol_4_dict() {
        // pickle.dumps({'a': [1, 2], 'b': (None, True)}, protocol=4)
        let b = b"\x80\x04\x95\x19\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01K\x02e\x8c\x01b\x94N\x88\x86\x94u.";
        let d = p(b).expect("parses");
        let root = d.root();
        assert_eq!(d.dict_len(root), 2);
        let a = d.get(root, "a").expect("a");
        assert_eq!(d.items(a).to_vec(), vec![Value::Int(1), Value::Int(2)]);
        let bv = d.get(root, "b").expect("b");
        assert_eq!(d.items(bv).to_vec(), vec![Value::None, Value::Bool(true)]);
    }

    #[test]
    fn refuses_reduce_with_offset() {
        let b = b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.";
        match p(b) {
            Err(Error::ForbiddenOpcode { name, offset, .. }) => {
                assert_eq!(name, "GLOBAL");
                assert_eq!(offset, 2);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn chunked_equals_whole() {
        let b = b"\x80\x04\x95\x19\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01K\x02e\x8c\x01b\x94N\x88\x86\x94u.";
        for cut in 1..b.len() {
            let mut ps = Parser::new();
            ps.feed(&b[..cut]).expect("feed");
            ps.feed(&b[cut..]).expect("feed");
            let d = ps.finish().expect("finish");
            assert_eq!(d.dict_len(d.root()), 2);
        }
    }

    #[test]
    fn truncation_reports_declared_length() {
        let b = b"\x80\x04X\x00\x01\x00\x00abc";
        match p(b) {
            Err(Error::Truncated {
                declared: Some(256),
                ..
            }) => {}
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn big_and_negative_longs() {
        // 2**63 + 5 as LONG1 (9 bytes), -1 as LONG1, 2**70 as LONG1
        let b = b"\x80\x02]q\x00(\x8a\x09\x05\x00\x00\x00\x00\x00\x00\x80\x00\x8a\x01\xff\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40e.";
        let d = p(b).expect("parses");
        let items = d.items(d.root()).to_vec();
        assert_eq!(items[0], Value::UInt((1u64 << 63) + 5));
        assert_eq!(items[1], Value::Int(-1));
        assert!(matches!(items[2], Value::BigInt(_)));
    }

    #[test]
    fn memo_index_bomb_is_cheap() {
        // LONG_BINPUT 0xffffffff then LONG_BINGET of it.
        let b = b"\x80\x02]r\xff\xff\xff\xffj\xff\xff\xff\xff\x86.";
        let d = p(b).expect("parses");
        assert_eq!(d.items(d.root()).len(), 2);
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        let mut b = vec![0x80, 2];
        let n = 200_000;
        for _ in 0..n {
            b.push(b']');
        }
        for _ in 0..n - 1 {
            b.push(b'a');
        }
        b.push(b'.');
        let d = p(&b).expect("parses");
        drop(d);
    }

    #[test]
    fn protocol_0_text_opcodes() {
        // pickle.dumps({'k': [1, 2.5, 'x', 10**20, True]}, protocol=0)
        let b = b"(dp0\nVk\np1\n(lp2\nI1\naF2.5\naVx\np3\naL100000000000000000000L\naI01\nas.";
        let d = p(b).expect("parses");
        let l = d.get(d.root(), "k").expect("k");
        let items = d.items(l).to_vec();
        assert_eq!(items[0], Value::Int(1));
        assert_eq!(items[1], Value::Float(2.5));
        assert_eq!(d.as_str(items[2]), Some("x"));
        assert!(matches!(items[3], Value::BigInt(_)));
        assert_eq!(items[4], Value::Bool(true));
    }

    #[test]
    fn duplicate_keys_last_wins() {
        // {'a': 1, 'a': 2} via SETITEMS with duplicate keys
        let b = b"\x80\x02}(X\x01\x00\x00\x00aK\x01X\x01\x00\x00\x00aK\x02u.";
        let d = p(b).expect("parses");
        assert_eq!(d.dict_len(d.root()), 1);
        assert_eq!(d.get(d.root(), "a"), Some(Value::Int(2)));
    }
}
