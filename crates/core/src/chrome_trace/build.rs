//! A [`Snapshot`] made of a profiler trace's memory events: per device, the allocations and frees
//! in time order as trace entries, each with the stack that made it (the `cpu_op`s open on its
//! thread, innermost first, then the `python_function`s), the memory live before the profiler
//! started as blocks of the final state, and `ProfilerStep#N` / `record_function` ranges as
//! annotations. Every view of snapshots then works on traces unchanged.

type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

use crate::error::Error;
use crate::snapshot::{
    Action, Annotation, Block, BlockState, Device, DeviceKind, Frame, Segment, Snapshot, SourceInfo, Trace, Warning,
    WarningKind,
};
use crate::tree::Tree;

use super::events::{Collected, MemoryDevice, MemoryEvent, Range};

pub use crate::snapshot::CPU_DEVICE_INDEX;

/// The message for a trace without memory events.
pub const NO_MEMORY_EVENTS: &str = "this profiler trace holds no memory events: record them with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True, with_stack=True, record_shapes=True), then prof.export_chrome_trace(\"trace.json.gz\")";

/// What one device's memory events say about themselves, for checks and summaries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceTotals {
    /// The device's index in the model.
    pub index: i64,
    /// Memory events.
    pub events: usize,
    /// The highest `Total Allocated` the profiler reported.
    pub peak_total_allocated_bytes: i64,
    /// `Total Allocated` before the first event: memory allocated before profiling began.
    pub before_bytes: i64,
    /// The highest `Total Reserved` the profiler reported.
    pub peak_total_reserved_bytes: i64,
}

/// The stacks of the memory events: for each event (by position in `memory`), a stack id.
struct Attribution {
    stack_of_event: Vec<u32>,
}

/// Interns frames and stacks into the snapshot.
struct Interner<'s> {
    snap: &'s mut Snapshot,
    frames: HashMap<(u32, i64, u32, u32), u32>,
    stacks: HashMap<Vec<u32>, u32>,
}

impl Interner<'_> {
    fn frame(&mut self, filename: u32, line: i64, name: u32, shapes: u32) -> u32 {
        if let Some(&f) = self.frames.get(&(filename, line, name, shapes)) {
            return f;
        }
        let id = self.snap.frames.len() as u32;
        let extra = (shapes != 0).then(|| {
            Box::new(crate::snapshot::FrameExtra {
                dict: Tree::Dict(vec![
                    (Tree::Str("name".into()), Tree::Str(self.snap.strings.get(name).into())),
                    (Tree::Str("filename".into()), Tree::Str(self.snap.strings.get(filename).into())),
                    (Tree::Str("line".into()), Tree::Int(i128::from(line))),
                    (Tree::Str(INPUT_SHAPES_KEY.into()), Tree::Str(self.snap.strings.get(shapes).into())),
                ]),
            })
        });
        self.snap.frames.push(Frame { filename, line, name, extra, name_first: true });
        self.frames.insert((filename, line, name, shapes), id);
        id
    }

    fn stack(&mut self, frames: &[u32]) -> u32 {
        if frames.is_empty() {
            return 0;
        }
        if let Some(&s) = self.stacks.get(frames) {
            return s;
        }
        let s = self.snap.stacks.push(frames);
        self.stacks.insert(frames.to_vec(), s);
        s
    }
}

/// The key of a frame's extra fields that holds an op's input shapes.
pub const INPUT_SHAPES_KEY: &str = "input_shapes";

/// Splits `file.py(12): name` into its parts; other names are a function with no file.
fn python_frame(text: &str) -> (&str, i64, &str) {
    if let Some((head, name)) = text.split_once("): ") {
        if let Some((file, line)) = head.rsplit_once('(') {
            if let Ok(l) = line.parse::<i64>() {
                return (file, l, name);
            }
        }
    }
    ("", 0, text)
}

/// Ranges of one thread sorted so that a sweep can keep the open ones as a stack: by start,
/// longer first.
fn sort_ranges(ranges: &mut [Range]) {
    ranges.sort_by(|a, b| {
        a.thread.cmp(&b.thread).then(a.start_us.total_cmp(&b.start_us)).then(b.end_us.total_cmp(&a.end_us))
    });
}

/// Walks the ranges of the event's thread in time order; `open` holds those containing `ts`.
struct Sweep<'r> {
    ranges: &'r [Range],
    next: usize,
    open: Vec<usize>,
    thread: u64,
}

impl<'r> Sweep<'r> {
    fn new(ranges: &'r [Range]) -> Self {
        Sweep { ranges, next: 0, open: Vec::new(), thread: u64::MAX }
    }

