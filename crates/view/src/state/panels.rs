//! The user state of the page's panels and what their actions do: the analysis panel beside the
//! timeline ([`AnalysisState`]: tab, moment of the live set, highlight, Compare's other file,
//! the category colouring and a profiler timeline, the grouping of its tables), the Allocator State History
//! ([`HistoryState`]: selected event, scroll, pointer) and the private-pools view's hovered
//! envelope. Actions change this state and return [`Effect`]s for what needs the page (a new
//! layout, a highlight computed from the analyses, a download, a new window of the timeline).

use memviz_core::analysis::categories::CategoryTimeline;
use memviz_core::analysis::grouping::{self, GroupBy};
use memviz_core::analysis::Moment;
use memviz_core::search::{parse_size_bytes, Query};

use super::{Effect, OpenFile};
use crate::history::scroll_to_show;
use crate::viewport::PlotRect;

/// Points of a profiler memory timeline kept for drawing.
pub const PROFILE_POINTS: usize = 1500;

/// Zoom of the category chart per CSS px of wheel movement (as `exp(px * this)`).
const WHEEL_ZOOM_PER_PX: f64 = 0.002;

/// Which part of the analysis panel is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Tab {
    /// Findings and out-of-memory explanations.
    #[default]
    Insights,
    /// The live set at a moment, with exports.
    Live,
    /// This file against another open file.
    Compare,
    /// Memory by category (inferred).
    Categories,
}

/// What can be downloaded from the panel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportKind {
    /// The live set, one allocation a row.
    Csv,
    /// The live set as JSON.
    Json,
    /// The live set as a speedscope profile (bytes by stack).
    Speedscope,
    /// The timeline canvas as shown.
    Png,
}

impl ExportKind {
    /// The kind of a `data-act` value.
    pub fn from_value(s: &str) -> Option<ExportKind> {
        Some(match s {
            "csv" => ExportKind::Csv,
            "json" => ExportKind::Json,
            "speedscope" => ExportKind::Speedscope,
            "png" => ExportKind::Png,
            _ => return None,
        })
    }
}

