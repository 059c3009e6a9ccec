//! A byte template for trace entries.
//!
//! CPython writes every trace entry the same way: `EMPTY_DICT MEMOIZE MARK`, then for each key a
//! memo GET of the key string (the keys were memoized by the first entry) and the value, then
//! `SETITEMS`. Once one entry has been read as a record, its key GETs are kept; the next entries
//! are matched against them and only their values are decoded, straight into a row of the record
//! columns, each key and value read from one 8-byte word (an entry within 8 bytes of the end of
//! the input at hand is left to the general path). Keys in PyTorch's order ([`TORCH_ORDER`], every
//! real capture) are read one after the other; others in a loop over the template's keys.
//! Values may be memo GETs, small ints, strings written inline (a fresh `compile_context` string,
//! say) and frame lists written inline as memo GETs of frame dicts; the memo writes of inline
//! values are made, in file order, once the whole entry has matched. An inline frame list whose
//! bytes equal those of one read before is found by those bytes
//! ([`TemplateLists`](super::template_lists::TemplateLists), which guesses it from the list of
//! the entry before) without looking up its items again: real `stacks="all"` captures copy the
//! same ~50 GETs of frame dicts into hundreds of thousands of entries.
//! Anything unexpected (another key, a value of another type or encoding, input that ends early)
//! leaves the entry to the general path with nothing changed but the string table (interning a
//! string twice gives the same id). A memo slot written twice retires the template, since a key
//! GET may then mean another string.

use super::entry_words::{get_of_word, int_of_word, word_at, KeyWord};
use super::Parser;
use crate::pickle::document::RECORD_BIT;
use crate::pickle::records::{Field, RowValues};
use crate::pickle::value::{Value, MEMO_DICT, MEMO_LIST, MEMO_STR};

/// Most memo writes the inline values of one entry make (one per field).
const MAX_INLINE_MEMO: usize = 8;

/// Memo writes of values read inline (strings and lists), in file order, not made yet: each
/// as its memo tag and id, so an entry starts with 40 bytes to clear, not 8 values'.
#[derive(Clone, Copy, Debug)]
pub(super) struct InlineMemo {
    ids: [u32; MAX_INLINE_MEMO],
    tags: [u8; MAX_INLINE_MEMO],
    len: usize,
}

impl InlineMemo {
    pub(super) fn new() -> Self {
        InlineMemo { ids: [0; MAX_INLINE_MEMO], tags: [0; MAX_INLINE_MEMO], len: 0 }
    }

    /// Adds the write of a string or list; `None` for other values or when there are too many.
    fn push(&mut self, v: Value) -> Option<()> {
        let (tag, id) = match v {
            Value::Str(i) => (MEMO_STR, i),
            Value::List(i) => (MEMO_LIST, i),
            _ => return None,
        };
        *self.ids.get_mut(self.len)? = id;
        *self.tags.get_mut(self.len)? = tag;
        self.len += 1;
        Some(())
    }

    /// The writes in order: (memo tag, id).
    fn writes(&self) -> impl Iterator<Item = (u8, u32)> + '_ {
        self.tags.iter().copied().zip(self.ids.iter().copied()).take(self.len)
    }
}

/// How an entry's frame list was written.
#[derive(Clone, Copy, Debug)]
enum ListRead {
    /// As a GET (or not at all).
    NotInline,
    /// Inline, its items read to the end of `list_items`; where its bytes are in the entry and
    /// how many.
    Items { at: usize, len: usize },
    /// Inline, with the bytes of a list read before: that list's span and id in
    /// [`TemplateLists`](super::template_lists::TemplateLists).
    Known { span: (u32, u32), id: u32 },
}

/// What matching one entry has read so far.
struct EntryRead {
    /// The memo slot of the entry dict itself; value GETs must name earlier slots.
    own_slot: u64,
    rec: RowValues,
    memo: InlineMemo,
    /// How the frame list was written.
    list: ListRead,
}

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

    /// The GET as the low bytes of a little-endian word: (those bytes, the mask that keeps
    /// them, how many).
    fn word(self) -> Option<KeyWord> {
        if self.long {
            Some(KeyWord { bytes: u64::from(b'j') | u64::from(self.idx) << 8, mask: (1 << 40) - 1, len: 5 })
        } else {
            let idx = u8::try_from(self.idx).ok()?;
            Some(KeyWord { bytes: u64::from(b'h') | u64::from(idx) << 8, mask: 0xffff, len: 2 })
        }
    }
}

