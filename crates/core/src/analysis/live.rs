//! The live set at a moment (by default the peak): what holds the memory, grouped by stack (a tree
//! of bytes by frame, outermost first, for an icicle or flame graph), by stack, and by source line
//! (the innermost visible frame with a line, see [`super::site_frame`]), largest first, with the
//! timeline elements that are live so the page can highlight them.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::{
    frame_key, is_unrecorded, site_frame, site_label, sort_groups, time_of_row, visible_frames, AnalysisError,
    FrameKey, Moment, Replay,
};
use crate::format::frame_visible;
use crate::snapshot::Snapshot;

/// Live bytes of one stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackGroup {
    /// Stack id (0: no frames).
    pub stack: u32,
    /// Allocations without frames that were live before the trace (kept apart from stack 0).
    pub before_trace: bool,
    /// Live requested bytes.
    pub bytes: u64,
    /// Live allocations.
    pub count: usize,
}

/// Live bytes of one source line (site).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteGroup {
    /// Frame id of the site (`None`: allocations without frames).
    pub frame: Option<u32>,
    /// `file:line (function)`, or a C++ function name, or `<no frames>`.
    pub label: String,
    /// Live requested bytes.
    pub bytes: u64,
    /// Live allocations.
    pub count: usize,
}

/// A node of the stack tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeNode {
    /// Frame id (`None` for the root and for the `<no frames>` nodes).
    pub frame: Option<u32>,
    /// The node of allocations without frames that were live before the trace.
    pub before_trace: bool,
    /// Parent node (`None` for the root).
    pub parent: Option<u32>,
    /// Depth (root 0, outermost frames 1).
    pub depth: u32,
    /// Live requested bytes of allocations whose stack passes through this node.
    pub bytes: u64,
    /// Those allocations.
    pub count: usize,
    /// Children, largest first.
    pub children: Vec<u32>,
}

/// Key of the tree node for allocations without frames that were live before the trace.
const BEFORE_TRACE_KEY: FrameKey = (u32::MAX, i64::MIN, u32::MAX);

/// Live bytes by stack as a tree: node 0 is the root (everything), its children the outermost
/// visible frames. Stacks without frames hang under a `<no frames>` child (allocations live
/// before the trace under their own child).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackTree {
    /// Nodes; 0 is the root.
    pub nodes: Vec<TreeNode>,
}

impl StackTree {
    /// Builds the tree from per-stack totals.
    pub fn build(snap: &Snapshot, groups: &[StackGroup]) -> StackTree {
        Self::build_with_leaves(snap, groups).0
    }

    /// [`StackTree::build`], with the node where each group's stack ends.
    pub fn build_with_leaves(snap: &Snapshot, groups: &[StackGroup]) -> (StackTree, Vec<u32>) {
        let mut leaves = Vec::with_capacity(groups.len());
        let mut nodes = vec![TreeNode {
            frame: None,
            before_trace: false,
            parent: None,
            depth: 0,
            bytes: 0,
            count: 0,
            children: Vec::new(),
        }];
        let mut index: HashMap<(u32, Option<FrameKey>), u32> = HashMap::new();
        let mut path: Vec<(Option<u32>, Option<FrameKey>)> = Vec::new();
        for g in groups {
            path.clear();
            path.extend(snap.stacks.get(g.stack).iter().filter_map(|&id| {
                let f = snap.frames.get(id as usize)?;
                frame_visible(snap.strings.get(f.name), snap.strings.get(f.filename))
                    .then(|| (Some(id), Some(frame_key(f))))
            }));
            path.reverse();
            if path.is_empty() {
                // Distinct keys for "no frames" and "no frames, before the trace".
                path.push((None, if g.before_trace { Some(BEFORE_TRACE_KEY) } else { None }));
            }
            if let Some(root) = nodes.get_mut(0) {
                root.bytes = root.bytes.saturating_add(g.bytes);
                root.count += g.count;
            }
            let mut cur = 0u32;
            for &(fid, key) in &path {
                let next = match index.get(&(cur, key)) {
                    Some(&n) => n,
                    None => {
                        let n = nodes.len() as u32;
                        let depth = nodes.get(cur as usize).map_or(0, |p| p.depth + 1);
                        nodes.push(TreeNode {
                            frame: fid,
                            before_trace: key == Some(BEFORE_TRACE_KEY),
                            parent: Some(cur),
                            depth,
                            bytes: 0,
                            count: 0,
                            children: Vec::new(),
                        });
                        if let Some(p) = nodes.get_mut(cur as usize) {
                            p.children.push(n);
                        }
                        index.insert((cur, key), n);
                        n
                    }
                };
                if let Some(node) = nodes.get_mut(next as usize) {
                    node.bytes = node.bytes.saturating_add(g.bytes);
                    node.count += g.count;
                }
                cur = next;
            }
            leaves.push(cur);
        }
        let sizes: Vec<u64> = nodes.iter().map(|n| n.bytes).collect();
        for n in &mut nodes {
            n.children.sort_by(|&a, &b| sizes.get(b as usize).cmp(&sizes.get(a as usize)).then(a.cmp(&b)));
        }
        (StackTree { nodes }, leaves)
    }

