//! [`Wire`] for a laid-out timeline, so a layout built in a Web Worker reaches the page as bytes.
//! Elements travel as one column of fixed-width records, decoded in one pass.

use super::{BlockMaxima, Element, IntervalIndex, Layout, Mode, Options, Origin};
use crate::wire::{Decoder, Encoder, Plain, Wire, WireError};
use crate::{wire_enum, wire_struct};

wire_enum!(Mode, [Mode::Allocations, Mode::Segments, Mode::MappedPages]);
wire_enum!(Origin, [Origin::Traced, Origin::FreedWithoutAlloc, Origin::Ghost]);
wire_struct!(Options { max_entries, mode, hide_freed, focus_rows });
crate::wire_by_field!(IntervalIndex { levels } chunked { items, max_end });
crate::wire_by_field!(BlockMaxima {} chunked {
    total_max,
    after_max,
    drawn_max,
    peak_drawn
});
crate::wire_by_field!(Layout {
    steps,
    initial_drawn_bytes,
    initial_summarized_bytes,
    peak_bytes,
    peak_step,
    options,
} chunked {
    elements,
    band_element,
    band_start,
    band_end,
    band_slides,
    bands_by_end,
    event_step,
    event_row,
    event_drawn_bytes,
    event_summarized_bytes,
    event_slides,
} nested {
    index,
    small_blocks,
    blocks,
});

/// `None` as `u32::MAX` in a column (rows and steps never reach it: traces hold fewer entries).
fn opt(v: Option<u32>) -> u32 {
    v.unwrap_or(u32::MAX)
}

fn unopt(v: u32) -> Option<u32> {
    (v != u32::MAX).then_some(v)
}

fn origin_code(o: Origin) -> u8 {
    ORIGINS.iter().position(|&x| x == o).unwrap_or(0) as u8
}

/// Fixed-width fields of a record, written and read in order.
struct Fields<'a> {
    bytes: &'a mut [u8],
    at: usize,
}

impl Fields<'_> {
    fn put<const N: usize>(&mut self, b: [u8; N]) {
        if let Some(dst) = self.bytes.get_mut(self.at..self.at + N) {
            dst.copy_from_slice(&b);
        }
        self.at += N;
    }
}

/// Elements travel as one column of fixed-width records.
impl Plain for Element {
    const SIZE: usize = ELEMENT_BYTES;
    fn write_le(&self, out: &mut [u8]) {
        let mut f = Fields { bytes: out, at: 0 };
        f.put(self.addr.to_le_bytes());
        f.put(self.size_bytes.to_le_bytes());
        f.put(self.stack.to_le_bytes());
        f.put(self.stream.to_le_bytes());
        f.put(opt(self.alloc_row).to_le_bytes());
        f.put(opt(self.free_row).to_le_bytes());
        f.put([origin_code(self.origin)]);
        f.put(self.version.to_le_bytes());
        f.put(self.alloc_step.to_le_bytes());
        f.put(opt(self.free_step).to_le_bytes());
        f.put(self.total_after_alloc_bytes.to_le_bytes());
        f.put(opt(self.band).to_le_bytes());
    }
    fn read_le(b: &[u8]) -> Result<Self, WireError> {
        // Fixed offsets into a fixed-size record: no checks left per field.
        let b: &[u8; ELEMENT_BYTES] = b.try_into().map_err(|_| WireError("short element".into()))?;
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or_default());
        Ok(Element {
            addr: u64_at(0),
            size_bytes: u64_at(8),
            stack: u32_at(16),
            stream: u32_at(20),
            alloc_row: unopt(u32_at(24)),
            free_row: unopt(u32_at(28)),
            origin: *ORIGINS.get(usize::from(b[32])).ok_or_else(|| WireError("bad element origin".into()))?,
            version: u32_at(33),
            alloc_step: u32_at(37),
            free_step: unopt(u32_at(41)),
            total_after_alloc_bytes: u64_at(45),
            band: unopt(u32_at(53)),
        })
    }
}

/// Bytes of one element record.
const ELEMENT_BYTES: usize = 57;

impl Wire for Element {
    fn put(&self, e: &mut Encoder<'_>) {
        e.column(std::slice::from_ref(self));
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        d.column::<Element>()?.pop().ok_or_else(|| WireError("an element is missing".into()))
    }
    fn put_slice(items: &[Self], e: &mut Encoder<'_>) {
        e.column(items);
    }
    fn get_vec(d: &mut Decoder<'_>) -> Result<Vec<Self>, WireError> {
        d.column()
    }
}

const ORIGINS: [Origin; 3] = [Origin::Traced, Origin::FreedWithoutAlloc, Origin::Ghost];

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use crate::timeline::{Layout, Mode, Options};
    use crate::wire::{decode, decode_field, encode, encode_by_field, encode_with_part_min, PartList};

    /// Layouts of every fixture survive the trip: equal re-encoding, equal answers.
    #[test]
    fn fixture_layouts_round_trip() {
        let mut seen = 0;
        for (path, snap) in crate::wire::test_snapshots() {
            for (mode, max_entries) in [(Mode::Allocations, 15_000), (Mode::Allocations, 7), (Mode::Segments, 15_000)] {
                let l = Layout::build(
                    &snap,
                    snap.default_device().unwrap_or(0),
                    Options { max_entries, mode, hide_freed: false, focus_rows: None },
                );
                let (head, parts) = encode(&l);
                let back: Layout = decode(&head, &mut PartList::new(parts.clone())).unwrap();
                let (head2, parts2) = encode(&back);
                assert!(head == head2 && parts == parts2, "{}", path.display());
                let (head1, parts1) = encode_with_part_min(&l, 1);
                let back1: Layout = decode(&head1, &mut PartList::new(parts1)).unwrap();
                assert!(encode(&back1) == (head.clone(), parts.clone()), "{}", path.display());
                // Field by field, in chunks small enough that every column takes several.
                for chunk_bytes in [1, 100, 1 << 20] {
                    let mut by_field = Layout::default();
                    let messages = encode_by_field(&l, chunk_bytes);
                    if chunk_bytes == 1 && l.elements.len() > 1 {
                        assert!(messages.len() > l.elements.len(), "{}: elements not chunked", path.display());
                    }
                    for (field, h, p) in messages {
                        decode_field(&mut by_field, field, &h, &mut PartList::new(p)).unwrap();
                    }
                    assert!(encode(&by_field) == (head.clone(), parts.clone()), "{} by field", path.display());
                }
                assert_eq!(back.elements, l.elements);
                let steps = f64::from(l.steps);
                let bounds: Vec<f64> = (0..=50).map(|c| steps * f64::from(c) / 50.0).collect();
                assert_eq!(
                    format!("{:?}", back.column_envelopes(&bounds)),
                    format!("{:?}", l.column_envelopes(&bounds))
                );
                for s in (0..l.steps).step_by(97) {
                    let b = l.peak_bytes / 2;
                    assert_eq!(back.hit_test(f64::from(s), b as f64), l.hit_test(f64::from(s), b as f64));
                }
            }
            seen += 1;
        }
        assert!(seen >= 20, "only {seen} snapshots");
    }
}
