//! The page's side of loading in a Web Worker: starts the load through `www/boot.js`'s
//! `memvizLoadInWorker`, passes its progress and its cancel function on, and decodes the model
//! and plot the worker hands over ([`crate::worker`]), reading each answer as a
//! [`crate::protocol::Message`]. Pages without that function (offline pages written by the
//! command line, tests) load on the main thread instead. A run's ranks are summarized the same
//! way ([`summarize`]): only each rank's digest comes back. Nothing here knows the page's state:
//! the caller gives callbacks.

use js_sys::{Array, ArrayBuffer, Function, Promise, Reflect, Uint8Array};
use memviz_core::wire::{self, Parts, WireError};
use memviz_core::Snapshot;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::feed::{js_text, QueueSlices};
use crate::protocol::{
    encode_request, from_js, LoadRequest, Message, Phase, WorkerTimings, LAYOUT_GROUP, PLOT_GROUP, SNAPSHOT_GROUP,
    SUMMARY_GROUP, TIME_MAP_GROUP, TIMINGS_GROUP, TRACE_GROUP,
};
use memviz_view::model::PlotData;
use memviz_view::ranks::RankDigest;
use memviz_view::xmap::TimeMap;

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
        /// To call once the page has shown the file: the worker is then ended when the page is
        /// idle (ending it frees its memory, which holds the page's thread up if it is busy).
        shown: Option<Function>,
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
        if let Ok(f) = Reflect::get(buf, &JsValue::from_str("transfer")).and_then(|f| f.dyn_into::<Function>()) {
            let _ = f.call1(buf, &JsValue::from_f64(0.0));
        }
        self.parts.set(self.next, JsValue::UNDEFINED);
        self.next += 1;
    }
}

fn load_fn() -> Option<Function> {
    Reflect::get(&js_sys::global(), &JsValue::from_str("memvizLoadInWorker")).ok()?.dyn_into().ok()
}

/// The slices of `file` read by a reading worker for the page's own decoding (`www/boot.js`'s
/// `memvizReadForPage`), and the function that stops that reading (a slice waited for then
/// fails), or `None` on pages without it (the page then reads the file itself).
pub fn read_for_page(file: &web_sys::File) -> Option<(QueueSlices, Option<Function>)> {
    let read: Function =
        Reflect::get(&js_sys::global(), &JsValue::from_str("memvizReadForPage")).ok()?.dyn_into().ok()?;
    let reading = read.call1(&JsValue::NULL, file).ok()?;
    let next: Function = Reflect::get(&reading, &JsValue::from_str("next")).ok()?.dyn_into().ok()?;
    let stop: Option<Function> =
        Reflect::get(&reading, &JsValue::from_str("stop")).ok().and_then(|f| f.dyn_into().ok());
    Some((QueueSlices::new(next, file.size() as u64, stop.clone()), stop))
}

/// The read of all of `file` that the page's script began as it was chosen or dropped
/// (`www/boot.js`'s `memvizTakeEarlyRead`), if it began one: a Promise of its bytes.
pub fn take_early_read(file: &web_sys::File) -> Option<js_sys::Promise> {
    let take: Function =
        Reflect::get(&js_sys::global(), &JsValue::from_str("memvizTakeEarlyRead")).ok()?.dyn_into().ok()?;
    take.call1(&JsValue::NULL, file).ok()?.dyn_into().ok()
}

/// Tells the page's script which files to begin reading as they are chosen or dropped, before
/// the page's handler runs (`www/boot.js`'s `readEarly`): those the page reads whole, and the
/// head of those it reads in pieces.
pub fn set_read_early_limits(whole_max_bytes: u64, on_page_max_bytes: u64) {
    let limits = js_sys::Object::new();
    let set = |k: &str, v: u64| Reflect::set(&limits, &JsValue::from_str(k), &JsValue::from_f64(v as f64));
    let _ = set("wholeMaxBytes", whole_max_bytes);
    let _ = set("onPageMaxBytes", on_page_max_bytes);
    let _ = Reflect::set(&js_sys::global(), &JsValue::from_str("memvizReadEarly"), &limits);
}

/// Whether this page can load in a worker.
pub fn available() -> bool {
    load_fn().is_some()
}

/// Now (ms, `performance.now()`).
fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// Loads `file` in a worker. `on_progress(read_bytes, phase)` runs as the worker reports;
/// `set_cancel` gets the function that stops the load once it runs, and `None` once it is over.
pub async fn load(
    file: &web_sys::File,
    request: &LoadRequest,
    on_progress: impl Fn(u64, Phase) + 'static,
    set_cancel: impl Fn(Option<Function>),
) -> Outcome {
    let Some(f) = load_fn() else { return Outcome::Unavailable };
    let progress = Closure::<dyn FnMut(JsValue)>::new(move |m: JsValue| {
        if let Ok(Message::Progress { read_bytes, phase }) = from_js(&m) {
            on_progress(read_bytes, phase);
        }
    });
    let req = Uint8Array::from(encode_request(request).as_slice());
    let Ok(handle) = f.call3(&JsValue::NULL, file, &req, progress.as_ref()) else {
        return Outcome::Unavailable;
    };
    let function =
        |k: &str| Reflect::get(&handle, &JsValue::from_str(k)).ok().and_then(|c| c.dyn_into::<Function>().ok());
    let Some(next) = function("next") else { return Outcome::Unavailable };
    set_cancel(function("cancel"));
    let mut outcome = receive(&next).await;
    if let Outcome::Loaded { shown, .. } = &mut outcome {
        *shown = function("shown");
    }
    set_cancel(None);
    // The progress callback lives until the worker is gone.
    drop(progress);
    outcome
}

