//! A whole training run: a snapshot per rank. [`naming`] tells ranks and iterations from the
//! files' paths (no filesystem: path strings in); [`summary`] reduces one rank's snapshot to a
//! small [`RankSummary`] and picks the [`Outlier`]s among the ranks; [`moments`] gives the stacks
//! live at chosen moments (each iteration's peak) in one pass. The command line's
//! `memviz ranks` and the page's rank overview share both ([`sorted_by_key`] orders their small
//! lists).

pub mod moments;
pub mod naming;
pub mod summary;

/// `items` in the order of `key`, equal keys in the order given: an insertion into a sorted
/// list each (a run has at most thousands of files), which keeps the page's WebAssembly free of
/// a general sort's code for each of these types (several kilobytes each).
pub fn sorted_by_key<T, K: Ord>(items: impl IntoIterator<Item = T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        let k = key(&item);
        let at = out.partition_point(|x| key(x) <= k);
        out.insert(at, item);
    }
    out
}

pub use moments::{MomentStacks, StackBytes, MOMENT_STACKS};
pub use naming::{assign_ranks, is_snapshot_name, NamingRule, RankFile, RankFiles};
pub use summary::{
    outliers, summarize, summarize_for_overview, OomEvent, Outlier, PeakStack, RankSummary, CURVE_POINTS,
};

#[cfg(test)]
mod tests {
    use super::sorted_by_key;

    #[test]
    fn sorted_by_key_keeps_equal_keys_in_order() {
        let v = sorted_by_key([(3, 'a'), (1, 'b'), (3, 'c'), (0, 'd'), (1, 'e')], |p| p.0);
        assert_eq!(v, [(0, 'd'), (1, 'b'), (1, 'e'), (3, 'a'), (3, 'c')]);
        assert!(sorted_by_key(Vec::<u8>::new(), |x| *x).is_empty());
    }
}