    /// Label of a node: the frame's label, `<no frames>`, or `all` for the root.
    pub fn label(&self, snap: &Snapshot, node: u32) -> String {
        match self.nodes.get(node as usize) {
            Some(TreeNode { frame: Some(f), .. }) => {
                snap.frames.get(*f as usize).map_or_else(String::new, |fr| super::frame_label(snap, fr))
            }
            Some(TreeNode { parent: None, .. }) => "all".into(),
            Some(TreeNode { before_trace: true, .. }) => super::BEFORE_TRACE_LABEL.into(),
            Some(_) => super::NO_FRAMES_LABEL.into(),
            None => String::new(),
        }
    }
}

/// The live set at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveSet {
    /// Device index.
    pub device: i64,
    /// The moment asked for.
    pub moment: Moment,
    /// The trace row after which the set is taken (`None`: before the first entry).
    pub row: Option<u32>,
    /// Time of that row.
    pub time_us: Option<i64>,
    /// Live requested bytes.
    pub total_bytes: u64,
    /// Live allocations.
    pub count: usize,
    /// Live timeline elements (indices into [`Replay::lives`] and `Layout::elements`).
    pub elements: Vec<u32>,
    /// By stack, largest first.
    pub by_stack: Vec<StackGroup>,
    /// By source line, largest first.
    pub by_site: Vec<SiteGroup>,
    /// By frame, outermost first.
    pub tree: StackTree,
}

/// The live set at a moment.
pub fn live_set(snap: &Snapshot, replay: &Replay, at: Moment) -> Result<LiveSet, AnalysisError> {
    let row = at.resolve(replay)?;
    let elements = replay.live_elements(row);
    Ok(group(snap, replay, at, row, elements))
}