/// What the user asked of the analysis panel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Show or hide the panel.
    Toggle,
    /// Show a tab.
    Tab(Tab),
    /// Highlight the elements of a finding (index into the insights' findings).
    Finding(usize),
    /// Highlight the holders of an out-of-memory report (index into the insights' OOMs).
    OomHolders(usize),
    /// Highlight the live allocations of a site (index into the live set's sites).
    Site(usize),
    /// Highlight the live allocations under a tree node.
    Node(u32),
    /// Highlight the live allocations of a group (index into the live set's groups, largest
    /// first, under [`AnalysisState::group_by`]).
    Group(usize),
    /// Highlight the allocations of a growing group (index into the growth by the state's
    /// grouping, fastest first).
    Growth(usize),
    /// Highlight the allocations of an inferred category live at the peak (index into
    /// [`memviz_core::analysis::categories::Category::ALL`]).
    Category(usize),
    /// Group the tables by a choice of [`grouping::choices`] of the file shown (index).
    GroupBy(u16),
    /// Colour the timeline by the grouping (with a legend), or stop.
    GroupColour,
    /// Chart the grouping's bytes over time in the Categories tab.
    GroupTimeline,
    /// Forget the highlight.
    ClearHighlight,
    /// Live set at the peak.
    LiveAtPeak,
    /// Live set at the centre of the visible window.
    LiveAtCentre,
    /// Live set at a plot x (CSS px), from a Shift+click on the timeline.
    LiveAtPx(f64),
    /// Download something.
    Export(ExportKind),
    /// Compare with another open file (index into the files).
    CompareWith(usize),
    /// Compare by the grouped tables' grouping rather than by stack, or back.
    CompareByGroup,
    /// Highlight the live allocations of A in a group of the Compare tab's differences.
    CompareGroup {
        /// The matched point (index into the comparison's points).
        point: usize,
        /// The "More in B" table (else "More in A").
        more_in_b: bool,
        /// The row of that table.
        i: usize,
    },
    /// Mark a row's allocations (of the table by source line) in both timelines of the Compare
    /// view, or stop.
    CompareRow {
        /// The matched point (index into the comparison's points).
        point: usize,
        /// The "More in B" table (else "More in A").
        more_in_b: bool,
        /// The row of that table.
        i: usize,
    },
    /// Colour the timeline by inferred category, or stop.
    CategoryColour,
    /// Close the profiler memory timeline.
    CategoryClose,
    /// Put the profiler's chart aside (kept, so its categories stay joined with the snapshot)
    /// and show the snapshot's timeline coloured by category.
    CategoryShowTimeline,
    /// Show the profiler's chart put aside by [`Action::CategoryShowTimeline`].
    CategoryShowChart,
    /// Pointer over the category chart at x (CSS px), or gone.
    CategoryHover(Option<f64>),
    /// The wheel over the category chart: zoom at `x_px` of its `width_px` canvas (up: in).
    CategoryWheel {
        /// Pointer x, CSS px from the canvas' left edge.
        x_px: f64,
        /// The canvas' width, CSS px.
        width_px: f64,
        /// The wheel's movement, CSS px.
        delta_y_px: f64,
    },
    /// A drag on the category chart moved by `dx_px` of its `width_px` canvas.
    CategoryDrag {
        /// Horizontal movement, CSS px.
        dx_px: f64,
        /// The canvas' width, CSS px.
        width_px: f64,
    },
    /// A key on the focused category chart: `+`/`=` and `-` zoom, `←`/`→` pan, `0` shows all.
    CategoryKey(char),
    /// Show the whole category timeline again (a double click).
    CategoryWhole,
    /// A click or drag on the category chart's minimap at `x_px` of its `width_px` canvas: the
    /// window, its width kept, centred there.
    CategoryMinimap {
        /// Pointer x, CSS px from the minimap's left edge.
        x_px: f64,
        /// The minimap's width, CSS px.
        width_px: f64,
    },
    /// Zoom the timeline to trace rows `[start_row, end_row)` (an iteration's rows).
    ZoomRows {
        /// First row.
        start_row: u32,
        /// One past the last row.
        end_row: u32,
    },
    /// Put the cursor on a trace entry cited in the panel (and bring it into view).
    Entry(u32),
}

/// Elements outlined on the timeline, and what named them.
#[derive(Clone, Debug, PartialEq)]
pub struct Highlight {
    /// `data-key` of the row that named them (`finding:2`, `site:0`).
    pub key: String,
    /// The timeline's elements.
    pub elements: Vec<memviz_core::timeline::ElementIndex>,
    /// The group a group row named, whose bytes the pointer then reads at any moment and which
    /// another file shown is highlighted by.
    pub group: Option<GroupRef>,
}

/// A group of the state's grouping ([`AnalysisState::group_by`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRef {
    /// Its id in the shown file's [`memviz_core::analysis::grouping::Grouping`].
    pub id: u32,
    /// Its text, by which the same group is found in another file.
    pub label: String,
}

/// A profiler memory timeline shown over the plot.
#[derive(Clone, Debug)]
pub struct Profile {
    /// File name.
    pub name: String,
    /// Points to draw.
    pub timeline: CategoryTimeline,
    /// (index in the full timeline, total bytes) of the peak.
    pub peak: Option<(usize, u64)>,
    /// Time of the peak, µs.
    pub peak_time_us: Option<i64>,
    /// Points in the file.
    pub points: usize,
    /// The whole timeline, the points of the window are taken from.
    pub full: CategoryTimeline,
    /// The window shown (x as [`Profile::x_of`]); `None`: the whole timeline.
    pub window: Option<(f64, f64)>,
    /// x of each point of `timeline` ([`Profile::x_of`]).
    pub shown_x: Vec<f64>,
}

