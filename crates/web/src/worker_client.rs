//! The page's side of loading in a Web Worker: starts the load through `www/boot.js`'s
//! `memvizLoadInWorker`, shows its progress, cancels it, and decodes the model and plot the
//! worker hands over ([`crate::worker`]). Pages without that function (offline pages written by
//! the command line, tests) load on the main thread instead.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::{Array, ArrayBuffer, Function, Promise, Reflect, Uint8Array};
use memviz_core::snapshot::Trace;
use memviz_core::timeline::Layout;
use memviz_core::wire::{self, Parts, WireError};
use memviz_core::Snapshot;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::app::App;
use crate::model::PlotData;
use crate::worker::{encode_request, js_text, LoadRequest, WorkerTimings};

/// How a load in a worker ended.
pub enum Outcome {
    /// The model and the first plot.
    Loaded {
        /// The model.
        snap: Box<Snapshot>,
        /// The plot of the chosen device.
        plot: Box<PlotData>,
        /// The worker's timings.
        timings: WorkerTimings,
        /// Decoding on the page (ms).
        decode_ms: f64,
    },
    /// A profiler memory timeline: the page reads it itself.
    Profile,
    /// A message for the user.
    Failed(String),
    /// Stopped by the user.
    Cancelled,
    /// No worker can run here: load on the main thread.
    Unavailable,
}

/// The parts, as the worker sent them: `ArrayBuffer`s, each copied into place in pieces and then
/// let go.
struct JsParts {
    parts: Array,
    next: u32,
    scratch: Vec<u8>,
}

/// Bytes copied from a part at a time.
const PIECE_BYTES: usize = 1 << 20;

impl Parts for JsParts {
    fn next_part_len(&self) -> Option<usize> {
        let buf = self.parts.get(self.next);
        buf.dyn_ref::<ArrayBuffer>().map(|b| b.byte_length() as usize)
    }

    fn next_part_into(&mut self, dst: &mut [u8]) -> Result<(), WireError> {
        let buf = self.parts.get(self.next);
        let Some(buf) = buf.dyn_ref::<ArrayBuffer>() else {
            return Err(WireError("a column's part is missing".into()));
        };
        let arr = Uint8Array::new(buf);
        if arr.length() as usize != dst.len() {
            return Err(WireError(format!("a part has {} bytes, its column needs {}", arr.length(), dst.len())));
        }
        arr.copy_to(dst);
        self.release(buf);
        Ok(())
    }

    fn next_part(&mut self, unit: usize, take: &mut dyn FnMut(&[u8])) -> Result<usize, WireError> {
        let buf = self.parts.get(self.next);
        let Some(buf) = buf.dyn_ref::<ArrayBuffer>() else {
            return Err(WireError("a column's part is missing".into()));
        };
        let arr = Uint8Array::new(buf);
        let len = arr.length() as usize;
        let piece = (PIECE_BYTES / unit.max(1)).max(1) * unit.max(1);
        self.scratch.resize(piece.min(len), 0);
        let mut at = 0;
        while at < len {
            let end = (at + piece).min(len);
            let out = &mut self.scratch[..end - at];
            arr.subarray(at as u32, end as u32).copy_to(out);
            take(out);
            at = end;
        }
        self.release(buf);
        Ok(len)
    }
}

impl JsParts {
    /// Lets the part just copied go: `transfer(0)` frees its memory at once (where the browser
    /// has it) instead of at the next garbage collection.
    fn release(&mut self, buf: &ArrayBuffer) {
        if let Ok(f) = Reflect::get(buf, &JsValue::from_str("transfer")).and_then(|f| f.dyn_into::<Function>().map_err(JsValue::from)) {
            let _ = f.call1(buf, &JsValue::from_f64(0.0));
        }
        self.parts.set(self.next, JsValue::UNDEFINED);
        self.next += 1;
    }
}

fn load_fn() -> Option<Function> {
    Reflect::get(&js_sys::global(), &JsValue::from_str("memvizLoadInWorker")).ok()?.dyn_into().ok()
}

/// Whether this page can load in a worker.
pub fn available() -> bool {
    load_fn().is_some()
}

