//! Loading files one after another: in a loading Web Worker where one starts, else on the
//! page in slices, with progress, cancel and the timings of each phase.

#[allow(clippy::wildcard_imports)]
use super::*;
use crate::protocol::Phase;

/// Loads queued sources one after the other.
pub(crate) async fn run_queue(weak: Weak<RefCell<App>>) {
    loop {
        let Some(Some(source)) = with_app(&weak, |app| app.queue.pop_front()) else {
            break;
        };
        load_one(&weak, source).await;
    }
    with_app(&weak, |app| {
        app.loader_running = false;
        app.loading = None;
        app.request_redraw();
    });
}

#[allow(clippy::too_many_lines)] // one load from the first slice to the first frame; splits into the shared feed loop
pub(crate) async fn load_one(weak: &Weak<RefCell<App>>, source: Source) {
    let Some(started_ms) = with_app(weak, |app| app.ui.now_ms()) else {
        return;
    };
    let now = || with_app(weak, |app| app.ui.now_ms()).unwrap_or(0.0);
    let (name, total_bytes) = match &source {
        Source::File(f) => (f.name(), f.size() as u64),
        Source::Demo => (DEMO_NAME.to_string(), DEMO_SNAPSHOT.len() as u64),
        Source::Bytes { name, bytes } => (name.clone(), bytes.len() as u64),
    };
    let in_memory: &[u8] = match &source {
        Source::File(_) => &[],
        Source::Demo => DEMO_SNAPSHOT,
        Source::Bytes { bytes, .. } => bytes,
    };
    with_app(weak, |app| {
        app.error = None;
        app.cancel_requested = false;
        app.status_note = None;
        app.loading = Some(Loading {
            name: name.clone(),
            fraction: 0.0,
            phase: "Reading",
            read_bytes: 0,
            total_bytes,
            left_ms: None,
        });
        app.request_redraw();
    });
    let mut timings = Timings { started_ms, ..Timings::default() };
    let fail = |msg: String| {
        with_app(weak, |app| {
            app.error = Some(msg);
            app.loading = None;
            app.request_redraw();
        });
    };
    if let Source::File(file) = &source {
        if worker_client::available() {
            match load_in_worker(weak, file, &name, total_bytes, &mut timings).await {
                WorkerEnd::Finished => return,
                // Profiler timelines and pages without workers load below.
                WorkerEnd::LoadHere => {}
            }
        }
    }
    let mut loader = ModelLoader::new(total_bytes);
    let blob = match &source {
        Source::File(f) => Some(gloo_file::Blob::from(web_sys::Blob::from(f.clone()))),
        Source::Demo | Source::Bytes { .. } => None,
    };
    // Slices of the file; the next one is read while this one is decoded.
    let read = |offset: u64| {
        let end = (offset + CHUNK_BYTES as u64).min(total_bytes);
        blob.as_ref().map(|b| gloo_file::futures::read_as_bytes(&b.slice(offset, end)))
    };
    let mut pending = read(0);
    let mut offset = 0u64;
    let mut last_yield_ms = started_ms;
    let mut profile_bytes: Option<Vec<u8>> = None;
    while offset < total_bytes {
        let end = (offset + CHUNK_BYTES as u64).min(total_bytes);
        let t0 = now();
        let owned;
        let chunk: &[u8] = match pending.take() {
            Some(reading) => match reading.await {
                Ok(bytes) => {
                    owned = bytes;
                    &owned
                }
                Err(e) => {
                    fail(format!(
                        "Could not read {name}: {}. Is the file still there and readable?",
                        e.to_string().trim_end_matches('.')
                    ));
                    return;
                }
            },
            None => in_memory.get(offset as usize..end as usize).unwrap_or(&[]),
        };
        if end < total_bytes {
            pending = read(end);
        }
        let t1 = now();
        timings.read_ms += t1 - t0;
        if t1 - t0 > 1.0 {
            // Waiting for the slice let the page repaint.
            last_yield_ms = t1;
        }
        // A profiler memory timeline (JSON list, maybe gzipped) is kept whole and read at the end.
        if offset == 0 && crate::panels::categories::maybe_profile(chunk) {
            profile_bytes = Some(Vec::new());
        }
        // Decoded in parts, letting the page repaint between them, so that the page never stops
        // responding for long.
        let mut fed = Ok(());
        let mut waited_ms = 0.0;
        match &mut profile_bytes {
            Some(kept) => kept.extend_from_slice(chunk),
            None => {
                for part in chunk.chunks(FEED_BYTES) {
                    fed = loader.feed(part);
                    if fed.is_err() {
                        break;
                    }
                    let t = now();
                    if t - last_yield_ms > YIELD_EVERY_MS {
                        next_tick().await;
                        last_yield_ms = now();
                        waited_ms += last_yield_ms - t;
                    }
                }
            }
        }
        let t2 = now();
        timings.parse_ms += t2 - t1 - waited_ms;
        timings.wait_ms += waited_ms;
        if let Err(e) = fed {
            fail(format!("Could not open {name}: {e}"));
            return;
        }
        offset = end;
        let fraction = loader.fraction();
        let elapsed_ms = t2 - started_ms;
        // Reading is most of the time; the rest (model, layout) takes about a third as long.
        let left_ms = (fraction > 0.02 && elapsed_ms > 250.0)
            .then(|| elapsed_ms * ((1.0 - fraction) / fraction + LATER_PHASES_SHARE));
        let cancelled = with_app(weak, |app| {
            if let Some(l) = &mut app.loading {
                l.fraction = fraction;
                l.read_bytes = offset;
                l.left_ms = left_ms;
            }
            app.request_redraw();
            app.cancel_requested
        })
        .unwrap_or(true);
        if cancelled {
            with_app(weak, |app| {
                app.loading = None;
                app.cancel_requested = false;
                app.status_note = Some(format!("Stopped loading {name}."));
                app.request_redraw();
            });
            return;
        }
        if offset < total_bytes && t2 - last_yield_ms > YIELD_EVERY_MS {
            // Let the page repaint the progress bar.
            next_tick().await;
            last_yield_ms = now();
            timings.wait_ms += last_yield_ms - t2;
        }
    }
    if let Some(kept) = profile_bytes.take() {
        match memviz_core::analysis::categories::read_profiler_timeline(&kept) {
            Ok(tl) => {
                with_app(weak, |app| {
                    app.analysis.categories.set_profile(name.clone(), &tl);
                    app.loading = None;
                    app.request_redraw();
                });
                return;
            }
            Err(_) => {
                if let Err(e) = loader.feed(&kept) {
                    fail(format!("Could not open {name}: {e}"));
                    return;
                }
            }
        }
    }
    let slow = |t: f64| t - started_ms > SHOW_PHASES_AFTER_MS;
    if slow(now()) {
        with_app(weak, |app| {
            if let Some(l) = &mut app.loading {
                l.phase = "Building the model";
            }
            app.request_redraw();
        });
        let tw = now();
        next_frame().await;
        timings.wait_ms += now() - tw;
    }
    let t0 = now();
    let snap = match loader.finish() {
        Ok(s) => s,
        Err(e) => {
            fail(format!("Could not open {name}: {e}"));
            return;
        }
    };
    timings.model_ms = now() - t0;
    if slow(now()) {
        with_app(weak, |app| {
            if let Some(l) = &mut app.loading {
                l.phase = "Laying out the timeline";
            }
            app.request_redraw();
        });
        let tw = now();
        next_frame().await;
        timings.wait_ms += now() - tw;
    }
    let t0 = now();
    let Some(view) = with_app(weak, |app| app.state.view) else {
        return;
    };
    let preferred = with_app(weak, |app| app.preferred_device).flatten();
    let device_pos = choose_device(&snap, preferred);
    let plot = PlotData::build(
        &snap,
        device_pos,
        Options {
            max_entries: DEFAULT_MAX_ENTRIES,
            mode: view.mode(),
            hide_freed: with_app(weak, |app| app.panels.hide_freed).unwrap_or(false),
        },
    );
    timings.layout_ms = now() - t0;
    timings.laid_out_ms = now();
    with_app(weak, |app| {
        app.finish_load(name, snap, plot, timings, None);
        app.request_redraw();
    });
}

