//! Moving a model between threads as bytes: a [`Snapshot`](crate::Snapshot) or a timeline
//! [`Layout`](crate::timeline::Layout) built in one place (a Web Worker) and used in another (the
//! page), without building it twice.
//!
//! The encoding has two parts: a *head* with every small value, and *parts*, one per large
//! column (a trace's addresses, a layout's event steps, ...), written little-endian as raw
//! values. The parts are handed out one by one as they are written ([`Encoder::new`] takes a
//! sink), so the sender can pass each on and free it; the receiver feeds them back through
//! [`Parts`] in the same order, in pieces, so a column is copied straight into its vector and
//! never held twice. Columns below [`PART_MIN_BYTES`] stay in the head.
//!
//! Both ends are the same program, but a decoder still never panics or allocates more than the
//! input justifies: every count is checked against the bytes left, and trees are as deep as
//! [`tree::MAX_DEPTH`](crate::tree::MAX_DEPTH) allows, no deeper.

use crate::tree::{self, Tree};

/// Columns of at least this many bytes travel as parts of their own.
pub const PART_MIN_BYTES: usize = 64 << 10;

/// Deepest tree a decoder accepts (the model never holds deeper ones).
const MAX_TREE_DEPTH: usize = tree::MAX_DEPTH + 8;

/// What went wrong while decoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "model transfer: {}", self.0)
    }
}

impl std::error::Error for WireError {}

fn err<T>(what: impl Into<String>) -> Result<T, WireError> {
    Err(WireError(what.into()))
}

/// Writes values; large columns go to the sink as parts, the rest to the head.
pub struct Encoder<'a> {
    head: Vec<u8>,
    part_min_bytes: usize,
    scratch: Vec<u8>,
    sink: &'a mut dyn FnMut(&[u8]),
}

impl<'a> Encoder<'a> {
    /// An encoder that hands each part to `sink` as soon as it is written.
    pub fn new(sink: &'a mut dyn FnMut(&[u8])) -> Self {
        Self::with_part_min(sink, PART_MIN_BYTES)
    }

    /// An encoder that writes columns of at least `part_min_bytes` as parts.
    pub fn with_part_min(sink: &'a mut dyn FnMut(&[u8]), part_min_bytes: usize) -> Self {
        Encoder {
            head: Vec::new(),
            part_min_bytes,
            scratch: Vec::new(),
            sink,
        }
    }

    /// The head, once everything is written.
    pub fn finish(self) -> Vec<u8> {
        self.head
    }

    /// Writes a value.
    pub fn put<T: Wire>(&mut self, v: &T) {
        v.put(self);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.head.extend_from_slice(b);
    }