    /// Moves to `(thread, ts)`; events must come sorted by thread, then time.
    fn advance(&mut self, thread: u64, ts: f64) {
        if thread != self.thread {
            self.thread = thread;
            self.open.clear();
            self.next = self.ranges.partition_point(|r| r.thread < thread);
        }
        while let Some(r) = self.ranges.get(self.next).filter(|r| r.thread == thread && r.start_us <= ts) {
            while self.open.last().is_some_and(|&o| self.ranges.get(o).is_some_and(|x| x.end_us < r.start_us)) {
                self.open.pop();
            }
            self.open.push(self.next);
            self.next += 1;
        }
        while self.open.last().is_some_and(|&o| self.ranges.get(o).is_some_and(|x| x.end_us < ts)) {
            self.open.pop();
        }
    }

    /// The open ranges, innermost first.
    fn innermost_first(&self) -> impl Iterator<Item = &Range> {
        self.open.iter().rev().filter_map(|&i| self.ranges.get(i))
    }
}

fn attribute(c: &mut Collected, snap: &mut Snapshot) -> Attribution {
    // Model strings: the collected table becomes the snapshot's, so ids carry over.
    snap.strings = std::mem::take(&mut c.strings);
    sort_ranges(&mut c.ops);
    sort_ranges(&mut c.python);
    let mut order: Vec<u32> = (0..c.memory.len() as u32).collect();
    let ev = |i: u32| c.memory.get(i as usize);
    order.sort_by(|&a, &b| match (ev(a), ev(b)) {
        (Some(x), Some(y)) => x.thread.cmp(&y.thread).then(x.ts_us.total_cmp(&y.ts_us)),
        _ => std::cmp::Ordering::Equal,
    });
    let mut interner = Interner { snap, frames: HashMap::default(), stacks: HashMap::default() };
    // Python frames by the name's string id, parsed once.
    let mut py_frames: HashMap<u32, u32> = HashMap::default();
    let mut op_frames: HashMap<(u32, u32), u32> = HashMap::default();
    let mut ops = Sweep::new(&c.ops);
    let mut py = Sweep::new(&c.python);
    let mut stack_of_event = vec![0u32; c.memory.len()];
    let mut frames: Vec<u32> = Vec::new();
    for &i in &order {
        let Some(m) = c.memory.get(i as usize) else { continue };
        ops.advance(m.thread, m.ts_us);
        py.advance(m.thread, m.ts_us);
        frames.clear();
        // Each op with its shapes: the innermost (aten::empty) often has none worth reading,
        // the op that called it (aten::layer_norm) does.
        for r in ops.innermost_first() {
            let shapes = r.shapes;
            let f = *op_frames.entry((r.name, shapes)).or_insert_with(|| interner.frame(0, 0, r.name, shapes));
            frames.push(f);
        }
        for r in py.innermost_first() {
            let f = match py_frames.get(&r.name) {
                Some(&f) => f,
                None => {
                    let text = interner.snap.strings.get(r.name).to_owned();
                    let (file, line, name) = python_frame(&text);
                    let (file, name) = (interner.snap.strings.intern(file), interner.snap.strings.intern(name));
                    let f = interner.frame(file, line, name, 0);
                    py_frames.insert(r.name, f);
                    f
                }
            };
            frames.push(f);
        }
        if let Some(slot) = stack_of_event.get_mut(i as usize) {
            *slot = interner.stack(&frames);
        }
    }
    Attribution { stack_of_event }
}

fn device_index(d: MemoryDevice) -> (i64, DeviceKind) {
    match d {
        MemoryDevice::Cuda(id) => (id, DeviceKind::Cuda),
        MemoryDevice::Cpu => (CPU_DEVICE_INDEX, DeviceKind::Cpu),
        // Other device types (XPU, MTIA, ...) keep apart below the CPU's index.
        MemoryDevice::Other(t, id) => (CPU_DEVICE_INDEX - 1 - t.saturating_mul(1024) - id, DeviceKind::Cpu),
    }
}

/// Adds a device's final state: for each `(address, size, stack)` a segment of one allocated
/// block (the trace says nothing of how the allocator packed them).
fn push_final_state(snap: &mut Snapshot, index: i64, mut blocks: Vec<(u64, u64, u32)>, large: u32) {
    blocks.sort_unstable();
    for (address, size, stack) in blocks {
        let first_block = snap.blocks.len() as u32;
        snap.blocks.push(Block { address, size, requested_size: size, state: BlockState::ActiveAllocated, stack });
        snap.segments.push(Segment {
            device: index,
            address,
            total_size: size,
            allocated_size: size,
            active_size: size,
            requested_size: size,
            stream: 0,
            segment_type: large,
            pool: 0,
            is_expandable: false,
            stack,
            first_block,
            block_count: 1,
            host: false,
        });
    }
}

/// `ProfilerStep#N` and `record_function` ranges as START and END annotations of every device
/// (the ranges belong to the process, not to one device).
fn push_annotations(snap: &mut Snapshot, ranges: &mut [Range], to_epoch_us: &dyn Fn(f64) -> i64) {
    ranges.sort_by(|a, b| a.start_us.total_cmp(&b.start_us).then(b.end_us.total_cmp(&a.end_us)));
    let indices: Vec<i64> = snap.devices.iter().map(|d| d.index).collect();
    for &device in &indices {
        for r in ranges.iter() {
            for (start, t) in [(true, r.start_us), (false, r.end_us)] {
                snap.annotations.push(Annotation { name: r.name, start, device, time_us: Some(to_epoch_us(t)) });
            }
        }
    }
}

