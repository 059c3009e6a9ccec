//! The timeline's user state and what the pointer, the wheel and the keys do to it.
//!
//! [`ViewState`] holds the open files, which one is shown, the view, what the pointer is over,
//! what is pinned, a drag in progress and the canvases' sizes. [`ViewState::update`] applies one
//! [`TimelineInput`] and returns the [`Effect`]s the page must carry out (draw again, show the
//! next frames from the held copies, refresh the overview, ...). Nothing here touches a browser.
//! The keyboard's selection and the cursor on a trace entry are in `state/select.rs`.

use memviz_core::plot::PlotData;
use memviz_core::snapshot::Snapshot;
use memviz_core::timeline::{ElementIndex, Hit};

use memviz_core::search::Query;

use crate::keys::{self, Command, Surface};
use crate::layout_px::{annotation_row_at, annotation_x_px, minimap_rect, moment_rect, plot_rect};
use crate::view::View;
use crate::viewport::{PlotRect, Viewport};
use crate::xmap::{XAxis, XMap};

/// Narrowest x window in steps.
pub const MIN_WINDOW_STEPS: f64 = 4.0;
/// Narrowest x window in µs.
pub const MIN_WINDOW_US: f64 = 1.0;
/// How close (CSS px) the pointer must be to an OOM line to point at it.
pub const OOM_HOVER_PX: f64 = 4.0;
/// After a zoom or pan, the timeline is drawn from held copies until the input has rested this
/// long (ms); then exactly.
pub const PREVIEW_HOLD_MS: f64 = 90.0;

/// An open snapshot and how it is being looked at.
pub struct OpenFile {
    /// File name as shown in the file menu.
    pub name: String,
    /// The model.
    pub snap: Snapshot,
    /// Layout of the chosen device at the chosen detail.
    pub plot: PlotData,
    /// Drawn allocations at most (the Detail control).
    pub max_entries: usize,
    /// What the x axis shows.
    pub x_axis: XAxis,
    /// Visible window.
    pub viewport: Viewport,
    /// What it was opened from (name, size and time of a picked file), to tell a file opened
    /// again from a new one; set by [`ViewState::push_file`].
    pub source: Option<String>,
    /// The last window of each other kind of layout shown (segments, mapped pages), given back
    /// when it is shown again ([`OpenFile::window_after_relayout`]).
    pub other_windows: Vec<(memviz_core::timeline::Mode, Viewport)>,
    /// The focus last chosen for Detail ([`ViewState::refocus_detail`]): `Some(None)` for the
    /// whole trace; `None` before any.
    checked_focus: Option<Option<(u32, u32)>>,
}

impl OpenFile {
    /// A file named `name` of model `snap` laid out as `plot`: the default Detail, entries on
    /// the x axis, its whole trace in view.
    pub fn new(name: String, snap: Snapshot, plot: PlotData) -> OpenFile {
        let mut f = OpenFile {
            name,
            snap,
            plot,
            max_entries: memviz_core::timeline::DEFAULT_MAX_ENTRIES,
            x_axis: XAxis::Steps,
            viewport: Viewport::new(1.0, 1.0, 1.0),
            source: None,
            other_windows: Vec::new(),
            checked_focus: None,
        };
        f.viewport = f.full_viewport();
        f
    }

