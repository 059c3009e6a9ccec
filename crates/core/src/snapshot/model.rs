//! The model's types: actions, frames, segments and blocks, the columnar [`Trace`] with its
//! sparse columns, the string and stack tables, warnings, and [`Snapshot`] with its accessors.

use crate::tree::Tree;

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// What a trace entry records (its `action`).
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
    /// Whether it came from `host_segments` (pinned host memory, which PyTorch's `stats` ignores).
    pub host: bool,
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
    pub(super) default: Option<T>,
    pub(super) values: Vec<T>,
}

impl<T: Copy + PartialEq> SparseColumn<T> {
    /// Sets row `row` (rows are pushed in order); rows before the first value get `absent`.
    pub(super) fn push(&mut self, row: usize, v: T, absent: T) {
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
    pub(crate) fn from_rows(values: Vec<T>) -> Self {
        let Some(&first) = values.first() else {
            return SparseColumn { default: None, values };
        };
        if values.iter().all(|&v| v == first) {
            return SparseColumn { default: Some(first), values: Vec::new() };
        }
        let mut values = values;
        values.shrink_to_fit();
        SparseColumn { default: Some(first), values }
    }

    pub(super) fn finish(&mut self, rows: usize) {
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

    /// Appends the `n` rows of `other` after the first `base` rows of this column.
    pub(super) fn append(&mut self, other: &SparseColumn<T>, base: usize, n: usize, absent: T) {
        if !other.is_present() {
            if self.is_present() {
                for row in base..base + n {
                    self.push(row, absent, absent);
                }
                self.finish(base + n);
            }
            return;
        }
        if !self.is_present() && base > 0 {
            self.default = Some(absent);
        }
        for row in 0..n {
            self.push(base + row, other.get(row).unwrap_or(absent), absent);
        }
        self.finish(base + n);
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
        self.raw.binary_search_by_key(&r, |(x, _)| *x).ok().and_then(|i| self.raw.get(i)).map(|(_, t)| t)
    }

    /// The entry's `internal_metadata` (PyTorch 2.15 marks the allocator's own entries with it,
    /// e.g. `mallocWithAddress`), when it has one.
    pub fn internal_metadata_at(&self, row: usize) -> Option<&Tree> {
        self.raw_at(row).and_then(|t| t.get("internal_metadata"))
    }

    /// Appends the rows of another trace (the lists of `host_traces`, one per device, read as
    /// one trace).
    pub fn append(&mut self, other: &Trace) {
        let base = self.len();
        let n = other.len();
        self.action.extend_from_slice(&other.action);
        self.addr.extend_from_slice(&other.addr);
        self.size_bytes.extend_from_slice(&other.size_bytes);
        self.stream.extend_from_slice(&other.stream);
        self.stack.extend_from_slice(&other.stack);
        self.time_us.append(&other.time_us, base, n, i64::MIN);
        self.pool.append(&other.pool, base, n, 0);
        self.user_metadata.append(&other.user_metadata, base, n, 0);
        self.compile_context.append(&other.compile_context, base, n, 0);
        self.category.append(&other.category, base, n, 0);
        let shift = |r: u32| r.saturating_add(base as u32);
        self.device_free.extend(other.device_free.iter().map(|&(r, v)| (shift(r), v)));
        self.forward_stack.extend(other.forward_stack.iter().map(|&(r, v)| (shift(r), v)));
        self.raw.extend(other.raw.iter().map(|(r, t)| (shift(*r), t.clone())));
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

/// Index of the pinned host memory "device" (host segments carry `device: -1`).
pub const PINNED_HOST_INDEX: i64 = -1;

/// Index of a profiler trace's CPU memory (CUDA devices keep their ids).
pub const CPU_DEVICE_INDEX: i64 = -2;

/// What memory a [`Device`] stands for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceKind {
    /// A CUDA device: `device_traces[i]` and the segments with `device: i`.
    #[default]
    Cuda,
    /// Pinned host memory (PyTorch 2.14+, `record_pinned_host_memory=True`): `host_traces` and
    /// `host_segments`. PyTorch's `stats` and `trace` ignore it.
    PinnedHost,
    /// CPU memory, as a profiler trace records it (index [`CPU_DEVICE_INDEX`]).
    Cpu,
}

/// One device: its index, kind and trace.
#[derive(Clone, Debug, Default)]
pub struct Device {
    /// Device index as in the file (position in `device_traces`; [`PINNED_HOST_INDEX`] for
    /// pinned host memory).
    pub index: i64,
    /// The trace (possibly empty).
    pub trace: Trace,
    /// CUDA device or pinned host memory.
    pub kind: DeviceKind,
}

impl Device {
    /// Whether this is the pinned host memory rather than a CUDA device.
    pub fn is_pinned_host(&self) -> bool {
        self.kind == DeviceKind::PinnedHost
    }

    /// The name every view shows: `cuda:N`, or `pinned host`.
    pub fn name(&self) -> String {
        match self.kind {
            DeviceKind::Cuda => format!("cuda:{}", self.index),
            DeviceKind::PinnedHost => "pinned host".to_owned(),
            DeviceKind::Cpu if self.index == CPU_DEVICE_INDEX => "cpu".to_owned(),
            DeviceKind::Cpu => format!("device {}", self.index),
        }
    }
}

/// Interned stacks: `frames[offsets[i]..offsets[i+1]]` are the frame ids of stack `i`, innermost first.
#[derive(Clone, Debug)]
pub struct StackTable {
    pub(super) offsets: Vec<u32>,
    pub(super) frames: Vec<u32>,
}

impl Default for StackTable {
    fn default() -> Self {
        // Stack 0 is the empty stack.
        StackTable { offsets: vec![0, 0], frames: Vec::new() }
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

    pub(crate) fn push(&mut self, frames: &[u32]) -> u32 {
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
    pub(super) data: String,
    pub(super) spans: Vec<(u32, u32)>,
    pub(super) index: HashMap<Box<str>, u32>,
}

impl Default for Strings {
    fn default() -> Self {
        let mut s = Strings { data: String::new(), spans: Vec::new(), index: HashMap::default() };
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
    /// Read from a profiler trace's memory events ([`crate::chrome_trace`]).
    pub profiler_trace: bool,
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

impl Snapshot {
    /// The device to show first (a position in [`Snapshot::devices`]): the CUDA device with the
    /// longest trace; when every CUDA trace is empty (`enabled='state'`), the one holding the most
    /// memory (reserved bytes in its segments, then allocated bytes); ties go to the lowest
    /// position. Pinned host memory is chosen when there is no CUDA device, or when only it has a
    /// trace (`record_cuda=False, record_pinned_host_memory=True`: the recording is of the host).
    pub fn default_device(&self) -> Option<usize> {
        let cuda: Vec<usize> =
            (0..self.devices.len()).filter(|&i| self.devices.get(i).is_some_and(|d| !d.is_pinned_host())).collect();
        let traced = |i: &usize| self.devices.get(*i).is_some_and(|d| !d.trace.is_empty());
        if !cuda.iter().any(traced) {
            if let Some(host) = (0..self.devices.len()).find(|i| traced(i) && !cuda.contains(i)) {
                return Some(host);
            }
        }
        let candidates: Vec<usize> = if cuda.is_empty() { (0..self.devices.len()).collect() } else { cuda };
        let longest = |i: &usize| self.devices.get(*i).map_or(0, |d| d.trace.len());
        let mut best: Option<(usize, (u64, u64))> = None;
        if candidates.iter().any(|i| longest(i) > 0) {
            for &i in &candidates {
                let key = (longest(&i) as u64, 0);
                if best.is_none_or(|(_, k)| key > k) {
                    best = Some((i, key));
                }
            }
        } else {
            for &i in &candidates {
                let key = self.devices.get(i).map_or((0, 0), |d| self.memory_bytes(d.index));
                if best.is_none_or(|(_, k)| key > k) {
                    best = Some((i, key));
                }
            }
        }
        best.map(|(i, _)| i)
    }

    /// Memory a device holds in the final state: (reserved bytes of its segments, requested bytes
    /// of its allocated blocks).
    pub fn memory_bytes(&self, device_index: i64) -> (u64, u64) {
        let (mut reserved, mut allocated) = (0u64, 0u64);
        for s in self.segments.iter().filter(|s| s.device == device_index) {
            reserved = reserved.saturating_add(s.total_size);
            for b in self.segment_blocks(s) {
                if b.state == BlockState::ActiveAllocated {
                    allocated = allocated.saturating_add(b.requested_size);
                }
            }
        }
        (reserved, allocated)
    }

    /// The device with a given index.
    pub fn device(&self, index: i64) -> Option<&Device> {
        self.devices.iter().find(|d| d.index == index)
    }

    /// Blocks of a segment.
    pub fn segment_blocks(&self, s: &Segment) -> &[Block] {
        let a = s.first_block as usize;
        self.blocks.get(a..a + s.block_count as usize).unwrap_or(&[])
    }

    /// Frames of a stack.
    pub fn stack_frames(&self, stack: u32) -> impl Iterator<Item = &Frame> + '_ {
        self.stacks.get(stack).iter().filter_map(move |&f| self.frames.get(f as usize))
    }

    /// Raw value of a stream index.
    pub fn stream_raw(&self, stream: u32) -> i128 {
        self.streams.get(stream as usize).copied().unwrap_or(0)
    }

    /// Approximate heap bytes of the model.
    pub fn heap_bytes(&self) -> usize {
        self.devices.iter().map(|d| d.trace.heap_bytes()).sum::<usize>()
            + self.segments.capacity() * std::mem::size_of::<Segment>()
            + self.blocks.capacity() * std::mem::size_of::<Block>()
            + self.frames.capacity() * std::mem::size_of::<Frame>()
            + self.stacks.frames.capacity() * 4
            + self.stacks.offsets.capacity() * 4
            + self.strings.data.capacity()
            + self.strings.spans.capacity() * 8
    }
}