/// How summarizing one rank in a worker ended.
pub enum Summarized {
    /// Its digest.
    Done(RankDigest),
    /// Why not, for the user.
    Failed(String),
    /// No worker can run here: summarize on the main thread.
    Unavailable,
}

/// Summarizes `file` in a worker of its own ([`crate::worker`] with `summary_only`): only the
/// rank's digest comes back, never its model, and the worker is ended at once, which frees its
/// memory. `on_progress(read_bytes)` runs as the worker reports.
pub async fn summarize(file: &web_sys::File, name: &str, on_progress: impl Fn(u64) + 'static) -> Summarized {
    let Some(f) = load_fn() else { return Summarized::Unavailable };
    let progress = Closure::<dyn FnMut(JsValue)>::new(move |m: JsValue| {
        if let Ok(Message::Progress { read_bytes, .. }) = from_js(&m) {
            on_progress(read_bytes);
        }
    });
    let request = LoadRequest { name: name.to_string(), summary_only: true, ..LoadRequest::default() };
    let req = Uint8Array::from(encode_request(&request).as_slice());
    let Ok(handle) = f.call3(&JsValue::NULL, file, &req, progress.as_ref()) else {
        return Summarized::Unavailable;
    };
    let function =
        |k: &str| Reflect::get(&handle, &JsValue::from_str(k)).ok().and_then(|c| c.dyn_into::<Function>().ok());
    let Some(next) = function("next") else { return Summarized::Unavailable };
    let mut digest = None;
    let out = loop {
        match next_answer(&next).await {
            Ok(Answer::Head(h, parts)) if h.group == SUMMARY_GROUP => {
                let mut src = JsParts { parts, next: 0, scratch: Vec::new() };
                match wire::decode::<RankDigest>(&h.bytes, &mut src) {
                    Ok(d) => digest = Some(d),
                    Err(e) => break Summarized::Failed(format!("Could not summarize {name}: {e}")),
                }
            }
            Ok(Answer::Done) => {
                break digest.map_or_else(|| Summarized::Failed(INCOMPLETE.into()), Summarized::Done);
            }
            Ok(Answer::Profile) => {
                break Summarized::Failed(format!("{name} is a profiler memory timeline, not a snapshot."))
            }
            Ok(_) => break Summarized::Failed(INCOMPLETE.into()),
            Err(Outcome::Failed(m)) => break Summarized::Failed(m),
            Err(Outcome::Unavailable) => break Summarized::Unavailable,
            Err(_) => break Summarized::Failed(format!("Stopped reading {name}.")),
        }
    };
    // Ended now: its heap is freed while the page does little but show progress.
    if let Some(end) = function("end") {
        let _ = end.call0(&JsValue::NULL);
    }
    drop(progress);
    out
}

/// One of the loading worker's answers (`www/boot.js`, `next()`).
enum Answer {
    /// One message of a value, and the parts it needs.
    Head(Head, Array),
    /// The model is complete; the plot follows.
    ModelEnd,
    /// The last answer.
    Done,
    /// A profiler memory timeline: the page reads it itself.
    Profile,
}

/// One message of a value sent in several ([`crate::worker`]): its head, group and field.
struct Head {
    bytes: Vec<u8>,
    group: u32,
    field: u32,
}

/// The text of an answer that is not one.
const INCOMPLETE: &str = "The loader sent an incomplete answer.";

/// The next answer, or how the load ended. `next()` resolves to the worker's messages (a head
/// with the parts before it) and rejects with how the load ended: an error, cancelled, or no
/// worker here.
async fn next_answer(next: &Function) -> Result<Answer, Outcome> {
    let Some(p) = next.call0(&JsValue::NULL).ok().and_then(|p| p.dyn_into::<Promise>().ok()) else {
        return Err(Outcome::Unavailable);
    };
    let (v, resolved) = match JsFuture::from(p).await {
        Ok(v) => (v, true),
        Err(e) => (e, false),
    };
    let message = match from_js(&v) {
        Ok(m) => m,
        Err(_) if !resolved => return Err(Outcome::Failed(js_text(&v))),
        Err(e) => {
            web_sys::console::error_1(&JsValue::from_str(&format!("memviz: the loader sent {e}")));
            return Err(Outcome::Failed(INCOMPLETE.into()));
        }
    };
    match message {
        Message::Head { bytes, group, field } if resolved => {
            let parts = Reflect::get(&v, &JsValue::from_str("parts")).ok().and_then(|a| a.dyn_into::<Array>().ok());
            match parts {
                Some(parts) => Ok(Answer::Head(Head { bytes: buffer_bytes(&bytes), group, field }, parts)),
                None => Err(Outcome::Failed(INCOMPLETE.into())),
            }
        }
        Message::ModelEnd if resolved => Ok(Answer::ModelEnd),
        Message::Done if resolved => Ok(Answer::Done),
        Message::Profile if resolved => Ok(Answer::Profile),
        Message::Error { message } => Err(Outcome::Failed(message)),
        Message::Unavailable { .. } => Err(Outcome::Unavailable),
        Message::Cancelled => Err(Outcome::Cancelled),
        _ => Err(Outcome::Failed(INCOMPLETE.into())),
    }
}

