//! The one loop that reads a file in slices and decodes it, for the loading Web Worker
//! ([`crate::worker`]) and the page's main thread alike: each slice is decoded in parts of
//! [`FEED_BYTES`], with a turn of the event loop whenever decoding has gone on for a while (so a
//! repaint, the next slice or a cancel gets through), progress after each slice, the time spent
//! reading, decoding and waiting, and a profiler memory timeline recognised by its first bytes.
//!
//! Where slices come from is a [`Slices`] (a file in memory, [`MemorySlices`]; a `Blob` read on
//! the main thread, [`BlobSlices`]; the slices the page sends the worker); how to take events,
//! show progress and stop is a [`Host`]. Nothing here knows the page's state. The texts of read
//! and decode errors are made here ([`read_error`], [`open_error`]).

use std::future::Future;
use std::pin::Pin;

use memviz_view::model::{ModelLoader, CHUNK_BYTES};

/// Bytes decoded between chances to take events.
pub const FEED_BYTES: usize = 1 << 20;

/// Where a file's slices come from.
#[allow(async_fn_in_trait)] // single-threaded: nothing needs the futures to be `Send`
pub trait Slices {
    /// The file's bytes `offset..end`, or why they could not be read (for [`read_error`]). The
    /// loop asks for each slice once, in order, and may start reading the next one meanwhile.
    async fn slice(&mut self, offset: u64, end: u64) -> Result<&[u8], String>;
}

/// What the loop needs from the thread it runs on.
#[allow(async_fn_in_trait)] // single-threaded: nothing needs the futures to be `Send`
pub trait Host {
    /// Now (ms, `performance.now()`).
    fn now_ms(&self) -> f64;
    /// Resolves after the events waiting now have been taken.
    async fn take_events(&mut self);
    /// Called after each slice with the bytes read so far; `false` stops the load.
    fn progress(&mut self, read_bytes: u64) -> bool;
}

/// What to do with a file that looks like a profiler memory timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnProfile {
    /// Stop at its first slice (the worker leaves such files to the page).
    Stop,
    /// Read it whole and hand its bytes back.
    Keep,
}

/// One file to feed.
#[derive(Clone, Copy, Debug)]
pub struct Feed<'a> {
    /// File name, for messages.
    pub name: &'a str,
    /// Bytes of the file.
    pub total_bytes: u64,
    /// Bytes of one slice ([`CHUNK_BYTES`] in the page and the worker).
    pub slice_bytes: u64,
    /// Most time decoding goes on without taking events (ms).
    pub yield_every_ms: f64,
    /// What to do with a profiler memory timeline.
    pub on_profile: OnProfile,
}

/// Where the loop's time went (ms).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FeedTimings {
    /// Waiting for slices.
    pub read_ms: f64,
    /// Decoding.
    pub parse_ms: f64,
    /// Taking events between parts and slices.
    pub wait_ms: f64,
}

/// How feeding a file ended.
pub enum Fed {
    /// Decoded to the end: the model is ready to build ([`ModelLoader::finish`]).
    Decoded(ModelLoader),
    /// The file may be a profiler memory timeline: its bytes (all of them with
    /// [`OnProfile::Keep`], none with [`OnProfile::Stop`]) and the loader, not fed, to decode
    /// them with if it is not one after all.
    Profile {
        /// The file's bytes.
        bytes: Vec<u8>,
        /// A loader for the file.
        loader: ModelLoader,
    },
    /// The host said stop.
    Stopped,
}

/// The message for a file that could not be read (`why` without a final full stop).
pub fn read_error(name: &str, why: &str) -> String {
    format!("Could not read {name}: {why}. Is the file still there and readable?")
}

/// The message for a file that could not be decoded.
pub fn open_error(name: &str, e: &memviz_core::Error) -> String {
    format!("Could not open {name}: {e}")
}

/// Whether a file starting with `head` may be a profiler memory timeline: JSON whose first value
/// is a list (snapshots are pickles or JSON objects), maybe gzipped (a gzipped snapshot is not).
pub fn maybe_profile(head: &[u8]) -> bool {
    let list = |b: &[u8]| b.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    if head.starts_with(&[0x1f, 0x8b]) {
        return list(&memviz_core::input::peek_inside(head, 64));
    }
    list(head)
}

