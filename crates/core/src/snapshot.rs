//! The compact snapshot model: columnar traces per device, interned frames and stacks, segments
//! and blocks with every field, and the schema-free parts kept as [`Tree`]s.
//!
//! Built from a decoded pickle ([`Snapshot::from_document`]) or JSON. Every format variant PyTorch
//! has written loads: a bare list of segments, legacy blocks with `history`, entries without
//! `time_us` or `frames`, OOM entries without `addr`, `user_defined` and merged `free` actions,
//! expandable segments, addresses at or above 2^63, profile_plot pickles with `category`, several
//! devices. Inconsistent traces load with [`Warning`]s.

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

use crate::error::Error;
use crate::pickle::{
    Document, Items, RecordColumns, RecordField, RecordRun, TraceRecord, Value, WideColumns,
};
use crate::tree::{self, Tree};

mod wire;

/// What a trace entry records. See the reference study, section 1.5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Action {
    /// A block handed to the caller; `size` is the requested size.
    Alloc,
    /// The user freed the block.
    FreeRequested,
    /// The block went back to the cache.
    FreeCompleted,
    /// Historical single free (also what viewers make of an adjacent requested+completed pair).
    Free,
    /// cudaMalloc of a new segment.
    SegmentAlloc,
    /// cudaFree of a segment.
    SegmentFree,
    /// Pages mapped into an expandable segment.
    SegmentMap,
    /// Pages unmapped from an expandable segment.
    SegmentUnmap,
    /// A call to `snapshot()`.
    Snapshot,
    /// The allocator failed a request.
    Oom,
    /// Metadata attached to a live allocation.
    Annotate,
    /// Historical record_function marker.
    UserDefined,
    /// An action this version does not know.
    Unknown,
}

impl Action {
    /// The action for PyTorch's name.
    pub fn from_name(s: &str) -> Action {
        match s {
            "alloc" => Action::Alloc,
            "free_requested" => Action::FreeRequested,
            "free_completed" => Action::FreeCompleted,
            "free" => Action::Free,
            "segment_alloc" => Action::SegmentAlloc,
            "segment_free" => Action::SegmentFree,
            "segment_map" => Action::SegmentMap,
            "segment_unmap" => Action::SegmentUnmap,
            "snapshot" => Action::Snapshot,
            "oom" => Action::Oom,
            "annotate" => Action::Annotate,
            "user_defined" => Action::UserDefined,
            _ => Action::Unknown,
        }
    }

    /// PyTorch's name for the action.
    pub fn name(self) -> &'static str {
        match self {
            Action::Alloc => "alloc",
            Action::FreeRequested => "free_requested",
            Action::FreeCompleted => "free_completed",
            Action::Free => "free",
            Action::SegmentAlloc => "segment_alloc",
            Action::SegmentFree => "segment_free",
            Action::SegmentMap => "segment_map",
            Action::SegmentUnmap => "segment_unmap",
            Action::Snapshot => "snapshot",
            Action::Oom => "oom",
            Action::Annotate => "annotate",
            Action::UserDefined => "user_defined",
            Action::Unknown => "unknown",
        }
    }

    /// All known actions, in a stable order (for counts).
    pub const ALL: [Action; 13] = [
        Action::Alloc,
        Action::FreeRequested,
        Action::FreeCompleted,
        Action::Free,
        Action::SegmentAlloc,
        Action::SegmentFree,
        Action::SegmentMap,
        Action::SegmentUnmap,
        Action::Snapshot,
        Action::Oom,
        Action::Annotate,
        Action::UserDefined,
        Action::Unknown,
    ];
}

/// State of a block in the final segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// Held by a tensor.
    ActiveAllocated,
    /// Freed by the user, waiting on other streams (record_stream).
    ActivePendingFree,
    /// Free, cached.
    Inactive,
    /// Some other string.
    Other,
}

/// One frame of a stack.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Source file (full path as recorded).
    pub filename: u32,
    /// Line number.
    pub line: i64,
    /// Function name.
    pub name: u32,
    /// Key order and extra fields (FX fields), for frames that are not plain `{filename, line, name}`.
    pub extra: Option<Box<FrameExtra>>,
    /// Whether the frame's keys came in PyTorch 2.11's order (`name`, `filename`, `line`).
    pub name_first: bool,
}

/// Fields of a frame beyond filename, line and name, with the original key order.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameExtra {
    /// The whole frame dict as written (for repr and FX fields).
    pub dict: Tree,
}

/// A segment of the final allocator state.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Device index.
    pub device: i64,
    /// Start address.
    pub address: u64,
    /// Bytes in the segment.
    pub total_size: u64,
    /// `allocated_size` as written.
    pub allocated_size: u64,
    /// `active_size` as written.
    pub active_size: u64,
    /// `requested_size` as written.
    pub requested_size: u64,
    /// Stream index into [`Snapshot::streams`].
    pub stream: u32,
    /// `segment_type` ("small", "large", ...), string id.
    pub segment_type: u32,
    /// Pool index into [`Snapshot::pools`] (0 = default pool `(0, 0)` or none).
    pub pool: u32,
    /// Whether this is (a mapped range of) an expandable segment.
    pub is_expandable: bool,
    /// Stack of the cudaMalloc that created the segment.
    pub stack: u32,
    /// Blocks: `blocks[first_block .. first_block + block_count]`.
    pub first_block: u32,
    /// Number of blocks.
    pub block_count: u32,
}