    /// The step ↔ position map of the chosen x axis.
    pub fn xmap(&self) -> XMap<'_> {
        match (self.x_axis, &self.plot.time) {
            (XAxis::Time, Some(t)) if !self.is_moment() => XMap::time(t),
            _ => XMap::steps(),
        }
    }

    /// Whether the x axis can show time (a moment has no x axis).
    pub fn has_time(&self) -> bool {
        self.plot.has_time && !self.is_moment()
    }

    /// Whether the file has no history here (`enabled='state'`): what was live when the
    /// snapshot was taken is drawn as one column, without an x axis.
    pub fn is_moment(&self) -> bool {
        self.plot.layout.is_moment()
    }

    /// The plot area of a canvas of `css` size (CSS px): the column of a moment, else the
    /// whole area inside the margins.
    pub fn plot_rect(&self, css: (f64, f64)) -> PlotRect {
        let rect = plot_rect(css.0, css.1, self.plot.annotation_row_count);
        if self.is_moment() {
            moment_rect(rect)
        } else {
            rect
        }
    }

    /// A viewport showing the whole plot on the current axis.
    pub fn full_viewport(&self) -> Viewport {
        let l = &self.plot.layout;
        if self.is_moment() {
            // Fitted to the column, not to a peak before the trace's one entry.
            return Viewport::new(f64::from(l.steps), l.live_bytes_at(0.5) as f64, f64::from(l.steps));
        }
        match (self.x_axis, &self.plot.time) {
            (XAxis::Time, Some(t)) => Viewport::new(t.end_us().max(MIN_WINDOW_US), l.peak_bytes as f64, MIN_WINDOW_US),
            _ => Viewport::new(f64::from(l.steps), l.peak_bytes as f64, MIN_WINDOW_STEPS),
        }
    }

    /// Shows the x axis `a`, keeping the window on the same steps (unless all is shown).
    /// Whether it changed.
    pub fn set_x_axis(&mut self, a: XAxis) -> bool {
        if self.x_axis == a || (a == XAxis::Time && !self.has_time()) {
            return false;
        }
        if a == XAxis::Time {
            self.plot.build_time_map(&self.snap);
        }
        let old = self.viewport;
        let (s0, s1) = {
            let xm = self.xmap();
            (xm.step(old.x0), xm.step(old.x1))
        };
        self.x_axis = a;
        let mut v = self.full_viewport();
        let xm = self.xmap();
        if !old.is_full() {
            v.set_window(xm.pos(s0), xm.pos(s1));
            v.y_max_bytes = old.y_max_bytes;
        }
        self.viewport = v;
        true
    }

    /// What is under a point of the plot area `rect` (CSS px).
    pub fn target_at(&self, rect: &PlotRect, x_px: f64, y_px: f64) -> Option<Target> {
        let v = &self.viewport;
        let xm = self.xmap();
        let plot = &self.plot;
        // Annotation strip above the plot.
        if y_px < rect.top_px && x_px >= rect.left_px && x_px <= rect.right_px() {
            let row = annotation_row_at(y_px, plot.annotation_row_count)?;
            return plot.annotations.iter().enumerate().rev().find_map(|(i, a)| {
                let r = plot.annotation_rows.get(i).copied()?;
                let (x0, x1) = annotation_x_px(a, plot.time.as_ref(), &xm, v, rect);
                (r == row && x_px >= x0 - 1.0 && x_px <= x1 + 1.0).then_some(Target::Annotation(i))
            });
        }
        if !rect.contains(x_px, y_px) {
            return None;
        }
        // OOM lines first: they are thin.
        let mut best: Option<(f64, usize)> = None;
        for (i, o) in plot.ooms.iter().enumerate() {
            let d = (v.x_px(rect, xm.pos(o.step)) - x_px).abs();
            if d <= OOM_HOVER_PX && best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, i));
            }
        }
        if let Some((_, i)) = best {
            return Some(Target::Oom(i));
        }
        let step = xm.step(v.pos_at(rect, x_px));
        let bytes = v.bytes_at(rect, y_px);
        match plot.layout.hit_test(step, bytes)? {
            Hit::Element(e) => Some(Target::Element(e)),
            Hit::Summarized => Some(Target::Summarized),
        }
    }
}

/// Something the pointer can point at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A drawn allocation.
    Element(ElementIndex),
    /// The summarized band.
    Summarized,
    /// An OOM marker (index into [`PlotData::ooms`]).
    Oom(usize),
    /// An annotation (index into [`PlotData::annotations`]).
    Annotation(usize),
}

/// What of a private pool the pointer is on (private-pools view).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolHover {
    /// The pool's envelope (index in its device's pools).
    pub envelope: usize,
    /// On the pool's stripe of small allocations in the summarized band: their live bytes at
    /// the pointer.
    pub small_bytes: Option<u64>,
}

/// A drag in progress.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Drag {
    /// Panning the plot.
    Pan {
        /// Where the press was (CSS px).
        down_px: (f64, f64),
        /// Window when it began.
        x0: f64,
        /// Window when it began.
        x1: f64,
        /// Whether it moved beyond a click.
        moved: bool,
    },
    /// Selecting a window on the minimap.
    Brush {
        /// Position where it began.
        start: f64,
        /// Position now.
        end: f64,
        /// Where the press was (CSS px).
        down_px: (f64, f64),
    },
}

