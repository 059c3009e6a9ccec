//! The flame view: its user state ([`FlameState`]: the mode, the focused frame, the hovered box),
//! what its inputs do, which graph it shows for the state of the page (the live set at the cursor,
//! the pinned allocation's alloc or the Live tab's moment, else at the peak; or bytes × lifetime
//! over the visible window; the Live set's grouping as the first level or not), and where its
//! boxes go. The graph itself is
//! [`memviz_core::analysis::flame::flame_of`] with Python frames first; the page draws the boxes
//! [`boxes`] gives and changes nothing.

use memviz_core::analysis::flame::{node_at_path, node_path, FlameGraph, FlameSource, FlameUnit};
use memviz_core::analysis::Moment;
use memviz_core::format::human_size;

use super::{OpenFile, Target, ViewState};

/// Boxes narrower than this share of the view's width are left out (with what is under them).
pub const MIN_BOX_SHARE: f64 = 0.001;
/// Most boxes drawn.
pub const MAX_BOXES: usize = 4000;

/// What the flame graph weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub enum FlameMode {
    /// The live set at one moment, in bytes.
    #[default]
    Live,
    /// Bytes × entries live over the visible window.
    Lifetime,
}

impl FlameMode {
    /// Its value in the URL and in the page's controls.
    pub fn value(self) -> &'static str {
        match self {
            FlameMode::Live => "live",
            FlameMode::Lifetime => "lifetime",
        }
    }

    /// The mode of a value.
    pub fn from_value(s: &str) -> Option<FlameMode> {
        [FlameMode::Live, FlameMode::Lifetime].into_iter().find(|m| m.value() == s)
    }
}

/// The flame view's state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlameState {
    /// What is weighed.
    pub mode: FlameMode,
    /// The focused frame as its labels from the root (empty: none); it fills the width, and its
    /// allocations are highlighted in the other views.
    pub focus: Vec<String>,
    /// The box under the pointer (a node of the graph shown).
    pub hover: Option<u32>,
    /// Whether the first level is the Live set's grouping (the user's line, a metadata value, ...).
    pub by_group: bool,
}

/// What the user did in the flame view.
#[derive(Clone, Debug, PartialEq)]
pub enum FlameInput {
    /// Weigh by this.
    Mode(FlameMode),
    /// Put the Live set's grouping as the first level, or not.
    ByGroup(bool),
    /// A click on a node of the graph shown: focus it, or on the focused one (or the root),
    /// go back to the whole graph.
    Click(u32),
    /// The pointer is over a node, or over none.
    Hover(Option<u32>),
}

/// What an input changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlameChange {
    /// Nothing the page must act on.
    None,
    /// Another graph is needed (the mode changed).
    Graph,
    /// The focus changed: highlight its allocations (none when unfocused).
    Focus,
}

impl FlameState {
    /// Applies an input; `graph` is the graph shown (for the nodes a click names).
    pub fn apply(&mut self, input: FlameInput, graph: Option<&FlameGraph>) -> FlameChange {
        match input {
            FlameInput::Mode(m) => {
                if m == self.mode {
                    return FlameChange::None;
                }
                self.mode = m;
                self.hover = None;
                FlameChange::Graph
            }
            FlameInput::ByGroup(on) => {
                if on == self.by_group {
                    return FlameChange::None;
                }
                self.by_group = on;
                self.hover = None;
                // The graph's paths change: the focus goes, with its highlight.
                if self.focus.is_empty() {
                    FlameChange::Graph
                } else {
                    self.focus.clear();
                    FlameChange::Focus
                }
            }
            FlameInput::Hover(n) => {
                self.hover = n;
                FlameChange::None
            }
            FlameInput::Click(n) => {
                let Some(g) = graph.filter(|g| (n as usize) < g.nodes.len()) else { return FlameChange::None };
                let path = node_path(g, n);
                self.focus = if path == self.focus { Vec::new() } else { path };
                FlameChange::Focus
            }
        }
    }

    /// The focused node of `g`, when it has the focused path.
    pub fn focus_node(&self, g: &FlameGraph) -> Option<u32> {
        if self.focus.is_empty() {
            return None;
        }
        node_at_path(g, &self.focus)
    }
}

/// The moment of the live flame graph: the cursor on a cited entry, else the pinned allocation's
/// alloc entry, else the Live tab's moment, else the peak.
pub fn live_moment(s: &ViewState) -> Moment {
    if let Some(e) = s.cursor_entry {
        return Moment::Entry(e);
    }
    let pinned_alloc = match (s.pinned, s.file()) {
        (Some(Target::Element(e)), Some(f)) => f.plot.layout.element(e).and_then(|el| el.alloc_row),
        _ => None,
    };
    pinned_alloc.map(Moment::Entry).or(s.analysis.moment).unwrap_or(Moment::Peak)
}

