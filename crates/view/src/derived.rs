//! What the page computes from its state and the open files, kept until what it depends on
//! changes: the analyses of the shown device, the comparison of two files, inferred categories,
//! private-pool envelopes, the trace's coverage, search matches, the Allocator State History,
//! the flame view's graph and the minimap's columns. [`Derived::refresh`] brings it up to date
//! after each input, outside any frame, so
//! painting only reads it. No DOM here.

use std::collections::HashSet;
use std::rc::Rc;

use crate::history::{HistoryData, MapLayout};
use crate::state::compare_view::{Picked, PickedRow};
use crate::state::panels::{Action, GroupRef, Highlight, Tab};
use crate::state::ViewState;
use crate::view::View;
use memviz_core::analysis::categories::{infer_categories, Category, CategoryTimeline, SnapshotCategories};
use memviz_core::analysis::categories_join;
use memviz_core::analysis::compare::{self, CompareOptions, Comparison, KeyMode};
use memviz_core::analysis::flame::{self as core_flame, flame_of, FlameFrames, FlameGraph, FlameSource};
use memviz_core::analysis::fragmentation::{fragmentation_with_track, FragSeries, FragTrack};
use memviz_core::analysis::group_timeline::{group_timeline, GroupCurve};
use memviz_core::analysis::grouping::{GroupBy, GroupTotal, Grouping};
use memviz_core::analysis::growth::{self, Insights, NamedGrowth};
use memviz_core::analysis::live::{self as core_live, LiveSet};
use memviz_core::analysis::{frame_key, is_unrecorded, visible_frames, FrameKey, Moment, Replay};
use memviz_core::coverage::{coverage, coverage_from_layout, Coverage};
use memviz_core::plot::{device_views, DeviceViews};
use memviz_core::search::StackTexts;
use memviz_core::snapshot::Snapshot;
use memviz_core::state::AllocatorState;
use memviz_core::timeline::{ElementIndex, Mode, Options};
use memviz_core::timeline_pools::{pools, Pools};

/// Groups the timeline colours by their own colour at most (the rest share "other").
pub const COLOURED_GROUPS: usize = 12;
/// Points of the fragmentation chart at most.
pub const FRAG_POINTS: usize = 600;
/// Points of the inferred category timeline.
pub const CATEGORY_POINTS: usize = 1500;
/// Curve points of a comparison.
pub const COMPARE_POINTS: usize = 400;
/// Differences listed per direction and point of a comparison.
pub const COMPARE_TOP_DIFFS: usize = 12;

/// What the analyses found for one device of one file.
pub struct Analysis {
    /// (file index, device position).
    pub key: (usize, usize),
    /// Lifetimes and live bytes.
    pub replay: Replay,
    /// Findings.
    pub insights: Insights,
    /// Reserved, allocated and the largest free block over time, sampled.
    pub fragmentation: FragSeries,
    /// The same after every entry, for drawing any window of the timeline.
    pub frag_track: FragTrack,
    /// The live set at `live_moment`.
    pub live: Option<LiveSet>,
    /// The moment `live` is for.
    pub live_moment: Option<Moment>,
    /// Every allocation's group under the state's grouping.
    pub grouping: Option<Grouping>,
    /// The colour of each group (index into the page's palette; [`COLOURED_GROUPS`]: other).
    pub group_colour: Vec<u8>,
    /// The coloured groups, most bytes allocated first, and "other".
    pub legend: Vec<(String, u64)>,
    /// The live set's groups, largest first.
    pub live_groups: Vec<GroupTotal>,
    /// The moment and grouping `live_groups` are for.
    live_groups_key: Option<(Moment, GroupBy)>,
    /// The highlighted group's bytes after every entry (while a group row is highlighted).
    pub group_curve: Option<GroupCurve>,
    /// Growth per group of the state's grouping, fastest first (when memory grows).
    pub growth_groups: Vec<NamedGrowth>,
    /// The grouping `growth_groups` are by.
    growth_groups_by: Option<GroupBy>,
    /// The library path fragments `grouping` was built with.
    grouping_library: Vec<String>,
}

/// The flame view's graph.
pub struct Flame {
    /// ((file index, device position), what it weighs).
    pub key: ((usize, usize), FlameSource),
    /// The grouping of its first level with its library path fragments (none: frames from the
    /// outermost).
    pub by: Option<GroupingKey>,
    /// What it weighs.
    pub source: FlameSource,
    /// The graph, Python frames first.
    pub graph: FlameGraph,
}

/// (A file, A device position, B file, B device position).
pub type PairKey = (usize, usize, usize, usize);

