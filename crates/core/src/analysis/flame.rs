//! Flame-graph data as plain values: the live set at a moment (bytes by stack) or bytes × lifetime
//! over a window of trace entries (each allocation weighs its requested bytes times the entries it
//! is live within the window, in byte-entries), merged by frame root-first. The nodes are a flat
//! list with child indices (no recursion, whatever the depth of a stack), and
//! [`FlameGraph::folded`] writes Brendan Gregg's folded-stack lines (`root;...;leaf value`), which
//! flamegraph.pl, speedscope and inferno read.
//!
//! The page's flame view builds its graph with [`flame_of`]: levels by frame label, Python frames
//! only where a stack has any ([`FlameFrames::PythonFirst`], as its stack panel lists them first
//! and folds the C++ ones), and [`elements_under`] names the allocations under a frame.
//! [`flame_by_group`] puts each allocation's group (the user's line, the operator, a metadata
//! value, ...) as the first level, and [`elements_under_by_group`] names the allocations under a
//! box of that graph.

use std::fmt;

use serde_json::{json, Value};

use super::live::{StackGroup, StackTree};
use super::{frame_label, is_source_frame, visible_frames, AnalysisError, Moment, Replay};
use super::{BEFORE_TRACE_LABEL, NO_FRAMES_LABEL};
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
        self.folded_text().to_string()
    }

    /// [`FlameGraph::folded`]'s lines, to be written as they are produced
    /// (`write!(out, "{}", ...)`) rather than held whole.
    pub fn folded_text(&self) -> Folded<'_> {
        Folded { graph: self }
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

/// Which frames make the levels of a graph built by [`flame_of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlameFrames {
    /// Every visible frame (as [`live_flame`], merged by label).
    All,
    /// A stack's Python (source) frames when it has any, else its visible frames.
    PythonFirst,
}

/// What a graph of [`flame_of`] weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlameSource {
    /// The live set at a moment, in bytes.
    Live(Moment),
    /// Bytes × entries live within trace rows `[first, last]`.
    Lifetime {
        /// First row of the window.
        first: u32,
        /// Last row of the window (inclusive).
        last: u32,
    },
}

/// The lifetimes a source weighs and their weights, in lifetime order.
pub fn weighted_lives(replay: &Replay, source: FlameSource) -> Result<Vec<(u32, u128)>, AnalysisError> {
    match source {
        FlameSource::Live(at) => {
            let row = at.resolve(replay)?;
            Ok(replay
                .live_elements(row)
                .into_iter()
                .map(|e| (e, replay.lives.get(e as usize).map_or(0, |l| u128::from(l.size_bytes))))
                .collect())
        }
        FlameSource::Lifetime { first, last } => {
            let entries = replay.rows;
            for e in [first, last] {
                if e as usize >= entries {
                    return Err(AnalysisError::EntryOutOfRange { entry: u64::from(e), entries });
                }
            }
            let (a, b) = (u64::from(first.min(last)), u64::from(first.max(last)) + 1);
            Ok(replay
                .lives
                .iter()
                .enumerate()
                .filter_map(|(i, l)| {
                    let start = l.alloc_row.map_or(0, u64::from).max(a);
                    let end = l.free_row.map_or(entries as u64, u64::from).min(b);
                    (end > start).then(|| (i as u32, u128::from(l.size_bytes) * u128::from(end - start)))
                })
                .collect())
        }
    }
}

/// The frame labels of a stack, outermost first, as the levels of a graph; a stack without
/// frames is one level naming why.
pub fn stack_path(snap: &Snapshot, stack: u32, before_trace: bool, frames: FlameFrames) -> Vec<String> {
    let visible: Vec<_> = visible_frames(snap, stack).collect();
    let python = frames == FlameFrames::PythonFirst && visible.iter().any(|f| is_source_frame(f));
    let mut path: Vec<String> =
        visible.iter().filter(|f| !python || is_source_frame(f)).map(|f| frame_label(snap, f)).collect();
    path.reverse();
    if path.is_empty() {
        path.push(if before_trace { BEFORE_TRACE_LABEL } else { NO_FRAMES_LABEL }.to_string());
    }
    path
}

