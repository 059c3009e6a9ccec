//! Frame lists whose frame dicts are written inline.
//!
//! When a snapshot's frame dicts are not shared (every trace entry holds its own copy of its
//! frames, as `pickle.dump` writes a snapshot whose lists were copied), each frame is a small
//! dict written in full: `EMPTY_DICT MEMOIZE MARK (key value)* SETITEMS`, with the keys and most
//! values memo GETs of strings written earlier. The general path builds each as a new dict and
//! then finds that an equal leaf dict exists and makes it an alias of that one
//! ([`Parser::dict_set`]): a 1 GB file holds tens of millions of them.
//!
//! [`Parser::inline_frame_list`] reads such a list whole, `EMPTY_LIST MEMOIZE` and its batches of
//! items, when every inline dict is equal to a leaf dict already read: it makes the same memo
//! writes, with each slot holding the equal dict, and the same list items (as a shared span, like
//! the lists the entry template reads). The bytes of a dict's body are the same every time the
//! same frame is written, so the equal dict is found by those bytes ([`LeafCache`]) without
//! decoding the values again; the cache is dropped whenever a memo slot is written over or a dict
//! it points to is changed. Anything else (a new frame, a string written inline, input that ends
//! early, a value of another kind) leaves the list to the general path, with nothing changed.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use super::raw_lists::{get_at, Epoch, KnownList, ListsByKey, RawLists, BLOCK, NODE_BYTES};
use super::Parser;
use crate::pickle::document::{DictRec, RECORD_BIT};
use crate::pickle::text::small_long;
use crate::pickle::value::{Value, MEMO_DICT, MEMO_LIST};

/// Longest dict body (bytes after `EMPTY_DICT MEMOIZE`) kept in the cache.
const BODY_MAX: usize = 96;
/// Longest list key kept in the cache.
const LIST_KEY_MAX: usize = 64 << 10;
/// Bytes the cache may hold (it is cleared when full).
const CACHE_BYTES_MAX: usize = 32 << 20;
/// Most pairs a leaf dict has ([`Parser::dict_set`] deduplicates dicts of up to 8).
const LEAF_PAIRS_MAX: usize = 8;

/// Leaf dicts by the bytes of their body, and whole frame lists by theirs.
#[derive(Debug, Default)]
pub(super) struct LeafCache {
    by_body: FxHashMap<Box<[u8]>, (u32, u32)>,
    /// Lists by their bytes after `EMPTY_LIST MEMOIZE`, with GETs of dicts copied earlier in the
    /// same list written as their distance from the list's own slot ([`Parser::list_key`]).
    lists: ListsByKey,
    /// The memo slots of the known lists' inline dicts.
    pub(super) list_slots: Vec<u32>,
    /// The known lists whose key is their bytes, to be found without scanning them.
    raw: RawLists,
    /// Bytes held by all of the above (they are cleared when it reaches [`CACHE_BYTES_MAX`]).
    bytes: usize,
    /// `Parser::memo_overwrites` and `Parser::dict_moves` when it was last valid.
    epoch: Epoch<(u64, u64)>,
    /// How many times it was cleared (what `list_slots` offsets mean changes each time).
    pub(super) generation: u64,
}

impl LeafCache {
    fn check_epoch(&mut self, epoch: (u64, u64)) {
        if self.epoch.moved_to(epoch) {
            self.clear();
        }
    }

    fn clear(&mut self) {
        self.by_body.clear();
        self.lists.clear();
        self.list_slots.clear();
        self.raw.clear();
        self.bytes = 0;
        self.generation += 1;
    }

    /// Makes room for `n` more bytes.
    fn room(&mut self, n: usize) {
        if self.bytes + n > CACHE_BYTES_MAX {
            self.clear();
        }
        self.bytes += n;
    }

    fn insert(&mut self, body: &[u8], canon: u32, shape: u32) {
        if body.len() > BODY_MAX {
            return;
        }
        self.room(body.len() + 32);
        self.by_body.insert(body.into(), (canon, shape));
    }

