//! [`IntervalIndex`]: the bands by life, answering "which bands overlap these steps" in
//! O(log n + k).

/// Interval index over bands: sorted by start with an implicit augmented tree (max end),
/// answering overlap queries in O(log n + k).
#[derive(Clone, Debug, Default)]
pub(super) struct IntervalIndex {
    /// (start, end inclusive, band) sorted by start.
    pub(super) items: Vec<(u32, u32, u32)>,
    /// Max end over the implicit subtree rooted at each index.
    pub(super) max_end: Vec<u32>,
    pub(super) levels: u32,
}

impl IntervalIndex {
    pub(super) fn build(mut items: Vec<(u32, u32, u32)>) -> Self {
        items.sort_unstable();
        let n = items.len();
        let mut max_end: Vec<u32> = items.iter().map(|x| x.1).collect();
        // cgranges-style implicit tree: level-k nodes sit at indices with k trailing ones.
        let mut levels = 0;
        if n > 0 {
            let mut k = 1u32;
            while (1usize << k) <= n {
                let x = 1usize << (k - 1);
                let mut i = (x << 1) - 1;
                let step = x << 2;
                while i < n {
                    let el = max_end.get(i - x).copied().unwrap_or(0);
                    let mut e = max_end[i].max(el);
                    let right = i + x;
                    let er = if right < n { max_end[right] } else { Self::last_max(&max_end, n, i, x) };
                    e = e.max(er);
                    max_end[i] = e;
                    i += step;
                }
                k += 1;
            }
            levels = k - 1;
        }
        IntervalIndex { items, max_end, levels }
    }

    fn last_max(max_end: &[u32], n: usize, i: usize, x: usize) -> u32 {
        // Right subtree partially outside the array: take the max over what exists.
        let mut m = 0;
        let mut j = i + 1;
        let end = (i + x + x).min(n);
        while j < end {
            m = m.max(max_end[j]);
            j += 1;
        }
        m
    }

    /// Bands whose [start, end] overlaps [a, b].
    pub(super) fn overlapping(&self, a: u32, b: u32, out: &mut Vec<u32>) {
        let n = self.items.len();
        if n == 0 {
            return;
        }
        // Iterative descent over the implicit tree.
        let mut stack: Vec<(usize, u32, bool)> = Vec::with_capacity(64);
        let root_level = self.levels;
        stack.push((((1usize << root_level) - 1), root_level, false));
        while let Some((x, k, visited_left)) = stack.pop() {
            if k <= 3 {
                // Small subtree: scan it.
                let i0 = (x >> k) << k;
                let i1 = (i0 + (1usize << (k + 1)) - 1).min(n);
                let mut i = i0;
                while i < i1 {
                    let (s, e, band) = self.items[i];
                    if s > b {
                        break;
                    }
                    if e >= a {
                        out.push(band);
                    }
                    i += 1;
                }
                continue;
            }
            if !visited_left {
                let y = x - (1usize << (k - 1));
                stack.push((x, k, true));
                if y >= n || self.max_end.get(y).copied().unwrap_or(0) >= a {
                    stack.push((y, k - 1, false));
                }
            } else if x < n && self.items[x].0 <= b {
                let (_, e, band) = self.items[x];
                if e >= a {
                    out.push(band);
                }
                stack.push((x + (1usize << (k - 1)), k - 1, false));
            }
        }
    }
}
