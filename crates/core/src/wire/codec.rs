//! The two ends of a transfer and what travels between them: [`Encoder`] writes a head and hands
//! out parts, [`Decoder`] reads them back through [`Parts`] with every count checked against the
//! bytes left; [`Plain`] numbers are copied as little-endian bytes in columns, [`Wire`] values
//! (strings, vectors, options, tuples, ...) are written one by one, and
//! [`wire_struct!`](crate::wire_struct) writes a struct field by field.

use super::{err, WireError, PART_MIN_BYTES};

/// Writes values; large columns go to the sink as parts, the rest to the head.
pub struct Encoder<'a> {
    pub(super) head: Vec<u8>,
    pub(super) part_min_bytes: usize,
    pub(super) scratch: Vec<u8>,
    pub(super) sink: &'a mut dyn FnMut(&[u8]),
}

impl<'a> Encoder<'a> {
    /// An encoder that hands each part to `sink` as soon as it is written.
    pub fn new(sink: &'a mut dyn FnMut(&[u8])) -> Self {
        Self::with_part_min(sink, PART_MIN_BYTES)
    }

    /// An encoder that writes columns of at least `part_min_bytes` as parts.
    pub fn with_part_min(sink: &'a mut dyn FnMut(&[u8]), part_min_bytes: usize) -> Self {
        Encoder { head: Vec::new(), part_min_bytes, scratch: Vec::new(), sink }
    }

    /// The head, once everything is written.
    pub fn finish(self) -> Vec<u8> {
        self.head
    }

    /// Writes a value.
    pub fn put<T: Wire>(&mut self, v: &T) {
        v.put(self);
    }

    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.head.extend_from_slice(b);
    }

    pub(super) fn len(&mut self, n: usize) {
        self.bytes(&(n as u64).to_le_bytes());
    }

    /// Writes a column of plain values: in the head when small, else as a part.
    pub fn column<T: Plain>(&mut self, values: &[T]) {
        self.len(values.len());
        let bytes = values.len() * T::SIZE;
        let as_part = bytes >= self.part_min_bytes && bytes > 0;
        if as_part {
            if let Some(raw) = T::as_le_bytes(values) {
                // Numbers already laid out as their little-endian bytes: handed over as they are.
                self.head.push(1);
                (self.sink)(raw);
                return;
            }
        }
        let out = if as_part {
            self.head.push(1);
            self.scratch.clear();
            self.scratch.reserve(bytes);
            &mut self.scratch
        } else {
            self.head.push(0);
            &mut self.head
        };
        let start = out.len();
        out.resize(start + bytes, 0);
        for (v, dst) in values.iter().zip(out[start..].chunks_exact_mut(T::SIZE)) {
            v.write_le(dst);
        }
        if as_part {
            (self.sink)(&self.scratch);
            self.scratch = Vec::new();
        }
    }
}

/// The parts, in the order they were written, on the receiving side.
pub trait Parts {
    /// Hands the whole next part to `take`, in pieces whose lengths are multiples of `unit`;
    /// returns the part's length in bytes. An error when there is no next part.
    fn next_part(&mut self, unit: usize, take: &mut dyn FnMut(&[u8])) -> Result<usize, WireError>;

    /// Length in bytes of the next part, if there is one.
    fn next_part_len(&self) -> Option<usize>;

    /// Copies the whole next part into `dst`; an error when there is none or its length differs.
    fn next_part_into(&mut self, dst: &mut [u8]) -> Result<(), WireError> {
        let mut at = 0usize;
        let mut fits = true;
        let got = self.next_part(1, &mut |piece: &[u8]| match dst.get_mut(at..at + piece.len()) {
            Some(d) => {
                d.copy_from_slice(piece);
                at += piece.len();
            }
            None => fits = false,
        })?;
        if !fits || got != dst.len() {
            return err(format!("a part has {got} bytes, its column needs {}", dst.len()));
        }
        Ok(())
    }
}

/// Parts held in memory (tests, native use).
pub struct PartList {
    pub(super) parts: std::collections::VecDeque<Vec<u8>>,
}

impl PartList {
    /// Parts in the order they were written.
    pub fn new(parts: Vec<Vec<u8>>) -> Self {
        PartList { parts: parts.into() }
    }
}

impl Parts for PartList {
    fn next_part_len(&self) -> Option<usize> {
        self.parts.front().map(Vec::len)
    }

    fn next_part(&mut self, _unit: usize, take: &mut dyn FnMut(&[u8])) -> Result<usize, WireError> {
        let Some(p) = self.parts.pop_front() else {
            return err("a column's part is missing");
        };
        take(&p);
        Ok(p.len())
    }
}

