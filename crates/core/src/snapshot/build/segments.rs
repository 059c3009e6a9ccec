//! Segments, their blocks (including legacy blocks with `history`) and `external_annotations`.

use crate::error::Error;
use crate::pickle::{Document, Value};

use super::{as_i128, as_u64, Builder};
use crate::snapshot::model::{Annotation, Block, BlockState, Segment, PINNED_HOST_INDEX};

impl<'d> Builder<'d> {
    /// Reads `segments` (or, with `host`, `host_segments`, whose segments all belong to the
    /// pinned host memory); `key` names the list in errors.
    pub(super) fn segments(&mut self, list: Value, key: &str, host: bool) -> Result<(), Error> {
        let doc = self.doc;
        for (si, s) in doc.items(list).iter().enumerate() {
            if !matches!(s, Value::Dict(_)) {
                return Err(Error::Schema {
                    path: format!("{key}[{si}]"),
                    reason: format!("{}, expected a dict", Document::a_type_name(s)),
                });
            }
            let field_u64 = |key: &str| -> Result<u64, Error> {
                match doc.get(s, key) {
                    None => Ok(0),
                    Some(v) => as_u64(v).ok_or_else(|| Error::Schema {
                        path: format!("{key}[{si}].{key}"),
                        reason: format!("{}, expected a non-negative int", Document::a_type_name(v)),
                    }),
                }
            };
            let address = field_u64("address")?;
            let total_size = field_u64("total_size")?;
            let allocated_size = field_u64("allocated_size")?;
            let active_size = field_u64("active_size")?;
            let requested_size = field_u64("requested_size")?;
            let device = if host {
                PINNED_HOST_INDEX
            } else {
                doc.get(s, "device").and_then(|v| as_i128(doc, v)).unwrap_or(0) as i64
            };
            let stream_raw = doc.get(s, "stream").and_then(|v| as_i128(doc, v)).unwrap_or(0);
            let stream = self.stream_index(stream_raw);
            let segment_type = doc.get(s, "segment_type").and_then(|v| self.string(v)).unwrap_or(0);
            let pool = doc.get(s, "segment_pool_id").map_or(0, |v| self.pool_index(v));
            let is_expandable = matches!(doc.get(s, "is_expandable"), Some(Value::Bool(true)));
            let stack = doc.get(s, "frames").and_then(|v| self.stack(v)).unwrap_or(0);
            let first_block = self.snap.blocks.len() as u32;
            let blocks_v = doc.get(s, "blocks").unwrap_or(Value::None);
            if !matches!(blocks_v, Value::List(_) | Value::None) {
                return Err(Error::Schema {
                    path: format!("{key}[{si}].blocks"),
                    reason: format!("{}, expected a list", Document::a_type_name(blocks_v)),
                });
            }
            self.spend(doc.items(blocks_v).len(), || format!("{key}[{si}].blocks"))?;
            self.blocks(blocks_v, &|| format!("{key}[{si}].blocks"), address, total_size)?;
            let block_count = self.snap.blocks.len() as u32 - first_block;
            self.snap.segments.push(Segment {
                device,
                address,
                total_size,
                allocated_size,
                active_size,
                requested_size,
                stream,
                segment_type,
                pool,
                is_expandable,
                stack,
                first_block,
                block_count,
                host,
            });
        }
        Ok(())
    }

    /// Reads one segment's `blocks`, the segment being `[address, address + total_size)`; `at`
    /// names the list in errors.
    fn blocks(&mut self, blocks_v: Value, at: &dyn Fn() -> String, address: u64, total_size: u64) -> Result<(), Error> {
        let doc = self.doc;
        let mut offset = address;
        for (bi, b) in doc.items(blocks_v).iter().enumerate() {
            let path = || format!("{}[{bi}]", at());
            if !matches!(b, Value::Dict(_)) {
                return Err(Error::Schema {
                    path: path(),
                    reason: format!("{}, expected a dict", Document::a_type_name(b)),
                });
            }
            let size = match doc.get(b, "size") {
                Some(v) => as_u64(v).ok_or_else(|| Error::Schema {
                    path: format!("{}.size", path()),
                    reason: "expected a non-negative int".into(),
                })?,
                None => 0,
            };
            let state = match doc.get(b, "state").and_then(|v| doc.as_str(v)) {
                Some("active_allocated") => BlockState::ActiveAllocated,
                Some("active_pending_free") => BlockState::ActivePendingFree,
                Some("inactive") => BlockState::Inactive,
                _ => BlockState::Other,
            };
            let (stack, requested) = if let Some(fr) = doc.get(b, "frames") {
                let st = self.stack(fr).unwrap_or(0);
                let req = doc.get(b, "requested_size").and_then(as_u64).unwrap_or(size);
                (st, req)
            } else if let Some(h) = doc.get(b, "history") {
                self.snap.source.legacy_history = true;
                let first = doc.items(h).first().unwrap_or(Value::None);
                let st = doc.get(first, "frames").and_then(|v| self.stack(v)).unwrap_or(0);
                let req = doc.get(first, "real_size").and_then(as_u64).unwrap_or(size);
                (st, req)
            } else {
                (0, doc.get(b, "requested_size").and_then(as_u64).unwrap_or(size))
            };
            // Blocks carry their `address` (equal to the running offset in every file PyTorch
            // writes); one inside the segment is taken as given, else the offset stands in.
            let segment_end = address.saturating_add(total_size);
            let block_address =
                doc.get(b, "address").and_then(as_u64).filter(|&a| a >= address && a < segment_end).unwrap_or(offset);
            self.snap.blocks.push(Block { address: block_address, size, requested_size: requested, state, stack });
            offset = block_address.wrapping_add(size);
        }
        Ok(())
    }

    pub(super) fn annotations(&mut self, list: Value) {
        let doc = self.doc;
        for a in doc.items(list) {
            let name = doc.get(a, "name").and_then(|v| self.string(v)).unwrap_or(0);
            let start = doc.get(a, "stage").and_then(|v| doc.as_str(v)) == Some("START");
            let device = doc.get(a, "device").and_then(|v| as_i128(doc, v)).unwrap_or(0) as i64;
            let time_us = match doc.get(a, "time_us") {
                Some(Value::Int(t)) => Some(t),
                _ => None,
            };
            self.snap.annotations.push(Annotation { name, start, device, time_us });
        }
    }
}