/// How [`load_in_worker`] ended.
pub(crate) enum WorkerEnd {
    /// Loaded, failed or cancelled: nothing more to do.
    Finished,
    /// Load on the main thread instead.
    LoadHere,
}

/// Shows how far a load that started at `started_ms` is, with an estimate of the time left
/// while it reads.
fn show_progress(app: &mut App, started_ms: f64, total_bytes: u64, read_bytes: u64, phase: Phase) {
    let fraction = if total_bytes == 0 { 1.0 } else { (read_bytes as f64 / total_bytes as f64).min(1.0) };
    let elapsed_ms = app.ui.now_ms() - started_ms;
    // Reading is most of the time; the rest (model, layout) takes about a third as long.
    let left_ms = (phase == Phase::Reading && fraction > 0.02 && elapsed_ms > 250.0)
        .then(|| elapsed_ms * ((1.0 - fraction) / fraction + LATER_PHASES_SHARE));
    if let Some(l) = &mut app.loading {
        l.fraction = fraction;
        l.read_bytes = read_bytes;
        l.left_ms = left_ms;
        l.phase = phase.label();
    }
    app.request_redraw();
}

/// Loads a file in a Web Worker: the page's main thread only shows progress and, at the end,
/// copies the model and plot into place.
pub(crate) async fn load_in_worker(
    weak: &Weak<RefCell<App>>,
    file: &web_sys::File,
    name: &str,
    total_bytes: u64,
    timings: &mut Timings,
) -> WorkerEnd {
    let Some((view, hide_freed, preferred_device)) =
        with_app(weak, |app| (app.state.view, app.panels.hide_freed, app.preferred_device))
    else {
        return WorkerEnd::Finished;
    };
    let request = LoadRequest {
        name: name.to_string(),
        preferred_device,
        options: Options { max_entries: DEFAULT_MAX_ENTRIES, mode: view.mode(), hide_freed },
    };
    let started_ms = timings.started_ms;
    let progress_weak = weak.clone();
    let on_progress = move |read_bytes: u64, phase: Phase| {
        with_app(&progress_weak, |app| show_progress(app, started_ms, total_bytes, read_bytes, phase));
    };
    let set_cancel = |cancel| {
        with_app(weak, |app| app.cancel_load = cancel);
    };
    match worker_client::load(file, &request, on_progress, set_cancel).await {
        Outcome::Loaded { snap, plot, timings: w, decode_ms, shown } => {
            timings.read_ms = w.read_ms;
            timings.parse_ms = w.parse_ms;
            timings.model_ms = w.model_ms;
            timings.layout_ms = w.layout_ms;
            timings.transfer_ms = w.encode_ms + decode_ms;
            timings.decode_ms = decode_ms;
            // A turn of the event loop between copying the model in and showing it.
            next_tick().await;
            let now = with_app(weak, |app| app.ui.now_ms()).unwrap_or(0.0);
            timings.laid_out_ms = now;
            let t = *timings;
            with_app(weak, |app| {
                app.finish_load(name.to_string(), *snap, *plot, t, shown);
                app.request_redraw();
            });
            WorkerEnd::Finished
        }
        Outcome::Failed(msg) => {
            with_app(weak, |app| {
                app.error = Some(msg);
                app.loading = None;
                app.request_redraw();
            });
            WorkerEnd::Finished
        }
        Outcome::Cancelled => {
            with_app(weak, |app| {
                app.loading = None;
                app.cancel_requested = false;
                app.status_note = Some(format!("Stopped loading {name}."));
                app.request_redraw();
            });
            WorkerEnd::Finished
        }
        Outcome::Profile | Outcome::Unavailable => WorkerEnd::LoadHere,
    }
}