/// A block of a final segment.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Address: the segment's address plus the sizes of earlier blocks (as viewers compute it).
    pub address: u64,
    /// Rounded size.
    pub size: u64,
    /// Requested size (legacy: first history entry's `real_size`, or `size`).
    pub requested_size: u64,
    /// State.
    pub state: BlockState,
    /// Allocation stack.
    pub stack: u32,
}

/// A record_function annotation (`external_annotations`).
#[derive(Clone, Debug, PartialEq)]
pub struct Annotation {
    /// Region name, string id.
    pub name: u32,
    /// True for START, false for END.
    pub start: bool,
    /// Device index.
    pub device: i64,
    /// Time, µs since the epoch.
    pub time_us: Option<i64>,
}

/// A column that stays empty while every value equals its default.
#[derive(Clone, Debug, Default)]
pub struct SparseColumn<T: Copy + PartialEq> {
    default: Option<T>,
    values: Vec<T>,
}

impl<T: Copy + PartialEq> SparseColumn<T> {
    /// Sets row `row` (rows are pushed in order); rows before the first value get `absent`.
    fn push(&mut self, row: usize, v: T, absent: T) {
        match self.default {
            None if row == 0 => {
                self.default = Some(v);
            }
            None => {
                self.default = Some(absent);
                if v != absent {
                    self.values.reserve(row + 1);
                    self.values.resize(row, absent);
                    self.values.push(v);
                }
            }
            Some(d) => {
                if self.values.is_empty() {
                    if v != d {
                        self.values.reserve(row + 1);
                        self.values.resize(row, d);
                        self.values.push(v);
                    }
                } else {
                    self.values.push(v);
                }
            }
        }
    }

    /// The column holding `values` (one per row): the same column as pushing them one by one.
    fn from_rows(values: Vec<T>) -> Self {
        let Some(&first) = values.first() else {
            return SparseColumn {
                default: None,
                values,
            };
        };
        if values.iter().all(|&v| v == first) {
            return SparseColumn {
                default: Some(first),
                values: Vec::new(),
            };
        }
        let mut values = values;
        values.shrink_to_fit();
        SparseColumn {
            default: Some(first),
            values,
        }
    }

    fn finish(&mut self, rows: usize) {
        if !self.values.is_empty() {
            if let Some(d) = self.default {
                self.values.resize(rows, d);
            }
        }
    }

    /// The value at a row (the default when the column was never materialized).
    pub fn get(&self, row: usize) -> Option<T> {
        if self.values.is_empty() {
            self.default
        } else {
            self.values.get(row).copied()
        }
    }

    /// Whether any row had a value.
    pub fn is_present(&self) -> bool {
        self.default.is_some()
    }

    fn heap_bytes(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<T>()
    }
}

/// The recorded trace of one device, one column per field.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// What happened.
    pub action: Vec<Action>,
    /// Address (for `oom`: 0; see `device_free`).
    pub addr: Vec<u64>,
    /// Size in bytes (requested size for alloc/free; rounded for oom; segment bytes for segment events).
    pub size_bytes: Vec<u64>,
    /// Stream index into [`Snapshot::streams`].
    pub stream: Vec<u32>,
    /// Stack id into [`Snapshot::stacks`] (0 = no frames).
    pub stack: Vec<u32>,
    /// Time in µs since the epoch (`None` where absent).
    pub time_us: SparseColumn<i64>,
    /// Pool index (0 = none or default).
    pub pool: SparseColumn<u32>,
    /// `user_metadata` string id (0 = "").
    pub user_metadata: SparseColumn<u32>,
    /// `compile_context` string id.
    pub compile_context: SparseColumn<u32>,
    /// profile_plot `category` string id (0 = none).
    pub category: SparseColumn<u32>,
    /// `device_free` of `oom` entries: (row, bytes).
    pub device_free: Vec<(u32, u64)>,
    /// `forward_frames` of entries that have them: (row, stack id).
    pub forward_stack: Vec<(u32, u32)>,
    /// The whole entry, for entries that are printed verbatim or whose fields had odd types.
    pub raw: Vec<(u32, Tree)>,
}

impl Trace {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.action.len()
    }

    /// Whether the trace is empty.
    pub fn is_empty(&self) -> bool {
        self.action.is_empty()
    }

    /// Time of entry `row`, if recorded.
    pub fn time_us_at(&self, row: usize) -> Option<i64> {
        self.time_us.get(row).filter(|&t| t != i64::MIN)
    }

    /// Whether any entry has a time.
    pub fn has_time(&self) -> bool {
        self.time_us.is_present()
    }

    /// `device_free` of an oom row.
    pub fn device_free_at(&self, row: usize) -> Option<u64> {
        let r = row as u32;
        self.device_free
            .binary_search_by_key(&r, |&(x, _)| x)
            .ok()
            .and_then(|i| self.device_free.get(i))
            .map(|&(_, v)| v)
    }

    /// The raw entry of a row, if kept.
    pub fn raw_at(&self, row: usize) -> Option<&Tree> {
        let r = row as u32;
        self.raw
            .binary_search_by_key(&r, |(x, _)| *x)
            .ok()
            .and_then(|i| self.raw.get(i))
            .map(|(_, t)| t)
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.action.capacity()
            + self.addr.capacity() * 8
            + self.size_bytes.capacity() * 8
            + self.stream.capacity() * 4
            + self.stack.capacity() * 4
            + self.time_us.heap_bytes()
            + self.pool.heap_bytes()
            + self.user_metadata.heap_bytes()
            + self.compile_context.heap_bytes()
            + self.category.heap_bytes()
            + self.device_free.capacity() * 16
            + self.forward_stack.capacity() * 8
    }
}

