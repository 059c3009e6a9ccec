//! The loading Web Worker's side: reads a `File` in slices (the next one while this one is
//! decoded, [`crate::feed`]), decodes it, builds the model and the first plot, and hands both to
//! the page as bytes ([`memviz_core::wire`]), so none of that work runs on the page's main thread.
//!
//! Its messages to the page are [`Message`]s (`www/worker.js` starts this; `www/boot.js` listens):
//! - [`Message::Progress`] after each slice and at each [`Phase`];
//! - [`Message::Part`] for each large column, in order (the buffer is transferred);
//! - [`Message::Head`] after the parts of each value: the snapshot without its traces
//!   ([`SNAPSHOT_GROUP`]), each device's trace field by field ([`TRACE_GROUP`] + device position,
//!   see [`ByField`]), then [`Message::ModelEnd`] (all sent before the layout is built, so the
//!   page copies them in meanwhile); the plot without its layout and time map ([`PLOT_GROUP`]),
//!   the layout field by field ([`LAYOUT_GROUP`]), the time map field by field
//!   ([`TIME_MAP_GROUP`], if there is one), the [`WorkerTimings`] ([`TIMINGS_GROUP`]);
//! - for a summary-only request (a rank of a run), after the model is built, only the rank's
//!   digest ([`SUMMARY_GROUP`]) and [`Message::Done`];
//! - [`Message::Done`], or [`Message::Error`] with a message for the user, or
//!   [`Message::Profile`] when the file is a profiler memory timeline (the page reads those
//!   itself).

use js_sys::{Array, ArrayBuffer, Uint8Array};
use memviz_core::snapshot::Trace;
use memviz_core::wire::{ByField, Encoder, Wire};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::DedicatedWorkerGlobalScope;

use crate::feed::{open_error, Fed, Feed, Host, OnProfile, QueueSlices};
use crate::protocol::{
    decode_request, to_js, Message, Phase, LAYOUT_GROUP, PLOT_GROUP, SNAPSHOT_GROUP, SUMMARY_GROUP, TIME_MAP_GROUP,
    TIMINGS_GROUP, TRACE_GROUP,
};
pub use crate::protocol::{encode_request, LoadRequest, WorkerTimings};
use memviz_view::model::{choose_device, PlotData};
use memviz_view::ranks::RankDigest;

/// Sends one message; its bytes, if any, are handed over, not copied.
fn post(scope: &DedicatedWorkerGlobalScope, message: Message<ArrayBuffer>) {
    let transfer = message.transfer().cloned();
    let object = to_js(message);
    let _ = match transfer {
        Some(t) => scope.post_message_with_transfer(&object, &Array::of1(&t)),
        None => scope.post_message(&object),
    };
}

/// `bytes` in a buffer of their own, to transfer.
fn buffer(bytes: &[u8]) -> ArrayBuffer {
    let arr = Uint8Array::new_with_length(bytes.len() as u32);
    arr.copy_from(bytes);
    arr.buffer()
}

fn progress(scope: &DedicatedWorkerGlobalScope, read_bytes: u64, phase: Phase) {
    post(scope, Message::Progress { read_bytes, phase });
}

fn fail(scope: &DedicatedWorkerGlobalScope, message: String) {
    post(scope, Message::Error { message });
}

fn now_ms(scope: &DedicatedWorkerGlobalScope) -> f64 {
    scope.performance().map_or(0.0, |p| p.now())
}

/// Loads `file` as `request` (bytes of a [`LoadRequest`]) asks; answers with messages only.
#[wasm_bindgen]
pub async fn worker_load(file: web_sys::File, request: Vec<u8>, next_slice: js_sys::Function) {
    let Ok(scope) = js_sys::global().dyn_into::<DedicatedWorkerGlobalScope>() else { return };
    let request = match decode_request(&request) {
        Ok(r) => r,
        Err(e) => return fail(&scope, format!("Could not open the file: {e}")),
    };
    if let Err(message) = load(&scope, &file, &request, &next_slice).await {
        fail(&scope, message);
    }
}

/// Most time decoding goes on without taking events (ms).
const YIELD_EVERY_MS: f64 = 4.0;

/// The worker's thread: progress goes to the page as messages; nothing stops the load (the page
/// ends the worker instead).
struct WorkerHost<'a>(&'a DedicatedWorkerGlobalScope);

impl Host for WorkerHost<'_> {
    fn now_ms(&self) -> f64 {
        now_ms(self.0)
    }

    async fn take_events(&mut self) {
        crate::tasks::yield_to_events().await;
    }

    fn progress(&mut self, read_bytes: u64) -> bool {
        progress(self.0, read_bytes, Phase::Reading);
        true
    }
}

