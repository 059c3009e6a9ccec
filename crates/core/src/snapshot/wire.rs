//! [`Wire`] for the model, so a snapshot built in a Web Worker reaches the page as bytes.

use super::{
    Action, Annotation, Block, BlockState, Device, DeviceKind, Frame, FrameExtra, Segment, Snapshot, SourceInfo,
    SparseColumn, StackTable, Strings, Trace, Warning, WarningKind,
};
use crate::wire::{Decoder, Encoder, Plain, Wire, WireError};
use crate::{wire_enum, wire_struct};

impl Plain for Action {
    const SIZE: usize = 1;
    fn write_le(&self, out: &mut [u8]) {
        out.fill(*self as u8);
    }
    fn read_le(b: &[u8]) -> Result<Self, WireError> {
        match b {
            [i] => Action::ALL.get(usize::from(*i)).copied().ok_or_else(|| WireError(format!("bad action {i}"))),
            _ => Err(WireError("short action".into())),
        }
    }
}

impl Wire for Action {
    fn put(&self, e: &mut Encoder<'_>) {
        e.put(&(*self as u8));
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        let i: u8 = d.get()?;
        Action::read_le(&[i])
    }
    fn put_slice(items: &[Self], e: &mut Encoder<'_>) {
        e.column(items);
    }
    fn get_vec(d: &mut Decoder<'_>) -> Result<Vec<Self>, WireError> {
        d.column()
    }
}

wire_enum!(
    BlockState,
    [BlockState::ActiveAllocated, BlockState::ActivePendingFree, BlockState::Inactive, BlockState::Other]
);
wire_enum!(
    WarningKind,
    [
        WarningKind::FreeWithoutAlloc,
        WarningKind::DoubleAlloc,
        WarningKind::UnknownAction,
        WarningKind::OddField,
        WarningKind::Pickle,
        WarningKind::Elided,
    ]
);

wire_struct!(FrameExtra { dict });
wire_struct!(Frame { filename, line, name, extra, name_first });
wire_struct!(Segment {
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
wire_struct!(Block { address, size, requested_size, state, stack });
wire_struct!(Annotation { name, start, device, time_us });
wire_struct!(Warning { kind, count, example });
wire_struct!(SourceInfo {
    protocol,
    json,
    bare_segment_list,
    legacy_history,
    has_device_traces,
    top_level_keys,
    profiler_trace
});
wire_enum!(DeviceKind, [DeviceKind::Cuda, DeviceKind::PinnedHost, DeviceKind::Cpu]);
wire_struct!(Device { index, trace, kind });
crate::wire_by_field!(Trace {} chunked {
    action,
    addr,
    size_bytes,
    stream,
    stack,
    device_free,
    forward_stack,
    raw,
} nested {
    time_us,
    pool,
    user_metadata,
    compile_context,
    category,
});

impl<T: Wire + Copy + PartialEq + Default> crate::wire::ByField for SparseColumn<T> {
    fn put_by_field(&self, chunk_bytes: usize, out: &mut crate::wire::MessageSink<'_>) {
        out(0, &|e| e.put(&self.default));
        let n = crate::wire::chunk_len(&self.values, chunk_bytes);
        for chunk in self.values.chunks(n) {
            out(1, &|e| crate::wire::put_chunk(self.values.len(), chunk, e));
        }
    }
    fn get_field(&mut self, field: u32, d: &mut Decoder<'_>) -> Result<(), WireError> {
        match field {
            0 => self.default = d.get()?,
            1 => crate::wire::get_chunk(&mut self.values, d)?,
            _ => return Err(WireError(format!("a sparse column has no field {field}"))),
        }
        Ok(())
    }
}
wire_struct!(StackTable { offsets, frames });
wire_struct!(Snapshot {
    devices,
    segments,
    blocks,
    frames,
    stacks,
    strings,
    streams,
    pools,
    allocator_settings,
    annotations,
    other_keys,
    warnings,
    source,
});

impl<T: Wire + Copy + PartialEq> Wire for SparseColumn<T> {
    fn put(&self, e: &mut Encoder<'_>) {
        e.put(&self.default);
        e.put(&self.values);
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        Ok(SparseColumn { default: d.get()?, values: d.get()? })
    }
}

impl Wire for Strings {
    fn put(&self, e: &mut Encoder<'_>) {
        e.put(&self.data);
        let starts: Vec<u32> = self.spans.iter().map(|s| s.0).collect();
        let ends: Vec<u32> = self.spans.iter().map(|s| s.1).collect();
        e.put(&starts);
        e.put(&ends);
    }
    /// The index is built again from the spans; a span outside the text is an error.
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        let data: String = d.get()?;
        let starts: Vec<u32> = d.get()?;
        let ends: Vec<u32> = d.get()?;
        if starts.len() != ends.len() {
            return Err(WireError("string spans differ in length".into()));
        }
        let mut s = Strings { data, spans: Vec::with_capacity(starts.len()), index: Default::default() };
        s.index.reserve(starts.len());
        for (i, (&a, &b)) in starts.iter().zip(&ends).enumerate() {
            let Some(text) = s.data.get(a as usize..b as usize) else {
                return Err(WireError(format!("string {i} lies outside the text")));
            };
            s.index.entry(text.into()).or_insert(i as u32);
            s.spans.push((a, b));
        }
        Ok(s)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use crate::wire::{decode, decode_field, encode, encode_by_field, encode_with_part_min, PartList};
    use crate::Snapshot;

    /// Every fixture survives the trip: the re-encoded bytes and PyTorch's stats text are equal.
    #[test]
    fn fixtures_round_trip() {
        let mut seen = 0;
        for (path, snap) in crate::wire::test_snapshots() {
            // Small columns in the head, and every column as a part.
            let (head, parts) = encode(&snap);
            let (head1, parts1) = encode_with_part_min(&snap, 1);
            let back1: Snapshot = decode(&head1, &mut PartList::new(parts1)).unwrap();
            let back: Snapshot = decode(&head, &mut PartList::new(parts.clone())).unwrap();
            let (head2, parts2) = encode(&back);
            assert!(head == head2 && parts == parts2, "{}", path.display());
            assert!(encode(&back1) == (head.clone(), parts.clone()), "{}", path.display());
            assert_eq!(crate::reference::trace(&back).ok(), crate::reference::trace(&snap).ok(), "{}", path.display());
            assert_eq!(crate::reference::stats(&back).ok(), crate::reference::stats(&snap).ok(), "{}", path.display());
            // Each trace field by field, in chunks small enough that every column takes several.
            for dev in &snap.devices {
                let whole = encode(&dev.trace);
                for chunk_bytes in [1, 64, 1 << 20] {
                    let mut t = crate::snapshot::Trace::default();
                    for (field, h, p) in encode_by_field(&dev.trace, chunk_bytes) {
                        decode_field(&mut t, field, &h, &mut PartList::new(p)).unwrap();
                    }
                    assert!(encode(&t) == whole, "{} by field", path.display());
                }
            }
            assert_eq!(back.strings.len(), snap.strings.len());
            for id in 0..snap.strings.len() as u32 {
                assert_eq!(back.strings.find(snap.strings.get(id)), snap.strings.find(snap.strings.get(id)));
            }
            seen += 1;
        }
        assert!(seen >= 20, "only {seen} snapshots");
    }
}