/// One device: its index and trace.
#[derive(Clone, Debug, Default)]
pub struct Device {
    /// Device index as in the file (position in `device_traces`).
    pub index: i64,
    /// The trace (possibly empty).
    pub trace: Trace,
}

/// Interned stacks: `frames[offsets[i]..offsets[i+1]]` are the frame ids of stack `i`, innermost first.
#[derive(Clone, Debug)]
pub struct StackTable {
    offsets: Vec<u32>,
    frames: Vec<u32>,
}

impl Default for StackTable {
    fn default() -> Self {
        // Stack 0 is the empty stack.
        StackTable {
            offsets: vec![0, 0],
            frames: Vec::new(),
        }
    }
}

impl StackTable {
    /// Frame ids of a stack, innermost first.
    pub fn get(&self, id: u32) -> &[u32] {
        let i = id as usize;
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&s), Some(&e)) => self.frames.get(s as usize..e as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Number of stacks (including the empty stack 0).
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Always false: stack 0 exists.
    pub fn is_empty(&self) -> bool {
        false
    }

    fn push(&mut self, frames: &[u32]) -> u32 {
        if frames.is_empty() {
            return 0;
        }
        self.frames.extend_from_slice(frames);
        self.offsets.push(self.frames.len() as u32);
        (self.offsets.len() - 2) as u32
    }
}

/// A string interner; id 0 is "".
#[derive(Clone, Debug)]
pub struct Strings {
    data: String,
    spans: Vec<(u32, u32)>,
    index: HashMap<Box<str>, u32>,
}

impl Default for Strings {
    fn default() -> Self {
        let mut s = Strings {
            data: String::new(),
            spans: Vec::new(),
            index: HashMap::default(),
        };
        s.intern("");
        s
    }
}

impl Strings {
    /// Interns a string.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let start = self.data.len() as u32;
        self.data.push_str(s);
        self.spans.push((start, self.data.len() as u32));
        let id = (self.spans.len() - 1) as u32;
        self.index.insert(s.into(), id);
        id
    }

    /// The text of an id.
    pub fn get(&self, id: u32) -> &str {
        match self.spans.get(id as usize) {
            Some(&(s, e)) => self.data.get(s as usize..e as usize).unwrap_or(""),
            None => "",
        }
    }

    /// Looks a string up without interning it.
    pub fn find(&self, s: &str) -> Option<u32> {
        self.index.get(s).copied()
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Never empty ("" is id 0).
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// A problem that did not stop loading.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    /// What kind of problem.
    pub kind: WarningKind,
    /// How many times it happened.
    pub count: u64,
    /// The first occurrence, in words.
    pub example: String,
}

/// Kinds of [`Warning`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarningKind {
    /// A free whose alloc is not in the trace (normal when the ring buffer wrapped).
    FreeWithoutAlloc,
    /// An alloc at an address that is already allocated.
    DoubleAlloc,
    /// An action name this version does not know.
    UnknownAction,
    /// A field with an unexpected type (kept verbatim, treated as 0).
    OddField,
    /// The pickle had oddities (trailing bytes, lossy UTF-8, ...).
    Pickle,
    /// Something was too large or deep and was cut.
    Elided,
}

/// Where a snapshot came from and how it was written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceInfo {
    /// Pickle protocol (0 for JSON).
    pub protocol: u8,
    /// Read from JSON.
    pub json: bool,
    /// The file was a bare list of segments (PyTorch <= 1.13).
    pub bare_segment_list: bool,
    /// Blocks used the legacy `history` format.
    pub legacy_history: bool,
    /// Whether the file had a `device_traces` key.
    pub has_device_traces: bool,
    /// Top-level keys in file order.
    pub top_level_keys: Vec<String>,
}

/// Whether the trace columns describe an entry of this action fully (others keep their entry).
fn columns_describe(action: Action) -> bool {
    matches!(
        action,
        Action::Alloc | Action::FreeRequested | Action::FreeCompleted | Action::SegmentAlloc | Action::SegmentFree | Action::Oom
    )
}

