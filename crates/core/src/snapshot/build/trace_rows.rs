//! A device's trace entries as rows of its [`Trace`] columns: read from the reader's records
//! without decoding values (a run of records at once, its 64-bit columns copied or left for the
//! owned-document path to move in), or from generic dicts; entries the columns do not describe
//! fully are kept verbatim.

use crate::pickle::{Document, Items, RecordColumns, RecordField, RecordRun, TraceRecord, Value, WideColumns};

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

use super::{as_i128, as_u64, Builder, RowColumns};
use crate::snapshot::model::{Action, SparseColumn, Trace, WarningKind};

impl<'d> Builder<'d> {
    /// Appends trace entry `e`, kept by the reader as `rec`: the same row the generic path in
    /// [`Builder::trace`] makes of it, without decoding values (a record's values have the
    /// expected types, and its keys are all known).
    fn record_row(&mut self, t: &mut Trace, rec: &TraceRecord, e: Value, row: usize, device_index: i64) {
        let r = t.action.len();
        let action = rec.action.map_or(Action::Unknown, |id| self.action_of(id));
        if action == Action::Unknown {
            let name = rec.action.map_or_else(|| "(missing)".to_owned(), |id| self.doc.str(id).to_owned());
            self.warnings.add(WarningKind::UnknownAction, || {
                format!("device {device_index} entry {row}: unknown action {name}")
            });
        }
        let stream = rec.stream.map_or(0, |x| self.stream_index(i128::from(x)));
        let mut odd = false;
        let stack = rec.frames.map_or(0, |l| {
            self.stack(Value::List(l)).unwrap_or_else(|| {
                odd = true;
                0
            })
        });
        if rec.time_us.is_some() || t.time_us.is_present() {
            t.time_us.push(r, rec.time_us.unwrap_or(i64::MIN), i64::MIN);
        }
        if t.pool.is_present() {
            t.pool.push(r, 0, 0);
        }
        for (value, column) in [
            (rec.user_metadata, &mut t.user_metadata),
            (rec.compile_context, &mut t.compile_context),
            (None, &mut t.category),
        ] {
            let id = value.and_then(|s| self.string(Value::Str(s)));
            if id.is_some() || column.is_present() {
                column.push(r, id.unwrap_or(0), 0);
            }
        }
        let cols =
            RowColumns { action, addr: rec.addr.unwrap_or(0), size_bytes: rec.size_bytes.unwrap_or(0), stream, stack };
        self.finish_row(t, cols, odd, e, row, device_index);
    }

    /// Pushes a row's fixed columns, and keeps the entry verbatim when its action is not one the
    /// columns describe fully or a field had an unexpected type (with a warning).
    fn finish_row(&mut self, t: &mut Trace, c: RowColumns, odd: bool, e: Value, row: usize, device_index: i64) {
        let r = t.action.len();
        t.action.push(c.action);
        t.addr.push(c.addr);
        t.size_bytes.push(c.size_bytes);
        t.stream.push(c.stream);
        t.stack.push(c.stack);
        self.keep_verbatim_if_needed(t, r, c.action, odd, e, row, device_index);
    }

