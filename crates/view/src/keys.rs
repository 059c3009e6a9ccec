//! Keys, wheel and pointer gestures as plain values: which key is which command, how far a
//! wheel zooms, what counts as a click. The page turns DOM events into these at its edge.

/// Which canvas a pointer event happened on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// The main timeline.
    Plot,
    /// The overview below it.
    Minimap,
}

/// A keyboard command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Zoom in around the centre.
    ZoomIn,
    /// Zoom out around the centre.
    ZoomOut,
    /// Move the window left.
    PanLeft,
    /// Move the window right.
    PanRight,
    /// Show everything.
    Reset,
    /// Forget the pinned allocation.
    Unpin,
    /// Pin the next search match and bring it into view.
    NextMatch,
    /// Pin the previous search match and bring it into view.
    PrevMatch,
    /// Show or hide the keyboard help.
    Help,
    /// Select the next allocation in time (the one allocated after the selected one).
    NextAllocation,
    /// Select the previous allocation in time.
    PrevAllocation,
    /// Select the allocation stacked above the selected one, at the selection's entry.
    SelectAbove,
    /// Select the allocation stacked below the selected one.
    SelectBelow,
    /// Pin the selected allocation.
    PinSelection,
    /// Open the previous rank of a run.
    PrevRank,
    /// Open the next rank of a run.
    NextRank,
}

impl Command {
    /// Whether the command acts only while the timeline has the keyboard focus (elsewhere its
    /// key keeps its usual meaning: arrows scroll, Enter presses a button).
    pub fn needs_plot_focus(self) -> bool {
        matches!(
            self,
            Command::NextAllocation
                | Command::PrevAllocation
                | Command::SelectAbove
                | Command::SelectBelow
                | Command::PinSelection
        )
    }
}

/// The command for a `KeyboardEvent.key`, ignoring keys pressed with Ctrl, Alt or Meta (browser
/// shortcuts).
pub fn command_for_key(key: &str, ctrl_alt_meta: bool) -> Option<Command> {
    if ctrl_alt_meta {
        return None;
    }
    Some(match key {
        "+" | "=" => Command::ZoomIn,
        "-" | "_" => Command::ZoomOut,
        "ArrowLeft" => Command::PanLeft,
        "ArrowRight" => Command::PanRight,
        "0" | "Home" => Command::Reset,
        "Escape" => Command::Unpin,
        "n" => Command::NextMatch,
        "N" => Command::PrevMatch,
        "?" => Command::Help,
        "." | ">" => Command::NextAllocation,
        "," | "<" => Command::PrevAllocation,
        "ArrowUp" => Command::SelectAbove,
        "ArrowDown" => Command::SelectBelow,
        "Enter" => Command::PinSelection,
        "[" => Command::PrevRank,
        "]" => Command::NextRank,
        _ => return None,
    })
}

/// A wheel delta in CSS px, whatever `WheelEvent.deltaMode` it came in (0 px, 1 lines, 2 pages).
pub fn wheel_delta_px(delta: f64, delta_mode: u32) -> f64 {
    match delta_mode {
        1 => delta * 16.0,
        2 => delta * 400.0,
        _ => delta,
    }
}

/// How much a wheel delta zooms: the window width is multiplied by this (< 1 zooms in).
pub fn wheel_zoom_factor(delta_y_px: f64) -> f64 {
    (delta_y_px.clamp(-600.0, 600.0) * 0.002).exp()
}

/// Window width factor of one +/- key press.
pub const KEY_ZOOM_FACTOR: f64 = 0.7;

/// Share of the window one arrow key press moves it by.
pub const KEY_PAN_SHARE: f64 = 0.15;

/// A pointer that moved less than this (CSS px) between down and up clicked.
pub const CLICK_SLOP_PX: f64 = 4.0;

