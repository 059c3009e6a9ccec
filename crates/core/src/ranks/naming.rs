//! Ranks and iterations of a training run's snapshot files, from their paths alone (no
//! filesystem): `rank3` / `rank-3` / `rank_3` in the file name (torchtitan's
//! `rank3_memory_snapshot.pickle`, Megatron-Bridge's `snapshot_oom_rank-3.pickle`), else a number
//! before the extension (`snapshot_3.pickle`), else the files' order. A folder named
//! `iteration_N` or `step_N` (torchtitan's `iteration_10/`) gives the iteration.

/// How ranks were told apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamingRule {
    /// `rankN`, `rank-N` or `rank_N` in every file name.
    RankInName,
    /// `_N.pickle` (or `.pkl`, maybe compressed) at the end of every file name.
    NumberSuffix,
    /// Neither named every file once: ranks 0, 1, ... in the order given (per iteration).
    FileOrder,
}

impl NamingRule {
    /// A short name: `rank-in-name`, `number-suffix`, `file-order`.
    pub fn name(self) -> &'static str {
        match self {
            NamingRule::RankInName => "rank-in-name",
            NamingRule::NumberSuffix => "number-suffix",
            NamingRule::FileOrder => "file-order",
        }
    }

    /// The rule in words, for the command line.
    pub fn describe(self) -> &'static str {
        match self {
            NamingRule::RankInName => "ranks from 'rankN' / 'rank-N' in the file names",
            NamingRule::NumberSuffix => "ranks from the number before '.pickle' in the file names",
            NamingRule::FileOrder => "ranks in file order (no rank number names every file once)",
        }
    }
}

/// One snapshot file of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankFile {
    /// The path as given.
    pub path: String,
    /// Its rank.
    pub rank: u32,
    /// Its iteration, from an `iteration_N` / `step_N` folder.
    pub iteration: Option<u64>,
}

/// Every file with its rank, and the rule that gave the ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankFiles {
    /// In the order given.
    pub files: Vec<RankFile>,
    /// The rule used.
    pub rule: NamingRule,
}

/// The path's components (either slash).
fn components(path: &str) -> impl DoubleEndedIterator<Item = &str> {
    path.split(['/', '\\']).filter(|c| !c.is_empty())
}

/// The leading decimal digits of `s` as a number (`None`: no digit, or too large).
fn leading_number(s: &str) -> Option<u64> {
    let end = s.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(s.len());
    s.get(..end).filter(|d| !d.is_empty())?.parse().ok()
}

/// `rankN`, `rank-N` or `rank_N` in a file name, case-insensitive; the last one wins.
pub fn rank_in_name(name: &str) -> Option<u32> {
    let lower = name.to_ascii_lowercase();
    let mut found = None;
    for (at, _) in lower.match_indices("rank") {
        let rest = lower.get(at + 4..).unwrap_or("");
        let rest = rest.strip_prefix(['-', '_']).unwrap_or(rest);
        if let Some(n) = leading_number(rest).and_then(|n| u32::try_from(n).ok()) {
            found = Some(n);
        }
    }
    found
}

