//! The stacks live at given moments of one rank, in one pass over its lifetimes: each lifetime
//! adds its bytes to the moments it spans (found by binary search), so K moments cost
//! O(lives log K) plus what is live at them, not K replays. The rank overview's "what differs"
//! reads them at each iteration's peak: an outlier's peak against the median rank's peak in the
//! same iteration, the moments the compare analysis matches. Each moment keeps its largest
//! stacks and the bytes of the largest one it left out, so a stack that is not kept reads as "at
//! most that", never as 0.

use crate::analysis::{is_unrecorded, site_label, Replay, BEFORE_TRACE_LABEL};
use crate::snapshot::Snapshot;

type FxHashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Stacks kept at each moment of [`stacks_at_rows`] for the rank overview: enough that the
/// largest stacks of another rank are almost always among them.
pub const MOMENT_STACKS: usize = 48;

/// The stacks live at one moment: the largest (label, bytes), most first, and the bytes of the
/// largest stack left out (0 when every stack live then is kept, so a label not listed held 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MomentStacks {
    /// (site label as [`crate::ranks::PeakStack::label`], live bytes), most first.
    pub stacks: Vec<(String, u64)>,
    /// Bytes of the largest stack not in `stacks`; 0 when none was left out.
    pub unkept_max_bytes: u64,
}

crate::wire_struct!(MomentStacks { stacks, unkept_max_bytes });

/// What a moment says of one stack's live bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackBytes {
    /// Exactly these bytes (0: not live then).
    Exact(u64),
    /// Not kept: at most these bytes (the largest stack the moment left out).
    AtMost(u64),
}

impl MomentStacks {
    /// The live bytes of the stack labelled `label` at this moment, as far as it is kept.
    pub fn bytes_of(&self, label: &str) -> StackBytes {
        match self.stacks.iter().find(|s| s.0 == label) {
            Some(s) => StackBytes::Exact(s.1),
            None if self.unkept_max_bytes == 0 => StackBytes::Exact(0),
            None => StackBytes::AtMost(self.unkept_max_bytes),
        }
    }
}

/// The `top` stacks (by site label, as [`crate::ranks::PeakStack::label`]) live just after each
/// of `rows` (ascending trace rows), with their bytes, most first. Stacks that share a label are
/// one entry, since ranks are matched by label.
pub fn stacks_at_rows(snap: &Snapshot, replay: &Replay, rows: &[u32], top: usize) -> Vec<MomentStacks> {
    // Each (stack, before trace) gets the index of its label, so equal labels add up.
    let mut label_of: FxHashMap<(u32, bool), u32> = FxHashMap::default();
    let mut index_of: FxHashMap<String, u32> = FxHashMap::default();
    let mut labels: Vec<String> = Vec::new();
    let mut at: Vec<FxHashMap<u32, u64>> = vec![FxHashMap::default(); rows.len()];
    for l in &replay.lives {
        // Live just after row r: allocated at or before r, freed after r.
        let lo = l.alloc_row.map_or(0, |a| rows.partition_point(|&r| r < a));
        let hi = l.free_row.map_or(rows.len(), |f| rows.partition_point(|&r| r < f));
        if lo >= hi {
            continue;
        }
        let key = (l.stack, is_unrecorded(l));
        let label = *label_of.entry(key).or_insert_with(|| {
            let text = if key.1 { BEFORE_TRACE_LABEL.to_string() } else { site_label(snap, key.0) };
            *index_of.entry(text).or_insert_with_key(|text| {
                labels.push(text.clone());
                (labels.len() - 1) as u32
            })
        });
        for m in at.get_mut(lo..hi).unwrap_or(&mut []) {
            *m.entry(label).or_default() += l.size_bytes;
        }
    }
    at.into_iter()
        .map(|m| {
            let mut groups: Vec<(u32, u64)> = m.into_iter().collect();
            groups.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| labels[a.0 as usize].cmp(&labels[b.0 as usize])));
            let unkept_max_bytes = groups.get(top).map_or(0, |g| g.1);
            let stacks =
                groups.into_iter().take(top).map(|(label, bytes)| (labels[label as usize].clone(), bytes)).collect();
            MomentStacks { stacks, unkept_max_bytes }
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
                assert_eq!(all[k].unkept_max_bytes, 0, "every stack kept");
                let mut got = all[k].stacks.clone();
                got.sort();
                let mut by_label: FxHashMap<String, u64> = FxHashMap::default();
                for g in &l.by_stack {
                    *by_label.entry(group_label(&snap, g)).or_default() += g.bytes;
                }
                let mut want: Vec<(String, u64)> = by_label.into_iter().collect();
                want.sort();
                assert_eq!(got, want, "{name} row {row}");
                assert_eq!(all[k].stacks.iter().map(|g| g.1).sum::<u64>(), l.total_bytes, "{name} row {row}");
                assert!(all[k].stacks.windows(2).all(|w| w[0].1 >= w[1].1), "most first");
                assert_eq!(top[k].stacks, all[k].stacks.iter().take(5).cloned().collect::<Vec<_>>());
                // A stack left out reads as at most the largest left out, and that bound holds.
                let cut = all[k].stacks.get(5).map_or(0, |g| g.1);
                assert_eq!(top[k].unkept_max_bytes, cut);
                for (label, bytes) in all[k].stacks.iter().skip(5) {
                    match top[k].bytes_of(label) {
                        StackBytes::AtMost(b) => assert!(*bytes <= b, "{name} row {row} {label}"),
                        StackBytes::Exact(b) => assert_eq!(b, *bytes, "{name} row {row} {label}: a label kept twice"),
                    }
                }
            }
            many |= all.iter().any(|a| a.stacks.len() > 5);
        }
        assert!(many, "a moment with more than five stacks, so the top five are a cut");
    }
}