/// A grouping with the library path fragments its user's line was read with.
pub type GroupingKey = (GroupBy, Vec<String>);

/// Search matches of the shown layout.
pub struct Matches {
    /// (file index, layout generation, query) they are for.
    key: (usize, usize, memviz_core::search::Query),
    /// Matching elements.
    pub elements: Rc<Vec<ElementIndex>>,
    /// How many of them are drawn one by one (the others are in the summarized band).
    pub drawn: usize,
    /// Their bytes.
    pub total_bytes: u64,
}

/// The state after one event of the history, and its segment map.
pub struct AtEvent {
    /// (file, device position, trace entry).
    pub key: (usize, usize, usize),
    /// The allocator's state then.
    pub state: AllocatorState,
    /// Its segment map.
    pub map: MapLayout,
}

/// Where a compared pair parts: A's marked elements, then B's.
pub type Parting = Rc<[Vec<ElementIndex>; 2]>;

/// Everything derived.
#[derive(Default)]
pub struct Derived {
    /// Highest total per device-pixel column of the minimap, over the whole x domain.
    pub minimap_cols: Vec<f64>,
    /// The analyses of the shown (file, device), while the panel needs them.
    pub analysis: Option<Analysis>,
    /// The Compare tab's comparison: the pair, the grouping it compares by with its library path
    /// fragments (none: by stack).
    pub comparison: Option<(PairKey, Option<GroupingKey>, Comparison)>,
    /// The Compare view's comparison of its pair, by stack ([`Derived::view_comparison_of`]).
    pub view_comparison: Option<(PairKey, Comparison)>,
    /// Where the pair parts on each timeline
    /// ([`crate::state::compare_view::parting_elements`]), for the layouts' options.
    view_parting: Option<(PairKey, [Options; 2], Parting)>,
    /// The Compare tab's picked row's allocations on both timelines
    /// ([`crate::state::compare_view::picked_elements`]).
    view_picked: Option<(PairKey, PickedRow, [Options; 2], Rc<Picked>)>,
    /// Categories of a (file, device): the profiler timeline's where it was opened beside the
    /// snapshot and overlaps it (with the profile's sequence number), else inferred.
    pub categories: Option<(CategoriesKey, SnapshotCategories)>,
    /// Envelopes: (file index, layout generation, pools).
    pub pools: Option<(usize, usize, Rc<Pools>)>,
    /// Frame text per stack: (file index, file name, texts).
    texts: Option<(usize, String, Rc<StackTexts>)>,
    /// Search matches.
    pub matches: Option<Matches>,
    /// The event list of a (file, device).
    pub history: Option<((usize, usize), HistoryData)>,
    /// The state after the selected event.
    pub at_event: Option<AtEvent>,
    /// What the views of the shown (file, device) have to show.
    pub device_views: Option<((usize, usize), DeviceViews)>,
    /// The flame view's graph.
    pub flame: Option<Flame>,
    /// How much of the run the shown (file, device)'s trace covers (the banner above the plot).
    pub coverage: Option<((usize, usize), Coverage)>,
}

/// The (file, device position) shown.
pub fn current_key(s: &ViewState) -> Option<(usize, usize)> {
    let i = s.current?;
    Some((i, s.files.get(i)?.plot.device_pos))
}

/// The replay of device `pos` of `snap`, whose layout is `layout` (`PlotData::device_pos` is
/// `pos`): read off the layout where it pairs the trace alike (no map of open addresses), else
/// made from the trace.
fn replay_of(snap: &Snapshot, pos: usize, layout: &memviz_core::timeline::Layout) -> Replay {
    Replay::from_layout(snap, pos, layout).unwrap_or_else(|| Replay::build(snap, pos))
}

/// The pair the Compare tab shows.
pub fn pair_key(s: &ViewState) -> Option<PairKey> {
    let a = s.current?;
    let b = s.analysis.compare_other(s.current, s.files.len())?;
    Some((a, s.files.get(a)?.plot.device_pos, b, s.files.get(b)?.plot.device_pos))
}