/// What the pointer, the wheel and the keys do on the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimelineInput {
    /// Wheel over a canvas: zoom x around the pointer.
    Wheel {
        /// Canvas.
        surface: Surface,
        /// Pointer x, CSS px from the canvas' left edge.
        x_px: f64,
        /// Vertical scroll in CSS px (positive: zoom out).
        delta_y_px: f64,
    },
    /// A button pressed over a canvas.
    PointerDown {
        /// Canvas.
        surface: Surface,
        /// CSS px from the canvas' left edge.
        x_px: f64,
        /// CSS px from the canvas' top edge.
        y_px: f64,
        /// `MouseEvent.button` (0: the main button).
        button: i16,
    },
    /// The pointer moved over a canvas.
    PointerMove {
        /// Canvas.
        surface: Surface,
        /// CSS px from the canvas' left edge.
        x_px: f64,
        /// CSS px from the canvas' top edge.
        y_px: f64,
    },
    /// A button released over a canvas.
    PointerUp {
        /// Canvas.
        surface: Surface,
        /// CSS px from the canvas' left edge.
        x_px: f64,
        /// CSS px from the canvas' top edge.
        y_px: f64,
    },
    /// The pointer left a canvas.
    PointerLeave {
        /// Canvas.
        surface: Surface,
    },
    /// A keyboard command.
    Key(Command),
    /// The x axis was chosen.
    SetXAxis(XAxis),
    /// Unpin (the stack panel's × button; unlike Esc it never stops a load).
    Unpin,
    /// Show or fold the C++ frames in the stack panel.
    ToggleNativeFrames,
    /// A cited trace entry's link: put the cursor there (or take it away from there); from a
    /// panel view (the History), the timeline is shown with the cursor there.
    Cursor(u32),
    /// A view was chosen.
    SelectView(View),
}

/// What the page must do after an update.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Draw the next frame from the held copies until `until_ms`, then exactly (a timer must
    /// ask for a frame then).
    HoldPreview {
        /// When the exact drawing is due (ms, the clock `update` was given).
        until_ms: f64,
    },
    /// The overview's columns must be computed again (the x axis changed).
    RefreshMinimap,
    /// Esc while a file loads: stop the load.
    CancelLoad,
    /// Lay the shown file out again (an option of the layout changed).
    Relayout,
    /// A row of the analysis panel names elements: find them in the analyses and
    /// [`panels::AnalysisState::toggle_highlight`] them.
    Highlight(panels::Action),
    /// Download something from the analysis panel.
    Export(panels::ExportKind),
    /// Chart each group's bytes over time in the Categories tab (`Derived::group_timeline_of`).
    GroupTimeline,
    /// Pin the search match this many matches after (or before) the current one and bring it
    /// into view ([`ViewState::step_match`]).
    StepMatch(i32),
    /// Put the cursor on trace entry `.0`, or take it away from there
    /// ([`ViewState::toggle_cursor`]).
    Cursor(u32),
    /// Open the timeline of the run's entry `.0` ([`ViewState::focus_rank`] says which it is;
    /// the page brings its model in).
    FocusRank(usize),
    /// Another view is shown: the page shows its panel or the timeline and measures the canvases
    /// again; with `relayout`, the shown file is laid out again (the view plots other data).
    ViewShown {
        /// Whether the layout changes with it.
        relayout: bool,
    },
    /// Lay the shown file out again on another device or at another Detail (`None`: as now).
    LayOut {
        /// Device position.
        device: Option<usize>,
        /// Drawn allocations at most.
        detail: Option<usize>,
    },
    /// Another file is shown ([`ViewState::current`] changed): its derived data and drawings
    /// are made for it.
    FileShown,
    /// The shown file was closed ([`ViewState::close_file`]): what was derived or drawn by file
    /// index goes, and the page measures again.
    FileClosed,
    /// Read a released file again from its source (index into [`ViewState::released`]).
    ReadAgain(usize),
    /// Open the run's entry `.0` and its iteration's median rank, and compare them.
    CompareRank(usize),
    /// The run's overview was shown or hidden: the page measures again.
    LayoutChanged,
    /// An input the page finishes with what it holds ([`apply::PanelInput`]).
    Panel(apply::PanelInput),
    /// Keep the theme's choice ([`ViewState::theme`]) for the next visit.
    KeepTheme,
    /// The theme shown changed: what was drawn in the old colours is drawn again.
    ThemeChanged,
    /// Keep the details panel's fold ([`ViewState::stack_collapsed`]) for the next visit.
    KeepStackFold,
}