/// A whole snapshot.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Devices in `device_traces` order (plus devices that only have segments).
    pub devices: Vec<Device>,
    /// Final segments of every device, in file order.
    pub segments: Vec<Segment>,
    /// Blocks of all segments.
    pub blocks: Vec<Block>,
    /// Interned frames.
    pub frames: Vec<Frame>,
    /// Interned stacks.
    pub stacks: StackTable,
    /// Interned strings (file names, function names, metadata, ...).
    pub strings: Strings,
    /// Raw stream values in order of first appearance (traces first, then segments); index 0 is stream 0.
    pub streams: Vec<i128>,
    /// Pool ids; index 0 is `(0, 0)`.
    pub pools: Vec<(i128, i128)>,
    /// `allocator_settings`, when present.
    pub allocator_settings: Option<Tree>,
    /// `external_annotations`.
    pub annotations: Vec<Annotation>,
    /// Other top-level keys (`host_segments`, ...), kept verbatim.
    pub other_keys: Vec<(String, Tree)>,
    /// Problems that did not stop loading.
    pub warnings: Vec<Warning>,
    /// How the file was written.
    pub source: SourceInfo,
}

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
            self.list.push(Warning {
                kind,
                count: 1,
                example: example(),
            });
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
        let (Some(a), Some(b)) = (
            items.get(0).and_then(|x| as_i128(self.doc, x)),
            items.get(1).and_then(|x| as_i128(self.doc, x)),
        ) else {
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
            let ck = (
                filename,
                line,
                name ^ if name_first { 0x8000_0000 } else { 0 },
            );
            match self.frame_by_content.get(&ck) {
                Some(&f) => f,
                None => {
                    let f = self.snap.frames.len() as u32;
                    self.snap.frames.push(Frame {
                        filename,
                        line,
                        name,
                        extra: None,
                        name_first,
                    });
                    self.frame_by_content.insert(ck, f);
                    f
                }
            }
        } else {
            let f = self.snap.frames.len() as u32;
            self.snap.frames.push(Frame {
                filename,
                line,
                name,
                extra,
                name_first,
            });
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
                    self.snap.frames.push(Frame {
                        filename: 0,
                        line: 0,
                        name,
                        extra: None,
                        name_first: false,
                    });
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

    /// Appends trace entry `e`, kept by the reader as `rec`: the same row the generic path in
    /// [`Builder::trace`] makes of it, without decoding values (a record's values have the
    /// expected types, and its keys are all known).
    fn record_row(
        &mut self,
        t: &mut Trace,
        rec: &TraceRecord,
        e: Value,
        row: usize,
        device_index: i64,
    ) {
        let r = t.action.len();
        let action = rec.action.map_or(Action::Unknown, |id| self.action_of(id));
        if action == Action::Unknown {
            let name = rec
                .action
                .map_or_else(|| "(missing)".to_owned(), |id| self.doc.str(id).to_owned());
            self.warnings.add(WarningKind::UnknownAction, || {
                format!("device {device_index} entry {row}: unknown action {name}")
            });
        }
        let stream = rec.stream.map_or(0, |x| self.stream_index(i128::from(x)));
        let mut odd = false;
        let stack = rec.frames.map_or(0, |l| {
            self.stack(Value::List(l)).unwrap_or_else(|| {
                odd = true;
                0
            })
        });
        if rec.time_us.is_some() || t.time_us.is_present() {
            t.time_us.push(r, rec.time_us.unwrap_or(i64::MIN), i64::MIN);
        }
        if t.pool.is_present() {
            t.pool.push(r, 0, 0);
        }
        for (value, column) in [
            (rec.user_metadata, &mut t.user_metadata),
            (rec.compile_context, &mut t.compile_context),
            (None, &mut t.category),
        ] {
            let id = value.and_then(|s| self.string(Value::Str(s)));
            if id.is_some() || column.is_present() {
                column.push(r, id.unwrap_or(0), 0);
            }
        }
        let cols = RowColumns {
            action,
            addr: rec.addr.unwrap_or(0),
            size_bytes: rec.size_bytes.unwrap_or(0),
            stream,
            stack,
        };
        self.finish_row(t, cols, odd, e, row, device_index);
    }

    /// Pushes a row's fixed columns, and keeps the entry verbatim when its action is not one the
    /// columns describe fully or a field had an unexpected type (with a warning).
    fn finish_row(
        &mut self,
        t: &mut Trace,
        c: RowColumns,
        odd: bool,
        e: Value,
        row: usize,
        device_index: i64,
    ) {
        let r = t.action.len();
        t.action.push(c.action);
        t.addr.push(c.addr);
        t.size_bytes.push(c.size_bytes);
        t.stream.push(c.stream);
        t.stack.push(c.stack);
        self.keep_verbatim_if_needed(t, r, c.action, odd, e, row, device_index);
    }

    /// Keeps entry `e` (trace row `r`) verbatim when its action is not one the columns describe
    /// fully or a field had an unexpected type (with a warning).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn keep_verbatim_if_needed(
        &mut self,
        t: &mut Trace,
        r: usize,
        action: Action,
        odd: bool,
        e: Value,
        row: usize,
        device_index: i64,
    ) {
        let verbatim = !columns_describe(action);
        if verbatim || odd {
            if odd && !verbatim {
                self.warnings.add(WarningKind::OddField, || format!("device {device_index} entry {row}: a field has an unexpected type; kept verbatim"));
            }
            let tr = self.tree_of(e);
            t.raw.push((r as u32, tr));
        }
    }

    /// The trace of a device whose entries the reader kept as records in consecutive rows
    /// (`run`), built column by column: the same trace as [`Builder::trace`] makes entry by
    /// entry, with strings, frames and stacks interned in the same order. The `addr`,
    /// `size_bytes` and `time_us` columns are copied, or left empty for
    /// [`Snapshot::from_owned_document`] to move in.
    fn record_trace(
        &mut self,
        entries: Items<'_>,
        run: RecordRun,
        device_index: i64,
    ) -> Option<Trace> {
        let doc = self.doc;
        let cols = doc.record_columns(run)?;
        let n = run.len as usize;
        let mut t = Trace::default();
        t.action.reserve_exact(n);
        t.stream.reserve_exact(n);
        t.stack.reserve_exact(n);
        let mut time = TimeColumn::default();
        let at = |col: &[u32], k: usize| col.get(k).copied().unwrap_or(0);
        for k in 0..n {
            let mask = cols.mask(k);
            let has = |f: RecordField| RecordColumns::has(mask, f);
            let action_id = at(cols.action, k);
            let action = self.action_of(action_id);
            if action == Action::Unknown {
                let name = doc.str(action_id);
                self.warnings.add(WarningKind::UnknownAction, || {
                    format!("device {device_index} entry {k}: unknown action {name}")
                });
            }
            let stream = match cols.stream.get(k) {
                Some(&raw) if has(RecordField::STREAM) => self.stream_index(i128::from(raw)),
                _ => 0,
            };
            let mut odd = false;
            let stack = if has(RecordField::FRAMES) {
                self.stack(Value::List(at(cols.frames, k)))
                    .unwrap_or_else(|| {
                        odd = true;
                        0
                    })
            } else {
                0
            };
            time.note_row(k, has(RecordField::TIME_US));
            for (field, col, column) in [
                (
                    RecordField::USER_METADATA,
                    cols.user_metadata,
                    &mut t.user_metadata,
                ),
                (
                    RecordField::COMPILE_CONTEXT,
                    cols.compile_context,
                    &mut t.compile_context,
                ),
            ] {
                let id = if has(field) {
                    self.string(Value::Str(at(col, k)))
                } else {
                    None
                };
                if id.is_some() || column.is_present() {
                    column.push(k, id.unwrap_or(0), 0);
                }
            }
            let r = t.action.len();
            t.action.push(action);
            t.stream.push(stream);
            t.stack.push(stack);
            // Rows the columns describe fully need nothing more (as `keep_verbatim_if_needed`
            // decides), so their entry is not looked up.
            let described = columns_describe(action);
            if odd || !described {
                if let Some(e) = entries.get(k) {
                    self.keep_verbatim_if_needed(&mut t, r, action, odd, e, k, device_index);
                }
            }
        }
        t.user_metadata.finish(n);
        t.compile_context.finish(n);
        let pending = PendingColumns {
            device_index,
            run,
            time,
        };
        if self.may_defer_columns && self.deferred_columns.is_none() {
            self.deferred_columns = Some(pending);
        } else {
            let wide = WideColumns {
                addr: cols.addr.to_vec(),
                size_bytes: cols.size_bytes.to_vec(),
                time_us: cols.time_us.to_vec(),
            };
            pending.fill(&mut t, wide);
        }
        Some(t)
    }

    fn trace(&mut self, list: Value, device_index: i64) -> Trace {
        let doc = self.doc;
        let entries = doc.items(list);
        if let Some(t) = doc
            .record_run(list)
            .and_then(|run| self.record_trace(entries, run, device_index))
        {
            return t;
        }
        let mut t = Trace::default();
        let n = entries.len();
        t.action.reserve_exact(n);
        t.addr.reserve_exact(n);
        t.size_bytes.reserve_exact(n);
        t.stream.reserve_exact(n);
        t.stack.reserve_exact(n);
        // Per-shape key positions, cached.
        // Per shape: the slot of each key position (or NO_SLOT), and whether a key is unknown.
        let mut shape_slots: HashMap<u32, (Vec<u8>, bool)> = HashMap::default();
        let mut last_shape: Option<(u32, Vec<u8>, bool)> = None;
        let mut row_vals: Vec<Value> = Vec::with_capacity(16);
        const NO_SLOT: u8 = u8::MAX;
        const K_ACTION: usize = 0;
        const K_ADDR: usize = 1;
        const K_SIZE: usize = 2;
        const K_STREAM: usize = 3;
        const K_TIME: usize = 4;
        const K_FRAMES: usize = 5;
        const K_POOL: usize = 6;
        const K_META: usize = 7;
        const K_CC: usize = 8;
        const K_CAT: usize = 9;
        const K_FREE: usize = 10;
        const K_FWD: usize = 11;
        let key_slot = |k: &str| -> Option<usize> {
            Some(match k {
                "action" => K_ACTION,
                "addr" => K_ADDR,
                "size" => K_SIZE,
                "stream" => K_STREAM,
                "time_us" => K_TIME,
                "frames" => K_FRAMES,
                "pool_id" => K_POOL,
                "user_metadata" => K_META,
                "compile_context" => K_CC,
                "category" => K_CAT,
                "device_free" => K_FREE,
                "forward_frames" => K_FWD,
                _ => return None,
            })
        };
        for (row, e) in entries.iter().enumerate() {
            let mut vals: [Option<Value>; 12] = [None; 12];
            let mut unknown_key = false;
            if let Some(rec) = doc.trace_record(e) {
                self.record_row(&mut t, &rec, e, row, device_index);
                continue;
            }
            match doc.dict_shape(e) {
                Some(shape) => {
                    if last_shape.as_ref().is_none_or(|(ls, _, _)| *ls != shape) {
                        let (slots, unknown) = shape_slots
                            .entry(shape)
                            .or_insert_with(|| {
                                let keys = doc.shape_keys(shape);
                                let slots: Vec<u8> = keys
                                    .iter()
                                    .map(|&k| key_slot(doc.str(k)).map_or(NO_SLOT, |x| x as u8))
                                    .collect();
                                let unknown = slots.contains(&NO_SLOT);
                                (slots, unknown)
                            })
                            .clone();
                        last_shape = Some((shape, slots, unknown));
                    }
                    if let Some((_, slots, unknown)) = &last_shape {
                        unknown_key = *unknown;
                        row_vals.clear();
                        doc.compact_values(e, &mut row_vals);
                        for (&slot, &v) in slots.iter().zip(row_vals.iter()) {
                            if let Some(x) = vals.get_mut(slot as usize) {
                                *x = Some(v);
                            }
                        }
                    }
                }
                None => {
                    if !matches!(e, Value::Dict(_)) {
                        self.warnings.add(WarningKind::OddField, || {
                            format!(
                                "device {device_index} entry {row} is {}, not a dict; skipped",
                                Document::a_type_name(e)
                            )
                        });
                        continue;
                    }
                    for (k, v) in doc.dict_iter(e) {
                        match doc.as_str(k).and_then(key_slot) {
                            Some(s) => vals[s] = Some(v),
                            None => unknown_key = true,
                        }
                    }
                }
            }
            let action = match vals[K_ACTION] {
                Some(Value::Str(id)) => self.action_of(id),
                _ => Action::Unknown,
            };
            let r = t.action.len();
            let mut odd = unknown_key;
            if action == Action::Unknown {
                let name = vals[K_ACTION].map(|v| match doc.as_str(v) {
                    Some(s) => s.to_owned(),
                    None => format!("<{}>", Document::type_name(v)),
                });
                self.warnings.add(WarningKind::UnknownAction, || {
                    format!(
                        "device {device_index} entry {row}: unknown action {}",
                        name.unwrap_or_else(|| "(missing)".into())
                    )
                });
            }
            let addr = match vals[K_ADDR] {
                None => 0,
                Some(v) => as_u64(v).unwrap_or_else(|| {
                    odd = true;
                    0
                }),
            };
            let size = match vals[K_SIZE] {
                None => 0,
                Some(v) => as_u64(v).unwrap_or_else(|| {
                    odd = true;
                    0
                }),
            };
            let stream = match vals[K_STREAM] {
                None => 0,
                Some(v) => match as_i128(doc, v) {
                    Some(raw) => self.stream_index(raw),
                    None => {
                        odd = true;
                        0
                    }
                },
            };
            let stack = match vals[K_FRAMES] {
                None => 0,
                Some(v) => self.stack(v).unwrap_or_else(|| {
                    odd = true;
                    0
                }),
            };
            let time = match vals[K_TIME] {
                None => None,
                Some(Value::Int(x)) => Some(x),
                Some(Value::Float(f)) => {
                    odd = true;
                    Some(f as i64)
                }
                Some(_) => {
                    odd = true;
                    None
                }
            };
            if time.is_some() || t.time_us.is_present() {
                t.time_us.push(r, time.unwrap_or(i64::MIN), i64::MIN);
            }
            if let Some(v) = vals[K_POOL] {
                let p = self.pool_index(v);
                t.pool.push(r, p, 0);
            } else if t.pool.is_present() {
                t.pool.push(r, 0, 0);
            }
            for (slot, col) in [(K_META, 0usize), (K_CC, 1), (K_CAT, 2)] {
                let id = match vals[slot] {
                    Some(v) => self.string(v).unwrap_or_else(|| {
                        odd = true;
                        0
                    }),
                    None => 0,
                };
                let column = match col {
                    0 => &mut t.user_metadata,
                    1 => &mut t.compile_context,
                    _ => &mut t.category,
                };
                if vals[slot].is_some() || column.is_present() {
                    column.push(r, id, 0);
                }
            }
            if let Some(v) = vals[K_FREE] {
                match as_u64(v) {
                    Some(x) => t.device_free.push((r as u32, x)),
                    None => odd = true,
                }
            }
            if let Some(v) = vals[K_FWD] {
                match self.string_stack(v) {
                    Some(s) => t.forward_stack.push((r as u32, s)),
                    None => odd = true,
                }
            }
            self.finish_row(
                &mut t,
                RowColumns {
                    action,
                    addr,
                    size_bytes: size,
                    stream,
                    stack,
                },
                odd,
                e,
                row,
                device_index,
            );
        }
        let rows = t.action.len();
        t.time_us.finish(rows);
        t.pool.finish(rows);
        t.user_metadata.finish(rows);
        t.compile_context.finish(rows);
        t.category.finish(rows);
        t
    }

    fn segments(&mut self, list: Value) -> Result<(), Error> {
        let doc = self.doc;
        for (si, s) in doc.items(list).iter().enumerate() {
            if !matches!(s, Value::Dict(_)) {
                return Err(Error::Schema {
                    path: format!("segments[{si}]"),
                    reason: format!("{}, expected a dict", Document::a_type_name(s)),
                });
            }
            let field_u64 = |key: &str| -> Result<u64, Error> {
                match doc.get(s, key) {
                    None => Ok(0),
                    Some(v) => as_u64(v).ok_or_else(|| Error::Schema {
                        path: format!("segments[{si}].{key}"),
                        reason: format!(
                            "{}, expected a non-negative int",
                            Document::a_type_name(v)
                        ),
                    }),
                }
            };
            let address = field_u64("address")?;
            let total_size = field_u64("total_size")?;
            let allocated_size = field_u64("allocated_size")?;
            let active_size = field_u64("active_size")?;
            let requested_size = field_u64("requested_size")?;
            let device = doc
                .get(s, "device")
                .and_then(|v| as_i128(doc, v))
                .unwrap_or(0) as i64;
            let stream_raw = doc
                .get(s, "stream")
                .and_then(|v| as_i128(doc, v))
                .unwrap_or(0);
            let stream = self.stream_index(stream_raw);
            let segment_type = doc
                .get(s, "segment_type")
                .and_then(|v| self.string(v))
                .unwrap_or(0);
            let pool = doc
                .get(s, "segment_pool_id")
                .map_or(0, |v| self.pool_index(v));
            let is_expandable = matches!(doc.get(s, "is_expandable"), Some(Value::Bool(true)));
            let stack = doc
                .get(s, "frames")
                .and_then(|v| self.stack(v))
                .unwrap_or(0);
            let first_block = self.snap.blocks.len() as u32;
            let blocks_v = doc.get(s, "blocks").unwrap_or(Value::None);
            if !matches!(blocks_v, Value::List(_) | Value::None) {
                return Err(Error::Schema {
                    path: format!("segments[{si}].blocks"),
                    reason: format!("{}, expected a list", Document::a_type_name(blocks_v)),
                });
            }
            self.spend(doc.items(blocks_v).len(), || {
                format!("segments[{si}].blocks")
            })?;
            let mut offset = address;
            for (bi, b) in doc.items(blocks_v).iter().enumerate() {
                let path = || format!("segments[{si}].blocks[{bi}]");
                if !matches!(b, Value::Dict(_)) {
                    return Err(Error::Schema {
                        path: path(),
                        reason: format!("{}, expected a dict", Document::a_type_name(b)),
                    });
                }
                let size = match doc.get(b, "size") {
                    Some(v) => as_u64(v).ok_or_else(|| Error::Schema {
                        path: format!("{}.size", path()),
                        reason: "expected a non-negative int".into(),
                    })?,
                    None => 0,
                };
                let state = match doc.get(b, "state").and_then(|v| doc.as_str(v)) {
                    Some("active_allocated") => BlockState::ActiveAllocated,
                    Some("active_pending_free") => BlockState::ActivePendingFree,
                    Some("inactive") => BlockState::Inactive,
                    _ => BlockState::Other,
                };
                let (stack, requested) = if let Some(fr) = doc.get(b, "frames") {
                    let st = self.stack(fr).unwrap_or(0);
                    let req = doc
                        .get(b, "requested_size")
                        .and_then(as_u64)
                        .unwrap_or(size);
                    (st, req)
                } else if let Some(h) = doc.get(b, "history") {
                    self.snap.source.legacy_history = true;
                    let first = doc.items(h).first().unwrap_or(Value::None);
                    let st = doc
                        .get(first, "frames")
                        .and_then(|v| self.stack(v))
                        .unwrap_or(0);
                    let req = doc.get(first, "real_size").and_then(as_u64).unwrap_or(size);
                    (st, req)
                } else {
                    (
                        0,
                        doc.get(b, "requested_size")
                            .and_then(as_u64)
                            .unwrap_or(size),
                    )
                };
                self.snap.blocks.push(Block {
                    address: offset,
                    size,
                    requested_size: requested,
                    state,
                    stack,
                });
                offset = offset.wrapping_add(size);
            }
            let block_count = self.snap.blocks.len() as u32 - first_block;
            self.snap.segments.push(Segment {
                device,
                address,
                total_size,
                allocated_size,
                active_size,
                requested_size,
                stream,
                segment_type,
                pool,
                is_expandable,
                stack,
                first_block,
                block_count,
            });
        }
        Ok(())
    }

    fn annotations(&mut self, list: Value) {
        let doc = self.doc;
        for a in doc.items(list) {
            let name = doc.get(a, "name").and_then(|v| self.string(v)).unwrap_or(0);
            let start = doc.get(a, "stage").and_then(|v| doc.as_str(v)) == Some("START");
            let device = doc
                .get(a, "device")
                .and_then(|v| as_i128(doc, v))
                .unwrap_or(0) as i64;
            let time_us = match doc.get(a, "time_us") {
                Some(Value::Int(t)) => Some(t),
                _ => None,
            };
            self.snap.annotations.push(Annotation {
                name,
                start,
                device,
                time_us,
            });
        }
    }
}