impl Derived {
    /// Computes what the state needs and is missing (nothing that is up to date).
    pub fn refresh(&mut self, s: &ViewState) {
        self.ensure_device_views(s);
        let panel_open = s.analysis.open && s.file().is_some();
        if panel_open || s.analysis.highlight.is_some() || s.analysis.colour_by_group {
            self.ensure_analysis(s);
        }
        if panel_open && s.analysis.tab == Tab::Compare {
            self.ensure_comparison(s);
        }
        if s.compare_shown() {
            self.ensure_view_comparison(s);
            self.ensure_view_parting(s);
            self.ensure_view_picked(s);
        }
        let joined = s.analysis.categories.profile.as_ref().is_some_and(|p| p.is_profilers()) && s.file().is_some();
        if (panel_open && s.analysis.tab == Tab::Categories)
            || (s.analysis.categories.colour_inferred && s.view.mode() == Mode::Allocations)
            || joined
        {
            self.ensure_categories(s);
        }
        if s.view == View::AllocatedMemoryPools {
            self.ensure_pools(s);
        }
        if s.view == View::FlameGraph {
            self.ensure_flame(s);
        }
        if !s.search.is_empty() && !s.view.is_panel() {
            self.ensure_matches(s);
        }
        if s.view == View::AllocatorStateHistory {
            self.ensure_history(s);
            self.ensure_at_event(s);
        }
    }

    /// What the views of the shown device have to show (for the view menu and empty views).
    fn ensure_device_views(&mut self, s: &ViewState) {
        let Some(key) = current_key(s) else { return };
        if self.device_views.as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        let Some(f) = s.file() else { return };
        self.device_views = Some((key, device_views(&f.snap, key.1)));
        // The key's device is the plot's: its layout of allocations has paired the trace already.
        let c = coverage_from_layout(&f.snap, key.1, &f.plot.layout).unwrap_or_else(|| coverage(&f.snap, key.1));
        self.coverage = Some((key, c));
    }

    /// How much of the run the shown device's trace covers, when it is known.
    pub fn coverage_of(&self, s: &ViewState) -> Option<&Coverage> {
        self.coverage.as_ref().filter(|(k, _)| Some(*k) == current_key(s)).map(|(_, c)| c)
    }

    /// What the views of the shown device have to show, when it is known.
    pub fn views_of(&self, s: &ViewState) -> Option<&DeviceViews> {
        self.device_views.as_ref().filter(|(k, _)| Some(*k) == current_key(s)).map(|(_, v)| v)
    }

    /// The analyses of the shown device, with the live set at the chosen moment.
    pub fn ensure_analysis(&mut self, s: &ViewState) -> Option<&Analysis> {
        let key = current_key(s)?;
        let f = s.file()?;
        let moment = s.analysis.moment.unwrap_or(Moment::Peak);
        if self.analysis.as_ref().is_none_or(|a| a.key != key) {
            let replay = replay_of(&f.snap, key.1, &f.plot.layout);
            let insights = growth::insights_with(&f.snap, &replay);
            let (fragmentation, frag_track) = fragmentation_with_track(&f.snap, key.1, FRAG_POINTS);
            self.analysis = Some(Analysis {
                key,
                replay,
                insights,
                fragmentation,
                frag_track,
                live: None,
                live_moment: None,
                grouping: None,
                group_colour: Vec::new(),
                legend: Vec::new(),
                live_groups: Vec::new(),
                live_groups_key: None,
                group_curve: None,
                growth_groups: Vec::new(),
                growth_groups_by: None,
                grouping_library: Vec::new(),
            });
        }
        let a = self.analysis.as_mut()?;
        if a.live_moment != Some(moment) {
            a.live = core_live::live_set(&f.snap, &a.replay, moment).ok();
            a.live_moment = Some(moment);
        }
        let by = &s.analysis.group_by;
        let library = s.analysis.library();
        if a.grouping.as_ref().is_none_or(|g| &g.by != by) || a.grouping_library != library {
            let g = Grouping::build(&f.snap, &a.replay, by, &s.analysis.library_rule());
            a.grouping_library = library.to_vec();
            a.growth_groups_by = None;
            (a.group_colour, a.legend) = g.colours(&a.replay, COLOURED_GROUPS);
            a.grouping = Some(g);
            a.live_groups_key = None;
            a.group_curve = None;
        }
        if a.growth_groups_by.as_ref() != Some(by) {
            // The user's line is the insights' own; another grouping is worked out once.
            a.growth_groups = match (by, a.insights.growth.as_ref().is_some_and(|g| g.significant)) {
                (_, false) => Vec::new(),
                (GroupBy::UserLine, true) if library.is_empty() => a.insights.growth_by_line.clone(),
                (by, true) => {
                    growth::named_growth(&f.snap, &a.replay, &a.insights.iterations, by, &s.analysis.library_rule())
                }
            };
            a.growth_groups_by = Some(by.clone());
        }
        let group = s.analysis.highlight.as_ref().and_then(|h| h.group.as_ref()).map(|g| g.id);
        if a.group_curve.as_ref().map(|c| c.group) != group {
            a.group_curve = match (group, &a.grouping) {
                (Some(group), Some(g)) => Some(GroupCurve::build(&a.replay, g, group)),
                _ => None,
            };
        }
        if a.live_groups_key.as_ref() != Some(&(moment, by.clone())) {
            a.live_groups = match (&a.grouping, &a.live) {
                (Some(g), Some(l)) => g.totals(&a.replay, &l.elements),
                _ => Vec::new(),
            };
            a.live_groups_key = Some((moment, by.clone()));
        }
        Some(a)
    }