    /// Keeps entry `e` (trace row `r`) verbatim when its action is not one the columns describe
    /// fully or a field had an unexpected type (with a warning).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn keep_verbatim_if_needed(
        &mut self,
        t: &mut Trace,
        r: usize,
        action: Action,
        odd: bool,
        e: Value,
        row: usize,
        device_index: i64,
    ) {
        let verbatim = !columns_describe(action);
        if verbatim || odd {
            if odd && !verbatim {
                self.warnings.add(WarningKind::OddField, || {
                    format!("device {device_index} entry {row}: a field has an unexpected type; kept verbatim")
                });
            }
            let tr = self.tree_of(e);
            t.raw.push((r as u32, tr));
        }
    }

    /// The trace of a device whose entries the reader kept as records in consecutive rows
    /// (`run`), built column by column: the same trace as [`Builder::trace`] makes entry by
    /// entry, with strings, frames and stacks interned in the same order. The `addr`,
    /// `size_bytes` and `time_us` columns are copied, or left empty for
    /// [`Snapshot::from_owned_document`] to move in.
    fn record_trace(&mut self, entries: Items<'_>, run: RecordRun, device_index: i64) -> Option<Trace> {
        let doc = self.doc;
        let cols = doc.record_columns(run)?;
        let n = run.len as usize;
        let mut t = Trace::default();
        t.action.reserve_exact(n);
        t.stream.reserve_exact(n);
        t.stack.reserve_exact(n);
        let mut time = TimeColumn::default();
        let at = |col: &[u32], k: usize| col.get(k).copied().unwrap_or(0);
        // Rows of one shape and one `user_metadata` and `compile_context` (every real capture):
        // the rows after the first add nothing to those columns, so they are not looked at.
        let same_strings = cols.one_shape_and_strings();
        // Rows of one shape have one presence mask, and a stream column of one value one stream
        // index (interned at the first row, as that row would): neither is looked up per row.
        let one_mask = (same_strings && n > 0).then(|| cols.mask(0));
        let one_stream = match (one_mask, cols.one_stream()) {
            (Some(m), Some(raw)) if RecordColumns::has(m, RecordField::STREAM) => {
                Some(self.stream_index(i128::from(raw)))
            }
            _ => None,
        };
        for k in 0..n {
            let mask = one_mask.unwrap_or_else(|| cols.mask(k));
            let has = |f: RecordField| RecordColumns::has(mask, f);
            let action_id = at(cols.action, k);
            let action = self.action_of(action_id);
            if action == Action::Unknown {
                let name = doc.str(action_id);
                self.warnings.add(WarningKind::UnknownAction, || {
                    format!("device {device_index} entry {k}: unknown action {name}")
                });
            }
            let stream = match (one_stream, cols.stream.get(k)) {
                (Some(s), _) => s,
                (None, Some(raw)) if has(RecordField::STREAM) => self.stream_index(i128::from(raw)),
                _ => 0,
            };
            let mut odd = false;
            let stack = if has(RecordField::FRAMES) {
                self.stack(Value::List(at(cols.frames, k))).unwrap_or_else(|| {
                    odd = true;
                    0
                })
            } else {
                0
            };
            time.note_row(k, has(RecordField::TIME_US));
            let strings = if k == 0 || !same_strings { 2 } else { 0 };
            for (field, col, column) in [
                (RecordField::USER_METADATA, cols.user_metadata, &mut t.user_metadata),
                (RecordField::COMPILE_CONTEXT, cols.compile_context, &mut t.compile_context),
            ]
            .into_iter()
            .take(strings)
            {
                let id = if has(field) { self.string(Value::Str(col.get(k).unwrap_or(0))) } else { None };
                if id.is_some() || column.is_present() {
                    column.push(k, id.unwrap_or(0), 0);
                }
            }
            let r = t.action.len();
            t.action.push(action);
            t.stream.push(stream);
            t.stack.push(stack);
            // Rows the columns describe fully need nothing more (as `keep_verbatim_if_needed`
            // decides), so their entry is not looked up.
            let described = columns_describe(action);
            if odd || !described {
                if let Some(e) = entries.get(k) {
                    self.keep_verbatim_if_needed(&mut t, r, action, odd, e, k, device_index);
                }
            }
        }
        t.user_metadata.finish(n);
        t.compile_context.finish(n);
        let pending = PendingColumns { device_index, run, time };
        if self.may_defer_columns && self.deferred_columns.is_none() {
            self.deferred_columns = Some(pending);
        } else {
            let wide = WideColumns {
                addr: cols.addr.to_vec(),
                size_bytes: cols.size_bytes.to_vec(),
                time_us: cols.time_us.to_vec(),
            };
            pending.fill(&mut t, wide);
        }
        Some(t)
    }

    #[allow(clippy::too_many_lines)] // the generic path for a trace entry, key by key; not split yet
    pub(super) fn trace(&mut self, list: Value, device_index: i64) -> Trace {
        let doc = self.doc;
        let entries = doc.items(list);
        if let Some(t) = doc.record_run(list).and_then(|run| self.record_trace(entries, run, device_index)) {
            return t;
        }
        let mut t = Trace::default();
        let n = entries.len();
        t.action.reserve_exact(n);
        t.addr.reserve_exact(n);
        t.size_bytes.reserve_exact(n);
        t.stream.reserve_exact(n);
        t.stack.reserve_exact(n);
        // Per-shape key positions, cached.
        // Per shape: the slot of each key position (or NO_SLOT), and whether a key is unknown.
        let mut shape_slots: HashMap<u32, (Vec<u8>, bool)> = HashMap::default();
        let mut last_shape: Option<(u32, Vec<u8>, bool)> = None;
        let mut row_vals: Vec<Value> = Vec::with_capacity(16);
        const NO_SLOT: u8 = u8::MAX;
        const K_ACTION: usize = 0;
        const K_ADDR: usize = 1;
        const K_SIZE: usize = 2;
        const K_STREAM: usize = 3;
        const K_TIME: usize = 4;
        const K_FRAMES: usize = 5;
        const K_POOL: usize = 6;
        const K_META: usize = 7;
        const K_CC: usize = 8;
        const K_CAT: usize = 9;
        const K_FREE: usize = 10;
        const K_FWD: usize = 11;
        const K_INTERNAL: usize = 12;
        let key_slot = |k: &str| -> Option<usize> {
            Some(match k {
                "action" => K_ACTION,
                "addr" => K_ADDR,
                "size" => K_SIZE,
                "stream" => K_STREAM,
                "time_us" => K_TIME,
                "frames" => K_FRAMES,
                "pool_id" => K_POOL,
                "user_metadata" => K_META,
                "compile_context" => K_CC,
                "category" => K_CAT,
                "device_free" => K_FREE,
                "forward_frames" => K_FWD,
                "internal_metadata" => K_INTERNAL,
                _ => return None,
            })
        };
        for (row, e) in entries.iter().enumerate() {
            let mut vals: [Option<Value>; 13] = [None; 13];
            let mut unknown_key = false;
            if let Some(rec) = doc.trace_record(e) {
                self.record_row(&mut t, &rec, e, row, device_index);
                continue;
            }
            match doc.dict_shape(e) {
                Some(shape) => {
                    if last_shape.as_ref().is_none_or(|(ls, _, _)| *ls != shape) {
                        let (slots, unknown) = shape_slots
                            .entry(shape)
                            .or_insert_with(|| {
                                let keys = doc.shape_keys(shape);
                                let slots: Vec<u8> =
                                    keys.iter().map(|&k| key_slot(doc.str(k)).map_or(NO_SLOT, |x| x as u8)).collect();
                                let unknown = slots.contains(&NO_SLOT);
                                (slots, unknown)
                            })
                            .clone();
                        last_shape = Some((shape, slots, unknown));
                    }
                    if let Some((_, slots, unknown)) = &last_shape {
                        unknown_key = *unknown;
                        row_vals.clear();
                        doc.compact_values(e, &mut row_vals);
                        for (&slot, &v) in slots.iter().zip(row_vals.iter()) {
                            if let Some(x) = vals.get_mut(slot as usize) {
                                *x = Some(v);
                            }
                        }
                    }
                }
                None => {
                    if !matches!(e, Value::Dict(_)) {
                        self.warnings.add(WarningKind::OddField, || {
                            format!(
                                "device {device_index} entry {row} is {}, not a dict; skipped",
                                Document::a_type_name(e)
                            )
                        });
                        continue;
                    }
                    for (k, v) in doc.dict_iter(e) {
                        match doc.as_str(k).and_then(key_slot) {
                            Some(s) => vals[s] = Some(v),
                            None => unknown_key = true,
                        }
                    }
                }
            }
            let action = match vals[K_ACTION] {
                Some(Value::Str(id)) => self.action_of(id),
                _ => Action::Unknown,
            };
            let r = t.action.len();
            let mut odd = unknown_key;
            if action == Action::Unknown {
                let name = vals[K_ACTION].map(|v| match doc.as_str(v) {
                    Some(s) => s.to_owned(),
                    None => format!("<{}>", Document::type_name(v)),
                });
                self.warnings.add(WarningKind::UnknownAction, || {
                    format!(
                        "device {device_index} entry {row}: unknown action {}",
                        name.unwrap_or_else(|| "(missing)".into())
                    )
                });
            }
            let addr = match vals[K_ADDR] {
                None => 0,
                Some(v) => as_u64(v).unwrap_or_else(|| {
                    odd = true;
                    0
                }),
            };
            let size = match vals[K_SIZE] {
                None => 0,
                Some(v) => as_u64(v).unwrap_or_else(|| {
                    odd = true;
                    0
                }),
            };
            let stream = match vals[K_STREAM] {
                None => 0,
                Some(v) => match as_i128(doc, v) {
                    Some(raw) => self.stream_index(raw),
                    None => {
                        odd = true;
                        0
                    }
                },
            };
            let stack = match vals[K_FRAMES] {
                None => 0,
                Some(v) => self.stack(v).unwrap_or_else(|| {
                    odd = true;
                    0
                }),
            };
            let time = match vals[K_TIME] {
                None => None,
                Some(Value::Int(x)) => Some(x),
                Some(Value::Float(f)) => {
                    odd = true;
                    Some(f as i64)
                }
                Some(_) => {
                    odd = true;
                    None
                }
            };
            if time.is_some() || t.time_us.is_present() {
                t.time_us.push(r, time.unwrap_or(i64::MIN), i64::MIN);
            }
            if let Some(v) = vals[K_POOL] {
                let p = self.pool_index(v);
                t.pool.push(r, p, 0);
            } else if t.pool.is_present() {
                t.pool.push(r, 0, 0);
            }
            for (slot, col) in [(K_META, 0usize), (K_CC, 1), (K_CAT, 2)] {
                let id = match vals[slot] {
                    Some(v) => self.string(v).unwrap_or_else(|| {
                        odd = true;
                        0
                    }),
                    None => 0,
                };
                let column = match col {
                    0 => &mut t.user_metadata,
                    1 => &mut t.compile_context,
                    _ => &mut t.category,
                };
                if vals[slot].is_some() || column.is_present() {
                    column.push(r, id, 0);
                }
            }
            if let Some(v) = vals[K_FREE] {
                match as_u64(v) {
                    Some(x) => t.device_free.push((r as u32, x)),
                    None => odd = true,
                }
            }
            if let Some(v) = vals[K_FWD] {
                match self.string_stack(v) {
                    Some(s) => t.forward_stack.push((r as u32, s)),
                    None => odd = true,
                }
            }
            self.finish_row(
                &mut t,
                RowColumns { action, addr, size_bytes: size, stream, stack },
                odd,
                e,
                row,
                device_index,
            );
            // `internal_metadata` (the allocator's own entries, PyTorch 2.15) is rare: such an
            // entry is kept verbatim, where `Trace::internal_metadata_at` reads it.
            if vals[K_INTERNAL].is_some() && t.raw.last().is_none_or(|(x, _)| *x as usize != r) {
                let tree = self.tree_of(e);
                t.raw.push((r as u32, tree));
            }
        }
        let rows = t.action.len();
        t.time_us.finish(rows);
        t.pool.finish(rows);
        t.user_metadata.finish(rows);
        t.compile_context.finish(rows);
        t.category.finish(rows);
        t
    }
}