/// The Categories tab's state.
#[derive(Clone, Debug, Default)]
pub struct CategoriesState {
    /// Whether the timeline's allocations are coloured by their inferred category.
    pub colour_inferred: bool,
    /// The profiler timeline shown over the plot.
    pub profile: Option<Profile>,
    /// Changes with each profile opened, closed, put aside or shown again.
    pub profile_seq: usize,
    /// Whether the profile's chart is put aside (the profile stays, joined with the snapshot).
    pub chart_hidden: bool,
    /// Changes with each zoom or pan of its chart.
    pub window_seq: usize,
    /// Pointer x over the profile chart, CSS px.
    pub hover_x_px: Option<f64>,
}

impl CategoriesState {
    /// Shows a profiler memory timeline (kept at [`PROFILE_POINTS`] points).
    pub fn set_profile(&mut self, name: String, full: CategoryTimeline) {
        self.profile = Some(Profile::new(name, full));
        self.profile_seq += 1;
        self.hover_x_px = None;
        self.chart_hidden = false;
    }

    /// Closes the profiler timeline.
    pub fn close_profile(&mut self) {
        self.profile = None;
        self.profile_seq += 1;
    }

    /// Puts the chart aside (the profile stays, joined with the snapshot) and colours the
    /// snapshot's timeline by category.
    pub fn put_chart_aside(&mut self) {
        self.chart_hidden = true;
        self.profile_seq += 1;
        self.colour_inferred = true;
    }

    /// Shows the chart put aside.
    pub fn show_chart(&mut self) {
        self.chart_hidden = false;
        self.profile_seq += 1;
    }
}

/// The analysis panel's state.
#[derive(Clone, Debug)]
pub struct AnalysisState {
    /// Whether it is shown.
    pub open: bool,
    /// The tab shown.
    pub tab: Tab,
    /// Moment of the live set (the peak when none was chosen).
    pub moment: Option<Moment>,
    /// What is outlined on the timeline.
    pub highlight: Option<Highlight>,
    /// Changes whenever something the panel draws on the timeline changes.
    pub canvas_seq: usize,
    /// The other file of the Compare tab, as the user chose it.
    pub compare_with: Option<usize>,
    /// Categories: the profiler timeline and the inferred colouring.
    pub categories: CategoriesState,
    /// What the grouped tables group by (the user's line unless chosen).
    pub group_by: GroupBy,
    /// Whether the timeline's allocations are coloured by their group.
    pub colour_by_group: bool,
    /// Whether the Compare tab compares by [`AnalysisState::group_by`] (else by stack).
    pub compare_by_group: bool,
    /// Path fragments of files that are not the user's code, beside torch and installed packages
    /// (for the user's line).
    library: Vec<String>,
}

impl Default for AnalysisState {
    fn default() -> AnalysisState {
        AnalysisState {
            open: false,
            tab: Tab::default(),
            moment: None,
            highlight: None,
            canvas_seq: 0,
            compare_with: None,
            categories: CategoriesState::default(),
            group_by: GroupBy::UserLine,
            colour_by_group: false,
            compare_by_group: false,
            library: Vec::new(),
        }
    }
}