/// A flame graph of `source` with levels by frame label. O(lifetimes + stacks × depth).
pub fn flame_of(
    snap: &Snapshot,
    replay: &Replay,
    source: FlameSource,
    frames: FlameFrames,
) -> Result<FlameGraph, AnalysisError> {
    let unit = match source {
        FlameSource::Live(_) => FlameUnit::Bytes,
        FlameSource::Lifetime { .. } => FlameUnit::ByteEntries,
    };
    // Weights by (stack, live before the trace without frames), indexed: slot 2 × stack + flag.
    let mut by_stack: Vec<u128> = Vec::new();
    for (e, v) in weighted_lives(replay, source)? {
        let Some(l) = replay.lives.get(e as usize) else { continue };
        let slot = 2 * l.stack as usize + usize::from(super::is_unrecorded(l));
        if by_stack.len() <= slot {
            by_stack.resize(slot + 1, 0);
        }
        if let Some(x) = by_stack.get_mut(slot) {
            *x += v;
        }
    }
    let paths = by_stack
        .iter()
        .enumerate()
        .filter(|(_, &v)| v > 0)
        .map(|(slot, &v)| (stack_path(snap, (slot / 2) as u32, slot % 2 == 1, frames), v));
    Ok(tree_of(unit, paths))
}

/// A flame graph of `source` whose first level is the group of each allocation under
/// `grouping` (the user's line, the operator, a metadata value, ...), then its frames.
pub fn flame_by_group(
    snap: &Snapshot,
    replay: &Replay,
    source: FlameSource,
    frames: FlameFrames,
    grouping: &super::grouping::Grouping,
) -> Result<FlameGraph, AnalysisError> {
    let unit = match source {
        FlameSource::Live(_) => FlameUnit::Bytes,
        FlameSource::Lifetime { .. } => FlameUnit::ByteEntries,
    };
    // Weights by (group, stack, live before the trace without frames).
    let mut by_key: std::collections::BTreeMap<(u32, u32, bool), u128> = std::collections::BTreeMap::new();
    for (e, v) in weighted_lives(replay, source)? {
        let Some(l) = replay.lives.get(e as usize) else { continue };
        let g = grouping.group_of(e).unwrap_or(u32::MAX);
        *by_key.entry((g, l.stack, super::is_unrecorded(l))).or_insert(0) += v;
    }
    let paths = by_key.into_iter().filter(|(_, v)| *v > 0).map(|((g, stack, before), v)| {
        let mut path = vec![grouping.label(g)];
        path.extend(stack_path(snap, stack, before, frames));
        (path, v)
    });
    Ok(tree_of(unit, paths))
}

/// The graph of weighted paths (outermost level first), children largest first.
fn tree_of(unit: FlameUnit, paths: impl Iterator<Item = (Vec<String>, u128)>) -> FlameGraph {
    let mut nodes = vec![FlameNode { name: "all".into(), value: 0, self_value: 0, parent: None, children: Vec::new() }];
    for (path, v) in paths {
        let mut cur = 0u32;
        if let Some(root) = nodes.get_mut(0) {
            root.value += v;
        }
        for name in path {
            // Children are few: a scan of the parent's finds the level's node.
            let found = nodes.get(cur as usize).and_then(|p| {
                p.children.iter().copied().find(|&c| nodes.get(c as usize).is_some_and(|n| n.name == name))
            });
            let id = match found {
                Some(id) => id,
                None => {
                    let id = nodes.len() as u32;
                    nodes.push(FlameNode { name, value: 0, self_value: 0, parent: Some(cur), children: Vec::new() });
                    if let Some(p) = nodes.get_mut(cur as usize) {
                        p.children.push(id);
                    }
                    id
                }
            };
            if let Some(n) = nodes.get_mut(id as usize) {
                n.value += v;
            }
            cur = id;
        }
        if let Some(n) = nodes.get_mut(cur as usize) {
            n.self_value += v;
        }
    }
    let values: Vec<u128> = nodes.iter().map(|n| n.value).collect();
    for n in &mut nodes {
        n.children.sort_by_key(|&c| std::cmp::Reverse(values.get(c as usize).copied().unwrap_or(0)));
    }
    FlameGraph { unit, nodes }
}