    /// The flame view's graph for the state (its mode's moment or window; the Live set's grouping
    /// as its first level when asked).
    pub fn ensure_flame(&mut self, s: &ViewState) {
        let (Some(key), Some(source)) = (current_key(s), crate::state::flame::source(s)) else { return };
        let by = s.flame.by_group.then(|| (s.analysis.group_by.clone(), s.analysis.library().to_vec()));
        if self.flame.as_ref().is_some_and(|f| f.key == (key, source) && f.by == by) {
            return;
        }
        let Some(f) = s.file() else { return };
        let Some(a) = self.ensure_analysis(s) else { return };
        let graph = match (&by, &a.grouping) {
            (Some(_), Some(g)) => core_flame::flame_by_group(&f.snap, &a.replay, source, FlameFrames::PythonFirst, g),
            _ => flame_of(&f.snap, &a.replay, source, FlameFrames::PythonFirst),
        };
        self.flame = graph.ok().map(|graph| Flame { key: (key, source), by, source, graph });
    }

    /// The flame view's graph, when it is the one the state asks for.
    pub fn flame_of(&self, s: &ViewState) -> Option<&Flame> {
        let key = (current_key(s)?, crate::state::flame::source(s)?);
        let by = s.flame.by_group.then(|| (s.analysis.group_by.clone(), s.analysis.library().to_vec()));
        self.flame.as_ref().filter(|f| f.key == key && f.by == by)
    }

    /// The allocations under the flame view's focused frame (none while nothing is focused).
    pub fn flame_highlight(&mut self, s: &ViewState) -> Option<Highlight> {
        if s.flame.focus.is_empty() {
            return None;
        }
        let flame = self.flame_of(s)?;
        let (source, grouped) = (flame.source, flame.by.is_some());
        let f = s.file()?;
        let a = self.ensure_analysis(s)?;
        let frames = FlameFrames::PythonFirst;
        let (elements, group) = match (&a.grouping, grouped) {
            (Some(g), true) => {
                let elements =
                    core_flame::elements_under_by_group(&f.snap, &a.replay, source, frames, g, &s.flame.focus);
                // A group's own box: the pointer reads the group's bytes as for its Live set row.
                let group = match s.flame.focus.as_slice() {
                    [label] => g.id_of(label).map(|id| GroupRef { id, label: label.clone() }),
                    _ => None,
                };
                (elements, group)
            }
            _ => (core_flame::elements_under(&f.snap, &a.replay, source, frames, &s.flame.focus), None),
        };
        Some(Highlight { key: format!("flame:{}", s.flame.focus.join(";")), elements: typed(elements), group })
    }

    /// The analyses, when they are of the shown device.
    pub fn analysis_of(&self, s: &ViewState) -> Option<&Analysis> {
        self.analysis.as_ref().filter(|a| Some(a.key) == current_key(s))
    }

    fn ensure_comparison(&mut self, s: &ViewState) {
        let Some(key) = pair_key(s) else { return };
        let by = s.analysis.compare_by_group.then(|| (s.analysis.group_by.clone(), s.analysis.library().to_vec()));
        if self.comparison.as_ref().is_some_and(|(k, b, _)| *k == key && *b == by) {
            return;
        }
        // By stack, the Compare view's comparison is the same one: not computed twice.
        if let (None, Some((k, c))) = (&by, &self.view_comparison) {
            if *k == key {
                self.comparison = Some((key, None, c.clone()));
                return;
            }
        }
        let (Some(fa), Some(fb)) = (s.files.get(key.0), s.files.get(key.2)) else { return };
        let options =
            CompareOptions { points: COMPARE_POINTS, key: KeyMode::Line, top: COMPARE_TOP_DIFFS, ..Default::default() };
        let c = match &by {
            Some((g, _)) => {
                compare::compare_grouped(&fa.snap, key.1, &fb.snap, key.3, options, g, &s.analysis.library_rule())
            }
            None => compare::compare_replayed(
                (&fa.snap, replay_of(&fa.snap, key.1, &fa.plot.layout)),
                (&fb.snap, replay_of(&fb.snap, key.3, &fb.plot.layout)),
                options,
            ),
        };
        self.comparison = Some((key, by, c));
    }

