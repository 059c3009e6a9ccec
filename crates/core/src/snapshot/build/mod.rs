//! [`Builder`], which converts a decoded pickle into the model (interning strings, frames and
//! stacks, keeping unusual values as trees), and the top-level build with its consistency checks.

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

use crate::error::Error;
use crate::pickle::{Document, Value, WideColumns};
use crate::tree::{self, Tree};

use super::model::{Action, Device, Frame, FrameExtra, Snapshot, Warning, WarningKind};

mod host;
mod segments;
mod trace_rows;

use trace_rows::PendingColumns;

/// Accumulates warnings by kind.
#[derive(Default)]
struct Warnings {
    list: Vec<Warning>,
}

impl Warnings {
    fn add(&mut self, kind: WarningKind, example: impl FnOnce() -> String) {
        if let Some(w) = self.list.iter_mut().find(|w| w.kind == kind) {
            w.count += 1;
        } else {
            self.list.push(Warning { kind, count: 1, example: example() });
        }
    }
}

/// Reads an int field as u64 (negative or non-int values give `None`).
fn as_u64(v: Value) -> Option<u64> {
    match v {
        Value::Int(i) if i >= 0 => Some(i as u64),
        Value::UInt(u) => Some(u),
        Value::Bool(b) => Some(u64::from(b)),
        _ => None,
    }
}

fn as_i128(doc: &Document, v: Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(i128::from(i)),
        Value::UInt(u) => Some(i128::from(u)),
        Value::Bool(b) => Some(i128::from(b)),
        Value::BigInt(i) => match tree::from_value(doc, Value::BigInt(i), &mut |_| None) {
            Tree::Int(x) => Some(x),
            _ => None,
        },
        _ => None,
    }
}

/// The fixed columns of one trace row.
struct RowColumns {
    action: Action,
    addr: u64,
    size_bytes: u64,
    stream: u32,
    stack: u32,
}

/// Converts document values into the model, interning as it goes.
struct Builder<'d> {
    doc: &'d Document,
    snap: Snapshot,
    /// Document string id -> model string id.
    str_map: Vec<u32>,
    /// Document list id -> stack id.
    /// Document list id -> stack id (`u32::MAX`: not seen yet).
    stack_map: Vec<u32>,
    /// Document dict id -> frame id (`u32::MAX`: not seen yet).
    frame_map: Vec<u32>,
    /// Document string id -> action named by it (`None`: not seen yet).
    action_map: Vec<Option<Action>>,
    /// The last stream looked up: (raw value, index).
    last_stream: (i128, u32),
    /// Frames by content, for pickles without sharing (JSON, protocol 0).
    frame_by_content: HashMap<(u32, i64, u32), u32>,
    /// Stacks by content.
    stack_by_content: HashMap<Box<[u32]>, u32>,
    /// Stacks of shared frame lists by their span ([`Document::shared_list_key`]): copies of
    /// a frame list are interned once.
    stack_by_span: HashMap<u64, u32>,
    stream_map: HashMap<i128, u32>,
    pool_map: HashMap<(i128, i128), u32>,
    warnings: Warnings,
    scratch: Vec<u32>,
    /// Whether the 64-bit columns of a trace read as one run of records may be left for
    /// [`Snapshot::from_owned_document`] to move out of the document.
    may_defer_columns: bool,
    /// The trace whose 64-bit columns were left to be moved.
    deferred_columns: Option<PendingColumns>,
    /// Entries, blocks and tree nodes the model may still expand to. Shared (memoized) objects
    /// let a small file name one big list many times; this keeps the work proportional to the file.
    expansion_left: usize,
}

const MAX_REPORTED_KEYS: usize = 12;

/// Most device traces loaded; later ones are dropped with a warning.
pub const MAX_DEVICES: usize = 4096;

impl<'d> Builder<'d> {
    fn new(doc: &'d Document, may_defer_columns: bool) -> Self {
        let mut b = Builder {
            doc,
            may_defer_columns,
            deferred_columns: None,
            snap: Snapshot::default(),
            str_map: vec![u32::MAX; doc.str_count()],
            stack_map: vec![u32::MAX; doc.list_count()],
            frame_map: vec![u32::MAX; doc.dict_count()],
            action_map: vec![None; doc.str_count()],
            last_stream: (0, 0),
            frame_by_content: HashMap::default(),
            stack_by_content: HashMap::default(),
            stack_by_span: HashMap::default(),
            stream_map: HashMap::default(),
            pool_map: HashMap::default(),
            warnings: Warnings::default(),
            scratch: Vec::new(),
            expansion_left: 250_000 + doc.heap_bytes() / 2,
        };
        b.stream_index(0);
        b.snap.pools.push((0, 0));
        b.pool_map.insert((0, 0), 0);
        b
    }