    /// Notes a list read whole; `raw` when its key is its own bytes.
    fn insert_list(&mut self, key: &[u8], raw: bool, span: (u32, u32), slots: &[u32], last_shape: u32) {
        if key.len() > LIST_KEY_MAX {
            return;
        }
        // Twice the key when it is also entered by its bytes, and its nodes (one per block at most).
        let raw_bytes = if raw { key.len() + NODE_BYTES * (key.len() / BLOCK + 1) } else { 0 };
        self.room(key.len() + raw_bytes + 4 * slots.len() + 48);
        let (Ok(start), Ok(len)) = (u32::try_from(self.list_slots.len()), u32::try_from(slots.len())) else {
            return;
        };
        self.list_slots.extend_from_slice(slots);
        let known = KnownList { span, slots: (start, len), last_shape };
        self.lists.insert(key, known);
        if raw {
            self.raw.insert(key, known);
        }
    }
}

/// A value of a leaf dict written without a memo write: a memo GET (`Err(slot)`, resolved by the
/// caller) or a number, `None` or a boolean; (value, bytes taken).
#[inline(always)]
fn leaf_value(rest: &[u8]) -> Option<(Result<Value, u64>, usize)> {
    Some(match *rest.first()? {
        b'h' | b'j' => {
            let (idx, used) = get_at(rest)?;
            (Err(idx), used)
        }
        b'K' => (Ok(Value::Int(i64::from(*rest.get(1)?))), 2),
        b'M' => {
            let b = rest.get(1..3)?;
            (Ok(Value::Int(i64::from(u16::from_le_bytes([b[0], b[1]])))), 3)
        }
        b'J' => {
            let b = rest.get(1..5)?;
            (Ok(Value::Int(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))), 5)
        }
        0x8a => {
            let len = usize::from(*rest.get(1)?);
            if len == 0 || len > 8 {
                return None;
            }
            (Ok(Value::Int(small_long(rest.get(2..2 + len)?))), 2 + len)
        }
        b'G' => {
            let b = rest.get(1..9)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            (Ok(Value::Float(f64::from_be_bytes(a))), 9)
        }
        b'N' => (Ok(Value::None), 1),
        0x88 => (Ok(Value::Bool(true)), 1),
        0x89 => (Ok(Value::Bool(false)), 1),
        _ => return None,
    })
}

/// The bytes a value [`leaf_value`] reads takes, by its opcode (0: another opcode, or `LONG1`,
/// whose length is in the next byte).
const VALUE_LEN: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'h' as usize] = 2;
    t[b'j' as usize] = 5;
    t[b'K' as usize] = 2;
    t[b'M' as usize] = 3;
    t[b'J' as usize] = 5;
    t[b'G' as usize] = 9;
    t[b'N' as usize] = 1;
    t[0x88] = 1;
    t[0x89] = 1;
    t
};

/// The bytes taken by the value at the start of `rest`, as [`leaf_value`] reads it.
#[inline(always)]
fn value_len(rest: &[u8]) -> Option<usize> {
    let op = *rest.first()?;
    let n = match VALUE_LEN[usize::from(op)] {
        0 if op == 0x8a => {
            let len = usize::from(*rest.get(1)?);
            if len == 0 || len > 8 {
                return None;
            }
            2 + len
        }
        0 => return None,
        n => usize::from(n),
    };
    (n <= rest.len()).then_some(n)
}

/// The bytes taken by the memo GET at the start of `rest`.
#[inline(always)]
fn get_len(rest: &[u8]) -> Option<usize> {
    let n = match *rest.first()? {
        b'h' => 2,
        b'j' => 5,
        _ => return None,
    };
    (n <= rest.len()).then_some(n)
}

/// The length of a dict body at the start of `rest`: `MARK (key value)* SETITEMS` or
/// `key value SETITEM`, keys memo GETs, values as [`leaf_value`] reads them.
#[inline(always)]
fn body_len(rest: &[u8]) -> Option<usize> {
    if rest.first() == Some(&b'(') {
        let mut p = 1;
        for _ in 0..LEAF_PAIRS_MAX {
            p += get_len(rest.get(p..)?)?;
            p += value_len(rest.get(p..)?)?;
            if rest.get(p) == Some(&b'u') {
                return Some(p + 1);
            }
        }
        return None;
    }
    let mut p = get_len(rest)?;
    p += value_len(rest.get(p..)?)?;
    (rest.get(p) == Some(&b's')).then_some(p + 1)
}

/// Where a list's cache key differs from its bytes: a GET of a dict copied earlier in the list,
/// at `pos`, `width` bytes, naming the slot `rel` after the list's own.
#[derive(Clone, Copy, Debug)]
pub(super) struct RelGet {
    pos: u32,
    width: u8,
    rel: u32,
}