    fn ensure_view_comparison(&mut self, s: &ViewState) {
        let Some(key) = pair_key(s) else { return };
        if self.view_comparison.as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        if let Some((k, None, c)) = &self.comparison {
            if *k == key {
                self.view_comparison = Some((key, c.clone()));
                return;
            }
        }
        let (Some(fa), Some(fb)) = (s.files.get(key.0), s.files.get(key.2)) else { return };
        let options =
            CompareOptions { points: COMPARE_POINTS, key: KeyMode::Line, top: COMPARE_TOP_DIFFS, ..Default::default() };
        let c = compare::compare_replayed(
            (&fa.snap, replay_of(&fa.snap, key.1, &fa.plot.layout)),
            (&fb.snap, replay_of(&fb.snap, key.3, &fb.plot.layout)),
            options,
        );
        self.view_comparison = Some((key, c));
    }

    fn ensure_view_parting(&mut self, s: &ViewState) {
        let Some(key) = pair_key(s) else { return };
        let (Some(fa), Some(fb)) = (s.files.get(key.0), s.files.get(key.2)) else { return };
        // Element indices depend on the layout's mode and hidden set, not on Detail's choice.
        let strip = |o: Options| Options { max_entries: 0, focus_rows: None, ..o };
        let options = [strip(fa.plot.layout.options), strip(fb.plot.layout.options)];
        if self.view_parting.as_ref().is_some_and(|(k, o, _)| *k == key && *o == options) {
            return;
        }
        let Some(c) = self.view_comparison_of(s) else { return };
        let marks =
            crate::state::compare_view::parting_elements(c, (&fa.snap, &fa.plot.layout), (&fb.snap, &fb.plot.layout));
        self.view_parting = Some((key, options, Rc::new(marks)));
    }

    fn ensure_view_picked(&mut self, s: &ViewState) {
        let (Some(key), Some(row)) = (pair_key(s), s.compare_picked()) else { return };
        let (Some(fa), Some(fb)) = (s.files.get(key.0), s.files.get(key.2)) else { return };
        let strip = |o: Options| Options { max_entries: 0, focus_rows: None, ..o };
        let options = [strip(fa.plot.layout.options), strip(fb.plot.layout.options)];
        if self.view_picked.as_ref().is_some_and(|(k, r, o, _)| *k == key && *r == row && *o == options) {
            return;
        }
        let Some(c) = self.view_comparison_of(s) else { return };
        let picked = crate::state::compare_view::picked_elements(
            c,
            row,
            (&fa.snap, &fa.plot.layout),
            (&fb.snap, &fb.plot.layout),
        );
        self.view_picked = picked.map(|p| (key, row, options, Rc::new(p)));
    }

    /// The allocations of the Compare tab's picked row on both timelines, when of the pair shown.
    pub fn view_picked_of(&self, s: &ViewState) -> Option<Rc<Picked>> {
        let (key, row) = (pair_key(s)?, s.compare_picked()?);
        self.view_picked.as_ref().filter(|(k, r, _, _)| *k == key && *r == row).map(|(_, _, _, p)| Rc::clone(p))
    }

    /// Where the Compare view's pair parts, A's elements then B's, when of the pair shown.
    pub fn view_parting_of(&self, s: &ViewState) -> Option<Parting> {
        let key = pair_key(s)?;
        self.view_parting.as_ref().filter(|(k, _, _)| *k == key).map(|(_, _, m)| Rc::clone(m))
    }

    /// The Compare view's comparison, when it is of the pair shown.
    pub fn view_comparison_of(&self, s: &ViewState) -> Option<&Comparison> {
        let key = pair_key(s)?;
        self.view_comparison.as_ref().filter(|(k, _)| *k == key).map(|(_, c)| c)
    }

    /// The comparison the Compare tab shows, when it is of the pair shown (and compares by what
    /// the state asks).
    pub fn comparison_of(&self, s: &ViewState) -> Option<&Comparison> {
        let key = pair_key(s)?;
        let by = s.analysis.compare_by_group.then(|| (s.analysis.group_by.clone(), s.analysis.library().to_vec()));
        self.comparison.as_ref().filter(|(k, b, _)| *k == key && *b == by).map(|(_, _, c)| c)
    }

