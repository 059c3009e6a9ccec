//! Frame lists the entry template read inline, found again by their bytes.
//!
//! A real `stacks="all"` capture writes each entry's frame list either as a memo GET of a list
//! read before or inline, as a copy: the same GETs of frame dicts as a list read before. A copy
//! is found by its bytes ([`RawLists`]) and shares that list's items. A training loop writes the
//! same entries in the same order every step, so the list an entry copies is guessed from the
//! list of the entry before it (however that one was written): the last [`FOLLOWERS`] lists
//! read inline after it, the latest first, are tried by their bytes alone
//! ([`RawLists::is_at`]) before the index is searched.

use super::raw_lists::{Epoch, KnownList, RawLists};

/// Bytes of frame lists [`TemplateLists`] may hold (it is cleared when full).
const LIST_BYTES_MAX: usize = 16 << 20;

/// No list.
pub(super) const NO_LIST: u32 = u32::MAX;
/// Lists kept per list as those that followed it: a step that takes other branches (a copied
/// list in one step, a shared one in the next) still finds its next list among them.
pub(super) const FOLLOWERS: usize = 4;

/// Frame lists the template read inline, by their bytes from `EMPTY_LIST` to their end, with
/// the span of `Document::list_items` that holds their items. Equal bytes are equal GETs of
/// slots below the entry's own, so while no memo slot was written over (`Parser::memo_rebinds`)
/// they are the same items.
#[derive(Debug)]
pub(super) struct TemplateLists {
    raw: RawLists,
    /// Per list: the lists read inline after it, the latest first ([`NO_LIST`]: none yet).
    pub(super) next: Vec<[u32; FOLLOWERS]>,
    /// The list read inline last ([`NO_LIST`]: none).
    last: u32,
    /// The document's list an entry fetched from the memo after it ([`NO_LIST`]: none).
    last_fetched: u32,
    /// Per document list read inline: its list here ([`NO_LIST`]: none). Four bytes per list
    /// of the document up to the last one read inline (at most a few bytes per entry).
    by_list: Vec<u32>,
    /// Bytes held (lists and index nodes).
    pub(super) bytes: usize,
    /// `Parser::memo_rebinds` the lists held were read under.
    rebinds: Epoch<u64>,
}

impl Default for TemplateLists {
    fn default() -> Self {
        TemplateLists {
            raw: RawLists::default(),
            next: Vec::new(),
            last: NO_LIST,
            last_fetched: NO_LIST,
            by_list: Vec::new(),
            bytes: 0,
            rebinds: Epoch::default(),
        }
    }
}

impl TemplateLists {
    /// Clears the lists read under other memo bindings than `rebinds`.
    fn check(&mut self, rebinds: u64) {
        if self.rebinds.moved_to(rebinds) {
            self.clear();
        }
    }

    fn clear(&mut self) {
        self.raw.clear();
        self.next.clear();
        self.by_list.clear();
        self.last = NO_LIST;
        self.last_fetched = NO_LIST;
        self.bytes = 0;
    }

    /// The list whose followers guess the next one: that of the entry read last, when it
    /// fetched a list known here, else the list read inline last.
    #[inline]
    fn previous(&self) -> u32 {
        match self.by_list.get(self.last_fetched as usize) {
            Some(&id) if id != NO_LIST => id,
            _ => self.last,
        }
    }

    /// Notes that list `id` was read inline after list `previous` ([`TemplateLists::previous`]).
    fn follow(&mut self, previous: u32, id: u32) {
        if let Some(n) = self.next.get_mut(previous as usize) {
            // Moved (or put) to the front, the others kept in order.
            let at = n.iter().position(|&f| f == id).unwrap_or(FOLLOWERS - 1);
            n.copy_within(..at, 1);
            n[0] = id;
        }
        self.last = id;
        self.last_fetched = NO_LIST;
    }

    /// Notes that an entry fetched the document's list `list` from the memo.
    #[inline]
    pub(super) fn fetched(&mut self, list: u32) {
        self.last_fetched = list;
    }

    /// Notes that the document's list `list` was read inline as list `id` (of [`find`] or
    /// [`insert`]), for the entries that fetch it later.
    ///
    /// [`find`]: TemplateLists::find
    /// [`insert`]: TemplateLists::insert
    pub(super) fn link(&mut self, list: u32, id: u32) {
        let at = list as usize;
        if at >= self.by_list.len() {
            self.by_list.resize(at + 1, NO_LIST);
        }
        if let Some(slot) = self.by_list.get_mut(at) {
            *slot = id;
        }
    }

    /// The known list at the start of `rest`: the span of its items, its length in bytes and
    /// its id.
    #[inline]
    pub(super) fn find(&mut self, rest: &[u8], rebinds: u64) -> Option<((u32, u32), usize, u32)> {
        self.check(rebinds);
        let previous = self.previous();
        let guesses = self.next.get(previous as usize).copied().unwrap_or([NO_LIST; FOLLOWERS]);
        for guess in guesses.into_iter().take_while(|&g| g != NO_LIST) {
            if let Some((k, n)) = self.raw.is_at(guess, rest) {
                self.follow(previous, guess);
                return Some((k.span, n, guess));
            }
        }
        let (id, k, n) = self.raw.find_with_id(rest)?;
        self.follow(previous, id);
        Some((k.span, n, id))
    }