/// A load in progress, as the status line shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Loading {
    /// File name.
    pub name: String,
    /// Share read, 0 to 1.
    pub fraction: f64,
    /// What is happening.
    pub phase: &'static str,
    /// Bytes read so far.
    pub read_bytes: u64,
    /// Bytes of the file.
    pub total_bytes: u64,
    /// Estimated time left (ms), once there is enough to go by.
    pub left_ms: Option<f64>,
    /// Whether the page shows it yet: a load that ends within a moment goes from the drop to
    /// its timeline with no card and progress bar flashing in between.
    pub shown: bool,
}

/// A file whose model was let go: its name and what it was opened from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleasedFile {
    /// Its name in the file menu.
    pub name: String,
    /// What it was opened from ([`OpenFile::source`]), to read it again.
    pub source: String,
}

/// The timeline's user state. Its fields are private to this crate: the page reads them through
/// `state/read.rs` and changes them only through inputs ([`ViewState::apply`]) and the methods
/// that keep their rules (`state/shell.rs` for what only a browser knows).
#[derive(Default)]
pub struct ViewState {
    /// Open files.
    pub(crate) files: Vec<OpenFile>,
    /// Files whose models were let go to keep at most two ([`ViewState::release_file`]): still
    /// listed, to be read again from their source when chosen. Oldest first.
    pub(crate) released: Vec<ReleasedFile>,
    /// Index of the file shown.
    pub(crate) current: Option<usize>,
    /// The view shown.
    pub(crate) view: View,
    /// What the pointer is over.
    pub(crate) hover: Option<Target>,
    /// What was clicked: read with [`ViewState::pinned`], changed only through
    /// [`ViewState::set_pin`] (which keeps `pin_key` with it).
    pinned: Option<Target>,
    /// The pinned allocation's key while the shown layout lacks it ([`pin`]).
    pin_key: Option<memviz_core::timeline::ElementKey>,
    /// A drag in progress.
    pub(crate) drag: Option<Drag>,
    /// Last pointer position (canvas, CSS px).
    pub(crate) last_pointer: Option<(Surface, f64, f64)>,
    /// Plot canvas size, CSS px.
    pub(crate) plot_css: (f64, f64),
    /// Minimap canvas size, CSS px.
    pub(crate) minimap_css: (f64, f64),
    /// devicePixelRatio.
    pub(crate) dpr: f64,
    /// Until when (ms) the timeline is drawn from held copies (see [`Effect::HoldPreview`]).
    pub(crate) preview_until_ms: f64,
    /// The load in progress (Esc then stops it instead of unpinning).
    pub(crate) loading: Option<Loading>,
    /// The last error, in words.
    pub(crate) error: Option<String>,
    /// A note for the status line (such as a stopped load), until the next load.
    pub(crate) status_note: Option<String>,
    /// Whether files are being dragged over the page.
    pub(crate) drag_hover: bool,
    /// Detail slider value while it is being dragged.
    pub(crate) detail_preview: Option<usize>,
    /// Device index to show first when a file has it (from the URL or an embedding page).
    pub(crate) preferred_device: Option<i64>,
    /// Counter of layouts: anything computed from a layout is keyed by it.
    pub(crate) generation: usize,
    /// The analysis panel.
    pub(crate) analysis: panels::AnalysisState,
    /// The Compare view's window, cursor, and whether it is shown.
    pub(crate) compare_view: compare_view::CompareView,
    /// The Allocator State History.
    pub(crate) history: panels::HistoryState,
    /// The search boxes' text.
    pub(crate) search_boxes: panels::SearchBoxes,
    /// Their query ([`panels::SearchBoxes::query`]).
    pub(crate) search: Query,
    /// Which match of the search was stepped to last (`n` / `N`).
    pub(crate) search_cursor: Option<matches::MatchIndex>,
    /// The file the URL fragment names, until it is opened (its view is restored then).
    pub(crate) restore_file: Option<String>,
    /// The keyboard help is shown.
    pub(crate) help_open: bool,
    /// The private pool under the pointer (private-pools view).
    pub(crate) pool_hover: Option<PoolHover>,
    /// Whether the stack panel lists C++ frames (else it counts them on one line).
    pub(crate) native_frames_open: bool,
    /// The trace entry the cursor is on (a cited entry's link, or the keyboard's selection).
    pub(crate) cursor_entry: Option<u32>,
    /// The allocation the keyboard selected (`.` `,` `↑` `↓`).
    pub(crate) selected: Option<Selection>,
    /// The training run opened, if one was (its overview and the rank in focus).
    pub(crate) run: Option<crate::ranks::Run>,
    /// The run the URL fragment names, until a run is opened: its focused rank (focused then)
    /// and whether its overview was shown.
    pub(crate) restore_rank: Option<(Option<u32>, bool)>,
    /// The flame view.
    pub(crate) flame: flame::FlameState,
    /// The theme: the user's choice and the system's preference.
    pub(crate) theme: crate::theme::ThemeState,
    /// The stack panel is folded to its header line.
    pub(crate) stack_collapsed: bool,
}

