//! Structs sent as many messages, a field (and a chunk of a large column) each: [`ByField`],
//! [`wire_by_field!`](crate::wire_by_field), and [`wire_enum!`](crate::wire_enum) for plain enums.

use super::codec::{Decoder, Encoder, Parts, Wire};
use super::{err, WireError};

/// A struct sent as a sequence of messages rather than one: a message per field, and its large
/// `Vec` fields in chunks of about `chunk_bytes` each, so that the side that receives it can
/// decode one message at a time and take events in between (a page's main thread must not be
/// busy for long). [`wire_by_field!`](crate::wire_by_field) makes it; [`decode_field`] reads one message.
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
pub fn decode_field<T: ByField>(
    value: &mut T,
    field: u32,
    head: &[u8],
    parts: &mut dyn Parts,
) -> Result<(), WireError> {
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

/// Implements [`Wire`] (as [`wire_struct!`](crate::wire_struct) does, every field in the order listed) and
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