/// Builds the model from what [`super::TraceLoader`] collected.
pub fn build(mut c: Collected) -> Result<(Snapshot, Vec<DeviceTotals>), Error> {
    if c.memory.is_empty() {
        return Err(Error::Trace { reason: NO_MEMORY_EVENTS.into() });
    }
    let mut snap = Snapshot::default();
    let attribution = attribute(&mut c, &mut snap);
    // Epoch µs, as snapshots record time: the trace's clock plus its base time.
    let base_us = c.base_time_ns.map_or(0.0, |ns| (ns / 1000) as f64);
    let to_epoch_us = |ts: f64| (ts + base_us).round() as i64;
    let mut by_device: Vec<(MemoryDevice, Vec<u32>)> = Vec::new();
    {
        let mut index: HashMap<MemoryDevice, usize> = HashMap::default();
        for (i, m) in c.memory.iter().enumerate() {
            let slot = *index.entry(m.device).or_insert_with(|| {
                by_device.push((m.device, Vec::new()));
                by_device.len() - 1
            });
            if let Some((_, rows)) = by_device.get_mut(slot) {
                rows.push(i as u32);
            }
        }
    }
    by_device.sort_by_key(|(d, _)| *d);
    let large = snap.strings.intern("large");
    let mut totals = Vec::new();
    let mut free_without_alloc = 0u64;
    let mut first_free: Option<String> = None;
    for (dev, mut rows) in by_device {
        let ev = |i: u32| c.memory.get(i as usize);
        rows.sort_by(|&a, &b| match (ev(a), ev(b)) {
            (Some(x), Some(y)) => x.ts_us.total_cmp(&y.ts_us).then(x.ev_idx.cmp(&y.ev_idx)),
            _ => std::cmp::Ordering::Equal,
        });
        let (index, kind) = device_index(dev);
        let mut trace = Trace::default();
        let mut live: HashMap<u64, (u64, u32)> = HashMap::default();
        let mut freed_before = 0u64;
        let (mut peak, mut peak_reserved) = (i64::MIN, i64::MIN);
        let mut times = Vec::with_capacity(rows.len());
        for (row, &i) in rows.iter().enumerate() {
            let Some(m) = c.memory.get(i as usize) else { continue };
            let stack = attribution.stack_of_event.get(i as usize).copied().unwrap_or(0);
            let size = m.bytes_delta.unsigned_abs();
            let action = if m.bytes_delta >= 0 { Action::Alloc } else { Action::Free };
            if action == Action::Alloc {
                live.insert(m.addr, (size, stack));
            } else if live.remove(&m.addr).is_none() {
                freed_before = freed_before.saturating_add(size);
                free_without_alloc += 1;
                if first_free.is_none() {
                    first_free = Some(format!("a free of {size} bytes at 0x{:x} (row {row})", m.addr));
                }
            }
            trace.action.push(action);
            trace.addr.push(m.addr);
            trace.size_bytes.push(size);
            trace.stream.push(0);
            trace.stack.push(stack);
            times.push(to_epoch_us(m.ts_us));
            peak = peak.max(m.total_allocated_bytes);
            peak_reserved = peak_reserved.max(m.total_reserved_bytes);
        }
        trace.time_us = crate::snapshot::SparseColumn::from_rows(times);
        let first = rows.first().and_then(|&i| c.memory.get(i as usize));
        let before = first.map_or(0, |m: &MemoryEvent| m.total_allocated_bytes - m.bytes_delta);
        totals.push(DeviceTotals {
            index,
            events: rows.len(),
            peak_total_allocated_bytes: peak,
            before_bytes: before,
            peak_total_reserved_bytes: peak_reserved,
        });
        // The final state: what is still allocated, and what was allocated before profiling
        // began and never freed (one block, at an address no event uses).
        let mut blocks: Vec<(u64, u64, u32)> = live.into_iter().map(|(a, (s, st))| (a, s, st)).collect();
        let untouched = u64::try_from(before).unwrap_or(0).saturating_sub(freed_before);
        if untouched > 0 {
            blocks.push((0, untouched, 0));
        }
        push_final_state(&mut snap, index, blocks, large);
        snap.devices.push(Device { index, trace, kind });
    }
    if free_without_alloc > 0 {
        snap.warnings.push(Warning {
            kind: WarningKind::FreeWithoutAlloc,
            count: free_without_alloc,
            example: first_free.unwrap_or_default(),
        });
    }
    push_annotations(&mut snap, &mut c.annotations, &to_epoch_us);
    snap.streams.push(0);
    snap.pools.push((0, 0));
    snap.source = SourceInfo {
        json: true,
        has_device_traces: true,
        profiler_trace: true,
        top_level_keys: vec!["traceEvents".into()],
        ..SourceInfo::default()
    };
    Ok((snap, totals))
}
