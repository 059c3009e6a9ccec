//! The files people have, opened as the snapshot inside: gzip, xz and zstd compressed snapshots
//! and the HTML pages that PyTorch's `_memory_viz trace_plot` / `segment_plot` and memviz's own
//! offline pages write (the snapshot is inside as base64).
//!
//! [`sniff`] tells the container from its first bytes (magic bytes, not the file name).
//! [`Unpacker`] takes the file's bytes in chunks and hands on the bytes inside, in chunks of at
//! most [`OUT_BYTES`]: the decompressed data is never held whole. [`Loader`] is the
//! [`crate::PlainLoader`] behind an [`Unpacker`]: every front end feeds it the file
//! as it is, and progress stays in the file's (compressed) bytes.
//!
//! Limits: decompressed data may be at most [`MAX_RATIO`] times the compressed bytes read so far
//! (once it passes [`RATIO_FREE_BYTES`]; gzip cannot exceed 1032x at all), so a decompression
//! bomb stops with an error instead of running on; the model's own limits apply to what is
//! inside. xz needs at most [`XZ_MEM_LIMIT_BYTES`] of dictionary, zstd at most
//! [`ZSTD_MAX_WINDOW_BYTES`] of window.

mod gzip;
mod html;
pub use html::MEMORY_TIMELINE_PICTURE;
mod xz;
mod zstd;

use crate::error::Error;
use crate::PlainLoader;
use crate::Snapshot;

/// What a file is wrapped in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// Not wrapped: a pickle or JSON (or something else, which the reader names).
    Plain,
    /// gzip (`.gz`, `.pickle.gz`).
    Gzip,
    /// xz (`.xz`).
    Xz,
    /// Zstandard (`.zst`).
    Zstd,
    /// An HTML page with a snapshot inside as base64 (PyTorch's `trace_plot` / `segment_plot`,
    /// memviz's offline pages).
    Html,
}

impl Container {
    /// The format's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Container::Plain => "plain",
            Container::Gzip => "gzip",
            Container::Xz => "xz",
            Container::Zstd => "zstd",
            Container::Html => "HTML page",
        }
    }
}

/// Bytes [`sniff`] needs to be sure (fewer at the end of the input).
pub const SNIFF_BYTES: usize = 64;

/// Most bytes an [`Unpacker`] hands on at once.
pub const OUT_BYTES: usize = 1 << 20;

/// Most decompressed bytes per compressed byte read (more than any gzip file can reach, 1032).
pub const MAX_RATIO: u64 = 1100;

/// Decompressed bytes allowed before [`MAX_RATIO`] is checked.
pub const RATIO_FREE_BYTES: u64 = 64 << 20;

/// Most memory an xz stream may ask for (its dictionary; `xz -9` uses 64 MiB).
pub const XZ_MEM_LIMIT_BYTES: u64 = 256 << 20;

/// Largest zstd window accepted (`zstd --long=27` uses 128 MiB).
pub const ZSTD_MAX_WINDOW_BYTES: u64 = 256 << 20;

/// The container `head` (the first [`SNIFF_BYTES`] of a file, or all of a shorter one) is in.
pub fn sniff(head: &[u8]) -> Container {
    if head.starts_with(&[0x1f, 0x8b]) {
        return Container::Gzip;
    }
    if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        return Container::Xz;
    }
    if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) || zstd::is_skippable(head) {
        return Container::Zstd;
    }
    if html::looks_like_html(head) {
        return Container::Html;
    }
    Container::Plain
}

/// Where unpacked bytes go: the outermost container and the next bytes inside it.
pub type Sink<'a> = dyn FnMut(Container, &[u8]) -> Result<(), Error> + 'a;

/// One decoding stage: compressed (or page) bytes in, the bytes inside out.
enum Stage {
    Plain,
    Gzip(Box<gzip::Gzip>),
    Xz(Box<xz::Xz>),
    Zstd(Box<zstd::Zstd>),
    Html(Box<html::Html>),
}

/// Counts what a stage hands on and stops bombs.
pub(crate) struct Out<'s, 'a> {
    container: Container,
    sink: &'s mut Sink<'a>,
    in_bytes: u64,
    out_bytes: &'s mut u64,
}

impl Out<'_, '_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if bytes.is_empty() {
            return Ok(());
        }
        *self.out_bytes += bytes.len() as u64;
        if *self.out_bytes > RATIO_FREE_BYTES && *self.out_bytes > self.in_bytes.saturating_mul(MAX_RATIO) {
            return Err(Error::Decompress {
                format: self.container.name(),
                offset: Some(self.in_bytes),
                reason: format!(
                    "it decompresses to more than {MAX_RATIO} times its size ({} bytes from {} read), which no memory snapshot does: a decompression bomb?",
                    self.out_bytes, self.in_bytes
                ),
            });
        }
        (self.sink)(self.container, bytes)
    }
}