    fn ensure_categories(&mut self, s: &ViewState) {
        let Some(key) = current_key(s) else { return };
        let Some(f) = s.file() else { return };
        let key = (key, s.analysis.categories.profile_seq);
        if self.categories.as_ref().is_none_or(|(k, _)| *k != key) {
            let profile = s.analysis.categories.profile.as_ref().filter(|p| p.is_profilers()).map(|p| &p.full);
            let c = match profile {
                Some(p) if categories_join::overlaps(&f.snap, key.0 .1, p) => {
                    categories_join::join_categories(&f.snap, key.0 .1, p, CATEGORY_POINTS).0
                }
                _ => infer_categories(&f.snap, key.0 .1, CATEGORY_POINTS),
            };
            self.categories = Some((key, c));
        }
    }

    /// The categories of the shown device: the profiler's where they match, else inferred.
    pub fn categories_of(&self, s: &ViewState) -> Option<&SnapshotCategories> {
        let key = (current_key(s)?, s.analysis.categories.profile_seq);
        self.categories.as_ref().filter(|(k, _)| *k == key).map(|(_, c)| c)
    }

    fn ensure_pools(&mut self, s: &ViewState) {
        let (Some(i), Some(f)) = (s.current, s.file()) else { return };
        if self.pools.as_ref().is_some_and(|(fi, g, _)| *fi == i && *g == s.generation) {
            return;
        }
        self.pools = Some((i, s.generation, Rc::new(pools(&f.snap, f.plot.device_pos, &f.plot.layout))));
    }

    /// The pools of the shown layout.
    pub fn pools_of(&self, s: &ViewState) -> Option<&Rc<Pools>> {
        let i = s.current?;
        self.pools.as_ref().filter(|(fi, g, _)| *fi == i && *g == s.generation).map(|(_, _, p)| p)
    }

    fn ensure_matches(&mut self, s: &ViewState) {
        let (Some(i), Some(f)) = (s.current, s.file()) else { return };
        let key = (i, s.generation, s.search.clone());
        if self.matches.as_ref().is_some_and(|m| m.key == key) {
            return;
        }
        let texts = match &self.texts {
            Some((fi, name, texts)) if *fi == i && *name == f.name => Rc::clone(texts),
            _ => {
                let texts = Rc::new(StackTexts::build(&f.snap));
                self.texts = Some((i, f.name.clone(), Rc::clone(&texts)));
                texts
            }
        };
        let layout = &f.plot.layout;
        let prefix = if layout.options.mode == Mode::Allocations { 'b' } else { 's' };
        let trace = f.snap.devices.get(f.plot.device_pos).map(|d| &d.trace);
        let elements = Rc::new(s.search.matching_in(layout, prefix, &texts, trace));
        let drawn = elements.iter().filter(|&&e| layout.element(e).is_some_and(|el| el.band.is_some())).count();
        let total_bytes =
            elements.iter().filter_map(|&e| layout.element(e)).fold(0u64, |a, el| a.saturating_add(el.size_bytes));
        self.matches = Some(Matches { key, elements, drawn, total_bytes });
    }

    /// Search matches of the shown layout (none for an empty query or in a panel view).
    pub fn matches_of(&self, s: &ViewState) -> Option<&Matches> {
        if s.search.is_empty() || s.view.is_panel() {
            return None;
        }
        let i = s.current?;
        self.matches.as_ref().filter(|m| m.key.0 == i && m.key.1 == s.generation && m.key.2 == s.search)
    }

    /// The event list of the shown device.
    pub fn ensure_history(&mut self, s: &ViewState) -> Option<&HistoryData> {
        let key = current_key(s)?;
        let f = s.file()?;
        if self.history.as_ref().is_none_or(|(k, _)| *k != key) {
            self.history = Some((key, HistoryData::build(&f.snap, key.1)));
        }
        self.history.as_ref().map(|(_, h)| h)
    }

    /// The event list, when it is of the shown device.
    pub fn history_of(&self, s: &ViewState) -> Option<&HistoryData> {
        let key = current_key(s)?;
        self.history.as_ref().filter(|(k, _)| *k == key).map(|(_, h)| h)
    }

    /// The trace entry after which the selected row's state is shown (`usize::MAX`: none).
    pub fn selected_entry(&self, s: &ViewState) -> Option<(usize, usize, usize)> {
        let key = current_key(s)?;
        let data = self.history_of(s)?;
        let sel = s.history.selected_row(key, data.rows());
        Some((key.0, key.1, sel.map_or(usize::MAX, |r| data.entries_of(r).1)))
    }

