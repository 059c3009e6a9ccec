//! Frame lists read before, found by their bytes without scanning them item by item.
//!
//! [`Parser::inline_frame_list`](super::Parser::inline_frame_list) finds a list it has read
//! before by scanning it to its end, opcode by opcode, and looking its bytes up. That scan is a
//! chain of dependent reads (each opcode's length says where the next one starts), about 1 ns a
//! byte, and in a file of inline frame dicts nearly every byte is in such a list. A list whose
//! cache key is its own bytes (no GET of a dict copied within it) is also entered here, under the
//! chained hash of each whole [`BLOCK`] of its start: a lookup hashes the input block by block,
//! compares the lists that end within the next block with the input byte for byte, and checks
//! that the input's list ends where theirs did ([`ends_here`], the scan's own test). Equal bytes
//! up to an equal end make the scan's result equal, so a match is exactly the list the scan would
//! have found; anything else is left to the scan.

use std::hash::Hasher;

use rustc_hash::{FxHashMap, FxHasher};

/// What reading a known list does (`Parser::inline_frame_list`).
#[derive(Clone, Copy, Debug)]
pub(super) struct KnownList {
    /// Its items in `Document::list_items`.
    pub(super) span: (u32, u32),
    /// The memo slots of its inline dicts in `LeafCache::list_slots`.
    pub(super) slots: (u32, u32),
    pub(super) last_shape: u32,
}

/// A memo GET at the start of `rest` (`BINGET` or `LONG_BINGET`): (slot, bytes taken).
#[inline(always)]
pub(super) fn get_at(rest: &[u8]) -> Option<(u64, usize)> {
    match *rest.first()? {
        b'h' => Some((u64::from(*rest.get(1)?), 2)),
        b'j' => {
            let b = rest.get(1..5)?;
            Some((u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])), 5))
        }
        _ => None,
    }
}

/// Bytes hashed per step of a lookup.
pub(super) const BLOCK: usize = 64;
/// The hash of no bytes: the root node's key.
const SEED: u64 = 0x243f_6a88_85a3_08d3;
/// No list.
const NONE: u32 = u32::MAX;
/// Bytes a node takes in the index (for the cache's size limit).
pub(super) const NODE_BYTES: usize = 32;

/// The memo bindings a cache of lists was filled under (counts of memo slots written over, say):
/// once they change, a GET the cache holds may name another value, so the cache is emptied.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Epoch<K>(K);

impl<K: PartialEq> Epoch<K> {
    /// Whether the bindings are no longer `now` (they are from here on).
    #[inline]
    pub(super) fn moved_to(&mut self, now: K) -> bool {
        let moved = self.0 != now;
        self.0 = now;
        moved
    }
}

/// Lists by their cache key, compared word by word ([`same_bytes`]) where a map of byte keys
/// would compare them a byte at a time in WebAssembly.
#[derive(Debug, Default)]
pub(super) struct ListsByKey {
    /// The first list with a key of this hash (`KeyedList::next` links the others).
    first: FxHashMap<u64, u32>,
    lists: Vec<KeyedList>,
}

#[derive(Debug)]
struct KeyedList {
    key: Box<[u8]>,
    known: KnownList,
    next: u32,
}

fn key_hash(key: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(key);
    h.finish()
}

impl ListsByKey {
    pub(super) fn clear(&mut self) {
        self.first.clear();
        self.lists.clear();
    }

    pub(super) fn get(&self, key: &[u8]) -> Option<KnownList> {
        let mut i = *self.first.get(&key_hash(key))?;
        while let Some(list) = self.lists.get(i as usize) {
            if same_bytes(&list.key, key) {
                return Some(list.known);
            }
            i = list.next;
        }
        None
    }

    /// Enters a list not entered yet.
    pub(super) fn insert(&mut self, key: &[u8], known: KnownList) {
        let Ok(id) = u32::try_from(self.lists.len()) else {
            return;
        };
        if id == NONE {
            return;
        }
        let next = self.first.insert(key_hash(key), id).unwrap_or(NONE);
        self.lists.push(KeyedList { key: key.into(), known, next });
    }
}