    fn len(&mut self, n: usize) {
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

    /// Writes a column computed from items (for struct fields stored by column).
    pub fn column_of<S, T: Plain>(&mut self, items: &[S], f: impl Fn(&S) -> T) {
        let values: Vec<T> = items.iter().map(f).collect();
        self.column(&values);
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
    parts: std::collections::VecDeque<Vec<u8>>,
}

impl PartList {
    /// Parts in the order they were written.
    pub fn new(parts: Vec<Vec<u8>>) -> Self {
        PartList {
            parts: parts.into(),
        }
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
    head: &'a [u8],
    pos: usize,
    parts: &'a mut dyn Parts,
    depth: usize,
}

impl<'a> Decoder<'a> {
    /// A decoder over a head and its parts.
    pub fn new(head: &'a [u8], parts: &'a mut dyn Parts) -> Self {
        Decoder {
            head,
            pos: 0,
            parts,
            depth: 0,
        }
    }

    /// Reads a value.
    pub fn get<T: Wire>(&mut self) -> Result<T, WireError> {
        T::get(self)
    }

    /// Whether the whole head was read.
    pub fn at_end(&self) -> bool {
        self.pos == self.head.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let head: &'a [u8] = self.head;
        match head.get(self.pos..self.pos.saturating_add(n)) {
            Some(b) => {
                self.pos += n;
                Ok(b)
            }
            None => err(format!(
                "the head ends at byte {} inside a value of {n} bytes",
                self.head.len()
            )),
        }
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let b = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }

    /// A count of items of at least `min_item_bytes` head bytes each, checked against what is left.
    fn count(&mut self, min_item_bytes: usize) -> Result<usize, WireError> {
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
    pub fn column_each<T: Plain>(
        &mut self,
        mut sink: impl FnMut(ColumnItem<T>),
    ) -> Result<usize, WireError> {
        let n = u64::from_le_bytes(self.array()?);
        let in_part = self.array::<1>()?[0] == 1;
        let Some(bytes) = n
            .checked_mul(T::SIZE as u64)
            .and_then(|b| usize::try_from(b).ok())
        else {
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

/// A struct sent as a sequence of messages rather than one: a message per field, and its large
/// `Vec` fields in chunks of about `chunk_bytes` each, so that the side that receives it can
/// decode one message at a time and take events in between (a page's main thread must not be
/// busy for long). [`wire_by_field!`] makes it; [`decode_field`] reads one message.
pub trait ByField: Default {
    /// Hands each message to `out` in order: the field's number and a function that encodes the
    /// message.
    fn put_by_field(&self, chunk_bytes: usize, out: &mut MessageSink<'_>);

    /// Decodes one message of field `field` into `self` (the chunks of a `Vec` field are
    /// appended in order).
    fn get_field(&mut self, field: u32, d: &mut Decoder<'_>) -> Result<(), WireError>;
}

/// Where a [`ByField`] value's messages go: a field's number and a function that encodes one.
pub type MessageSink<'a> = dyn FnMut(u32, &dyn Fn(&mut Encoder<'_>)) + 'a;

/// Decodes one message of a [`ByField`] value: `head` and its parts.
pub fn decode_field<T: ByField>(value: &mut T, field: u32, head: &[u8], parts: &mut dyn Parts) -> Result<(), WireError> {
    let mut d = Decoder::new(head, parts);
    value.get_field(field, &mut d)?;
    if !d.at_end() {
        return err("bytes left over after a field");
    }
    Ok(())
}

/// Encodes a [`ByField`] value's messages as (field, head, parts), for tests and native use.
pub fn encode_by_field<T: ByField>(v: &T, chunk_bytes: usize) -> Vec<(u32, Vec<u8>, Vec<Vec<u8>>)> {
    let mut out = Vec::new();
    v.put_by_field(chunk_bytes, &mut |field, put| {
        let mut parts = Vec::new();
        let mut sink = |p: &[u8]| parts.push(p.to_vec());
        let mut e = Encoder::new(&mut sink);
        put(&mut e);
        let head = e.finish();
        out.push((field, head, parts));
    });
    out
}

/// Most values in one chunk of a `Vec` field: values that are checked one by one as they are
/// read (an action, a flag) cost far more than their bytes.
const CHUNK_VALUES: usize = 1 << 20;

/// Values of a `Vec<T>` field per chunk of about `chunk_bytes` (and at most [`CHUNK_VALUES`]).
#[doc(hidden)]
pub fn chunk_len<T>(_: &[T], chunk_bytes: usize) -> usize {
    (chunk_bytes / std::mem::size_of::<T>().max(1)).clamp(1, CHUNK_VALUES)
}

/// Writes one chunk of a `Vec` field: the whole field's length, then the chunk.
#[doc(hidden)]
pub fn put_chunk<T: Wire>(total: usize, chunk: &[T], e: &mut Encoder<'_>) {
    e.put(&(total as u64));
    T::put_slice(chunk, e);
}

/// Reads one chunk of a `Vec` field and appends it to `field`; the whole length, sent with every
/// chunk, reserves the field's room once and bounds what the chunks may add up to.
#[doc(hidden)]
pub fn get_chunk<T: Wire>(field: &mut Vec<T>, d: &mut Decoder<'_>) -> Result<(), WireError> {
    let total: u64 = d.get()?;
    let too_long = || err("a field's chunks are longer than the field");
    let Ok(total) = usize::try_from(total) else { return too_long() };
    if field.is_empty() {
        let mut chunk = T::get_vec(d)?;
        if chunk.len() > total {
            return too_long();
        }
        if chunk.len() == total {
            *field = chunk;
            return Ok(());
        }
        field.try_reserve_exact(total).map_err(|_| WireError(format!("no room for a field of {total} values")))?;
        field.append(&mut chunk);
        return Ok(());
    }
    // Later chunks go straight into the room reserved after the first.
    T::get_vec_into(d, field)?;
    if field.len() > total {
        return too_long();
    }
    Ok(())
}

/// Field numbers of a [`ByField`] value nested in another: the outer field's number times this,
/// plus the inner one's.
#[doc(hidden)]
pub const NESTED_FIELDS: u32 = 1 << 16;

/// Implements [`Wire`] (as [`wire_struct!`] does, every field in the order listed) and
/// [`ByField`] for a struct: the fields in the first list are sent whole, one message each, then
/// those in the second list (each a `Vec`) in chunks, then those in the third (each [`ByField`]
/// itself) message by message. Every field must be named once (the [`Wire`] impl builds the
/// struct from them, so one left out does not compile).
#[macro_export]
macro_rules! wire_by_field {
    ($t:ty { $($f:ident),* $(,)? } chunked { $($c:ident),* $(,)? } $(nested { $($n:ident),* $(,)? })?) => {
        $crate::wire_struct!($t { $($f,)* $($c,)* $($($n,)*)? });
        impl $crate::wire::ByField for $t {
            #[allow(unused_assignments)]
            fn put_by_field(&self, chunk_bytes: usize, out: &mut $crate::wire::MessageSink<'_>) {
                let mut i = 0u32;
                $( out(i, &|e| e.put(&self.$f)); i += 1; )*
                $(
                    let n = $crate::wire::chunk_len(&self.$c, chunk_bytes);
                    for chunk in self.$c.chunks(n) {
                        out(i, &|e| $crate::wire::put_chunk(self.$c.len(), chunk, e));
                    }
                    i += 1;
                )*
                $($(
                    let base = (i + 1) * $crate::wire::NESTED_FIELDS;
                    $crate::wire::ByField::put_by_field(&self.$n, chunk_bytes, &mut |sub, put| out(base + sub, put));
                    i += 1;
                )*)?
            }
            #[allow(unused_assignments)]
            fn get_field(
                &mut self,
                field: u32,
                d: &mut $crate::wire::Decoder<'_>,
            ) -> Result<(), $crate::wire::WireError> {
                let mut i = 0u32;
                $( if field == i { self.$f = d.get()?; return Ok(()); } i += 1; )*
                $( if field == i { return $crate::wire::get_chunk(&mut self.$c, d); } i += 1; )*
                $($(
                    if field / $crate::wire::NESTED_FIELDS == i + 1 {
                        return $crate::wire::ByField::get_field(&mut self.$n, field % $crate::wire::NESTED_FIELDS, d);
                    }
                    i += 1;
                )*)?
                Err($crate::wire::WireError(format!("{} has no field {field}", stringify!($t))))
            }
        }
    };
}

/// Implements [`Wire`] for a field-less enum through its position in a list of its variants.
#[macro_export]
macro_rules! wire_enum {
    ($t:ty, [$($v:expr),* $(,)?]) => {
        impl $crate::wire::Wire for $t {
            fn put(&self, e: &mut $crate::wire::Encoder<'_>) {
                const ALL: &[$t] = &[$($v),*];
                let i = ALL.iter().position(|x| x == self).unwrap_or(0) as u8;
                e.put(&i);
            }
            fn get(d: &mut $crate::wire::Decoder<'_>) -> Result<Self, $crate::wire::WireError> {
                const ALL: &[$t] = &[$($v),*];
                let i: u8 = d.get()?;
                ALL.get(usize::from(i)).copied().ok_or_else(|| {
                    $crate::wire::WireError(format!("bad {} tag {i}", stringify!($t)))
                })
            }
        }
    };
}

// Trees: one tag byte per node, at most MAX_TREE_DEPTH deep.
const T_NONE: u8 = 0;
const T_BOOL: u8 = 1;
const T_INT: u8 = 2;
const T_BIGINT: u8 = 3;
const T_FLOAT: u8 = 4;
const T_STR: u8 = 5;
const T_BYTES: u8 = 6;
const T_LIST: u8 = 7;
const T_TUPLE: u8 = 8;
const T_DICT: u8 = 9;
const T_SET: u8 = 10;
const T_FROZENSET: u8 = 11;
const T_STACK: u8 = 12;
const T_ELIDED: u8 = 13;

fn put_items(e: &mut Encoder<'_>, tag: u8, items: &[Tree]) {
    e.head.push(tag);
    e.len(items.len());
    for x in items {
        x.put(e);
    }
}

impl Wire for Tree {
    fn put(&self, e: &mut Encoder<'_>) {
        match self {
            Tree::None => e.head.push(T_NONE),
            Tree::Bool(b) => {
                e.head.push(T_BOOL);
                b.put(e);
            }
            Tree::Int(i) => {
                e.head.push(T_INT);
                i.put(e);
            }
            Tree::BigInt(s) => {
                e.head.push(T_BIGINT);
                s.put(e);
            }
            Tree::Float(f) => {
                e.head.push(T_FLOAT);
                f.put(e);
            }
            Tree::Str(s) => {
                e.head.push(T_STR);
                s.put(e);
            }
            Tree::Bytes(b) => {
                e.head.push(T_BYTES);
                e.len(b.len());
                e.bytes(b);
            }
            Tree::List(v) => put_items(e, T_LIST, v),
            Tree::Tuple(v) => put_items(e, T_TUPLE, v),
            Tree::Set(v) => put_items(e, T_SET, v),
            Tree::FrozenSet(v) => put_items(e, T_FROZENSET, v),
            Tree::Dict(kv) => {
                e.head.push(T_DICT);
                e.len(kv.len());
                for (k, v) in kv {
                    k.put(e);
                    v.put(e);
                }
            }
            Tree::Stack(id) => {
                e.head.push(T_STACK);
                id.put(e);
            }
            Tree::Elided => e.head.push(T_ELIDED),
        }
    }

    fn get(d: &mut Decoder<'_>) -> Result<Self, WireError> {
        if d.depth >= MAX_TREE_DEPTH {
            return err("a tree is deeper than the model allows");
        }
        d.depth += 1;
        let t = tree_node(d);
        d.depth -= 1;
        t
    }
}

fn tree_items(d: &mut Decoder<'_>) -> Result<Vec<Tree>, WireError> {
    let n = d.count(1)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(<Tree as Wire>::get(d)?);
    }
    Ok(v)
}

fn tree_node(d: &mut Decoder<'_>) -> Result<Tree, WireError> {
    let tag: u8 = d.get()?;
    Ok(match tag {
        T_NONE => Tree::None,
        T_BOOL => Tree::Bool(d.get()?),
        T_INT => Tree::Int(d.get()?),
        T_BIGINT => Tree::BigInt(d.get()?),
        T_FLOAT => Tree::Float(d.get()?),
        T_STR => Tree::Str(d.get()?),
        T_BYTES => {
            let n = d.count(1)?;
            Tree::Bytes(d.take(n)?.to_vec())
        }
        T_LIST => Tree::List(tree_items(d)?),
        T_TUPLE => Tree::Tuple(tree_items(d)?),
        T_SET => Tree::Set(tree_items(d)?),
        T_FROZENSET => Tree::FrozenSet(tree_items(d)?),
        T_DICT => {
            let n = d.count(2)?;
            let mut kv = Vec::with_capacity(n);
            for _ in 0..n {
                let k = <Tree as Wire>::get(d)?;
                let v = <Tree as Wire>::get(d)?;
                kv.push((k, v));
            }
            Tree::Dict(kv)
        }
        T_STACK => Tree::Stack(d.get()?),
        T_ELIDED => Tree::Elided,
        _ => return err(format!("bad tree tag {tag}")),
    })
}

/// Encodes a value: returns the head and the parts in order.
pub fn encode<T: Wire>(v: &T) -> (Vec<u8>, Vec<Vec<u8>>) {
    encode_with_part_min(v, PART_MIN_BYTES)
}

/// Encodes a value with every column of at least `part_min_bytes` (and not empty) as a part.
pub fn encode_with_part_min<T: Wire>(v: &T, part_min_bytes: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut parts = Vec::new();
    let mut sink = |p: &[u8]| parts.push(p.to_vec());
    let mut e = Encoder::with_part_min(&mut sink, part_min_bytes);
    v.put(&mut e);
    let head = e.finish();
    (head, parts)
}

/// Decodes a value from a head and its parts; the head must be read to its end.
pub fn decode<T: Wire>(head: &[u8], parts: &mut dyn Parts) -> Result<T, WireError> {
    let mut d = Decoder::new(head, parts);
    let v = T::get(&mut d)?;
    if !d.at_end() {
        return err("bytes left over after the value");
    }
    Ok(v)
}

/// Every snapshot the tests know: the shared fixtures, the real and synthetic test files.
#[cfg(test)]
pub(crate) fn test_snapshots() -> Vec<(std::path::PathBuf, crate::Snapshot)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for dir in ["../shared/fixtures", "tests/data/real", "tests/data/synth"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            if let Ok(snap) = crate::load(&bytes) {
                out.push((path, snap));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn round<T: Wire + PartialEq + std::fmt::Debug>(v: &T) {
        let (head, parts) = encode(v);
        let back: T = decode(&head, &mut PartList::new(parts)).unwrap();
        assert_eq!(&back, v);
    }

    #[test]
    fn values_round_trip() {
        round(&0u8);
        round(&u64::MAX);
        round(&i128::MIN);
        round(&-0.5f64);
        round(&"héllo".to_string());
        round(&Some(vec![1u32, 2, 3]));
        round(&Option::<u32>::None);
        round(&vec![(1u32, 2u64), (3, 4)]);
        round(&vec![true, false, true]);
        let big: Vec<u64> = (0..100_000).collect();
        round(&big);
        let t = Tree::Dict(vec![
            (
                Tree::Str("a".into()),
                Tree::List(vec![
                    Tree::Int(-1),
                    Tree::BigInt("1".repeat(50)),
                    Tree::None,
                ]),
            ),
            (
                Tree::Bytes(vec![0, 255]),
                Tree::Tuple(vec![Tree::Float(1.5), Tree::Stack(7), Tree::Elided]),
            ),
            (Tree::Bool(true), Tree::FrozenSet(vec![Tree::Set(vec![])])),
        ]);
        round(&t);
    }

    #[test]
    fn big_columns_travel_as_parts() {
        let big: Vec<u64> = (0..100_000).collect();
        let (head, parts) = encode(&(big, vec![1u32, 2]));
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].len(), 800_000);
        assert!(head.len() < 100);
        // A missing or short part is an error, not a panic.
        assert!(decode::<(Vec<u64>, Vec<u32>)>(&head, &mut PartList::new(vec![])).is_err());
        assert!(
            decode::<(Vec<u64>, Vec<u32>)>(&head, &mut PartList::new(vec![vec![0; 8]])).is_err()
        );
    }

    #[derive(Default, Debug, PartialEq)]
    struct Chunked {
        n: u32,
        v: Vec<u64>,
        w: Vec<u8>,
    }
    crate::wire_by_field!(Chunked { n } chunked { v, w });

    #[test]
    fn chunks_append_in_place_and_may_not_outgrow_their_field() {
        let c = Chunked { n: 7, v: (0..50_000u64).map(|k| k * k).collect(), w: (0..50_000u32).map(|k| k as u8).collect() };
        for chunk_bytes in [1, 100, 64 << 10, 1 << 20] {
            let msgs = encode_by_field(&c, chunk_bytes);
            let mut back = Chunked::default();
            for (field, head, parts) in &msgs {
                decode_field(&mut back, *field, head, &mut PartList::new(parts.clone())).unwrap();
            }
            assert_eq!(back, c);
            // One chunk of `v` more than the field holds is refused (in a part or in the head).
            if let Some((field, head, parts)) = msgs.iter().filter(|m| m.0 == 1).last() {
                let again = decode_field(&mut back, *field, head, &mut PartList::new(parts.clone()));
                assert!(again.is_err());
            }
        }
    }

    #[test]
    fn damaged_heads_are_errors() {
        let v: Vec<(String, Tree)> = vec![("k".into(), Tree::List(vec![Tree::Int(3); 5]))];
        let (head, _) = encode(&v);
        for cut in 0..head.len() {
            assert!(
                decode::<Vec<(String, Tree)>>(&head[..cut], &mut PartList::new(vec![])).is_err()
            );
        }
        for i in 0..head.len() {
            let mut h = head.clone();
            h[i] ^= 0xff;
            let _ = decode::<Vec<(String, Tree)>>(&h, &mut PartList::new(vec![]));
        }
        // A huge count is refused before allocating.
        let mut h = vec![0xff; 8];
        h.extend_from_slice(&[0; 8]);
        assert!(decode::<Vec<String>>(&h, &mut PartList::new(vec![])).is_err());
        // Deep trees are refused.
        let mut deep = Vec::new();
        for _ in 0..1000 {
            deep.push(T_LIST);
            deep.extend_from_slice(&1u64.to_le_bytes());
        }
        deep.push(T_NONE);
        assert!(decode::<Tree>(&deep, &mut PartList::new(vec![])).is_err());
    }
}