async fn load(
    scope: &DedicatedWorkerGlobalScope,
    file: &web_sys::File,
    request: &LoadRequest,
    next_slice: &js_sys::Function,
) -> Result<(), String> {
    let name = &request.name;
    let total_bytes = file.size() as u64;
    let feed = Feed::new(name, total_bytes, YIELD_EVERY_MS, OnProfile::Stop);
    // The page reads slices ahead while this one is decoded.
    let mut slices = QueueSlices::new(next_slice.clone(), total_bytes, None);
    let (fed, fed_timings) = feed.run(&mut slices, &mut WorkerHost(scope)).await?;
    drop(slices);
    let loader = match fed {
        Fed::Decoded(loader) => loader,
        // Profiler timelines are the page's to read.
        Fed::Profile { .. } => {
            post(scope, Message::Profile);
            return Ok(());
        }
        // Never: the page stops a load by ending the worker.
        Fed::Stopped => return Ok(()),
    };
    // Waiting for slices includes the turns of the event loop that let them in.
    let mut timings = WorkerTimings {
        read_ms: fed_timings.read_ms + fed_timings.wait_ms,
        parse_ms: fed_timings.parse_ms,
        ..WorkerTimings::default()
    };
    progress(scope, total_bytes, Phase::BuildingModel);
    let t0 = now_ms(scope);
    // The page shows none of the traces' warnings: their checks are skipped (as on the page).
    let snap = loader.finish_unchecked().map_err(|e| open_error(name, &e))?.skip_trace_checks();
    if request.summary_only {
        // A rank of a run: its digest (a few kilobytes) goes to the page, the model stays here.
        let digest = RankDigest::of(&memviz_core::ranks::summarize_for_overview(&snap));
        drop(snap);
        post_value(scope, &digest, SUMMARY_GROUP);
        post(scope, Message::Done);
        return Ok(());
    }
    let t1 = now_ms(scope);
    timings.model_ms = t1 - t0;
    progress(scope, total_bytes, Phase::HandingOver);
    // The model goes to the page first, so the page copies it in while the layout is built here:
    // the snapshot without its traces (group 0), then each device's trace field by field
    // (group 1 + device position), so the page can copy it in over many short tasks.
    let mut snap = snap;
    let traces: Vec<Trace> = snap.devices.iter_mut().map(|d| std::mem::take(&mut d.trace)).collect();
    post_value(scope, &snap, SNAPSHOT_GROUP);
    for (k, t) in traces.iter().enumerate() {
        post_by_field(scope, t, TRACE_GROUP + k as u32);
    }
    post(scope, Message::ModelEnd);
    for (d, t) in snap.devices.iter_mut().zip(traces) {
        d.trace = t;
    }
    let t2 = now_ms(scope);
    timings.encode_ms = t2 - t1;
    progress(scope, total_bytes, Phase::LayingOut);
    let device_pos = choose_device(&snap, request.preferred_device);
    let mut plot = PlotData::build(&snap, device_pos, request.options);
    drop(snap);
    let t3 = now_ms(scope);
    timings.layout_ms = t3 - t2;
    // The plot without its layout and time map (group 0), the layout field by field (group 1),
    // the time map field by field (group 3, when there is one).
    let layout = std::mem::take(&mut plot.layout);
    let time = plot.time.take();
    post_value(scope, &plot, PLOT_GROUP);
    drop(plot);
    post_by_field(scope, &layout, LAYOUT_GROUP);
    drop(layout);
    if let Some(t) = &time {
        post_by_field(scope, t, TIME_MAP_GROUP);
    }
    drop(time);
    timings.encode_ms += now_ms(scope) - t3;
    post_value(scope, &timings, TIMINGS_GROUP);
    post(scope, Message::Done);
    Ok(())
}

/// Bytes of one message of a value sent field by field (a column of a gigabyte trace takes
/// hundreds): the page copies one in a few milliseconds, even where touching fresh memory is
/// slow (8 MiB messages took 25-60 ms each there, so one message could make a long task).
const MESSAGE_BYTES: usize = 1 << 20;

/// Sends one message: the parts `put` writes, then its head tagged with `group` and `field`.
fn post_message(scope: &DedicatedWorkerGlobalScope, group: u32, field: u32, put: &dyn Fn(&mut Encoder<'_>)) {
    let mut sink = |part: &[u8]| post(scope, Message::Part { bytes: buffer(part) });
    let mut e = Encoder::new(&mut sink);
    put(&mut e);
    let head = e.finish();
    post(scope, Message::Head { bytes: buffer(&head), group, field });
}

/// Sends a whole value as one message.
fn post_value<T: Wire>(scope: &DedicatedWorkerGlobalScope, v: &T, group: u32) {
    post_message(scope, group, 0, &|e| v.put(e));
}

/// Sends a value field by field ([`ByField`]).
fn post_by_field<T: ByField>(scope: &DedicatedWorkerGlobalScope, v: &T, group: u32) {
    v.put_by_field(MESSAGE_BYTES, &mut |field, put| post_message(scope, group, field, put));
}