/// Takes a file's bytes in chunks and hands on the bytes inside its container, in chunks of at
/// most [`OUT_BYTES`] (plain input is handed on as it comes).
pub struct Unpacker {
    head: Vec<u8>,
    stage: Option<Stage>,
    container: Option<Container>,
    /// Whether an HTML page may be opened (not inside another page).
    allow_html: bool,
    in_bytes: u64,
    out_bytes: u64,
}

impl Default for Unpacker {
    fn default() -> Self {
        Unpacker::new()
    }
}

impl Unpacker {
    /// An unpacker for a whole file.
    pub fn new() -> Unpacker {
        Unpacker { head: Vec::new(), stage: None, container: None, allow_html: true, in_bytes: 0, out_bytes: 0 }
    }

    fn inner() -> Unpacker {
        Unpacker { allow_html: false, ..Unpacker::new() }
    }

    /// The container, once enough bytes have come to tell.
    pub fn container(&self) -> Option<Container> {
        self.container
    }

    /// The container, or what the bytes held so far look like.
    fn container_so_far(&self) -> Option<Container> {
        self.container.or_else(|| (!self.head.is_empty()).then(|| sniff(&self.head)))
    }

    fn start(&mut self, container: Container) -> Stage {
        self.container = Some(container);
        match container {
            Container::Plain => Stage::Plain,
            Container::Gzip => Stage::Gzip(Box::default()),
            Container::Xz => Stage::Xz(Box::new(xz::Xz::new())),
            Container::Zstd => Stage::Zstd(Box::default()),
            Container::Html => Stage::Html(Box::new(html::Html::new(Unpacker::inner()))),
        }
    }

    /// Feeds the next chunk of the file; the bytes inside go to `sink`.
    pub fn feed(&mut self, chunk: &[u8], sink: &mut Sink<'_>) -> Result<(), Error> {
        self.in_bytes += chunk.len() as u64;
        if self.stage.is_none() {
            if self.head.len() + chunk.len() < SNIFF_BYTES {
                self.head.extend_from_slice(chunk);
                return Ok(());
            }
            let held = std::mem::take(&mut self.head);
            let first: Vec<u8> = [held.as_slice(), chunk].concat();
            let stage = self.begin(&first)?;
            self.stage = Some(stage);
            return self.run(&first, sink);
        }
        self.run(chunk, sink)
    }

    fn begin(&mut self, head: &[u8]) -> Result<Stage, Error> {
        let c = sniff(head.get(..SNIFF_BYTES).unwrap_or(head));
        if c == Container::Html && !self.allow_html {
            return Err(Error::Html { reason: "the snapshot inside this page is itself an HTML page".into() });
        }
        Ok(self.start(c))
    }

    fn run(&mut self, chunk: &[u8], sink: &mut Sink<'_>) -> Result<(), Error> {
        let container = self.container.unwrap_or(Container::Plain);
        let mut out = Out { container, sink, in_bytes: self.in_bytes, out_bytes: &mut self.out_bytes };
        match &mut self.stage {
            None | Some(Stage::Plain) => out.put(chunk),
            Some(Stage::Gzip(g)) => g.feed(chunk, &mut out),
            Some(Stage::Xz(x)) => x.feed(chunk, &mut out),
            Some(Stage::Zstd(z)) => z.feed(chunk, &mut out),
            Some(Stage::Html(h)) => h.feed(chunk, &mut |b| out.put(b)),
        }
    }

    /// Ends the file: what is still held goes to `sink`; a container that ends early is an error.
    pub fn finish(&mut self, sink: &mut Sink<'_>) -> Result<(), Error> {
        if self.stage.is_none() {
            let held = std::mem::take(&mut self.head);
            let stage = self.begin(&held)?;
            self.stage = Some(stage);
            self.run(&held, sink)?;
        }
        let container = self.container.unwrap_or(Container::Plain);
        let mut out = Out { container, sink, in_bytes: self.in_bytes, out_bytes: &mut self.out_bytes };
        match &mut self.stage {
            None | Some(Stage::Plain) => Ok(()),
            Some(Stage::Gzip(g)) => g.finish(&mut out),
            Some(Stage::Xz(x)) => x.finish(&mut out),
            Some(Stage::Zstd(z)) => z.finish(&mut out),
            Some(Stage::Html(h)) => h.finish(&mut |b| out.put(b)),
        }
    }
}

/// Loads a snapshot fed in chunks, whatever it is wrapped in ([`Container`]): the file's bytes
/// go in as they are, and progress is counted in them.
pub struct Loader {
    unpacker: Unpacker,
    plain: Option<PlainLoader>,
    total_len: Option<u64>,
    fed: u64,
}

/// An error from the data inside `container`, saying so (plain input's errors stay as they are).
pub fn in_container(container: Container, e: Error) -> Error {
    match (container, e) {
        (Container::Plain, e) => e,
        (_, e @ (Error::Decompress { .. } | Error::Html { .. } | Error::Inside { .. })) => e,
        (c, e) => Error::Inside { container: c.name(), error: Box::new(e) },
    }
}

