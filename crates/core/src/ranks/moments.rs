//! The stacks live at given moments of one rank, in one pass over its lifetimes: each lifetime
//! adds its bytes to the moments it spans (found by binary search), so K moments cost
//! O(lives log K) plus what is live at them, not K replays. The rank overview's "what differs"
//! reads them at each iteration's peak: an outlier's peak against the median rank's peak in the
//! same iteration, the moments the compare analysis matches.

use crate::analysis::{is_unrecorded, site_label, Replay, BEFORE_TRACE_LABEL};
use crate::snapshot::Snapshot;

type FxHashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// The `top` stacks (by site label, as [`crate::ranks::PeakStack::label`]) live just after each
/// of `rows` (ascending trace rows), with their bytes, most first.
pub fn stacks_at_rows(snap: &Snapshot, replay: &Replay, rows: &[u32], top: usize) -> Vec<Vec<(String, u64)>> {
    let mut at: Vec<FxHashMap<(u32, bool), u64>> = vec![FxHashMap::default(); rows.len()];
    for l in &replay.lives {
        // Live just after row r: allocated at or before r, freed after r.
        let lo = l.alloc_row.map_or(0, |a| rows.partition_point(|&r| r < a));
        let hi = l.free_row.map_or(rows.len(), |f| rows.partition_point(|&r| r < f));
        for m in at.get_mut(lo..hi).unwrap_or(&mut []) {
            *m.entry((l.stack, is_unrecorded(l))).or_default() += l.size_bytes;
        }
    }
    at.into_iter()
        .map(|m| {
            let mut groups: Vec<((u32, bool), u64)> = m.into_iter().collect();
            groups.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            groups
                .into_iter()
                .take(top)
                .map(|((stack, before), bytes)| {
                    let label = if before { BEFORE_TRACE_LABEL.to_string() } else { site_label(snap, stack) };
                    (label, bytes)
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::live::{group_label, live_set};
    use crate::analysis::Moment;

    /// At the peak and at other rows, the same stacks and bytes as the live set computed there
    /// on its own.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn the_stacks_at_rows_are_the_live_sets_there() {
        let mut many = false;
        for name in ["growth_leak.pickle", "gpt_amp_annotated.pickle", "multistream.pickle"] {
            let path = crate::test_fixtures::fixture("real", name);
            let snap = crate::load(&std::fs::read(&path).unwrap()).unwrap();
            let pos = snap.default_device().unwrap();
            let replay = Replay::build(&snap, pos);
            let n = replay.rows as u32;
            let mut rows = vec![0, n / 3, n / 2, replay.peak_row.unwrap(), n.saturating_sub(1)];
            rows.sort_unstable();
            rows.dedup();
            let all = stacks_at_rows(&snap, &replay, &rows, usize::MAX);
            let top = stacks_at_rows(&snap, &replay, &rows, 5);
            for (k, &row) in rows.iter().enumerate() {
                let l = live_set(&snap, &replay, Moment::Entry(row)).unwrap();
                let mut got = all[k].clone();
                got.sort();
                let mut want: Vec<(String, u64)> =
                    l.by_stack.iter().map(|g| (group_label(&snap, g), g.bytes)).collect();
                want.sort();
                assert_eq!(got, want, "{name} row {row}");
                assert_eq!(all[k].iter().map(|g| g.1).sum::<u64>(), l.total_bytes, "{name} row {row}");
                assert!(all[k].windows(2).all(|w| w[0].1 >= w[1].1), "most first");
                assert_eq!(top[k], all[k].iter().take(5).cloned().collect::<Vec<_>>());
            }
            many |= all.iter().any(|a| a.len() > 5);
        }
        assert!(many, "a moment with more than five stacks, so the top five are a cut");
    }
}