/// Reads values back.
pub struct Decoder<'a> {
    pub(super) head: &'a [u8],
    pub(super) pos: usize,
    pub(super) parts: &'a mut dyn Parts,
    pub(super) depth: usize,
}

impl<'a> Decoder<'a> {
    /// A decoder over a head and its parts.
    pub fn new(head: &'a [u8], parts: &'a mut dyn Parts) -> Self {
        Decoder { head, pos: 0, parts, depth: 0 }
    }

    /// Reads a value.
    pub fn get<T: Wire>(&mut self) -> Result<T, WireError> {
        T::get(self)
    }

    /// Whether the whole head was read.
    pub fn at_end(&self) -> bool {
        self.pos == self.head.len()
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let head: &'a [u8] = self.head;
        match head.get(self.pos..self.pos.saturating_add(n)) {
            Some(b) => {
                self.pos += n;
                Ok(b)
            }
            None => err(format!("the head ends at byte {} inside a value of {n} bytes", self.head.len())),
        }
    }

    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let b = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }

    /// A count of items of at least `min_item_bytes` head bytes each, checked against what is left.
    pub(super) fn count(&mut self, min_item_bytes: usize) -> Result<usize, WireError> {
        let n = u64::from_le_bytes(self.array()?);
        let left = (self.head.len() - self.pos) as u64;
        if n.saturating_mul(min_item_bytes.max(1) as u64) > left {
            return err(format!("{n} items cannot fit in the {left} bytes left"));
        }
        usize::try_from(n).or_else(|_| err("count too large"))
    }

    /// Reads a column written by [`Encoder::column`].
    pub fn column<T: Plain>(&mut self) -> Result<Vec<T>, WireError> {
        if let Some(v) = self.raw_column::<T>()? {
            return Ok(v);
        }
        let mut out: Vec<T> = Vec::new();
        self.column_each(|item| match item {
            ColumnItem::Len(n) => out.reserve_exact(n),
            ColumnItem::Value(_, v) => out.push(v),
        })?;
        Ok(out)
    }

    /// Appends a column written by [`Encoder::column`] to `out`; one sent as a part of numbers is
    /// copied straight into the room after `out`'s values.
    pub fn column_into<T: Plain>(&mut self, out: &mut Vec<T>) -> Result<(), WireError> {
        if let Some(n) = self.raw_column_len::<T>()? {
            let start = out.len();
            if let Some(dst) = T::extend_le_bytes(out, n) {
                self.pos += 9;
                let copied = self.parts.next_part_into(dst);
                if copied.is_err() {
                    out.truncate(start);
                }
                return copied;
            }
        }
        let mut v = self.column()?;
        out.append(&mut v);
        Ok(())
    }

    /// The length of the next column if it is sent as a part that has arrived whole (nothing is
    /// read).
    fn raw_column_len<T: Plain>(&self) -> Result<Option<usize>, WireError> {
        let Some(at) = self.head.get(self.pos..self.pos + 9) else { return Ok(None) };
        let n = u64::from_le_bytes(at[..8].try_into().map_err(|_| WireError("short count".into()))?);
        if at[8] != 1 {
            return Ok(None);
        }
        // Allocate only what the part that arrived holds.
        Ok(usize::try_from(n).ok().filter(|&n| Some(n.saturating_mul(T::SIZE)) == self.parts.next_part_len()))
    }

    /// A column of numbers sent as a part, copied straight into its vector (`None`: not such a
    /// column; nothing was read).
    fn raw_column<T: Plain>(&mut self) -> Result<Option<Vec<T>>, WireError> {
        let Some(n) = self.raw_column_len::<T>()? else { return Ok(None) };
        let Some(mut values) = T::zeroed_vec(n) else { return Ok(None) };
        let Some(dst) = T::as_le_bytes_mut(&mut values) else { return Ok(None) };
        self.pos += 9;
        self.parts.next_part_into(dst)?;
        Ok(Some(values))
    }

    /// Reads a column written by [`Encoder::column`] value by value, without holding it: `sink`
    /// gets the column's length first, then every value in order. Returns the length.
    pub fn column_each<T: Plain>(&mut self, mut sink: impl FnMut(ColumnItem<T>)) -> Result<usize, WireError> {
        let n = u64::from_le_bytes(self.array()?);
        let in_part = self.array::<1>()?[0] == 1;
        let Some(bytes) = n.checked_mul(T::SIZE as u64).and_then(|b| usize::try_from(b).ok()) else {
            return err("column too large");
        };
        let count = bytes / T::SIZE;
        if !in_part {
            let b = self.take(bytes)?;
            sink(ColumnItem::Len(count));
            for (i, c) in b.chunks_exact(T::SIZE).enumerate() {
                sink(ColumnItem::Value(i, T::read_le(c)?));
            }
            return Ok(count);
        }
        // A part: trust its length only once it has arrived.
        let mut i = 0usize;
        let mut started = false;
        let mut bad: Option<WireError> = None;
        let got = self.parts.next_part(T::SIZE, &mut |piece: &[u8]| {
            if bad.is_some() {
                return;
            }
            if !started {
                started = true;
                sink(ColumnItem::Len(count));
            }
            if piece.len() % T::SIZE != 0 || i + piece.len() / T::SIZE > count {
                bad = Some(WireError("a part does not match its column".into()));
                return;
            }
            for c in piece.chunks_exact(T::SIZE) {
                match T::read_le(c) {
                    Ok(v) => sink(ColumnItem::Value(i, v)),
                    Err(e) => {
                        bad = Some(e);
                        return;
                    }
                }
                i += 1;
            }
        })?;
        if let Some(e) = bad {
            return Err(e);
        }
        if got != bytes || i != count {
            return err(format!("a part has {got} bytes, its column needs {bytes}"));
        }
        Ok(count)
    }
}

