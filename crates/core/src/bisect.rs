//! Bisection over indices rather than a slice: the first index where a rising condition stops
//! holding, for columns read through accessors (a trace's times, a chart's points).

/// How many of the first `n` indices hold `pred`, where `pred` holds up to some index and not
/// after it (as `slice::partition_point`, over `0..n`). O(log n) calls of `pred`.
pub fn count_while(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::count_while;

    #[test]
    fn counts_what_partition_point_counts() {
        let xs = [1, 3, 3, 5, 8, 8, 8, 13];
        for t in 0..15 {
            assert_eq!(count_while(xs.len(), |i| xs[i] < t), xs.partition_point(|&x| x < t), "{t}");
            assert_eq!(count_while(xs.len(), |i| xs[i] <= t), xs.partition_point(|&x| x <= t), "{t}");
        }
        assert_eq!(count_while(0, |_| true), 0);
    }
}