impl ViewState {
    /// The file shown.
    pub fn file(&self) -> Option<&OpenFile> {
        self.current.and_then(|i| self.files.get(i))
    }

    /// Focuses the run's entry `i`: its timeline is shown (the overview is left). Whether there
    /// is such an entry.
    pub fn focus_rank(&mut self, i: usize) -> bool {
        let Some(run) = self.run.as_mut().filter(|r| i < r.ranks.len()) else { return false };
        run.focused = Some(i);
        run.overview = false;
        run.generation += 1;
        true
    }

    /// Which files may be let go so that at most [`crate::ranks::MAX_RESIDENT_MODELS`] full models
    /// stay: the oldest first, never the one shown. Indices into `files`, highest first.
    pub fn files_to_release(&self) -> Vec<usize> {
        let n = self.files.len();
        let extra = n.saturating_sub(crate::ranks::MAX_RESIDENT_MODELS);
        let mut out: Vec<usize> = (0..n).filter(|&i| Some(i) != self.current).take(extra).collect();
        out.reverse();
        out
    }

    /// Lets file `i`'s model go: it is closed, and listed in [`ViewState::released`] when it
    /// has a source to be read again from. Whether a file was closed.
    pub fn release_file(&mut self, i: usize) -> bool {
        let (name, source) = match self.files.get(i) {
            Some(f) => (Some(f.name.clone()), f.source.clone()),
            None => (None, None),
        };
        if !self.close_file(i) {
            return false;
        }
        if let (Some(name), Some(source)) = (name, source) {
            self.released.retain(|r| r.source != source);
            self.released.push(ReleasedFile { name, source });
        }
        true
    }

    /// Adds an opened file (opened from `source`) and shows it when `show`.
    pub fn push_file(&mut self, mut f: OpenFile, source: Option<String>, show: bool) {
        if let Some(s) = &source {
            self.released.retain(|r| &r.source != s);
        }
        f.source = source;
        self.files.push(f);
        if show || self.current.is_none() {
            self.current = Some(self.files.len() - 1);
        }
    }

    /// The open file opened from `source`, if one was.
    pub fn file_from(&self, source: &str) -> Option<usize> {
        self.files.iter().position(|f| f.source.as_deref() == Some(source))
    }

    /// Closes file `i`: the one after it is shown (else the one before); what pointed into the
    /// files (pins, the Compare tab's choice, the selected event) is forgotten or moved along.
    /// Whether a file was closed.
    pub fn close_file(&mut self, i: usize) -> bool {
        if i >= self.files.len() {
            return false;
        }
        self.files.remove(i);
        let n = self.files.len();
        self.current = match self.current {
            _ if n == 0 => None,
            Some(c) if c > i => Some(c - 1),
            Some(c) if c == i => Some(i.min(n - 1)),
            other => other,
        };
        self.hover = None;
        self.set_pin(None);
        self.drag = None;
        self.cursor_entry = None;
        self.selected = None;
        self.generation += 1;
        let shift = |j: usize| (j != i).then(|| if j > i { j - 1 } else { j });
        self.analysis.compare_with = self.analysis.compare_with.and_then(shift);
        self.analysis.highlight = None;
        self.history.selected = self.history.selected.and_then(|(f, d, r)| shift(f).map(|f| (f, d, r)));
        true
    }

    /// The file shown, to change it.
    pub(crate) fn file_mut(&mut self) -> Option<&mut OpenFile> {
        self.current.and_then(|i| self.files.get_mut(i))
    }

    /// The plot area of the main canvas.
    pub fn plot_rect(&self) -> PlotRect {
        match self.file() {
            Some(f) => f.plot_rect(self.plot_css),
            None => plot_rect(self.plot_css.0, self.plot_css.1, 0),
        }
    }