/// One item of a list at offset `at`; the bytes it takes. GETs must name slots from `base` on
/// (they are noted in `gets`).
#[inline(always)]
fn scan_item(rest: &[u8], at: usize, base: u64, gets: &mut Vec<RelGet>) -> Option<usize> {
    if rest.first() == Some(&b'}') {
        if rest.get(1) != Some(&0x94) {
            return None;
        }
        return Some(2 + body_len(rest.get(2..)?)?);
    }
    let (idx, used) = get_at(rest)?;
    let rel = u32::try_from(idx.checked_sub(base)?).ok()?;
    gets.push(RelGet { pos: u32::try_from(at).ok()?, width: used as u8, rel });
    Some(used)
}

/// What reading one list has gathered, before anything is changed.
struct ListRead {
    /// The list's own memo slot; the inline dicts take the next ones.
    base: u64,
    /// The dict each inline dict's memo slot will hold, in order.
    slots: Vec<u32>,
    /// The shape of the last inline dict.
    last_shape: Option<u32>,
}

impl Parser {
    /// Reads the list at the start of `rest` (an `EMPTY_LIST`) when it is a frame list of inline
    /// leaf dicts equal to dicts already read (and memo GETs of dicts); the bytes taken, or
    /// `None` with nothing changed.
    pub(super) fn inline_frame_list(&mut self, rest: &[u8]) -> Option<usize> {
        // Only a list of dicts written inline: its first item must be one.
        let first_dict = match rest.get(2) {
            Some(b'(') => rest.get(3) == Some(&b'}'),
            Some(b'}') => true,
            _ => false,
        };
        if rest.get(1) != Some(&0x94)
            || !first_dict
            || !self.memo_sparse.is_empty()
            || self.doc.dicts.len() >= RECORD_BIT as usize
        {
            return None;
        }
        self.leaf_cache.check_epoch((self.memo_overwrites, self.dict_moves));
        if let Some((known, end)) = self.leaf_cache.raw.find(rest) {
            self.commit_known_list(known);
            return Some(end);
        }
        let base = self.memo_len();
        let mut gets = std::mem::take(&mut self.list_gets);
        gets.clear();
        let mut buf = std::mem::take(&mut self.list_key_buf);
        let scanned = Self::scan_list(rest, base, &mut gets);
        let key = scanned.and_then(|end| Self::list_key(rest.get(..end)?, &gets, &mut buf));
        if let Some(known) = key.and_then(|k| self.leaf_cache.lists.get(k)) {
            self.commit_known_list(known);
            self.list_gets = gets;
            self.list_key_buf = buf;
            return scanned;
        }
        let items_before = self.doc.list_items.len();
        let mut slots = std::mem::take(&mut self.inline_slots);
        slots.clear();
        let mut read = ListRead { base, slots, last_shape: None };
        let got = self.read_inline_items(rest, &mut read);
        let Some(used) = got.filter(|_| self.doc.list_items.len() > items_before) else {
            self.doc.list_items.truncate(items_before);
            self.inline_slots = read.slots;
            self.list_gets = gets;
            self.list_key_buf = buf;
            return None;
        };
        let list = self.doc.push_shared_list(items_before);
        self.commit_inline_list(list, &read.slots, read.last_shape);
        if let (Some(key), Some(shape), Some(span)) = (key, read.last_shape, self.doc.shared_span(list)) {
            if scanned == Some(used) {
                self.leaf_cache.insert_list(key, gets.is_empty(), span, &read.slots, shape);
            }
        }
        self.inline_slots = read.slots;
        self.list_gets = gets;
        self.list_key_buf = buf;
        Some(used)
    }

    /// Reads a list known from before: its items are shared, its dicts' memo slots written again
    /// (as one run of slots where it can be, see [`super::memo_runs`]).
    fn commit_known_list(&mut self, known: KnownList) {
        let list = self.doc.push_span(known.span.0, known.span.1);
        if self.memo_put_run(list, known.slots, self.leaf_cache.generation) {
            self.inline_list_done(list, u64::from(known.slots.1), Some(known.last_shape));
            return;
        }
        let (s0, n) = known.slots;
        let mut slots = std::mem::take(&mut self.inline_slots);
        slots.clear();
        slots.extend_from_slice(self.leaf_cache.list_slots.get(s0 as usize..(s0 + n) as usize).unwrap_or(&[]));
        self.commit_inline_list(list, &slots, Some(known.last_shape));
        self.inline_slots = slots;
    }