/// Groups an arbitrary set of elements (for example the allocations a finding names).
pub fn group(snap: &Snapshot, replay: &Replay, moment: Moment, row: Option<u32>, elements: Vec<u32>) -> LiveSet {
    let mut by_stack_map: HashMap<(u32, bool), (u64, usize)> = HashMap::new();
    let mut total = 0u64;
    for &e in &elements {
        if let Some(l) = replay.lives.get(e as usize) {
            let g = by_stack_map.entry((l.stack, is_unrecorded(l))).or_default();
            g.0 = g.0.saturating_add(l.size_bytes);
            g.1 += 1;
            total = total.saturating_add(l.size_bytes);
        }
    }
    let mut v: Vec<((u32, bool), u64, usize)> = by_stack_map.into_iter().map(|(k, (b, c))| (k, b, c)).collect();
    sort_groups(&mut v);
    let by_stack: Vec<StackGroup> = v
        .into_iter()
        .map(|((stack, before_trace), bytes, count)| StackGroup { stack, before_trace, bytes, count })
        .collect();
    // Sites: merge stacks that share a site frame (by content).
    // (before the trace, site frame by content) -> (site frame id, bytes, count)
    type SiteTotals = HashMap<(bool, Option<FrameKey>), (Option<u32>, u64, usize)>;
    let mut site_map: SiteTotals = HashMap::new();
    for g in &by_stack {
        let f = site_frame(snap, g.stack);
        let key = f.and_then(|id| snap.frames.get(id as usize)).map(frame_key);
        let s = site_map.entry((g.before_trace, key)).or_insert((f, 0, 0));
        s.1 = s.1.saturating_add(g.bytes);
        s.2 += g.count;
    }
    let mut sites: Vec<SiteGroup> = site_map
        .into_iter()
        .map(|((before, _), (frame, bytes, count))| SiteGroup {
            frame,
            label: if before {
                super::BEFORE_TRACE_LABEL.to_string()
            } else {
                frame
                    .and_then(|id| snap.frames.get(id as usize))
                    .map_or_else(|| super::NO_FRAMES_LABEL.to_string(), |f| super::frame_label(snap, f))
            },
            bytes,
            count,
        })
        .collect();
    sites.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.label.cmp(&b.label)));
    let tree = StackTree::build(snap, &by_stack);
    LiveSet {
        device: replay.device,
        moment,
        row,
        time_us: time_of_row(snap, replay.device_pos, row),
        total_bytes: total,
        count: elements.len(),
        elements,
        by_stack,
        by_site: sites,
        tree,
    }
}

/// Label of a stack group: its site, or [`super::BEFORE_TRACE_LABEL`].
pub fn group_label(snap: &Snapshot, g: &StackGroup) -> String {
    if g.before_trace {
        super::BEFORE_TRACE_LABEL.to_string()
    } else {
        site_label(snap, g.stack)
    }
}

/// Frames of a stack as JSON objects, innermost first, visible frames only.
pub fn stack_json(snap: &Snapshot, stack: u32) -> Value {
    Value::Array(
        visible_frames(snap, stack)
            .map(|f| json!({"file": snap.strings.get(f.filename), "line": f.line, "name": snap.strings.get(f.name)}))
            .collect(),
    )
}

impl LiveSet {
    /// JSON for the page and `memviz live --json`. `top` limits the stack and line lists (0: all).
    pub fn to_json(&self, snap: &Snapshot, top: usize) -> Value {
        let lim = |n: usize| if top == 0 { n } else { n.min(top) };
        let stacks: Vec<Value> = self
            .by_stack
            .iter()
            .take(lim(self.by_stack.len()))
            .map(|g| json!({"stack": g.stack, "before_trace": g.before_trace, "site": group_label(snap, g), "bytes": g.bytes, "count": g.count, "frames": stack_json(snap, g.stack)}))
            .collect();
        let sites: Vec<Value> = self
            .by_site
            .iter()
            .take(lim(self.by_site.len()))
            .map(|s| {
                let f = s.frame.and_then(|id| snap.frames.get(id as usize));
                json!({
                    "label": s.label,
                    "file": f.map(|f| snap.strings.get(f.filename)),
                    "line": f.map(|f| f.line),
                    "function": f.map(|f| snap.strings.get(f.name)),
                    "bytes": s.bytes,
                    "count": s.count,
                })
            })
            .collect();
        let nodes: Vec<Value> = self
            .tree
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let f = n.frame.and_then(|id| snap.frames.get(id as usize));
                json!({
                    "id": i,
                    "parent": n.parent,
                    "depth": n.depth,
                    "label": self.tree.label(snap, i as u32),
                    "file": f.map(|f| snap.strings.get(f.filename)),
                    "line": f.map(|f| f.line),
                    "function": f.map(|f| snap.strings.get(f.name)),
                    "bytes": n.bytes,
                    "count": n.count,
                    "children": n.children,
                })
            })
            .collect();
        json!({
            "device": self.device,
            "moment": moment_text(self.moment),
            "entry": self.row,
            "time_us": self.time_us,
            "total_bytes": self.total_bytes,
            "count": self.count,
            "by_line": sites,
            "by_stack": stacks,
            "tree": nodes,
            "elements": self.elements,
        })
    }
}