fn buffer_bytes(b: &ArrayBuffer) -> Vec<u8> {
    Uint8Array::new(b).to_vec()
}

/// Main-thread time spent copying in before taking events again (ms).
const COPY_SLICE_MS: f64 = 12.0;

/// The snapshot as its messages come: the snapshot without traces first, then each device's
/// trace field by field, decoded into the (empty) trace the snapshot has for it.
#[derive(Default)]
struct SnapshotIn {
    snap: Option<Snapshot>,
}

impl SnapshotIn {
    fn take(&mut self, h: &Head, src: &mut JsParts) -> Result<(), WireError> {
        let device = (h.group as usize).checked_sub(TRACE_GROUP as usize);
        match (self.snap.as_mut(), h.group, device) {
            (None, SNAPSHOT_GROUP, _) => self.snap = Some(wire::decode(&h.bytes, src)?),
            (Some(s), _, Some(k)) if k < s.devices.len() => {
                if let Some(d) = s.devices.get_mut(k) {
                    wire::decode_field(&mut d.trace, h.field, &h.bytes, src)?;
                }
            }
            _ => return Err(WireError("the model's parts came out of order".into())),
        }
        Ok(())
    }

    fn finish(self) -> Result<Snapshot, WireError> {
        self.snap.ok_or_else(|| WireError("the model is missing".into()))
    }
}

/// The plot and the worker's timings as their messages come: the plot without its layout and
/// time map first, then the layout and the time map field by field, decoded into it, and the
/// timings.
#[derive(Default)]
struct PlotIn {
    plot: Option<PlotData>,
    timings: WorkerTimings,
}

impl PlotIn {
    fn take(&mut self, h: &Head, src: &mut JsParts) -> Result<(), WireError> {
        match (self.plot.as_mut(), h.group) {
            (None, PLOT_GROUP) => self.plot = Some(wire::decode(&h.bytes, src)?),
            (Some(p), LAYOUT_GROUP) => wire::decode_field(&mut p.layout, h.field, &h.bytes, src)?,
            (Some(p), TIME_MAP_GROUP) => {
                wire::decode_field(p.time.get_or_insert_with(TimeMap::default), h.field, &h.bytes, src)?;
            }
            (Some(_), TIMINGS_GROUP) => self.timings = wire::decode(&h.bytes, src)?,
            _ => return Err(WireError("the plot's parts came out of order".into())),
        }
        Ok(())
    }

    fn finish(self) -> Result<(PlotData, WorkerTimings), WireError> {
        let plot = self.plot.ok_or_else(|| WireError("the plot is missing".into()))?;
        Ok((plot, self.timings))
    }
}

/// Copies the model and the plot in as their messages come (the worker lays out while the model
/// is copied in), taking events whenever copying has gone on for [`COPY_SLICE_MS`].
async fn receive(next: &Function) -> Outcome {
    let failed = |e: WireError| Outcome::Failed(format!("Could not open the file: {e}"));
    let (mut model, mut plot) = (SnapshotIn::default(), PlotIn::default());
    let mut model_done = false;
    let (mut decode_ms, mut since_yield_ms) = (0.0, 0.0);
    // One buffer for the pieces of every message's parts.
    let mut scratch = Vec::new();
    loop {
        let (h, parts) = match next_answer(next).await {
            Ok(Answer::Head(h, parts)) => (h, parts),
            Ok(Answer::ModelEnd) => {
                model_done = true;
                continue;
            }
            Ok(Answer::Done) => break,
            Ok(Answer::Profile) => return Outcome::Profile,
            Err(o) => return o,
        };
        let t0 = now_ms();
        let mut src = JsParts { parts, next: 0, scratch: std::mem::take(&mut scratch) };
        let taken = if model_done { plot.take(&h, &mut src) } else { model.take(&h, &mut src) };
        scratch = src.scratch;
        if let Err(e) = taken {
            return failed(e);
        }
        let spent = now_ms() - t0;
        decode_ms += spent;
        since_yield_ms += spent;
        if since_yield_ms > COPY_SLICE_MS {
            crate::tasks::yield_to_events().await;
            since_yield_ms = 0.0;
        }
    }
    if !model_done {
        return Outcome::Failed(INCOMPLETE.into());
    }
    let snap = match model.finish() {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let (plot, timings) = match plot.finish() {
        Ok(p) => p,
        Err(e) => return failed(e),
    };
    Outcome::Loaded { snap: Box::new(snap), plot: Box::new(plot), timings, decode_ms, shown: None }
}