    /// The effects of the general path for a list read inline as `list`: the list on the stack,
    /// its memo slot and then the inline dicts' (`slots`), in file order.
    #[inline]
    fn commit_inline_list(&mut self, list: u32, slots: &[u32], last_shape: Option<u32>) {
        self.memo_tags.push(MEMO_LIST);
        self.memo_ids.push(list);
        self.memo_tags.extend(std::iter::repeat_n(MEMO_DICT, slots.len()));
        self.memo_ids.extend_from_slice(slots);
        self.inline_list_done(list, slots.len() as u64, last_shape);
    }

    /// The rest of a list read inline once its `dicts` dicts' memo slots are written: the list on
    /// the stack and the memo's counts.
    #[inline]
    fn inline_list_done(&mut self, list: u32, dicts: u64, last_shape: Option<u32>) {
        self.stack.push(Value::List(list));
        self.memo_writes += 1 + dicts;
        if let Some(shape) = last_shape {
            // Each inline dict was made an alias of an equal one, which rebinds its memo slot.
            self.memo_rebinds += dicts;
            self.last_shape = shape;
            self.fresh = None;
        }
    }

    /// The end of the list at the start of `rest` (an `EMPTY_LIST MEMOIZE` whose own slot is
    /// `base`), with its GETs of dicts copied earlier in the list in `gets`. `None` (nothing to
    /// cache) when an item is a GET of anything written before the list, or on anything
    /// unexpected.
    fn scan_list(rest: &[u8], base: u64, gets: &mut Vec<RelGet>) -> Option<usize> {
        let mut p = 2;
        loop {
            match rest.get(p) {
                Some(b'(') => {
                    p += 1;
                    while *rest.get(p)? != b'e' {
                        p += scan_item(rest.get(p..)?, p, base, gets)?;
                    }
                    p += 1;
                }
                Some(b'}' | b'h' | b'j') => {
                    let at = rest.get(p..)?;
                    if matches!(at.first(), Some(b'h' | b'j')) {
                        let (_, used) = get_at(at)?;
                        if at.get(used) != Some(&b'a') {
                            return Some(p);
                        }
                    }
                    let used = scan_item(at, p, base, gets)?;
                    if rest.get(p + used) != Some(&b'a') {
                        return None;
                    }
                    p += used + 1;
                }
                _ => return Some(p),
            }
        }
    }

    /// The cache key of a list scanned by [`Parser::scan_list`]: its bytes, with each GET of a
    /// dict copied earlier in the list written as its distance from the list's own slot.
    fn list_key<'a>(bytes: &'a [u8], gets: &[RelGet], buf: &'a mut Vec<u8>) -> Option<&'a [u8]> {
        if gets.is_empty() {
            return Some(bytes);
        }
        buf.clear();
        let mut from = 0;
        for g in gets {
            let at = g.pos as usize;
            buf.extend_from_slice(bytes.get(from..at)?);
            // Marked apart from any opcode, and by the GET's width.
            buf.push(if g.width == 2 { 0xfe } else { 0xff });
            buf.extend_from_slice(&g.rel.to_le_bytes());
            from = at + usize::from(g.width);
        }
        buf.extend_from_slice(bytes.get(from..)?);
        Some(buf)
    }

    /// The items after `EMPTY_LIST MEMOIZE`: batches `MARK item* APPENDS` and single `item
    /// APPEND`s, pushed onto `Document::list_items`; the bytes taken up to the list's end.
    fn read_inline_items(&mut self, rest: &[u8], read: &mut ListRead) -> Option<usize> {
        let mut p = 2;
        loop {
            match rest.get(p) {
                Some(b'(') => {
                    p += 1;
                    while *rest.get(p)? != b'e' {
                        p += self.inline_item(rest.get(p..)?, read)?;
                    }
                    p += 1;
                }
                Some(b'}' | b'h' | b'j') => {
                    let at = rest.get(p..)?;
                    if matches!(at.first(), Some(b'h' | b'j')) {
                        let (_, used) = get_at(at)?;
                        if at.get(used) != Some(&b'a') {
                            return Some(p); // not an item: what follows the list
                        }
                    }
                    let used = self.inline_item(at, read)?;
                    if rest.get(p + used) != Some(&b'a') {
                        return None;
                    }
                    p += used + 1;
                }
                _ => return Some(p),
            }
        }
    }

