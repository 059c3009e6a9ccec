//! Why a snapshot cannot be read: what went wrong, where (byte offsets), and what to do about it.
//! Analyses and the wire format have errors of their own ([`crate::analysis::AnalysisError`],
//! [`crate::wire::WireError`]).

use std::fmt;

/// Everything that can stop a snapshot from loading. Problems that do not stop it (an unknown action,
/// a free without its alloc) are [`crate::snapshot::Warning`]s instead.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The input is empty.
    Empty,
    /// The input is some other kind of file; `kind` names it and the message says what it probably is.
    NotAPickle {
        /// What the file looks like.
        kind: FileKind,
    },
    /// The input ends before the pickle does.
    Truncated {
        /// Byte offset at which the input ends.
        offset: u64,
        /// What was being read ("a string", "an opcode", ...).
        inside: &'static str,
        /// The length that was declared for it, when known.
        declared: Option<u64>,
    },
    /// An opcode that would import or run code, or build a class instance. Never executed.
    ForbiddenOpcode {
        /// Opcode name, e.g. `REDUCE`.
        name: &'static str,
        /// Opcode byte.
        opcode: u8,
        /// Byte offset of the opcode.
        offset: u64,
    },
    /// A byte that is not a pickle opcode.
    UnknownOpcode {
        /// The byte.
        opcode: u8,
        /// Its offset.
        offset: u64,
    },
    /// A PROTO opcode announcing a protocol newer than 5.
    UnsupportedProtocol {
        /// The protocol number.
        version: u8,
        /// Offset of the PROTO opcode.
        offset: u64,
    },
    /// The opcodes are inconsistent (stack underflow, missing mark, unknown memo index, ...).
    Malformed {
        /// Offset of the opcode.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The pickle is fine but is not a memory snapshot.
    NotASnapshot {
        /// What was found instead, e.g. "top-level keys are foo, bar".
        found: String,
    },
    /// A snapshot field has a type or value that cannot be used.
    Schema {
        /// Where, e.g. `segments[3].blocks[0].size`.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A JSON snapshot that does not parse.
    Json {
        /// serde_json's message (with line and column).
        message: String,
    },
    /// Loading was cancelled by the caller.
    Cancelled,
    /// A compressed file (gzip, xz, zstd) that cannot be decompressed.
    Decompress {
        /// The format's name.
        format: &'static str,
        /// Byte offset in the compressed file, when known.
        offset: Option<u64>,
        /// What is wrong.
        reason: String,
    },
    /// An HTML page that holds no snapshot memviz can open.
    Html {
        /// What is wrong.
        reason: String,
    },
    /// A profiler trace that cannot be read as memory (cut off, of the wrong shape, without
    /// memory events).
    Trace {
        /// What is wrong, and what to do.
        reason: String,
    },
    /// An error in the data inside a container (offsets count from the start of that data).
    Inside {
        /// The container's name (`gzip`, `xz`, `zstd`, `HTML page`).
        container: &'static str,
        /// The error in the data inside.
        error: Box<Error>,
    },
}

/// Kinds of files people drop by mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A zip archive (what `torch.save` writes).
    Zip,
    /// A gzip stream.
    Gzip,
    /// HTML (e.g. a page written by `trace_plot`).
    Html,
    /// Text that is neither JSON nor a pickle.
    Text,
    /// An image (PNG, JPEG, GIF, WebP).
    Image,
    /// A PDF document.
    Pdf,
    /// A profiler trace (Chrome trace / Kineto JSON, what `torch.profiler` exports).
    ProfilerTrace,
    /// A profiler memory timeline (`export_memory_timeline` JSON: lists of times and sizes).
    MemoryTimeline,
    /// A compressed format memviz does not read (bzip2, LZ4, 7-Zip).
    OtherCompressed(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Empty => write!(f, "the file is empty: a memory snapshot is written by torch.cuda.memory._dump_snapshot(\"x.pickle\")"),
            Error::NotAPickle { kind: FileKind::Zip } => write!(
                f,
                "this is a zip file: probably a checkpoint saved with torch.save, not a memory snapshot (make one with torch.cuda.memory._dump_snapshot)"
            ),
            Error::NotAPickle { kind: FileKind::Gzip } => write!(f, "this is gzip data inside gzip data, which memviz does not unpack twice"),
            Error::NotAPickle { kind: FileKind::Html } => write!(
                f,
                "this is an HTML page, not a memory snapshot: open the .pickle it was made from instead"
            ),
            Error::NotAPickle { kind: FileKind::Image } => write!(f, "this is an image, not a memory snapshot (make one with torch.cuda.memory._dump_snapshot)"),
            Error::NotAPickle { kind: FileKind::Pdf } => write!(f, "this is a PDF document, not a memory snapshot"),
            Error::NotAPickle { kind: FileKind::ProfilerTrace } => write!(
                f,
                "this is a profiler trace (torch.profiler's Chrome trace JSON), not a memory snapshot: record one with torch.cuda.memory._record_memory_history and _dump_snapshot"
            ),
            Error::NotAPickle { kind: FileKind::MemoryTimeline } => write!(
                f,
                "this is a profiler memory timeline (export_memory_timeline), not a memory snapshot: memviz categories reads it, and the page's Categories panel"
            ),
            Error::NotAPickle { kind: FileKind::OtherCompressed(name) } => write!(
                f,
                "this is {name} compressed data, which memviz does not read: decompress it first, or compress with gzip, xz or zstd"
            ),
            Error::NotAPickle { kind: FileKind::Text } => write!(f, "this is a text file, neither a pickle nor a JSON memory snapshot"),
            Error::Truncated { offset, inside, declared: Some(d) } => write!(
                f,
                "the file is truncated: it ends at byte {offset} inside {inside} of declared length {d} (was the dump interrupted or the download incomplete?)"
            ),
            Error::Truncated { offset, inside, declared: None } => {
                write!(f, "the file is truncated: it ends at byte {offset} inside {inside} (was the dump interrupted?)")
            }
            Error::ForbiddenOpcode { name, opcode, offset } => write!(
                f,
                "refused pickle opcode {name} (0x{opcode:02x}) at byte {offset}: memory snapshots hold only plain data, and memviz never imports or runs code from a file"
            ),
            Error::UnknownOpcode { opcode, offset } => {
                write!(f, "not a valid pickle: unknown opcode 0x{opcode:02x} at byte {offset} (is this really a memory snapshot?)")
            }
            Error::UnsupportedProtocol { version, offset } => {
                write!(f, "pickle protocol {version} (at byte {offset}) is newer than any Python writes; protocols 0 to 5 are supported")
            }
            Error::Malformed { offset, reason } => write!(f, "corrupt pickle at byte {offset}: {reason}"),
            Error::NotASnapshot { found } => write!(f, "not a memory snapshot: {found}"),
            Error::Schema { path, reason } => write!(f, "unexpected snapshot content at {path}: {reason}"),
            Error::Json { message } => write!(f, "not a valid JSON memory snapshot: {message}"),
            Error::Cancelled => write!(f, "loading was cancelled"),
            Error::Decompress { format, offset: Some(o), reason } => write!(f, "cannot decompress this {format} file: {reason} (at byte {o} of the compressed file)"),
            Error::Decompress { format, offset: None, reason } => write!(f, "cannot decompress this {format} file: {reason}"),
            Error::Html { reason } => write!(f, "{reason}"),
            Error::Trace { reason } => write!(f, "{reason}"),
            Error::Inside { container: "HTML page", error } => write!(f, "{error} (in the snapshot inside the HTML page)"),
            Error::Inside { container, error } => write!(f, "{error} (in the {container}-decompressed data)"),
        }
    }
}