impl Loader {
    /// A loader; `total_len` (when known) is the file's size, which lets impossible lengths fail
    /// early in plain files.
    pub fn new(total_len: Option<u64>) -> Self {
        Loader { unpacker: Unpacker::new(), plain: None, total_len, fed: 0 }
    }

    fn sink<'s>(
        plain: &'s mut Option<PlainLoader>,
        total_len: Option<u64>,
    ) -> impl FnMut(Container, &[u8]) -> Result<(), Error> + 's {
        move |c, bytes| {
            let l = plain.get_or_insert_with(|| PlainLoader::new(if c == Container::Plain { total_len } else { None }));
            l.feed(bytes).map_err(|e| in_container(c, e))
        }
    }

    /// Feeds the next chunk of the file.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Error> {
        self.fed += chunk.len() as u64;
        let mut sink = Self::sink(&mut self.plain, self.total_len);
        self.unpacker.feed(chunk, &mut sink)
    }

    /// The file's bytes fed so far.
    pub fn fed_bytes(&self) -> u64 {
        self.fed
    }

    /// The container, once known.
    pub fn container(&self) -> Option<Container> {
        self.unpacker.container()
    }

    /// Bytes of the pickle decoded so far (inside the container; JSON is decoded at the end).
    pub fn consumed_bytes(&self) -> u64 {
        self.plain.as_ref().map_or(0, PlainLoader::consumed_bytes)
    }

    /// Ends the input and builds the model.
    pub fn finish(self) -> Result<Snapshot, Error> {
        Ok(self.finish_unchecked()?.check())
    }

    /// Ends the input and builds the model but for the checks of its traces
    /// ([`crate::snapshot::Unchecked::check`] runs them).
    pub fn finish_unchecked(mut self) -> Result<crate::snapshot::Unchecked, Error> {
        {
            let mut sink = Self::sink(&mut self.plain, self.total_len);
            self.unpacker.finish(&mut sink)?;
        }
        let container = self.unpacker.container().unwrap_or(Container::Plain);
        match self.plain {
            Some(l) => l.finish_unchecked().map_err(|e| in_container(container, e)),
            None if container == Container::Plain => Err(Error::Empty),
            None => Err(in_container(container, Error::Empty)),
        }
    }
}

/// Loads a snapshot held in memory, whatever it is wrapped in.
pub fn load(bytes: &[u8]) -> Result<Snapshot, Error> {
    let mut l = Loader::new(Some(bytes.len() as u64));
    for part in bytes.chunks(OUT_BYTES) {
        l.feed(part)?;
    }
    l.finish()
}

/// The bytes inside `bytes`: decompressed, or the snapshot out of an HTML page (for writing it
/// into a page of memviz's own). Held whole, so only for inputs small enough to embed.
pub fn unpack(bytes: &[u8]) -> Result<(Container, Vec<u8>), Error> {
    let mut out = Vec::new();
    let mut u = Unpacker::new();
    let mut container = Container::Plain;
    let mut sink = |c: Container, b: &[u8]| {
        container = c;
        out.extend_from_slice(b);
        Ok(())
    };
    for part in bytes.chunks(OUT_BYTES) {
        u.feed(part, &mut sink)?;
    }
    u.finish(&mut sink)?;
    Ok((u.container().unwrap_or(container), out))
}

/// Up to `max` of the first bytes inside `head` (the start of a file), as far as they can be
/// unpacked from it; empty when they cannot. For telling what a compressed file holds.
pub fn peek_inside(head: &[u8], max: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut u = Unpacker::new();
    let mut sink = |_: Container, b: &[u8]| {
        out.extend_from_slice(b.get(..max.saturating_sub(out.len()).min(b.len())).unwrap_or_default());
        if out.len() >= max {
            return Err(Error::Cancelled);
        }
        Ok(())
    };
    if u.feed(head, &mut sink).is_ok() {
        // A short file is held until its end, to be sniffed; a long one ends early here, which
        // hands on what was decoded before the error.
        let _ = u.finish(&mut sink);
    }
    out
}

/// An output buffer of [`OUT_BYTES`] that stages fill and hand on when full.
#[derive(Default)]
pub(crate) struct OutBuf {
    buf: Vec<u8>,
    filled: usize,
}

impl OutBuf {
    /// The free room, made on first use.
    pub(crate) fn room(&mut self) -> &mut [u8] {
        if self.buf.is_empty() {
            self.buf = vec![0; OUT_BYTES];
        }
        self.buf.get_mut(self.filled..).unwrap_or_default()
    }

    /// The room just written, so it can be checked (checksums).
    pub(crate) fn commit(&mut self, n: usize) -> &[u8] {
        let start = self.filled;
        self.filled = (self.filled + n).min(self.buf.len());
        self.buf.get(start..self.filled).unwrap_or_default()
    }

    pub(crate) fn is_full(&self) -> bool {
        !self.buf.is_empty() && self.filled == self.buf.len()
    }

    /// Hands on what is filled.
    pub(crate) fn flush(&mut self, out: &mut Out<'_, '_>) -> Result<(), Error> {
        let n = std::mem::take(&mut self.filled);
        out.put(self.buf.get(..n).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests;