    /// One item: an inline leaf dict equal to a known one, or a memo GET of a dict.
    #[inline(always)]
    fn inline_item(&mut self, rest: &[u8], read: &mut ListRead) -> Option<usize> {
        if rest.first() == Some(&b'}') {
            if rest.get(1) != Some(&0x94) {
                return None;
            }
            let body_at = rest.get(2..)?;
            let n = body_len(body_at)?;
            let body = body_at.get(..n)?;
            let (canon, shape) = match self.leaf_cache.by_body.get(body) {
                Some(&hit) => hit,
                None => {
                    let found = self.known_leaf(body, read.base)?;
                    self.leaf_cache.insert(body, found.0, found.1);
                    found
                }
            };
            read.slots.push(canon);
            read.last_shape = Some(shape);
            self.doc.list_items.push(canon);
            return Some(2 + n);
        }
        let (idx, used) = get_at(rest)?;
        let d = if idx > read.base {
            // A dict copied earlier in this list.
            *read.slots.get(usize::try_from(idx - read.base - 1).ok()?)?
        } else if idx == read.base {
            return None;
        } else {
            let Value::Dict(d) = self.memo_peek(idx)? else {
                return None;
            };
            // A second reference to the fresh dict: the general path notes it.
            if self.fresh.is_some_and(|(f, _, _)| f == d) {
                return None;
            }
            d
        };
        self.doc.list_items.push(d);
        Some(used)
    }

    /// The leaf dict the general path would make a dict with this body an alias of, and its
    /// shape; `None` when it would keep it as a dict of its own (or do anything else). GETs must
    /// name slots written before the list's own, `list_slot`.
    fn known_leaf(&self, body: &[u8], list_slot: u64) -> Option<(u32, u32)> {
        let mut keys = [0u32; LEAF_PAIRS_MAX];
        let mut vals = [Value::None; LEAF_PAIRS_MAX];
        let mut n = 0;
        let mut p = usize::from(body.first() == Some(&b'('));
        while !matches!(body.get(p), Some(b'u' | b's') | None) {
            let (kidx, used) = get_at(body.get(p..)?)?;
            p += used;
            let (v, used) = leaf_value(body.get(p..)?)?;
            p += used;
            let key = self.slot_before(kidx, list_slot)?;
            let Value::Str(k) = key else {
                return None;
            };
            let v = match v {
                Ok(v) => v,
                Err(vidx) => self.slot_before(vidx, list_slot)?,
            };
            if !matches!(
                v,
                Value::None | Value::Bool(_) | Value::Int(_) | Value::UInt(_) | Value::Float(_) | Value::Str(_)
            ) {
                return None;
            }
            *keys.get_mut(n)? = k;
            *vals.get_mut(n)? = v;
            n += 1;
        }
        let keys = keys.get(..n)?;
        let vals = vals.get(..n)?;
        let shape = self.existing_shape(keys)?;
        // Dicts whose keys are record fields may become trace records instead.
        if self.doc.shape_fields.get(shape as usize)?.is_some() {
            return None;
        }
        let mut h = FxHasher::default();
        shape.hash(&mut h);
        for v in vals {
            v.hash_bits(&mut h);
        }
        let canon = *self.leaf_index.get(&h.finish())?;
        let Some(DictRec::Compact { shape: cs, start }) = self.doc.dicts.get(canon as usize).copied() else {
            return None;
        };
        if cs != shape || vals.iter().enumerate().any(|(i, &v)| self.doc.dict_vals.get(start as usize + i) != v) {
            return None;
        }
        Some((canon, shape))
    }

    /// The value of memo slot `idx` when it was written before the list being read, whose own
    /// slot is `list_slot` (that one and the next are not written yet).
    #[inline]
    fn slot_before(&self, idx: u64, list_slot: u64) -> Option<Value> {
        if idx >= list_slot {
            return None;
        }
        self.memo_peek(idx)
    }

    /// The shape of dicts with these keys, if one has been made (the general path would make a
    /// new one otherwise).
    fn existing_shape(&self, keys: &[u32]) -> Option<u32> {
        if let Some(k) = self.doc.shapes.get(self.last_shape as usize) {
            if **k == *keys {
                return Some(self.last_shape);
            }
        }
        self.doc.shape_index.get(keys).copied()
    }
}

