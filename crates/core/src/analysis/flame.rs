//! Flame-graph data as plain values: the live set at a moment (bytes by stack) or bytes × lifetime
//! over a window of trace entries (each allocation weighs its requested bytes times the entries it
//! is live within the window, in byte-entries), merged by frame root-first. The nodes are a flat
//! list with child indices (no recursion, whatever the depth of a stack), and
//! [`FlameGraph::folded`] writes Brendan Gregg's folded-stack lines (`root;...;leaf value`), which
//! flamegraph.pl, speedscope and inferno read.

use serde_json::{json, Value};

use super::live::{StackGroup, StackTree};
use super::{AnalysisError, Moment, Replay};
use crate::snapshot::Snapshot;

/// What a node's value counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlameUnit {
    /// Live requested bytes at one moment.
    Bytes,
    /// Requested bytes times trace entries live within a window.
    ByteEntries,
}

/// One node: a frame (the root is everything).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlameNode {
    /// The frame as PyTorch's viewer writes it (`file:line:function`), `<no frames>`, or `all`.
    pub name: String,
    /// Value of everything under this node.
    pub value: u128,
    /// Value of allocations whose stack ends here.
    pub self_value: u128,
    /// Parent (`None` for the root).
    pub parent: Option<u32>,
    /// Children, largest first.
    pub children: Vec<u32>,
}

/// A flame graph: node 0 is the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlameGraph {
    /// What values count.
    pub unit: FlameUnit,
    /// Nodes; 0 is the root; children come after their parent.
    pub nodes: Vec<FlameNode>,
}

impl FlameGraph {
    fn from_groups(snap: &Snapshot, unit: FlameUnit, groups: &[(StackGroup, u128)]) -> FlameGraph {
        // The stack tree sums u64 bytes; the values themselves are summed here in u128.
        let plain: Vec<StackGroup> = groups.iter().map(|(g, _)| g.clone()).collect();
        let (tree, leaves) = StackTree::build_with_leaves(snap, &plain);
        let mut value = vec![0u128; tree.nodes.len()];
        let mut self_value = vec![0u128; tree.nodes.len()];
        for (&leaf, (_, v)) in leaves.iter().zip(groups) {
            if let Some(s) = self_value.get_mut(leaf as usize) {
                *s += v;
            }
            let mut cur = Some(leaf);
            while let Some(n) = cur {
                if let Some(x) = value.get_mut(n as usize) {
                    *x += v;
                }
                cur = tree.nodes.get(n as usize).and_then(|node| node.parent);
            }
        }
        let nodes = tree
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut children = n.children.clone();
                children.sort_by_key(|&c| std::cmp::Reverse(value.get(c as usize).copied().unwrap_or(0)));
                FlameNode {
                    name: if i == 0 { "all".into() } else { tree.label(snap, i as u32) },
                    value: value.get(i).copied().unwrap_or(0),
                    self_value: self_value.get(i).copied().unwrap_or(0),
                    parent: n.parent,
                    children,
                }
            })
            .collect();
        FlameGraph { unit, nodes }
    }

    /// Folded-stack lines, one per node with a self value: frames root-first joined by `;`.
    pub fn folded(&self) -> String {
        let mut out = String::new();
        let mut path: Vec<&str> = Vec::new();
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if n.self_value == 0 {
                continue;
            }
            path.clear();
            let mut cur = Some(i as u32);
            while let Some(c) = cur.filter(|&c| c != 0) {
                let Some(node) = self.nodes.get(c as usize) else { break };
                path.push(node.name.as_str());
                cur = node.parent;
            }
            path.reverse();
            let line: Vec<String> = path.iter().map(|p| p.replace(';', ",")).collect();
            out.push_str(&format!("{} {}\n", line.join(";"), n.self_value));
        }
        out
    }

    /// JSON: `{unit, nodes: [{name, value, self, parent, children}]}` (values as numbers).
    pub fn to_json(&self) -> Value {
        json!({
            "unit": match self.unit { FlameUnit::Bytes => "bytes", FlameUnit::ByteEntries => "byte_entries" },
            "nodes": self.nodes.iter().map(|n| json!({
                "name": n.name,
                "value": n.value as f64,
                "self": n.self_value as f64,
                "parent": n.parent,
                "children": n.children,
            })).collect::<Vec<_>>(),
        })
    }
}

