//! The toolbar and the status line brought in line with the state: menus, Detail, x axis,
//! progress and the status text.

#[allow(clippy::wildcard_imports)]
use super::*;

/// "Reading x.pickle: 45.2 of 89.5 MiB · about 2 s left".
pub(crate) fn loading_text(l: &memviz_view::state::Loading) -> String {
    let mut text = format!("{} {}", l.phase, l.name);
    if l.phase == "Reading" && l.total_bytes > 0 {
        text += &format!(": {} of {}", human_size(l.read_bytes as f64), human_size(l.total_bytes as f64));
    } else {
        text += " …";
    }
    if let Some(ms) = l.left_ms {
        let s = (ms / 1000.0).ceil().max(1.0);
        text += &if s < 90.0 {
            format!(" · about {s:.0} s left")
        } else {
            format!(" · about {:.0} min left", (s / 60.0).ceil())
        };
    }
    text
}

/// Brings the controls in line with the state.
#[allow(clippy::too_many_lines)] // every control of the toolbar and status line in one place
pub fn sync_dom(fr: &Frame<'_>, memo: &mut PaintMemo) {
    let ui = &fr.ui;
    // Progress and status.
    match &fr.state.loading {
        Some(l) => {
            ui.progress.set_hidden(false);
            // Only reading a file can be stopped (a relayout is one frame).
            ui.cancel_button.set_hidden(l.total_bytes == 0);
            ui.progress.set_value(l.fraction);
            set_text(&ui.status, &loading_text(l));
        }
        None if fr.state.status_note.is_some() => {
            ui.progress.set_hidden(true);
            ui.cancel_button.set_hidden(true);
            set_text(&ui.status, fr.state.status_note.as_deref().unwrap_or(""));
        }
        None => {
            ui.progress.set_hidden(true);
            ui.cancel_button.set_hidden(true);
            let text = fr.file().map_or_else(String::new, |f| {
                let l = &f.plot.layout;
                let noun = match l.options.mode {
                    memviz_core::timeline::Mode::Allocations => "allocations",
                    memviz_core::timeline::Mode::Segments => "segments",
                    memviz_core::timeline::Mode::MappedPages => "mappings",
                };
                format!("{} · peak {} · {} {noun}", f.name, human_size(l.peak_bytes as f64), l.elements.len())
            });
            set_text(&ui.status, &text);
            // The bar may cut a long name: the whole line is its title.
            if ui.status.title() != text {
                ui.status.set_title(&text);
            }
        }
    }
    match &fr.state.error {
        Some(e) => {
            set_text(&ui.error_text, e);
            ui.error.set_hidden(false);
        }
        None => {
            ui.error.set_hidden(true);
        }
    }
    ui.empty.set_hidden(fr.file().is_some());
    ui.drop_overlay.set_hidden(!fr.state.drag_hover);
    // Menus.
    let devices = fr.file().map_or(0, |f| f.snap.devices.len());
    let key = (fr.state.files.len(), fr.state.current, devices);
    if memo.menus != Some(key) {
        memo.menus = Some(key);
        fill_select(
            ui,
            &ui.file_select,
            fr.state.files.iter().enumerate().map(|(i, f)| (i.to_string(), f.name.clone())),
        );
        if let Some(f) = fr.file() {
            fill_select(
                ui,
                &ui.device_select,
                f.snap.devices.iter().enumerate().map(|(i, d)| {
                    // Named by what it holds, so an empty device is seen before it is chosen.
                    let (reserved, _) = f.snap.memory_bytes(d.index);
                    let label =
                        format!("{} · {} reserved ({} entries)", d.name(), human_size(reserved as f64), d.trace.len());
                    (i.to_string(), label)
                }),
            );
        }
        fill_select(ui, &ui.view_select, View::ALL.iter().map(|v| (v.value().to_string(), v.label().to_string())));
    }
    let busy = fr.state.loading.is_some();
    set_select(
        &ui.file_select,
        &fr.state.current.map_or(String::new(), |i| i.to_string()),
        fr.state.files.len() < 2 || busy,
    );
    set_select(&ui.view_select, fr.state.view.value(), fr.file().is_none() || busy);
    match fr.file() {
        Some(f) => {
            set_select(&ui.device_select, &f.plot.device_pos.to_string(), devices < 2 || busy);
            set_select(&ui.x_axis_select, f.x_axis.value(), !f.has_time() || busy);
            let total = f.plot.element_count();
            let value = fr.state.detail_preview.unwrap_or(f.max_entries).min(total);
            let max = total.to_string();
            if ui.detail.max() != max {
                ui.detail.set_max(&max);
            }
            if fr.state.detail_preview.is_none() && ui.detail.value() != value.to_string() {
                ui.detail.set_value(&value.to_string());
            }
            ui.detail.set_disabled(busy);
            set_text(&ui.detail_label, &format!("Detail: {value} of {total} entries"));
        }
        None => {
            set_select(&ui.device_select, "", true);
            set_select(&ui.x_axis_select, "steps", true);
            ui.detail.set_disabled(true);
            set_text(&ui.detail_label, "Detail: –");
        }
    }
}

pub(crate) fn set_text(el: &web_sys::HtmlElement, text: &str) {
    if el.text_content().as_deref() != Some(text) {
        el.set_text_content(Some(text));
    }
}

pub(crate) fn fill_select(
    ui: &crate::dom::Ui,
    select: &web_sys::HtmlSelectElement,
    options: impl Iterator<Item = (String, String)>,
) {
    select.set_text_content(None);
    for (value, label) in options {
        if let Ok(o) = ui.document.create_element("option") {
            let _ = o.set_attribute("value", &value);
            o.set_text_content(Some(&label));
            let _ = select.append_child(&o);
        }
    }
}

pub(crate) fn set_select(select: &web_sys::HtmlSelectElement, value: &str, disabled: bool) {
    if select.value() != value {
        select.set_value(value);
    }
    if select.disabled() != disabled {
        select.set_disabled(disabled);
    }
}
