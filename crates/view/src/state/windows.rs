//! Each view keeps its zoom: the window of a layout of one kind (allocations, segments, mapped
//! pages) is kept when another kind is shown and given back when it is shown again.

use memviz_core::timeline::Mode;

use super::OpenFile;
use crate::viewport::Viewport;

impl OpenFile {
    /// Picks the window after the file was laid out again: `previous` is the window shown
    /// before, on a layout of kind `previous_mode`. The same window for the same kind (a new
    /// Detail); the kind's own last window when it is shown again; else `previous` where the
    /// axis is the same (the time axis), else the whole axis. A new device forgets every window.
    pub fn window_after_relayout(&mut self, previous: Viewport, previous_mode: Mode, same_device: bool) {
        let mode = self.plot.layout.options.mode;
        let full = self.full_viewport();
        self.viewport = full;
        if !same_device {
            self.other_windows.clear();
            return;
        }
        let fits = |v: &Viewport| !v.is_full() && v.full_x1 == full.full_x1;
        if mode != previous_mode {
            self.other_windows.retain(|(m, _)| *m != previous_mode);
            self.other_windows.push((previous_mode, previous));
            let own = self.other_windows.iter().find(|(m, _)| *m == mode).map(|&(_, v)| v);
            if let Some(v) = own.filter(fits) {
                self.viewport = v;
                return;
            }
        }
        if fits(&previous) {
            self.viewport = previous;
        }
    }
}

#[cfg(test)]
mod tests {
    use memviz_core::timeline::{Mode, Options};

    static DEMO: &[u8] = include_bytes!("../../../../tests/data/real/gpt_amp_annotated.pickle");

    /// Zoomed on the allocations, the segments shown and zoomed elsewhere, then the allocations
    /// again: each shows its own window; a new device shows everything.
    #[test]
    fn each_kind_of_layout_keeps_its_window() {
        let mut st = crate::test_state::open_state(DEMO, "demo.pickle", 15_000, (1000.0, 60.0));
        let Some(f) = st.files.first_mut() else { panic!("no file") };
        let relayout = |f: &mut crate::state::OpenFile, mode: Mode, same_device: bool| {
            let before = (f.viewport, f.plot.layout.options.mode);
            f.plot = memviz_core::plot::PlotData::build(
                &f.snap,
                f.plot.device_pos,
                Options { max_entries: f.max_entries, mode, hide_freed: false, focus_rows: None },
            );
            f.window_after_relayout(before.0, before.1, same_device);
        };
        let full = f.full_viewport();
        f.viewport.set_window(full.full_x1 * 0.25, full.full_x1 * 0.5);
        let zoomed = f.viewport;
        relayout(f, Mode::Segments, true);
        assert!(f.viewport.is_full(), "the segments start whole: {:?}", f.viewport);
        let seg_full = f.viewport.full_x1;
        f.viewport.set_window(1.0, seg_full * 0.5);
        let seg_zoomed = f.viewport;
        relayout(f, Mode::Allocations, true);
        assert_eq!(f.viewport, zoomed);
        relayout(f, Mode::Segments, true);
        assert_eq!(f.viewport, seg_zoomed);
        relayout(f, Mode::Segments, false);
        assert!(f.viewport.is_full());
        relayout(f, Mode::Allocations, true);
        assert!(f.viewport.is_full(), "a new device forgot the other windows");
    }
}
