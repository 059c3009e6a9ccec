//! The views a snapshot can be shown in. Each view has a name, a `<select>` value and its own
//! drawing function (`render.rs`); new views add a variant here and a match arm there.

/// A way of looking at a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum View {
    /// Stacked live allocations over time (PyTorch's "Active Memory Timeline").
    #[default]
    ActiveMemoryTimeline,
    /// Live allocations with private pools drawn as envelopes of their reserved memory.
    AllocatedMemoryPools,
    /// Stacked cached segments over time (PyTorch's "Active Cached Segment Timeline").
    ActiveCachedSegmentTimeline,
    /// Stacked mapped ranges of expandable segments over time.
    MappedPagesTimeline,
    /// The event list and the segment map after the selected event.
    AllocatorStateHistory,
    /// The allocator settings recorded in the snapshot.
    AllocatorSettings,
    /// A flame graph of the live set at a moment, or of bytes × lifetime over the window.
    FlameGraph,
}

impl View {
    /// Every view, in menu order.
    pub const ALL: [View; 7] = [
        View::ActiveMemoryTimeline,
        View::AllocatedMemoryPools,
        View::ActiveCachedSegmentTimeline,
        View::MappedPagesTimeline,
        View::AllocatorStateHistory,
        View::AllocatorSettings,
        View::FlameGraph,
    ];

    /// Name shown in the menu.
    pub fn label(self) -> &'static str {
        match self {
            View::ActiveMemoryTimeline => "Active Memory Timeline",
            View::AllocatedMemoryPools => "Allocated Memory (incl. Private Pools)",
            View::ActiveCachedSegmentTimeline => "Active Cached Segment Timeline",
            View::MappedPagesTimeline => "Mapped Pages Timeline",
            View::AllocatorStateHistory => "Allocator State History",
            View::AllocatorSettings => "Allocator Settings",
            View::FlameGraph => "Flame Graph",
        }
    }

    /// Value of its `<option>`.
    pub fn value(self) -> &'static str {
        match self {
            View::ActiveMemoryTimeline => "active-memory-timeline",
            View::AllocatedMemoryPools => "allocated-memory-private-pools",
            View::ActiveCachedSegmentTimeline => "active-cached-segment-timeline",
            View::MappedPagesTimeline => "mapped-pages-timeline",
            View::AllocatorStateHistory => "allocator-state-history",
            View::AllocatorSettings => "allocator-settings",
            View::FlameGraph => "flame-graph",
        }
    }

    /// The view of an `<option>` value.
    pub fn from_value(s: &str) -> Option<View> {
        View::ALL.into_iter().find(|v| v.value() == s)
    }

    /// What the layout plots for this view.
    pub fn mode(self) -> memviz_core::timeline::Mode {
        match self {
            View::ActiveCachedSegmentTimeline => memviz_core::timeline::Mode::Segments,
            View::MappedPagesTimeline => memviz_core::timeline::Mode::MappedPages,
            View::ActiveMemoryTimeline
            | View::AllocatedMemoryPools
            | View::AllocatorStateHistory
            | View::AllocatorSettings
            | View::FlameGraph => memviz_core::timeline::Mode::Allocations,
        }
    }

    /// Whether the view is a page panel (`#panel`) rather than the timeline canvases.
    pub fn is_panel(self) -> bool {
        matches!(self, View::AllocatorStateHistory | View::AllocatorSettings | View::FlameGraph)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        for v in View::ALL {
            assert_eq!(View::from_value(v.value()), Some(v));
            assert!(!v.label().is_empty());
        }
        assert_eq!(View::from_value(""), None);
    }
}
