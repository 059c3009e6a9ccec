//! How the [`Parser`] fills dicts and lists: shapes (key sets shared by many dicts), aliases and
//! records for leaf dicts, Python's "later duplicate key wins", and appends to lists.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

use crate::error::Error;

use super::memo_runs::MemoAt;
use super::Parser;
use crate::pickle::document::RECORD_BIT;
use crate::pickle::document::{DictRec, Document, GenericDict, HashKey, ListStore};
use crate::pickle::records::Field;
use crate::pickle::value::Value;

impl Parser {
    /// The shape for a batch of pairs whose keys are all distinct strings (`None` otherwise).
    fn shape_for(&mut self, pairs: &[Value]) -> Option<u32> {
        let n = pairs.len() / 2;
        if n == 0 || n > 32 {
            return None;
        }
        // Fast path: same keys as the last dict.
        if let Some(keys) = self.doc.shapes.get(self.last_shape as usize) {
            if keys.len() == n && pairs.chunks_exact(2).zip(keys.iter()).all(|(kv, &k)| kv[0] == Value::Str(k)) {
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
                self.doc.shape_masks.push(fields.as_deref().map_or(0, Field::mask));
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
        let Some(DictRec::Compact { shape: cs, start }) = self.doc.dicts.get(canon as usize).copied() else {
            return false;
        };
        if cs != shape
            || pairs.chunks_exact(2).enumerate().any(|(i, kv)| self.doc.dict_vals.get(start as usize + i) != kv[1])
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
            match self.memo_runs.at(idx, self.memo_tags.len()) {
                MemoAt::Dense(i) if i < self.memo_ids.len() => self.memo_ids[i] = canon,
                MemoAt::Dense(_) | MemoAt::Run(_) => {
                    self.memo_runs.overrides.insert(idx, Value::Dict(canon));
                }
                MemoAt::Beyond => {
                    if let Some(v) = self.memo_sparse.get_mut(&idx) {
                        *v = Value::Dict(canon);
                    }
                }
            }
        }
        self.fresh = None;
        true
    }

    /// A new dict holding `pairs` as a trace record with an id of its own kind, when the keys and
    /// value types allow (`None`, with nothing stored, otherwise).
    pub(super) fn flat_record(&mut self, pairs: &[Value]) -> Option<(Value, u32)> {
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
    #[allow(clippy::too_many_lines)] // the general dict update with its fast cases, on the hot path
    pub(super) fn dict_set(&mut self, dict: Value, pairs: &[Value], offset: u64) -> Result<(), Error> {
        let Value::Dict(di) = dict else {
            return Err(Error::Malformed {
                offset,
                reason: format!("SETITEM(S) on {} (only dicts are supported)", Document::a_type_name(dict)),
            });
        };
        let di = di as usize;
        if pairs.len() % 2 != 0 {
            return Err(Error::Malformed { offset, reason: "SETITEMS with an odd number of items".into() });
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
                self.dict_moves += 1;
                let items = self.doc.dict_pairs(Value::Dict(id));
                let g = self.doc.generic_dicts.len();
                self.doc.generic_dicts.push(GenericDict { items, index: None });
                self.doc.set_generic(id, g as u32);
                g
            }
            None => return Err(Error::Malformed { offset, reason: "unknown dict".into() }),
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

    pub(super) fn list_extend(doc: &mut Document, list: Value, items: &[Value], offset: u64) -> Result<(), Error> {
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
                reason: format!("APPEND(S) on {} (only lists are supported)", Document::a_type_name(other)),
            }),
        }
    }
}