impl Feed<'_> {
    /// A file of `total_bytes` read in slices of [`CHUNK_BYTES`].
    pub fn new(name: &str, total_bytes: u64, yield_every_ms: f64, on_profile: OnProfile) -> Feed<'_> {
        Feed { name, total_bytes, slice_bytes: CHUNK_BYTES as u64, yield_every_ms, on_profile }
    }

    /// Reads the file's slices from `slices` and decodes them; the error is for the user.
    pub async fn run(&self, slices: &mut impl Slices, host: &mut impl Host) -> Result<(Fed, FeedTimings), String> {
        let (name, total_bytes, every_ms) = (self.name, self.total_bytes, self.yield_every_ms);
        let mut timings = FeedTimings::default();
        let mut loader = ModelLoader::new(total_bytes);
        let mut profile: Option<Vec<u8>> = None;
        let mut offset = 0u64;
        let mut last_yield_ms = host.now_ms();
        while offset < total_bytes {
            let asked_end = (offset + self.slice_bytes.max(1)).min(total_bytes);
            let t0 = host.now_ms();
            let chunk = slices.slice(offset, asked_end).await.map_err(|why| read_error(name, &why))?;
            // A source may hand out slices of other lengths (the page reads the first MiBs of a
            // file itself, in small slices): the next one starts where this one ends.
            let end = offset + chunk.len() as u64;
            if chunk.is_empty() || end > total_bytes {
                return Err(read_error(name, "a slice came back with the wrong length"));
            }
            let t1 = host.now_ms();
            timings.read_ms += t1 - t0;
            if offset == 0 && maybe_profile(chunk) {
                match self.on_profile {
                    OnProfile::Stop => return Ok((Fed::Profile { bytes: Vec::new(), loader }, timings)),
                    OnProfile::Keep => profile = Some(Vec::new()),
                }
            }
            // Decoded in parts, with a turn of the event loop between them when they take long.
            let mut waited_ms = 0.0;
            match &mut profile {
                Some(kept) => kept.extend_from_slice(chunk),
                None => {
                    for part in chunk.chunks(FEED_BYTES) {
                        loader.feed(part).map_err(|e| open_error(name, &e))?;
                        let t = host.now_ms();
                        if t - last_yield_ms > every_ms {
                            host.take_events().await;
                            last_yield_ms = host.now_ms();
                            waited_ms += last_yield_ms - t;
                        }
                    }
                }
            }
            let t2 = host.now_ms();
            timings.parse_ms += t2 - t1 - waited_ms;
            timings.wait_ms += waited_ms;
            offset = end;
            if !host.progress(offset) {
                return Ok((Fed::Stopped, timings));
            }
            if offset < total_bytes && t2 - last_yield_ms > every_ms {
                // Let the thread show the progress.
                host.take_events().await;
                last_yield_ms = host.now_ms();
                timings.wait_ms += last_yield_ms - t2;
            }
        }
        let fed = match profile {
            Some(bytes) => Fed::Profile { bytes, loader },
            None => Fed::Decoded(loader),
        };
        Ok((fed, timings))
    }
}

/// A file in memory.
pub struct MemorySlices<'a>(pub &'a [u8]);

impl Slices for MemorySlices<'_> {
    async fn slice(&mut self, offset: u64, end: u64) -> Result<&[u8], String> {
        let range = usize::try_from(offset).ok().zip(usize::try_from(end).ok());
        range.and_then(|(a, b)| self.0.get(a..b)).ok_or_else(|| "it is shorter than its size".to_string())
    }
}

/// A slice being read from a `Blob`.
type Reading = Pin<Box<dyn Future<Output = Result<Vec<u8>, String>>>>;

/// A `Blob` (a `File`) read on this thread, the next slice while this one is decoded.
pub struct BlobSlices {
    blob: gloo_file::Blob,
    total_bytes: u64,
    slice_bytes: u64,
    /// The slice being read ahead, and its offset.
    pending: Option<(u64, Reading)>,
    slice: Vec<u8>,
}

impl BlobSlices {
    /// Slices of `blob` as `feed` asks for them; the first one is read from now on, or was
    /// already (`early`: the whole blob, read as it was chosen).
    pub fn new(blob: &web_sys::Blob, feed: &Feed<'_>, early: Option<js_sys::Promise>) -> BlobSlices {
        let mut s = BlobSlices {
            blob: gloo_file::Blob::from(blob.clone()),
            total_bytes: feed.total_bytes,
            slice_bytes: feed.slice_bytes.max(1),
            pending: None,
            slice: Vec::new(),
        };
        let first: Reading = match early {
            Some(whole) if s.slice_bytes >= s.total_bytes => Box::pin(async move {
                let buffer = wasm_bindgen_futures::JsFuture::from(whole).await.map_err(|e| js_text(&e))?;
                Ok(js_sys::Uint8Array::new(&buffer).to_vec())
            }),
            _ => s.read(0),
        };
        s.pending = Some((0, first));
        s
    }

