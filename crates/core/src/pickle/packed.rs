//! [`Packed`]: a dict's values stored by width (a tag byte, then a 32-bit or a 64-bit payload).

use super::value::Value;

const TAG_NONE: u8 = 0;
const TAG_BOOL: u8 = 1;
const TAG_INT: u8 = 2;
const TAG_UINT: u8 = 3;
const TAG_BIGINT: u8 = 4;
const TAG_FLOAT: u8 = 5;
const TAG_STR: u8 = 6;
const TAG_BYTES: u8 = 7;
const TAG_LIST: u8 = 8;
const TAG_TUPLE: u8 = 9;
const TAG_DICT: u8 = 10;
const TAG_SET: u8 = 11;
const TAG_FROZENSET: u8 = 12;

/// Values packed by width: a tag byte each, 32-bit payloads (ids, small ints) in one column and
/// 64-bit payloads (addresses, times, floats) in another; a prefix count every 16 values keeps
/// random access O(16). About 5 bytes a value for snapshot records instead of 16.
#[derive(Default, Debug)]
pub(super) struct Packed {
    pub(super) tags: Vec<u8>,
    pub(super) w32: Vec<u32>,
    pub(super) w64: Vec<u64>,
    pub(super) block_w32: Vec<u32>,
    pub(super) block_w64: Vec<u32>,
}

const TAG_BOOL_TRUE: u8 = 13;
const TAG_INT32: u8 = 14;
const PACK_BLOCK: usize = 16;

/// 0: no payload, 1: 32-bit, 2: 64-bit.
fn tag_width(t: u8) -> u8 {
    match t {
        TAG_NONE | TAG_BOOL | TAG_BOOL_TRUE => 0,
        TAG_INT | TAG_UINT | TAG_FLOAT => 2,
        _ => 1,
    }
}

impl Packed {
    pub(super) fn push(&mut self, v: Value) {
        if self.tags.len() % PACK_BLOCK == 0 {
            self.block_w32.push(self.w32.len() as u32);
            self.block_w64.push(self.w64.len() as u32);
        }
        let (t, p): (u8, u64) = match v {
            Value::None => (TAG_NONE, 0),
            Value::Bool(false) => (TAG_BOOL, 0),
            Value::Bool(true) => (TAG_BOOL_TRUE, 0),
            Value::Int(i) => match i32::try_from(i) {
                Ok(small) => (TAG_INT32, u64::from(small as u32)),
                Err(_) => (TAG_INT, i as u64),
            },
            Value::UInt(u) => (TAG_UINT, u),
            Value::BigInt(i) => (TAG_BIGINT, u64::from(i)),
            Value::Float(f) => (TAG_FLOAT, f.to_bits()),
            Value::Str(i) => (TAG_STR, u64::from(i)),
            Value::Bytes(i) => (TAG_BYTES, u64::from(i)),
            Value::List(i) => (TAG_LIST, u64::from(i)),
            Value::Tuple(i) => (TAG_TUPLE, u64::from(i)),
            Value::Dict(i) => (TAG_DICT, u64::from(i)),
            Value::Set(i) => (TAG_SET, u64::from(i)),
            Value::FrozenSet(i) => (TAG_FROZENSET, u64::from(i)),
        };
        self.tags.push(t);
        match tag_width(t) {
            1 => self.w32.push(p as u32),
            2 => self.w64.push(p),
            _ => {}
        }
    }

    pub(super) fn get(&self, i: usize) -> Value {
        let Some(&t) = self.tags.get(i) else {
            return Value::None;
        };
        let b = i / PACK_BLOCK;
        let (mut n32, mut n64) = (
            self.block_w32.get(b).copied().unwrap_or(0) as usize,
            self.block_w64.get(b).copied().unwrap_or(0) as usize,
        );
        for &bt in self.tags.get(b * PACK_BLOCK..i).unwrap_or(&[]) {
            match tag_width(bt) {
                1 => n32 += 1,
                2 => n64 += 1,
                _ => {}
            }
        }
        let p32 = || self.w32.get(n32).copied().unwrap_or(0);
        let p64 = || self.w64.get(n64).copied().unwrap_or(0);
        match t {
            TAG_BOOL => Value::Bool(false),
            TAG_BOOL_TRUE => Value::Bool(true),
            TAG_INT32 => Value::Int(i64::from(p32() as i32)),
            TAG_INT => Value::Int(p64() as i64),
            TAG_UINT => Value::UInt(p64()),
            TAG_FLOAT => Value::Float(f64::from_bits(p64())),
            TAG_BIGINT => Value::BigInt(p32()),
            TAG_STR => Value::Str(p32()),
            TAG_BYTES => Value::Bytes(p32()),
            TAG_LIST => Value::List(p32()),
            TAG_TUPLE => Value::Tuple(p32()),
            TAG_DICT => Value::Dict(p32()),
            TAG_SET => Value::Set(p32()),
            TAG_FROZENSET => Value::FrozenSet(p32()),
            _ => Value::None,
        }
    }

    /// Appends values `start..start+n`, decoding sequentially.
    pub(super) fn get_run(&self, start: usize, n: usize, out: &mut Vec<Value>) {
        if n == 0 {
            return;
        }
        let b = start / PACK_BLOCK;
        let (mut n32, mut n64) = (
            self.block_w32.get(b).copied().unwrap_or(0) as usize,
            self.block_w64.get(b).copied().unwrap_or(0) as usize,
        );
        for &bt in self.tags.get(b * PACK_BLOCK..start).unwrap_or(&[]) {
            match tag_width(bt) {
                1 => n32 += 1,
                2 => n64 += 1,
                _ => {}
            }
        }
        for &t in self.tags.get(start..start + n).unwrap_or(&[]) {
            let p32 = self.w32.get(n32).copied().unwrap_or(0);
            let p64 = self.w64.get(n64).copied().unwrap_or(0);
            match tag_width(t) {
                1 => n32 += 1,
                2 => n64 += 1,
                _ => {}
            }
            out.push(match t {
                TAG_BOOL => Value::Bool(false),
                TAG_BOOL_TRUE => Value::Bool(true),
                TAG_INT32 => Value::Int(i64::from(p32 as i32)),
                TAG_INT => Value::Int(p64 as i64),
                TAG_UINT => Value::UInt(p64),
                TAG_FLOAT => Value::Float(f64::from_bits(p64)),
                TAG_BIGINT => Value::BigInt(p32),
                TAG_STR => Value::Str(p32),
                TAG_BYTES => Value::Bytes(p32),
                TAG_LIST => Value::List(p32),
                TAG_TUPLE => Value::Tuple(p32),
                TAG_DICT => Value::Dict(p32),
                TAG_SET => Value::Set(p32),
                TAG_FROZENSET => Value::FrozenSet(p32),
                _ => Value::None,
            });
        }
    }

    pub(super) fn len(&self) -> usize {
        self.tags.len()
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.tags.capacity() + self.w32.capacity() * 4 + self.w64.capacity() * 8 + self.block_w32.capacity() * 8
    }
}