/// `_N.pickle` / `_N.pkl` (compressed or not) at the end of a file name.
pub fn number_suffix(name: &str) -> Option<u32> {
    let lower = name.to_ascii_lowercase();
    let stem = [".pickle", ".pkl"].iter().find_map(|ext| lower.find(ext).map(|at| lower.get(..at).unwrap_or("")))?;
    let (_, digits) = stem.rsplit_once('_')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The iteration of a path: the last folder named `iteration_N` or `step_N` (also with `-`).
pub fn iteration_of(path: &str) -> Option<u64> {
    let mut parts: Vec<&str> = components(path).collect();
    parts.pop(); // the file name
    parts.iter().rev().find_map(|c| {
        let lower = c.to_ascii_lowercase();
        ["iteration", "step"].iter().find_map(|p| {
            let rest = lower.strip_prefix(p)?;
            let rest = rest.strip_prefix(['_', '-'])?;
            rest.bytes().all(|b| b.is_ascii_digit()).then(|| rest.parse().ok()).flatten()
        })
    })
}

/// Ranks by `rule` for every path, when it names each (rank, iteration) exactly once.
fn by_rule(paths: &[String], iterations: &[Option<u64>], rule: fn(&str) -> Option<u32>) -> Option<Vec<u32>> {
    let ranks: Option<Vec<u32>> = paths.iter().map(|p| components(p).next_back().and_then(rule)).collect();
    let ranks = ranks?;
    let keys = super::sorted_by_key(iterations.iter().copied().zip(ranks.iter().copied()), |k| *k);
    keys.windows(2).all(|w| w[0] != w[1]).then_some(ranks)
}

/// Gives every path its rank and iteration (see the module doc). Paths are taken in the order
/// given; with [`NamingRule::FileOrder`] each iteration's files are ranked 0, 1, ... in that order.
pub fn assign_ranks(paths: &[String]) -> RankFiles {
    let iterations: Vec<Option<u64>> = paths.iter().map(|p| iteration_of(p)).collect();
    let found = by_rule(paths, &iterations, rank_in_name)
        .map(|r| (r, NamingRule::RankInName))
        .or_else(|| by_rule(paths, &iterations, number_suffix).map(|r| (r, NamingRule::NumberSuffix)));
    let (ranks, rule) = found.unwrap_or_else(|| {
        let mut next: Vec<(Option<u64>, u32)> = Vec::new();
        let ranks = iterations
            .iter()
            .map(|it| match next.iter_mut().find(|(i, _)| i == it) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    next.push((*it, 0));
                    0
                }
            })
            .collect();
        (ranks, NamingRule::FileOrder)
    });
    let files = paths
        .iter()
        .zip(ranks)
        .zip(iterations)
        .map(|((path, rank), iteration)| RankFile { path: path.clone(), rank, iteration })
        .collect();
    RankFiles { files, rule }
}

/// Whether a file name looks like a snapshot file: `.pickle`, `.pkl`, `.json`, or compressed
/// (`.gz`, `.zst`, `.xz`, e.g. `.pickle.gz`). Used when searching folders.
pub fn is_snapshot_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".pickle", ".pkl", ".json", ".gz", ".zst", ".xz"].iter().any(|ext| lower.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn torchtitan_folders_and_names() {
        let r = assign_ranks(&paths(&[
            "run/iteration_10/rank1_memory_snapshot.pickle",
            "run/iteration_10/rank0_memory_snapshot.pickle",
            "run/iteration_20/rank0_memory_snapshot.pickle",
        ]));
        assert_eq!(r.rule, NamingRule::RankInName);
        let got: Vec<(u32, Option<u64>)> = r.files.iter().map(|f| (f.rank, f.iteration)).collect();
        assert_eq!(got, vec![(1, Some(10)), (0, Some(10)), (0, Some(20))]);
    }

    #[test]
    fn megatron_names() {
        let r = assign_ranks(&paths(&["snapshot_oom_rank-12.pickle", "x/snapshot_oom_rank-3.pickle.gz"]));
        assert_eq!(r.rule, NamingRule::RankInName);
        assert_eq!(r.files.iter().map(|f| f.rank).collect::<Vec<_>>(), vec![12, 3]);
        assert_eq!(r.files[0].iteration, None);
    }

    #[test]
    fn number_suffix_then_file_order() {
        let r = assign_ranks(&paths(&["mem_2.pickle", "mem_0.pkl"]));
        assert_eq!((r.rule, r.files[0].rank, r.files[1].rank), (NamingRule::NumberSuffix, 2, 0));
        // A repeated rank falls back to file order.
        let r = assign_ranks(&paths(&["a/rank0.pickle", "b/rank0.pickle", "c.pickle"]));
        assert_eq!(r.rule, NamingRule::FileOrder);
        assert_eq!(r.files.iter().map(|f| f.rank).collect::<Vec<_>>(), vec![0, 1, 2]);
        // File order counts within each iteration.
        let r = assign_ranks(&paths(&["step_1/a.pickle", "step_1/b.pickle", "step_2/a.pickle"]));
        assert_eq!(
            r.files.iter().map(|f| (f.rank, f.iteration)).collect::<Vec<_>>(),
            vec![(0, Some(1)), (1, Some(1)), (0, Some(2))]
        );
    }

    #[test]
    fn pieces() {
        assert_eq!(rank_in_name("RANK_7.pickle"), Some(7));
        assert_eq!(rank_in_name("ranking.pickle"), None);
        assert_eq!(number_suffix("snap_04.pickle.zst"), Some(4));
        assert_eq!(number_suffix("snap_x4.pickle"), None);
        assert_eq!(iteration_of("/a/step-3/rank0.pickle"), Some(3));
        assert_eq!(iteration_of("step_3.pickle"), None);
        assert!(is_snapshot_name("r.PICKLE.gz") && !is_snapshot_name("notes.txt"));
    }
}