/// The lists entered, by the hashes of their leading blocks.
#[derive(Debug, Default)]
pub(super) struct RawLists {
    /// By the chained hash of a list's first `d` blocks: the lists of `d` to `d + 1` blocks with
    /// that start, and whether a longer one has it.
    nodes: FxHashMap<u64, Node>,
    lists: Vec<RawList>,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    /// The first of the lists that end in the next block (`RawList::next` links the others).
    first: u32,
    /// Whether a list goes on past the next block.
    deeper: bool,
}

#[derive(Debug)]
struct RawList {
    /// Its bytes from its `EMPTY_LIST` to its end.
    bytes: Box<[u8]>,
    known: KnownList,
    next: u32,
}

/// `h` followed by the 8-byte words of `block`, in four lanes so the multiplies overlap.
#[inline(always)]
fn chain(h: u64, block: &[u8]) -> u64 {
    const K: u64 = 0xf135_7aea_2e62_a9c5;
    let mut lanes = [h, h ^ 0x9e37_79b9_7f4a_7c15, h.rotate_left(17), !h];
    for (i, w) in block.chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let lane = &mut lanes[i & 3];
        *lane = (*lane ^ u64::from_le_bytes(b)).wrapping_mul(K).rotate_left(26);
    }
    let [a, b, c, d] = lanes;
    (a ^ b.rotate_left(16) ^ c.rotate_left(32) ^ d.rotate_left(48)).wrapping_mul(K)
}

/// Whether `a` and `b` (of one length) are equal, compared a word at a time: in WebAssembly
/// `[u8]`'s `==` is a loop over bytes.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let (wa, wb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tails = wa.remainder() == wb.remainder();
    let word = |w: &[u8]| {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        u64::from_ne_bytes(b)
    };
    a.len() == b.len() && tails && wa.zip(wb).all(|(x, y)| word(x) == word(y))
}

/// Whether a list's items stop at `p` (top level, after an item or a batch): the test
/// `Parser::scan_list` makes there. `false` also where the scan would give up (a GET cut short),
/// which leaves the list to it.
#[inline]
fn ends_here(rest: &[u8], p: usize) -> bool {
    match rest.get(p) {
        Some(b'(' | b'}') => false,
        // A memo GET: an item only if `APPEND` follows.
        Some(b'h' | b'j') => match rest.get(p..).and_then(get_at) {
            Some((_, used)) => rest.get(p + used) != Some(&b'a'),
            None => false,
        },
        _ => true,
    }
}

impl RawLists {
    pub(super) fn clear(&mut self) {
        self.nodes.clear();
        self.lists.clear();
    }

    /// The list at the start of `rest` if its bytes and end are those of a list entered; the
    /// bytes it takes.
    #[inline]
    pub(super) fn find(&self, rest: &[u8]) -> Option<(KnownList, usize)> {
        self.find_with_id(rest).map(|(_, k, n)| (k, n))
    }

    /// Lists entered so far (the next one's id).
    pub(super) fn len(&self) -> usize {
        self.lists.len()
    }

    /// List `id` if `rest` starts with it (its bytes, then its end): what [`RawLists::find`]
    /// gives when it finds that list, without hashing.
    #[inline]
    pub(super) fn is_at(&self, id: u32, rest: &[u8]) -> Option<(KnownList, usize)> {
        let list = self.lists.get(id as usize)?;
        let n = list.bytes.len();
        (rest.get(..n).is_some_and(|r| same_bytes(r, &list.bytes)) && ends_here(rest, n)).then_some((list.known, n))
    }

