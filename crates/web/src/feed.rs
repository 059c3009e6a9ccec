//! Reading a file's slices in the browser, for `memviz_view::feed`'s loop (re-exported here): a
//! `Blob` read on the main thread ([`BlobSlices`]) and the slices the page sends the loading Web
//! Worker ([`QueueSlices`]).

use std::future::Future;
use std::pin::Pin;

pub use memviz_view::feed::*;
use memviz_view::model::CHUNK_BYTES;

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