/// Whether a press and release this far apart count as a click.
pub fn is_click(down: (f64, f64), up: (f64, f64)) -> bool {
    (down.0 - up.0).hypot(down.1 - up.1) < CLICK_SLOP_PX
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn every_key_of_the_help_has_its_command() {
        for (k, c) in [
            ("+", Command::ZoomIn),
            ("=", Command::ZoomIn),
            ("-", Command::ZoomOut),
            ("_", Command::ZoomOut),
            ("ArrowLeft", Command::PanLeft),
            ("ArrowRight", Command::PanRight),
            ("0", Command::Reset),
            ("Home", Command::Reset),
            ("Escape", Command::Unpin),
            (".", Command::NextAllocation),
            (",", Command::PrevAllocation),
            ("ArrowUp", Command::SelectAbove),
            ("ArrowDown", Command::SelectBelow),
            ("Enter", Command::PinSelection),
            ("[", Command::PrevRank),
            ("]", Command::NextRank),
        ] {
            assert_eq!(command_for_key(k, false), Some(c), "{k}");
            assert_eq!(command_for_key(k, true), None, "Ctrl/Alt/Meta+{k} is the browser's");
        }
    }

    #[test]
    fn other_keys_are_left_to_the_page() {
        for k in ["a", "Tab", " ", "1", "F5", "w", ""] {
            assert_eq!(command_for_key(k, false), None, "{k:?}");
        }
    }

    #[test]
    fn selection_keys_act_on_the_focused_plot_only_and_clash_with_no_other_key() {
        let selection = [".", ",", "ArrowUp", "ArrowDown", "Enter"];
        for k in selection {
            let c = command_for_key(k, false).expect("a command");
            assert!(c.needs_plot_focus(), "{k}");
        }
        for k in ["+", "-", "ArrowLeft", "ArrowRight", "0", "Home", "Escape", "n", "N", "?"] {
            let c = command_for_key(k, false).expect("a command");
            assert!(!c.needs_plot_focus(), "{k}");
        }
    }

    #[test]
    fn wheel_zoom_is_bounded_and_monotone() {
        assert_eq!(wheel_zoom_factor(0.0), 1.0);
        assert_eq!(wheel_zoom_factor(600.0), wheel_zoom_factor(1e12));
        assert_eq!(wheel_zoom_factor(-600.0), wheel_zoom_factor(-1e12));
        let mut last = 0.0;
        for d in [-600.0, -100.0, -1.0, 0.0, 1.0, 100.0, 600.0] {
            let f = wheel_zoom_factor(d);
            assert!(f > last, "{d}");
            last = f;
        }
    }

    #[test]
    fn a_click_is_a_press_and_release_close_together() {
        assert!(is_click((10.0, 10.0), (10.0, 10.0)));
        assert!(is_click((10.0, 10.0), (12.0, 12.5)));
        assert!(!is_click((10.0, 10.0), (10.0, 10.0 + CLICK_SLOP_PX)));
        assert!(!is_click((10.0, 10.0), (13.0, 13.0)));
    }

    #[test]
    fn keys_map_to_commands() {
        assert_eq!(command_for_key("+", false), Some(Command::ZoomIn));
        assert_eq!(command_for_key("=", false), Some(Command::ZoomIn));
        assert_eq!(command_for_key("-", false), Some(Command::ZoomOut));
        assert_eq!(command_for_key("ArrowLeft", false), Some(Command::PanLeft));
        assert_eq!(command_for_key("ArrowRight", false), Some(Command::PanRight));
        assert_eq!(command_for_key("0", false), Some(Command::Reset));
        assert_eq!(command_for_key("Escape", false), Some(Command::Unpin));
        assert_eq!(command_for_key("+", true), None);
        assert_eq!(command_for_key("a", false), None);
    }

    #[test]
    fn wheel_zoom_is_symmetric() {
        assert_eq!(wheel_delta_px(3.0, 1), 48.0);
        assert_eq!(wheel_delta_px(1.0, 2), 400.0);
        assert_eq!(wheel_delta_px(-100.0, 0), -100.0);
        let f = wheel_zoom_factor(100.0);
        assert!(f > 1.0);
        assert!((f * wheel_zoom_factor(-100.0) - 1.0).abs() < 1e-12);
        assert!(wheel_zoom_factor(1e9) < 4.0);
        assert!(is_click((0.0, 0.0), (2.0, 2.0)));
        assert!(!is_click((0.0, 0.0), (10.0, 0.0)));
    }
}
