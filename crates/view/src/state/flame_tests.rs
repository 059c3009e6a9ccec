//! Tests of the flame view's state, its choice of graph and its boxes.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use memviz_core::analysis::flame::{flame_of, FlameFrames, FlameNode};
use memviz_core::analysis::Replay;

use super::*;
use memviz_core::timeline::ElementIndex;

static DEMO: &[u8] = include_bytes!("../../../../tests/data/real/gpt_amp_annotated.pickle");

fn node(name: &str, value: u128, self_value: u128, parent: Option<u32>, children: Vec<u32>) -> FlameNode {
    FlameNode { name: name.into(), value, self_value, parent, children }
}

/// all 100 = main 100 = (a 60 = a1 60) + (b 30) + (c 10, a sliver: 0.1 of b's share).
fn small() -> FlameGraph {
    FlameGraph {
        unit: FlameUnit::Bytes,
        nodes: vec![
            node("all", 100, 0, None, vec![1]),
            node("main", 100, 0, Some(0), vec![2, 3, 4]),
            node("a", 60, 0, Some(1), vec![5]),
            node("b", 30, 30, Some(1), vec![]),
            node("c", 10, 10, Some(1), vec![]),
            node("a1", 60, 60, Some(2), vec![]),
        ],
    }
}

fn state() -> ViewState {
    crate::test_state::open_state(DEMO, "demo.pickle", 15_000, ViewState::default().minimap_css)
}

#[test]
fn boxes_nest_left_to_right_largest_first() {
    let g = small();
    let b = boxes(&g, None, 0.0, 100);
    let of = |n: u32| *b.iter().find(|x| x.node == n).unwrap();
    assert_eq!(b.len(), 6);
    assert_eq!((of(0).x0, of(0).x1, of(0).depth), (0.0, 1.0, 0));
    assert_eq!((of(1).x0, of(1).x1, of(1).depth), (0.0, 1.0, 1));
    assert_eq!((of(2).x0, of(2).x1, of(2).depth), (0.0, 0.6, 2));
    assert!((of(3).x0 - 0.6).abs() < 1e-12 && (of(3).x1 - 0.9).abs() < 1e-12);
    assert!((of(4).x0 - 0.9).abs() < 1e-12 && (of(4).x1 - 1.0).abs() < 1e-12);
    assert_eq!((of(5).x0, of(5).x1, of(5).depth), (0.0, 0.6, 3));
    assert!(b.iter().all(|x| !x.above_focus));
    // Narrow boxes go, with what is under them; the count is capped.
    let wide = boxes(&g, None, 0.2, 100);
    assert!(wide.iter().all(|x| x.node != 4), "c is 10% wide");
    assert_eq!(boxes(&g, None, 0.0, 3).len(), 3);
}

#[test]
fn a_focused_node_fills_the_width_under_its_ancestors() {
    let g = small();
    let b = boxes(&g, Some(2), 0.0, 100);
    let of = |n: u32| *b.iter().find(|x| x.node == n).unwrap();
    assert!(of(0).above_focus && of(1).above_focus);
    assert_eq!((of(0).depth, of(1).depth), (0, 1));
    assert_eq!((of(2).x0, of(2).x1, of(2).depth, of(2).above_focus), (0.0, 1.0, 2, false));
    assert_eq!((of(5).x0, of(5).x1, of(5).depth), (0.0, 1.0, 3));
    assert!(b.iter().all(|x| x.node != 3 && x.node != 4), "siblings of the focus are not drawn");
    // A focus the graph lacks: the whole graph.
    assert_eq!(boxes(&g, Some(99), 0.0, 100), boxes(&g, None, 0.0, 100));
}

#[test]
fn clicks_focus_and_unfocus_by_path_and_modes_ask_for_a_graph() {
    let g = small();
    let mut s = FlameState::default();
    assert_eq!(s.apply(FlameInput::Click(5), Some(&g)), FlameChange::Focus);
    assert_eq!(s.focus, ["main", "a", "a1"]);
    assert_eq!(s.focus_node(&g), Some(5));
    // Another graph with the same frames finds the focus by its path.
    let mut other = small();
    other.nodes.swap(3, 5);
    other.nodes[2].children = vec![3];
    other.nodes[3].parent = Some(2);
    other.nodes[1].children = vec![2, 5, 4];
    other.nodes[5].parent = Some(1);
    assert_eq!(s.focus_node(&other), Some(3));
    // The same node again: back to the whole graph; the root too.
    assert_eq!(s.apply(FlameInput::Click(5), Some(&g)), FlameChange::Focus);
    assert!(s.focus.is_empty() && s.focus_node(&g).is_none());
    s.apply(FlameInput::Click(2), Some(&g));
    assert_eq!(s.apply(FlameInput::Click(0), Some(&g)), FlameChange::Focus);
    assert!(s.focus.is_empty());
    assert_eq!(s.apply(FlameInput::Click(42), Some(&g)), FlameChange::None, "no such node");
    assert_eq!(s.apply(FlameInput::Click(1), None), FlameChange::None, "no graph");
    assert_eq!(s.apply(FlameInput::Hover(Some(3)), Some(&g)), FlameChange::None);
    assert_eq!(s.hover, Some(3));
    assert_eq!(s.apply(FlameInput::Mode(FlameMode::Live), Some(&g)), FlameChange::None);
    assert_eq!(s.apply(FlameInput::Mode(FlameMode::Lifetime), Some(&g)), FlameChange::Graph);
    assert_eq!((s.mode, s.hover), (FlameMode::Lifetime, None));
    for m in [FlameMode::Live, FlameMode::Lifetime] {
        assert_eq!(FlameMode::from_value(m.value()), Some(m));
    }
    assert_eq!(FlameMode::from_value("x"), None);
}