/// Loads `file` in a worker. `on_progress(app, read_bytes, phase)` runs as the worker reports;
/// the load's cancel function is kept in `App::cancel_load` while it runs.
pub async fn load(
    weak: &Weak<RefCell<App>>,
    file: &web_sys::File,
    request: &LoadRequest,
    on_progress: impl Fn(&mut App, f64, &str) + 'static,
) -> Outcome {
    let Some(f) = load_fn() else { return Outcome::Unavailable };
    let progress_weak = weak.clone();
    let progress = Closure::<dyn FnMut(f64, String)>::new(move |read_bytes: f64, phase: String| {
        if let Some(rc) = progress_weak.upgrade() {
            if let Ok(mut app) = rc.try_borrow_mut() {
                on_progress(&mut app, read_bytes, &phase);
            }
        }
    });
    let req = Uint8Array::from(encode_request(request).as_slice());
    let Ok(handle) = f.call3(&JsValue::NULL, file, &req, progress.as_ref()) else {
        return Outcome::Unavailable;
    };
    let promise = |k: &str| Reflect::get(&handle, &JsValue::from_str(k)).ok().and_then(|p| p.dyn_into::<Promise>().ok());
    let cancel = Reflect::get(&handle, &JsValue::from_str("cancel")).ok().and_then(|c| c.dyn_into::<Function>().ok());
    let (Some(model), Some(done)) = (promise("model"), promise("done")) else { return Outcome::Unavailable };
    crate::app::with_app(weak, |app| app.cancel_load = cancel);
    let warm = WarmHeap::start((file.size() * WARM_SHARE) as usize);
    let outcome = receive(weak, model, done, &warm).await;
    warm.release();
    crate::app::with_app(weak, |app| app.cancel_load = None);
    // The progress callback lives until the worker is gone.
    drop(progress);
    outcome
}

/// What a settled promise of the worker's means: its value, or how the load ended.
async fn settle(p: Promise) -> Result<JsValue, Outcome> {
    let flag = |v: &JsValue, k: &str| Reflect::get(v, &JsValue::from_str(k)).ok().is_some_and(|x| x.is_truthy());
    match JsFuture::from(p).await {
        Ok(v) if flag(&v, "profile") => Err(Outcome::Profile),
        Ok(v) => Ok(v),
        Err(e) if flag(&e, "workerUnavailable") => Err(Outcome::Unavailable),
        Err(e) => {
            let msg = js_text(&e);
            Err(if msg == "cancelled" { Outcome::Cancelled } else { Outcome::Failed(msg) })
        }
    }
}

fn get_array(v: &JsValue, k: &str) -> Option<Array> {
    Reflect::get(v, &JsValue::from_str(k)).ok().and_then(|a| a.dyn_into::<Array>().ok())
}

fn buffer_bytes(v: &JsValue) -> Option<Vec<u8>> {
    let b = v.dyn_ref::<ArrayBuffer>()?;
    Some(Uint8Array::new(b).to_vec())
}

/// Share of the file's size touched ahead of the model and plot (together they take 1.1-1.2 times
/// the file: 1M entries, 1 GB); memory touched beyond what they need stays mapped, unused.
const WARM_SHARE: f64 = 1.2;

/// Bytes touched per turn of the event loop.
const WARM_BLOCK_BYTES: usize = 8 << 20;

/// Page memory touched while the worker works and then freed, so that the model and plot are
/// copied into memory that is already mapped: the first touch of fresh memory is most of the
/// cost of copying them in, and would otherwise fall into those two copies.
struct WarmHeap {
    blocks: RefCell<Vec<Vec<u8>>>,
    stopped: Cell<bool>,
}

impl WarmHeap {
    fn start(target_bytes: usize) -> Rc<WarmHeap> {
        let warm = Rc::new(WarmHeap { blocks: RefCell::new(Vec::new()), stopped: Cell::new(false) });
        let w = Rc::clone(&warm);
        wasm_bindgen_futures::spawn_local(async move {
            let mut touched = 0;
            while touched < target_bytes && !w.stopped.get() {
                let n = WARM_BLOCK_BYTES.min(target_bytes - touched);
                w.blocks.borrow_mut().push(vec![1u8; n]);
                touched += n;
                crate::app::next_tick().await;
            }
        });
        warm
    }

    /// Frees what was touched (the allocator keeps it for what comes next).
    fn release(&self) {
        self.stopped.set(true);
        self.blocks.borrow_mut().clear();
    }
}

/// One message of a value sent in several ([`crate::worker`]): its head, group and field.
struct Head {
    bytes: Vec<u8>,
    group: u32,
    field: u32,
}

fn heads_of(value: &JsValue) -> Option<Vec<Head>> {
    let heads = get_array(value, "heads")?;
    let num = |h: &JsValue, k: &str| Reflect::get(h, &JsValue::from_str(k)).ok().and_then(|v| v.as_f64());
    heads
        .iter()
        .map(|h| {
            let bytes = buffer_bytes(&Reflect::get(&h, &JsValue::from_str("bytes")).ok()?)?;
            Some(Head { bytes, group: num(&h, "group")? as u32, field: num(&h, "field")? as u32 })
        })
        .collect()
}