impl AnalysisState {
    /// Applies an action; `file` is the file shown (a row that names trace entries zooms its
    /// window to them) and `rect` the plot area (for the moments that come from the timeline).
    pub fn apply(&mut self, action: Action, file: Option<&mut OpenFile>, rect: &PlotRect) -> Vec<Effect> {
        let mut effects = Vec::new();
        match action {
            Action::Toggle => self.open = !self.open,
            Action::Tab(t) => self.tab = t,
            Action::ClearHighlight => self.highlight = None,
            Action::LiveAtPeak => self.moment = Some(Moment::Peak),
            Action::LiveAtCentre | Action::LiveAtPx(_) => {
                let Some(f) = file else { return effects };
                let v = &f.viewport;
                let pos = match action {
                    Action::LiveAtPx(x_px) => v.pos_at(rect, x_px),
                    _ => (v.x0 + v.x1) / 2.0,
                };
                let step = f.xmap().step(pos);
                self.moment = Some(Moment::at_step(&f.plot.layout, step));
                self.open = true;
                self.tab = Tab::Live;
            }
            Action::Finding(_)
            | Action::OomHolders(_)
            | Action::Site(_)
            | Action::Node(_)
            | Action::Group(_)
            | Action::Growth(_)
            | Action::Category(_)
            | Action::CompareGroup { .. } => {
                effects.push(Effect::Highlight(action));
            }
            Action::GroupBy(i) => {
                let Some(f) = file else { return effects };
                let Some(by) = grouping::choices(&f.snap, f.plot.device_pos).into_iter().nth(usize::from(i)) else {
                    return effects;
                };
                // Rows of the old grouping are gone (the Live set's, Growth's, the grouped comparison's).
                let grouped = |k: &str| ["group:", "cmp:", "growth:"].iter().any(|p| k.starts_with(p));
                if self.highlight.as_ref().is_some_and(|h| grouped(&h.key)) {
                    self.highlight = None;
                }
                self.group_by = by;
            }
            Action::Export(kind) => effects.push(Effect::Export(kind)),
            Action::GroupTimeline => effects.push(Effect::GroupTimeline),
            Action::Entry(entry) => effects.push(Effect::Cursor(entry)),
            Action::CompareWith(i) => self.compare_with = Some(i),
            Action::CompareByGroup => {
                if self.highlight.as_ref().is_some_and(|h| h.key.starts_with("cmp:")) {
                    self.highlight = None;
                }
                self.compare_by_group = !self.compare_by_group;
            }
            // The state marks the row in the Compare view (`ViewState::pick_compare_row`).
            Action::CompareRow { .. } => {}
            Action::CategoryColour => {
                self.categories.colour_inferred = !self.categories.colour_inferred;
                self.colour_by_group &= !self.categories.colour_inferred;
            }
            Action::GroupColour => {
                self.colour_by_group = !self.colour_by_group;
                self.categories.colour_inferred &= !self.colour_by_group;
            }
            Action::CategoryClose => self.categories.close_profile(),
            Action::CategoryShowTimeline => {
                self.categories.put_chart_aside();
                self.colour_by_group = false;
            }
            Action::CategoryShowChart => self.categories.show_chart(),
            Action::CategoryHover(x_px) => {
                self.categories.hover_x_px = x_px;
                return effects;
            }
            Action::CategoryWheel { x_px, width_px, delta_y_px } => {
                self.categories.zoom_at(x_px, width_px, (delta_y_px * WHEEL_ZOOM_PER_PX).exp());
                return effects;
            }
            Action::CategoryDrag { dx_px, width_px } => {
                self.categories.pan_px(dx_px, width_px);
                return effects;
            }
            Action::CategoryKey(k) => {
                self.categories.key(k);
                return effects;
            }
            Action::CategoryWhole => {
                self.categories.reset_window();
                return effects;
            }
            Action::CategoryMinimap { x_px, width_px } => {
                self.categories.centre_at(x_px, width_px);
                return effects;
            }
            Action::ZoomRows { start_row, end_row } => {
                if let Some(f) = file {
                    if let Some(w) = window_of_rows(f, start_row, end_row) {
                        f.viewport.set_window(w.x0, w.x1);
                        f.viewport.fit_y(w.y_max_bytes);
                    }
                }
                return effects;
            }
        }
        self.canvas_seq += 1;
        effects
    }

    /// The path fragments of files that are not the user's code (beside torch and installed
    /// packages).
    pub fn library(&self) -> &[String] {
        &self.library
    }

    /// The rule that tells the user's code from libraries' ([`AnalysisState::library`]).
    pub fn library_rule(&self) -> grouping::LibraryRule {
        grouping::LibraryRule::with_extra(&self.library)
    }