    /// [`RawLists::find`], with the list's id.
    #[inline]
    pub(super) fn find_with_id(&self, rest: &[u8]) -> Option<(u32, KnownList, usize)> {
        if self.lists.is_empty() {
            return None;
        }
        let mut h = SEED;
        let mut at = 0;
        loop {
            let node = self.nodes.get(&h)?;
            let mut i = node.first;
            while let Some(list) = self.lists.get(i as usize) {
                let n = list.bytes.len();
                let same = |from: usize, to: usize| match (rest.get(from..to), list.bytes.get(from..to)) {
                    (Some(a), Some(b)) => same_bytes(a, b),
                    _ => false,
                };
                // The block not hashed first: it tells most lists apart.
                if same(at, n) && same(0, at) && ends_here(rest, n) {
                    return Some((i, list.known, n));
                }
                i = list.next;
            }
            if !node.deeper {
                return None;
            }
            h = chain(h, rest.get(at..at + BLOCK)?);
            at += BLOCK;
        }
    }

    /// Enters the list whose bytes are `bytes`; the index's nodes it added.
    pub(super) fn insert(&mut self, bytes: &[u8], known: KnownList) -> usize {
        let Ok(id) = u32::try_from(self.lists.len()) else {
            return 0;
        };
        if id == NONE {
            return 0;
        }
        let before = self.nodes.len();
        let mut h = SEED;
        let whole = bytes.len() / BLOCK;
        for block in bytes.chunks_exact(BLOCK).take(whole) {
            self.nodes.entry(h).or_insert(Node { first: NONE, deeper: false }).deeper = true;
            h = chain(h, block);
        }
        let node = self.nodes.entry(h).or_insert(Node { first: NONE, deeper: false });
        let next = std::mem::replace(&mut node.first, id);
        self.lists.push(RawList { bytes: bytes.into(), known, next });
        self.nodes.len() - before
    }
}

#[cfg(test)]
mod tests {
    use super::{ends_here, same_bytes, KnownList, ListsByKey, RawLists, BLOCK};

    fn known(tag: u32) -> KnownList {
        KnownList { span: (tag, 1), slots: (0, 0), last_shape: 0 }
    }

    /// A list's bytes: `EMPTY_LIST MEMOIZE MARK` and `n` GETs, then `APPENDS`.
    fn list(n: usize, salt: u8) -> Vec<u8> {
        let mut b = vec![b']', 0x94, b'('];
        for i in 0..n {
            b.extend_from_slice(&[b'h', (i as u8).wrapping_add(salt)]);
        }
        b.push(b'e');
        b
    }

    #[test]
    fn bytes_are_the_same_only_when_every_byte_and_the_length_are() {
        let a: Vec<u8> = (1..=20).collect();
        for n in 0..=a.len() {
            let x = &a[..n];
            assert!(same_bytes(x, x), "{n} bytes");
            for i in 0..n {
                let mut y = x.to_vec();
                y[i] ^= 0x80;
                assert!(!same_bytes(x, &y), "{n} bytes, byte {i} changed");
            }
            // A zero more is another length.
            let mut z = x.to_vec();
            z.push(0);
            assert!(!same_bytes(x, &z) && !same_bytes(&z, x), "{n} bytes and a zero");
        }
    }

    #[test]
    fn a_list_is_found_only_with_its_own_bytes_and_end() {
        let mut raw = RawLists::default();
        let short = list(40, 0); // 84 bytes: ends in the second block
        let long = list(100, 0); // the same start, 204 bytes
        let other = list(40, 1);
        raw.insert(&short, known(1));
        raw.insert(&long, known(2));
        raw.insert(&other, known(3));
        let found = |input: &[u8]| raw.find(input).map(|(k, n)| (k.span.0, n));
        // Followed by something that is not an item: each is found, with its length.
        for (bytes, tag) in [(&short, 1), (&long, 2), (&other, 3)] {
            let mut input = bytes.clone();
            input.extend_from_slice(b"u.");
            assert_eq!(found(&input), Some((tag, bytes.len())));
            // Cut where it ends (the next chunk may hold more): the scan ends there too.
            assert_eq!(found(bytes), Some((tag, bytes.len())));
        }
        // Followed by another batch or item: the list goes on, so no entry is it.
        for more in [&b"(h\x01e"[..], b"h\x05a", b"}\x94"] {
            let mut input = short.clone();
            input.extend_from_slice(more);
            assert_eq!(found(&input), None, "{more:?}");
        }
        // A GET that is not an item (no APPEND after it) ends the list; one cut short does not.
        let mut input = short.clone();
        input.extend_from_slice(b"h\x05s");
        assert_eq!(found(&input), Some((1, short.len())));
        assert!(!ends_here(b"j\x01\x02", 0));
        // One byte changed anywhere (before, in and after the first block): not found.
        for at in [3, BLOCK - 1, BLOCK + 3, long.len() - 2] {
            let mut input = long.clone();
            input[at] ^= 0x40;
            input.push(b'u');
            assert_eq!(found(&input), None, "byte {at}");
        }
        let mut cleared = raw;
        cleared.clear();
        assert!(cleared.find(&short).is_none());
    }

