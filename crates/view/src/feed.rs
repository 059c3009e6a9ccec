//! The one loop that reads a file in slices and decodes it, for the page's loading Web Worker
//! and its main thread alike: each slice is decoded in parts of
//! [`FEED_BYTES`], with a turn of the event loop whenever decoding has gone on for a while (so a
//! repaint, the next slice or a cancel gets through), progress after each slice, the time spent
//! reading, decoding and waiting, and a profiler memory timeline recognised by its first bytes.
//!
//! Where slices come from is a [`Slices`] (a file in memory, [`MemorySlices`]; in the page, a
//! `Blob` read on the main thread or the slices the page sends the worker); how to take events,
//! show progress and stop is a [`Host`]. Nothing here knows the page's state. The texts of read
//! and decode errors are made here ([`read_error`], [`open_error`]).

use crate::model::{ModelLoader, CHUNK_BYTES};

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

/// The message for a JSON list that is neither a memory timeline memviz reads nor a snapshot:
/// the timeline's reason where the snapshot reader saw a timeline (`snapshot`), else the
/// snapshot reader's.
pub fn profile_error(
    name: &str,
    timeline: &memviz_core::analysis::AnalysisError,
    snapshot: &memviz_core::Error,
) -> String {
    use memviz_core::{Error, FileKind};
    match snapshot {
        Error::NotAPickle { kind: FileKind::MemoryTimeline } => format!("Could not open {name}: {timeline}"),
        e => open_error(name, e),
    }
}

/// Largest JSON file (a profiler trace, a JSON snapshot) loaded on the page rather than in a
/// worker: a 500 MB trace's parse left the page's heap at 441 MB against 370 MB through a worker,
/// in the same time (docs/performance.md), so traces keep a lower limit than pickles.
pub const JSON_ON_PAGE_MAX_BYTES: u64 = 128 << 20;

/// Largest compressed snapshot (`.gz`, `.xz`, `.zst`) loaded on the page: its size says little
/// of what it holds once inflated, and a model too large for a tab should end a worker, not the
/// page; so it keeps the limit plain pickles had before they went to 1 GiB.
pub const COMPRESSED_ON_PAGE_MAX_BYTES: u64 = 512 << 20;

/// Largest size of a file named `name` that loads on the page, given the page's limit for
/// snapshots: JSON files (`.json`, `.json.gz`, any case) at most [`JSON_ON_PAGE_MAX_BYTES`],
/// other compressed files at most [`COMPRESSED_ON_PAGE_MAX_BYTES`].
pub fn on_page_max_bytes_for(name: &str, limit: u64) -> u64 {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".json") || lower.ends_with(".json.gz") {
        limit.min(JSON_ON_PAGE_MAX_BYTES)
    } else if [".gz", ".xz", ".zst"].iter().any(|ext| lower.ends_with(ext)) {
        limit.min(COMPRESSED_ON_PAGE_MAX_BYTES)
    } else {
        limit
    }
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

#[cfg(test)]
#[path = "feed_tests.rs"]
mod tests;
