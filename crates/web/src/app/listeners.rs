//! The page's DOM listeners: every DOM event becomes an [`Input`] through one helper,
//! [`listen_binding`], which installs the [`Binding`]s each part of the page gives (the toolbar's
//! and the canvases' are here); and the resize observer that measures the canvases again.

use super::tasks::with_app;
use super::App;
use crate::dom::Ui;
use crate::input;
use crate::input::{bind, Binding, Input, Source, Surface};
use gloo_events::{EventListener, EventListenerOptions};
use memviz_view::state::PageInput;
use memviz_view::state::TimelineInput;
use memviz_view::view::View;
use memviz_view::xmap::XAxis;
use std::cell::RefCell;
use std::rc::Weak;
use wasm_bindgen::prelude::*;
use web_sys::{
    DragEvent, Element, HtmlElement, HtmlInputElement, HtmlSelectElement, KeyboardEvent, PointerEvent, WheelEvent,
};

/// Makes the input of a pointer event from its surface and position (CSS px).
pub(crate) type PointerInput = fn(Surface, f64, f64) -> Input;

/// Installs a binding: the listener turns the DOM event into its [`Input`] and hands it to the
/// state (the only place where the page's listeners borrow the state).
pub fn listen_binding(weak: &Weak<RefCell<App>>, b: Binding) -> EventListener {
    let weak = weak.clone();
    let Binding { target, event, to_input } = b;
    EventListener::new_with_options(&target, event, EventListenerOptions::enable_prevent_default(), move |ev| {
        let Some(input) = to_input(ev) else { return };
        with_app(&weak, |app| app.handle(input));
    })
}

pub(crate) fn select_index(e: &web_sys::Event) -> Option<usize> {
    let s: HtmlSelectElement = e.target()?.dyn_into().ok()?;
    s.value().parse().ok()
}

/// The file menu's choice: a loaded file, or a released one (listed as "r<index>").
fn file_choice(e: &web_sys::Event) -> Option<Input> {
    let s: HtmlSelectElement = e.target()?.dyn_into().ok()?;
    match s.value().strip_prefix('r') {
        Some(j) => j.parse().ok().map(PageInput::ReopenFile).map(Input::Page),
        None => s.value().parse().ok().map(PageInput::SelectFile).map(Input::Page),
    }
}

pub(crate) fn input_number(e: &web_sys::Event) -> Option<usize> {
    let i: HtmlInputElement = e.target()?.dyn_into().ok()?;
    i.value().parse().ok()
}

pub(crate) fn files_of(list: Option<web_sys::FileList>) -> Vec<Source> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).map(Source::File).collect()
}

pub(crate) fn pointer(surface: Surface, e: &web_sys::MouseEvent) -> (Surface, f64, f64) {
    (surface, f64::from(e.offset_x()), f64::from(e.offset_y()))
}

/// Whether a key event comes from a control that uses the keys itself.
pub(crate) fn typing_in_control(e: &KeyboardEvent) -> bool {
    e.target()
        .and_then(|t| t.dyn_into::<Element>().ok())
        .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA"))
}

/// A cited trace entry anywhere but the analysis panel (which has its own click handler): the
/// cursor there.
fn entry_links(ui: &Ui) -> Binding {
    let doc: &web_sys::EventTarget = ui.document.as_ref();
    bind(doc, "click", |e: &web_sys::MouseEvent| {
        let el: Element = e.target()?.dyn_into().ok()?;
        let link = el.closest("button.entry-link[data-entry]").ok()??;
        if link.closest("#analysis").ok().flatten().is_some() {
            return None;
        }
        Some(Input::Page(PageInput::Cursor(link.get_attribute("data-entry")?.parse().ok()?)))
    })
}

