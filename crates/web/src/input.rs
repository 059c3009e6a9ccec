//! What the user did, as plain values. DOM events are turned into [`Input`]s at the edge
//! (`app/listeners.rs`); the handlers only ever see these. Keys, wheel and click mapping are
//! [`memviz_view::keys`], re-exported here.

pub use memviz_view::keys::*;
use memviz_view::state::TimelineInput;
use memviz_view::view::View;

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

/// One user action.
#[derive(Clone, Debug)]
pub enum Input {
    /// Something asked of the analysis panel.
    Analysis(crate::panels::Action),
    /// The pointer, the wheel, a key or the x axis on the timeline (applied by
    /// [`memviz_view::state::ViewState::update`]).
    Timeline(TimelineInput),
    /// The canvases changed size (or devicePixelRatio changed).
    Resize,
    /// Open snapshots.
    Open(Vec<Source>),
    /// Stop the load in progress (and drop the files queued after it).
    CancelLoad,
    /// Close the error box.
    DismissError,
    /// Something is being dragged over the page (true) or left it (false).
    DragHover(bool),
    /// Show another loaded file.
    SelectFile(usize),
    /// Show another device (index into the snapshot's devices).
    SelectDevice(usize),
    /// Show another view.
    SelectView(View),
    /// The Detail slider moves (label only).
    PreviewDetail(usize),
    /// The Detail slider was released: lay out again.
    SetDetail(usize),
    /// Something in a panel view (`crate::views`).
    Panel(crate::views::PanelInput),
}