#[cfg(test)]
mod tests {
    use crate::pickle::{parse, Document, Parser, Value};

    /// Five trace entries whose frame lists hold their own frame dicts, as a deep copy of each
    /// entry's frames pickles: the first writes its strings, the next ones fetch them.
    fn entries() -> Vec<u8> {
        let mut b = vec![0x80, 4, b']', 0x94, b'('];
        // Slots 1..=11: the entry, its keys and values, frames [f, g, f] (f fetched the second time).
        b.extend_from_slice(b"}\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x06frames\x94]\x94(");
        b.extend_from_slice(b"}\x94(\x8c\x04name\x94\x8c\x01f\x94\x8c\x04line\x94K\x01u");
        b.extend_from_slice(b"}\x94(h\x07\x8c\x01g\x94h\x09K\x02uh\x06eu");
        // Slots 12..=15 and 16..=19: the same entry, its copies of f and g read inline.
        b.extend_from_slice(
            b"}\x94(h\x02h\x03h\x04]\x94(}\x94(h\x07h\x08h\x09K\x01u}\x94(h\x07h\x0bh\x09K\x02uh\x0eeu",
        );
        b.extend_from_slice(
            b"}\x94(h\x02h\x03h\x04]\x94(}\x94(h\x07h\x08h\x09K\x01u}\x94(h\x07h\x0bh\x09K\x02uh\x12eu",
        );
        // Slots 20..=22: a frame list of one dict, by APPEND.
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04]\x94}\x94(h\x07h\x0bh\x09K\x02uau");
        // Slots 23, 24: memo GETs of the dicts of slots 14 and 22.
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04]\x94(h\x0eh\x16eu");
        b.extend_from_slice(b"e.");
        b
    }

    fn frames(d: &Document) -> Vec<Vec<Value>> {
        d.items(d.root()).iter().map(|e| d.items(d.get(e, "frames").unwrap_or(Value::None)).to_vec()).collect()
    }

    #[test]
    fn inline_frame_dicts_are_the_dicts_read_before() {
        let bytes = entries();
        let d = parse(&bytes).expect("parses");
        let got = frames(&d);
        let (f, g) = (got[0][0], got[0][1]);
        assert_ne!(f, g);
        assert_eq!(got, vec![vec![f, g, f], vec![f, g, f], vec![f, g, f], vec![g], vec![f, g]]);
        let list = |i: usize| d.items(d.root()).get(i).and_then(|e| d.get(e, "frames")).unwrap_or(Value::None);
        // The copies were read whole, as shared spans; the first list (new strings) was not.
        assert_eq!(d.shared_list_key(list(0)), None);
        for i in 1..4 {
            assert!(d.shared_list_key(list(i)).is_some(), "entry {i}");
        }
        assert_eq!(d.shared_list_key(list(1)), d.shared_list_key(list(2)));
        assert_eq!(d.dict_count(), 5 + 2, "the copies are not dicts of their own");
        for chunk in 1..=bytes.len() {
            let mut p = Parser::new();
            for c in bytes.chunks(chunk) {
                p.feed(c).expect("feeds");
            }
            assert_eq!(frames(&p.finish().expect("finishes")), got, "chunks of {chunk}");
        }
    }

    #[test]
    fn a_frame_dict_given_more_items_is_not_taken_for_its_copies() {
        let mut b = vec![0x80, 4, b']', 0x94, b'('];
        b.extend_from_slice(b"}\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x06frames\x94]\x94(");
        b.extend_from_slice(b"}\x94(\x8c\x04name\x94\x8c\x01f\x94\x8c\x04line\x94K\x01ueu");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04]\x94(}\x94(h\x07h\x08h\x09K\x01ueu");
        // Dict f (slot 6) gets another key: a copy of f read after that is a dict of its own.
        b.extend_from_slice(b"h\x06h\x02K\x07s0");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04]\x94(}\x94(h\x07h\x08h\x09K\x01ueu");
        b.extend_from_slice(b"e.");
        let d = parse(&b).expect("parses");
        let got = frames(&d);
        assert_eq!(got[0], got[1]);
        assert_ne!(got[2], got[0]);
        assert_eq!(d.dict_len(got[0][0]), 3);
        assert_eq!(d.dict_len(got[2][0]), 2);
    }
}
