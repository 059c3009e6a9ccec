//! The views a snapshot can be shown in. Each view has a name, a `<select>` value and its own
//! drawing function (`render.rs`); new views add a variant here and a match arm there.

/// A way of looking at a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum View {
    /// Stacked live allocations over time (PyTorch's "Active Memory Timeline").
    #[default]
    ActiveMemoryTimeline,
}

impl View {
    /// Every view, in menu order.
    pub const ALL: [View; 1] = [View::ActiveMemoryTimeline];

    /// Name shown in the menu.
    pub fn label(self) -> &'static str {
        match self {
            View::ActiveMemoryTimeline => "Active Memory Timeline",
        }
    }

    /// Value of its `<option>`.
    pub fn value(self) -> &'static str {
        match self {
            View::ActiveMemoryTimeline => "active-memory-timeline",
        }
    }

    /// The view of an `<option>` value.
    pub fn from_value(s: &str) -> Option<View> {
        View::ALL.into_iter().find(|v| v.value() == s)
    }

    /// What the layout plots for this view.
    pub fn mode(self) -> memviz_core::timeline::Mode {
        match self {
            View::ActiveMemoryTimeline => memviz_core::timeline::Mode::Allocations,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn values_round_trip() {
        for v in View::ALL {
            assert_eq!(View::from_value(v.value()), Some(v));
            assert!(!v.label().is_empty());
        }
        assert_eq!(View::from_value(""), None);
    }
}