    /// The plot area of the minimap.
    pub fn minimap_rect(&self) -> PlotRect {
        minimap_rect(self.minimap_css.0, self.minimap_css.1)
    }

    /// Brings trace entry `entry` of the shown file into the window: centred, at the same
    /// width, when it is outside; nothing when it shows already. Its step is where the x axis
    /// puts it ([`memviz_core::timeline::Layout::step_for_row`]).
    pub fn show_entry(&mut self, entry: u32) {
        let Some(f) = self.file_mut() else { return };
        let step = f64::from(f.plot.layout.step_for_row(entry));
        let pos = f.xmap().pos(step);
        let v = &mut f.viewport;
        if pos < v.x0 || pos > v.x1 {
            let half = v.width() / 2.0;
            v.set_window(pos - half, pos + half);
        }
    }

    /// What is under a point of the plot (CSS px).
    pub fn target_at(&self, x_px: f64, y_px: f64) -> Option<Target> {
        self.file()?.target_at(&self.plot_rect(), x_px, y_px)
    }

    /// The load in progress once the page shows it ([`Loading::shown`]).
    pub fn loading_shown(&self) -> Option<&Loading> {
        self.loading.as_ref().filter(|l| l.shown)
    }

    /// Whether the timeline is drawn from the held copies at `now_ms`.
    pub fn previewing(&self, now_ms: f64) -> bool {
        now_ms < self.preview_until_ms
    }

    /// Applies one input at time `now_ms`; what the page must do as a result.
    pub fn update(&mut self, input: TimelineInput, now_ms: f64) -> Vec<Effect> {
        let mut effects = Vec::new();
        match input {
            TimelineInput::Wheel { surface, x_px, delta_y_px } => {
                self.on_wheel(surface, x_px, delta_y_px, now_ms, &mut effects)
            }
            TimelineInput::PointerDown { surface, x_px, y_px, button } => {
                self.on_pointer_down(surface, x_px, y_px, button)
            }
            TimelineInput::PointerMove { surface, x_px, y_px } => {
                self.on_pointer_move(surface, x_px, y_px, now_ms, &mut effects)
            }
            TimelineInput::PointerUp { surface, x_px, y_px } => self.on_pointer_up(surface, x_px, y_px, &mut effects),
            TimelineInput::PointerLeave { surface } => {
                if surface == Surface::Plot && !matches!(self.drag, Some(Drag::Pan { .. })) {
                    self.hover = None;
                }
            }
            TimelineInput::Key(c) => self.on_command(c, &mut effects),
            TimelineInput::SetXAxis(a) => {
                if self.file_mut().is_some_and(|f| f.set_x_axis(a)) {
                    effects.push(Effect::RefreshMinimap);
                }
            }
            TimelineInput::Unpin => self.set_pin(None),
            TimelineInput::ToggleNativeFrames => self.native_frames_open = !self.native_frames_open,
            TimelineInput::Cursor(entry) => {
                if self.view.is_panel() {
                    // The cursor is on the timeline: it is shown, with the cursor there.
                    self.show_view(View::ActiveMemoryTimeline, &mut effects);
                    self.cursor_entry = None;
                }
                self.toggle_cursor(entry);
            }
            TimelineInput::SelectView(v) => self.show_view(v, &mut effects),
        }
        effects
    }

    /// Shows view `v` ([`Effect::ViewShown`]) unless it is shown.
    fn show_view(&mut self, v: View, effects: &mut Vec<Effect>) {
        if v == self.view {
            return;
        }
        let relayout = v.mode() != self.view.mode();
        self.view = v;
        self.history.on_shown();
        effects.push(Effect::ViewShown { relayout });
    }

    fn hold_preview(&mut self, now_ms: f64, effects: &mut Vec<Effect>) {
        self.preview_until_ms = now_ms + PREVIEW_HOLD_MS;
        effects.push(Effect::HoldPreview { until_ms: self.preview_until_ms });
    }

    fn on_wheel(&mut self, surface: Surface, x_px: f64, delta_y_px: f64, now_ms: f64, effects: &mut Vec<Effect>) {
        let rect = match surface {
            Surface::Plot => self.plot_rect(),
            Surface::Minimap => self.minimap_rect(),
        };
        let factor = keys::wheel_zoom_factor(delta_y_px);
        let Some(f) = self.file_mut() else { return };
        let anchor = match surface {
            Surface::Plot => f.viewport.pos_at(&rect, x_px),
            Surface::Minimap => full_pos_at(&f.viewport, &rect, x_px),
        };
        f.viewport.zoom_x(anchor, factor);
        self.hold_preview(now_ms, effects);
        self.update_hover_from_pointer();
    }

