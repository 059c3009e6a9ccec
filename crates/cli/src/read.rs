//! Reading a snapshot file: a second thread reads (and, for compressed files and HTML pages,
//! unpacks with [`memviz_core::input::Unpacker`]) the next chunks while this one decodes, so
//! decompressing costs little more time than reading a plain file.

use std::io::Read;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};

use memviz_core::input::{self, Container, Unpacker};
use memviz_core::{PlainLoader, Snapshot};

use crate::error::CliError;

/// A snapshot that did not load, with its path.
fn load_error(path: &str, source: memviz_core::Error) -> CliError {
    CliError::Load { path: path.to_string(), source }
}

/// Bytes read from a file at a time: the whole file is never held in memory.
const CHUNK_BYTES: usize = 4 << 20;

/// Chunks in flight between the reading thread and the decoder.
const CHUNKS_AHEAD: usize = 3;

/// A chunk of the plain bytes (the file's, or what is inside its container).
type Chunk = Result<(Vec<u8>, usize, Container), CliError>;

/// Reads and decodes a snapshot.
///
/// The snapshot is leaked on purpose: the process ends after one command, and handing a
/// gigabyte of columns back to the allocator page by page costs ~0.2 s that nobody waits for.
pub fn load(path: &str) -> Result<&'static Snapshot, CliError> {
    Ok(Box::leak(Box::new(load_owned(path)?)))
}

/// Reads and decodes a snapshot that the caller drops (commands that read many files).
pub fn load_owned(path: &str) -> Result<Snapshot, CliError> {
    let (reader, total): (Box<dyn Read + Send>, Option<u64>) = if path == "-" {
        (Box::new(std::io::stdin()), None)
    } else {
        let f = std::fs::File::open(path).map_err(|source| CliError::Read { path: path.to_string(), source })?;
        let len = f.metadata().ok().map(|m| m.len());
        (Box::new(f), len)
    };
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = sync_channel::<Chunk>(CHUNKS_AHEAD);
        let (empty_tx, empty_rx) = channel::<Vec<u8>>();
        scope.spawn(move || read_ahead(reader, path, &full_tx, &empty_rx));
        let mut loader: Option<(PlainLoader, Container)> = None;
        // A decoding error drops the receivers, which stops the reading thread.
        for msg in full_rx {
            let (buf, n, container) = msg?;
            let (l, c) = loader.get_or_insert_with(|| {
                (PlainLoader::new(if container == Container::Plain { total } else { None }), container)
            });
            l.feed(buf.get(..n).unwrap_or(&[])).map_err(|e| load_error(path, input::in_container(*c, e)))?;
            let _ = empty_tx.send(buf);
        }
        match loader {
            Some((l, c)) => l.finish().map_err(|e| load_error(path, input::in_container(c, e))),
            None => PlainLoader::new(total).finish().map_err(|e| load_error(path, e)),
        }
    })
}

/// Reads into `buf` until it is full or the input ends; returns bytes read.
fn fill(reader: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        // One read is enough once the container can be told (and a pipe may not fill the buffer).
        if n >= input::SNIFF_BYTES {
            break;
        }
    }
    Ok(n)
}

