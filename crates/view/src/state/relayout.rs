//! Laying the shown file out again with another device or Detail: the status line says so first
//! ([`ViewState::begin_relayout`], the page lays out in its next frame so that it shows), then
//! [`ViewState::finish_relayout`] builds the plot, keeps the pin and the keyboard's selection by
//! their keys, the window (a new Detail keeps it; a device or view of its own keeps its own) and
//! the time axis where the device has times. [`ViewState::forget_targets`] is what any change of
//! plot forgets (for another file or device, the highlight: its element indices were of the other).

use memviz_core::plot::PlotData;
use memviz_core::timeline::Options;

use super::{Loading, ViewState};
use crate::xmap::XAxis;

impl ViewState {
    /// Shows "Laying out the timeline" for the shown file; its index, to lay out next.
    pub fn begin_relayout(&mut self) -> Option<usize> {
        let i = self.current?;
        let name = self.files.get(i)?.name.clone();
        self.loading = Some(Loading {
            name,
            fraction: 1.0,
            phase: "Laying out the timeline",
            read_bytes: 0,
            total_bytes: 0,
            left_ms: None,
            shown: true,
        });
        Some(i)
    }

    /// Lays file `i` out again on `device` (position; `None`: its own) with Detail `max_entries`
    /// (`None`: its own), in the shown view's mode, and ends the status line's relayout.
    pub fn finish_relayout(&mut self, i: usize, device: Option<usize>, max_entries: Option<usize>) {
        let (view, hide_freed) = (self.view, self.history.hide_freed);
        if device.is_some() {
            self.selected = None;
            self.cursor_entry = None;
            // Element indices of one device name nothing on another.
            self.analysis.set_highlight(None);
        }
        let before = self.files.get(i).map(|f| (f.viewport, f.plot.layout.options.mode));
        let plot = self.files.get(i).map(|f| {
            let device_pos = device.unwrap_or(f.plot.device_pos);
            let max_entries = max_entries.unwrap_or(f.max_entries);
            // The same window of the same layout keeps Detail where the user looks.
            let same = device.is_none() && f.plot.layout.options.mode == view.mode();
            let focus_rows = if same { super::focus::wanted_focus(f) } else { None };
            PlotData::build(&f.snap, device_pos, Options { max_entries, mode: view.mode(), hide_freed, focus_rows })
        });
        if let Some(plot) = plot {
            // The pin follows its allocation's key into the new layout.
            if self.current == Some(i) {
                self.set_plot(plot);
            } else if let Some(f) = self.files.get_mut(i) {
                f.plot = plot;
                f.forget_focus();
            }
        }
        if let Some(f) = self.files.get_mut(i) {
            f.max_entries = max_entries.unwrap_or(f.max_entries);
            if f.x_axis == XAxis::Time {
                f.plot.build_time_map(&f.snap);
                if f.plot.time.is_none() {
                    f.x_axis = XAxis::Steps;
                }
            }
            if let Some((viewport, mode)) = before {
                // A new Detail keeps the window; each view keeps its own.
                f.window_after_relayout(viewport, mode, device.is_none());
            }
        }
        self.loading = None;
        self.forget_targets(true);
        // The keyboard's selection is shown again where its allocation is now.
        self.show_selection();
        if self.current == Some(i) {
            // A window of its own (another view or device) gets its own Detail.
            self.refocus_detail();
        }
    }

