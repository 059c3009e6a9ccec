//! HTML pages with a snapshot inside: PyTorch's `_memory_viz trace_plot` / `segment_plot` write
//! `const local_files = [{"name": "snapshot.pickle", "base64": "..."}]` (the pickle padded with
//! one to three NUL bytes to a multiple of three), memviz's offline pages
//! `<script id="memviz-embedded">{"files":[{"name":...,"base64":"..."}],...}`. The first file's
//! base64 is decoded as it streams by and unpacked again (it may be compressed); the NUL padding
//! after a pickle is dropped.

use super::Unpacker;
use crate::error::Error;

/// Most bytes of a page read before its snapshot begins.
const MAX_PREFIX_BYTES: u64 = 64 << 20;

/// Bytes kept between chunks while looking for the snapshot (longer than the patterns).
const KEEP_BYTES: usize = 64;

const KEY: &[u8] = b"\"base64\"";
const EMPTY_MEMVIZ_PAGE: &[u8] = b"id=\"memviz-embedded\">{\"files\":[]";

/// What the profiler's `export_memory_timeline("x.html")` writes: a matplotlib PNG in a page.
const PNG_IN_PAGE: &[u8] = b"data:image/png;base64,";

/// The message for that page: what it is, and the export memviz reads instead.
pub const MEMORY_TIMELINE_PICTURE: &str = "this is the profiler's memory timeline as a picture (export_memory_timeline to .html writes a PNG in a page), not data: prof.export_memory_timeline(\"x.json\", device=\"cuda:0\") writes the same timeline as data that memviz makes interactive, and prof.export_chrome_trace(\"x.json.gz\") every allocation with its op and Python stack";

/// Whether a file's first bytes are an HTML page.
pub(super) fn looks_like_html(head: &[u8]) -> bool {
    let head = head.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(head);
    let start = head.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(head.len());
    let lower: Vec<u8> = head.iter().skip(start).take(14).map(u8::to_ascii_lowercase).collect();
    lower.starts_with(b"<!doctype html") || lower.starts_with(b"<html")
}

enum State {
    Seeking,
    Base64,
    Done,
}

pub(super) struct Html {
    state: State,
    window: Vec<u8>,
    scanned: u64,
    acc: u32,
    bits: u32,
    padding: bool,
    /// NUL bytes decoded last and held back (dropped at the end: padding).
    zeros: u8,
    buf: Vec<u8>,
    decoded: u64,
    inner: Unpacker,
}

enum Seek {
    Found(usize),
    More(usize),
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|i| i + from)
}

/// Where the first file's base64 begins in `w`, or from where to keep looking.
fn seek(w: &[u8]) -> Seek {
    let mut from = 0;
    while let Some(i) = find(w, KEY, from) {
        let mut j = i + KEY.len();
        let skip_ws = |j: &mut usize| {
            while w.get(*j).is_some_and(u8::is_ascii_whitespace) {
                *j += 1;
            }
        };
        skip_ws(&mut j);
        match w.get(j) {
            None => return Seek::More(i),
            Some(b':') => {}
            Some(_) => {
                from = i + 1;
                continue;
            }
        }
        j += 1;
        skip_ws(&mut j);
        match w.get(j) {
            None => return Seek::More(i),
            Some(b'"') => return Seek::Found(j + 1),
            Some(_) => from = i + 1,
        }
    }
    Seek::More(w.len().saturating_sub(KEEP_BYTES))
}

fn no_snapshot() -> Error {
    Error::Html {
        reason: "this HTML page holds no memory snapshot (pages of PyTorch's _memory_viz trace_plot / segment_plot and memviz's trace-plot do; open the .pickle instead)".into(),
    }
}

impl Html {
    pub(super) fn new(inner: Unpacker) -> Html {
        Html {
            state: State::Seeking,
            window: Vec::new(),
            scanned: 0,
            acc: 0,
            bits: 0,
            padding: false,
            zeros: 0,
            buf: Vec::new(),
            decoded: 0,
            inner,
        }
    }

