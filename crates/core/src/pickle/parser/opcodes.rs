//! The general decoder of one opcode ([`Parser::step`]), and the integer and text opcodes
//! (`LONG`, protocol 0's line-based opcodes).

use crate::error::Error;

use super::{forbidden_name, Parser, Step};
use crate::pickle::text::{raw_unicode_escape, unescape_py_string_literal};
use crate::pickle::value::Value;

impl Parser {
    /// Decodes one opcode at `data[pos..]`.
    #[allow(clippy::too_many_lines)] // one match arm per opcode
    pub(super) fn step(&mut self, data: &[u8], pos: usize) -> Result<Step, Error> {
        let offset = self.consumed; // absolute offset of this opcode
        let rest = data.get(pos..).unwrap_or(&[]);
        let Some(&op) = rest.first() else {
            return Ok(Step::More { what: "an opcode", declared: None });
        };
        let arg = rest.get(1..).unwrap_or(&[]);
        macro_rules! need {
            ($n:expr, $what:expr) => {{
                let n: u64 = $n;
                if (arg.len() as u64) < n {
                    return Ok(Step::More { what: $what, declared: Some(n) });
                }
                &arg[..n as usize]
            }};
        }
        macro_rules! need_payload {
            ($header:expr, $n:expr, $what:expr) => {{
                let header: u64 = $header;
                let n: u64 = $n;
                match header.checked_add(n) {
                    Some(total) if (arg.len() as u64) >= total => &arg[header as usize..total as usize],
                    _ => return Ok(Step::More { what: $what, declared: Some(n) }),
                }
            }};
        }
        macro_rules! le_u {
            ($n:expr, $what:expr) => {{
                let b = need!($n, $what);
                let mut x: u64 = 0;
                for (i, &byte) in b.iter().enumerate() {
                    x |= u64::from(byte) << (8 * i);
                }
                x
            }};
        }
        if let Some(name) = forbidden_name(op) {
            return Err(Error::ForbiddenOpcode { name, opcode: op, offset });
        }
        let step = match op {
            0x80 => {
                // PROTO
                let v = *need!(1, "the PROTO argument").first().unwrap_or(&0);
                if v > 5 {
                    return Err(Error::UnsupportedProtocol { version: v, offset });
                }
                self.doc.protocol = self.doc.protocol.max(v);
                Step::Done(2)
            }
            0x95 => {
                let _ = le_u!(8, "a FRAME header");
                Step::Done(9)
            }
            b'.' => {
                let v = self.pop(offset, "STOP")?;
                if !self.stack.is_empty() || !self.marks.is_empty() {
                    self.doc.oddities.push("values were left on the pickle stack at STOP".into());
                }
                self.doc.root = Some(v);
                Step::Stop(1)
            }
            b'(' => {
                self.marks.push(self.stack.len());
                Step::Done(1)
            }
            b'0' => {
                // POP: pops the top item, or a mark when the top of the stack is a mark.
                if self.marks.last().copied() == Some(self.stack.len()) {
                    self.marks.pop();
                } else {
                    self.pop(offset, "POP")?;
                }
                Step::Done(1)
            }
            b'1' => {
                let m = self.pop_mark(offset, "POP_MARK")?;
                self.stack.truncate(m);
                Step::Done(1)
            }
            b'2' => {
                let top = *self
                    .stack
                    .last()
                    .ok_or_else(|| Error::Malformed { offset, reason: "DUP on an empty stack".into() })?;
                self.note_escape(top);
                self.stack.push(top);
                Step::Done(1)
            }
            b'N' => {
                self.stack.push(Value::None);
                Step::Done(1)
            }
            0x88 => {
                self.stack.push(Value::Bool(true));
                Step::Done(1)
            }
            0x89 => {
                self.stack.push(Value::Bool(false));
                Step::Done(1)
            }
            b'J' => {
                let x = le_u!(4, "a BININT") as u32 as i32;
                self.stack.push(Value::Int(i64::from(x)));
                Step::Done(5)
            }
            b'K' => {
                let x = le_u!(1, "a BININT1");
                self.stack.push(Value::Int(x as i64));
                Step::Done(2)
            }
            b'M' => {
                let x = le_u!(2, "a BININT2");
                self.stack.push(Value::Int(x as i64));
                Step::Done(3)
            }
            0x8a => {
                let n = le_u!(1, "a LONG1 length");
                let b = need_payload!(1, n, "a LONG1 integer");
                let v = self.long_from_le(b);
                self.stack.push(v);
                Step::Done(2 + n as usize)
            }
            0x8b => {
                let n = le_u!(4, "a LONG4 length") as u32 as i32;
                if n < 0 {
                    return Err(Error::Malformed { offset, reason: "LONG4 with a negative length".into() });
                }
                let n = n as u64;
                let b = need_payload!(4, n, "a LONG4 integer");
                let v = self.long_from_le(b);
                self.stack.push(v);
                Step::Done(5 + n as usize)
            }
            b'G' => {
                let b = need!(8, "a BINFLOAT");
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                self.stack.push(Value::Float(f64::from_be_bytes(a)));
                Step::Done(9)
            }
            0x8c => {
                let n = le_u!(1, "a SHORT_BINUNICODE length");
                let b = need_payload!(1, n, "a string");
                let v = self.push_str(b);
                self.stack.push(v);
                Step::Done(2 + n as usize)
            }
            b'X' => {
                let n = le_u!(4, "a BINUNICODE length");
                let b = need_payload!(4, n, "a string");
                let v = self.push_str(b);
                self.stack.push(v);
                Step::Done(5 + n as usize)
            }
            0x8d => {
                let n = le_u!(8, "a BINUNICODE8 length");
                let b = need_payload!(8, n, "a string");
                let v = self.push_str(b);
                self.stack.push(v);
                Step::Done(9 + n as usize)
            }
            b'T' | b'U' | b'B' | b'C' | 0x8e | 0x96 => {
                // BINSTRING (4), SHORT_BINSTRING (1), BINBYTES (4), SHORT_BINBYTES (1), BINBYTES8, BYTEARRAY8
                let width: u64 = match op {
                    b'U' | b'C' => 1,
                    b'T' | b'B' => 4,
                    _ => 8,
                };
                let n = le_u!(width, "a length");
                let payload = need_payload!(width, n, "a byte string");
                let total = width + n;
                let v = if op == b'T' || op == b'U' {
                    // Python 2 str: decoded as ASCII/latin-1 text by Python 3's default.
                    let s: String = payload.iter().map(|&c| c as char).collect();
                    Value::Str(self.doc.intern_str(&s))
                } else {
                    self.new_bytes(payload)
                };
                self.stack.push(v);
                Step::Done(1 + total as usize)
            }
            b'I' | b'L' | b'F' | b'S' | b'V' | b'p' | b'g' => {
                // Text opcodes: argument runs to the next newline.
                let Some(nl) = arg.iter().position(|&c| c == b'\n') else {
                    return Ok(Step::More { what: "a text-protocol argument line", declared: None });
                };
                if nl > 1 << 20 && !matches!(op, b'S' | b'V') {
                    return Err(Error::Malformed { offset, reason: "a text opcode argument longer than 1 MiB".into() });
                }
                let line = &arg[..nl];
                self.text_op(op, line, offset)?;
                Step::Done(2 + nl)
            }
            b'h' => {
                let i = le_u!(1, "a BINGET index");
                let v = self.memo_get(i, offset)?;
                self.stack.push(v);
                Step::Done(2)
            }
            b'j' => {
                let i = le_u!(4, "a LONG_BINGET index");
                let v = self.memo_get(i, offset)?;
                self.stack.push(v);
                Step::Done(5)
            }
            b'q' => {
                let i = le_u!(1, "a BINPUT index");
                let top = *self
                    .stack
                    .last()
                    .ok_or_else(|| Error::Malformed { offset, reason: "BINPUT on an empty stack".into() })?;
                self.memo_put(i, top);
                Step::Done(2)
            }
            b'r' => {
                let i = le_u!(4, "a LONG_BINPUT index");
                let top = *self
                    .stack
                    .last()
                    .ok_or_else(|| Error::Malformed { offset, reason: "LONG_BINPUT on an empty stack".into() })?;
                self.memo_put(i, top);
                Step::Done(5)
            }
            0x94 => {
                let top = *self
                    .stack
                    .last()
                    .ok_or_else(|| Error::Malformed { offset, reason: "MEMOIZE on an empty stack".into() })?;
                let idx = self.memo_len();
                self.memo_put(idx, top);
                Step::Done(1)
            }
            b']' => {
                let v = self.new_list(Vec::new());
                self.stack.push(v);
                Step::Done(1)
            }
            b'}' => {
                let v = self.new_dict(offset)?;
                self.stack.push(v);
                Step::Done(1)
            }
            b')' => {
                let v = self.new_tuple(&[]);
                self.stack.push(v);
                Step::Done(1)
            }
            0x8f => {
                let v = self.new_set(Vec::new(), false);
                self.stack.push(v);
                Step::Done(1)
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                let floor = self.marks.last().copied().unwrap_or(0);
                if self.stack.len() < floor + n {
                    return Err(Error::Malformed {
                        offset,
                        reason: format!("TUPLE{n} with fewer than {n} items on the stack"),
                    });
                }
                let at = self.stack.len() - n;
                let items = self.take_items(at);
                let v = self.new_tuple(&items);
                self.give_back(items);
                self.stack.push(v);
                Step::Done(1)
            }
            b't' | b'l' | b'd' | 0x91 => {
                let m = self.pop_mark(offset, "TUPLE/LIST/DICT/FROZENSET")?;
                let items = self.take_items(m);
                let v = match op {
                    b't' => self.new_tuple(&items),
                    b'l' => self.new_list(items.clone()),
                    b'd' => {
                        let d = self.new_dict(offset)?;
                        self.fresh = None;
                        self.dict_set(d, &items, offset)?;
                        d
                    }
                    _ => self.new_set(items.clone(), true),
                };
                self.give_back(items);
                self.stack.push(v);
                Step::Done(1)
            }
            b'a' => {
                let item = self.pop(offset, "APPEND")?;
                let list = *self
                    .stack
                    .last()
                    .ok_or_else(|| Error::Malformed { offset, reason: "APPEND without a list".into() })?;
                Self::list_extend(&mut self.doc, list, &[item], offset)?;
                Step::Done(1)
            }
            b'e' => {
                // The items are appended straight from the stack.
                let m = self.pop_mark(offset, "APPENDS")?.min(self.stack.len());
                let list = *m
                    .checked_sub(1)
                    .and_then(|i| self.stack.get(i))
                    .ok_or_else(|| Error::Malformed { offset, reason: "APPENDS without a list".into() })?;
                Self::list_extend(&mut self.doc, list, self.stack.get(m..).unwrap_or(&[]), offset)?;
                self.stack.truncate(m);
                Step::Done(1)
            }
            b's' => {
                let v = self.pop(offset, "SETITEM")?;
                let k = self.pop(offset, "SETITEM")?;
                let d = *self
                    .stack
                    .last()
                    .ok_or_else(|| Error::Malformed { offset, reason: "SETITEM without a dict".into() })?;
                self.dict_set(d, &[k, v], offset)?;
                Step::Done(1)
            }
            b'u' => {
                let m = self.pop_mark(offset, "SETITEMS")?;
                let items = self.take_items(m);
                let d = *self
                    .stack
                    .last()
                    .ok_or_else(|| Error::Malformed { offset, reason: "SETITEMS without a dict".into() })?;
                let r = self.dict_set(d, &items, offset);
                self.give_back(items);
                r?;
                Step::Done(1)
            }
            0x90 => {
                let m = self.pop_mark(offset, "ADDITEMS")?;
                let items: Vec<Value> = self.stack.drain(m.min(self.stack.len())..).collect();
                match self.stack.last() {
                    Some(Value::Set(i)) => {
                        let i = *i as usize;
                        if let Some(s) = self.doc.sets.get_mut(i) {
                            s.extend_from_slice(&items);
                        }
                    }
                    _ => return Err(Error::Malformed { offset, reason: "ADDITEMS without a set".into() }),
                }
                Step::Done(1)
            }
            0x98 => Step::Done(1), // READONLY_BUFFER: a no-op on an in-band buffer
            other => return Err(Error::UnknownOpcode { opcode: other, offset }),
        };
        Ok(step)
    }

