//! Native tests of [`super::Derived`]: what is computed for which state, and when it is
//! computed again.

use memviz_core::format::stack_lines;

use super::{current_key, Derived};
use crate::state::panels::SearchBoxes;
use crate::state::ViewState;
use crate::view::View;

static DEMO: &[u8] = include_bytes!("../../../tests/data/real/gpt_amp_annotated.pickle");

fn demo() -> ViewState {
    crate::test_state::open_state(DEMO, "demo.pickle", 15_000, (1000.0, 60.0))
}

/// Only what the state shows is computed: the device's views and coverage always, the analyses
/// once the panel opens, the event list once the History is shown.
#[test]
fn refresh_computes_what_the_state_shows() {
    let mut s = demo();
    let mut d = Derived::default();
    d.refresh(&s);
    assert!(d.views_of(&s).is_some() && d.coverage_of(&s).is_some());
    assert!(d.analysis_of(&s).is_none() && d.history_of(&s).is_none() && d.matches_of(&s).is_none());
    s.analysis.open = true;
    d.refresh(&s);
    let Some(a) = d.analysis_of(&s) else { panic!("the panel is open: analyses") };
    assert_eq!(Some(a.key), current_key(&s));
    s.view = View::AllocatorStateHistory;
    d.refresh(&s);
    let Some(h) = d.history_of(&s) else { panic!("the History is shown: its rows") };
    assert!(h.rows() > 0);
}

/// The frame search's matches are the laid-out allocations whose frames hold the text (counted
/// here from the stacks' lines), with their bytes; a new layout is searched again.
#[test]
fn matches_are_the_allocations_whose_frames_hold_the_text() {
    let mut s = demo();
    let mut d = Derived::default();
    let boxes = SearchBoxes { frame: "forward".into(), ..SearchBoxes::default() };
    s.search = boxes.query();
    s.search_boxes = boxes;
    d.refresh(&s);
    let Some(m) = d.matches_of(&s) else { panic!("a query: matches") };
    let Some(f) = s.file() else { panic!("a file") };
    let layout = &f.plot.layout;
    let expect: Vec<u32> = (0..layout.elements.len() as u32)
        .filter(|&e| {
            let el = &layout.elements[e as usize];
            stack_lines(&f.snap, el.stack).iter().any(|l| l.to_lowercase().contains("forward"))
        })
        .collect();
    assert!(!expect.is_empty());
    assert!(m.elements.iter().map(|e| e.get()).eq(expect.iter().copied()));
    let bytes: u64 = expect.iter().map(|&e| layout.elements[e as usize].size_bytes).sum();
    assert_eq!(m.total_bytes, bytes);
    assert!(m.drawn <= expect.len());
    // A new layout (another generation) is not answered from the old matches.
    s.generation += 1;
    assert!(d.matches_of(&s).is_none());
    d.refresh(&s);
    assert!(d.matches_of(&s).is_some());
}

