//! One way to group allocations, shared by the live set, growth, compare, the flame graph and
//! categories: by the **user's line** (the innermost source frame outside torch, Python's own
//! library and installed packages, see [`LibraryRule`]), the innermost **frame** (the site of
//! [`super::site_frame`]), the **operator** (the innermost torch API frame), the **metadata** set
//! with `torch.cuda.memory._set_memory_metadata` (the whole text, or one key of JSON text), the
//! **category** ([`super::categories`]) or the `record_function` **annotation** region the
//! allocation was made in.
//!
//! A [`Grouping`] gives every lifetime of a [`Replay`] one group (built in one pass, O(n) plus
//! the category inference when asked for); allocations without a value share a group per reason
//! ("allocated in autograd's backward thread: metadata is per thread").

use std::collections::HashMap;

use serde_json::{json, Value};

use super::{
    annotations, categories, frame_label, is_source_frame, is_unrecorded, visible_frames, AnalysisError, Life, Replay,
};
use crate::snapshot::{Frame, Snapshot};
use crate::tree::Tree;

/// What allocations are grouped by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum GroupBy {
    /// The innermost source frame of the user's code.
    UserLine,
    /// The innermost frame (the site: today's "source line").
    Frame,
    /// The innermost torch API frame (`linear`, `cross_entropy`, `AddmmBackward0`).
    Op,
    /// The user metadata: the whole text (`None`) or the value of one key of JSON text.
    Metadata(Option<String>),
    /// The category (recorded by the profiler, or inferred).
    Category,
    /// The innermost `record_function` region open when the allocation was made.
    Annotation,
}

impl GroupBy {
    /// Every kind, as the page's menu lists them (metadata as the whole text).
    pub const MENU: [GroupBy; 6] = [
        GroupBy::UserLine,
        GroupBy::Frame,
        GroupBy::Op,
        GroupBy::Metadata(None),
        GroupBy::Category,
        GroupBy::Annotation,
    ];

    /// Reads `user-line`, `frame`, `op`, `metadata`, `metadata:KEY`, `category` or `annotation`.
    pub fn parse(s: &str) -> Result<GroupBy, AnalysisError> {
        let t = s.trim();
        let bad = || {
            AnalysisError::BadGroupBy(format!(
                "'{s}' is not a grouping: use user-line, frame, op, metadata, metadata:KEY, category or annotation"
            ))
        };
        Ok(match t {
            "user-line" | "user" | "line" => GroupBy::UserLine,
            "frame" => GroupBy::Frame,
            "op" | "operator" => GroupBy::Op,
            "metadata" => GroupBy::Metadata(None),
            "category" => GroupBy::Category,
            "annotation" => GroupBy::Annotation,
            _ => match t.strip_prefix("metadata:") {
                Some(key) if !key.is_empty() => GroupBy::Metadata(Some(key.to_string())),
                _ => return Err(bad()),
            },
        })
    }

    /// The text [`GroupBy::parse`] reads back (`metadata:phase`).
    pub fn slug(&self) -> String {
        match self {
            GroupBy::UserLine => "user-line".into(),
            GroupBy::Frame => "frame".into(),
            GroupBy::Op => "op".into(),
            GroupBy::Metadata(None) => "metadata".into(),
            GroupBy::Metadata(Some(k)) => format!("metadata:{k}"),
            GroupBy::Category => "category".into(),
            GroupBy::Annotation => "annotation".into(),
        }
    }

    /// A heading in words (`your line`, `metadata "phase"`).
    pub fn title(&self) -> String {
        match self {
            GroupBy::UserLine => "your line".into(),
            GroupBy::Frame => "innermost frame".into(),
            GroupBy::Op => "operator".into(),
            GroupBy::Metadata(None) => "metadata".into(),
            GroupBy::Metadata(Some(k)) => format!("metadata \"{k}\""),
            GroupBy::Category => "category".into(),
            GroupBy::Annotation => "annotation".into(),
        }
    }

    /// Whether the group of an allocation depends only on its stack.
    fn by_stack(&self) -> bool {
        matches!(self, GroupBy::UserLine | GroupBy::Frame | GroupBy::Op)
    }
}

/// Which source files are not the user's: a file whose path contains any marker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryRule {
    /// Path fragments of library files.
    pub markers: Vec<String>,
}

/// Torch, Python's own library, installed packages, generated code and the interpreter's frozen
/// modules.
pub const DEFAULT_LIBRARY_MARKERS: [&str; 8] = [
    "site-packages/",
    "dist-packages/",
    "/torch/",
    "/lib/python3",
    "/lib/python2",
    "torchinductor_",
    "<frozen ",
    "<eval_with_key>",
];

