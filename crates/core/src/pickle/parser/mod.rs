//! [`Parser`], the resumable decoder: its state, feeding chunks, and the run loop that hands each
//! opcode to a fast path or to the general [`step`](Parser::step); the stack, memo and arena
//! helpers every opcode uses.

use rustc_hash::FxHashMap;

use crate::error::Error;

use super::document::{DictRec, Document, ListStore, RECORD_BIT};
use super::text::decode_surrogatepass;
use super::value::{Value, MEMO_DICT, MEMO_OTHER};

mod dicts;
mod entry_template;
mod entry_words;
mod fast_paths;
mod inline_frames;
mod memo_runs;
mod opcodes;
mod raw_lists;
mod template_lists;

use entry_template::EntryTemplate;
use inline_frames::LeafCache;
use memo_runs::{MemoAt, MemoRuns};
use template_lists::TemplateLists;

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
    More { what: &'static str, declared: Option<u64> },
    /// STOP reached after `n` bytes.
    Stop(usize),
}

/// Most pairs a dict may have for [`Parser::flat_dict`]; larger dicts take the generic path.
const FLAT_DICT_MAX_PAIRS: usize = 16;

/// Input read before the memo's room is made from its use so far ([`Parser::reserve_memo`]).
const MEMO_PROJECT_BYTES: u64 = 16 << 20;
/// The fewest input bytes per memo slot that room is made for (a slot takes 5 bytes of memory).
const MEMO_MAX_BYTES_PER_SLOT: u64 = 8;