    pub(super) fn feed(&mut self, chunk: &[u8], emit: &mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> {
        match self.state {
            State::Done => Ok(()),
            State::Base64 => self.decode(chunk, emit),
            State::Seeking => {
                self.window.extend_from_slice(chunk);
                if find(&self.window, PNG_IN_PAGE, 0).is_some() && find(&self.window, KEY, 0).is_none() {
                    return Err(Error::Html { reason: MEMORY_TIMELINE_PICTURE.into() });
                }
                if find(&self.window, EMPTY_MEMVIZ_PAGE, 0).is_some() {
                    return Err(Error::Html {
                        reason: "this memviz page holds no snapshot (it is the empty viewer that memviz viewer writes: open it and drop a snapshot on it)".into(),
                    });
                }
                match seek(&self.window) {
                    Seek::Found(at) => {
                        self.state = State::Base64;
                        let rest = self.window.split_off(at.min(self.window.len()));
                        self.window = Vec::new();
                        self.decode(&rest, emit)
                    }
                    Seek::More(keep) => {
                        let keep = keep.min(self.window.len());
                        self.scanned += keep as u64;
                        self.window.drain(..keep);
                        if self.scanned > MAX_PREFIX_BYTES {
                            return Err(no_snapshot());
                        }
                        Ok(())
                    }
                }
            }
        }
    }

    fn push(&mut self, b: u8) {
        if b == 0 {
            if self.zeros < 3 {
                self.zeros += 1;
                return;
            }
            self.buf.push(0);
            return;
        }
        for _ in 0..std::mem::take(&mut self.zeros) {
            self.buf.push(0);
        }
        self.buf.push(b);
    }

    fn decode(&mut self, text: &[u8], emit: &mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> {
        for (i, &c) in text.iter().enumerate() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' => 62,
                b'/' => 63,
                b'=' => {
                    self.padding = true;
                    continue;
                }
                b'"' => {
                    self.state = State::Done;
                    return self.hand_on(emit);
                }
                b'\\' | b' ' | b'\n' | b'\r' | b'\t' => continue,
                _ => {
                    return Err(Error::Html {
                        reason: format!(
                            "the snapshot inside this page is not valid base64 (byte 0x{c:02x} at character {} of it)",
                            self.decoded / 3 * 4 + i as u64
                        ),
                    })
                }
            };
            if self.padding {
                return Err(Error::Html {
                    reason: "the snapshot inside this page is not valid base64 (data after its padding)".into(),
                });
            }
            self.acc = (self.acc << 6) | u32::from(v);
            self.bits += 6;
            if self.bits >= 8 {
                self.bits -= 8;
                self.push((self.acc >> self.bits) as u8);
                self.acc &= (1 << self.bits) - 1;
            }
        }
        if self.buf.len() >= super::OUT_BYTES {
            self.hand_on(emit)?;
        }
        Ok(())
    }

    fn hand_on(&mut self, emit: &mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.decoded += self.buf.len() as u64;
        let buf = std::mem::take(&mut self.buf);
        let r = self.inner.feed(&buf, &mut |_, b| emit(b));
        self.buf = buf;
        self.buf.clear();
        r
    }

    pub(super) fn finish(&mut self, emit: &mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> {
        match self.state {
            State::Seeking => Err(no_snapshot()),
            State::Base64 => Err(Error::Html {
                reason: "the page is truncated: it ends inside the snapshot's base64 (was the download incomplete?)"
                    .into(),
            }),
            State::Done => {
                if self.decoded == 0 && self.zeros == 0 {
                    return Err(no_snapshot());
                }
                // The NULs held back are PyTorch's padding after a pickle's STOP; anything else
                // inside (compressed data, whose trailers end in NULs) gets them.
                if self.inner.container_so_far() != Some(super::Container::Plain) {
                    self.buf.extend(std::iter::repeat_n(0u8, usize::from(std::mem::take(&mut self.zeros))));
                    self.hand_on(emit)?;
                }
                self.inner.finish(&mut |_, b| emit(b))
            }
        }
    }
}