    /// Many lists sharing starts of every length (as stacks share their innermost frames), each
    /// found; every list's bytes cut, changed anywhere or followed by another batch are found
    /// exactly when a list entered is the input's own: what a scan of all of them finds.
    #[test]
    fn lookups_find_what_a_scan_of_all_lists_finds() {
        let mut seed = 0x9e37_79b9_u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        // Lists of 5-byte GETs: a shared stem of 0-300 items, then 1-40 items of their own.
        let mut lists: Vec<Vec<u8>> = Vec::new();
        for _ in 0..300 {
            let mut b = vec![b']', 0x94, b'('];
            let (stem, own) = (next(300), 1 + next(40));
            for i in 0..stem + own {
                let slot = if i < stem { i as u32 + 1000 } else { next(5000) as u32 + 2000 };
                b.push(b'j');
                b.extend_from_slice(&slot.to_le_bytes());
            }
            b.push(b'e');
            lists.push(b);
        }
        lists.sort();
        lists.dedup();
        let mut raw = RawLists::default();
        for (i, l) in lists.iter().enumerate() {
            raw.insert(l, known(i as u32));
        }
        let scan =
            |input: &[u8]| lists.iter().position(|l| input.get(..l.len()) == Some(&l[..]) && ends_here(input, l.len()));
        let mut found = 0;
        for (i, l) in lists.iter().enumerate() {
            let mut input = l.clone();
            input.extend_from_slice(b"u.");
            assert_eq!(raw.find(&input).map(|(k, n)| (k.span.0 as usize, n)), Some((i, l.len())));
            // Cut, or one byte changed: whatever a scan of every list finds.
            let cut = next(input.len() as u64) as usize;
            let mut changed = input.clone();
            let at = next(changed.len() as u64) as usize;
            changed[at] ^= 1 << next(8);
            // Followed by another batch of items: the list goes on, so it is none of them.
            let mut longer = l.clone();
            longer.extend_from_slice(b"(j\x01\x00\x00\x00e");
            for probe in [&input[..cut], &changed[..], &longer[..]] {
                let want = scan(probe);
                found += usize::from(want.is_some());
                assert_eq!(raw.find(probe).map(|(k, _)| k.span.0 as usize), want);
            }
        }
        assert!(lists.len() > 250 && found > 0, "{} lists, {found} found after a change", lists.len());
    }

    #[test]
    fn lists_by_key_are_found_by_their_whole_key() {
        let mut by_key = ListsByKey::default();
        let (a, b) = (list(40, 0), list(41, 0));
        by_key.insert(&a, known(1));
        by_key.insert(&b, known(2));
        assert_eq!(by_key.get(&a).map(|k| k.span.0), Some(1));
        assert_eq!(by_key.get(&b).map(|k| k.span.0), Some(2));
        assert!(by_key.get(&a[..a.len() - 1]).is_none());
        let mut changed = a.clone();
        changed[9] ^= 1;
        assert!(by_key.get(&changed).is_none());
        by_key.clear();
        assert!(by_key.get(&a).is_none());
    }
}