/// Whether the trace columns describe an entry of this action fully (others keep their entry).
fn columns_describe(action: Action) -> bool {
    matches!(
        action,
        Action::Alloc
            | Action::FreeRequested
            | Action::FreeCompleted
            | Action::SegmentAlloc
            | Action::SegmentFree
            | Action::Oom
    )
}

/// Which rows of a run of records have `time_us`.
#[derive(Debug, Default)]
pub(super) struct TimeColumn {
    /// Whether any row has it.
    pub(super) any: bool,
    /// The rows (of the run) that lack it.
    pub(super) absent_rows: Vec<u32>,
}

impl TimeColumn {
    fn note_row(&mut self, k: usize, present: bool) {
        if present {
            self.any = true;
        } else {
            self.absent_rows.push(k as u32);
        }
    }
}

/// The 64-bit columns of a trace read as a run of records, still to be put in.
#[derive(Debug)]
pub(super) struct PendingColumns {
    pub(super) device_index: i64,
    pub(super) run: RecordRun,
    pub(super) time: TimeColumn,
}

impl PendingColumns {
    /// Puts the run's 64-bit columns into its trace: `addr` and `size_bytes` as they are (the
    /// records hold 0 for absent fields, as the generic path makes them), `time_us` when any
    /// row has it (`i64::MIN` in rows without, as the generic path makes them).
    pub(super) fn fill(self, t: &mut Trace, wide: WideColumns) {
        let WideColumns { mut addr, mut size_bytes, mut time_us } = wide;
        addr.shrink_to_fit();
        size_bytes.shrink_to_fit();
        t.addr = addr;
        t.size_bytes = size_bytes;
        if self.time.any {
            for &k in &self.time.absent_rows {
                if let Some(x) = time_us.get_mut(k as usize) {
                    *x = i64::MIN;
                }
            }
            t.time_us = SparseColumn::from_rows(time_us);
        }
    }
}