/// What [`Decoder::column_each`] hands out.
#[derive(Clone, Copy, Debug)]
pub enum ColumnItem<T> {
    /// The column's length, before any value.
    Len(usize),
    /// The value at an index.
    Value(usize, T),
}

/// A value stored by its little-endian bytes.
pub trait Plain: Sized {
    /// Bytes of one value.
    const SIZE: usize;
    /// Writes the value's bytes into exactly [`Plain::SIZE`] bytes.
    fn write_le(&self, out: &mut [u8]);
    /// Reads a value from exactly [`Plain::SIZE`] bytes.
    fn read_le(b: &[u8]) -> Result<Self, WireError>;
    /// The values' bytes as they lie in memory, when that is their little-endian encoding.
    fn as_le_bytes(_values: &[Self]) -> Option<&[u8]> {
        None
    }
    /// `n` zero values whose bytes [`Plain::as_le_bytes_mut`] can fill (only where
    /// [`Plain::as_le_bytes`] works).
    fn zeroed_vec(_n: usize) -> Option<Vec<Self>> {
        None
    }
    /// The values' bytes to write, when they lie in memory as their little-endian encoding.
    fn as_le_bytes_mut(_values: &mut [Self]) -> Option<&mut [u8]> {
        None
    }
    /// Appends `n` zeros to `values` and returns their bytes to write, when values lie in memory
    /// as their little-endian encoding (`values` is left alone otherwise).
    fn extend_le_bytes(_values: &mut Vec<Self>, _n: usize) -> Option<&mut [u8]> {
        None
    }
}

/// Whether numbers lie in memory as their little-endian bytes.
const LITTLE_ENDIAN: bool = cfg!(target_endian = "little");

macro_rules! plain_int {
    ($($t:ty),*) => {$(
        impl Plain for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn write_le(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn read_le(b: &[u8]) -> Result<Self, WireError> {
                match b.try_into() {
                    Ok(a) => Ok(<$t>::from_le_bytes(a)),
                    Err(_) => err("short value"),
                }
            }
            fn as_le_bytes(values: &[Self]) -> Option<&[u8]> {
                LITTLE_ENDIAN.then(|| bytemuck::cast_slice(values))
            }
            fn zeroed_vec(n: usize) -> Option<Vec<Self>> {
                LITTLE_ENDIAN.then(|| vec![0 as $t; n])
            }
            fn as_le_bytes_mut(values: &mut [Self]) -> Option<&mut [u8]> {
                LITTLE_ENDIAN.then(|| bytemuck::cast_slice_mut(values))
            }
            fn extend_le_bytes(values: &mut Vec<Self>, n: usize) -> Option<&mut [u8]> {
                if !LITTLE_ENDIAN {
                    return None;
                }
                let start = values.len();
                values.resize(start.saturating_add(n), 0 as $t);
                values.get_mut(start..).map(bytemuck::cast_slice_mut)
            }
        }
        impl Wire for $t {
            fn put(&self, e: &mut Encoder<'_>) {
                e.bytes(&self.to_le_bytes());
            }
            fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
                Ok(<$t>::from_le_bytes(d.array()?))
            }
            fn put_slice(items: &[Self], e: &mut Encoder<'_>) {
                e.column(items);
            }
            fn get_vec(d: &mut Decoder<'_>) -> Result<Vec<Self>, WireError> {
                d.column()
            }
            fn get_vec_into(d: &mut Decoder<'_>, out: &mut Vec<Self>) -> Result<(), WireError> {
                d.column_into(out)
            }
        }
    )*};
}