/// Bytes of the next chunk joined to an opcode cut at a chunk boundary before the chunk itself is
/// decoded in place (longer opcodes are joined whole).
const BRIDGE_BYTES: usize = 4096;

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
    /// Slots kept as runs (frame lists of inline dicts read again), numbered among the dense.
    memo_runs: MemoRuns,
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
    /// Whether room for the memo has been made ([`Parser::reserve_memo`]).
    memo_reserved: bool,
    /// Memo writes that did not simply append a slot (a template made before one is retired).
    memo_rebinds: u64,
    /// The string last read inline by a fast path, to skip hashing repeats of it.
    last_inline_str: Option<u32>,
    /// Memo writes over a slot already written (or into a sparse one).
    memo_overwrites: u64,
    /// Dicts given more items after they were read (moved to generic storage).
    dict_moves: u64,
    /// Leaf dicts by the bytes of their body, for frame lists of inline dicts.
    leaf_cache: LeafCache,
    /// Frame lists the entry template read inline, by their bytes.
    template_lists: TemplateLists,
    /// Reused buffer of the memo slots of a frame list read inline.
    inline_slots: Vec<u32>,
    /// Reused buffers of a frame list's cache key.
    list_key_buf: Vec<u8>,
    list_gets: Vec<inline_frames::RelGet>,
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
            memo_runs: MemoRuns::default(),
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
            memo_reserved: false,
            leaf_index: FxHashMap::default(),
            entry_template: None,
            memo_rebinds: 0,
            last_inline_str: None,
            fresh: None,
            memo_overwrites: 0,
            dict_moves: 0,
            leaf_cache: LeafCache::default(),
            template_lists: TemplateLists::default(),
            inline_slots: Vec::new(),
            list_key_buf: Vec::new(),
            list_gets: Vec::new(),
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

    /// Feeds the next chunk of input.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Error> {
        if self.stopped {
            self.trailing += chunk.len() as u64;
            return Ok(());
        }
        if !self.memo_reserved && self.consumed >= MEMO_PROJECT_BYTES {
            self.reserve_memo();
        }
        if self.pending.is_empty() {
            let used = self.run(chunk)?;
            if !self.stopped {
                self.pending.extend_from_slice(chunk.get(used..).unwrap_or(&[]));
            } else {
                self.trailing += (chunk.len() - used) as u64;
            }
        } else {
            self.feed_after_cut(chunk)?;
        }
        Ok(())
    }

    /// Makes room for the memo once, when [`MEMO_PROJECT_BYTES`] of an input of known length
    /// have been read: as many slots per byte as so far, over the whole input, and a twentieth
    /// more (at most one slot per [`MEMO_MAX_BYTES_PER_SLOT`] bytes). Where `realloc` cannot remap
    /// pages (WebAssembly) a doubling vector is copied whole each time and the old copies stay in
    /// the module's memory: the 59.3M slots of a 1 GB file of inline frame dicts left 181 MiB
    /// more memory and 310 MiB more copied (node's WASI). Room not used is never touched.
    fn reserve_memo(&mut self) {
        self.memo_reserved = true;
        let (Some(total), Ok(len)) = (self.total_len, u64::try_from(self.memo_tags.len())) else {
            return;
        };
        let projected = u128::from(len) * u128::from(total) / u128::from(self.consumed.max(1)) * 21 / 20;
        let cap = total / MEMO_MAX_BYTES_PER_SLOT;
        let want = u64::try_from(projected).unwrap_or(u64::MAX).min(cap);
        let Ok(extra) = usize::try_from(want.saturating_sub(len)) else {
            return;
        };
        // Room that cannot be had is left to the vectors' own growth.
        if self.memo_tags.try_reserve_exact(extra).is_ok() {
            let _ = self.memo_ids.try_reserve_exact(extra);
        }
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
            return Err(Error::Truncated { offset: offset + pending.len() as u64, inside: what, declared });
        }
        if self.trailing > 0 {
            self.doc.oddities.push(format!("{} bytes after the pickle's STOP opcode were ignored", self.trailing));
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
                            return Err(Error::Truncated { offset: total, inside: what, declared: Some(d) });
                        }
                    }
                    return Ok(pos);
                }
            }
        }
        self.consumed = base + pos as u64;
        Ok(pos)
    }
}
impl Parser {
    fn pop(&mut self, offset: u64, op: &'static str) -> Result<Value, Error> {
        // A pop may not reach below the innermost mark.
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(Error::Malformed { offset, reason: format!("{op} on an empty stack") });
        }
        self.stack.pop().ok_or_else(|| Error::Malformed { offset, reason: format!("{op} on an empty stack") })
    }

    fn pop_mark(&mut self, offset: u64, op: &'static str) -> Result<usize, Error> {
        self.marks.pop().ok_or_else(|| Error::Malformed { offset, reason: format!("{op} without a MARK") })
    }

    fn push_str(&mut self, raw: &[u8]) -> Value {
        match std::str::from_utf8(raw) {
            Ok(s) => Value::Str(self.doc.intern_str(s)),
            Err(_) => {
                let s = decode_surrogatepass(raw);
                if self.doc.oddities.len() < 16 && s.contains('\u{fffd}') {
                    self.doc.oddities.push("a string with invalid UTF-8 was decoded lossily".into());
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
            return Err(Error::Malformed { offset, reason: "more than 2^31 dicts".into() });
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
        let next = self.memo_next();
        if idx != next || !self.memo_sparse.is_empty() {
            self.memo_rebinds += 1;
            self.memo_overwrites += 1;
        }
        if idx < next {
            match self.memo_runs.at(idx, self.memo_tags.len()) {
                MemoAt::Dense(i) if i < self.memo_tags.len() => {
                    self.memo_tags[i] = tag;
                    self.memo_ids[i] = id;
                }
                _ => {
                    self.memo_runs.overrides.insert(idx, v);
                    return;
                }
            }
        } else if idx == next {
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
        self.memo_next() + self.memo_sparse.len() as u64
    }

    /// The memo value at `idx`, if stored (no side effects).
    #[inline(always)]
    fn memo_peek(&self, idx: u64) -> Option<Value> {
        if idx < self.memo_tags.len() as u64 && idx < self.memo_runs.dense_prefix() {
            return self.memo_dense(idx as usize, idx);
        }
        self.memo_peek_runs(idx)
    }

    /// The memo value at `idx` where slots may be in runs.
    fn memo_peek_runs(&self, idx: u64) -> Option<Value> {
        if !self.memo_runs.overrides.is_empty() {
            if let Some(v) = self.memo_runs.overrides.get(&idx) {
                return Some(*v);
            }
        }
        match self.memo_runs.at(idx, self.memo_tags.len()) {
            MemoAt::Dense(i) => self.memo_dense(i, idx),
            MemoAt::Run(d) => Some(Value::Dict(d)),
            MemoAt::Beyond => self.memo_sparse.get(&idx).copied(),
        }
    }

    /// The value of dense slot `i`, which is memo slot `idx`.
    #[inline(always)]
    fn memo_dense(&self, i: usize, idx: u64) -> Option<Value> {
        let id = *self.memo_ids.get(i)?;
        match *self.memo_tags.get(i)? {
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
    }

    #[inline(always)]
    fn memo_get(&mut self, idx: u64, offset: u64) -> Result<Value, Error> {
        let v = self.memo_peek(idx);
        let v = v.ok_or_else(|| Error::Malformed { offset, reason: format!("memo index {idx} was never stored") })?;
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
}

#[cfg(test)]
mod tests {
    use super::{Parser, MEMO_PROJECT_BYTES};

    /// A list of `n` memoized 9-byte strings (12 bytes each): one memo slot per 12 bytes.
    fn strings(n: usize) -> Vec<u8> {
        let mut b = vec![0x80, 4, b']', 0x94, b'('];
        for _ in 0..n {
            b.extend_from_slice(b"\x8c\x09aaaaaaaaa\x94");
        }
        b.extend_from_slice(b"e.");
        b
    }

    #[test]
    fn room_for_the_memo_is_made_once_from_its_use_so_far() {
        // Twice the bytes read before room is made: more slots than doubling has room for then.
        let n = 2 * MEMO_PROJECT_BYTES as usize / 12;
        let bytes = strings(n);
        let mut p = Parser::new();
        p.set_total_len(bytes.len() as u64);
        let mut capacity_after_room = 0;
        for c in bytes.chunks(1 << 20) {
            p.feed(c).expect("feeds");
            if p.memo_reserved && capacity_after_room == 0 {
                capacity_after_room = p.memo_ids.capacity();
            }
        }
        // Every slot the input will write, and not a tenth more.
        let slots = n + 1;
        assert!(capacity_after_room >= slots, "{capacity_after_room} < {slots}");
        assert!(capacity_after_room <= slots + slots / 10, "{capacity_after_room}");
        assert_eq!(p.memo_ids.capacity(), capacity_after_room, "no growth after it");
        let d = p.finish().expect("finishes");
        assert_eq!(d.items(d.root()).len(), n);
    }

    #[test]
    fn no_room_is_made_without_a_length() {
        let n = 2 * MEMO_PROJECT_BYTES as usize / 12;
        let bytes = strings(n);
        let mut p = Parser::new();
        for c in bytes.chunks(1 << 20) {
            p.feed(c).expect("feeds");
        }
        assert!(p.memo_reserved);
        // Grown by doubling only: a power of two.
        assert!(p.memo_ids.capacity().is_power_of_two(), "{}", p.memo_ids.capacity());
    }
}