    /// Enters a list just read: its bytes and the span of its items; its id, if entered.
    pub(super) fn insert(&mut self, bytes: &[u8], span: (u32, u32), rebinds: u64) -> Option<u32> {
        self.check(rebinds);
        if self.bytes + bytes.len() > LIST_BYTES_MAX {
            self.clear();
        }
        let known = KnownList { span, slots: (0, 0), last_shape: 0 };
        let id = self.raw.len();
        let nodes = self.raw.insert(bytes, known);
        self.bytes += bytes.len() + nodes * super::raw_lists::NODE_BYTES;
        if self.raw.len() != id + 1 {
            return None;
        }
        self.next.push([NO_LIST; FOLLOWERS]);
        let id = id as u32;
        self.follow(self.previous(), id);
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::{TemplateLists, FOLLOWERS, NO_LIST};

    /// A frame list of `n` GETs (`salt` and `step` make them), then a byte that ends it.
    fn list(n: u8, salt: u8, step: u8) -> Vec<u8> {
        let mut b = vec![b']', 0x94, b'('];
        for i in 0..n {
            b.extend_from_slice(&[b'h', i.wrapping_mul(step).wrapping_add(salt)]);
        }
        b.extend_from_slice(b"eu");
        b
    }

    #[test]
    fn the_list_read_next_last_time_is_tried_first_and_only_its_own_bytes_match() {
        let (x, y) = (list(60, 0, 1), list(60, 1, 1));
        let mut t = TemplateLists::default();
        t.insert(&x[..x.len() - 1], (10, 60), 0);
        t.insert(&y[..y.len() - 1], (70, 60), 0);
        // X, then Y as guessed, then X again, as a training loop repeats them.
        for _ in 0..3 {
            assert_eq!(t.find(&x, 0), Some(((10, 60), x.len() - 1, 0)));
            assert_eq!(t.find(&y, 0), Some(((70, 60), y.len() - 1, 1)));
        }
        // After X, Y is guessed: a list one byte off Y is neither.
        assert!(t.find(&x, 0).is_some());
        let mut z = y.clone();
        z[40] ^= 1;
        assert_eq!(t.find(&z, 0), None);
        // Y followed by another item is not Y.
        let mut longer = y[..y.len() - 1].to_vec();
        longer.extend_from_slice(b"h\x05au");
        assert!(t.find(&x, 0).is_some());
        assert_eq!(t.find(&longer, 0), None);
        // Other memo bindings: nothing is known.
        assert_eq!(t.find(&x, 1), None);
    }

    #[test]
    fn the_lists_that_followed_a_list_are_kept_the_latest_first() {
        let lists: Vec<Vec<u8>> = (0..6).map(|salt| list(50, salt, 3)).collect();
        let mut t = TemplateLists::default();
        for (i, l) in lists.iter().enumerate() {
            t.insert(&l[..l.len() - 1], (100 * i as u32, 50), 0);
        }
        let find = |t: &mut TemplateLists, i: usize| {
            let l = &lists[i];
            assert_eq!(t.find(l, 0), Some(((100 * i as u32, 50), l.len() - 1, i as u32)), "list {i}");
        };
        // A step reads list 0, then one of several (a branch taken, a list copied or shared).
        for i in [0, 2, 0, 3, 0, 4, 0, 2, 0, 5] {
            find(&mut t, i);
        }
        assert_eq!(FOLLOWERS, 4);
        // 1 (read after 0 when they were entered) is the oldest and went; 2 moved to the front.
        assert_eq!(t.next[0], [5, 2, 4, 3]);
        // Every follower is still found by its own bytes only.
        for i in [0, 3, 0, 4, 0, 1] {
            find(&mut t, i);
        }
        let mut off = lists[3].clone();
        off[20] ^= 1;
        assert_eq!(t.find(&lists[0], 0).map(|(s, _, _)| s), Some((0, 50)));
        assert_eq!(t.find(&off, 0), None);
        assert!(t.next.iter().all(|n| n.iter().skip_while(|&&f| f != NO_LIST).all(|&f| f == NO_LIST)));
    }

    #[test]
    fn a_list_fetched_from_the_memo_guesses_the_copy_after_it() {
        // Three lists read inline as the document's lists 10, 12 and 11 (ids 0, 1, 2 here, each
        // noted as following the one before); then entries fetch one list and copy another.
        let lists: Vec<Vec<u8>> = (0..3).map(|salt| list(40, salt, 5)).collect();
        let mut t = TemplateLists::default();
        for (doc, i) in [(10, 0), (12, 2), (11, 1)] {
            let l: &Vec<u8> = &lists[i];
            let id = t.insert(&l[..l.len() - 1], (100 * i as u32, 40), 0).expect("entered");
            t.link(doc, id);
        }
        assert_eq!((t.next[0][0], t.next[1][0], t.next[2][0]), (1, 2, NO_LIST));
        let find = |t: &mut TemplateLists, i: usize| t.find(&lists[i], 0).map(|(_, _, id)| id);
        // After an entry that fetched list 10 (id 0), the copy of list 11 (id 2) follows id 0,
        // not the list read inline last (id 2).
        t.fetched(10);
        assert_eq!(find(&mut t, 1), Some(2));
        assert_eq!(t.next[0], [2, 1, NO_LIST, NO_LIST]);
        assert_eq!(t.next[2], [NO_LIST; FOLLOWERS]);
        t.fetched(12);
        assert_eq!(find(&mut t, 0), Some(0));
        assert_eq!(t.next[1], [0, 2, NO_LIST, NO_LIST]);
        // A list fetched but never read inline leaves the guess to the list read inline last
        // (id 0), whose second follower is found and moved to the front.
        t.fetched(99);
        assert_eq!(find(&mut t, 2), Some(1));
        assert_eq!(t.next[0], [1, 2, NO_LIST, NO_LIST]);
        // Cleared with the lists under other memo bindings: no link is left to guess from.
        assert!(t.find(&lists[0], 1).is_none());
        t.fetched(10);
        assert_eq!(t.previous(), NO_LIST);
    }
}
