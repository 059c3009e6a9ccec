//! Pinned host memory (PyTorch 2.14+, `record_pinned_host_memory=True`): `host_segments` and
//! `host_traces` (the same shapes as `segments` and `device_traces`; the traces either one list of
//! entries or one list per device, read as one trace) become one [`Device`] of kind
//! [`DeviceKind::PinnedHost`]. PyTorch's CLI ignores these keys, so a malformed one is dropped with
//! a warning (and kept verbatim) rather than failing the load.

use crate::pickle::{Document, Value};
use crate::snapshot::model::{Device, DeviceKind, Trace, WarningKind, PINNED_HOST_INDEX};

use super::Builder;

impl Builder<'_> {
    /// Loads the host keys into a pinned host device; whether they were taken into the model.
    pub(super) fn host_memory(&mut self, root: Value) -> bool {
        let doc = self.doc;
        let segs = doc.get(root, "host_segments");
        let traces = doc.get(root, "host_traces");
        if segs.is_none() && traces.is_none() {
            return false;
        }
        let (segments_before, blocks_before) = (self.snap.segments.len(), self.snap.blocks.len());
        if let Some(sv) = segs {
            let loaded = match sv {
                Value::List(_) => self.segments(sv, "host_segments", true).map_err(|e| e.to_string()),
                other => Err(format!("host_segments is {}, expected a list", Document::a_type_name(other))),
            };
            if let Err(e) = loaded {
                self.snap.segments.truncate(segments_before);
                self.snap.blocks.truncate(blocks_before);
                self.warnings.add(WarningKind::OddField, || format!("pinned host memory not loaded: {e}"));
                return false;
            }
        }
        let trace = match traces {
            None => Trace::default(),
            Some(tv) => match self.host_trace(tv) {
                Ok(t) => t,
                Err(e) => {
                    self.snap.segments.truncate(segments_before);
                    self.snap.blocks.truncate(blocks_before);
                    self.warnings.add(WarningKind::OddField, || format!("pinned host memory not loaded: {e}"));
                    return false;
                }
            },
        };
        if trace.is_empty() && self.snap.segments.len() == segments_before {
            // Recording without pinned memory still writes the keys, empty: no device for them.
            return true;
        }
        self.snap.devices.push(Device { index: PINNED_HOST_INDEX, trace, kind: DeviceKind::PinnedHost });
        true
    }

    /// `host_traces`: a list of entries, or a list of such lists (appended in order).
    fn host_trace(&mut self, tv: Value) -> Result<Trace, String> {
        let doc = self.doc;
        if !matches!(tv, Value::List(_)) {
            return Err(format!("host_traces is {}, expected a list", Document::a_type_name(tv)));
        }
        let items = doc.items(tv);
        // The columns of these traces are copied, never moved out of the document.
        let may_defer = std::mem::replace(&mut self.may_defer_columns, false);
        let out = if items.iter().all(|x| matches!(x, Value::List(_))) && !items.is_empty() {
            let mut whole = Trace::default();
            let mut result = Ok(());
            for (i, l) in items.iter().enumerate() {
                if let Err(e) = self.spend(doc.items(l).len(), || format!("host_traces[{i}]")) {
                    result = Err(e.to_string());
                    break;
                }
                let t = self.trace(l, PINNED_HOST_INDEX);
                whole.append(&t);
            }
            result.map(|()| whole)
        } else if items.iter().all(|x| matches!(x, Value::Dict(_))) {
            self.spend(items.len(), || "host_traces".into())
                .map_err(|e| e.to_string())
                .map(|()| self.trace(tv, PINNED_HOST_INDEX))
        } else {
            Err("host_traces mixes entries and lists".into())
        };
        self.may_defer_columns = may_defer;
        out
    }
}
