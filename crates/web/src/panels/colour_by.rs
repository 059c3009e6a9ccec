//! Colour by group: the timeline's allocations painted in the colour of their group under the
//! Live set's grouping (at most `derived::COLOURED_GROUPS` colours, the rest one grey "other"),
//! and the legend written under the group-by menu.

use std::fmt::Write;

use memviz_core::timeline::Mode;
use web_sys::CanvasRenderingContext2d;

use super::{esc, Analysis};
use crate::paint::{Frame, FrameInfo};

/// Twelve colours told apart in light and dark themes, then the grey of "other".
const PALETTE: [&str; 13] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#17becf",
    "#8c564b", "#bcbd22", "#9e9e9e",
];

fn colour(k: u8) -> &'static str {
    PALETTE.get(usize::from(k)).copied().unwrap_or(PALETTE[PALETTE.len() - 1])
}

/// The button and the legend, under the group-by menu of the Live set.
pub fn legend_html(a: &Analysis, on: bool, s: &mut String) {
    let _ = write!(
        s,
        "<p><button type=\"button\" class=\"group-colour{}\" data-act=\"group-colour\" aria-pressed=\"{on}\">Colour the timeline by this</button></p>",
        if on { " active" } else { "" }
    );
    if !on {
        return;
    }
    s.push_str("<ul class=\"an-legend\">");
    for (k, (label, bytes)) in a.legend.iter().enumerate() {
        // Classes, not style attributes: the page's CSP allows no inline style.
        let k = if k + 1 == a.legend.len() && label == "other" { PALETTE.len() - 1 } else { k };
        let _ = write!(
            s,
            "<li data-colour=\"{}\" title=\"{bytes} bytes allocated over the trace\"><span class=\"sw gc{k}\"></span>{}</li>",
            colour(k as u8),
            esc(label)
        );
    }
    s.push_str("</ul>");
}

/// Paints the visible allocations of the timeline in their group's colour.
pub fn draw(fr: &Frame<'_>, drawn: &FrameInfo, ctx: &CanvasRenderingContext2d) {
    if !fr.state.analysis().colour_by_group || fr.state.view().mode() != Mode::Allocations {
        let _ = fr.ui.plot.remove_attribute("data-coloured-by");
        return;
    }
    let (Some(f), Some(a)) = (fr.file(), fr.derived.analysis_of(fr.state)) else { return };
    let Some(g) = &a.grouping else { return };
    let plot = crate::paint::edges::PlotDev::new(f, fr.plot_rect(), fr.state.dpr()).reusing(drawn);
    let layout = plot.layout;
    plot.clip(ctx);
    let min_size = 0.5 / plot.px_per_byte_dev;
    let mut bands = layout.bands_overlapping(plot.s_left.floor().max(0.0) as u32, plot.s_right.ceil().max(0.0) as u32);
    bands.retain(|&b| layout.band_size(b) as f64 >= min_size);
    let colour_of = |b: u32| {
        layout
            .band_element
            .get(b as usize)
            .and_then(|&e| g.group_of(e))
            .and_then(|grp| a.group_colour.get(grp as usize).copied())
            .unwrap_or(u8::MAX)
    };
    // One pass per colour, so the fill style changes once per colour.
    bands.sort_unstable_by_key(|&b| (colour_of(b), b));
    for group in bands.chunk_by(|&x, &y| colour_of(x) == colour_of(y)) {
        if let Some(&first) = group.first() {
            ctx.set_fill_style_str(colour(colour_of(first)));
            plot.trace_bands(ctx, group, |_| ctx.fill());
        }
    }
    let _ = fr.ui.plot.set_attribute("data-coloured-by", &g.by.slug());
    ctx.restore();
}
