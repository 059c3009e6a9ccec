//! The page's chrome around the timeline: the keys help button, the theme control (`#theme-toggle`, following
//! `prefers-color-scheme` until the user picks light or dark; the choice is kept in
//! localStorage), the details panel's fold button (`#stack-toggle`, also kept) and its grip
//! (`#stack-grip`, dragged to make the panel taller), and the banner
//! above the plot that says when a trace starts mid-run (`#coverage-note`, from
//! [`memviz_core::coverage`]). [`bindings`] says what their events mean, [`sync`] writes them
//! from the state (the theme as `<html data-theme>`, which the CSS custom properties follow),
//! and [`stored`] / [`store`] read and keep the user's choices.

use memviz_view::state::PageInput;
use memviz_view::theme::{ThemeChoice, ThemeState};
use wasm_bindgen::JsCast;
use web_sys::HtmlElement;

use crate::dom::Ui;
use crate::input::{bind, Binding, Command, Input};
use crate::paint::Frame;
use memviz_view::state::TimelineInput;

/// localStorage key of the theme choice (`auto`, `light`, `dark`).
pub const THEME_KEY: &str = "memviz-theme";
/// localStorage key of the folded details panel (`1` when folded).
pub const STACK_KEY: &str = "memviz-stack-collapsed";
/// The media query of the system's dark theme.
const DARK_QUERY: &str = "(prefers-color-scheme: dark)";

