//! Runs of trace entries that share one user-metadata value
//! (`torch.cuda.memory._set_memory_metadata`, PyTorch 2.10+: every entry carries its thread's
//! metadata), drawn as a band above the timeline so "forward", "backward" or "layer 3" reads over
//! the whole run. The value of JSON-object metadata is its first key's (`{"phase": "forward",
//! "layer": 0}` → `forward`; the key is [`MetadataRuns::key`]), of any other metadata its text.
//! `annotate` entries carry an allocation's annotation in the same field and are skipped; an entry
//! without metadata ends a run. Each distinct text is parsed once.

use std::collections::HashMap;

use super::grouping::{json_value_text, metadata_at};
use crate::snapshot::{Action, Snapshot};

/// One run: consecutive entries with the same value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataRun {
    /// Index into [`MetadataRuns::values`].
    pub value: u32,
    /// First trace row of the run.
    pub first_row: u32,
    /// Last trace row of the run.
    pub last_row: u32,
}

/// The runs of one device's trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetadataRuns {
    /// The key whose value JSON-object metadata shows (the first key of the first object).
    pub key: Option<String>,
    /// Distinct values, in order of first appearance.
    pub values: Vec<String>,
    /// The runs, in trace order, disjoint.
    pub runs: Vec<MetadataRun>,
}

impl MetadataRuns {
    /// The text of a run's value.
    pub fn value_of(&self, run: &MetadataRun) -> &str {
        self.values.get(run.value as usize).map_or("", String::as_str)
    }
}

/// The runs of device `device_pos` of `snap` (none where no entry has metadata).
pub fn metadata_runs(snap: &Snapshot, device_pos: usize) -> MetadataRuns {
    let mut out = MetadataRuns::default();
    let Some(t) = snap.devices.get(device_pos).map(|d| &d.trace) else { return out };
    // Most files have no metadata: one pass over the column and the few raw entries says so.
    let any_text = (0..t.len()).any(|r| t.user_metadata.get(r).is_some_and(|id| id != 0));
    if !any_text && !t.raw.iter().any(|(_, e)| e.get("user_metadata").is_some()) {
        return out;
    }
    let mut value_ids: HashMap<String, u32> = HashMap::new();
    // Metadata text id → value id (`None`: no value); dict metadata has no text id and is read
    // row by row.
    let mut by_text: HashMap<u32, Option<u32>> = HashMap::new();
    let mut value_of_row = |row: u32, out: &mut MetadataRuns| -> Option<u32> {
        let text_id = t.user_metadata.get(row as usize).filter(|&id| id != 0);
        if let Some(v) = text_id.and_then(|id| by_text.get(&id)) {
            return *v;
        }
        let v = metadata_at(snap, device_pos, row).map(|(text, parsed)| {
            let shown = match parsed.as_ref().and_then(|p| p.as_object()).and_then(|o| o.iter().next()) {
                Some((k, v)) => {
                    if out.key.is_none() {
                        out.key = Some(k.clone());
                    }
                    // A later object's first key may differ: its value under the run's key, else its text.
                    match out.key.as_deref().and_then(|key| parsed.as_ref().and_then(|p| p.get(key))) {
                        Some(kv) => json_value_text(kv),
                        None if out.key.as_deref() == Some(k.as_str()) => json_value_text(v),
                        None => text,
                    }
                }
                None => text,
            };
            let next = value_ids.len() as u32;
            *value_ids.entry(shown.clone()).or_insert_with(|| {
                out.values.push(shown);
                next
            })
        });
        if let Some(id) = text_id {
            by_text.insert(id, v);
        }
        v
    };
    let mut open: Option<MetadataRun> = None;
    for row in 0..t.len() as u32 {
        if t.action.get(row as usize).copied() == Some(Action::Annotate) {
            continue;
        }
        let v = value_of_row(row, &mut out);
        match (&mut open, v) {
            (Some(r), Some(v)) if r.value == v => r.last_row = row,
            (_, v) => {
                out.runs.extend(open.take());
                open = v.map(|value| MetadataRun { value, first_row: row, last_row: row });
            }
        }
    }
    out.runs.extend(open);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::test_util::fixture;

    #[test]
    fn the_phases_of_metadata_layers_are_runs_of_their_entries() {
        let snap = fixture("metadata_layers.pickle");
        let m = metadata_runs(&snap, 0);
        assert_eq!(m.key.as_deref(), Some("phase"));
        let t = &snap.devices[0].trace;
        // Every entry of a run has its value, by the grouping's own reading of the entry.
        for r in &m.runs {
            assert!(r.first_row <= r.last_row);
            for row in r.first_row..=r.last_row {
                if t.action[row as usize] == Action::Annotate {
                    continue;
                }
                let (text, parsed) = metadata_at(&snap, 0, row).expect("metadata in a run");
                let want = parsed.and_then(|p| p.get("phase").map(json_value_text)).unwrap_or(text);
                assert_eq!(m.value_of(r), want, "entry {row}");
            }
        }
        // Runs are disjoint, in order, and two runs in a row differ or have a gap between them.
        for w in m.runs.windows(2) {
            assert!(w[0].last_row < w[1].first_row);
            assert!(w[0].value != w[1].value || w[0].last_row + 1 < w[1].first_row);
        }
        // Entries outside every run have no metadata (or are `annotate` entries).
        let covered: std::collections::HashSet<u32> = m.runs.iter().flat_map(|r| r.first_row..=r.last_row).collect();
        for row in 0..t.len() as u32 {
            if !covered.contains(&row) && t.action[row as usize] != Action::Annotate {
                assert!(metadata_at(&snap, 0, row).is_none(), "entry {row} has metadata but no run");
            }
        }
        let names: Vec<&str> = m.values.iter().map(String::as_str).collect();
        assert!(names.contains(&"forward") && names.contains(&"embedding") && names.contains(&"loss"), "{names:?}");
        assert!(m.runs.len() >= 4, "{}", m.runs.len());
    }

    #[test]
    fn a_file_without_metadata_has_no_runs() {
        let snap = fixture("resnet50_buggy.pickle");
        assert_eq!(metadata_runs(&snap, 0), MetadataRuns::default());
    }
}