    fn ensure_at_event(&mut self, s: &ViewState) {
        let Some(key) = self.selected_entry(s) else { return };
        if self.at_event.as_ref().is_some_and(|a| a.key == key) {
            return;
        }
        let (Some(f), Some(data)) = (s.file(), self.history_of(s)) else { return };
        let state = data.history.state_after(&f.snap, (key.2 != usize::MAX).then_some(key.2));
        let map = MapLayout::build(&state);
        self.at_event = Some(AtEvent { key, state, map });
    }

    /// The state after the selected event, when it is of the shown device.
    pub fn at_event_of(&self, s: &ViewState) -> Option<&AtEvent> {
        let key = self.selected_entry(s)?;
        self.at_event.as_ref().filter(|a| a.key == key)
    }

    /// Recomputes the minimap's columns (whole x domain, one per device pixel).
    pub fn refresh_minimap(&mut self, s: &ViewState) {
        let rect = s.minimap_rect();
        let cols = (rect.width_px * s.dpr).round().max(1.0) as usize;
        self.minimap_cols = match s.file() {
            None => Vec::new(),
            Some(f) => {
                let xm = f.xmap();
                let full = f.viewport.full_x1;
                let bounds: Vec<f64> = (0..=cols).map(|c| xm.step(full * c as f64 / cols as f64)).collect();
                f.plot.layout.column_envelopes(&bounds).iter().map(|e| e.total_max_bytes).collect()
            }
        };
    }

    /// The elements a row of the analysis panel names (computing the analyses if needed).
    pub fn highlight_of(&mut self, s: &ViewState, action: Action) -> Option<Highlight> {
        // A row of the grouped comparison: its group's text and A's entry of its point.
        let cmp_row = match action {
            Action::CompareGroup { point, more_in_b, i } if s.analysis.compare_by_group => {
                let p = self.comparison_of(s)?.points.get(point)?;
                let d = if more_in_b { p.more_in_b.get(i) } else { p.more_in_a.get(i) }?;
                Some((d.key.clone(), p.a_row))
            }
            _ => None,
        };
        if let Action::Category(k) = action {
            return self.category_highlight(s, k);
        }
        let a = self.ensure_analysis(s)?;
        let snap = &s.file()?.snap;
        match action {
            Action::Finding(i) => a.insights.findings.get(i).map(|f| Highlight {
                key: format!("finding:{i}"),
                elements: typed(f.elements.clone()),
                group: None,
            }),
            Action::OomHolders(i) => a.insights.ooms.get(i).map(|o| Highlight {
                key: format!("oom:{i}"),
                elements: typed(o.holders.elements.clone()),
                group: None,
            }),
            Action::Site(i) => {
                let live = a.live.as_ref()?;
                let site = live.by_site.get(i)?;
                let elements = live
                    .elements
                    .iter()
                    .copied()
                    .filter(|&e| {
                        a.replay
                            .lives
                            .get(e as usize)
                            .is_some_and(|l| memviz_core::analysis::life_site_label(snap, l) == site.label)
                    })
                    .map(ElementIndex::new)
                    .collect();
                Some(Highlight { key: format!("site:{i}"), elements, group: None })
            }
            Action::Group(i) => {
                let (live, g) = (a.live.as_ref()?, a.grouping.as_ref()?);
                let group = a.live_groups.get(i)?.group;
                Some(Highlight {
                    key: format!("group:{i}"),
                    elements: typed(g.elements_of(group, &live.elements)),
                    group: Some(GroupRef { id: group, label: g.label(group) }),
                })
            }
            Action::Growth(i) => a.growth_groups.get(i).map(|n| Highlight {
                key: format!("growth:{i}"),
                elements: typed(n.elements.clone()),
                group: Some(GroupRef { id: n.growth.group, label: n.label.clone() }),
            }),
            Action::CompareGroup { point, more_in_b, i } => {
                let (key, row) = cmp_row?;
                let g = a.grouping.as_ref()?;
                let group = g.id_of(&key)?;
                let elements = g.elements_of(group, &a.replay.live_elements(row));
                let side = if more_in_b { 'b' } else { 'a' };
                Some(Highlight {
                    key: format!("cmp:{point}:{side}:{i}"),
                    elements: typed(elements),
                    group: Some(GroupRef { id: group, label: key }),
                })
            }
            Action::Node(n) => {
                let live = a.live.as_ref()?;
                Some(Highlight {
                    key: format!("node:{n}"),
                    elements: typed(elements_under(snap, &a.replay, live, n)),
                    group: None,
                })
            }
            _ => None,
        }
    }
}

