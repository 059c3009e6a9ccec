//! The effects that need only the page's state and what is derived from it, carried out here so
//! that the page is left with those a browser must carry out (a layout in a worker, a download,
//! a stored choice, the DOM of a view shown): a row's highlight, a step to a search match, the
//! Categories chart of a grouping, the cursor on a cited entry, an input of the flame view.

use crate::derived::Derived;
use crate::state::flame::FlameChange;
use crate::state::{Effect, PanelInput, ViewState};

/// Carries out `effect` if it needs only `s` and `d`; gives it back otherwise.
pub fn resolve(s: &mut ViewState, d: &mut Derived, effect: Effect) -> Option<Effect> {
    match effect {
        Effect::Highlight(action) => {
            let h = d.highlight_of(s, action);
            s.toggle_highlight(h);
        }
        Effect::StepMatch(by) => {
            let elements = d.matches_of(s).map(|m| std::rc::Rc::clone(&m.elements))?;
            s.step_match(&elements, by);
        }
        Effect::GroupTimeline => {
            if let Some((name, tl)) = d.group_timeline_of(s) {
                s.set_profile(name, tl);
            }
        }
        Effect::Cursor(entry) => s.toggle_cursor(entry),
        Effect::Panel(PanelInput::Flame(input)) => {
            d.ensure_flame(s);
            let graph = d.flame_of(s).map(|f| &f.graph);
            if s.apply_flame(input, graph) == FlameChange::Focus {
                // The focused frame's allocations are highlighted in the other views.
                let h = d.flame_highlight(s);
                s.follow_flame_focus(h);
            }
        }
        other => return Some(other),
    }
    None
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