/// The menus' and the Detail slider's bindings.
fn menu_bindings(ui: &Ui) -> Vec<Binding> {
    let mut l = Vec::new();
    l.push(bind(ui.file_select.as_ref(), "change", file_choice));
    l.push(bind(ui.device_select.as_ref(), "change", |e: &web_sys::Event| {
        select_index(e).map(PageInput::SelectDevice).map(Input::Page)
    }));
    l.push(bind(ui.view_select.as_ref(), "change", |e: &web_sys::Event| {
        let s: HtmlSelectElement = e.target()?.dyn_into().ok()?;
        View::from_value(&s.value()).map(PageInput::SelectView).map(Input::Page)
    }));
    l.push(bind(ui.detail.as_ref(), "input", |e: &web_sys::Event| {
        input_number(e).map(PageInput::PreviewDetail).map(Input::Page)
    }));
    l.push(bind(ui.detail.as_ref(), "change", |e: &web_sys::Event| {
        input_number(e).map(PageInput::SetDetail).map(Input::Page)
    }));
    l.push(bind(ui.x_axis_select.as_ref(), "change", |e: &web_sys::Event| {
        let s: HtmlSelectElement = e.target()?.dyn_into().ok()?;
        XAxis::from_value(&s.value()).map(|a| Input::Page(PageInput::Timeline(TimelineInput::SetXAxis(a))))
    }));
    l
}

