//! [`Value`], one decoded pickle value, and the tags its memo slots are stored under.

use std::hash::{Hash, Hasher};

/// A decoded value. Containers and strings are indices into the owning [`Document`](super::Document).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// Python `None`.
    None,
    /// Python `bool`.
    Bool(bool),
    /// A Python `int` that fits in `i64`.
    Int(i64),
    /// A Python `int` in `i64::MAX+1 ..= u64::MAX` (pointers at or above 2^63).
    UInt(u64),
    /// A larger Python `int`: index into [`Document::bigints`](super::Document::bigints) (little-endian two's complement).
    BigInt(u32),
    /// Python `float`.
    Float(f64),
    /// Python `str`: index into the interned string table.
    Str(u32),
    /// Python `bytes` or `bytearray`: index into the byte-string table.
    Bytes(u32),
    /// Python `list`.
    List(u32),
    /// Python `tuple`.
    Tuple(u32),
    /// Python `dict`.
    Dict(u32),
    /// Python `set`.
    Set(u32),
    /// Python `frozenset`.
    FrozenSet(u32),
}

pub(super) const MEMO_OTHER: u8 = 255;
/// The memo tag of a string.
pub(super) const MEMO_STR: u8 = 1;
/// The memo tag of a list.
pub(super) const MEMO_LIST: u8 = 2;
/// The memo tag of a dict.
pub(super) const MEMO_DICT: u8 = 3;

impl Value {
    pub(super) fn hash_bits<H: Hasher>(&self, h: &mut H) {
        match *self {
            Value::None => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Int(i) => (2u8, i).hash(h),
            Value::UInt(u) => (3u8, u).hash(h),
            Value::Float(f) => (4u8, f.to_bits()).hash(h),
            Value::Str(s) => (5u8, s).hash(h),
            Value::BigInt(i)
            | Value::Bytes(i)
            | Value::List(i)
            | Value::Tuple(i)
            | Value::Dict(i)
            | Value::Set(i)
            | Value::FrozenSet(i) => (6u8, i).hash(h),
        }
    }
}