    /// What a new plot of the shown file forgets: the pointer's target (the layout's indices
    /// changed); for another file, also the pin, the keyboard's selection and the cursor (a
    /// relayout of the same file keeps its pin and selection by their keys:
    /// [`ViewState::set_plot`]).
    pub fn forget_targets(&mut self, same_file: bool) {
        self.generation += 1;
        self.hover = None;
        if !same_file {
            self.set_pin(None);
            self.selected = None;
            self.cursor_entry = None;
            // Element indices of one file name nothing in another (a group's highlight can be
            // carried over by its text: `Derived::carry_highlight`).
            if self.analysis.highlight.is_some() {
                self.analysis.set_highlight(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Target;
    use memviz_core::timeline::ElementIndex;

    static DEMO: &[u8] = include_bytes!("../../../../tests/data/real/gpt_amp_annotated.pickle");

    fn demo() -> ViewState {
        crate::test_state::open_state(DEMO, "demo.pickle", 15_000, (1000.0, 60.0))
    }

    #[test]
    fn a_new_detail_keeps_the_window_the_pin_and_the_cursor() {
        let mut s = demo();
        let f = s.file().expect("file");
        let full = f.viewport;
        let e = f.plot.layout.elements.iter().position(|e| e.band.is_some() && e.size_bytes > 1 << 20).expect("a band");
        let key = f.plot.layout.element_key(ElementIndex::new(e as u32));
        s.set_pin(Some(Target::Element(ElementIndex::new(e as u32))));
        s.cursor_entry = Some(40);
        if let Some(f) = s.file_mut() {
            f.viewport.set_window(full.x0 + 10.0, full.x0 + 200.0);
        }
        let window = s.file().expect("file").viewport;
        let generation = s.generation;
        assert_eq!(s.begin_relayout(), Some(0));
        assert_eq!(s.loading.as_ref().map(|l| l.phase), Some("Laying out the timeline"));
        s.finish_relayout(0, None, Some(200));
        let f = s.file().expect("file");
        assert_eq!(f.max_entries, 200);
        let drawn = f.plot.layout.elements.iter().filter(|e| e.band.is_some()).count();
        assert!(drawn <= 200, "{drawn} drawn one by one");
        assert_eq!((f.viewport.x0, f.viewport.x1), (window.x0, window.x1), "the window stays");
        assert!(s.loading.is_none() && s.generation > generation && s.hover.is_none());
        assert_eq!(s.cursor_entry, Some(40));
        // The pin is the same allocation, by its key, in the new layout.
        let Some(Target::Element(p)) = s.pinned() else { panic!("still pinned") };
        assert_eq!(s.file().expect("file").plot.layout.element_key(p), key);
    }

    #[test]
    fn another_device_forgets_the_selection_and_the_cursor() {
        let mut s = demo();
        s.cursor_entry = Some(40);
        assert_eq!(s.begin_relayout(), Some(0));
        s.finish_relayout(0, Some(0), None);
        assert_eq!(s.cursor_entry, None);
        assert!(s.loading.is_none());
        // Without a file there is nothing to lay out.
        let mut empty = ViewState::default();
        assert_eq!(empty.begin_relayout(), None);
        assert!(empty.loading.is_none());
    }

    #[test]
    fn another_file_forgets_the_pin_and_the_highlight() {
        let mut s = demo();
        s.set_pin(Some(Target::Summarized));
        let h = crate::state::panels::Highlight {
            key: "site:0".into(),
            elements: vec![ElementIndex::new(1), ElementIndex::new(2)],
            group: None,
        };
        s.analysis.set_highlight(Some(h));
        s.forget_targets(true);
        assert_eq!(s.pinned(), Some(Target::Summarized));
        assert!(s.analysis.highlight.is_some(), "the same file's elements keep their indices");
        s.forget_targets(false);
        assert_eq!(s.pinned(), None);
        assert!(s.analysis.highlight.is_none(), "another file's elements are others");
    }

    #[test]
    fn another_device_forgets_the_highlight() {
        let mut s = demo();
        let h = crate::state::panels::Highlight {
            key: "site:0".into(),
            elements: vec![ElementIndex::new(1), ElementIndex::new(2)],
            group: None,
        };
        s.analysis.set_highlight(Some(h.clone()));
        s.begin_relayout();
        s.finish_relayout(0, None, Some(300));
        assert_eq!(s.analysis.highlight.as_ref(), Some(&h), "a new Detail keeps it");
        s.begin_relayout();
        s.finish_relayout(0, Some(0), None);
        assert!(s.analysis.highlight.is_none());
    }
}
