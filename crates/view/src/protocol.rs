//! The messages between the page, the loading Web Worker and the reading Web Worker, as one
//! typed protocol: every message is an object whose `kind` is one of [`Kind`], the same strings
//! as `www/protocol.js` exports to the page's scripts (a test reads that file, so the two cannot
//! drift).
//!
//! The loading worker's messages to the page are a [`Message`]: the page turns one into a JS
//! object and reads it back (its `protocol::to_js` and `from_js`, the one place of each), with a
//! [`ProtocolError`] for an unknown or malformed one, through [`Message::into_fields`] and
//! [`Message::read`], which need no browser. The page's request ([`LoadRequest`]) and the
//! worker's [`WorkerTimings`] travel as bytes ([`memviz_core::wire`]); the groups of the
//! messages that carry the model and the plot are the `*_GROUP` constants. Nothing here knows
//! the page's state.

use std::fmt;

use memviz_core::timeline::Options;
use memviz_core::wire;

/// Every kind of message, as `www/protocol.js` (`KIND`) names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The page to the loading worker: the compiled WebAssembly.
    Module,
    /// The page to the loading worker: a file to load.
    Load,
    /// The page to the reading worker: a file to read.
    Read,
    /// The reading worker to the page: it has started.
    ReaderReady,
    /// The file's bytes at an offset, to the loading worker.
    Slice,
    /// The file could not be read, to the loading worker.
    SliceError,
    /// A slice's buffer going back to whoever sent it.
    SliceBack,
    /// [`Message::Progress`].
    Progress,
    /// [`Message::Part`].
    Part,
    /// [`Message::Head`].
    Head,
    /// [`Message::ModelEnd`].
    ModelEnd,
    /// [`Message::Done`].
    Done,
    /// [`Message::Profile`].
    Profile,
    /// [`Message::Error`].
    Error,
    /// [`Message::Unavailable`].
    Unavailable,
    /// [`Message::Cancelled`].
    Cancelled,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 16] = [
        Kind::Module,
        Kind::Load,
        Kind::Read,
        Kind::ReaderReady,
        Kind::Slice,
        Kind::SliceError,
        Kind::SliceBack,
        Kind::Progress,
        Kind::Part,
        Kind::Head,
        Kind::ModelEnd,
        Kind::Done,
        Kind::Profile,
        Kind::Error,
        Kind::Unavailable,
        Kind::Cancelled,
    ];

    /// The `kind` string of its messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Module => "module",
            Kind::Load => "load",
            Kind::Read => "read",
            Kind::ReaderReady => "reader-ready",
            Kind::Slice => "slice",
            Kind::SliceError => "slice-error",
            Kind::SliceBack => "slice-back",
            Kind::Progress => "progress",
            Kind::Part => "part",
            Kind::Head => "head",
            Kind::ModelEnd => "model-end",
            Kind::Done => "done",
            Kind::Profile => "profile",
            Kind::Error => "error",
            Kind::Unavailable => "unavailable",
            Kind::Cancelled => "cancelled",
        }
    }

    /// The kind a `kind` string names.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What a load is doing, as `www/protocol.js` (`PHASE`) names it in progress messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    /// Reading and decoding the file.
    #[default]
    Reading,
    /// Building the model from what was decoded.
    BuildingModel,
    /// Sending the model from the worker to the page.
    HandingOver,
    /// Laying out the first timeline.
    LayingOut,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 4] = [Phase::Reading, Phase::BuildingModel, Phase::HandingOver, Phase::LayingOut];

    /// Its name in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Reading => "reading",
            Phase::BuildingModel => "building-model",
            Phase::HandingOver => "handing-over",
            Phase::LayingOut => "laying-out",
        }
    }

    /// The phase a name in messages names.
    pub fn parse(s: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// What the status line says during it.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Reading => "Reading",
            Phase::BuildingModel => "Building the model",
            Phase::HandingOver => "Handing over the model",
            Phase::LayingOut => "Laying out the timeline",
        }
    }
}

