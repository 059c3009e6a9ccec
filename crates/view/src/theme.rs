//! Light and dark themes: which one the page shows ([`ThemeState`]: the user's choice, else the
//! system's `prefers-color-scheme`) and every colour the canvases are painted in ([`Palette`]),
//! so that painting takes its colours from the state and never reads them from the DOM. The
//! page's own colours (CSS custom properties in `www/style.css`) follow the same `data-theme`.

use crate::raster::{rgb, Rgb};

/// What the user chose in the theme control.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ThemeChoice {
    /// Follow the system (`prefers-color-scheme`).
    #[default]
    Auto,
    /// Always light.
    Light,
    /// Always dark.
    Dark,
}

impl ThemeChoice {
    /// Every choice, in the control's order.
    pub const ALL: [ThemeChoice; 3] = [ThemeChoice::Auto, ThemeChoice::Light, ThemeChoice::Dark];

    /// The value kept in localStorage and in the control (`auto`, `light`, `dark`).
    pub fn value(self) -> &'static str {
        match self {
            ThemeChoice::Auto => "auto",
            ThemeChoice::Light => "light",
            ThemeChoice::Dark => "dark",
        }
    }

    /// The choice a kept value names (anything else: none).
    pub fn parse(s: &str) -> Option<ThemeChoice> {
        ThemeChoice::ALL.into_iter().find(|c| c.value() == s.trim())
    }

    /// The next choice (the toolbar button cycles auto → light → dark).
    pub fn next(self) -> ThemeChoice {
        match self {
            ThemeChoice::Auto => ThemeChoice::Light,
            ThemeChoice::Light => ThemeChoice::Dark,
            ThemeChoice::Dark => ThemeChoice::Auto,
        }
    }
}

/// The theme shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Theme {
    /// Dark text on light backgrounds.
    #[default]
    Light,
    /// Light text on dark backgrounds.
    Dark,
}

impl Theme {
    /// Its name in `<html data-theme>` and in the test hooks.
    pub fn name(self) -> &'static str {
        match self {
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    /// The canvases' colours in this theme.
    pub fn palette(self) -> &'static Palette {
        match self {
            Theme::Light => &LIGHT,
            Theme::Dark => &DARK,
        }
    }
}

/// The user's choice and what the system prefers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThemeState {
    /// The control's choice.
    pub choice: ThemeChoice,
    /// `prefers-color-scheme: dark` holds.
    pub system_dark: bool,
}

impl ThemeState {
    /// The theme shown: the choice, else the system's.
    pub fn theme(&self) -> Theme {
        match self.choice {
            ThemeChoice::Light => Theme::Light,
            ThemeChoice::Dark => Theme::Dark,
            ThemeChoice::Auto if self.system_dark => Theme::Dark,
            ThemeChoice::Auto => Theme::Light,
        }
    }

    /// The canvases' colours now.
    pub fn palette(&self) -> &'static Palette {
        self.theme().palette()
    }

    /// The control's label: what it shows now, and that a click changes it.
    pub fn label(&self) -> String {
        match self.choice {
            ThemeChoice::Auto => format!("Theme: auto ({})", self.theme().name()),
            c => format!("Theme: {}", c.value()),
        }
    }
}