impl Default for LibraryRule {
    fn default() -> LibraryRule {
        LibraryRule { markers: DEFAULT_LIBRARY_MARKERS.iter().map(|s| s.to_string()).collect() }
    }
}

impl LibraryRule {
    /// The default markers plus `extra` (`--library PATH_FRAGMENT`).
    pub fn with_extra(extra: &[String]) -> LibraryRule {
        let mut r = LibraryRule::default();
        r.markers.extend(extra.iter().filter(|m| !m.is_empty()).cloned());
        r
    }

    /// Whether a file belongs to a library.
    pub fn is_library(&self, path: &str) -> bool {
        self.markers.iter().any(|m| path.contains(m.as_str()))
    }
}

/// The value of a group, or why its allocations have none.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupLabel {
    /// The value (`forward`, `train.py:325 (step)`).
    pub value: Option<String>,
    /// Why there is no value, when known.
    pub reason: Option<String>,
}

impl GroupLabel {
    /// The value, else `<reason>`, else `<none>`.
    pub fn text(&self) -> String {
        match (&self.value, &self.reason) {
            (Some(v), _) => v.clone(),
            (None, Some(r)) => format!("<{r}>"),
            (None, None) => "<none>".into(),
        }
    }
}

/// Every lifetime's group under one [`GroupBy`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grouping {
    /// What the groups are.
    pub by: GroupBy,
    /// The groups, by id.
    pub labels: Vec<GroupLabel>,
    /// The group of each lifetime ([`Replay::lives`] index, so also the layout's element index).
    pub of_life: Vec<u32>,
}

/// Bytes and allocations of one group within a set of allocations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupTotal {
    /// Group id ([`Grouping::labels`]).
    pub group: u32,
    /// Requested bytes.
    pub bytes: u64,
    /// Allocations.
    pub allocations: usize,
}

const BEFORE_TRACE: &str = "allocated before the trace";
const NO_FRAMES: &str = "recorded without frames";
const BACKWARD_THREAD: &str = "allocated in autograd's backward thread: metadata is per thread";

/// Whether a stack was recorded in autograd's backward pass (its engine or a generated node).
fn stack_in_backward(snap: &Snapshot, stack: u32) -> bool {
    snap.stack_frames(stack).any(|f| {
        let n = snap.strings.get(f.name);
        n.contains("torch::autograd::Engine") || n.contains("autograd::generated::")
    })
}

/// The user's frame of a stack: the innermost visible source frame outside libraries.
pub fn user_frame<'a>(snap: &'a Snapshot, stack: u32, rule: &LibraryRule) -> Option<&'a Frame> {
    visible_frames(snap, stack).find(|f| is_source_frame(f) && !rule.is_library(snap.strings.get(f.filename)))
}

/// The operator of a stack: the innermost autograd node or dispatched op of the C++ frames, else
/// the innermost torch Python frame (`torch/nn/functional.py`'s function, `torch/nn/modules`'s
/// module file, `torch/optim`'s optimizer file, else the function's name).
pub fn op_of_stack(snap: &Snapshot, stack: u32) -> Option<String> {
    for f in visible_frames(snap, stack) {
        let name = snap.strings.get(f.name);
        if is_source_frame(f) {
            let file = snap.strings.get(f.filename);
            let Some(i) = file.rfind("torch/") else { continue };
            let rel = file.get(i + "torch/".len()..).unwrap_or("");
            let stem = rel.rsplit('/').next().unwrap_or(rel).trim_end_matches(".py");
            if rel.starts_with("nn/modules/") || rel.starts_with("optim/") {
                if stem != "module" && stem != "container" && stem != "optimizer" {
                    return Some(stem.to_string());
                }
                continue;
            }
            if matches!(name, "_call_impl" | "_wrapped_call_impl" | "wrapper" | "_fn" | "inner") {
                continue;
            }
            return Some(name.trim_start_matches('_').to_string());
        }
        if let Some(i) = name.find("autograd::generated::") {
            let rest = name.get(i + "autograd::generated::".len()..).unwrap_or("");
            let rest = rest.strip_prefix("details::").unwrap_or(rest);
            let node: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !node.is_empty() {
                return Some(node);
            }
        }
        if let Some(rest) = name.strip_prefix("at::_ops::") {
            let op: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !op.is_empty() {
                return Some(op);
            }
        }
    }
    None
}

/// The text of a JSON value as a group value: strings bare, anything else as JSON.
pub(crate) fn json_value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Most metadata keys offered as groupings.
pub const MAX_METADATA_KEYS: usize = 16;