    fn on_pointer_down(&mut self, surface: Surface, x_px: f64, y_px: f64, button: i16) {
        if button != 0 {
            return;
        }
        let mrect = self.minimap_rect();
        let Some(f) = self.file() else { return };
        self.drag = Some(match surface {
            Surface::Plot => Drag::Pan { down_px: (x_px, y_px), x0: f.viewport.x0, x1: f.viewport.x1, moved: false },
            Surface::Minimap => {
                let p = full_pos_at(&f.viewport, &mrect, x_px);
                Drag::Brush { start: p, end: p, down_px: (x_px, y_px) }
            }
        });
    }

    fn on_pointer_move(&mut self, surface: Surface, x_px: f64, y_px: f64, now_ms: f64, effects: &mut Vec<Effect>) {
        self.last_pointer = Some((surface, x_px, y_px));
        let rect = self.plot_rect();
        let mrect = self.minimap_rect();
        match self.drag {
            Some(Drag::Pan { down_px, x0, x1, moved }) => {
                let moved = moved || !keys::is_click(down_px, (x_px, y_px));
                if let Some(f) = self.file_mut() {
                    let per_px = (x1 - x0) / rect.width_px.max(1.0);
                    let shift = -(x_px - down_px.0) * per_px;
                    f.viewport.set_window(x0 + shift, x1 + shift);
                }
                self.drag = Some(Drag::Pan { down_px, x0, x1, moved });
                if moved {
                    self.hold_preview(now_ms, effects);
                    self.hover = None;
                }
            }
            Some(Drag::Brush { start, down_px, .. }) => {
                if let Some(f) = self.file() {
                    let end = full_pos_at(&f.viewport, &mrect, x_px);
                    self.drag = Some(Drag::Brush { start, end, down_px });
                }
            }
            None => {
                if surface == Surface::Plot {
                    // The pointer takes over from the keyboard's selection.
                    self.selected = None;
                    self.hover = self.target_at(x_px, y_px);
                }
            }
        }
    }

    fn on_pointer_up(&mut self, surface: Surface, x_px: f64, y_px: f64, effects: &mut Vec<Effect>) {
        let drag = self.drag.take();
        let mrect = self.minimap_rect();
        match drag {
            Some(Drag::Pan { moved: false, .. }) if surface == Surface::Plot => {
                // A click pins what is under the pointer (or unpins on empty space); a click on an
                // annotation also zooms to its span.
                self.set_pin(self.target_at(x_px, y_px));
                self.hover = self.pinned;
                if let Some(Target::Annotation(i)) = self.pinned {
                    self.zoom_to_annotation(i);
                }
                // With the live set shown, a click moves its moment there.
                if self.analysis.open && self.analysis.tab == panels::Tab::Live {
                    effects.extend(self.apply_analysis(panels::Action::LiveAtPx(x_px)));
                }
            }
            Some(Drag::Brush { start, down_px, .. }) => {
                let Some(f) = self.file_mut() else { return };
                let end = full_pos_at(&f.viewport, &mrect, x_px);
                if keys::is_click(down_px, (x_px, y_px)) {
                    // A click centres the window there.
                    let half = f.viewport.width() / 2.0;
                    f.viewport.set_window(end - half, end + half);
                } else {
                    f.viewport.set_window(start, end);
                    let xm = f.xmap();
                    let (a, b) = (xm.step(f.viewport.x0), xm.step(f.viewport.x1));
                    let peak = f.plot.layout.max_live_between(a, b);
                    f.viewport.fit_y(peak as f64);
                }
            }
            _ => {}
        }
        if surface == Surface::Plot {
            self.update_hover_from_pointer();
        }
    }

