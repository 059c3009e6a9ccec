//! A Fenwick (binary indexed) tree of byte counts: point updates and prefix sums in O(log n),
//! built in O(n). The timeline uses it to find the lower offset of a band (the bytes of the live
//! bands below it) without storing offsets per step.

/// Prefix sums over `u64` byte counts. Sums use wrapping arithmetic, so a subtraction may be
/// applied before the matching addition; a prefix sum of values that are all non-negative is
/// exact as long as the true total fits in `u64`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Fenwick {
    tree: Vec<u64>,
}

impl Fenwick {
    /// A tree over `values` (index i holds `values[i]`), built in O(n).
    pub(crate) fn from_values(values: Vec<u64>) -> Self {
        let mut tree = values;
        let n = tree.len();
        for i in 0..n {
            let parent = i | (i + 1);
            if parent < n {
                let v = tree[i];
                tree[parent] = tree[parent].wrapping_add(v);
            }
        }
        Fenwick { tree }
    }

    /// Adds `delta_bytes` (wrapping: pass `0u64.wrapping_sub(x)` to subtract) at index `i`.
    pub(crate) fn add(&mut self, i: usize, delta_bytes: u64) {
        let mut i = i;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add(delta_bytes);
            i |= i + 1;
        }
    }

    /// Sum of the values at indices `0..end`.
    pub(crate) fn prefix(&self, end: usize) -> u64 {
        let mut sum = 0u64;
        let mut i = end.min(self.tree.len());
        while i > 0 {
            sum = sum.wrapping_add(self.tree[i - 1]);
            i &= i - 1;
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::Fenwick;

    #[test]
    fn prefix_sums_match_a_plain_sum_after_updates() {
        let mut values: Vec<u64> = (0..257u64).map(|i| (i * 7919) % 1000).collect();
        let mut f = Fenwick::from_values(values.clone());
        for k in 0..500usize {
            let i = (k * 31) % values.len();
            if k % 3 == 0 {
                let d = values[i] / 2;
                values[i] -= d;
                f.add(i, 0u64.wrapping_sub(d));
            } else {
                values[i] += k as u64;
                f.add(i, k as u64);
            }
            let end = (k * 17) % (values.len() + 1);
            assert_eq!(f.prefix(end), values[..end].iter().sum::<u64>(), "prefix {end} after {k} updates");
        }
        assert_eq!(f.prefix(usize::MAX), values.iter().sum::<u64>());
    }
}