/// The keys of a trace entry as written, with their fields, for entries of one shape.
#[derive(Debug)]
pub(super) struct EntryTemplate {
    shape: u32,
    keys: Vec<(KeyWord, Field)>,
    /// The keys' GETs when the fields are in [`TORCH_ORDER`].
    torch_keys: Option<[KeyWord; 8]>,
    /// `Parser::memo_rebinds` when it was made.
    rebinds: u64,
}

/// The order in which PyTorch writes a trace entry's keys (every capture of the last releases).
const TORCH_ORDER: [Field; 8] = [
    Field::Action,
    Field::Addr,
    Field::Size,
    Field::Stream,
    Field::TimeUs,
    Field::CompileContext,
    Field::UserMetadata,
    Field::Frames,
];

/// Where the value after `key` starts, when `key`'s GET is at `p` of `rest`.
#[inline(always)]
fn after_key(rest: &[u8], p: usize, key: KeyWord) -> Option<usize> {
    (word_at(rest, p)? & key.mask == key.bytes).then_some(p + key.len)
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

impl Parser {
    /// Reads the trace entries at the start of `rest` (each an `EMPTY_DICT`) with the template,
    /// one after the other while they match (a batch of a trace list is up to 1000 in a row); the
    /// bytes taken, or `None` with nothing changed when the first does not match.
    ///
    /// Not inlined into the decoder's loop, which it made one function of 33 KB of WebAssembly
    /// that browsers optimize late and less well (docs/performance.md).
    #[inline(never)]
    pub(super) fn template_entries(&mut self, rest: &[u8]) -> Option<usize> {
        let t = self.entry_template.take()?;
        let mut used = 0;
        while let Some(n) =
            rest.get(used..).filter(|r| r.first() == Some(&b'}')).and_then(|r| self.read_with_template(&t, r))
        {
            used += n;
        }
        self.entry_template = Some(t);
        (used > 0).then_some(used)
    }

    #[inline(always)]
    fn read_with_template(&mut self, t: &EntryTemplate, rest: &[u8]) -> Option<usize> {
        if t.rebinds != self.memo_rebinds
            || rest.get(1..3)? != [0x94, b'(']
            || self.doc.records.len() >= RECORD_BIT as usize
        {
            return None;
        }
        let list_items_before = self.doc.list_items.len();
        let mut e = EntryRead {
            own_slot: self.memo_len(),
            rec: RowValues::default(),
            memo: InlineMemo::new(),
            list: ListRead::NotInline,
        };
        let row = self
            .match_entry(t, rest, &mut e)
            .and_then(|used| Some((self.doc.records.push_record(t.shape, &e.rec)?, used)));
        let Some((row, used)) = row else {
            self.doc.list_items.truncate(list_items_before);
            return None;
        };
        match e.list {
            ListRead::NotInline => {}
            ListRead::Known { span: (start, len), id } => {
                let list = self.doc.push_span(start, len);
                self.template_lists.link(list, id);
            }
            ListRead::Items { at, len } => {
                let list = self.doc.push_shared_list(list_items_before);
                if let (Some(span), Some(bytes)) = (self.doc.shared_span(list), rest.get(at..at + len)) {
                    if let Some(id) = self.template_lists.insert(bytes, span, self.memo_rebinds) {
                        self.template_lists.link(list, id);
                    }
                }
            }
        }
        let d = Value::Dict(RECORD_BIT | row);
        self.fresh = None;
        self.stack.push(d);
        self.memo_append_record(e.own_slot, RECORD_BIT | row);
        self.put_inline_memo(&e.memo);
        Some(used)
    }

    /// Memo slot `idx` takes record dict `d`, which is not the fresh dict: the same as
    /// `memo_put`, with the usual case (the next dense slot) done at once.
    #[inline(always)]
    fn memo_append_record(&mut self, idx: u64, d: u32) {
        if idx == self.memo_next() && self.memo_sparse.is_empty() && self.fresh.is_none() {
            self.memo_writes += 1;
            self.memo_tags.push(MEMO_DICT);
            self.memo_ids.push(d);
        } else {
            self.memo_put(idx, Value::Dict(d));
        }
    }

    /// Makes the memo writes of inline values, in order, after the enclosing value's own.
    #[inline]
    pub(super) fn put_inline_memo(&mut self, memo: &InlineMemo) {
        for (tag, id) in memo.writes() {
            // A string or list goes to the next dense slot as `memo_put` would put it.
            if self.memo_sparse.is_empty() {
                self.memo_writes += 1;
                self.memo_tags.push(tag);
                self.memo_ids.push(id);
            } else {
                let v = if tag == MEMO_STR { Value::Str(id) } else { Value::List(id) };
                let idx = self.memo_len();
                self.memo_put(idx, v);
            }
        }
    }

    /// Matches the keys and decodes the values of one entry; the bytes taken up to and
    /// including its `SETITEMS`.
    #[inline(always)]
    fn match_entry(&mut self, t: &EntryTemplate, rest: &[u8], e: &mut EntryRead) -> Option<usize> {
        let p = match &t.torch_keys {
            Some(keys) => self.torch_entry(keys, rest, e)?,
            None => {
                let mut p = 3;
                for &(key, field) in &t.keys {
                    p = after_key(rest, p, key)?;
                    p += self.template_value(rest, p, field, e)?;
                }
                p
            }
        };
        (rest.get(p) == Some(&b'u')).then_some(p + 1)
    }

    /// The keys and values of an entry whose keys are in [`TORCH_ORDER`], one after the other:
    /// no loop over the template's keys and no choice by field per value (the template's
    /// instructions 723M -> 510M on the real-shaped 1M file); where the `SETITEMS` should be.
    #[inline(always)]
    fn torch_entry(&mut self, keys: &[KeyWord; 8], rest: &[u8], e: &mut EntryRead) -> Option<usize> {
        let [action, addr, size, stream, time_us, compile_context, user_metadata, frames] = *keys;
        let mut p = after_key(rest, 3, action)?;
        p += self.template_value(rest, p, Field::Action, e)?;
        p = after_key(rest, p, addr)?;
        p += self.template_value(rest, p, Field::Addr, e)?;
        p = after_key(rest, p, size)?;
        p += self.template_value(rest, p, Field::Size, e)?;
        p = after_key(rest, p, stream)?;
        p += self.template_value(rest, p, Field::Stream, e)?;
        p = after_key(rest, p, time_us)?;
        p += self.template_value(rest, p, Field::TimeUs, e)?;
        p = after_key(rest, p, compile_context)?;
        p += self.template_value(rest, p, Field::CompileContext, e)?;
        p = after_key(rest, p, user_metadata)?;
        p += self.template_value(rest, p, Field::UserMetadata, e)?;
        p = after_key(rest, p, frames)?;
        p += self.template_value(rest, p, Field::Frames, e)?;
        Some(p)
    }

    /// The value of memo slot `idx` when it was written before the entry began.
    #[inline(always)]
    fn memo_before(&self, idx: u64, own_slot: u64) -> Option<Value> {
        if idx >= own_slot {
            return None;
        }
        self.memo_peek(idx)
    }

    /// Decodes the value of `field` at `p` of `rest` into `e.rec`; the bytes taken. One arm per
    /// field, each storing where it decodes: a second match on the field per value took a tenth
    /// of the template's instructions.
    #[inline(always)]
    fn template_value(&mut self, rest: &[u8], p: usize, field: Field, e: &mut EntryRead) -> Option<usize> {
        let w = word_at(rest, p)?;
        let used = match field {
            Field::Addr => {
                let (x, used) = int_of_word(w, rest, p)?;
                e.rec.addr = u64::try_from(x).ok()?;
                used
            }
            Field::Size => {
                let (x, used) = int_of_word(w, rest, p)?;
                e.rec.size_bytes = u64::try_from(x).ok()?;
                used
            }
            Field::Stream => {
                let (x, used) = int_of_word(w, rest, p)?;
                e.rec.stream = x;
                used
            }
            Field::TimeUs => {
                let (x, used) = int_of_word(w, rest, p)?;
                e.rec.time_us = x;
                used
            }
            Field::Frames => {
                let (list, used) = if w as u8 == b']' {
                    self.inline_dict_list(rest.get(p..)?, p, e)?
                } else {
                    let (idx, used) = get_of_word(w)?;
                    match self.memo_before(idx, e.own_slot)? {
                        Value::List(l) => {
                            // The next list copied inline is guessed from this one.
                            self.template_lists.fetched(l);
                            (l, used)
                        }
                        _ => return None,
                    }
                };
                e.rec.frames = list;
                used
            }
            Field::Action => {
                let (s, used) = self.str_value(rest, p, w, e)?;
                e.rec.action = s;
                used
            }
            Field::CompileContext => {
                let (s, used) = self.str_value(rest, p, w, e)?;
                e.rec.compile_context = s;
                used
            }
            Field::UserMetadata => {
                let (s, used) = self.str_value(rest, p, w, e)?;
                e.rec.user_metadata = s;
                used
            }
        };
        Some(used)
    }

    /// A string value at `p` of `rest` (word `w`): a memo GET of a string written before the
    /// entry, or one written inline; (string id, bytes taken).
    #[inline(always)]
    fn str_value(&mut self, rest: &[u8], p: usize, w: u64, e: &mut EntryRead) -> Option<(u32, usize)> {
        match w as u8 {
            0x8c | b'X' => self.inline_str(rest.get(p..)?, &mut e.memo),
            _ => {
                let (idx, used) = get_of_word(w)?;
                match self.memo_before(idx, e.own_slot)? {
                    Value::Str(s) => Some((s, used)),
                    _ => None,
                }
            }
        }
    }

    /// A string written inline (`SHORT_BINUNICODE` or `BINUNICODE`, valid UTF-8) and the
    /// `MEMOIZE` that may follow it (added to `memo`): (string id, bytes taken).
    #[inline]
    pub(super) fn inline_str(&mut self, rest: &[u8], memo: &mut InlineMemo) -> Option<(u32, usize)> {
        let (len, header): (usize, usize) = match *rest.first()? {
            0x8c => (usize::from(*rest.get(1)?), 2),
            b'X' => {
                let b = rest.get(1..5)?;
                (usize::try_from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok()?, 5)
            }
            _ => return None,
        };
        let end = header.checked_add(len)?;
        let id = self.intern_inline_str(rest.get(header..end)?)?;
        if rest.get(end) == Some(&0x94) {
            memo.push(Value::Str(id))?;
            return Some((id, end + 1));
        }
        Some((id, end))
    }

    /// Interns the text of an inline string; `None` when it is not valid UTF-8 (the general
    /// path decodes those). The last one is remembered: files repeat the same few (`"N/A"`).
    #[inline]
    fn intern_inline_str(&mut self, raw: &[u8]) -> Option<u32> {
        if let Some(id) = self.last_inline_str {
            if self.doc.str(id).as_bytes() == raw {
                return Some(id);
            }
        }
        let id = self.doc.intern_str(std::str::from_utf8(raw).ok()?);
        self.last_inline_str = Some(id);
        Some(id)
    }

    /// A list of memoized dicts written inline: `EMPTY_LIST MEMOIZE`, then batches of items,
    /// each `MARK GET... APPENDS` or `GET APPEND`, as CPython writes a frame list. Its items go
    /// to the end of `Document::list_items`; (the id the list will get, bytes taken).
    /// `at` is where the list starts in the entry.
    fn inline_dict_list(&mut self, rest: &[u8], at: usize, e: &mut EntryRead) -> Option<(u32, usize)> {
        if rest.get(1) != Some(&0x94) {
            return None;
        }
        let id = u32::try_from(self.doc.lists.len()).ok()?;
        e.memo.push(Value::List(id))?;
        if let Some((span, len, known)) = self.template_lists.find(rest, self.memo_rebinds) {
            e.list = ListRead::Known { span, id: known };
            return Some((id, len));
        }
        let mut p = 2;
        loop {
            match rest.get(p) {
                Some(b'(') => {
                    p += 1;
                    while *rest.get(p)? != b'e' {
                        p += self.inline_list_item(rest.get(p..)?, e.own_slot)?;
                    }
                    p += 1;
                }
                Some(b'h' | b'j') => {
                    let (_, used) = get_index(rest.get(p..)?)?;
                    if rest.get(p + used) != Some(&b'a') {
                        break; // the next key
                    }
                    p += self.inline_list_item(rest.get(p..)?, e.own_slot)? + 1;
                }
                _ => break,
            }
        }
        e.list = ListRead::Items { at, len: p };
        Some((id, p))
    }

    /// One item of an inline list: a memo GET of a dict, appended to `Document::list_items`.
    #[inline(always)]
    fn inline_list_item(&mut self, rest: &[u8], own_slot: u64) -> Option<usize> {
        let (idx, used) = get_index(rest)?;
        let Value::Dict(d) = self.memo_before(idx, own_slot)? else {
            return None;
        };
        self.doc.list_items.push(d);
        Some(used)
    }

    /// Makes room for the entries that may follow one of `entry_len` bytes: as many as the rest of
    /// the input could hold if they were as long (at least 32 bytes each), so the record columns
    /// do not grow (and copy themselves) one doubling at a time. Done once, at the first
    /// template: the next entry of another shape estimates about as many rows, a few more or
    /// less, and making room again would double every column at once. Where `realloc` cannot
    /// remap pages (WebAssembly) that copies the whole reserved room: at 1 GB, 650 MB copied and
    /// touched for the second entry of a trace, half a second before the second MiB is read.
    /// The memo is left to `reserve_memo`, which sizes it from its use once more is read: room
    /// made here first was copied whole there (4.5 MB of fresh memory written at 1M entries).
    fn reserve_for_entries(&mut self, entry_len: usize, rest_len: usize) {
        if std::mem::replace(&mut self.entries_reserved, true) {
            return;
        }
        let remaining =
            self.total_len.map_or(rest_len as u64, |t| t.saturating_sub(self.consumed).max(rest_len as u64));
        let rows = remaining / entry_len.max(32) as u64;
        let room = (RECORD_BIT as usize).saturating_sub(self.doc.records.len());
        let rows = usize::try_from(rows).unwrap_or(room).min(room);
        self.doc.records.reserve(rows);
    }

    /// Keeps the keys of a record just read (`codes`, one per key) as the template, unless the
    /// template in use already stands for them.
    /// `entry_len` is the bytes the record took and `rest_len` the bytes from its start to the end
    /// of the input at hand.
    pub(super) fn remember_template(
        &mut self,
        shape: u32,
        codes: &[Option<KeyCode>],
        entry_len: usize,
        rest_len: usize,
    ) {
        if self.entry_template.as_ref().is_some_and(|t| t.shape == shape && t.rebinds == self.memo_rebinds) {
            return;
        }
        let Some(Some(fields)) = self.doc.shape_fields.get(shape as usize) else {
            return;
        };
        if codes.len() != fields.len() {
            return;
        }
        let keys: Option<Vec<(KeyWord, Field)>> =
            codes.iter().zip(fields.iter()).map(|(c, &f)| Some((c.and_then(KeyCode::word)?, f))).collect();
        if let Some(keys) = keys {
            self.reserve_for_entries(entry_len, rest_len);
            let torch_keys = keys.iter().map(|k| k.1).eq(TORCH_ORDER).then(|| keys.iter().map(|k| k.0));
            let torch_keys = torch_keys.and_then(|k| <[KeyWord; 8]>::try_from(k.collect::<Vec<_>>()).ok());
            self.entry_template = Some(EntryTemplate { shape, keys, torch_keys, rebinds: self.memo_rebinds });
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
            .map(|e| d.dict_iter(e).map(|(k, v)| (d.as_str(k).unwrap_or("?").to_owned(), v)).collect())
            .collect()
    }

    /// Entries of two shapes, {action, addr} and {action, addr, size}, each read by a template
    /// of its own, then the first shape again; and where the third entry starts.
    fn entries_of_two_shapes() -> (Vec<u8>, usize) {
        let mut b = vec![0x80, 4, b']', 0x94, b'('];
        b.extend_from_slice(b"}\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x04addr\x94K\x10u");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x20u");
        let third = b.len();
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x30\x8c\x04size\x94K\x08u");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x40h\x07K\x08u");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x50u");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x60h\x07K\x08u");
        b.extend_from_slice(b"e.");
        (b, third)
    }

    #[test]
    fn room_for_entries_is_made_once_however_often_the_template_changes() {
        let (bytes, third) = entries_of_two_shapes();
        let mut p = Parser::new();
        // As if the entries were the start of a megabyte.
        p.set_total_len(1 << 20);
        // Up to the third entry: the first shape's template is made by then.
        let (head, rest) = bytes.split_at(third);
        p.feed(head).expect("feeds");
        let first = p.doc.records.capacity();
        assert!(first > 10_000, "room for the entries a megabyte may hold: {first}");
        // The memo's room is made from its use (`reserve_memo`), not with the entries'.
        assert!(p.memo_ids.capacity() < 1_000, "{}", p.memo_ids.capacity());
        p.feed(rest).expect("feeds");
        assert_eq!(p.doc.records.capacity(), first, "a second template made room again");
        assert_eq!(p.memo_tags.capacity(), p.memo_ids.capacity());
        let d = p.finish().expect("finishes");
        let s = summary(&d);
        assert_eq!(s.len(), 6);
        assert_eq!(
            s[3],
            vec![
                (
                    "action".to_owned(),
                    d.get(d.items(d.root()).get(3).unwrap_or(Value::None), "action").unwrap_or(Value::None)
                ),
                ("addr".to_owned(), Value::Int(64)),
                ("size".to_owned(), Value::Int(8))
            ]
        );
        assert_eq!(s[4][1], ("addr".to_owned(), Value::Int(80)));
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
        assert!(d.trace_record(d.items(d.root()).get(2).unwrap_or(Value::None)).is_some());
    }

    /// Entries whose action and frame list are written inline (a frame list of two items, one
    /// by APPEND, an empty one, and a copy of the first), then an APPENDS onto the first list.
    fn entries_with_inline_values() -> Vec<u8> {
        let mut b = vec![0x80, 4, b']', 0x94, b'('];
        // Slots 1..=9: the entry, its keys and values, a frame list holding a new frame dict.
        b.extend_from_slice(b"}\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x04addr\x94K\x10\x8c\x06frames\x94");
        b.extend_from_slice(b"]\x94(}\x94(\x8c\x04name\x94\x8c\x01f\x94uh\x07eu");
        // Slot 10: all GETs, so the template is made.
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x20h\x05h\x06u");
        // Slots 11..=13: an inline action string and an inline frame list of two items.
        b.extend_from_slice(b"}\x94(h\x02\x8c\x0efree_requested\x94h\x04K\x30h\x05]\x94(h\x07h\x07eu");
        // Slots 14, 15: the string of slot 12 by GET, a frame list of one item by APPEND.
        b.extend_from_slice(b"}\x94(h\x02h\x0ch\x04K\x40h\x05]\x94h\x07au");
        // Slots 16, 17: an empty inline frame list.
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x50h\x05]\x94u");
        // Slots 18, 19: the same items as slot 13's list.
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x60h\x05]\x94(h\x07h\x07eu");
        // One more item for slot 13's list only.
        b.extend_from_slice(b"h\x0d(h\x07e0");
        b.extend_from_slice(b"e.");
        b
    }

    /// Per entry: its action, addr and the number of frames.
    fn inline_summary(d: &Document) -> Vec<(String, Option<Value>, usize)> {
        d.items(d.root())
            .iter()
            .map(|e| {
                let action = d.get(e, "action").and_then(|v| d.as_str(v)).unwrap_or("?").to_owned();
                let frames = d.get(e, "frames").map_or(usize::MAX, |f| d.items(f).len());
                (action, d.get(e, "addr"), frames)
            })
            .collect()
    }

    #[test]
    fn inline_strings_and_frame_lists_are_read_by_the_template() {
        let bytes = entries_with_inline_values();
        let d = parse(&bytes).expect("parses");
        let s = inline_summary(&d);
        let want = [
            ("alloc", 16, 2),
            ("alloc", 32, 2),
            ("free_requested", 48, 3),
            ("free_requested", 64, 1),
            ("alloc", 80, 0),
            ("alloc", 96, 2),
        ];
        assert_eq!(s.len(), want.len());
        for (got, (action, addr, frames)) in s.iter().zip(want) {
            assert_eq!(got, &(action.to_owned(), Some(Value::Int(addr)), frames));
        }
        // Entries 3 to 5 were read by the template: their frame lists are shared spans.
        let frames = |i: usize| d.items(d.root()).get(i).and_then(|e| d.get(e, "frames")).unwrap_or(Value::None);
        for i in 3..6 {
            assert!(d.shared_list_key(frames(i)).is_some(), "entry {i}");
        }
        assert_eq!(d.shared_list_key(frames(2)), None, "a list appended to later has items of its own");
        for chunk in [1, 2, 3, 5, 7, 11, 13] {
            assert_eq!(inline_summary(&chunked(&bytes, chunk)), s, "chunks of {chunk}");
        }
    }

    /// Frame lists of the same bytes: read once, then found by their bytes; after the frame's memo
    /// slot is written over, the same bytes mean other items.
    fn copied_lists_around_a_rebound_frame() -> Vec<u8> {
        let mut b = vec![0x80, 4, b']', 0x94, b'('];
        // Slots 1..=9 as in `entries_with_inline_values`; slot 10 makes the template.
        b.extend_from_slice(b"}\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x04addr\x94K\x10\x8c\x06frames\x94");
        b.extend_from_slice(b"]\x94(}\x94(\x8c\x04name\x94\x8c\x01f\x94uh\x07eu");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x20h\x05h\x06u");
        // Entries at `addrs` with the same inline list of the frame (slot 7) twice.
        let copies = |b: &mut Vec<u8>, addrs: [u8; 2]| {
            for addr in addrs {
                b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K");
                b.push(addr);
                b.extend_from_slice(b"h\x05]\x94(h\x07h\x07eu");
            }
        };
        // The second is found by its bytes.
        copies(&mut b, [0x30, 0x40]);
        // Slot 7 (the frame) now holds an empty dict; the next entry, all GETs, makes the
        // template again.
        b.extend_from_slice(b"}q\x070");
        b.extend_from_slice(b"}\x94(h\x02h\x03h\x04K\x50h\x05h\x06u");
        copies(&mut b, [0x60, 0x70]);
        b.extend_from_slice(b"e.");
        b
    }

    #[test]
    fn lists_found_by_their_bytes_follow_a_rebound_memo_slot() {
        let bytes = copied_lists_around_a_rebound_frame();
        let names = |d: &Document| -> Vec<Vec<String>> {
            d.items(d.root())
                .iter()
                .map(|e| {
                    let frames = d.get(e, "frames").unwrap_or(Value::None);
                    d.items(frames)
                        .iter()
                        .map(|f| d.get(f, "name").and_then(|n| d.as_str(n)).unwrap_or("-").to_owned())
                        .collect()
                })
                .collect()
        };
        let f = |n: &str| vec![n.to_owned(), n.to_owned()];
        let want = vec![f("f"), f("f"), f("f"), f("f"), f("f"), f("-"), f("-")];
        let mut p = Parser::new();
        p.feed(&bytes).expect("feeds");
        assert!(p.template_lists.bytes > 0, "the list was entered");
        let d = p.finish().expect("finishes");
        assert_eq!(names(&d), want);
        for chunk in [1, 3, 7, 16] {
            assert_eq!(names(&chunked(&bytes, chunk)), want, "chunks of {chunk}");
        }
    }

    /// An entry's action, addr, size, stream, time_us, compile_context, user_metadata and number
    /// of frames.
    type TorchEntry = (String, i64, i64, i64, i64, String, String, usize);

    /// Trace entries with PyTorch's keys in PyTorch's order (the first writes them inline, the
    /// others GET them), each int in another encoding, strings and frame lists by GET and
    /// inline; and each entry's (action, addr, size, stream, time_us, compile_context,
    /// user_metadata, number of frames) as written.
    fn entries_in_torch_order() -> (Vec<u8>, Vec<TorchEntry>) {
        let mut b = vec![0x80, 4, b']', 0x94, b'('];
        // Slots 1..=13: the entry, then each key and value; slot 13 holds an empty frame list.
        b.extend_from_slice(b"}\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x04addr\x94K\x10\x8c\x04size\x94K\x20");
        b.extend_from_slice(
            b"\x8c\x06stream\x94K\x00\x8c\x07time_us\x94K\x01\x8c\x0fcompile_context\x94\x8c\x03N/A\x94",
        );
        b.extend_from_slice(b"\x8c\x0duser_metadata\x94\x8c\x00\x94\x8c\x06frames\x94]\x94u");
        let mut want = vec![("alloc".to_owned(), 16, 32, 0, 1, "N/A".to_owned(), String::new(), 0)];
        let ints: [(&[u8], i64); 9] = [
            (b"K\x07", 7),
            (b"M\x34\x12", 0x1234),
            (b"J\x78\x56\x34\x12", 0x1234_5678),
            (b"J\xff\xff\xff\xff", -1),
            (b"\x8a\x05\x00\x10\x32\x54\x76", 0x76_5432_1000),
            (b"\x8a\x06\x00\x20\x42\x1d\x14\x7f", 0x7f14_1d42_2000),
            (b"\x8a\x07\x40\x8e\x1b\x8d\x7c\x61\x06", 0x0006_617c_8d1b_8e40),
            (b"\x8a\x08\x01\x00\x00\x00\x00\x00\x00\x40", 0x4000_0000_0000_0001),
            (b"\x8a\x02\xff\xfe", -257),
        ];
        for (i, &(bytes, x)) in ints.iter().enumerate() {
            let (n, m) = (ints[(i + 1) % ints.len()], ints[(i + 2) % ints.len()]);
            b.extend_from_slice(b"}\x94(h\x02");
            // The action inline every third entry, else a GET of `alloc`.
            let action = if i % 3 == 1 {
                b.extend_from_slice(b"\x8c\x0efree_requested\x94");
                "free_requested"
            } else {
                b.extend_from_slice(b"h\x03");
                "alloc"
            };
            // addr and size are unsigned: a negative one leaves its entry to the general path,
            // which keeps it as a dict of its own.
            b.extend_from_slice(b"h\x04");
            b.extend_from_slice(bytes);
            b.extend_from_slice(b"h\x05");
            b.extend_from_slice(n.0);
            b.extend_from_slice(b"h\x06K\x00h\x07");
            b.extend_from_slice(m.0);
            b.extend_from_slice(b"h\x08h\x09h\x0ah\x0bh\x0c");
            // The frame list by GET, or a new empty one inline.
            if i % 2 == 0 {
                b.extend_from_slice(b"h\x0d");
            } else {
                b.extend_from_slice(b"]\x94");
            }
            b.push(b'u');
            want.push((action.to_owned(), x, n.1, 0, m.1, "N/A".to_owned(), String::new(), 0));
        }
        b.extend_from_slice(b"e.");
        (b, want)
    }

    #[test]
    fn entries_in_torch_order_are_read_by_their_template_in_any_chunks() {
        let (bytes, want) = entries_in_torch_order();
        let int = |d: &Document, e: Value, k: &str| match d.get(e, k) {
            Some(Value::Int(i)) => i,
            other => panic!("{k}: {other:?}"),
        };
        let text = |d: &Document, e: Value, k: &str| d.get(e, k).and_then(|v| d.as_str(v)).unwrap_or("?").to_owned();
        let read = |d: &Document| -> Vec<TorchEntry> {
            d.items(d.root())
                .iter()
                .map(|e| {
                    let frames = d.get(e, "frames").map_or(usize::MAX, |f| d.items(f).len());
                    let row = (text(d, e, "action"), int(d, e, "addr"), int(d, e, "size"), int(d, e, "stream"));
                    let more = (int(d, e, "time_us"), text(d, e, "compile_context"), text(d, e, "user_metadata"));
                    (row.0, row.1, row.2, row.3, more.0, more.1, more.2, frames)
                })
                .collect()
        };
        let mut p = Parser::new();
        p.feed(&bytes).expect("feeds");
        assert!(p.entry_template.as_ref().is_some_and(|t| t.torch_keys.is_some()), "PyTorch's order is known");
        let d = p.finish().expect("finishes");
        assert_eq!(read(&d), want);
        // Entries with an unsigned addr and size became record rows.
        let records = d.items(d.root()).iter().filter(|&e| d.trace_record(e).is_some()).count();
        assert!(records >= 6, "{records} records");
        for chunk in [1, 2, 3, 5, 7, 8, 9, 13, 31] {
            assert_eq!(read(&chunked(&bytes, chunk)), want, "chunks of {chunk}");
        }
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
