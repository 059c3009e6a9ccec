//! Python literals inside a pickle: little-endian integers, `surrogatepass` UTF-8, protocol 0's
//! quoted strings and `raw-unicode-escape`.

/// A little-endian two's complement integer of 1 to 8 bytes (LONG1's payload; 0 for none).
/// Shifted in byte by byte: copying the bytes into a buffer was a call to `memcpy` for every
/// address and time of a trace (a fifth of the decoder's time on a 1M-entry file).
#[inline]
pub(super) fn small_long(b: &[u8]) -> i64 {
    let n = b.len().min(8);
    if n == 0 {
        return 0;
    }
    let mut v = 0u64;
    for (i, &byte) in b.iter().take(8).enumerate() {
        v |= u64::from(byte) << (8 * i);
    }
    // Sign-extended from the top byte given.
    let unused = 64 - 8 * n as u32;
    ((v << unused) as i64) >> unused
}

/// [`small_long`] of the first `n` (1 to 8) bytes of `b`, read as one word where `b` holds 8
/// bytes (a load, where the loop over bytes took 43 instructions a value); `None` when `b` holds
/// fewer than `n`.
#[inline(always)]
pub(super) fn small_long_at(b: &[u8], n: usize) -> Option<i64> {
    if let (Some(w), 1..=8) = (b.get(..8), n) {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        let unused = 64 - 8 * n as u32;
        return Some(((u64::from_le_bytes(word) << unused) as i64) >> unused);
    }
    Some(small_long(b.get(..n)?))
}

/// First code point of the range that stands for lone surrogates (U+D800..U+DFFF), which Python
/// pickles with the `surrogatepass` error handler but Rust strings cannot hold.
pub const SURROGATE_BASE: u32 = 0x10_F800;

/// Decodes UTF-8 as Python's `surrogatepass` does: encoded lone surrogates become
/// `SURROGATE_BASE + (cp - 0xD800)`; other invalid bytes become U+FFFD.
pub(super) fn decode_surrogatepass(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or(""));
                match bad {
                    [0xed, b1 @ 0xa0..=0xbf, b2 @ 0x80..=0xbf, ..] => {
                        let cp = 0xd000 | (u32::from(b1 & 0x3f) << 6) | u32::from(b2 & 0x3f);
                        out.push(char::from_u32(SURROGATE_BASE + (cp - 0xd800)).unwrap_or('\u{fffd}'));
                        rest = &bad[3..];
                    }
                    _ => {
                        out.push('\u{fffd}');
                        let skip = e.error_len().unwrap_or(bad.len()).max(1);
                        rest = bad.get(skip..).unwrap_or(&[]);
                    }
                }
            }
        }
    }
    out
}

/// Decodes a Python 2 `repr`-style quoted string literal (protocol 0 `STRING`).
pub(super) fn unescape_py_string_literal(line: &[u8]) -> Option<Vec<u8>> {
    let q = *line.first()?;
    if (q != b'\'' && q != b'"') || line.len() < 2 || *line.last()? != q {
        return None;
    }
    let body = &line[1..line.len() - 1];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let e = *body.get(i + 1)?;
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'\\' => out.push(b'\\'),
            b'\'' => out.push(b'\''),
            b'"' => out.push(b'"'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'x' => {
                let h = std::str::from_utf8(body.get(i..i + 2)?).ok()?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 2;
            }
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                let mut k = 0;
                while k < 2 {
                    match body.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                            k += 1;
                        }
                        _ => break,
                    }
                }
                out.push((v & 0xff) as u8);
            }
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

/// Decodes Python's `raw-unicode-escape` (protocol 0 `UNICODE`): only `\uXXXX` and `\UXXXXXXXX` escape.
pub(super) fn raw_unicode_escape(line: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        let c = line[i];
        if c == b'\\' && matches!(line.get(i + 1), Some(b'u') | Some(b'U')) {
            let w = if line[i + 1] == b'u' { 4 } else { 8 };
            let h = std::str::from_utf8(line.get(i + 2..i + 2 + w)?).ok()?;
            let cp = u32::from_str_radix(h, 16).ok()?;
            out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
            i += 2 + w;
        } else {
            out.push(c as char);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{small_long, small_long_at};

    /// Every width from 1 to 8 bytes, values at and around the edges of its range.
    #[test]
    fn small_long_reads_twos_complement_of_each_width() {
        for n in 1..=8u32 {
            let max = if n == 8 { i64::MAX } else { (1i64 << (8 * n - 1)) - 1 };
            let min = -max - 1;
            for v in [0, 1, -1, 127, -128, 255, -256, max, min, max / 3, min / 3] {
                if v < min || v > max {
                    continue;
                }
                let bytes = &v.to_le_bytes()[..n as usize];
                assert_eq!(small_long(bytes), v, "{v} in {n} bytes");
            }
        }
        assert_eq!(small_long(&[]), 0);
        // Bytes past the eighth are not read.
        assert_eq!(small_long(&[1, 0, 0, 0, 0, 0, 0, 0, 0xff]), 1);
    }

    /// The word read gives what the bytes read one by one give, whatever bytes follow the value,
    /// and nothing where the value is cut short.
    #[test]
    fn small_long_at_reads_a_word_as_the_bytes_read_one_by_one() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let bytes = seed.to_le_bytes();
            let more = (seed >> 60) as usize;
            for n in 1..=8 {
                for extra in [0, 1, more, 8] {
                    let mut b = bytes[..n].to_vec();
                    b.extend(std::iter::repeat_n(0xa5, extra));
                    assert_eq!(small_long_at(&b, n), Some(small_long(&bytes[..n])), "{n} bytes and {extra}");
                }
                assert_eq!(small_long_at(&bytes[..n - 1], n), None, "{n} bytes cut short");
            }
        }
    }
}