#[test]
fn the_live_graph_is_at_the_cursor_the_pin_the_live_tab_or_the_peak() {
    let mut s = state();
    assert_eq!(live_moment(&s), Moment::Peak);
    assert_eq!(source(&s), Some(FlameSource::Live(Moment::Peak)));
    s.analysis.moment = Some(Moment::Entry(7));
    assert_eq!(live_moment(&s), Moment::Entry(7));
    let layout = &s.file().unwrap().plot.layout;
    let e = layout.elements.iter().position(|el| el.alloc_row.is_some()).unwrap() as u32;
    let row = layout.elements[e as usize].alloc_row.unwrap();
    s.set_pin(Some(Target::Element(ElementIndex::new(e))));
    assert_eq!(live_moment(&s), Moment::Entry(row), "the pinned allocation's alloc");
    s.cursor_entry = Some(3);
    assert_eq!(live_moment(&s), Moment::Entry(3), "a cited entry's cursor first");
}

#[test]
fn the_lifetime_graph_covers_the_visible_window() {
    let mut s = state();
    s.flame.mode = FlameMode::Lifetime;
    let rows = s.file().unwrap().snap.devices[s.file().unwrap().plot.device_pos].trace.len() as u32;
    let Some(FlameSource::Lifetime { first, last }) = source(&s) else { panic!("a window") };
    assert!(first <= 1 && last > rows / 2 && last < rows, "the whole trace: {first}..{last} of {rows}");
    // A narrower window: fewer rows, and a graph no heavier than the whole one.
    let f = s.file_mut().unwrap();
    let (x0, x1) = (f.viewport.x0, f.viewport.x1);
    f.viewport.set_window(x0 + (x1 - x0) * 0.4, x0 + (x1 - x0) * 0.6);
    let Some(narrow @ FlameSource::Lifetime { first: a, last: b }) = source(&s) else { panic!("a window") };
    assert!(a > first && b < last && a <= b, "{a}..{b}");
    let f = s.file().unwrap();
    let replay = Replay::build(&f.snap, f.plot.device_pos);
    let whole = flame_of(&f.snap, &replay, FlameSource::Lifetime { first, last }, FlameFrames::PythonFirst).unwrap();
    let part = flame_of(&f.snap, &replay, narrow, FlameFrames::PythonFirst).unwrap();
    assert!(part.nodes[0].value < whole.nodes[0].value);
    assert!(title(narrow, &part).starts_with(&format!("Bytes × lifetime over entries {a}–{b}")));
}

#[test]
fn texts_give_the_frame_its_value_and_share() {
    let g = small();
    assert_eq!(node_text(&g, 3), "b\n30 B · 30.0% of 100 B");
    assert_eq!(node_text(&g, 99), "");
    let mut l = small();
    l.unit = FlameUnit::ByteEntries;
    l.nodes[2].self_value = 5;
    assert_eq!(node_text(&l, 2), "a\n60 B × entries · 60.0% of 100 B × entries\n5 B × entries allocated here itself");
    assert_eq!(title(FlameSource::Live(Moment::Peak), &g), "Live at the peak: 100 B");
    assert_eq!(title(FlameSource::Live(Moment::Entry(4)), &g), "Live after entry 4: 100 B");
}

#[test]
fn grouping_the_first_level_asks_for_a_graph_and_drops_the_focus() {
    let mut f = FlameState::default();
    assert_eq!(f.apply(FlameInput::ByGroup(false), None), FlameChange::None, "already by frame");
    assert_eq!(f.apply(FlameInput::ByGroup(true), None), FlameChange::Graph);
    assert!(f.by_group);
    f.focus = vec!["forward".into()];
    f.hover = Some(3);
    assert_eq!(f.apply(FlameInput::ByGroup(false), None), FlameChange::Focus, "the focus and its highlight go");
    assert!(!f.by_group && f.focus.is_empty() && f.hover.is_none());
}

/// By `metadata:phase`, the graph's first level is the phases, and a focused phase highlights
/// its allocations live at the peak, with the pointer reading that phase's bytes.
#[test]
fn the_graph_by_group_and_its_highlight() {
    static LAYERS: &[u8] = include_bytes!("../../../../tests/data/real/metadata_layers.pickle");
    let mut s = crate::test_state::open_state(LAYERS, "layers.pickle", 15_000, ViewState::default().minimap_css);
    s.view = crate::view::View::FlameGraph;
    s.analysis.group_by = memviz_core::analysis::grouping::GroupBy::Metadata(Some("phase".into()));
    let mut d = crate::derived::Derived::default();
    d.refresh(&s);
    let by_frame = d.flame_of(&s).expect("by frame").graph.nodes.len();
    s.flame.apply(FlameInput::ByGroup(true), None);
    assert!(d.flame_of(&s).is_none(), "the graph by frame is not the one asked for");
    d.refresh(&s);
    let g = &d.flame_of(&s).expect("by phase").graph;
    assert_ne!(g.nodes.len(), by_frame);
    let fwd = g.nodes[0].children.iter().copied().find(|&c| g.nodes[c as usize].name == "forward").expect("forward");
    assert_eq!(g.nodes[fwd as usize].value, 120_995_840, "the Live set's figure for the phase at the peak");
    let graph = d.flame_of(&s).map(|f| f.graph.clone());
    assert_eq!(s.flame.apply(FlameInput::Click(fwd), graph.as_ref()), FlameChange::Focus);
    let h = d.flame_highlight(&s).expect("a highlight");
    let f = s.file().expect("file");
    let bytes: u64 = h.elements.iter().map(|&e| f.plot.layout.elements[e.as_usize()].size_bytes).sum();
    assert_eq!((bytes, h.elements.len()), (120_995_840, 45));
    assert!(h.group.is_some(), "a group's own box");
}
