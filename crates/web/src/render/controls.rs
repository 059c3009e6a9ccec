//! The toolbar and the status line brought in line with the state: menus, Detail, x axis,
//! progress and the status text.

use super::{Frame, PaintMemo};
use memviz_core::format::human_size;
use memviz_view::state::OpenFile;
use memviz_view::view::View;

use memviz_view::entries::count;

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
    // The rank overview first: whether it is shown decides the canvases' size.
    crate::ranks::sync(fr, &mut memo.ranks);
    crate::compare_view::sync(fr, &mut memo.compare_page);
    // Progress and status.
    match fr.state.loading_shown() {
        Some(l) => {
            ui.progress.set_hidden(false);
            // Only reading a file can be stopped (a relayout is one frame).
            ui.cancel_button.set_hidden(l.total_bytes == 0);
            ui.progress.set_value(l.fraction);
            set_text(&ui.status, &loading_text(l));
        }
        None if fr.state.status_note().is_some() => {
            ui.progress.set_hidden(true);
            ui.cancel_button.set_hidden(true);
            set_text(&ui.status, fr.state.status_note().unwrap_or(""));
        }
        None => {
            ui.progress.set_hidden(true);
            ui.cancel_button.set_hidden(true);
            let text = match fr.state.run().filter(|_| fr.state.overview_shown()) {
                // The overview is of the run, not of the file last shown.
                Some(run) => format!("A run of {} ranks · the rank overview", run.ranks.len()),
                None => fr.file().map_or_else(String::new, status_text),
            };
            set_text(&ui.status, &text);
            // The bar may cut a long name: the whole line is its title.
            if ui.status.title() != text {
                ui.status.set_title(&text);
            }
        }
    }
    match &fr.state.error() {
        Some(e) => {
            set_text(&ui.error_text, e);
            ui.error.set_hidden(false);
            // A picture shown under another message goes with it.
            let picture = ui.document.get_element_by_id(ERROR_PICTURE_ID);
            if picture.is_some_and(|p| p.get_attribute("data-for").as_deref() != Some(*e)) {
                remove_error_picture(&ui.document);
            }
        }
        None => {
            ui.error.set_hidden(true);
            remove_error_picture(&ui.document);
        }
    }
    ui.empty.set_hidden(fr.file().is_some());
    ui.drop_overlay.set_hidden(!fr.state.drag_hover());
    // Menus.
    let devices = fr.file().map_or(0, |f| f.snap.devices.len());
    let views = fr.derived.views_of(fr.state);
    let key = (
        (fr.state.files().len(), {
            use std::hash::{Hash, Hasher};
            let mut h = std::hash::DefaultHasher::new();
            fr.state.released().iter().for_each(|r| r.name.hash(&mut h));
            h.finish()
        }),
        fr.state.current(),
        devices,
        fr.file().map(|f| f.plot.device_pos),
        views.map(|v| (v.mapped_pages, v.private_pools)),
    );
    if memo.menus != Some(key) {
        memo.menus = Some(key);
        // Names cut in the middle so the menu keeps its width (the whole name in the title).
        let full: Vec<String> = fr
            .state
            .files()
            .iter()
            .map(|f| f.name.clone())
            .chain(fr.state.released().iter().map(|r| r.name.clone()))
            .collect();
        let short = memviz_view::names::menu_names(&full, FILE_NAME_CHARS);
        let open = fr.state.files().len();
        const CLOSED: &str = " (closed: choose to read again)";
        fill_select(
            ui,
            &ui.file_select,
            short.iter().enumerate().map(|(i, s)| match i.checked_sub(open) {
                None => (i.to_string(), s.clone()),
                Some(j) => (format!("r{j}"), format!("{s}{CLOSED}")),
            }),
        );
        for (i, name) in full.iter().enumerate() {
            if let Some(o) = ui.file_select.item(i as u32) {
                let title = if i < open { name.clone() } else { format!("{name}{CLOSED}") };
                let _ = o.set_attribute("title", &title);
            }
        }
        if let Some(f) = fr.file() {
            fill_select(
                ui,
                &ui.device_select,
                f.snap.devices.iter().enumerate().map(|(i, d)| {
                    // Named by what it holds, so an empty device is seen before it is chosen.
                    let (reserved, _) = f.snap.memory_bytes(d.index);
                    let entries = if d.trace.len() == 1 { "entry" } else { "entries" };
                    let label = format!(
                        "{} · {} reserved ({})",
                        d.name(),
                        human_size(reserved as f64),
                        count(d.trace.len(), entries)
                    );
                    (i.to_string(), label)
                }),
            );
        }
        // Views that show nothing for this device say so (values stay the same).
        let mark = |v: View| match (v, views) {
            (View::MappedPagesTimeline, Some(d)) if !d.mapped_pages => " (no expandable segments)",
            (View::AllocatedMemoryPools, Some(d)) if !d.private_pools => " (no private pools)",
            _ => "",
        };
        fill_select(
            ui,
            &ui.view_select,
            View::ALL.iter().map(|&v| (v.value().to_string(), format!("{}{}", v.label(), mark(v)))),
        );
    }
    let busy = fr.state.loading().is_some();
    set_select(
        &ui.file_select,
        &fr.state.current().map_or(String::new(), |i| i.to_string()),
        fr.state.files().len() + fr.state.released().len() < 2 || busy,
    );
    set_select(&ui.view_select, fr.state.view().value(), fr.file().is_none() || busy);
    match fr.file() {
        Some(f) => {
            set_select(&ui.device_select, &f.plot.device_pos.to_string(), devices < 2 || busy);
            // The menus show the choice cut to their width; the whole of it on hover.
            let device_label = ui.device_select.item(f.plot.device_pos as u32).and_then(|o| o.text_content());
            set_attr(&ui.device_select, "title", device_label.as_deref().unwrap_or_default());
            set_attr(&ui.file_select, "title", &f.name);
            set_select(&ui.x_axis_select, f.x_axis.value(), !f.has_time() || busy);
            let total = f.plot.layout.shown_count();
            let value = fr.state.detail_preview().unwrap_or(f.max_entries).min(total);
            let max = total.to_string();
            if ui.detail.max() != max {
                ui.detail.set_max(&max);
            }
            if fr.state.detail_preview().is_none() && ui.detail.value() != value.to_string() {
                ui.detail.set_value(&value.to_string());
            }
            ui.detail.set_disabled(busy || total == 0);
            let focus = f.plot.layout.options.focus_rows;
            let label = match total {
                0 => format!("No {} to draw", noun(f)),
                _ => detail_text(value, total, noun(f), focus.is_some()),
            };
            set_text(&ui.detail_label, &label);
            set_attr(&ui.detail_label, "data-drawn", &value.to_string());
            // The trace rows Detail was chosen in ("": the whole trace).
            set_attr(&ui.detail_label, "data-focus", &focus.map(|(a, b)| format!("{a}-{b}")).unwrap_or_default());
            set_attr(&ui.detail_label, "data-total", &max);
        }
        None => {
            set_select(&ui.device_select, "", true);
            set_select(&ui.x_axis_select, "steps", true);
            ui.detail.set_disabled(true);
            set_text(&ui.detail_label, "Draw the largest allocations individually");
            set_attr(&ui.detail_label, "data-drawn", "");
            set_attr(&ui.detail_label, "data-total", "");
        }
    }
}