    /// Sets the library path fragments from what was typed (separated by commas or white
    /// space); the rows of the old grouping go when they change. Whether they changed.
    pub fn set_library(&mut self, typed: &str) -> bool {
        let mut v: Vec<String> = Vec::new();
        for part in typed.split(|c: char| c == ',' || c.is_whitespace()).filter(|p| !p.is_empty()) {
            if !v.iter().any(|x| x == part) {
                v.push(part.to_string());
            }
        }
        if v == self.library {
            return false;
        }
        self.library = v;
        if self.highlight.as_ref().is_some_and(|h| h.group.is_some()) {
            self.highlight = None;
        }
        self.canvas_seq += 1;
        true
    }

    /// Sets the highlight (none: clears it).
    pub fn set_highlight(&mut self, h: Option<Highlight>) {
        self.highlight = h;
        self.canvas_seq += 1;
    }

    /// Sets the highlight a row named; a second click on the same row clears it.
    pub fn toggle_highlight(&mut self, h: Option<Highlight>) {
        self.highlight = match h {
            Some(h) if self.highlight.as_ref().map(|o| &o.key) == Some(&h.key) => None,
            other => other,
        };
        self.canvas_seq += 1;
    }

    /// The file compared with file `current` of `files` open: the one chosen, else the first
    /// other file.
    pub fn compare_other(&self, current: Option<usize>, files: usize) -> Option<usize> {
        let cur = current?;
        self.compare_with.filter(|&o| o != cur && o < files).or_else(|| (0..files).find(|&i| i != cur))
    }
}

/// The text of the search boxes, as typed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchBoxes {
    /// Address label or part of one.
    pub addr: String,
    /// Part of a frame's text.
    pub frame: String,
    /// Smallest size (`4096`, `512KiB`, `1.5 GiB`).
    pub min: String,
    /// Largest size.
    pub max: String,
}

impl SearchBoxes {
    /// The query the boxes ask (a size that does not parse asks nothing: see [`Self::problem`]).
    pub fn query(&self) -> Query {
        Query::new(&self.addr, &self.frame, &self.min, &self.max)
    }

    /// What is wrong with the boxes, in words, when a size does not parse.
    pub fn problem(&self) -> Option<String> {
        let bad = |s: &str| !s.trim().is_empty() && parse_size_bytes(s).is_none();
        let which = match (bad(&self.min), bad(&self.max)) {
            (true, _) => &self.min,
            (false, true) => &self.max,
            (false, false) => return None,
        };
        Some(format!("\u{201c}{}\u{201d} is not a size: try 4096, 512KiB or 1.5GiB", which.trim()))
    }

    /// Whether every box is empty.
    pub fn is_empty(&self) -> bool {
        [&self.addr, &self.frame, &self.min, &self.max].iter().all(|s| s.trim().is_empty())
    }
}

/// A window of a file's x axis and the highest live bytes in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowsWindow {
    /// Left edge, on the file's x axis.
    pub x0: f64,
    /// Right edge.
    pub x1: f64,
    /// Highest live bytes in the window (the y axis is fitted to them).
    pub y_max_bytes: f64,
}

/// The window that shows trace rows `[start_row, end_row)` of `f` on its x axis, with the y axis
/// fitted to their highest live bytes; `None` for an empty range.
pub fn window_of_rows(f: &OpenFile, start_row: u32, end_row: u32) -> Option<RowsWindow> {
    if end_row <= start_row {
        return None;
    }
    let layout = &f.plot.layout;
    let s0 = f64::from(layout.step_for_row(start_row));
    // The first event at or after the range's end: where the next range begins.
    let s1 = f64::from(layout.step_for_row(end_row)).max(s0 + 1.0);
    let xm = f.xmap();
    let peak_bytes = layout.max_live_between(s0, s1);
    Some(RowsWindow { x0: xm.pos(s0), x1: xm.pos(s1), y_max_bytes: peak_bytes as f64 })
}