    fn long_from_le(&mut self, b: &[u8]) -> Value {
        if b.is_empty() {
            return Value::Int(0);
        }
        let negative = b.last().is_some_and(|&x| x & 0x80 != 0);
        // Strip redundant sign-extension bytes.
        let mut n = b.len();
        while n > 1 {
            let top = b[n - 1];
            let next_sign = b[n - 2] & 0x80 != 0;
            if (top == 0 && !next_sign && !negative) || (top == 0xff && next_sign && negative) {
                n -= 1;
            } else {
                break;
            }
        }
        let b = &b[..n];
        if b.len() <= 8 {
            let mut x: u64 = if negative { u64::MAX } else { 0 };
            for (i, &byte) in b.iter().enumerate() {
                x &= !(0xffu64 << (8 * i));
                x |= u64::from(byte) << (8 * i);
            }
            return Value::Int(x as i64);
        }
        if b.len() == 9 && !negative && b[8] == 0 {
            let mut x: u64 = 0;
            for (i, &byte) in b.iter().take(8).enumerate() {
                x |= u64::from(byte) << (8 * i);
            }
            return Value::UInt(x);
        }
        self.doc.bigints.push(b.into());
        Value::BigInt((self.doc.bigints.len() - 1) as u32)
    }

    fn text_op(&mut self, op: u8, line: &[u8], offset: u64) -> Result<(), Error> {
        let bad =
            |what: &str| Error::Malformed { offset, reason: format!("bad {what} argument in a text-protocol opcode") };
        match op {
            b'I' => {
                let s = std::str::from_utf8(line).map_err(|_| bad("INT"))?.trim();
                let v = match s {
                    "01" => Value::Bool(true),
                    "00" => Value::Bool(false),
                    _ => self.parse_decimal(s).ok_or_else(|| bad("INT"))?,
                };
                self.stack.push(v);
            }
            b'L' => {
                let s = std::str::from_utf8(line).map_err(|_| bad("LONG"))?.trim();
                let s = s.strip_suffix('L').unwrap_or(s);
                let v = self.parse_decimal(s).ok_or_else(|| bad("LONG"))?;
                self.stack.push(v);
            }
            b'F' => {
                let s = std::str::from_utf8(line).map_err(|_| bad("FLOAT"))?.trim();
                let f: f64 = match s {
                    "nan" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    _ => s.parse().map_err(|_| bad("FLOAT"))?,
                };
                self.stack.push(Value::Float(f));
            }
            b'S' => {
                let raw = unescape_py_string_literal(line).ok_or_else(|| bad("STRING"))?;
                let s: String = raw.iter().map(|&c| c as char).collect();
                let v = Value::Str(self.doc.intern_str(&s));
                self.stack.push(v);
            }
            b'V' => {
                let s = raw_unicode_escape(line).ok_or_else(|| bad("UNICODE"))?;
                let v = Value::Str(self.doc.intern_str(&s));
                self.stack.push(v);
            }
            b'p' => {
                let s = std::str::from_utf8(line).map_err(|_| bad("PUT"))?.trim();
                let i: u64 = s.parse().map_err(|_| bad("PUT"))?;
                let top = *self
                    .stack
                    .last()
                    .ok_or_else(|| Error::Malformed { offset, reason: "PUT on an empty stack".into() })?;
                self.memo_put(i, top);
            }
            b'g' => {
                let s = std::str::from_utf8(line).map_err(|_| bad("GET"))?.trim();
                let i: u64 = s.parse().map_err(|_| bad("GET"))?;
                let v = self.memo_get(i, offset)?;
                self.stack.push(v);
            }
            _ => return Err(Error::UnknownOpcode { opcode: op, offset }),
        }
        Ok(())
    }

    fn parse_decimal(&mut self, s: &str) -> Option<Value> {
        if let Ok(i) = s.parse::<i64>() {
            return Some(Value::Int(i));
        }
        if let Ok(u) = s.parse::<u64>() {
            return Some(Value::UInt(u));
        }
        // Arbitrary precision: build little-endian two's complement bytes.
        let (neg, digits) = match s.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        if digits.is_empty() || digits.len() > 10_000 || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let mut mag: Vec<u8> = vec![0];
        for d in digits.bytes() {
            let mut carry = u32::from(d - b'0');
            for byte in &mut mag {
                let x = u32::from(*byte) * 10 + carry;
                *byte = (x & 0xff) as u8;
                carry = x >> 8;
            }
            while carry > 0 {
                mag.push((carry & 0xff) as u8);
                carry >>= 8;
            }
        }
        mag.push(0); // room for the sign bit
        if neg {
            let mut carry = 1u16;
            for byte in &mut mag {
                let x = u16::from(!*byte) + carry;
                *byte = (x & 0xff) as u8;
                carry = x >> 8;
            }
        }
        Some(self.long_from_le(&mag))
    }
}