/// The Compare tab by the Live set's grouping: its rows are groups, and a row highlights A's
/// live allocations of that group at the row's point, as many bytes as the row says A holds.
#[test]
fn a_row_of_the_grouped_comparison_highlights_its_group_in_a() {
    use crate::state::panels::Action;
    static LAYERS: &[u8] = include_bytes!("../../../tests/data/real/metadata_layers.pickle");
    static LEAK: &[u8] = include_bytes!("../../../tests/data/real/growth_leak.pickle");
    let mut s = crate::test_state::open_state(LAYERS, "layers.pickle", 15_000, (1000.0, 60.0));
    s.files.push(crate::test_state::open_file(LEAK, "leak.pickle", 15_000));
    s.analysis.open = true;
    s.analysis.tab = crate::state::panels::Tab::Compare;
    let mut d = Derived::default();
    d.refresh(&s);
    let by_stack = d.comparison_of(&s).expect("compared by stack").points[0].more_in_a.clone();
    // A stack row is no handle.
    assert!(d.highlight_of(&s, Action::CompareGroup { point: 0, more_in_b: false, i: 0 }).is_none());
    let _ = s.apply(crate::state::PageInput::Analysis(Action::CompareByGroup), 0.0);
    assert!(d.comparison_of(&s).is_none(), "a comparison by stack is not one by group");
    d.refresh(&s);
    let c = d.comparison_of(&s).expect("compared by the user's line");
    assert_ne!(c.points[0].more_in_a, by_stack);
    let (point, rows) = c
        .points
        .iter()
        .enumerate()
        .find(|(_, p)| p.more_in_a.len() >= 2)
        .map(|(k, p)| (k, p.more_in_a.clone()))
        .expect("a point where A holds more in two groups");
    for (i, row) in rows.iter().enumerate() {
        let h = d.highlight_of(&s, Action::CompareGroup { point, more_in_b: false, i }).expect("a group of A");
        let f = s.file().expect("A");
        let bytes: u64 = h.elements.iter().map(|&e| f.plot.layout.elements[e.as_usize()].size_bytes).sum();
        assert_eq!((bytes, h.elements.len()), (row.a_bytes, row.a_count), "{}", row.key);
        assert_eq!(h.key, format!("cmp:{point}:a:{i}"));
        assert!(h.group.is_some());
    }
}

/// A row of the Categories tab's table at the peak highlights that category's live allocations:
/// as many bytes as the row says.
#[test]
fn a_category_row_highlights_its_allocations_at_the_peak() {
    use crate::state::panels::Action;
    use memviz_core::analysis::categories::Category;
    let mut s = demo();
    s.analysis.open = true;
    s.analysis.tab = crate::state::panels::Tab::Categories;
    let mut d = Derived::default();
    d.refresh(&s);
    let rows: Vec<(Category, u64)> =
        d.categories_of(&s).expect("categories").at_peak.iter().copied().filter(|r| r.1 > 0).collect();
    assert!(rows.len() >= 3, "{rows:?}");
    let mut all = 0u64;
    for (cat, bytes) in rows {
        let k = Category::ALL.iter().position(|&c| c == cat).expect("a category");
        let h = d.highlight_of(&s, Action::Category(k)).expect("a highlight");
        let f = s.file().expect("file");
        let sum: u64 = h.elements.iter().map(|&e| f.plot.layout.elements[e.as_usize()].size_bytes).sum();
        assert_eq!(sum, bytes, "{}", cat.name());
        assert_eq!(h.key, format!("category:{}", cat.name()));
        all += sum;
    }
    let a = d.analysis_of(&s).expect("analysis");
    assert_eq!(all, a.replay.peak_bytes, "the categories share the peak");
}

/// Another file shown: a group's highlight follows its text there (the same group of that file,
/// live at its moment); any other highlight, and a group that file lacks, go (the element indices
/// were the first file's).
#[test]
fn a_group_highlight_follows_its_group_into_the_file_shown_next() {
    use crate::state::panels::Action;
    static LAYERS: &[u8] = include_bytes!("../../../tests/data/real/metadata_layers.pickle");
    static LEAK: &[u8] = include_bytes!("../../../tests/data/real/growth_leak.pickle");
    let mut s = crate::test_state::open_state(LAYERS, "a.pickle", 15_000, (1000.0, 60.0));
    s.files.push(crate::test_state::open_file(LAYERS, "b.pickle", 500));
    s.files.push(crate::test_state::open_file(LEAK, "leak.pickle", 15_000));
    s.analysis.open = true;
    s.analysis.tab = crate::state::panels::Tab::Live;
    s.analysis.group_by = memviz_core::analysis::grouping::GroupBy::Metadata(Some("phase".into()));
    let mut d = Derived::default();
    d.refresh(&s);
    let row = {
        let a = d.analysis_of(&s).expect("analysis");
        let g = a.grouping.as_ref().expect("grouping");
        a.live_groups.iter().position(|t| g.label(t.group) == "forward").expect("forward")
    };
    let h = d.highlight_of(&s, Action::Group(row)).expect("forward");
    assert_eq!(h.elements.len(), 45);
    // The same run laid out with another Detail: the same 45 allocations.
    s.current = Some(1);
    d.refresh(&s);
    let carried = d.carry_highlight(&s, &h).expect("forward in b");
    assert_eq!(carried.elements, h.elements);
    assert_eq!(carried.key, format!("group:{row}"));
    // A file without that phase: nothing is highlighted.
    s.current = Some(2);
    d.refresh(&s);
    assert!(d.carry_highlight(&s, &h).is_none());
    let site = d.highlight_of(&s, Action::Site(0)).expect("a site");
    assert!(d.carry_highlight(&s, &site).is_none(), "a site's highlight is of its file");
}