plain_int!(u8, u32, u64, i64, i128, f64);

impl Plain for bool {
    const SIZE: usize = 1;
    fn write_le(&self, out: &mut [u8]) {
        out.fill(u8::from(*self));
    }
    fn read_le(b: &[u8]) -> Result<Self, WireError> {
        match b {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => err("a bool is neither 0 nor 1"),
        }
    }
}

/// A value that can be written by an [`Encoder`] and read back by a [`Decoder`].
pub trait Wire: Sized {
    /// Writes the value.
    fn put(&self, e: &mut Encoder<'_>);
    /// Reads a value.
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError>;
    /// Writes a slice of values (plain values override this to write a column).
    fn put_slice(items: &[Self], e: &mut Encoder<'_>) {
        e.len(items.len());
        for x in items {
            x.put(e);
        }
    }
    /// Reads what [`Wire::put_slice`] wrote.
    fn get_vec(d: &mut Decoder<'_>) -> Result<Vec<Self>, WireError> {
        let n = d.count(1)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(Self::get(d)?);
        }
        Ok(v)
    }
    /// Reads what [`Wire::put_slice`] wrote and appends it to `out`.
    fn get_vec_into(d: &mut Decoder<'_>, out: &mut Vec<Self>) -> Result<(), WireError> {
        let mut v = Self::get_vec(d)?;
        out.append(&mut v);
        Ok(())
    }
}

impl Wire for bool {
    fn put(&self, e: &mut Encoder<'_>) {
        e.head.push(u8::from(*self));
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        bool::read_le(d.take(1)?)
    }
    fn put_slice(items: &[Self], e: &mut Encoder<'_>) {
        e.column(items);
    }
    fn get_vec(d: &mut Decoder<'_>) -> Result<Vec<Self>, WireError> {
        d.column()
    }
}

impl Wire for usize {
    fn put(&self, e: &mut Encoder<'_>) {
        (*self as u64).put(e);
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        usize::try_from(u64::get(d)?).or_else(|_| err("a size does not fit this machine"))
    }
}

impl Wire for String {
    fn put(&self, e: &mut Encoder<'_>) {
        e.len(self.len());
        e.bytes(self.as_bytes());
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        let n = d.count(1)?;
        let b = d.take(n)?;
        String::from_utf8(b.to_vec()).or_else(|_| err("a string is not UTF-8"))
    }
}

impl<T: Wire> Wire for Vec<T> {
    fn put(&self, e: &mut Encoder<'_>) {
        T::put_slice(self, e);
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        T::get_vec(d)
    }
}

impl<T: Wire> Wire for Option<T> {
    fn put(&self, e: &mut Encoder<'_>) {
        match self {
            None => e.head.push(0),
            Some(v) => {
                e.head.push(1);
                v.put(e);
            }
        }
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        match d.take(1)?[0] {
            0 => Ok(None),
            1 => Ok(Some(T::get(d)?)),
            _ => err("bad option tag"),
        }
    }
}

impl<T: Wire> Wire for Box<T> {
    fn put(&self, e: &mut Encoder<'_>) {
        (**self).put(e);
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        Ok(Box::new(T::get(d)?))
    }
}

impl<A: Wire, B: Wire> Wire for (A, B) {
    fn put(&self, e: &mut Encoder<'_>) {
        self.0.put(e);
        self.1.put(e);
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        Ok((A::get(d)?, B::get(d)?))
    }
}

impl<A: Wire, B: Wire, C: Wire> Wire for (A, B, C) {
    fn put(&self, e: &mut Encoder<'_>) {
        self.0.put(e);
        self.1.put(e);
        self.2.put(e);
    }
    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        Ok((A::get(d)?, B::get(d)?, C::get(d)?))
    }
}

/// Implements [`Wire`] for a struct field by field.
#[macro_export]
macro_rules! wire_struct {
    ($t:ty { $($f:ident),* $(,)? }) => {
        impl $crate::wire::Wire for $t {
            fn put(&self, e: &mut $crate::wire::Encoder<'_>) {
                $( e.put(&self.$f); )*
            }
            fn get(d: &mut $crate::wire::Decoder<'_>) -> Result<Self, $crate::wire::WireError> {
                Ok(Self { $( $f: d.get()?, )* })
            }
        }
    };
}