/// The chrome's elements and what was written to them.
#[derive(Default)]
pub struct Memo {
    theme_button: Option<HtmlElement>,
    stack_button: Option<HtmlElement>,
    banner: Option<HtmlElement>,
    /// (theme shown, button label) written.
    theme: Option<(&'static str, String)>,
    stack_collapsed: Option<bool>,
    banner_text: Option<Option<String>>,
}

fn element(ui: &Ui, id: &str) -> Option<HtmlElement> {
    ui.document.get_element_by_id(id)?.dyn_into().ok()
}

/// Finds the chrome's elements; the theme button's and the fold button's clicks, and changes
/// of the system's theme, and what they mean.
pub fn bindings(ui: &Ui, memo: &mut Memo) -> Vec<Binding> {
    memo.theme_button = element(ui, "theme-toggle");
    memo.stack_button = element(ui, "stack-toggle");
    memo.banner = element(ui, "coverage-note");
    let mut l = Vec::new();
    if let Some(b) = &memo.theme_button {
        l.push(bind(b.as_ref(), "click", |_: &web_sys::Event| Some(Input::Page(PageInput::CycleTheme))));
    }
    if let Some(b) = &memo.stack_button {
        l.push(bind(b.as_ref(), "click", |_: &web_sys::Event| Some(Input::Page(PageInput::ToggleStack))));
    }
    if let Some(b) = element(ui, "help-button") {
        l.push(bind(b.as_ref(), "click", |_: &web_sys::Event| {
            Some(Input::Page(PageInput::Timeline(TimelineInput::Key(Command::Help))))
        }));
    }
    if let Ok(Some(q)) = ui.window.match_media(DARK_QUERY) {
        l.push(bind(q.as_ref(), "change", |e: &web_sys::MediaQueryListEvent| {
            Some(Input::Page(PageInput::SystemTheme(e.matches())))
        }));
    }
    if let Some(grip) = element(ui, "stack-grip") {
        l.extend(grip_bindings(ui, &grip));
    }
    l
}

/// Smallest height of the details panel, CSS px (as `#stack`'s `min-height`).
const STACK_MIN_PX: f64 = 44.0;
/// Largest share of the window's height the details panel may take.
const STACK_MAX_SHARE: f64 = 0.7;
/// Height a key press on the grip adds or takes, CSS px.
const STACK_KEY_STEP_PX: f64 = 24.0;

/// The grip above the details panel: dragged (or moved with ↑ ↓), it makes the panel taller or
/// shorter. The panel sits at the bottom of the window, where the browser's own resize handle
/// cannot be pulled further down; like that handle this is the DOM's alone and gives no
/// [`Input`]: the canvases above follow through the resize observer.
fn grip_bindings(ui: &Ui, grip: &HtmlElement) -> Vec<Binding> {
    let drag: std::rc::Rc<std::cell::Cell<Option<(f64, f64)>>> = std::rc::Rc::default();
    let stack = ui.stack.clone();
    let window = ui.window.clone();
    let set_height = move |stack: &HtmlElement, h: f64| {
        let max = window.inner_height().ok().and_then(|v| v.as_f64()).unwrap_or(800.0) * STACK_MAX_SHARE;
        let h = h.min(max).max(STACK_MIN_PX);
        let _ = stack.style().set_property("height", &format!("{h:.0}px"));
    };
    let (d0, s0, g0) = (drag.clone(), stack.clone(), grip.clone());
    let down = bind(grip.as_ref(), "pointerdown", move |e: &web_sys::PointerEvent| {
        let _ = g0.set_pointer_capture(e.pointer_id());
        d0.set(Some((f64::from(e.client_y()), s0.get_bounding_client_rect().height())));
        e.prevent_default();
        None
    });
    let (d1, s1, h1) = (drag.clone(), stack.clone(), set_height.clone());
    let moved = bind(grip.as_ref(), "pointermove", move |e: &web_sys::PointerEvent| {
        if let Some((y0, h0)) = d1.get() {
            h1(&s1, h0 + y0 - f64::from(e.client_y()));
        }
        None
    });
    let d2 = drag.clone();
    let up = bind(grip.as_ref(), "pointerup", move |_: &web_sys::PointerEvent| {
        d2.set(None);
        None
    });
    let cancel = bind(grip.as_ref(), "pointercancel", move |_: &web_sys::PointerEvent| {
        drag.set(None);
        None
    });
    let key = bind(grip.as_ref(), "keydown", move |e: &web_sys::KeyboardEvent| {
        let step = match e.key().as_str() {
            "ArrowUp" => STACK_KEY_STEP_PX,
            "ArrowDown" => -STACK_KEY_STEP_PX,
            _ => return None,
        };
        e.prevent_default();
        set_height(&stack, stack.get_bounding_client_rect().height() + step);
        None
    });
    vec![down, moved, up, cancel, key]
}

/// The user's kept choices and the system's theme: (theme, details panel folded).
pub fn stored(ui: &Ui) -> (ThemeState, bool) {
    let storage = ui.window.local_storage().ok().flatten();
    let get = |k: &str| storage.as_ref().and_then(|s| s.get_item(k).ok().flatten());
    let choice = get(THEME_KEY).and_then(|v| ThemeChoice::parse(&v)).unwrap_or_default();
    let system_dark = ui.window.match_media(DARK_QUERY).ok().flatten().is_some_and(|q| q.matches());
    (ThemeState { choice, system_dark }, get(STACK_KEY).as_deref() == Some("1"))
}

/// Keeps one of the user's choices (where storage is refused, it lasts as long as the page).
pub fn store(ui: &Ui, key: &str, value: &str) {
    if let Some(s) = ui.window.local_storage().ok().flatten() {
        let _ = s.set_item(key, value);
    }
}

/// Brings the chrome in line with the state.
pub fn sync(fr: &Frame<'_>, memo: &mut Memo) {
    let s = fr.state;
    let theme = s.theme().theme().name();
    let label = s.theme().label();
    if memo.theme.as_ref().is_none_or(|(t, l)| *t != theme || *l != label) {
        if let Some(root) = fr.ui.document.document_element() {
            let _ = root.set_attribute("data-theme", theme);
        }
        if let Some(b) = &memo.theme_button {
            let icon = match s.theme().choice {
                ThemeChoice::Auto => "◐",
                ThemeChoice::Light => "☀",
                ThemeChoice::Dark => "☾",
            };
            b.set_text_content(Some(icon));
            b.set_title(&format!("{label} · click for {}", s.theme().choice.next().value()));
            let _ = b.set_attribute("aria-label", &label);
            let _ = b.set_attribute("data-choice", s.theme().choice.value());
        }
        memo.theme = Some((theme, label));
    }
    if memo.stack_collapsed != Some(s.stack_collapsed()) {
        let _ = fr.ui.main.class_list().toggle_with_force("stack-collapsed", s.stack_collapsed());
        if let Some(b) = &memo.stack_button {
            let _ = b.set_attribute("aria-expanded", if s.stack_collapsed() { "false" } else { "true" });
            b.set_title(if s.stack_collapsed() { "Show the details panel" } else { "Hide the details panel" });
        }
        memo.stack_collapsed = Some(s.stack_collapsed());
    }
    let text = banner_text(fr);
    if memo.banner_text.as_ref() != Some(&text) {
        if let Some(b) = &memo.banner {
            if let Some(t) = &text {
                b.set_text_content(Some(t));
            }
            b.set_hidden(text.is_none());
        }
        memo.banner_text = Some(text);
    }
}

/// The banner's text: on a timeline that starts mid-run, why (the device's coverage) and what
/// to do. A trace without history says so in its own note above the column instead.
fn banner_text(fr: &Frame<'_>) -> Option<String> {
    let s = fr.state;
    let f = s.file().filter(|f| s.loading().is_none() && !f.is_moment())?;
    let c = fr.derived.coverage_of(s)?;
    let reason = c.reason()?;
    let device = f.snap.devices.get(f.plot.device_pos).map_or_else(String::new, |d| d.name());
    Some(match c.empty {
        Some(_) => format!("No history on {device}: {reason}."),
        None => format!("Partial history ({device}): {reason}."),
    })
}