/// Growth follows the Live set's grouping: on the leaking loop the user's line first (`memviz
/// insights`: +8398848 bytes per iteration from train.py:20), by operator relu (+8388608); a
/// row highlights its allocations, with its group for the pointer's reading.
#[test]
fn growth_rows_follow_the_grouping() {
    use crate::state::panels::Action;
    use memviz_core::analysis::grouping::GroupBy;
    static LEAK: &[u8] = include_bytes!("../../../tests/data/real/growth_leak.pickle");
    let mut s = crate::test_state::open_state(LEAK, "leak.pickle", 15_000, (1000.0, 60.0));
    s.analysis.open = true;
    let mut d = Derived::default();
    d.refresh(&s);
    let rows = |d: &Derived, s: &ViewState| -> Vec<(String, i64)> {
        let a = d.analysis_of(s).expect("analysis");
        a.growth_groups.iter().map(|n| (n.label.clone(), n.growth.bytes_per_iteration)).collect()
    };
    let by_line = rows(&d, &s);
    assert_eq!(by_line[0], ("/home/user/project/train.py:20 (growth_leak)".to_string(), 8_398_848));
    s.analysis.group_by = GroupBy::Op;
    d.refresh(&s);
    let by_op = rows(&d, &s);
    assert_eq!(by_op[0], ("relu".to_string(), 8_388_608));
    assert_eq!(by_op[1], ("linear".to_string(), 10_240));
    let h = d.highlight_of(&s, Action::Growth(0)).expect("relu");
    let (a, g) =
        (d.analysis_of(&s).expect("analysis"), d.analysis_of(&s).and_then(|a| a.grouping.as_ref()).expect("g"));
    let group = h.group.as_ref().expect("a group");
    assert_eq!(g.label(group.id), "relu");
    assert!(!h.elements.is_empty() && h.elements.iter().all(|&e| g.group_of(e.get()) == Some(group.id)));
    assert!(a.growth_groups[0].elements.iter().copied().eq(h.elements.iter().map(|e| e.get())));
}

/// The Categories tab's chart by the grouping: the file's peak is a sample, where the forward
/// phase holds the Live set's 120,995,840 bytes.
#[test]
fn the_grouping_over_time_is_a_chart_of_the_categories_tab() {
    use crate::state::panels::Action;
    use crate::state::{Effect, PageInput};
    static LAYERS: &[u8] = include_bytes!("../../../tests/data/real/metadata_layers.pickle");
    let mut s = crate::test_state::open_state(LAYERS, "layers.pickle", 15_000, (1000.0, 60.0));
    s.analysis.group_by = memviz_core::analysis::grouping::GroupBy::Metadata(Some("phase".into()));
    assert_eq!(s.apply(PageInput::Analysis(Action::GroupTimeline), 0.0), vec![Effect::GroupTimeline]);
    let mut d = Derived::default();
    let (name, tl) = d.group_timeline_of(&s).expect("a chart");
    assert_eq!(name, "layers.pickle by metadata \"phase\"");
    let peak = d.analysis_of(&s).expect("analysis").replay.peak_bytes;
    let (i, total) = tl.peak().expect("a peak");
    assert_eq!(total, peak);
    let fwd = tl.categories.iter().position(|c| c == "forward").expect("forward");
    assert_eq!(tl.bytes[i][fwd], 120_995_840);
    s.analysis.categories.set_profile(name, tl);
    assert_eq!(s.analysis.categories.profile.as_ref().and_then(|p| p.peak).map(|p| p.1), Some(peak));
}