/// A message from the loading worker (`crates/web/src/worker.rs` sends them), or from the page's
/// script about the load (`www/boot.js` passes the worker's on and adds the last two); `B` is
/// how bytes are held (an `ArrayBuffer` in the browser).
#[derive(Clone, Debug, PartialEq)]
pub enum Message<B> {
    /// How far the load is: bytes of the file read so far, and what it is doing.
    Progress {
        /// Bytes of the file read and decoded.
        read_bytes: u64,
        /// What the load is doing now.
        phase: Phase,
    },
    /// One large column of the next head (the buffer is transferred).
    Part {
        /// The column's bytes.
        bytes: B,
    },
    /// One message of a value, after its parts: the value's head, which group of messages it
    /// belongs to (`*_GROUP`) and which of its fields it is (0 for a whole value).
    Head {
        /// The head's bytes.
        bytes: B,
        /// The group ([`SNAPSHOT_GROUP`], [`TRACE_GROUP`] + device position, [`PLOT_GROUP`]...).
        group: u32,
        /// The field of a value sent field by field.
        field: u32,
    },
    /// The model is complete; the plot follows.
    ModelEnd,
    /// The last message of a load.
    Done,
    /// The file is a profiler memory timeline, which the page reads itself.
    Profile,
    /// The load failed.
    Error {
        /// For the user.
        message: String,
    },
    /// No loading worker can run here: the page loads on its main thread instead.
    Unavailable {
        /// Why, for the console.
        message: String,
    },
    /// The user stopped the load.
    Cancelled,
}

/// One field's value in a message.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<B> {
    /// A string.
    Text(String),
    /// A number.
    Number(f64),
    /// Bytes.
    Bytes(B),
}

/// The fields of a message being read, by name: `None` where one is missing or of another type.
pub trait Fields {
    /// How bytes are held.
    type Bytes;
    /// A string field.
    fn text(&self, key: &str) -> Option<String>;
    /// A number field.
    fn number(&self, key: &str) -> Option<f64>;
    /// A bytes field.
    fn bytes(&self, key: &str) -> Option<Self::Bytes>;
}

/// Names of the fields of messages.
const KIND: &str = "kind";
const READ_BYTES: &str = "readBytes";
const PHASE: &str = "phase";
const BYTES: &str = "bytes";
const GROUP: &str = "group";
const FIELD: &str = "field";
const MESSAGE: &str = "message";

/// Why a message could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// Not an object with a string `kind`.
    NoKind,
    /// A `kind` that no message has, or one the reader does not take.
    UnknownKind(String),
    /// A field missing, or of the wrong type or range.
    BadField {
        /// The message's kind.
        kind: Kind,
        /// The field's name.
        field: &'static str,
    },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::NoKind => write!(f, "a message without a kind"),
            ProtocolError::UnknownKind(k) => write!(f, "a message of unknown kind {k:?}"),
            ProtocolError::BadField { kind, field } => {
                write!(f, "a {:?} message without a valid {field:?}", kind.as_str())
            }
        }
    }
}

impl std::error::Error for ProtocolError {}

impl<B> Message<B> {
    /// Its kind.
    pub fn kind(&self) -> Kind {
        match self {
            Message::Progress { .. } => Kind::Progress,
            Message::Part { .. } => Kind::Part,
            Message::Head { .. } => Kind::Head,
            Message::ModelEnd => Kind::ModelEnd,
            Message::Done => Kind::Done,
            Message::Profile => Kind::Profile,
            Message::Error { .. } => Kind::Error,
            Message::Unavailable { .. } => Kind::Unavailable,
            Message::Cancelled => Kind::Cancelled,
        }
    }

    /// Its fields, `kind` first.
    pub fn into_fields(self) -> Vec<(&'static str, Value<B>)> {
        let mut fields = vec![(KIND, Value::Text(self.kind().as_str().to_string()))];
        match self {
            Message::Progress { read_bytes, phase } => {
                fields.push((READ_BYTES, Value::Number(read_bytes as f64)));
                fields.push((PHASE, Value::Text(phase.as_str().to_string())));
            }
            Message::Part { bytes } => fields.push((BYTES, Value::Bytes(bytes))),
            Message::Head { bytes, group, field } => {
                fields.push((BYTES, Value::Bytes(bytes)));
                fields.push((GROUP, Value::Number(f64::from(group))));
                fields.push((FIELD, Value::Number(f64::from(field))));
            }
            Message::Error { message } | Message::Unavailable { message } => {
                fields.push((MESSAGE, Value::Text(message)));
            }
            Message::ModelEnd | Message::Done | Message::Profile | Message::Cancelled => {}
        }
        fields
    }