    /// Takes `n` off the expansion budget; an error naming `path` once it is spent.
    fn spend(&mut self, n: usize, path: impl FnOnce() -> String) -> Result<(), Error> {
        match self.expansion_left.checked_sub(n) {
            Some(left) => {
                self.expansion_left = left;
                Ok(())
            }
            None => Err(Error::Schema {
                path: path(),
                reason: "shared references expand this file to far more entries than it holds (a crafted file?); refusing to expand it".into(),
            }),
        }
    }

    fn string(&mut self, v: Value) -> Option<u32> {
        let Value::Str(id) = v else { return None };
        if let Some(&m) = self.str_map.get(id as usize) {
            if m != u32::MAX {
                return Some(m);
            }
        }
        let m = self.snap.strings.intern(self.doc.str(id));
        if let Some(slot) = self.str_map.get_mut(id as usize) {
            *slot = m;
        }
        Some(m)
    }

    fn stream_index(&mut self, raw: i128) -> u32 {
        if self.last_stream.0 == raw && !self.snap.streams.is_empty() {
            return self.last_stream.1;
        }
        let i = match self.stream_map.get(&raw) {
            Some(&i) => i,
            None => {
                let i = self.snap.streams.len() as u32;
                self.snap.streams.push(raw);
                self.stream_map.insert(raw, i);
                i
            }
        };
        self.last_stream = (raw, i);
        i
    }

    /// The action a document string names.
    fn action_of(&mut self, id: u32) -> Action {
        if let Some(&Some(a)) = self.action_map.get(id as usize) {
            return a;
        }
        let a = Action::from_name(self.doc.str(id));
        if let Some(slot) = self.action_map.get_mut(id as usize) {
            *slot = Some(a);
        }
        a
    }

    fn pool_index(&mut self, v: Value) -> u32 {
        let items = self.doc.items(v);
        if items.len() != 2 {
            return 0;
        }
        let (Some(a), Some(b)) =
            (items.get(0).and_then(|x| as_i128(self.doc, x)), items.get(1).and_then(|x| as_i128(self.doc, x)))
        else {
            return 0;
        };
        if let Some(&i) = self.pool_map.get(&(a, b)) {
            return i;
        }
        let i = self.snap.pools.len() as u32;
        self.snap.pools.push((a, b));
        self.pool_map.insert((a, b), i);
        i
    }

    fn frame(&mut self, v: Value) -> u32 {
        let key = match v {
            Value::Dict(i) => Some(i),
            _ => None,
        };
        if let Some(k) = key {
            if let Some(&f) = self.frame_map.get(k as usize) {
                if f != u32::MAX {
                    return f;
                }
            }
        }
        let doc = self.doc;
        let mut filename = 0;
        let mut line = 0i64;
        let mut name = 0;
        let mut plain = true;
        let mut name_first = false;
        let mut n = 0;
        for (i, (k, x)) in doc.dict_iter(v).enumerate() {
            n += 1;
            match doc.as_str(k) {
                Some("filename") => match self.string(x) {
                    Some(s) => filename = s,
                    None => plain = false,
                },
                Some("line") => match x {
                    Value::Int(l) => line = l,
                    _ => plain = false,
                },
                Some("name") => {
                    if i == 0 {
                        name_first = true;
                    }
                    match self.string(x) {
                        Some(s) => name = s,
                        None => plain = false,
                    }
                }
                _ => plain = false,
            }
        }
        if n != 3 || !matches!(v, Value::Dict(_)) {
            plain = false;
        }
        let order_ok = {
            let keys: Vec<Option<&str>> = doc.dict_iter(v).map(|(k, _)| doc.as_str(k)).collect();
            keys == [Some("filename"), Some("line"), Some("name")]
                || keys == [Some("name"), Some("filename"), Some("line")]
        };
        let extra = if plain && order_ok {
            None
        } else {
            Some(Box::new(FrameExtra {
                dict: tree::from_value_budgeted(doc, v, &mut self.expansion_left, &mut |_| None),
            }))
        };
        let id = if extra.is_none() {
            let ck = (filename, line, name ^ if name_first { 0x8000_0000 } else { 0 });
            match self.frame_by_content.get(&ck) {
                Some(&f) => f,
                None => {
                    let f = self.snap.frames.len() as u32;
                    self.snap.frames.push(Frame { filename, line, name, extra: None, name_first });
                    self.frame_by_content.insert(ck, f);
                    f
                }
            }
        } else {
            let f = self.snap.frames.len() as u32;
            self.snap.frames.push(Frame { filename, line, name, extra, name_first });
            f
        };
        if let Some(slot) = key.and_then(|k| self.frame_map.get_mut(k as usize)) {
            *slot = id;
        }
        id
    }

