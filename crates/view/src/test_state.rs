//! A page state with one snapshot open on a 1000 × 500 px plot, for the crate's tests.

#![allow(clippy::expect_used)]

use memviz_core::plot::{choose_device, PlotData};
use memviz_core::timeline::Options;

use crate::state::{OpenFile, ViewState};

/// `bytes` opened as `name` on its default device with Detail `max_entries`, the whole trace
/// in view on a 1000 × 500 px plot.
pub(crate) fn open_file(bytes: &[u8], name: &str, max_entries: usize) -> OpenFile {
    let snap = memviz_core::load(bytes).expect("the snapshot loads");
    let device = choose_device(&snap, None);
    let plot = PlotData::build(&snap, device, Options { max_entries, ..Options::default() });
    let mut f = OpenFile::new(name.into(), snap, plot);
    f.max_entries = max_entries;
    f
}

/// `bytes` opened as `name` ([`open_file`]) and shown; the overview `minimap_css` px (zero: none
/// measured).
pub(crate) fn open_state(bytes: &[u8], name: &str, max_entries: usize, minimap_css: (f64, f64)) -> ViewState {
    let mut s = ViewState::default();
    s.files = vec![open_file(bytes, name, max_entries)];
    s.current = Some(0);
    s.plot_css = (1000.0, 500.0);
    s.minimap_css = minimap_css;
    s.dpr = 1.0;
    s
}
