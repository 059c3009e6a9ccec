//! What the user did, as values. DOM events are turned into [`Input`]s at the edge (nearly all
//! of them [`PageInput`]s, which `memviz_view` applies): each
//! part of the page says which events it listens to and what they mean as [`Binding`]s, and the
//! page's state installs them all through one listener helper (`app/listeners.rs`); the handlers
//! only ever see these values. Keys, wheel and click mapping are [`memviz_view::keys`],
//! re-exported here.

pub use memviz_view::keys::*;
pub use memviz_view::state::PageInput;
use wasm_bindgen::JsCast;

/// A source of snapshot bytes.
#[derive(Clone, Debug)]
pub enum Source {
    /// A file the user picked or dropped.
    File(web_sys::File),
    /// The snapshot built into the page.
    Demo,
    /// Snapshot bytes the page came with (pages written by `memviz trace-plot` and friends).
    Bytes {
        /// File name to show.
        name: String,
        /// The snapshot.
        bytes: std::rc::Rc<[u8]>,
    },
}

/// What a source was opened from, to tell a file opened again: name, size and time of a picked
/// file (none for the demo and embedded bytes).
pub fn source_key(s: &Source) -> Option<String> {
    match s {
        Source::File(f) => Some(format!("{}|{}|{}", f.name(), f.size(), f.last_modified())),
        Source::Demo | Source::Bytes { .. } => None,
    }
}

/// The name a source is shown by.
pub fn source_name(s: &Source) -> String {
    match s {
        Source::File(f) => f.name(),
        Source::Demo => String::new(),
        Source::Bytes { name, .. } => name.clone(),
    }
}

/// One user action: a plain value for [`memviz_view::state::ViewState::apply`], or one that
/// holds the browser's objects (picked files) or needs a measurement (a resize).
#[derive(Clone, Debug)]
pub enum Input {
    /// Everything but the three below.
    Page(PageInput),
    /// The canvases changed size (or devicePixelRatio changed).
    Resize,
    /// Open snapshots.
    Open(Vec<Source>),
    /// Open a training run: its files with their paths (relative, in a folder).
    OpenRun(Vec<(String, web_sys::File)>),
}

/// What a DOM event means: an [`Input`], or none (the event is ignored).
pub type ToInput = Box<dyn Fn(&web_sys::Event) -> Option<Input>>;

/// One DOM event of one element, and the [`Input`] it means (none: the event is ignored).
pub struct Binding {
    /// Where the event happens.
    pub target: web_sys::EventTarget,
    /// The event's type (`"click"`).
    pub event: &'static str,
    /// What it means.
    pub to_input: ToInput,
}

/// A [`Binding`] of events of type `E` (events of another type are ignored).
pub fn bind<E: JsCast + 'static>(
    target: &web_sys::EventTarget,
    event: &'static str,
    to_input: impl Fn(&E) -> Option<Input> + 'static,
) -> Binding {
    Binding {
        target: target.clone(),
        event,
        to_input: Box::new(move |ev: &web_sys::Event| ev.dyn_ref::<E>().and_then(&to_input)),
    }
}