/// Reads chunks from `reader` until the end or an error, reusing the buffers sent back; plain
/// files go on as they are read, anything else unpacked.
fn read_ahead(mut reader: Box<dyn Read + Send>, path: &str, full: &SyncSender<Chunk>, empty: &Receiver<Vec<u8>>) {
    let read_error = |source: std::io::Error| CliError::Read { path: path.to_string(), source };
    let mut buf = vec![0u8; CHUNK_BYTES];
    let n = match fill(&mut reader, &mut buf) {
        Ok(n) => n,
        Err(e) => {
            let _ = full.send(Err(read_error(e)));
            return;
        }
    };
    if n == 0 {
        return;
    }
    let container = input::sniff(buf.get(..n.min(input::SNIFF_BYTES)).unwrap_or_default());
    if container == Container::Plain {
        if full.send(Ok((buf, n, container))).is_err() {
            return;
        }
        loop {
            let mut buf = empty.try_recv().unwrap_or_else(|_| vec![0u8; CHUNK_BYTES]);
            match fill(&mut reader, &mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    if full.send(Ok((buf, n, container))).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = full.send(Err(read_error(e)));
                    return;
                }
            }
        }
    }
    // Unpacked output is gathered into chunks of CHUNK_BYTES before it is sent.
    let mut unpacker = Unpacker::new();
    let mut out: Vec<u8> = Vec::with_capacity(CHUNK_BYTES);
    let mut closed = false;
    let mut sink = |c: Container, bytes: &[u8]| {
        out.extend_from_slice(bytes);
        if out.len() >= CHUNK_BYTES {
            let next = empty.try_recv().map(|mut b| {
                b.clear();
                b
            });
            let next = next.unwrap_or_else(|_| Vec::with_capacity(CHUNK_BYTES));
            let ready = std::mem::replace(&mut out, next);
            let len = ready.len();
            if full.send(Ok((ready, len, c))).is_err() {
                closed = true;
                return Err(memviz_core::Error::Cancelled);
            }
        }
        Ok(())
    };
    let mut result = unpacker.feed(buf.get(..n).unwrap_or_default(), &mut sink);
    while result.is_ok() {
        match fill(&mut reader, &mut buf) {
            Ok(0) => {
                result = unpacker.finish(&mut sink);
                break;
            }
            Ok(n) => result = unpacker.feed(buf.get(..n).unwrap_or_default(), &mut sink),
            Err(e) => {
                let _ = full.send(Err(read_error(e)));
                return;
            }
        }
    }
    if closed {
        return;
    }
    if let Err(e) = result {
        let _ = full.send(Err(load_error(path, e)));
        return;
    }
    if !out.is_empty() {
        let len = out.len();
        let _ = full.send(Ok((out, len, container)));
    }
}

/// A whole input, for writing it into a page: the bytes inside an HTML page are taken out (the
/// page reads compressed data itself, so that stays as it is). Checked to load.
pub fn read_for_page(path: &str) -> Result<Vec<u8>, CliError> {
    let bytes = if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|source| CliError::Read { path: "standard input".into(), source })?;
        buf
    } else {
        std::fs::read(path).map_err(|source| CliError::Read { path: path.to_string(), source })?
    };
    // Check it loads, so a bad file fails here rather than in the page.
    memviz_core::load(&bytes).map_err(|e| load_error(path, e))?;
    if input::sniff(bytes.get(..input::SNIFF_BYTES).unwrap_or(&bytes)) == Container::Html {
        return input::unpack(&bytes).map(|(_, inner)| inner).map_err(|e| load_error(path, e));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    /// A file that is not there: the message names it and says the system's reason, which stays
    /// attached as the cause.
    #[test]
    fn a_missing_file_keeps_the_systems_reason() {
        let path = "/nonexistent/memviz/x.pickle";
        let Err(e) = load_owned(path) else { panic!("{path} is not there") };
        let reason = std::fs::File::open(path).expect_err("not there");
        assert_eq!(e.to_string(), format!("cannot read {path}: {reason}"));
        let source = e.source().expect("the system's error is the cause");
        assert_eq!(source.to_string(), reason.to_string());
        assert!(source.downcast_ref::<std::io::Error>().is_some());
    }

    /// A file that is not a snapshot: the reader's error is the cause.
    #[test]
    fn a_bad_snapshot_keeps_the_readers_reason() {
        let path = crate::test_fixtures::real_fixture("oom.ref.stats.txt");
        let path = path.to_string_lossy();
        let Err(e) = load_owned(&path) else { panic!("{path} is not a snapshot") };
        assert!(matches!(e, CliError::Load { .. }), "{e:?}");
        let source = e.source().expect("the reader's error is the cause");
        assert!(source.downcast_ref::<memviz_core::Error>().is_some());
        assert_eq!(e.to_string(), format!("{path}: {source}"));
    }
}