/// The toolbar's, the window's and the canvases' events and what they mean.
pub(crate) fn install_listeners(ui: &Ui) -> Vec<Binding> {
    let mut l = Vec::new();
    let win: &web_sys::EventTarget = ui.window.as_ref();
    // Files.
    l.push(bind(ui.file_input.as_ref(), "change", |e: &web_sys::Event| {
        let input: HtmlInputElement = e.target()?.dyn_into().ok()?;
        let files = files_of(input.files());
        // Choosing the same file again must fire "change" again.
        input.set_value("");
        (!files.is_empty()).then_some(Input::Open(files))
    }));
    l.push(entry_links(ui));
    l.push(bind(ui.demo_button.as_ref(), "click", |_: &web_sys::Event| Some(Input::Open(vec![Source::Demo]))));
    l.push(bind(ui.cancel_button.as_ref(), "click", |_: &web_sys::Event| Some(Input::Page(PageInput::CancelLoad))));
    if let Some(h) = ui.document.get_element_by_id("help") {
        // A click outside the help's box closes it.
        l.push(bind(h.as_ref(), "click", |e: &web_sys::MouseEvent| {
            let on_backdrop = e.target().and_then(|t| t.dyn_into::<Element>().ok()).is_some_and(|t| t.id() == "help");
            on_backdrop.then_some(Input::Page(PageInput::Timeline(TimelineInput::Key(input::Command::Help))))
        }));
    }
    if let Some(b) = ui.document.get_element_by_id("close-file") {
        l.push(bind(b.as_ref(), "click", |_: &web_sys::Event| Some(Input::Page(PageInput::CloseFile))));
    }
    if let Some(b) = ui.document.get_element_by_id("load-card-cancel") {
        l.push(bind(b.as_ref(), "click", |_: &web_sys::Event| Some(Input::Page(PageInput::CancelLoad))));
    }
    l.push(bind(ui.error_close.as_ref(), "click", |_: &web_sys::Event| Some(Input::Page(PageInput::DismissError))));
    l.push(bind(win, "dragover", |e: &DragEvent| {
        let has_files = e.data_transfer().is_some_and(|d| d.types().includes(&JsValue::from_str("Files"), 0));
        if has_files {
            e.prevent_default();
            Some(Input::Page(PageInput::DragHover(true)))
        } else {
            None
        }
    }));
    l.push(bind(win, "dragleave", |e: &DragEvent| {
        e.related_target().is_none().then_some(Input::Page(PageInput::DragHover(false)))
    }));
    l.push(bind(win, "drop", |e: &DragEvent| {
        e.prevent_default();
        let files = files_of(e.data_transfer().and_then(|d| d.files()));
        Some(if files.is_empty() { Input::Page(PageInput::DragHover(false)) } else { Input::Open(files) })
    }));
    l.extend(menu_bindings(ui));
    // Canvases.
    for (canvas, surface) in [(&ui.plot, Surface::Plot), (&ui.minimap, Surface::Minimap)] {
        let target: &web_sys::EventTarget = canvas.as_ref();
        l.push(bind(target, "wheel", move |e: &WheelEvent| {
            e.prevent_default();
            let dy = if e.delta_y() != 0.0 { e.delta_y() } else { e.delta_x() };
            Some(Input::Page(PageInput::Timeline(TimelineInput::Wheel {
                surface,
                x_px: f64::from(e.offset_x()),
                delta_y_px: input::wheel_delta_px(dy, e.delta_mode()),
            })))
        }));
        l.push(bind(target, "pointerdown", move |e: &PointerEvent| {
            if let Some(el) = e.target().and_then(|t| t.dyn_into::<HtmlElement>().ok()) {
                let _ = el.set_pointer_capture(e.pointer_id());
                // Keys go to the plot after a click on it (not to a menu used before).
                let _ = el.focus();
            }
            let (surface, x_px, y_px) = pointer(surface, e);
            Some(Input::Page(PageInput::Timeline(TimelineInput::PointerDown {
                surface,
                x_px,
                y_px,
                button: e.button(),
            })))
        }));
        let moves: [(&'static str, PointerInput); 2] = [
            ("pointermove", |surface, x_px, y_px| {
                Input::Page(PageInput::Timeline(TimelineInput::PointerMove { surface, x_px, y_px }))
            }),
            ("pointerup", |surface, x_px, y_px| {
                Input::Page(PageInput::Timeline(TimelineInput::PointerUp { surface, x_px, y_px }))
            }),
        ];
        for (name, make) in moves {
            l.push(bind(target, name, move |e: &PointerEvent| {
                let (surface, x_px, y_px) = pointer(surface, e);
                Some(make(surface, x_px, y_px))
            }));
        }
        l.push(bind(target, "pointerleave", move |_: &PointerEvent| {
            Some(Input::Page(PageInput::Timeline(TimelineInput::PointerLeave { surface })))
        }));
    }
    // Keys and window size.
    l.push(bind(win, "keydown", |e: &KeyboardEvent| {
        if typing_in_control(e) && e.key() != "Escape" {
            return None;
        }
        let c = input::command_for_key(&e.key(), e.ctrl_key() || e.alt_key() || e.meta_key())?;
        // Selection keys act on the focused timeline only; elsewhere arrows scroll and Enter
        // presses buttons.
        let on_plot = e.target().and_then(|t| t.dyn_into::<Element>().ok()).is_some_and(|el| el.id() == "plot");
        if c.needs_plot_focus() && !on_plot {
            return None;
        }
        e.prevent_default();
        Some(Input::Page(PageInput::Timeline(TimelineInput::Key(c))))
    }));
    l.push(bind(win, "resize", |_: &web_sys::Event| Some(Input::Resize)));
    l
}

pub(crate) fn watch_size(weak: &Weak<RefCell<App>>, ui: &Ui) -> Option<ResizeWatch> {
    let w = weak.clone();
    let callback = Closure::<dyn FnMut(js_sys::Array)>::new(move |_entries: js_sys::Array| {
        with_app(&w, |app| app.handle(Input::Resize));
    });
    let observer = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()).ok()?;
    observer.observe(&ui.plot);
    observer.observe(&ui.minimap);
    Some(ResizeWatch { observer, _callback: callback })
}

/// A ResizeObserver and its callback, disconnected when dropped.
pub(crate) struct ResizeWatch {
    observer: web_sys::ResizeObserver,
    _callback: Closure<dyn FnMut(js_sys::Array)>,
}

impl Drop for ResizeWatch {
    fn drop(&mut self) {
        self.observer.disconnect();
    }
}