/// A user action in the Allocator State History.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HistoryInput {
    /// Select an event row.
    Select(usize),
    /// Move the selection by this many rows (clamped).
    Move(i64),
    /// Select the first (false) or last (true) row.
    Jump(bool),
    /// The event list scrolled (CSS px).
    Scroll(f64),
    /// The pointer is over an event row (or left the list).
    HoverRow(Option<usize>),
    /// The pointer moved over the segment map (CSS px) or left it.
    MapPointer(Option<(f64, f64)>),
    /// The "hide allocations freed within the trace" checkbox.
    HideFreed(bool),
}

/// The event list as it is now: which (file, device position) it lists, its rows, a row's
/// height and the list's visible height (CSS px).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HistoryRows {
    /// (file index, device position).
    pub key: (usize, usize),
    /// Rows of the list.
    pub rows: usize,
    /// Height of a row, CSS px.
    pub row_px: f64,
    /// Visible height of the list, CSS px.
    pub list_px: f64,
    /// Tallest scrollable height the list is given, CSS px.
    pub max_list_px: f64,
}

/// The Allocator State History's state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HistoryState {
    /// Selected event: (file, device position, row).
    pub selected: Option<(usize, usize, usize)>,
    /// Scroll position of the event list, CSS px.
    pub scroll_px: f64,
    /// Event row under the pointer.
    pub hover_row: Option<usize>,
    /// Pointer over the segment map, CSS px.
    pub map_pointer: Option<(f64, f64)>,
    /// Timelines leave out allocations made and freed within the trace.
    pub hide_freed: bool,
}

impl HistoryState {
    /// The selected row of the list `rows` describes (its last row when none was chosen there).
    pub fn selected_row(&self, key: (usize, usize), rows: usize) -> Option<usize> {
        if rows == 0 {
            return None;
        }
        Some(match self.selected {
            Some((fi, fd, r)) if (fi, fd) == key => r.min(rows - 1),
            _ => rows - 1,
        })
    }

    /// Applies an input; `rows` is the list shown (None while there is none).
    pub fn apply(&mut self, input: HistoryInput, rows: Option<HistoryRows>) -> Vec<Effect> {
        match input {
            HistoryInput::HideFreed(on) => {
                if on != self.hide_freed {
                    self.hide_freed = on;
                    return vec![Effect::Relayout];
                }
                return Vec::new();
            }
            HistoryInput::Scroll(px) => self.scroll_px = px,
            HistoryInput::HoverRow(r) => self.hover_row = r,
            HistoryInput::MapPointer(p) => self.map_pointer = p,
            HistoryInput::Select(_) | HistoryInput::Move(_) | HistoryInput::Jump(_) => {
                let Some(l) = rows else { return Vec::new() };
                let (i, d) = l.key;
                let n = l.rows;
                let cur = self.selected_row(l.key, n);
                let mut select = |r: usize| {
                    let r = r.min(n.saturating_sub(1));
                    self.selected = Some((i, d, r));
                    self.scroll_px = scroll_to_show(n, l.row_px, l.list_px, self.scroll_px, l.max_list_px, r);
                };
                match (input, cur) {
                    (HistoryInput::Select(r), _) if r < n => self.selected = Some((i, d, r)),
                    (HistoryInput::Move(by), Some(c)) => select((c as i64).saturating_add(by).max(0) as usize),
                    (HistoryInput::Jump(end), _) if n > 0 => select(if end { n - 1 } else { 0 }),
                    _ => {}
                }
            }
        }
        Vec::new()
    }

    /// Forgets what the pointer was over (when the view is shown again).
    pub fn on_shown(&mut self) {
        self.hover_row = None;
        self.map_pointer = None;
    }
}

#[cfg(test)]
#[path = "panels_tests.rs"]
mod tests;