/// Which rows of a run of records have `time_us`.
#[derive(Debug, Default)]
struct TimeColumn {
    /// Whether any row has it.
    any: bool,
    /// The rows (of the run) that lack it.
    absent_rows: Vec<u32>,
}

impl TimeColumn {
    fn note_row(&mut self, k: usize, present: bool) {
        if present {
            self.any = true;
        } else {
            self.absent_rows.push(k as u32);
        }
    }
}

/// The 64-bit columns of a trace read as a run of records, still to be put in.
#[derive(Debug)]
struct PendingColumns {
    device_index: i64,
    run: RecordRun,
    time: TimeColumn,
}

impl PendingColumns {
    /// Puts the run's 64-bit columns into its trace: `addr` and `size_bytes` as they are (the
    /// records hold 0 for absent fields, as the generic path makes them), `time_us` when any
    /// row has it (`i64::MIN` in rows without, as the generic path makes them).
    fn fill(self, t: &mut Trace, wide: WideColumns) {
        let WideColumns {
            mut addr,
            mut size_bytes,
            mut time_us,
        } = wide;
        addr.shrink_to_fit();
        size_bytes.shrink_to_fit();
        t.addr = addr;
        t.size_bytes = size_bytes;
        if self.time.any {
            for &k in &self.time.absent_rows {
                if let Some(x) = time_us.get_mut(k as usize) {
                    *x = i64::MIN;
                }
            }
            t.time_us = SparseColumn::from_rows(time_us);
        }
    }
}