/// The keys of the JSON-object metadata of a device's trace (text or dict), in order of first
/// appearance, at most [`MAX_METADATA_KEYS`]. Each distinct text is parsed once.
pub fn metadata_keys(snap: &Snapshot, device_pos: usize) -> Vec<String> {
    let Some(t) = snap.devices.get(device_pos).map(|d| &d.trace) else { return Vec::new() };
    let mut seen_text: std::collections::HashSet<u32> = std::collections::HashSet::new();
    let mut keys: Vec<String> = Vec::new();
    for row in 0..t.len() {
        let obj = match t.user_metadata.get(row).filter(|&id| id != 0) {
            Some(id) => {
                if !seen_text.insert(id) {
                    continue;
                }
                serde_json::from_str::<Value>(snap.strings.get(id)).ok()
            }
            None if t.raw_at(row).and_then(|r| r.get("user_metadata")).is_some() => {
                metadata_at(snap, device_pos, row as u32).and_then(|m| m.1)
            }
            None => None,
        };
        if let Some(Value::Object(o)) = obj {
            for k in o.keys() {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        if keys.len() >= MAX_METADATA_KEYS {
            keys.truncate(MAX_METADATA_KEYS);
            break;
        }
    }
    keys
}

/// The groupings offered for a device: [`GroupBy::MENU`], then one per metadata key.
pub fn choices(snap: &Snapshot, device_pos: usize) -> Vec<GroupBy> {
    let mut v = GroupBy::MENU.to_vec();
    v.extend(metadata_keys(snap, device_pos).into_iter().map(|k| GroupBy::Metadata(Some(k))));
    v
}

/// Interns group labels while a grouping is built.
#[derive(Default)]
struct Labels {
    list: Vec<GroupLabel>,
    index: HashMap<GroupLabel, u32>,
}

impl Labels {
    fn id(&mut self, label: GroupLabel) -> u32 {
        if let Some(&id) = self.index.get(&label) {
            return id;
        }
        let id = self.list.len() as u32;
        self.index.insert(label.clone(), id);
        self.list.push(label);
        id
    }

    fn value(&mut self, v: String) -> u32 {
        self.id(GroupLabel { value: Some(v), reason: None })
    }

    fn none(&mut self, reason: &str) -> u32 {
        self.id(GroupLabel { value: None, reason: Some(reason.to_string()) })
    }
}

impl Grouping {
    /// Groups every lifetime of `replay` (made from `snap`).
    pub fn build(snap: &Snapshot, replay: &Replay, by: &GroupBy, rule: &LibraryRule) -> Grouping {
        let mut labels = Labels::default();
        let of_life = if by.by_stack() {
            by_stack(snap, replay, by, rule, &mut labels)
        } else {
            match by {
                GroupBy::Metadata(key) => by_metadata(snap, replay, key.as_deref(), &mut labels),
                GroupBy::Category => by_category(snap, replay, &mut labels),
                _ => by_annotation(snap, replay, &mut labels),
            }
        };
        Grouping { by: by.clone(), labels: labels.list, of_life }
    }

    /// The label of a group.
    pub fn label(&self, group: u32) -> String {
        self.labels.get(group as usize).map_or_else(String::new, GroupLabel::text)
    }

    /// The group whose text ([`Grouping::label`]) is `label`: how a group of one file or table
    /// is found in another.
    pub fn id_of(&self, label: &str) -> Option<u32> {
        (0..self.labels.len() as u32).find(|&id| self.label(id) == label)
    }

    /// The group of a lifetime.
    pub fn group_of(&self, life: u32) -> Option<u32> {
        self.of_life.get(life as usize).copied()
    }

    /// Bytes and allocations per group over `elements` (lifetime indices), largest first, ties by
    /// label.
    pub fn totals(&self, replay: &Replay, elements: &[u32]) -> Vec<GroupTotal> {
        let mut sums: Vec<(u64, usize)> = vec![(0, 0); self.labels.len()];
        for &e in elements {
            let (Some(l), Some(&g)) = (replay.lives.get(e as usize), self.of_life.get(e as usize)) else { continue };
            if let Some(s) = sums.get_mut(g as usize) {
                s.0 = s.0.saturating_add(l.size_bytes);
                s.1 += 1;
            }
        }
        let mut out: Vec<GroupTotal> = sums
            .into_iter()
            .enumerate()
            .filter(|(_, (_, n))| *n > 0)
            .map(|(g, (bytes, allocations))| GroupTotal { group: g as u32, bytes, allocations })
            .collect();
        out.sort_by(|a, b| {
            b.bytes
                .cmp(&a.bytes)
                .then_with(|| self.label(a.group).cmp(&self.label(b.group)))
                .then(a.group.cmp(&b.group))
        });
        out
    }

    /// The lifetimes of one group among `elements`, in the order given.
    pub fn elements_of(&self, group: u32, elements: &[u32]) -> Vec<u32> {
        elements.iter().copied().filter(|&e| self.of_life.get(e as usize) == Some(&group)).collect()
    }

    /// The lifetimes of one group, ascending.
    pub fn all_elements_of(&self, group: u32) -> Vec<u32> {
        (0..self.of_life.len() as u32).filter(|&e| self.of_life.get(e as usize) == Some(&group)).collect()
    }

    /// Colours for the `max` groups that allocate the most bytes over the whole trace: the colour
    /// index of every group (`max` for the others) and the legend (label and bytes allocated of
    /// each coloured group, then `other` when there are others).
    pub fn colours(&self, replay: &Replay, max: usize) -> (Vec<u8>, Vec<(String, u64)>) {
        let all: Vec<u32> = (0..replay.lives.len() as u32).collect();
        let ranked = self.totals(replay, &all);
        let other = max.min(usize::from(u8::MAX)) as u8;
        let mut colour = vec![other; self.labels.len()];
        let mut legend = Vec::new();
        for (i, t) in ranked.iter().take(usize::from(other)).enumerate() {
            if let Some(c) = colour.get_mut(t.group as usize) {
                *c = i as u8;
            }
            legend.push((self.label(t.group), t.bytes));
        }
        let rest: u64 = ranked.iter().skip(usize::from(other)).map(|t| t.bytes).sum();
        if ranked.len() > usize::from(other) {
            legend.push(("other".to_string(), rest));
        }
        (colour, legend)
    }

    /// `{"by": ..., "groups": [{"value", "reason", "bytes", "allocations"}, ...]}`; `top` limits the
    /// list (0: all).
    pub fn totals_json(&self, totals: &[GroupTotal], top: usize) -> Value {
        let n = if top == 0 { totals.len() } else { totals.len().min(top) };
        let groups: Vec<Value> = totals
            .iter()
            .take(n)
            .map(|t| {
                let l = self.labels.get(t.group as usize);
                json!({
                    "value": l.and_then(|l| l.value.clone()),
                    "reason": l.and_then(|l| l.reason.clone()),
                    "bytes": t.bytes,
                    "allocations": t.allocations,
                })
            })
            .collect();
        json!({"by": self.by.slug(), "groups": groups})
    }
}

fn by_stack(snap: &Snapshot, replay: &Replay, by: &GroupBy, rule: &LibraryRule, labels: &mut Labels) -> Vec<u32> {
    let mut cache: HashMap<u32, u32> = HashMap::new();
    let mut out = Vec::with_capacity(replay.lives.len());
    for l in &replay.lives {
        if is_unrecorded(l) {
            out.push(labels.none(BEFORE_TRACE));
            continue;
        }
        if let Some(&g) = cache.get(&l.stack) {
            out.push(g);
            continue;
        }
        let g = if l.stack == 0 {
            labels.none(NO_FRAMES)
        } else {
            match by {
                GroupBy::UserLine => match user_frame(snap, l.stack, rule) {
                    Some(f) => labels.value(frame_label(snap, f)),
                    None if stack_in_backward(snap, l.stack) => {
                        labels.none("autograd's backward pass: no frame of your code")
                    }
                    None => labels.none("no frame outside libraries"),
                },
                GroupBy::Op => match op_of_stack(snap, l.stack) {
                    Some(op) => labels.value(op),
                    None => labels.none("no torch frame"),
                },
                _ => match super::site_frame(snap, l.stack).and_then(|id| snap.frames.get(id as usize)) {
                    Some(f) => labels.value(frame_label(snap, f)),
                    None => labels.none(NO_FRAMES),
                },
            }
        };
        cache.insert(l.stack, g);
        out.push(g);
    }
    out
}

/// Why an allocation made with empty metadata has none.
fn no_metadata_reason(snap: &Snapshot, l: &Life, any_metadata: bool) -> &'static str {
    if !any_metadata {
        "no metadata recorded (torch.cuda.memory._set_memory_metadata, PyTorch 2.10+)"
    } else if l.stack == 0 || stack_in_backward(snap, l.stack) {
        BACKWARD_THREAD
    } else {
        "no metadata set"
    }
}

/// The metadata of a row as JSON: a string as written (JSON text parsed when it is an object), a
/// dict (metadata written as a Python dict) as an object of its string keys. `None`: empty.
pub(crate) fn metadata_at(snap: &Snapshot, device_pos: usize, row: u32) -> Option<(String, Option<Value>)> {
    let text = annotations::text_of(snap, device_pos, row as usize);
    if !text.is_empty() {
        let parsed = serde_json::from_str::<Value>(&text).ok().filter(Value::is_object);
        return Some((text, parsed));
    }
    let t = &snap.devices.get(device_pos)?.trace;
    let Some(Tree::Dict(items)) = t.raw_at(row as usize).and_then(|r| r.get("user_metadata")) else { return None };
    if items.is_empty() {
        return None;
    }
    let mut obj = serde_json::Map::new();
    for (k, v) in items {
        let Tree::Str(k) = k else { continue };
        let v = match v {
            Tree::Str(s) => Value::String(s.clone()),
            Tree::Int(i) => i64::try_from(*i).map_or_else(|_| Value::String(i.to_string()), Value::from),
            Tree::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Tree::Bool(b) => Value::Bool(*b),
            Tree::None => Value::Null,
            other => Value::String(crate::format::py_repr(snap, other)),
        };
        obj.insert(k.clone(), v);
    }
    let v = Value::Object(obj);
    Some((v.to_string(), Some(v)))
}

fn by_metadata(snap: &Snapshot, replay: &Replay, key: Option<&str>, labels: &mut Labels) -> Vec<u32> {
    let pos = replay.device_pos;
    let metas: Vec<Option<(String, Option<Value>)>> =
        replay.lives.iter().map(|l| l.alloc_row.and_then(|r| metadata_at(snap, pos, r))).collect();
    let any_metadata = metas.iter().any(Option::is_some);
    let missing_key = key.map(|k| format!("metadata without \"{k}\""));
    let mut out = Vec::with_capacity(replay.lives.len());
    for (l, meta) in replay.lives.iter().zip(metas) {
        let g = match (l.alloc_row, meta) {
            (None, _) => labels.none(BEFORE_TRACE),
            (Some(_), None) => labels.none(no_metadata_reason(snap, l, any_metadata)),
            (Some(_), Some((text, parsed))) => match key {
                None => labels.value(text),
                Some(k) => match parsed.as_ref().and_then(|v| v.get(k)) {
                    Some(v) => labels.value(json_value_text(v)),
                    None => labels.none(missing_key.as_deref().unwrap_or("")),
                },
            },
        };
        out.push(g);
    }
    out
}

fn by_category(snap: &Snapshot, replay: &Replay, labels: &mut Labels) -> Vec<u32> {
    let its = super::growth::find_iterations(snap, replay);
    let cats = categories::infer(snap, replay, &its, 2);
    cats.per_element.iter().map(|c| labels.value(c.name().to_string())).collect()
}

fn by_annotation(snap: &Snapshot, replay: &Replay, labels: &mut Labels) -> Vec<u32> {
    let Some(dev) = snap.devices.get(replay.device_pos) else { return Vec::new() };
    let t = &dev.trace;
    // START and END events of this device, in time order (START first at equal times).
    let mut events: Vec<(i64, bool, u32)> = snap
        .annotations
        .iter()
        .filter(|a| a.device == dev.index)
        .filter_map(|a| Some((a.time_us?, !a.start, a.name)))
        .collect();
    events.sort_unstable();
    // Lifetimes made in the trace, in time order.
    let mut order: Vec<(i64, u32)> = replay
        .lives
        .iter()
        .enumerate()
        .filter_map(|(i, l)| Some((t.time_us_at(l.alloc_row? as usize)?, i as u32)))
        .collect();
    order.sort_unstable();
    let no_region =
        if events.is_empty() { "no record_function regions recorded" } else { "outside every record_function region" };
    let mut out: Vec<u32> = replay
        .lives
        .iter()
        .map(|l| if l.alloc_row.is_none() { labels.none(BEFORE_TRACE) } else { labels.none("entries without times") })
        .collect();
    let mut open: Vec<u32> = Vec::new();
    let mut next = 0usize;
    for (time_us, life) in order {
        while let Some(&(et, end, name)) = events.get(next) {
            if et > time_us {
                break;
            }
            if end {
                if let Some(i) = open.iter().rposition(|&n| n == name) {
                    open.remove(i);
                }
            } else {
                open.push(name);
            }
            next += 1;
        }
        let g = match open.last() {
            Some(&name) => labels.value(snap.strings.get(name).to_string()),
            None => labels.none(no_region),
        };
        if let Some(slot) = out.get_mut(life as usize) {
            *slot = g;
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
#[path = "grouping_tests.rs"]
mod tests;