    /// Reads a message back from its fields.
    pub fn read(fields: &impl Fields<Bytes = B>) -> Result<Message<B>, ProtocolError> {
        let name = fields.text(KIND).ok_or(ProtocolError::NoKind)?;
        let kind = Kind::parse(&name).ok_or_else(|| ProtocolError::UnknownKind(name.clone()))?;
        let bad = |field| ProtocolError::BadField { kind, field };
        let whole = |key| {
            fields.number(key).filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n <= f64::from(u32::MAX)).map(|n| n as u32)
        };
        let bytes = || fields.bytes(BYTES).ok_or(bad(BYTES));
        let message = || fields.text(MESSAGE).ok_or(bad(MESSAGE));
        Ok(match kind {
            Kind::Progress => {
                let read_bytes =
                    fields.number(READ_BYTES).filter(|n| n.is_finite() && *n >= 0.0).ok_or(bad(READ_BYTES))?;
                let phase = fields.text(PHASE).and_then(|p| Phase::parse(&p)).ok_or(bad(PHASE))?;
                Message::Progress { read_bytes: read_bytes as u64, phase }
            }
            Kind::Part => Message::Part { bytes: bytes()? },
            Kind::Head => {
                let bytes = bytes()?;
                let group = whole(GROUP).ok_or(bad(GROUP))?;
                let field = whole(FIELD).ok_or(bad(FIELD))?;
                Message::Head { bytes, group, field }
            }
            Kind::ModelEnd => Message::ModelEnd,
            Kind::Done => Message::Done,
            Kind::Profile => Message::Profile,
            Kind::Error => Message::Error { message: message()? },
            Kind::Unavailable => Message::Unavailable { message: message()? },
            Kind::Cancelled => Message::Cancelled,
            // The scripts' own messages, which no Rust code reads.
            Kind::Module
            | Kind::Load
            | Kind::Read
            | Kind::ReaderReady
            | Kind::Slice
            | Kind::SliceError
            | Kind::SliceBack => return Err(ProtocolError::UnknownKind(name)),
        })
    }

    /// The buffer to transfer rather than copy when it is posted.
    pub fn transfer(&self) -> Option<&B> {
        match self {
            Message::Part { bytes } | Message::Head { bytes, .. } => Some(bytes),
            _ => None,
        }
    }
}

/// What the page asks for besides the file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadRequest {
    /// File name, for messages.
    pub name: String,
    /// Device index to lay out when the file has it.
    pub preferred_device: Option<i64>,
    /// Options of the first layout.
    pub options: Options,
    /// Send only the rank's digest ([`SUMMARY_GROUP`]), not the model (a run's ranks).
    pub summary_only: bool,
}

memviz_core::wire_struct!(LoadRequest { name, preferred_device, options, summary_only });

/// The request as bytes, for `postMessage`.
pub fn encode_request(r: &LoadRequest) -> Vec<u8> {
    wire::encode(r).0
}

/// The request back from its bytes.
pub fn decode_request(bytes: &[u8]) -> Result<LoadRequest, wire::WireError> {
    wire::decode(bytes, &mut wire::PartList::new(Vec::new()))
}

/// Where the worker's time went (ms).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WorkerTimings {
    /// Reading slices of the file.
    pub read_ms: f64,
    /// Decoding the pickle.
    pub parse_ms: f64,
    /// Building the model.
    pub model_ms: f64,
    /// Laying out the timeline.
    pub layout_ms: f64,
    /// Encoding and posting the model and plot.
    pub encode_ms: f64,
}

memviz_core::wire_struct!(WorkerTimings { read_ms, parse_ms, model_ms, layout_ms, encode_ms });

/// Groups of the messages that carry the model: the snapshot without its traces, then device
/// `k`'s trace as group `TRACE_GROUP + k`.
pub const SNAPSHOT_GROUP: u32 = 0;
/// See [`SNAPSHOT_GROUP`].
pub const TRACE_GROUP: u32 = 1;
/// Groups of the messages that carry the plot: the plot without its layout and time map, the
/// layout, the [`WorkerTimings`], the time map.
pub const PLOT_GROUP: u32 = 0;
/// See [`PLOT_GROUP`].
pub const LAYOUT_GROUP: u32 = 1;
/// See [`PLOT_GROUP`].
pub const TIMINGS_GROUP: u32 = 2;
/// See [`PLOT_GROUP`].
pub const TIME_MAP_GROUP: u32 = 3;
/// The group of the one message of a summary-only load: the rank's
/// [`crate::ranks::RankDigest`].
pub const SUMMARY_GROUP: u32 = 4;

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;