    /// Interns a frame list; returns `None` when `v` is not a list of dicts.
    fn stack(&mut self, v: Value) -> Option<u32> {
        let Value::List(li) = v else { return None };
        if let Some(&s) = self.stack_map.get(li as usize) {
            if s != u32::MAX {
                return Some(s);
            }
        }
        let span = self.doc.shared_list_key(v);
        if let Some(&s) = span.and_then(|k| self.stack_by_span.get(&k)) {
            if let Some(slot) = self.stack_map.get_mut(li as usize) {
                *slot = s;
            }
            return Some(s);
        }
        let items = self.doc.items(v);
        if !items.all_dicts() {
            return None;
        }
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        for f in items {
            let id = self.frame(f);
            ids.push(id);
        }
        let s = match self.stack_by_content.get(ids.as_slice()) {
            Some(&s) => s,
            None => {
                let s = self.snap.stacks.push(&ids);
                if s != 0 {
                    self.stack_by_content.insert(ids.as_slice().into(), s);
                }
                s
            }
        };
        self.scratch = ids;
        if let Some(slot) = self.stack_map.get_mut(li as usize) {
            *slot = s;
        }
        if let Some(k) = span {
            self.stack_by_span.insert(k, s);
        }
        Some(s)
    }

    /// Stack of a `forward_frames` list of strings: each string becomes a frame's name.
    fn string_stack(&mut self, v: Value) -> Option<u32> {
        self.expansion_left = self.expansion_left.checked_sub(self.doc.items(v).len())?;
        let items = self.doc.items(v).to_vec();
        let mut ids = Vec::with_capacity(items.len());
        for x in items {
            let name = self.string(x)?;
            let ck = (0, 0, name | 0x4000_0000);
            let f = match self.frame_by_content.get(&ck) {
                Some(&f) => f,
                None => {
                    let f = self.snap.frames.len() as u32;
                    self.snap.frames.push(Frame { filename: 0, line: 0, name, extra: None, name_first: false });
                    self.frame_by_content.insert(ck, f);
                    f
                }
            };
            ids.push(f);
        }
        Some(self.snap.stacks.push(&ids))
    }

    fn tree_of(&mut self, v: Value) -> Tree {
        let doc = self.doc;
        let mut cache: Vec<(Value, u32)> = Vec::new();
        let start = self.expansion_left;
        let mut budget = start;
        let t = tree::from_value_budgeted(doc, v, &mut budget, &mut |x| {
            cache.push((x, 0));
            None
        });
        self.expansion_left = budget;
        // Frame lists inside the tree: intern them now so the tree can point at stacks.
        let lists: Vec<Value> = cache.into_iter().map(|(x, _)| x).collect();
        let mut ids: HashMap<u32, u32> = HashMap::default();
        for l in lists {
            if let Value::List(li) = l {
                if let Some(s) = self.stack(l) {
                    ids.insert(li, s);
                }
            }
        }
        if ids.is_empty() {
            return t;
        }
        let first = start - budget;
        let mut budget = start;
        let t = tree::from_value_budgeted(doc, v, &mut budget, &mut |x| match x {
            Value::List(li) => ids.get(&li).copied(),
            _ => None,
        });
        self.expansion_left = start.saturating_sub(first + (start - budget));
        t
    }
}

impl Snapshot {
    /// Builds the model from a decoded pickle.
    pub fn from_document(doc: &Document) -> Result<Snapshot, Error> {
        Ok(Builder::new(doc, false).build()?.finish(&doc.oddities, true))
    }

    /// Builds the model from a decoded pickle it may take columns from: a trace's `addr`,
    /// `size_bytes` and `time_us` columns are moved out of the document rather than copied.
    pub(crate) fn from_owned_document(doc: Document) -> Result<Snapshot, Error> {
        Ok(Snapshot::from_owned_document_unchecked(doc)?.check())
    }

