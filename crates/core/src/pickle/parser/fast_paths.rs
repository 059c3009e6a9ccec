//! Fast paths of the [`Parser`]: a flat dict decoded in one go, and the common opcodes decoded in
//! place. Each has the effects of the general path and returns `None` to hand over to it.

use crate::error::Error;

use super::entry_template::{InlineMemo, KeyCode};
use super::{Parser, FLAT_DICT_MAX_PAIRS};
use crate::pickle::text::small_long_at;
use crate::pickle::value::Value;

impl Parser {
    /// Decodes a whole flat dict in one go when the bytes are exactly
    /// `EMPTY_DICT [MEMOIZE|BINPUT|LONG_BINPUT] MARK (key value)* SETITEMS` with simple values
    /// (memo gets, ints, floats, None, booleans): the shape of every trace entry. Anything else,
    /// or input that ends early, returns `None` with nothing changed, and the generic path runs.
    #[inline(always)]
    #[allow(clippy::too_many_lines)] // one fast path, inlined into the run loop
    fn flat_dict(&mut self, rest: &[u8], offset: u64) -> Result<Option<usize>, Error> {
        let mut p = 1;
        let memo_idx = match rest.get(p) {
            Some(0x94) => {
                p += 1;
                Some(self.memo_len())
            }
            Some(b'q') => {
                let Some(&i) = rest.get(p + 1) else {
                    return Ok(None);
                };
                p += 2;
                Some(u64::from(i))
            }
            Some(b'r') => {
                let Some(b) = rest.get(p + 1..p + 5) else {
                    return Ok(None);
                };
                p += 5;
                Some(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            }
            _ => None,
        };
        if rest.get(p) != Some(&b'(') {
            return Ok(None);
        }
        p += 1;
        let mut vals = [Value::None; 2 * FLAT_DICT_MAX_PAIRS];
        let mut key_codes = [None; FLAT_DICT_MAX_PAIRS];
        let mut inline_memo = InlineMemo::new();
        let mut n = 0;
        loop {
            let Some(&op) = rest.get(p) else {
                return Ok(None);
            };
            if op == b'u' {
                p += 1;
                break;
            }
            if n == vals.len() {
                return Ok(None);
            }
            let (v, used) = match op {
                b'h' | b'j' => {
                    let (idx, used) = if op == b'h' {
                        let Some(&i) = rest.get(p + 1) else {
                            return Ok(None);
                        };
                        (u64::from(i), 2)
                    } else {
                        let Some(b) = rest.get(p + 1..p + 5) else {
                            return Ok(None);
                        };
                        (u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])), 5)
                    };
                    if Some(idx) == memo_idx {
                        return Ok(None);
                    }
                    let Some(v) = self.memo_peek(idx) else {
                        return Ok(None);
                    };
                    if n % 2 == 0 {
                        key_codes[n / 2] = KeyCode::of(op, idx);
                    }
                    (v, used)
                }
                b'K' => {
                    let Some(&i) = rest.get(p + 1) else {
                        return Ok(None);
                    };
                    (Value::Int(i64::from(i)), 2)
                }
                b'M' => {
                    let Some(b) = rest.get(p + 1..p + 3) else {
                        return Ok(None);
                    };
                    (Value::Int(i64::from(u16::from_le_bytes([b[0], b[1]]))), 3)
                }
                b'J' => {
                    let Some(b) = rest.get(p + 1..p + 5) else {
                        return Ok(None);
                    };
                    (Value::Int(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))), 5)
                }
                0x8a => {
                    let Some(&len) = rest.get(p + 1) else {
                        return Ok(None);
                    };
                    if len == 0 || len > 8 {
                        return Ok(None);
                    }
                    let Some(v) = rest.get(p + 2..).and_then(|b| small_long_at(b, len as usize)) else {
                        return Ok(None);
                    };
                    (Value::Int(v), 2 + len as usize)
                }
                b'G' => {
                    let Some(b) = rest.get(p + 1..p + 9) else {
                        return Ok(None);
                    };
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    (Value::Float(f64::from_be_bytes(a)), 9)
                }
                b'N' => (Value::None, 1),
                0x88 => (Value::Bool(true), 1),
                0x89 => (Value::Bool(false), 1),
                // A string value written inline; its memo write waits for the dict's own.
                0x8c | b'X' if n % 2 == 1 && self.memo_sparse.is_empty() => {
                    let Some((id, used)) = self.inline_str(&rest[p..], &mut inline_memo) else {
                        return Ok(None);
                    };
                    (Value::Str(id), used)
                }
                _ => return Ok(None),
            };
            vals[n] = v;
            n += 1;
            p += used;
        }
        if n % 2 != 0 {
            return Ok(None);
        }
        // A trace entry becomes a record row at once; the effects on the stack and memo are those
        // of the generic path.
        if let Some((d, shape)) = self.flat_record(&vals[..n]) {
            self.remember_template(shape, &key_codes[..n / 2], p, rest.len());
            self.fresh = None;
            self.stack.push(d);
            if let Some(idx) = memo_idx {
                self.memo_put(idx, d);
            }
            self.put_inline_memo(&inline_memo);
            return Ok(Some(p));
        }
        // Commit: the same effects as the generic path, in the same order.
        let d = self.new_dict(offset)?;
        self.stack.push(d);
        if let Some(idx) = memo_idx {
            self.memo_put(idx, d);
        }
        self.put_inline_memo(&inline_memo);
        for v in &vals[..n] {
            self.note_escape(*v);
        }
        self.dict_set(d, &vals[..n], offset)?;
        Ok(Some(p))
    }

    /// Decodes one common opcode in place; `None` when `step` must handle it.
    #[inline(always)]
    pub(super) fn fast_op(&mut self, data: &[u8], pos: usize, base: u64) -> Result<Option<usize>, Error> {
        let rest = &data[pos..];
        let Some(&op) = rest.first() else {
            return Ok(None);
        };
        let n = match op {
            b'h' => {
                let Some(&i) = rest.get(1) else {
                    return Ok(None);
                };
                let v = self.memo_get(u64::from(i), base + pos as u64)?;
                self.stack.push(v);
                2
            }
            b'j' => {
                let Some(b) = rest.get(1..5) else {
                    return Ok(None);
                };
                let i = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                let v = self.memo_get(u64::from(i), base + pos as u64)?;
                self.stack.push(v);
                5
            }
            b'K' => {
                let Some(&i) = rest.get(1) else {
                    return Ok(None);
                };
                self.stack.push(Value::Int(i64::from(i)));
                2
            }
            b'M' => {
                let Some(b) = rest.get(1..3) else {
                    return Ok(None);
                };
                self.stack.push(Value::Int(i64::from(u16::from_le_bytes([b[0], b[1]]))));
                3
            }
            b'J' => {
                let Some(b) = rest.get(1..5) else {
                    return Ok(None);
                };
                self.stack.push(Value::Int(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))));
                5
            }
            0x8a => {
                let Some(&len) = rest.get(1) else {
                    return Ok(None);
                };
                if len == 0 || len > 8 {
                    return Ok(None);
                }
                let Some(v) = rest.get(2..).and_then(|b| small_long_at(b, len as usize)) else {
                    return Ok(None);
                };
                self.stack.push(Value::Int(v));
                2 + len as usize
            }
            b'(' => {
                self.marks.push(self.stack.len());
                1
            }
            0x94 => {
                let Some(&top) = self.stack.last() else {
                    return Ok(None);
                };
                let idx = self.memo_len();
                self.memo_put(idx, top);
                1
            }
            b'}' => {
                if let Some(n) = self.template_entries(rest) {
                    return Ok(Some(n));
                }
                if let Some(n) = self.flat_dict(rest, base + pos as u64)? {
                    return Ok(Some(n));
                }
                let v = self.new_dict(base + pos as u64)?;
                self.stack.push(v);
                1
            }
            b']' => {
                if rest.get(2) == Some(&b'}') || rest.get(3) == Some(&b'}') {
                    if let Some(n) = self.inline_frame_list(rest) {
                        return Ok(Some(n));
                    }
                }
                let v = self.new_list(Vec::new());
                self.stack.push(v);
                1
            }
            _ => return Ok(None),
        };
        Ok(Some(n))
    }
}
