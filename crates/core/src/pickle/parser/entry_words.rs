//! Trace-entry bytes read a word at a time, for the entry template (`entry_template`): a key's
//! memo GET compared as the masked low bytes of one 8-byte word, and a value's GET or small int
//! taken out of the word it starts (a LONG1 of 7 or 8 bytes from the word after its header).

use crate::pickle::text::small_long_at;

/// A key's GET as the low bytes of the word read where it should be.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeyWord {
    pub(super) bytes: u64,
    pub(super) mask: u64,
    pub(super) len: usize,
}

/// The 8 bytes from `p` as a little-endian word; `None` when fewer follow (an entry within 8
/// bytes of the end of the input at hand is left to the general path).
#[inline(always)]
pub(super) fn word_at(rest: &[u8], p: usize) -> Option<u64> {
    Some(u64::from_le_bytes(*rest.get(p..)?.first_chunk::<8>()?))
}

/// A memo GET that starts word `w`: (slot, bytes taken).
#[inline(always)]
pub(super) fn get_of_word(w: u64) -> Option<(u64, usize)> {
    match w as u8 {
        b'h' => Some(((w >> 8) & 0xff, 2)),
        b'j' => Some(((w >> 8) & 0xffff_ffff, 5)),
        _ => None,
    }
}

/// A `BININT1`, `BININT2`, `BININT` or short `LONG1` that starts word `w`, read at `p` of
/// `rest`: (value, bytes taken).
#[inline(always)]
pub(super) fn int_of_word(w: u64, rest: &[u8], p: usize) -> Option<(i64, usize)> {
    match w as u8 {
        b'K' => Some((((w >> 8) & 0xff) as i64, 2)),
        b'M' => Some((((w >> 8) & 0xffff) as i64, 3)),
        b'J' => Some((i64::from((w >> 8) as u32 as i32), 5)),
        0x8a => {
            let n = ((w >> 8) & 0xff) as usize;
            match n {
                // Its bytes are in the word: shifted to the top, then back with the sign.
                1..=6 => {
                    let unused = 64 - 8 * n as u32;
                    Some(((((w >> 16) << unused) as i64) >> unused, 2 + n))
                }
                7 | 8 => Some((small_long_at(rest.get(p + 2..)?, n)?, 2 + n)),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{int_of_word, word_at};
    use crate::pickle::{parse, Value};

    /// An int read from a word is the one the general path reads, for every encoding and width,
    /// whatever bytes follow it; with fewer than 8 bytes there is no word to read.
    #[test]
    fn ints_read_from_a_word_are_those_the_general_path_reads() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..500 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let x = seed.to_le_bytes();
            let mut encodings = vec![vec![b'K', x[0]], vec![b'M', x[0], x[1]], vec![b'J', x[0], x[1], x[2], x[3]]];
            for n in 1..=8u8 {
                let mut b = vec![0x8a, n];
                b.extend_from_slice(&x[..usize::from(n)]);
                encodings.push(b);
            }
            for enc in encodings {
                let mut whole = vec![0x80, 4];
                whole.extend_from_slice(&enc);
                whole.push(b'.');
                let want = parse(&whole).expect("parses").root();
                for extra in [0, 1, 5, 8, 12] {
                    let mut b = enc.clone();
                    b.extend(std::iter::repeat_n(0xa5, extra));
                    let got = word_at(&b, 0).and_then(|w| int_of_word(w, &b, 0));
                    if b.len() < 8 {
                        assert_eq!(got, None, "{enc:?} and {extra} bytes");
                    } else {
                        assert_eq!(got.map(|(v, used)| (Value::Int(v), used)), Some((want, enc.len())), "{enc:?}");
                    }
                }
            }
        }
    }
}