/// Trace rows `[first, last]` under the visible window of `f`, or none for an empty trace.
pub fn window_rows(f: &OpenFile) -> Option<(u32, u32)> {
    let rows = f.snap.devices.get(f.plot.device_pos)?.trace.len();
    if rows == 0 {
        return None;
    }
    let last_row = rows as u32 - 1;
    let xm = f.xmap();
    let layout = &f.plot.layout;
    let first = layout.row_at(xm.step(f.viewport.x0)).unwrap_or(0).min(last_row);
    let last = layout.row_at(xm.step(f.viewport.x1)).unwrap_or(0).clamp(first, last_row);
    Some((first, last))
}

/// What the flame view shows for the state: the moment or window of its mode.
pub fn source(s: &ViewState) -> Option<FlameSource> {
    let f = s.file()?;
    Some(match s.flame.mode {
        FlameMode::Live => FlameSource::Live(live_moment(s)),
        FlameMode::Lifetime => {
            let (first, last) = window_rows(f)?;
            FlameSource::Lifetime { first, last }
        }
    })
}

/// One box of the graph: a node at a depth, across a share `[x0, x1)` of the width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlameBox {
    /// Node of the graph.
    pub node: u32,
    /// Level from the top (the root is 0).
    pub depth: u32,
    /// Left edge, share of the width.
    pub x0: f64,
    /// Right edge, share of the width.
    pub x1: f64,
    /// An ancestor of the focused node (drawn across the width, dimmed).
    pub above_focus: bool,
}

/// The boxes of `g`, root at the top, children left to right largest first. With a focus, the
/// focused node fills the width and its ancestors are drawn across it above; boxes narrower
/// than `min_share` are left out with everything under them; at most `max_boxes`. Never recurses.
pub fn boxes(g: &FlameGraph, focus: Option<u32>, min_share: f64, max_boxes: usize) -> Vec<FlameBox> {
    let mut out = Vec::new();
    let top = focus.filter(|&f| (f as usize) < g.nodes.len()).unwrap_or(0);
    // The focused node's ancestors, root first.
    let mut chain = Vec::new();
    let mut cur = g.nodes.get(top as usize).and_then(|n| n.parent);
    while let Some(c) = cur {
        chain.push(c);
        cur = g.nodes.get(c as usize).and_then(|n| n.parent);
    }
    chain.reverse();
    for (d, &n) in chain.iter().enumerate() {
        out.push(FlameBox { node: n, depth: d as u32, x0: 0.0, x1: 1.0, above_focus: true });
    }
    let Some(top_value) = g.nodes.get(top as usize).map(|n| n.value) else { return out };
    if top_value == 0 {
        return out;
    }
    let scale = 1.0 / top_value as f64;
    let mut stack = vec![(top, chain.len() as u32, 0.0f64)];
    while let Some((n, depth, x0)) = stack.pop() {
        if out.len() >= max_boxes {
            break;
        }
        let Some(node) = g.nodes.get(n as usize) else { continue };
        let w = node.value as f64 * scale;
        if w < min_share {
            continue;
        }
        out.push(FlameBox { node: n, depth, x0, x1: x0 + w, above_focus: false });
        let mut x = x0;
        let mut kids = Vec::with_capacity(node.children.len());
        for &c in &node.children {
            let cw = g.nodes.get(c as usize).map_or(0.0, |k| k.value as f64 * scale);
            kids.push((c, depth + 1, x));
            x += cw;
        }
        // Popped in order: the largest child first.
        stack.extend(kids.into_iter().rev());
    }
    out
}

/// A value in the graph's unit: `1.5 GiB`, or `1.5 GiB × entries` for bytes × lifetime.
pub fn value_text(unit: FlameUnit, value: u128) -> String {
    let size = human_size(value as f64);
    match unit {
        FlameUnit::Bytes => size,
        FlameUnit::ByteEntries => format!("{size} × entries"),
    }
}

/// What the pointer over a node says: the frame, its value and its share of the whole.
pub fn node_text(g: &FlameGraph, node: u32) -> String {
    let Some(n) = g.nodes.get(node as usize) else { return String::new() };
    let total = g.nodes.first().map_or(0, |r| r.value);
    let share = if total > 0 { 100.0 * n.value as f64 / total as f64 } else { 0.0 };
    let mut s = format!("{}\n{} · {share:.1}% of {}", n.name, value_text(g.unit, n.value), value_text(g.unit, total));
    if n.self_value > 0 && !n.children.is_empty() {
        s.push_str(&format!("\n{} allocated here itself", value_text(g.unit, n.self_value)));
    }
    s
}

/// The line above the graph: what it weighs, and where.
pub fn title(source: FlameSource, g: &FlameGraph) -> String {
    let total = value_text(g.unit, g.nodes.first().map_or(0, |r| r.value));
    match source {
        FlameSource::Live(Moment::Peak) => format!("Live at the peak: {total}"),
        FlameSource::Live(Moment::Start) => format!("Live before the first entry: {total}"),
        FlameSource::Live(Moment::End) => format!("Live after the last entry: {total}"),
        FlameSource::Live(Moment::Entry(e)) => format!("Live after entry {e}: {total}"),
        FlameSource::Lifetime { first, last } => {
            format!("Bytes × lifetime over entries {first}–{last} (the visible window): {total}")
        }
    }
}

#[cfg(test)]
#[path = "flame_tests.rs"]
mod tests;