fn group_by_stack(replay: &Replay, weighted: impl Iterator<Item = (u32, u128)>) -> Vec<(StackGroup, u128)> {
    let mut by: std::collections::HashMap<(u32, bool), (StackGroup, u128)> = std::collections::HashMap::new();
    for (e, v) in weighted {
        let Some(l) = replay.lives.get(e as usize) else { continue };
        let before_trace = l.stack == 0 && l.alloc_row.is_none();
        let entry = by
            .entry((l.stack, before_trace))
            .or_insert_with(|| (StackGroup { stack: l.stack, before_trace, bytes: 0, count: 0 }, 0));
        entry.0.bytes = entry.0.bytes.saturating_add(u64::try_from(v).unwrap_or(u64::MAX));
        entry.0.count += 1;
        entry.1 += v;
    }
    let mut v: Vec<(StackGroup, u128)> = by.into_values().collect();
    v.sort_by_key(|(g, x)| (std::cmp::Reverse(*x), g.stack, g.before_trace));
    v
}

/// The live set at a moment as a flame graph of bytes.
pub fn live_flame(snap: &Snapshot, replay: &Replay, at: Moment) -> Result<FlameGraph, AnalysisError> {
    let row = at.resolve(replay)?;
    let live = replay.live_elements(row);
    let weighted = live.into_iter().map(|e| (e, replay.lives.get(e as usize).map_or(0, |l| u128::from(l.size_bytes))));
    Ok(FlameGraph::from_groups(snap, FlameUnit::Bytes, &group_by_stack(replay, weighted)))
}

/// Bytes × lifetime within trace rows `[first, last]` (an allocation live from before the trace
/// counts from the window's start, one never freed to its end) as a flame graph of byte-entries.
pub fn lifetime_flame(snap: &Snapshot, replay: &Replay, first: u32, last: u32) -> Result<FlameGraph, AnalysisError> {
    let entries = replay.rows;
    for e in [first, last] {
        if e as usize >= entries {
            return Err(AnalysisError::EntryOutOfRange { entry: u64::from(e), entries });
        }
    }
    let (a, b) = (u64::from(first.min(last)), u64::from(first.max(last)) + 1);
    let weighted = replay.lives.iter().enumerate().filter_map(|(i, l)| {
        // Live after its alloc row up to its free row: rows [alloc, free).
        let start = l.alloc_row.map_or(0, u64::from).max(a);
        let end = l.free_row.map_or(entries as u64, u64::from).min(b);
        (end > start).then(|| (i as u32, u128::from(l.size_bytes) * u128::from(end - start)))
    });
    let groups = group_by_stack(replay, weighted.collect::<Vec<_>>().into_iter());
    Ok(FlameGraph::from_groups(snap, FlameUnit::ByteEntries, &groups))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// The live flame graph's root is the live bytes at the peak, each node's value is its
    /// children's plus its own, and the folded lines add up to the root.
    #[test]
    fn flame_graphs_add_up() {
        let bytes = std::fs::read(crate::test_fixtures::fixture("synth", "typical_p4.pickle")).unwrap();
        let snap = crate::load(&bytes).unwrap();
        let replay = Replay::build(&snap, 0);
        let f = live_flame(&snap, &replay, Moment::Peak).unwrap();
        assert_eq!(f.nodes[0].value, u128::from(replay.peak_bytes));
        for n in &f.nodes {
            let kids: u128 = n.children.iter().map(|&c| f.nodes[c as usize].value).sum();
            assert_eq!(n.value, kids + n.self_value, "{}", n.name);
        }
        let folded: u128 = f.folded().lines().map(|l| l.rsplit(' ').next().unwrap().parse::<u128>().unwrap()).sum();
        assert_eq!(folded, f.nodes[0].value);
        assert!(f.nodes.len() > 2 && !f.nodes[1].name.is_empty());
        // One entry wide, the lifetime graph is the live set after that entry.
        let row = replay.peak_row.unwrap();
        let l = lifetime_flame(&snap, &replay, row, row).unwrap();
        assert_eq!(l.nodes[0].value, u128::from(replay.peak_bytes));
        let all = lifetime_flame(&snap, &replay, 0, replay.rows as u32 - 1).unwrap();
        let sum: u128 = replay.live_after_bytes.iter().map(|&b| u128::from(b)).sum();
        assert_eq!(all.nodes[0].value, sum, "bytes x entries over the whole trace");
        assert!(lifetime_flame(&snap, &replay, 0, replay.rows as u32).is_err());
    }
}
