//! A column of trace records whose rows are often all the same value.
//!
//! A trace's `stream`, `compile_context` and `user_metadata`, and the shape of its entries, hold
//! one value on every row of every snapshot we have seen. Such a column is kept as that value and
//! a count until a row differs, and only then as a vector: a million entries write 20 MB fewer
//! bytes, every one of them fresh memory (which costs more to write first than to write again,
//! most of all in WebAssembly).

/// One value per row; see the module docs.
#[derive(Debug)]
pub(crate) struct SameColumn<T> {
    /// The rows once they differ (empty while they are the same).
    rows: Vec<T>,
    /// The value of every row while they are the same (`None` before the first row and after
    /// they came to differ).
    same: Option<T>,
    len: usize,
    /// Rows room was asked for while the rows were the same: made if they come to differ.
    room: usize,
}

impl<T> Default for SameColumn<T> {
    fn default() -> Self {
        SameColumn { rows: Vec::new(), same: None, len: 0, room: 0 }
    }
}

impl<T: Copy + PartialEq> SameColumn<T> {
    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Makes room for `rows` more rows (only once they differ: until then a row takes none).
    pub(crate) fn reserve(&mut self, rows: usize) {
        if self.same.is_none() && self.len > 0 {
            self.rows.reserve(rows);
        } else {
            self.room = self.room.max(self.len.saturating_add(rows));
        }
    }

    /// Appends a row.
    #[inline(always)]
    pub(crate) fn push(&mut self, v: T) {
        match self.same {
            Some(s) if s == v => {}
            None if self.len == 0 => self.same = Some(v),
            Some(_) => {
                self.spread();
                self.rows.push(v);
            }
            None => self.rows.push(v),
        }
        self.len += 1;
    }

    /// Row `r`.
    #[inline]
    pub(crate) fn get(&self, r: usize) -> Option<T> {
        if r >= self.len {
            return None;
        }
        self.same.or_else(|| self.rows.get(r).copied())
    }

    /// Sets row `r` (nothing if there is none).
    pub(crate) fn set(&mut self, r: usize, v: T) {
        if r >= self.len || self.same == Some(v) {
            return;
        }
        self.spread();
        if let Some(x) = self.rows.get_mut(r) {
            *x = v;
        }
    }

    /// Rows `range`, if there are that many.
    pub(crate) fn slice(&self, range: std::ops::Range<usize>) -> Option<Col<'_, T>> {
        if range.start > range.end || range.end > self.len {
            return None;
        }
        Some(match self.same {
            Some(s) => Col::Same(s, range.end - range.start),
            None => Col::Rows(self.rows.get(range)?),
        })
    }

    /// Bytes of the vector's room.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.rows.capacity() * std::mem::size_of::<T>()
    }

    /// Bytes as if every row were held (the model builder's expansion budget is a share of the
    /// document's bytes, and stays what it was).
    pub(crate) fn counted_bytes(&self) -> usize {
        self.heap_bytes().max(self.len * std::mem::size_of::<T>())
    }

    /// Writes out every row as the vector (the rows came to differ).
    fn spread(&mut self) {
        if let Some(s) = self.same.take() {
            self.rows.reserve(self.room.max(self.len + 1));
            self.rows.extend(std::iter::repeat_n(s, self.len));
        }
    }
}

/// Rows of a [`SameColumn`].
#[derive(Clone, Copy, Debug)]
pub enum Col<'a, T> {
    /// Each row.
    Rows(&'a [T]),
    /// This many rows of one value.
    Same(T, usize),
}

impl<T: Copy> Col<'_, T> {
    /// Row `k`.
    #[inline]
    pub fn get(&self, k: usize) -> Option<T> {
        match self {
            Col::Rows(rows) => rows.get(k).copied(),
            Col::Same(v, n) => (k < *n).then_some(*v),
        }
    }

    /// Whether every row satisfies `f`.
    pub fn all(&self, f: impl Fn(T) -> bool) -> bool {
        match self {
            Col::Rows(rows) => rows.iter().all(|&x| f(x)),
            Col::Same(v, n) => *n == 0 || f(*v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(c: &SameColumn<u32>) -> Vec<Option<u32>> {
        (0..=c.len()).map(|r| c.get(r)).collect()
    }

    #[test]
    fn the_same_rows_take_no_room_and_read_back() {
        let mut c = SameColumn::default();
        c.reserve(1000);
        for _ in 0..5 {
            c.push(7u32);
        }
        assert_eq!(c.heap_bytes(), 0);
        assert_eq!(rows(&c), vec![Some(7), Some(7), Some(7), Some(7), Some(7), None]);
        assert!(matches!(c.slice(1..4), Some(Col::Same(7, 3))));
        assert!(c.slice(2..6).is_none());
    }

    #[test]
    fn a_row_that_differs_spreads_the_column_with_the_room_asked_for() {
        let mut c = SameColumn::default();
        c.reserve(1000);
        c.push(7u32);
        c.push(7);
        c.push(9);
        c.push(7);
        assert!(c.heap_bytes() >= 1000 * 4);
        assert_eq!(rows(&c), vec![Some(7), Some(7), Some(9), Some(7), None]);
        let s = c.slice(1..4).expect("rows");
        assert_eq!((s.get(0), s.get(1), s.get(2), s.get(3)), (Some(7), Some(9), Some(7), None));
        assert!(!s.all(|x| x == 7));
    }

    #[test]
    fn set_keeps_or_spreads() {
        let mut c = SameColumn::default();
        for _ in 0..3 {
            c.push(1u32);
        }
        c.set(1, 1);
        assert_eq!(c.heap_bytes(), 0);
        c.set(5, 4);
        assert_eq!(rows(&c), vec![Some(1), Some(1), Some(1), None]);
        c.set(1, 4);
        assert_eq!(rows(&c), vec![Some(1), Some(4), Some(1), None]);
        let mut empty = SameColumn::<u32>::default();
        empty.set(0, 3);
        assert_eq!(rows(&empty), vec![None]);
        assert!(matches!(empty.slice(0..0), Some(Col::Rows(&[]))));
    }
}