impl std::error::Error for Error {}

/// Guesses what a file is from its first bytes, for files that are not pickles.
pub fn sniff(head: &[u8]) -> Option<FileKind> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Some(FileKind::Zip);
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return Some(FileKind::Gzip);
    }
    if head.starts_with(b"\x89PNG")
        || head.starts_with(&[0xff, 0xd8, 0xff])
        || head.starts_with(b"GIF8")
        || (head.starts_with(b"RIFF") && head.get(8..12) == Some(b"WEBP"))
    {
        return Some(FileKind::Image);
    }
    if head.starts_with(b"%PDF") {
        return Some(FileKind::Pdf);
    }
    if head.starts_with(b"BZh") {
        return Some(FileKind::OtherCompressed("bzip2"));
    }
    if head.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
        return Some(FileKind::OtherCompressed("LZ4"));
    }
    if head.starts_with(b"7z\xbc\xaf\x27\x1c") {
        return Some(FileKind::OtherCompressed("7-Zip"));
    }
    let trimmed: &[u8] = {
        let start = head.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(head.len());
        &head[start..]
    };
    let lower: Vec<u8> = trimmed.iter().take(16).map(u8::to_ascii_lowercase).collect();
    if lower.starts_with(b"<!doctype") || lower.starts_with(b"<html") {
        return Some(FileKind::Html);
    }
    if trimmed.starts_with(b"[")
        && trimmed.get(1..).and_then(|t| t.iter().find(|c| !c.is_ascii_whitespace())) == Some(&b'[')
    {
        return Some(FileKind::MemoryTimeline);
    }
    if trimmed.starts_with(b"{") {
        // torch.profiler's export_chrome_trace: `{"schemaVersion": 1, ...` or `{"traceEvents": [`.
        let key_at = |k: &[u8]| trimmed.windows(k.len()).any(|w| w == k);
        if key_at(b"\"traceEvents\"") || key_at(b"\"schemaVersion\"") || key_at(b"\"deviceProperties\"") {
            return Some(FileKind::ProfilerTrace);
        }
    }
    None
}