impl Derived {
    /// A group's highlight from another file, in the file shown now: the live allocations (at
    /// the Live set's moment) of the group with the same text, the Live set's row of it as its
    /// key; none for a highlight of no group or a group this file lacks (element indices of one
    /// file never name another's).
    pub fn carry_highlight(&mut self, s: &ViewState, h: &Highlight) -> Option<Highlight> {
        let label = &h.group.as_ref()?.label;
        let a = self.ensure_analysis(s)?;
        let (g, live) = (a.grouping.as_ref()?, a.live.as_ref()?);
        let id = g.id_of(label)?;
        let key = match a.live_groups.iter().position(|t| t.group == id) {
            Some(row) => format!("group:{row}"),
            None => format!("carried:{label}"),
        };
        let elements = g.elements_of(id, &live.elements);
        Some(Highlight { key, elements: typed(elements), group: Some(GroupRef { id, label: label.clone() }) })
    }

    /// Each group's bytes over time under the state's grouping (the largest
    /// [`COLOURED_GROUPS`], then "other"), named for the chart: `run.pickle by operator`.
    pub fn group_timeline_of(&mut self, s: &ViewState) -> Option<(String, CategoryTimeline)> {
        let f = s.file()?;
        let a = self.ensure_analysis(s)?;
        let g = a.grouping.as_ref()?;
        let tl = group_timeline(&f.snap, a.key.1, &a.replay, g, CATEGORY_POINTS, COLOURED_GROUPS);
        Some((format!("{} by {}", f.name, g.by.title()), tl))
    }

    /// The allocations of inferred category `k` ([`Category::ALL`]) live at the peak: the
    /// Categories tab's row, whose bytes they add up to.
    fn category_highlight(&mut self, s: &ViewState, k: usize) -> Option<Highlight> {
        let cat = *Category::ALL.get(k)?;
        self.ensure_categories(s);
        let live = {
            let a = self.ensure_analysis(s)?;
            a.replay.live_elements(a.replay.peak_row)
        };
        let c = self.categories_of(s)?;
        let elements =
            live.into_iter().filter(|&e| c.per_element.get(e as usize) == Some(&cat)).map(ElementIndex::new).collect();
        Some(Highlight { key: format!("category:{}", cat.name()), elements, group: None })
    }
}

/// (file, device) and the profile's sequence number the categories are of.
pub type CategoriesKey = ((usize, usize), usize);

/// Frame keys of a stack's visible frames, outermost first.
pub fn path_of(snap: &Snapshot, stack: u32) -> Vec<FrameKey> {
    let mut p: Vec<FrameKey> = visible_frames(snap, stack).map(frame_key).collect();
    p.reverse();
    p
}

/// The live elements whose stacks pass through a tree node.
pub fn elements_under(snap: &Snapshot, replay: &Replay, l: &LiveSet, node: u32) -> Vec<u32> {
    let Some(n) = l.tree.nodes.get(node as usize) else {
        return Vec::new();
    };
    if n.parent.is_none() {
        return l.elements.clone();
    }
    // The node's path from the root, as frame keys (None: a "no frames" node).
    let mut path: Vec<Option<FrameKey>> = Vec::new();
    let mut cur = Some(node);
    while let Some(c) = cur {
        let Some(x) = l.tree.nodes.get(c as usize) else {
            break;
        };
        if x.parent.is_none() {
            break;
        }
        path.push(x.frame.and_then(|f| snap.frames.get(f as usize)).map(frame_key));
        cur = x.parent;
    }
    path.reverse();
    let no_frames = path.first().is_some_and(Option::is_none);
    let mut stacks_in: HashSet<(u32, bool)> = HashSet::new();
    for g in &l.by_stack {
        let p = path_of(snap, g.stack);
        let inside = if no_frames {
            p.is_empty() && g.before_trace == n.before_trace
        } else {
            p.len() >= path.len() && path.iter().zip(&p).all(|(a, b)| a.as_ref() == Some(b))
        };
        if inside {
            stacks_in.insert((g.stack, g.before_trace));
        }
    }
    l.elements
        .iter()
        .copied()
        .filter(|&e| replay.lives.get(e as usize).is_some_and(|x| stacks_in.contains(&(x.stack, is_unrecorded(x)))))
        .collect()
}

/// Element indices of an analysis (its lifetimes are the layout's elements, in the same order)
/// as the timeline's [`ElementIndex`]es.
fn typed(elements: Vec<u32>) -> Vec<ElementIndex> {
    elements.into_iter().map(ElementIndex::new).collect()
}

#[cfg(test)]
#[path = "derived_tests.rs"]
mod tests;