    fn on_command(&mut self, c: Command, effects: &mut Vec<Effect>) {
        if c == Command::Help {
            self.help_open = !self.help_open;
            return;
        }
        if c == Command::Unpin {
            // Esc closes the help, else stops a load in progress, else unpins.
            if self.help_open {
                self.help_open = false;
            } else if self.loading.is_some() {
                effects.push(Effect::CancelLoad);
            } else {
                // Leaves the keyboard's selection and unpins.
                if self.selected.take().is_some() {
                    self.hover = None;
                }
                self.set_pin(None);
            }
            return;
        }
        if c.needs_plot_focus() {
            self.on_selection_key(c);
            return;
        }
        if matches!(c, Command::NextMatch | Command::PrevMatch) {
            effects.push(Effect::StepMatch(if c == Command::NextMatch { 1 } else { -1 }));
            return;
        }
        if matches!(c, Command::NextRank | Command::PrevRank) {
            let by = if c == Command::NextRank { 1 } else { -1 };
            if let Some(i) = self.run.as_ref().and_then(|r| r.step_focus(by)) {
                effects.push(Effect::FocusRank(i));
            }
            return;
        }
        let Some(f) = self.file_mut() else { return };
        let v = &mut f.viewport;
        let mid = (v.x0 + v.x1) / 2.0;
        match c {
            Command::ZoomIn => v.zoom_x(mid, keys::KEY_ZOOM_FACTOR),
            Command::ZoomOut => v.zoom_x(mid, 1.0 / keys::KEY_ZOOM_FACTOR),
            Command::PanLeft => v.pan(-v.width() * keys::KEY_PAN_SHARE),
            Command::PanRight => v.pan(v.width() * keys::KEY_PAN_SHARE),
            Command::Reset => v.reset(),
            _ => {}
        }
        self.update_hover_from_pointer();
    }

    /// Shows annotation `i`'s span (with a margin of a twentieth of it each side), the y axis
    /// fitted to what is live in it.
    pub fn zoom_to_annotation(&mut self, i: usize) {
        let Some(f) = self.file_mut() else { return };
        let Some(a) = f.plot.annotations.get(i) else { return };
        let (p0, p1) = match (f.x_axis, &f.plot.time) {
            (XAxis::Time, Some(t)) => ((a.start_us - t.t0_us) as f64, (a.end_us - t.t0_us) as f64),
            _ => (a.start_step, a.end_step),
        };
        let margin = ((p1 - p0) / 20.0).max(0.5);
        f.viewport.set_window(p0 - margin, p1 + margin);
        let xm = f.xmap();
        let peak = f.plot.layout.max_live_between(xm.step(f.viewport.x0), xm.step(f.viewport.x1));
        f.viewport.fit_y(peak as f64);
    }

    /// Pins element `e` of the shown layout and, when its band is outside the window, moves the
    /// window (same width) to centre on it.
    pub fn focus_element(&mut self, e: ElementIndex) {
        let Some(f) = self.file_mut() else { return };
        let Some(band) = f.plot.layout.element(e).and_then(|el| el.band) else { return };
        let (a, z) = f.plot.layout.band_step_range(band);
        let xm = f.xmap();
        let (p0, p1) = (xm.pos(f64::from(a)), xm.pos(f64::from(z)));
        let v = &mut f.viewport;
        if p1 < v.x0 || p0 > v.x1 {
            let half = v.width() / 2.0;
            let centre = ((p0 + p1) / 2.0).clamp(half, (v.full_x1 - half).max(half));
            v.set_window(centre - half, centre + half);
        }
        self.set_pin(Some(Target::Element(e)));
        self.update_hover_from_pointer();
    }

    /// What the pointer is over after the window moved under it.
    pub fn update_hover_from_pointer(&mut self) {
        if self.selected.is_some() {
            self.show_selection();
            return;
        }
        if let Some((Surface::Plot, x, y)) = self.last_pointer {
            if self.drag.is_none() {
                self.hover = self.target_at(x, y);
            }
        }
    }
}

/// The position (over the whole x domain) at an x pixel of the minimap.
pub fn full_pos_at(v: &Viewport, mrect: &PlotRect, x_px: f64) -> f64 {
    ((x_px - mrect.left_px) / mrect.width_px.max(1.0)).clamp(0.0, 1.0) * v.full_x1
}

pub mod apply;
mod cat_window;
pub mod compare_view;
pub use cat_window::{plot_fraction, CHART_LEFT_PX, CHART_RIGHT_PX};
pub mod flame;
mod focus;
mod loading;
pub use loading::Added;
pub mod matches;
pub mod panels;
pub mod pin;
pub mod place;
mod read;
mod relayout;
mod select;
mod shell;
pub use apply::{PageInput, PanelInput};
mod windows;

pub use select::Selection;

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