/// What the layout's elements are: allocations, segments or mapped ranges.
fn noun(f: &OpenFile) -> &'static str {
    match f.plot.layout.options.mode {
        memviz_core::timeline::Mode::Allocations => "allocations",
        memviz_core::timeline::Mode::Segments => "segments",
        memviz_core::timeline::Mode::MappedPages => "mapped ranges",
    }
}

/// The Detail control's label: how many of the elements are drawn one by one (the rest are
/// summarized in one band; the x axis does not change), and whether they were chosen among
/// those live in the zoomed window.
pub(crate) fn detail_text(drawn: usize, total: usize, noun: &str, in_window: bool) -> String {
    let group = |n: usize| memviz_view::axis::step_label(n as f64);
    if drawn >= total {
        format!("Draw all {} individually", count(total, noun))
    } else if in_window {
        format!("Draw the {} largest of {} individually, chosen in this window", group(drawn), count(total, noun))
    } else {
        format!("Draw the {} largest of {} individually", group(drawn), count(total, noun))
    }
}

/// The status line of a file: its name, its peak (or, without history, what is live) and how
/// many elements are shown ("N of M" when hide freed leaves some out).
pub(crate) fn status_text(f: &OpenFile) -> String {
    let l = &f.plot.layout;
    if f.is_moment() {
        // What the column holds: the lifetimes not freed by the trace's one entry.
        let live = l.elements.iter().filter(|e| e.free_row.is_none()).count();
        return format!(
            "{} · {} live at the snapshot · {} live",
            f.name,
            human_size(l.live_bytes_at(0.5) as f64),
            count(live, noun(f))
        );
    }
    if l.elements.is_empty() {
        return format!("{} · no {} on this device", f.name, noun(f));
    }
    let peak = human_size(l.peak_bytes as f64);
    let (shown, all) = (l.shown_count(), l.elements.len());
    let shown_text = if shown < all {
        format!("{} of {} shown", memviz_view::axis::step_label(shown as f64), count(all, noun(f)))
    } else {
        count(all, noun(f))
    };
    format!("{} · peak {peak} · {shown_text}", f.name)
}

fn set_attr(el: &web_sys::HtmlElement, name: &str, value: &str) {
    if el.get_attribute(name).as_deref() != Some(value) {
        let _ = el.set_attribute(name, value);
    }
}

/// The id of the canvas under the error that shows the profiler's picture of its memory
/// timeline (`app/picture.rs`).
pub(crate) const ERROR_PICTURE_ID: &str = "error-picture";

/// Takes the profiler's picture away from under the error.
pub(crate) fn remove_error_picture(doc: &web_sys::Document) {
    if let Some(e) = doc.get_element_by_id(ERROR_PICTURE_ID) {
        e.remove();
    }
}

pub(crate) fn set_text(el: &web_sys::HtmlElement, text: &str) {
    if el.text_content().as_deref() != Some(text) {
        el.set_text_content(Some(text));
    }
}

/// Characters of a file's name in the File menu ([`memviz_view::names::short_names`]).
const FILE_NAME_CHARS: usize = 14;

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
