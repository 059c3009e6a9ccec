//! The decoded pickle, [`Document`]: arenas of strings, lists, tuples, dicts and sets, and the
//! accessors that read values out of them ([`Items`], [`DictIter`]).

use rustc_hash::{FxHashMap, FxHasher};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::packed::Packed;
use super::records::{Field, RecordColumns, RecordRun, RecordTable, TraceRecord, WideColumns};
use super::value::Value;

/// A list's items: lists of dicts only (frame lists, traces) take 4 bytes an item.
#[derive(Debug, Clone)]
pub(super) enum ListStore {
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
    pub(super) fn extend(&mut self, items: &[Value]) {
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
        ItemsIter { items: *self, pos: 0 }
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
pub(super) enum DictRec {
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
pub(super) struct GenericDict {
    pub(super) items: Vec<(Value, Value)>,
    pub(super) index: Option<HashMap<HashKey, usize>>,
}

/// Keys that compare equal in Python compare equal here (strings are interned by content).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum HashKey {
    Int(i128),
    Str(u32),
    Unique(u32),
}

/// Dict ids with this bit set are trace records made straight from the bytes: the other bits are
/// the record's row, and the dict has no slot of its own. Plain dict ids stay below it.
pub(super) const RECORD_BIT: u32 = 1 << 31;

/// The decoded pickle: the root value and the arenas it points into.
#[derive(Default, Debug)]
pub struct Document {
    pub(super) root: Option<Value>,
    pub(super) str_data: String,
    pub(super) str_spans: Vec<(usize, usize)>,
    pub(super) str_index: FxHashMap<Box<str>, u32>,
    pub(super) bytes: Vec<Box<[u8]>>,
    /// Integers too large for 64 bits, little-endian two's complement.
    pub bigints: Vec<Box<[u8]>>,
    pub(super) lists: Vec<ListStore>,
    /// Items of [`ListStore::Shared`] lists.
    pub(super) list_items: Vec<u32>,
    /// Spans of `list_items` by a hash of their items, so equal frame lists share one span.
    pub(super) list_spans: FxHashMap<u64, (u32, u32)>,
    pub(super) tuple_items: Vec<Value>,
    pub(super) tuples: Vec<(u32, u32)>,
    pub(super) shapes: Vec<Box<[u32]>>,
    /// Per shape: the record fields of its keys, when dicts of that shape can be records.
    pub(super) shape_fields: Vec<Option<Box<[Field]>>>,
    /// Per shape: the presence mask of its record fields (0 when it has none).
    pub(super) shape_masks: Vec<u8>,
    pub(super) shape_index: FxHashMap<Box<[u32]>, u32>,
    pub(super) records: RecordTable,
    pub(super) dict_vals: Packed,
    pub(super) dicts: Vec<DictRec>,
    pub(super) generic_dicts: Vec<GenericDict>,
    pub(super) sets: Vec<Vec<Value>>,
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
                Some(&ListStore::Shared { start, len }) => Items::Dicts(self.shared_items(start, len)),
                None => Items::Values(&[]),
            },
            Value::Tuple(i) => Items::Values(match self.tuples.get(i as usize) {
                Some(&(s, n)) => self.tuple_items.get(s as usize..(s + n) as usize).unwrap_or(&[]),
                None => &[],
            }),
            Value::Set(i) | Value::FrozenSet(i) => {
                Items::Values(self.sets.get(i as usize).map_or(&[], |l| l.as_slice()))
            }
            _ => Items::Values(&[]),
        }
    }

    /// The items of a shared span.
    pub(super) fn shared_items(&self, start: u32, len: u32) -> &[u32] {
        let start = start as usize;
        self.list_items.get(start..start + len as usize).unwrap_or(&[])
    }

    /// For a list whose items are a shared span, the span (start and length as one number):
    /// lists with the same span hold equal items (a cheap key for interning frame lists).
    pub(crate) fn shared_list_key(&self, list: Value) -> Option<u64> {
        let Value::List(i) = list else { return None };
        match self.lists.get(i as usize) {
            Some(&ListStore::Shared { start, len }) => Some(u64::from(start) << 32 | u64::from(len)),
            _ => None,
        }
    }

    /// The span of a list whose items are a shared span.
    pub(super) fn shared_span(&self, list: u32) -> Option<(u32, u32)> {
        match self.lists.get(list as usize) {
            Some(&ListStore::Shared { start, len }) => Some((start, len)),
            _ => None,
        }
    }

    /// Adds a new list holding the shared span `list_items[start..start + len]`; its id.
    pub(super) fn push_span(&mut self, start: u32, len: u32) -> u32 {
        self.lists.push(ListStore::Shared { start, len });
        (self.lists.len() - 1) as u32
    }

    /// Adds the items at `list_items[start..]` as a new shared list, reusing an earlier span
    /// with the same items; the list's id.
    pub(super) fn push_shared_list(&mut self, start: usize) -> u32 {
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
        self.lists.push(ListStore::Shared { start: span.0, len: span.1 });
        (self.lists.len() - 1) as u32
    }

    /// Number of items of a dict (0 for anything else).
    pub fn dict_len(&self, v: Value) -> usize {
        let Value::Dict(i) = v else { return 0 };
        match self.dict_rec(i).as_ref() {
            Some(DictRec::Compact { shape, .. }) => self.shape_keys(*shape).len(),
            Some(DictRec::Record(row)) => self.records.shape(*row).map_or(0, |s| self.shape_keys(s).len()),
            Some(DictRec::Generic(g)) => self.generic_dicts.get(*g as usize).map_or(0, |d| d.items.len()),
            Some(DictRec::Empty) | None => 0,
        }
    }

    /// The (key, value) pairs of a dict in insertion order.
    pub fn dict_iter(&self, v: Value) -> DictIter<'_> {
        let rec = match v {
            Value::Dict(i) => self.dict_rec(i),
            _ => None,
        };
        DictIter { doc: self, rec, pos: 0 }
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
                d.items.iter().find(|(k, _)| self.as_str(*k) == Some(key)).map(|(_, v)| *v)
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
    pub(super) fn dict_rec(&self, id: u32) -> Option<DictRec> {
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
    pub(super) fn set_generic(&mut self, id: u32, g: u32) {
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
        let fields = self.shape_fields.get(self.records.shape(row)? as usize)?.as_deref()?;
        Some(self.records.value(row, *fields.get(pos)?))
    }

    /// The pairs of a dict, in order.
    pub(super) fn dict_pairs(&self, dict: Value) -> Vec<(Value, Value)> {
        self.dict_iter(dict).collect()
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

    pub(super) fn intern_str(&mut self, s: &str) -> u32 {
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

    pub(super) fn hash_key(&self, v: Value, unique: u32) -> HashKey {
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
                (Value::Str(k), self.doc.dict_vals.get(start as usize + self.pos))
            }
            DictRec::Record(row) => {
                let keys = self.doc.shape_keys(self.doc.records.shape(row)?);
                (Value::Str(*keys.get(self.pos)?), self.doc.record_value(row, self.pos)?)
            }
            DictRec::Generic(g) => *self.doc.generic_dicts.get(g as usize)?.items.get(self.pos)?,
            DictRec::Empty => return None,
        };
        self.pos += 1;
        Some(r)
    }
}