    /// [`Snapshot::from_owned_document`] but for the consistency checks of the traces, which
    /// [`Unchecked::check`] runs (a caller that takes events between long steps runs them apart).
    pub(crate) fn from_owned_document_unchecked(mut doc: Document) -> Result<Unchecked, Error> {
        let mut built = Builder::new(&doc, true).build()?;
        if let Some(pending) = built.deferred_columns.take() {
            let wide =
                doc.take_record_columns(pending.run).unwrap_or_else(|| WideColumns::zeros(pending.run.len as usize));
            if let Some(d) = built.snap.devices.iter_mut().find(|d| d.index == pending.device_index) {
                pending.fill(&mut d.trace, wide);
            }
        }
        Ok(Unchecked(UncheckedInner::Built { built, oddities: std::mem::take(&mut doc.oddities) }))
    }
}

/// A model built but for the checks of its traces (which add warnings): [`Unchecked::check`]
/// runs them. Building in two steps gives the same model as building in one.
pub struct Unchecked(UncheckedInner);

enum UncheckedInner {
    Built { built: Built, oddities: Vec<String> },
    Checked(Snapshot),
}

impl Unchecked {
    /// A model that needs no more checks.
    pub(crate) fn checked(snap: Snapshot) -> Unchecked {
        Unchecked(UncheckedInner::Checked(snap))
    }

    /// Checks the traces and adds the reader's oddities as warnings: the model.
    pub fn check(self) -> Snapshot {
        match self.0 {
            UncheckedInner::Built { built, oddities } => built.finish(&oddities, true),
            UncheckedInner::Checked(snap) => snap,
        }
    }

    /// The model without the traces' checks, for a front end that shows none of their warnings
    /// (an alloc at a live address, a free of one never allocated): the page reads what it
    /// shows of them off its layout (`coverage`), and the checks were 9.5 ms of its 1M-entry
    /// load. The reader's oddities are still warnings; the model is [`Unchecked::check`]'s
    /// less those warnings.
    pub fn skip_trace_checks(self) -> Snapshot {
        match self.0 {
            UncheckedInner::Built { built, oddities } => built.finish(&oddities, false),
            UncheckedInner::Checked(snap) => snap,
        }
    }
}

/// A model built but for the checks that need every column.
struct Built {
    snap: Snapshot,
    warnings: Warnings,
    /// The trace whose 64-bit columns are still in the document.
    deferred_columns: Option<PendingColumns>,
}

impl Built {
    /// Checks the traces (where `check_traces`) and adds the reader's oddities as warnings.
    fn finish(mut self, oddities: &[String], check_traces: bool) -> Snapshot {
        if check_traces {
            self.check_consistency();
        }
        for o in oddities {
            self.warnings.add(WarningKind::Pickle, || o.clone());
        }
        self.snap.warnings = self.warnings.list;
        self.snap
    }