impl Snapshot {
    /// Builds the model from a decoded pickle.
    pub fn from_document(doc: &Document) -> Result<Snapshot, Error> {
        Ok(Builder::new(doc, false).build()?.finish(&doc.oddities))
    }

    /// Builds the model from a decoded pickle it may take columns from: a trace's `addr`,
    /// `size_bytes` and `time_us` columns are moved out of the document rather than copied.
    pub(crate) fn from_owned_document(mut doc: Document) -> Result<Snapshot, Error> {
        let mut built = Builder::new(&doc, true).build()?;
        if let Some(pending) = built.deferred_columns.take() {
            let wide = doc
                .take_record_columns(pending.run)
                .unwrap_or_else(|| WideColumns::zeros(pending.run.len as usize));
            if let Some(d) = built
                .snap
                .devices
                .iter_mut()
                .find(|d| d.index == pending.device_index)
            {
                pending.fill(&mut d.trace, wide);
            }
        }
        Ok(built.finish(&doc.oddities))
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
    /// Checks the traces and adds the reader's oddities as warnings.
    fn finish(mut self, oddities: &[String]) -> Snapshot {
        self.check_consistency();
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
                                format!("device {} entry {row}: alloc at 0x{addr:x}, which is already allocated", d.index)
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
    fn build(self) -> Result<Built, Error> {
        let mut b = self;
        let doc = b.doc;
        let root = doc.root();
        b.snap.source.protocol = doc.protocol;
        match root {
            Value::List(_) => {
                b.snap.source.bare_segment_list = true;
                b.segments(root)?;
            }
            Value::Dict(_) => {
                let keys: Vec<String> = doc
                    .dict_iter(root)
                    .map(|(k, _)| {
                        doc.as_str(k)
                            .map_or_else(|| format!("<{}>", Document::type_name(k)), str::to_owned)
                    })
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
                            let mut t: String =
                                k.chars().take(40).flat_map(|c| c.escape_debug()).collect();
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
                            format!("top-level keys are {}{more}; a snapshot has 'segments' and 'device_traces'", shown.join(", "))
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
                        b.snap.devices.push(Device {
                            index: i as i64,
                            trace,
                        });
                    }
                }
                if let Some(sv) = segs {
                    if !matches!(sv, Value::List(_)) {
                        return Err(Error::Schema {
                            path: "segments".into(),
                            reason: format!("{}, expected a list", Document::a_type_name(sv)),
                        });
                    }
                    b.segments(sv)?;
                }
                if let Some(a) = doc.get(root, "allocator_settings") {
                    b.snap.allocator_settings = Some(tree::from_value(doc, a, &mut |_| None));
                }
                if let Some(a) = doc.get(root, "external_annotations") {
                    b.annotations(a);
                }
                for (k, v) in doc.dict_iter(root) {
                    let Some(name) = doc.as_str(k) else { continue };
                    if !matches!(
                        name,
                        "segments"
                            | "device_traces"
                            | "allocator_settings"
                            | "external_annotations"
                    ) {
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
        let mut seg_devices: Vec<i64> = b.snap.segments.iter().map(|s| s.device).collect();
        seg_devices.sort_unstable();
        seg_devices.dedup();
        for dv in seg_devices {
            if dv >= 0 && !b.snap.devices.iter().any(|d| d.index == dv) {
                b.snap.devices.push(Device {
                    index: dv,
                    trace: Trace::default(),
                });
            }
        }
        b.snap.devices.sort_by_key(|d| d.index);
        Ok(Built {
            snap: b.snap,
            warnings: b.warnings,
            deferred_columns: b.deferred_columns,
        })
    }
}

impl Snapshot {
    /// The device to show first: the one with the longest trace (ties: lowest index), else the
    /// first device with segments.
    pub fn default_device(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, d) in self.devices.iter().enumerate() {
            match best {
                None => best = Some(i),
                Some(b) => {
                    if d.trace.len() > self.devices.get(b).map_or(0, |x| x.trace.len()) {
                        best = Some(i);
                    }
                }
            }
        }
        best
    }

    /// The device with a given index.
    pub fn device(&self, index: i64) -> Option<&Device> {
        self.devices.iter().find(|d| d.index == index)
    }

    /// Blocks of a segment.
    pub fn segment_blocks(&self, s: &Segment) -> &[Block] {
        let a = s.first_block as usize;
        self.blocks
            .get(a..a + s.block_count as usize)
            .unwrap_or(&[])
    }

    /// Frames of a stack.
    pub fn stack_frames(&self, stack: u32) -> impl Iterator<Item = &Frame> + '_ {
        self.stacks
            .get(stack)
            .iter()
            .filter_map(move |&f| self.frames.get(f as usize))
    }

    /// Raw value of a stream index.
    pub fn stream_raw(&self, stream: u32) -> i128 {
        self.streams.get(stream as usize).copied().unwrap_or(0)
    }

    /// Approximate heap bytes of the model.
    pub fn heap_bytes(&self) -> usize {
        self.devices
            .iter()
            .map(|d| d.trace.heap_bytes())
            .sum::<usize>()
            + self.segments.capacity() * std::mem::size_of::<Segment>()
            + self.blocks.capacity() * std::mem::size_of::<Block>()
            + self.frames.capacity() * std::mem::size_of::<Frame>()
            + self.stacks.frames.capacity() * 4
            + self.stacks.offsets.capacity() * 4
            + self.strings.data.capacity()
            + self.strings.spans.capacity() * 8
    }
}