/// `peak`, `start`, `end` or the entry number.
pub fn moment_text(m: Moment) -> String {
    match m {
        Moment::Peak => "peak".into(),
        Moment::Start => "start".into(),
        Moment::End => "end".into(),
        Moment::Entry(e) => e.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::analysis::test_util::fixture;

    // Figures from tests/gen/verify_live.py (plain pickle.load replay):
    //   python3 tests/gen/verify_live.py tests/data/real/resnet50_buggy.pickle peak
    #[test]
    fn peak_live_set_of_resnet50_buggy() {
        let snap = fixture("resnet50_buggy.pickle");
        let r = Replay::build(&snap, 0);
        let l = live_set(&snap, &r, Moment::Peak).expect("live set");
        assert_eq!(l.row, Some(2302));
        assert_eq!(l.total_bytes, 470_210_256);
        assert_eq!(l.count, 857);
        assert_eq!(l.tree.nodes[0].bytes, l.total_bytes);
        // The two frame-less groups are separate children of the root.
        let kids: Vec<(String, u64)> = l.tree.nodes[0]
            .children
            .iter()
            .map(|&c| (l.tree.label(&snap, c), l.tree.nodes[c as usize].bytes))
            .collect();
        assert_eq!(
            kids,
            vec![
                ("/home/user/project/train.py:305 (<module>)".to_string(), 186_719_816),
                ("<no frames>".to_string(), 145_840_288),
                ("<no frames, allocated before the trace>".to_string(), 137_650_152)
            ]
        );
        let got: Vec<(&str, u64, usize)> =
            l.by_site.iter().take(4).map(|s| (s.label.as_str(), s.bytes, s.count)).collect();
        assert_eq!(
            got,
            vec![
                ("<no frames>", 145_840_288, 167),
                ("<no frames, allocated before the trace>", 137_650_152, 324),
                ("torch/optim/sgd.py:455 (_multi_tensor_sgd)", 102_228_128, 161),
                ("torch/nn/modules/conv.py:548 (_conv_forward)", 43_954_176, 51),
            ]
        );
        let b: u64 = l.by_site.iter().map(|s| s.bytes).sum();
        assert_eq!(b, l.total_bytes);
    }

    // python3 tests/gen/verify_live.py tests/data/real/resnet50_fixed.pickle peak
    #[test]
    fn peak_live_set_of_resnet50_fixed_names_backward_nodes() {
        let snap = fixture("resnet50_fixed.pickle");
        let r = Replay::build(&snap, 0);
        let l = live_set(&snap, &r, Moment::Peak).expect("live set");
        assert_eq!((l.row, l.total_bytes, l.count), (Some(3133), 443_710_928, 682));
        let got: Vec<(&str, u64, usize)> =
            l.by_site.iter().take(5).map(|s| (s.label.as_str(), s.bytes, s.count)).collect();
        assert_eq!(
            got,
            vec![
                ("<no frames, allocated before the trace>", 137_650_152, 324),
                ("torch/optim/sgd.py:455 (_multi_tensor_sgd)", 102_228_128, 161),
                ("torch::autograd::generated::ConvolutionBackward0_apply_functional", 91_820_032, 26),
                ("torch/nn/modules/conv.py:548 (_conv_forward)", 36_126_720, 29),
                ("torch::autograd::generated::details::mm_mat1_backward", 33_554_432, 1),
            ]
        );
    }

    // python3 tests/gen/verify_live.py tests/data/real/growth_leak.pickle 17
    #[test]
    fn live_set_at_an_entry_and_out_of_range() {
        let snap = fixture("growth_leak.pickle");
        let r = Replay::build(&snap, 0);
        let l = live_set(&snap, &r, Moment::Entry(17)).expect("live set");
        assert_eq!((l.total_bytes, l.count), (128_133_164, 13));
        assert_eq!(l.total_bytes, r.live_at(Some(17)));
        assert!(live_set(&snap, &r, Moment::Entry(10_000)).is_err());
        let s = live_set(&snap, &r, Moment::Start).expect("start");
        assert_eq!(s.total_bytes, 85_131_304);
        assert_eq!(s.count, 7);
    }
}