    fn check_consistency(&mut self) {
        for d in &self.snap.devices {
            let t = &d.trace;
            let mut live: HashMap<u64, usize> = HashMap::default();
            for row in 0..t.len() {
                let (Some(&a), Some(&addr)) = (t.action.get(row), t.addr.get(row)) else {
                    continue;
                };
                match a {
                    Action::Alloc => {
                        let already_live = live.insert(addr, row).is_some();
                        if already_live {
                            self.warnings.add(WarningKind::DoubleAlloc, || {
                                format!(
                                    "device {} entry {row}: alloc at 0x{addr:x}, which is already allocated",
                                    d.index
                                )
                            });
                        }
                    }
                    Action::FreeCompleted | Action::Free => {
                        let was_live = live.remove(&addr).is_some();
                        if !was_live {
                            self.warnings.add(WarningKind::FreeWithoutAlloc, || {
                                format!(
                                    "device {} entry {row}: free of 0x{addr:x} whose alloc is not in the trace (allocated before recording started, or the ring buffer wrapped)",
                                    d.index
                                )
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

impl Builder<'_> {
    /// Builds the whole model but for the checks that need every column ([`Built::finish`]).
    #[allow(clippy::too_many_lines)] // the top-level keys of a snapshot in turn; not split yet
    fn build(self) -> Result<Built, Error> {
        let mut b = self;
        let doc = b.doc;
        let root = doc.root();
        b.snap.source.protocol = doc.protocol;
        match root {
            Value::List(_) => {
                b.snap.source.bare_segment_list = true;
                b.segments(root, "segments", false)?;
            }
            Value::Dict(_) => {
                let keys: Vec<String> = doc
                    .dict_iter(root)
                    .map(|(k, _)| doc.as_str(k).map_or_else(|| format!("<{}>", Document::type_name(k)), str::to_owned))
                    .collect();
                b.snap.source.top_level_keys = keys.clone();
                let segs = doc.get(root, "segments");
                let traces = doc.get(root, "device_traces");
                if segs.is_none() && traces.is_none() {
                    // Keys come from the file: keep the message on one line and short.
                    let shown: Vec<String> = keys
                        .iter()
                        .take(MAX_REPORTED_KEYS)
                        .map(|k| {
                            let mut t: String = k.chars().take(40).flat_map(|c| c.escape_debug()).collect();
                            if k.chars().count() > 40 {
                                t.push_str("...");
                            }
                            t
                        })
                        .collect();
                    let more = if keys.len() > MAX_REPORTED_KEYS {
                        format!(" and {} more", keys.len() - MAX_REPORTED_KEYS)
                    } else {
                        String::new()
                    };
                    return Err(Error::NotASnapshot {
                        found: if keys.is_empty() {
                            "the file holds an empty dict".into()
                        } else {
                            format!(
                                "top-level keys are {}{more}; a snapshot has 'segments' and 'device_traces'",
                                shown.join(", ")
                            )
                        },
                    });
                }
                // Traces first: stream renumbering follows first appearance in traces, then segments.
                if let Some(tv) = traces {
                    b.snap.source.has_device_traces = true;
                    if !matches!(tv, Value::List(_)) {
                        return Err(Error::Schema {
                            path: "device_traces".into(),
                            reason: format!("{}, expected a list", Document::a_type_name(tv)),
                        });
                    }
                    let lists = doc.items(tv);
                    if lists.len() > MAX_DEVICES {
                        let n = lists.len();
                        b.warnings.add(WarningKind::Elided, || {
                            format!("device_traces has {n} lists, more than any machine has devices; only the first {MAX_DEVICES} were loaded")
                        });
                    }
                    for (i, dt) in lists.iter().take(MAX_DEVICES).enumerate() {
                        if !matches!(dt, Value::List(_)) {
                            return Err(Error::Schema {
                                path: format!("device_traces[{i}]"),
                                reason: format!("{}, expected a list", Document::a_type_name(dt)),
                            });
                        }
                        b.spend(doc.items(dt).len(), || format!("device_traces[{i}]"))?;
                        let trace = b.trace(dt, i as i64);
                        b.snap.devices.push(Device { index: i as i64, trace, ..Device::default() });
                    }
                }
                if let Some(sv) = segs {
                    if !matches!(sv, Value::List(_)) {
                        return Err(Error::Schema {
                            path: "segments".into(),
                            reason: format!("{}, expected a list", Document::a_type_name(sv)),
                        });
                    }
                    b.segments(sv, "segments", false)?;
                }
                if let Some(a) = doc.get(root, "allocator_settings") {
                    b.snap.allocator_settings = Some(tree::from_value(doc, a, &mut |_| None));
                }
                if let Some(a) = doc.get(root, "external_annotations") {
                    b.annotations(a);
                }
                // After the CUDA data, so its stream numbering does not depend on host data.
                let host_loaded = b.host_memory(root);
                for (k, v) in doc.dict_iter(root) {
                    let Some(name) = doc.as_str(k) else { continue };
                    let known =
                        matches!(name, "segments" | "device_traces" | "allocator_settings" | "external_annotations")
                            || host_loaded && matches!(name, "host_segments" | "host_traces");
                    if !known {
                        let t = b.tree_of(v);
                        b.snap.other_keys.push((name.to_owned(), t));
                    }
                }
            }
            other => {
                return Err(Error::NotASnapshot {
                    found: format!(
                        "the file holds {}, not a dict with 'segments' and 'device_traces'",
                        Document::a_type_name(other)
                    ),
                })
            }
        }
        // Devices that have segments but no trace list.
        let mut seg_devices: Vec<i64> = b.snap.segments.iter().filter(|s| !s.host).map(|s| s.device).collect();
        seg_devices.sort_unstable();
        seg_devices.dedup();
        for dv in seg_devices {
            if dv >= 0 && !b.snap.devices.iter().any(|d| d.index == dv) {
                b.snap.devices.push(Device { index: dv, ..Device::default() });
            }
        }
        // CUDA devices by index, then the pinned host memory.
        b.snap.devices.sort_by_key(|d| (d.is_pinned_host(), d.index));
        Ok(Built { snap: b.snap, warnings: b.warnings, deferred_columns: b.deferred_columns })
    }
}