    fn read(&self, offset: u64) -> Reading {
        let end = (offset + self.slice_bytes).min(self.total_bytes);
        let reading = gloo_file::futures::read_as_bytes(&self.blob.slice(offset, end));
        Box::pin(async move { reading.await.map_err(|e| e.to_string()) })
    }
}

impl Slices for BlobSlices {
    async fn slice(&mut self, offset: u64, end: u64) -> Result<&[u8], String> {
        let reading = match self.pending.take() {
            Some((at, r)) if at == offset => r,
            _ => self.read(offset),
        };
        self.slice = reading.await.map_err(|e| e.trim_end_matches('.').to_string())?;
        if end < self.total_bytes {
            self.pending = Some((end, self.read(end)));
        }
        Ok(&self.slice)
    }
}

#[cfg(test)]
#[path = "feed_tests.rs"]
mod tests;

/// A file's slices as they come from whoever reads it (`www/slices.js`'s `sliceQueue`):
/// `next(offset)` resolves to an `ArrayBuffer` of the slice at `offset`, of whatever length the
/// reader chose; the next one starts where it ends. The next one is asked for once this one has
/// been copied: asking tells the reader that this slice's buffer can be read into again. `stop`,
/// if any, is called when these slices are dropped (the reading ends).
pub struct QueueSlices {
    next: js_sys::Function,
    stop: Option<js_sys::Function>,
    total_bytes: u64,
    pending: Option<wasm_bindgen_futures::JsFuture>,
    /// Room the slice handed out last was copied into (its length stays 0).
    slice: Vec<u8>,
}

impl QueueSlices {
    /// The slices of a file of `total_bytes`; the first one is asked for now.
    pub fn new(next: js_sys::Function, total_bytes: u64, stop: Option<js_sys::Function>) -> QueueSlices {
        let pending = Self::read(&next, 0);
        // Room for the largest slice, made once (the first slices are smaller, and the page's own
        // are half as large, www/slices.js PAGE_SLICE_BYTES: room never written costs nothing).
        let slice = Vec::with_capacity(usize::try_from(total_bytes).map_or(CHUNK_BYTES, |t| t.min(CHUNK_BYTES)));
        QueueSlices { next, stop, total_bytes, pending, slice }
    }

    fn read(next: &js_sys::Function, offset: u64) -> Option<wasm_bindgen_futures::JsFuture> {
        use wasm_bindgen::JsCast;
        let p = next.call1(&wasm_bindgen::JsValue::NULL, &wasm_bindgen::JsValue::from_f64(offset as f64)).ok()?;
        Some(wasm_bindgen_futures::JsFuture::from(p.dyn_into::<js_sys::Promise>().ok()?))
    }
}

impl Slices for QueueSlices {
    async fn slice(&mut self, offset: u64, _end: u64) -> Result<&[u8], String> {
        let reading = self.pending.take().ok_or("the browser refused to read it")?;
        let slice = reading.await.map_err(|e| js_text(&e))?;
        let arr = js_sys::Uint8Array::new(&slice);
        let end = offset + u64::from(arr.length());
        if arr.length() == 0 || end > self.total_bytes {
            return Err("a slice came back with the wrong length".into());
        }
        // Copied into the room as it is: zeroing it first would write each fresh page twice.
        let len = arr.length() as usize;
        self.slice.clear();
        self.slice.reserve(len);
        let room = self.slice.spare_capacity_mut().get_mut(..len).ok_or("there is no room for a slice")?;
        let bytes = arr.copy_to_uninit(room);
        if end < self.total_bytes {
            self.pending = Self::read(&self.next, end);
        }
        Ok(bytes)
    }
}

impl Drop for QueueSlices {
    fn drop(&mut self) {
        if let Some(stop) = &self.stop {
            let _ = stop.call0(&wasm_bindgen::JsValue::NULL);
        }
    }
}

/// An error value's message.
pub fn js_text(e: &wasm_bindgen::JsValue) -> String {
    js_sys::Reflect::get(e, &wasm_bindgen::JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}