/// The labels from the root (left out) down to `node`.
pub fn node_path(g: &FlameGraph, node: u32) -> Vec<String> {
    let mut path = Vec::new();
    let mut cur = Some(node);
    while let Some(c) = cur.filter(|&c| c != 0) {
        let Some(n) = g.nodes.get(c as usize) else { break };
        path.push(n.name.clone());
        cur = n.parent;
    }
    path.reverse();
    path
}

/// The node at a path of labels from the root (the root for an empty path).
pub fn node_at_path(g: &FlameGraph, path: &[String]) -> Option<u32> {
    let mut cur = 0u32;
    for name in path {
        let n = g.nodes.get(cur as usize)?;
        cur = *n.children.iter().find(|&&c| g.nodes.get(c as usize).is_some_and(|x| &x.name == name))?;
    }
    Some(cur)
}

/// The lifetimes `source` weighs whose levels start with `path` (all of them for an empty path).
pub fn elements_under(
    snap: &Snapshot,
    replay: &Replay,
    source: FlameSource,
    frames: FlameFrames,
    path: &[String],
) -> Vec<u32> {
    let Ok(weighted) = weighted_lives(replay, source) else { return Vec::new() };
    // Whether a (stack, live before the trace) slot is under the path, once known.
    let mut inside: Vec<Option<bool>> = Vec::new();
    weighted
        .into_iter()
        .map(|(e, _)| e)
        .filter(|&e| {
            let Some(l) = replay.lives.get(e as usize) else { return false };
            let before = super::is_unrecorded(l);
            let slot = 2 * l.stack as usize + usize::from(before);
            if inside.len() <= slot {
                inside.resize(slot + 1, None);
            }
            match inside.get(slot).copied().flatten() {
                Some(known) => known,
                None => {
                    let p = stack_path(snap, l.stack, before, frames);
                    let yes = p.len() >= path.len() && p.iter().zip(path).all(|(a, b)| a == b);
                    if let Some(x) = inside.get_mut(slot) {
                        *x = Some(yes);
                    }
                    yes
                }
            }
        })
        .collect()
}

/// The lifetimes `source` weighs under `path` of the graph [`flame_by_group`] draws: the first
/// label is a group's of `grouping`, the rest frames as in [`elements_under`] (all of them for an
/// empty path).
pub fn elements_under_by_group(
    snap: &Snapshot,
    replay: &Replay,
    source: FlameSource,
    frames: FlameFrames,
    grouping: &super::grouping::Grouping,
    path: &[String],
) -> Vec<u32> {
    let Some((label, rest)) = path.split_first() else {
        return weighted_lives(replay, source).map(|w| w.into_iter().map(|(e, _)| e).collect()).unwrap_or_default();
    };
    // The groups of that text (one label per group; a text names one group).
    let groups: Vec<u32> = (0..grouping.labels.len() as u32).filter(|&g| grouping.label(g) == *label).collect();
    let mut out = elements_under(snap, replay, source, frames, rest);
    out.retain(|&e| grouping.group_of(e).is_some_and(|g| groups.contains(&g)));
    out
}

/// The folded lines of a [`FlameGraph`] ([`FlameGraph::folded_text`]); its `Display` writes them.
pub struct Folded<'a> {
    graph: &'a FlameGraph,
}

