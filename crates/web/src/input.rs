//! What the user did, as plain values. DOM events are turned into [`Input`]s at the edge
//! (`app.rs`); the handlers only ever see these.

use crate::view::View;
use crate::xmap::XAxis;

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
}

/// A source of snapshot bytes.
#[derive(Clone, Debug)]
pub enum Source {
    /// A file the user picked or dropped.
    File(web_sys::File),
    /// The snapshot built into the page.
    Demo,
    /// Snapshot bytes the page came with (pages written by `memviz trace-plot` and friends).
    Bytes {
        /// File name to show.
        name: String,
        /// The snapshot.
        bytes: std::rc::Rc<[u8]>,
    },
}

/// One user action.
#[derive(Clone, Debug)]
pub enum Input {
    /// Something asked of the analysis panel.
    Analysis(crate::panels::Action),
    /// Wheel over a canvas: zoom x around the pointer.
    Wheel {
        /// Canvas.
        surface: Surface,
        /// Pointer x, CSS px from the canvas' left edge.
        x_px: f64,
        /// Vertical scroll in CSS px (positive: away from the user, zoom out).
        delta_y_px: f64,
    },
    /// A pointer button went down.
    PointerDown {
        /// Canvas.
        surface: Surface,
        /// x, CSS px.
        x_px: f64,
        /// y, CSS px.
        y_px: f64,
        /// Button (0: primary).
        button: i16,
    },
    /// The pointer moved.
    PointerMove {
        /// Canvas.
        surface: Surface,
        /// x, CSS px.
        x_px: f64,
        /// y, CSS px.
        y_px: f64,
    },
    /// A pointer button went up.
    PointerUp {
        /// Canvas.
        surface: Surface,
        /// x, CSS px.
        x_px: f64,
        /// y, CSS px.
        y_px: f64,
    },
    /// The pointer left a canvas.
    PointerLeave {
        /// Canvas.
        surface: Surface,
    },
    /// A keyboard command.
    Key(Command),
    /// The canvases changed size (or devicePixelRatio changed).
    Resize,
    /// Open snapshots.
    Open(Vec<Source>),
    /// Stop the load in progress (and drop the files queued after it).
    CancelLoad,
    /// Something is being dragged over the page (true) or left it (false).
    DragHover(bool),
    /// Show another loaded file.
    SelectFile(usize),
    /// Show another device (index into the snapshot's devices).
    SelectDevice(usize),
    /// Show another view.
    SelectView(View),
    /// The Detail slider moves (label only).
    PreviewDetail(usize),
    /// The Detail slider was released: lay out again.
    SetDetail(usize),
    /// Switch the x axis.
    SetXAxis(XAxis),
    /// Something in a panel view (`crate::views`).
    Panel(crate::views::PanelInput),
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
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn keys_map_to_commands() {
        assert_eq!(command_for_key("+", false), Some(Command::ZoomIn));
        assert_eq!(command_for_key("=", false), Some(Command::ZoomIn));
        assert_eq!(command_for_key("-", false), Some(Command::ZoomOut));
        assert_eq!(command_for_key("ArrowLeft", false), Some(Command::PanLeft));
        assert_eq!(
            command_for_key("ArrowRight", false),
            Some(Command::PanRight)
        );
        assert_eq!(command_for_key("0", false), Some(Command::Reset));
        assert_eq!(command_for_key("Escape", false), Some(Command::Unpin));
        assert_eq!(command_for_key("+", true), None);
        assert_eq!(command_for_key("a", false), None);
    }

    #[wasm_bindgen_test(unsupported = test)]
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
