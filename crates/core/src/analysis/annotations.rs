//! `annotate` trace entries (`torch.cuda.memory._annotate_memory(ptr, metadata)`, PyTorch 2.12+)
//! attached to the allocation they name: the lifetime live at that address when the entry was
//! recorded (traced, or live before the trace). Several may accumulate on one allocation. They are
//! never allocations: [`super::Replay`], the timeline's layout and the peaks skip them (only
//! `alloc` / `free_completed` / `free` are events there), and PyTorch's `trace` prints them as the
//! `repr` of the entry, which [`crate::reference::trace`] does too.

use std::collections::HashMap;

use super::Replay;
use crate::snapshot::{Action, Snapshot};
use crate::tree::Tree;

/// One annotation of an allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocAnnotation {
    /// Trace row of the `annotate` entry.
    pub row: u32,
    /// Its `user_metadata` text.
    pub text: String,
    /// Its time, when recorded.
    pub time_us: Option<i64>,
    /// Stack where it was annotated (0: none).
    pub stack: u32,
}

/// The annotations of one device, by lifetime ([`Replay::lives`] index, which is also the
/// layout's element index).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    by_life: HashMap<u32, Vec<AllocAnnotation>>,
    /// `annotate` entries whose address held no live allocation.
    pub unmatched: Vec<AllocAnnotation>,
}

impl Annotations {
    /// The annotations of a lifetime, oldest first.
    pub fn of(&self, life: u32) -> &[AllocAnnotation] {
        self.by_life.get(&life).map_or(&[], Vec::as_slice)
    }

    /// Lifetimes with at least one annotation, ascending.
    pub fn lives(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.by_life.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// Whether no allocation is annotated.
    pub fn is_empty(&self) -> bool {
        self.by_life.is_empty()
    }
}

/// The `user_metadata` of a row: the column, else the verbatim entry.
pub fn text_of(snap: &Snapshot, device_pos: usize, row: usize) -> String {
    let Some(t) = snap.devices.get(device_pos).map(|d| &d.trace) else { return String::new() };
    if let Some(id) = t.user_metadata.get(row).filter(|&id| id != 0) {
        return snap.strings.get(id).to_owned();
    }
    match t.raw_at(row).and_then(|r| r.get("user_metadata")) {
        Some(Tree::Str(s)) => s.clone(),
        _ => String::new(),
    }
}

/// The `annotate` entries of the one lifetime at `addr` that lives from trace row `alloc_row`
/// (`None`: before the trace) to `free_row` (`None`: the end), oldest first: what the page shows
/// for one allocation without a [`Replay`]. O(rows of the lifetime).
pub fn of_lifetime(
    snap: &Snapshot,
    device_pos: usize,
    addr: u64,
    alloc_row: Option<u32>,
    free_row: Option<u32>,
) -> Vec<AllocAnnotation> {
    let Some(t) = snap.devices.get(device_pos).map(|d| &d.trace) else { return Vec::new() };
    let from = alloc_row.map_or(0, |r| r as usize + 1);
    let to = free_row.map_or(t.len(), |r| r as usize).min(t.len());
    (from..to)
        .filter(|&row| t.action.get(row) == Some(&Action::Annotate) && t.addr.get(row) == Some(&addr))
        .map(|row| AllocAnnotation {
            row: row as u32,
            text: text_of(snap, device_pos, row),
            time_us: t.time_us_at(row),
            stack: t.stack.get(row).copied().unwrap_or(0),
        })
        .collect()
}

/// Attaches every `annotate` entry of the replay's device to its allocation. O(n).
pub fn annotations(snap: &Snapshot, replay: &Replay) -> Annotations {
    let mut out = Annotations::default();
    let Some(t) = snap.devices.get(replay.device_pos).map(|d| &d.trace) else { return out };
    if !t.action.contains(&Action::Annotate) {
        return out;
    }
    let life_of_alloc: HashMap<u32, u32> =
        replay.lives.iter().enumerate().filter_map(|(i, l)| l.alloc_row.map(|r| (r, i as u32))).collect();
    // Lifetimes live before the trace, by address (a free without alloc closes one at its row).
    let mut before: HashMap<u64, Vec<u32>> = HashMap::new();
    for (i, l) in replay.lives.iter().enumerate() {
        if l.alloc_row.is_none() {
            before.entry(l.addr).or_default().push(i as u32);
        }
    }
    let mut open: HashMap<u64, u32> = HashMap::new();
    for row in 0..t.len() {
        let (Some(&a), Some(&addr)) = (t.action.get(row), t.addr.get(row)) else { continue };
        let r = row as u32;
        match a {
            Action::Alloc => {
                if let Some(&e) = life_of_alloc.get(&r) {
                    open.insert(addr, e);
                }
            }
            Action::FreeCompleted | Action::Free => {
                open.remove(&addr);
            }
            Action::Annotate => {
                let ann = AllocAnnotation {
                    row: r,
                    text: text_of(snap, replay.device_pos, row),
                    time_us: t.time_us_at(row),
                    stack: t.stack.get(row).copied().unwrap_or(0),
                };
                let early = || {
                    before
                        .get(&addr)?
                        .iter()
                        .copied()
                        .find(|&e| replay.lives.get(e as usize).is_some_and(|l| l.free_row.is_none_or(|f| f > r)))
                };
                match open.get(&addr).copied().or_else(early) {
                    Some(e) => out.by_life.entry(e).or_default().push(ann),
                    None => out.unmatched.push(ann),
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// snapshot_annotate.pickle: two annotations, one on a traced allocation (the kv-cache text
    /// from `_set_memory_metadata`) and one on a parameter; neither is a lifetime or moves the peak.
    #[test]
    fn annotations_attach_to_their_allocations() {
        let bytes = std::fs::read(crate::test_fixtures::fixture("synth", "snapshot_annotate.pickle")).unwrap();
        let snap = crate::load(&bytes).unwrap();
        let replay = Replay::build(&snap, 0);
        let a = annotations(&snap, &replay);
        assert!(a.unmatched.is_empty(), "{:?}", a.unmatched);
        let lives = a.lives();
        assert_eq!(lives.len(), 2);
        let texts: Vec<&str> = lives.iter().flat_map(|&l| a.of(l)).map(|x| x.text.as_str()).collect();
        assert!(texts.contains(&"kv-cache layer 3") && texts.contains(&"embedding weight"), "{texts:?}");
        assert!(lives.iter().flat_map(|&l| a.of(l)).all(|x| x.stack != 0));
        let t = &snap.devices[0].trace;
        let lifetimes = (0..t.len()).filter(|&r| matches!(t.action[r], Action::Alloc)).count()
            + replay.lives.iter().filter(|l| l.alloc_row.is_none()).count();
        assert_eq!(replay.lives.len(), lifetimes, "annotate entries are no lifetimes");
        let layout = crate::timeline::Layout::build(&snap, 0, crate::timeline::Options::default());
        let rows: Vec<u32> = layout.event_row.iter().copied().filter(|&r| r != u32::MAX).collect();
        assert!(rows.iter().all(|&r| t.action[r as usize] != Action::Annotate), "no annotate event on the timeline");
        assert_eq!(layout.peak_bytes, replay.peak_bytes);
        // One lifetime's entries, found from its rows alone, are the same.
        for &l in &lives {
            let life = &replay.lives[l as usize];
            assert_eq!(of_lifetime(&snap, 0, life.addr, life.alloc_row, life.free_row), a.of(l), "life {l}");
        }
    }
}
