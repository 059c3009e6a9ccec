//! # memviz-view
//!
//! The memviz page's logic as plain Rust, with no browser crates, so that all of it is tested
//! natively (`cargo test -p memviz-view`). The page (`memviz-web`) keeps the DOM, the canvases
//! and the workers, and calls into these modules for every decision that is not a DOM call:
//! - [`viewport`]: the visible window, zoom and pan math, [`viewport::clamp_px`];
//! - [`xmap`]: event steps or wall-clock time on the x axis;
//! - [`axis`]: ticks and their labels; [`chart`]: the analysis panel's charts' geometry;
//!   [`decimate`]: vertices per pixel column;
//! - [`raster`]: the timeline's filled bands as RGBA pixels; [`path`]: its filled outlines and
//!   a band's polygon as SVG path data;
//! - [`markup`]: the stack panel's and the tooltip's HTML, links to cited trace entries;
//!   [`pools`]: which private pool is under the pointer and what its tooltip says;
//! - [`keys`]: keys, wheel and clicks as commands; [`view`]: the views and their names;
//! - [`fragment`]: the URL fragment that holds the page's place; [`names`]: file names cut for
//!   the menus;
//! - [`history`]: the Allocator State History's rows, texts and segment map; [`settings`]: the
//!   Allocator Settings view's rows;
//! - [`entries`]: the trace's one numbering (entries), citations of it in texts, the cursor;
//! - [`theme`]: light and dark themes, the one shown and every colour painted on a canvas;
//! - [`layout_px`]: where the plot area, the margins and the annotation rows are, in CSS px;
//! - [`ranks`]: a training run: its ranks, their digests, the focus, outliers, the overview's geometry;
//!   [`ranks_markup`]: the overview's markup; [`ranks_chart`]: its overlaid curves, axes, legend, readout;
//! - [`feed`]: the one loop that reads a file in slices and decodes it (slices and the thread's
//!   events behind traits);
//! - [`protocol`]: the messages between the page and its Web Workers (kinds, phases, fields);
//! - [`model`]: a snapshot loaded from chunks of bytes (the page's and its worker's one path),
//!   the demo, base64;
//! - [`derived`]: what the page computes from the state and keeps until it changes (analyses,
//!   comparisons, categories, pools, matches, the event list, the flame graph);
//! - [`state`]: the timeline's user state ([`state::ViewState`]: open files, pointer, pins,
//!   drag, canvas sizes; its fields private to this crate) and what the pointer, wheel and keys
//!   do to it, as effects for the page; [`resolve`]: the effects that need only the state and
//!   what is derived, carried out here.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod axis;
pub mod chart;
pub mod decimate;
pub mod derived;
pub mod entries;
pub mod feed;
pub mod fragment;
pub mod group_at;
pub mod history;
pub mod keys;
pub mod layout_px;
pub mod markup;
pub mod model;
pub mod names;
pub mod path;
pub mod pools;
pub mod protocol;
pub mod ranks;
pub mod ranks_chart;
pub mod ranks_markup;
pub mod raster;
pub mod resolve;
pub mod settings;
pub mod stack;
pub mod state;
pub mod theme;
pub mod view;
pub mod viewport;
pub mod xmap;

#[cfg(test)]
mod test_state;