/// Files typed as not the user's code are skipped for the user's line, in the Live set and
/// Growth (`memviz live --library project/train.py`: 116.4 MiB in 49 allocations then have no
/// frame outside libraries at the peak).
#[test]
fn typed_library_fragments_regroup_the_users_lines() {
    static LAYERS: &[u8] = include_bytes!("../../../tests/data/real/metadata_layers.pickle");
    let mut s = crate::test_state::open_state(LAYERS, "layers.pickle", 15_000, (1000.0, 60.0));
    s.analysis.open = true;
    let mut d = Derived::default();
    d.refresh(&s);
    let top = |d: &Derived, s: &ViewState| -> Vec<(String, u64, usize)> {
        let a = d.analysis_of(s).expect("analysis");
        let g = a.grouping.as_ref().expect("grouping");
        a.live_groups.iter().map(|t| (g.label(t.group), t.bytes, t.allocations)).collect()
    };
    assert!(top(&d, &s).iter().any(|r| r.0 == "/home/user/project/train.py:296 (forward)"));
    s.analysis.set_library("project/train.py");
    d.refresh(&s);
    let rows = top(&d, &s);
    assert!(rows.iter().all(|r| !r.0.contains("train.py")), "{rows:?}");
    assert!(rows.contains(&("<no frame outside libraries>".to_string(), 122_052_648, 49)), "{rows:?}");
}

/// The profiler's memory timeline opened beside a snapshot of the same run gives the
/// snapshot's allocations its categories (837 of its 840 matched, as
/// tests/gen/verify_join.py finds); put aside, it stays joined; closed, they are inferred again;
/// a grouping's chart in its place joins nothing.
#[test]
fn the_profilers_timeline_beside_its_snapshot_gives_the_categories() {
    use crate::state::panels::Action;
    use memviz_core::analysis::categories::read_profiler_timeline;
    static SNAPSHOT: &[u8] = include_bytes!("../../../tests/data/real/gpt_profile.pickle");
    static TIMELINE: &[u8] = include_bytes!("../../../tests/data/real/gpt_profile.timeline.json");
    const RECT: crate::viewport::PlotRect =
        crate::viewport::PlotRect { left_px: 0.0, top_px: 0.0, width_px: 1000.0, height_px: 400.0 };
    let mut s = crate::test_state::open_state(SNAPSHOT, "gpt_profile.pickle", 15_000, (1000.0, 60.0));
    let mut d = Derived::default();
    s.analysis.tab = crate::state::panels::Tab::Categories;
    s.analysis.open = true;
    d.refresh(&s);
    assert!(d.categories_of(&s).expect("inferred").matched.is_empty());
    s.set_profile("gpt_profile.timeline.json".into(), read_profiler_timeline(TIMELINE).expect("timeline"));
    d.refresh(&s);
    let matched =
        |d: &Derived, s: &ViewState| d.categories_of(s).expect("categories").matched.iter().filter(|&&m| m).count();
    assert_eq!(matched(&d, &s), 837 + 39);
    s.analysis.apply(Action::CategoryShowTimeline, None, &RECT);
    assert!(s.analysis.categories.chart_hidden && s.analysis.categories.colour_inferred);
    d.refresh(&s);
    assert_eq!(matched(&d, &s), 837 + 39, "put aside, still joined");
    s.analysis.apply(Action::CategoryClose, None, &RECT);
    d.refresh(&s);
    assert_eq!(matched(&d, &s), 0);
}