/// Main-thread time spent copying in before taking events again (ms).
const COPY_SLICE_MS: f64 = 12.0;

/// Copies messages in, taking events whenever one turn has run for [`COPY_SLICE_MS`]; returns
/// the time spent copying (ms, without the breaks).
async fn copy_in(
    weak: &Weak<RefCell<App>>,
    heads: &[Head],
    src: &mut JsParts,
    mut each: impl FnMut(&Head, &mut JsParts) -> Result<(), WireError>,
) -> Result<f64, WireError> {
    let now = || crate::app::with_app(weak, |app| app.ui.now_ms()).unwrap_or(0.0);
    let (mut busy_ms, mut turn_start) = (0.0, now());
    for h in heads {
        each(h, src)?;
        let t = now();
        if t - turn_start > COPY_SLICE_MS {
            busy_ms += t - turn_start;
            crate::worker::yield_to_events().await;
            turn_start = now();
        }
    }
    Ok(busy_ms + (now() - turn_start))
}

/// The snapshot from its messages: the snapshot without traces (group 0), then each device's
/// trace field by field (group 1 + device position).
async fn receive_snapshot(weak: &Weak<RefCell<App>>, heads: &[Head], parts: Array) -> Result<(Snapshot, f64), WireError> {
    let mut src = JsParts { parts, next: 0, scratch: Vec::new() };
    let mut snap: Option<Snapshot> = None;
    let mut traces: Vec<Trace> = Vec::new();
    let ms = copy_in(weak, heads, &mut src, |h, src| {
        match (h.group, snap.as_mut()) {
            (0, None) => snap = Some(wire::decode(&h.bytes, src)?),
            (g, Some(s)) if g >= 1 && (g as usize) <= s.devices.len() => {
                let k = g as usize - 1;
                while traces.len() <= k {
                    traces.push(Trace::default());
                }
                if let Some(t) = traces.get_mut(k) {
                    wire::decode_field(t, h.field, &h.bytes, src)?;
                }
            }
            _ => return Err(WireError("the model's parts came out of order".into())),
        }
        Ok(())
    })
    .await?;
    let mut snap = snap.ok_or_else(|| WireError("the model is missing".into()))?;
    for (d, t) in snap.devices.iter_mut().zip(traces) {
        d.trace = t;
    }
    Ok((snap, ms))
}

/// The plot and the worker's timings from their messages: the plot without its layout
/// (group 0), the layout field by field (group 1), the timings (group 2).
async fn receive_plot(weak: &Weak<RefCell<App>>, heads: &[Head], parts: Array) -> Result<(PlotData, WorkerTimings, f64), WireError> {
    let mut src = JsParts { parts, next: 0, scratch: Vec::new() };
    let mut plot: Option<PlotData> = None;
    let mut layout = Layout::default();
    let mut timings = WorkerTimings::default();
    let ms = copy_in(weak, heads, &mut src, |h, src| {
        match h.group {
            0 => plot = Some(wire::decode(&h.bytes, src)?),
            1 => wire::decode_field(&mut layout, h.field, &h.bytes, src)?,
            2 => timings = wire::decode(&h.bytes, src)?,
            _ => return Err(WireError("the plot's parts came out of order".into())),
        }
        Ok(())
    })
    .await?;
    let mut plot = plot.ok_or_else(|| WireError("the plot is missing".into()))?;
    plot.layout = layout;
    Ok((plot, timings, ms))
}

/// Takes the model as soon as it comes (the worker lays out meanwhile), then the plot.
async fn receive(weak: &Weak<RefCell<App>>, model: Promise, done: Promise, warm: &WarmHeap) -> Outcome {
    let incomplete = || Outcome::Failed("The loader sent an incomplete answer.".into());
    let failed = |e: WireError| Outcome::Failed(format!("Could not open the file: {e}"));
    let value = match settle(model).await {
        Ok(v) => v,
        Err(o) => return o,
    };
    let (Some(heads), Some(parts)) = (heads_of(&value), get_array(&value, "parts")) else {
        return incomplete();
    };
    warm.release();
    let (snap, model_ms) = match receive_snapshot(weak, &heads, parts).await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    drop(heads);
    let value = match settle(done).await {
        Ok(v) => v,
        Err(o) => return o,
    };
    let (Some(heads), Some(parts)) = (heads_of(&value), get_array(&value, "parts")) else {
        return incomplete();
    };
    let (plot, timings, plot_ms) = match receive_plot(weak, &heads, parts).await {
        Ok(p) => p,
        Err(e) => return failed(e),
    };
    Outcome::Loaded { snap: Box::new(snap), plot: Box::new(plot), timings, decode_ms: model_ms + plot_ms }
}