impl fmt::Display for Folded<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nodes = &self.graph.nodes;
        let mut path: Vec<&str> = Vec::new();
        for (i, n) in nodes.iter().enumerate().skip(1) {
            if n.self_value == 0 {
                continue;
            }
            path.clear();
            let mut cur = Some(i as u32);
            while let Some(c) = cur.filter(|&c| c != 0) {
                let Some(node) = nodes.get(c as usize) else { break };
                path.push(node.name.as_str());
                cur = node.parent;
            }
            path.reverse();
            let line: Vec<String> = path.iter().map(|p| p.replace(';', ",")).collect();
            writeln!(out, "{} {}", line.join(";"), n.self_value)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::collections::HashMap;

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
    /// The page's graph: the same totals as the CLI's, C++ frames left out of stacks with
    /// Python frames, paths that find their nodes, and the allocations under a node adding up
    /// to its value.
    #[test]
    fn the_pages_graph_by_label_adds_up_and_names_its_allocations() {
        let bytes = std::fs::read(crate::test_fixtures::fixture("synth", "typical_p4.pickle")).unwrap();
        let snap = crate::load(&bytes).unwrap();
        let replay = Replay::build(&snap, 0);
        let rows = replay.rows as u32;
        for source in [FlameSource::Live(Moment::Peak), FlameSource::Lifetime { first: 0, last: rows - 1 }] {
            for frames in [FlameFrames::All, FlameFrames::PythonFirst] {
                let g = flame_of(&snap, &replay, source, frames).unwrap();
                let cli = match source {
                    FlameSource::Live(at) => live_flame(&snap, &replay, at).unwrap(),
                    FlameSource::Lifetime { first, last } => lifetime_flame(&snap, &replay, first, last).unwrap(),
                };
                assert_eq!(g.nodes[0].value, cli.nodes[0].value, "{source:?} {frames:?}");
                for (i, n) in g.nodes.iter().enumerate() {
                    let kids: u128 = n.children.iter().map(|&c| g.nodes[c as usize].value).sum();
                    assert_eq!(n.value, kids + n.self_value, "{}", n.name);
                    assert_eq!(node_at_path(&g, &node_path(&g, i as u32)), Some(i as u32));
                    let under = elements_under(&snap, &replay, source, frames, &node_path(&g, i as u32));
                    let w: HashMap<u32, u128> = weighted_lives(&replay, source).unwrap().into_iter().collect();
                    assert_eq!(under.iter().map(|e| w[e]).sum::<u128>(), n.value, "{}", n.name);
                }
                if frames == FlameFrames::PythonFirst {
                    // A level of C++ frames only where the stack has no Python frame.
                    for n in &g.nodes[1..] {
                        let cpp = !n.name.contains(".py:") && !n.name.starts_with('<');
                        if cpp {
                            let parent = &g.nodes[n.parent.unwrap() as usize];
                            assert!(!parent.name.contains(".py:"), "{} under {}", n.name, parent.name);
                        }
                    }
                }
            }
        }
        let g = flame_of(&snap, &replay, FlameSource::Live(Moment::Peak), FlameFrames::All).unwrap();
        assert_eq!(node_at_path(&g, &[]), Some(0));
        assert_eq!(node_at_path(&g, &["nowhere".to_string()]), None);
        assert!(flame_of(&snap, &replay, FlameSource::Lifetime { first: 0, last: rows }, FlameFrames::All).is_err());
    }

    /// A stack of Python and C++ frames: Python-first keeps the Python ones, outermost first;
    /// one of C++ frames only keeps them; no frames is one level saying so.
    #[test]
    fn python_first_paths() {
        let bytes = std::fs::read(crate::test_fixtures::fixture("synth", "typical_p4.pickle")).unwrap();
        let snap = crate::load(&bytes).unwrap();
        let mixed = (0..snap.stacks.len() as u32)
            .find(|&s| {
                let v: Vec<_> = visible_frames(&snap, s).collect();
                v.iter().any(|f| is_source_frame(f)) && v.iter().any(|f| !is_source_frame(f))
            })
            .expect("a stack of Python and C++ frames");
        let all = stack_path(&snap, mixed, false, FlameFrames::All);
        let py = stack_path(&snap, mixed, false, FlameFrames::PythonFirst);
        assert!(py.len() < all.len() && !py.is_empty());
        let all_py: Vec<&String> = all.iter().filter(|l| py.contains(l)).collect();
        assert_eq!(all_py, py.iter().collect::<Vec<_>>(), "the same order, outermost first");
        assert_eq!(stack_path(&snap, 0, false, FlameFrames::PythonFirst), [NO_FRAMES_LABEL]);
        assert_eq!(stack_path(&snap, 0, true, FlameFrames::All), [BEFORE_TRACE_LABEL]);
    }
}