/// Every colour painted on a canvas in one theme (CSS colour strings; `*_rgb` and `chart_*` as
/// numbers for the raster and the charts).
#[derive(Clone, Debug, PartialEq)]
pub struct Palette {
    /// Bands: a band's colour is `bands[element % 10]`.
    pub bands: [&'static str; 10],
    /// [`Palette::bands`] as pixels.
    pub bands_rgb: [Rgb; 10],
    /// Opacity of an annotation box's fill (its outline is the band colour itself).
    pub annotation_alpha: f64,
    /// Annotations of several names merged into one box.
    pub mixed_annotations_fill: &'static str,
    /// Their outline.
    pub mixed_annotations_stroke: &'static str,
    /// The summarized band.
    pub summarized: &'static str,
    /// The area under the drawn stack (bands thinner than half a pixel).
    pub stack: &'static str,
    /// OOM markers.
    pub oom: &'static str,
    /// Grid lines.
    pub grid: &'static str,
    /// Axis lines.
    pub axis: &'static str,
    /// Tick labels and other text.
    pub text: &'static str,
    /// Secondary text (axis titles, notes).
    pub muted: &'static str,
    /// What the canvases stand on (the exported PNG and the segment map are filled with it).
    pub background: &'static str,
    /// Behind a label over the bands (the OOM marks' labels).
    pub label_back: &'static str,
    /// The hovered band's outline; segments on the segment map.
    pub outline: &'static str,
    /// The pinned band's fill, a colour no band has.
    pub pinned_fill: &'static str,
    /// The pinned band's rim.
    pub pinned_stroke: &'static str,
    /// The hovered annotation's region.
    pub region: &'static str,
    /// The minimap's background.
    pub minimap_back: &'static str,
    /// What the minimap dims outside the window.
    pub minimap_dim: &'static str,
    /// The window's outline on the minimap.
    pub minimap_window: &'static str,
    /// A window being chosen on the minimap.
    pub brush: &'static str,
    /// What lies over bands that do not match (search, highlights).
    pub dim: &'static str,
    /// Search matches: outline and fill.
    pub match_stroke: &'static str,
    /// See [`Palette::match_stroke`].
    pub match_fill: &'static str,
    /// Bands highlighted from the analysis panel: fill and outline.
    pub highlight_fill: &'static str,
    /// See [`Palette::highlight_fill`].
    pub highlight_stroke: &'static str,
    /// The cursor on a cited trace entry.
    pub cursor: &'static str,
    /// Behind the cursor's label.
    pub cursor_back: &'static str,
    /// The live-set moment's line.
    pub moment: &'static str,
    /// Memory wasted or freed but pending (segment map).
    pub waste: &'static str,
    /// Private-pool envelopes.
    pub envelopes: [&'static str; 4],
    /// Series of the analysis panel's charts (the legends' swatches in style.css): reserved
    /// bytes and Compare's file A, allocated bytes, the largest free block and Compare's file B,
    /// the worst moment.
    pub series: [u32; 4],
    /// Charts of the analysis panel: background, ink (axes, labels), grid, marker.
    pub chart_back: u32,
    /// See [`Palette::chart_back`].
    pub chart_ink: u32,
    /// See [`Palette::chart_back`].
    pub chart_grid: u32,
    /// See [`Palette::chart_back`].
    pub chart_marker: u32,
}

/// Tableau10, as PyTorch's viewer uses.
const TABLEAU10: [&str; 10] =
    ["#4e79a7", "#f28e2c", "#e15759", "#76b7b2", "#59a14f", "#edc949", "#af7aa1", "#ff9da7", "#9c755f", "#bab0ab"];

const fn pixels(c: [&str; 10]) -> [Rgb; 10] {
    [rgb(c[0]), rgb(c[1]), rgb(c[2]), rgb(c[3]), rgb(c[4]), rgb(c[5]), rgb(c[6]), rgb(c[7]), rgb(c[8]), rgb(c[9])]
}

/// The light theme: PyTorch's colours on white.
pub const LIGHT: Palette = Palette {
    bands: TABLEAU10,
    bands_rgb: pixels(TABLEAU10),
    annotation_alpha: 0.35,
    mixed_annotations_fill: "rgba(140,140,140,0.28)",
    mixed_annotations_stroke: "#9a9a9a",
    summarized: "#c9c9c9",
    stack: "#9db0c4",
    oom: "#d62728",
    grid: "#ececec",
    axis: "#555555",
    text: "#222222",
    muted: "#666666",
    background: "#ffffff",
    label_back: "rgba(255,255,255,0.85)",
    outline: "#000000",
    pinned_fill: "rgb(255, 214, 0)",
    pinned_stroke: "#5c4400",
    region: "rgba(0,0,0,0.07)",
    minimap_back: "#f6f6f6",
    minimap_dim: "rgba(40,40,40,0.18)",
    minimap_window: "#333333",
    brush: "rgba(78,121,167,0.3)",
    dim: "rgba(255, 255, 255, 0.6)",
    match_stroke: "#d81b60",
    match_fill: "rgba(216, 27, 96, 0.35)",
    highlight_fill: "#c2185b",
    highlight_stroke: "#5c0a2e",
    cursor: "#b35900",
    cursor_back: "rgba(255,255,255,0.9)",
    moment: "#6a3d9a",
    waste: "#d62728",
    envelopes: ["#1565c0", "#2e7d32", "#6a1b9a", "#ef6c00"],
    series: [0x4e79a7, 0x59a14f, 0xe15759, 0xd62728],
    chart_back: 0xffffff,
    chart_ink: 0x555555,
    chart_grid: 0xececec,
    chart_marker: 0x222222,
};

/// Tableau10 a little lighter where a colour is dark on a dark background (blue, brown).
const TABLEAU10_DARK: [&str; 10] =
    ["#6f9bcc", "#f28e2c", "#e15759", "#76b7b2", "#6cb462", "#edc949", "#c08fb3", "#ff9da7", "#b8917b", "#bab0ab"];

/// The dark theme: the same hues on a dark grey, light text.
pub const DARK: Palette = Palette {
    bands: TABLEAU10_DARK,
    bands_rgb: pixels(TABLEAU10_DARK),
    annotation_alpha: 0.4,
    mixed_annotations_fill: "rgba(160,160,160,0.30)",
    mixed_annotations_stroke: "#8a8a8a",
    summarized: "#5d6166",
    stack: "#3f5873",
    oom: "#ff5a5a",
    grid: "#2c2f34",
    axis: "#9aa0a6",
    text: "#e3e5e8",
    muted: "#a0a5ab",
    background: "#17191c",
    label_back: "rgba(23,25,28,0.85)",
    outline: "#ffffff",
    pinned_fill: "rgb(255, 214, 0)",
    pinned_stroke: "#fff3b0",
    region: "rgba(255,255,255,0.08)",
    minimap_back: "#212429",
    minimap_dim: "rgba(0,0,0,0.45)",
    minimap_window: "#d0d3d7",
    brush: "rgba(111,155,204,0.35)",
    dim: "rgba(23, 25, 28, 0.6)",
    match_stroke: "#ff4f95",
    match_fill: "rgba(255, 79, 149, 0.35)",
    highlight_fill: "#f0609b",
    highlight_stroke: "#ffd1e4",
    cursor: "#ffa64d",
    cursor_back: "rgba(23,25,28,0.9)",
    moment: "#c9a4f0",
    waste: "#ff5a5a",
    envelopes: ["#64b5f6", "#81c784", "#ce93d8", "#ffb74d"],
    series: [0x6f9bcc, 0x6cb462, 0xe15759, 0xff5a5a],
    chart_back: 0x17191c,
    chart_ink: 0xb4b9bf,
    chart_grid: 0x2c2f34,
    chart_marker: 0xe3e5e8,
};

/// WCAG relative luminance of an `#rrggbb` colour.
pub fn luminance(c: Rgb) -> f64 {
    let lin = |v: u8| {
        let s = f64::from(v) / 255.0;
        if s <= 0.039_28 {
            s / 12.92
        } else {
            ((s + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2])
}

/// WCAG contrast ratio of two colours (1 to 21).
pub fn contrast(a: Rgb, b: Rgb) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_wins_over_the_system() {
        let mut s = ThemeState::default();
        assert_eq!(s.theme(), Theme::Light);
        s.system_dark = true;
        assert_eq!(s.theme(), Theme::Dark);
        assert_eq!(s.label(), "Theme: auto (dark)");
        s.choice = ThemeChoice::Light;
        assert_eq!(s.theme(), Theme::Light);
        s.system_dark = false;
        s.choice = ThemeChoice::Dark;
        assert_eq!(s.theme(), Theme::Dark);
        assert_eq!(s.palette().background, DARK.background);
    }

    #[test]
    fn choices_are_kept_by_value_and_cycle() {
        for c in ThemeChoice::ALL {
            assert_eq!(ThemeChoice::parse(c.value()), Some(c));
        }
        assert_eq!(ThemeChoice::parse("purple"), None);
        assert_eq!(ThemeChoice::Auto.next().next().next(), ThemeChoice::Auto);
    }

    /// Bands stand out from the plot's background in both themes (dark: 3:1, the contrast asked
    /// of graphical objects; light keeps PyTorch's Tableau10, whose yellow is the faintest), and
    /// text is readable (4.5:1).
    #[test]
    fn bands_and_text_keep_their_contrast() {
        let bg = |p: &Palette| rgb(p.background);
        for (p, least) in [(&LIGHT, 1.5), (&DARK, 3.0)] {
            for &c in &p.bands_rgb {
                let r = contrast(c, bg(p));
                assert!(r >= least, "{c:?} on {}: {r:.2}", p.background);
            }
            assert!(contrast(rgb(p.text), bg(p)) >= 4.5, "text on {}", p.background);
            assert!(contrast(rgb(p.muted), bg(p)) >= 4.5, "muted text on {}", p.background);
            assert!(contrast(rgb(p.oom), bg(p)) >= 3.0, "OOM marks on {}", p.background);
            assert!(contrast(rgb(p.stack), bg(p)) >= 1.5, "the area under the stack on {}", p.background);
        }
        assert_eq!(LIGHT.bands, TABLEAU10, "the light theme keeps PyTorch's colours");
    }
}
