//! Drawing: the timeline, the minimap and the page's controls, from the state and nothing else.
//!
//! Canvases have a backing store of CSS size × devicePixelRatio. Axes and text are drawn in CSS
//! pixels under a `devicePixelRatio` transform; the plot's shapes are computed in device pixels
//! so that level of detail (bands under half a device pixel are not drawn one by one) and
//! decimation (at most about two vertices per device-pixel column) match what the screen shows.

use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

use crate::canvas::{fit_canvas, HeldPlot};
pub(crate) use crate::paint::edges::*;
pub use crate::paint::*;
pub use memviz_view::layout_px::*;
use memviz_view::model::Timings;
use memviz_view::state::{Drag, OpenFile, Target};
use memviz_view::view::View;
use memviz_view::viewport::Viewport;

mod base;
mod compare;
mod controls;
mod export;
mod hooks;
mod landing;
mod overlay;

pub use base::*;
pub use compare::export_compare_png;
pub use controls::*;
pub use export::export_png;
use hooks::{is_first_complete_frame, report_ready, write_hover_hooks, write_test_hooks};
use landing::sync_landing;
use overlay::{crisp, draw_annotations, draw_minimap, draw_timeline_overlay, fit_text, hover_on_svg, hover_outline};

/// What the menus were filled for: (open files, a hash of the released files' names), the file
/// shown, its devices, the device shown, which views show something.
pub type MenusKey = ((usize, u64), Option<usize>, usize, Option<usize>, Option<(bool, bool)>);

/// What the painters remember of what they wrote, so frames only touch what changed; and the
/// first frames of a file just opened.
#[derive(Default)]
pub struct PaintMemo {
    /// (files, current file, device count, device shown, (mapped pages, private pools)) when
    /// the menus were last filled.
    pub menus: Option<MenusKey>,
    /// The stack panel and the tooltip.
    pub stack: crate::stack::Memo,
    /// What the canvases show now.
    pub canvas: Option<CanvasKey>,
    /// What the base layer of the timeline holds.
    pub frame: FrameInfo,
    /// The plot area of the next exact frame, computed ahead of it (a small timeline's: of the
    /// last frame, for the next ones that change only the marks over it).
    pub prepared: Option<(PixelsKey, PlotPixels)>,
    /// What `#plot-hover` shows.
    pub hover_svg: Option<HoverSvg>,
    /// Timings of a load whose first complete draw is still to come (then `memviz:ready`).
    pub ready_pending: Option<Timings>,
    /// The first frame of a file just opened draws the page around the timeline but not its
    /// bands, which follow in the next frame: the browser's first layout and paint of the loaded
    /// page and the first drawing of the bands are then two tasks, neither of them long.
    pub bands_next_frame: bool,
    /// The canvases of a file just opened are being allocated, one per task: frames until then
    /// draw the page around them and leave them alone (the frame that reveals the loaded page
    /// is then the browser's layout and paint only).
    pub canvases_pending: bool,
    /// The analysis panel.
    pub panels: crate::panels::Memo,
    /// The panel views.
    pub views: crate::views::Memo,
    /// The search boxes.
    pub search: crate::search::Memo,
    /// The private pools' notes.
    pub pools: crate::pools::Memo,
    /// The rank overview.
    pub ranks: crate::ranks::Memo,
    /// The Compare view's page around its charts.
    pub compare_page: crate::compare_view::Memo,
    /// The Compare view's charts.
    pub compare: compare::Memo,
    /// The theme control, the details panel's fold and the coverage banner.
    pub chrome: crate::chrome::Memo,
}

impl PaintMemo {
    /// Forgets what was written of the open files (a file was closed: indices moved).
    pub fn forget_files(&mut self, document: &web_sys::Document) {
        self.menus = None;
        self.stack.invalidate();
        self.canvas = None;
        self.prepared = None;
        self.panels = crate::panels::Memo::default();
        self.views = crate::views::Memo::new(document);
    }
}

/// How many steps [`prepare_canvas`] takes: the timeline's two canvases, the minimap and the
/// two held copies.
pub const CANVAS_STEPS: usize = 5;
/// Of those, the canvases in the page (the rest are the held copies).
pub const SHOWN_CANVASES: usize = 3;

/// Timelines of at most this many steps are small: drawn exactly in a few ms, they keep no
/// held copies (two canvases of the plot's size) and a load prepares their canvases and bands
/// in the task that shows them, so the next frame is the complete one. Larger ones take a task
/// per canvas and one for the bands, each of which can take tens of ms.
pub const SMALL_MAX_STEPS: u32 = 100_000;

/// Whether `f`'s timeline is small ([`SMALL_MAX_STEPS`]).
pub fn is_small(f: &OpenFile) -> bool {
    f.plot.layout.steps <= SMALL_MAX_STEPS
}

/// Sizes one of the timeline's and the minimap's canvases (`step` < [`CANVAS_STEPS`]) for the
/// state and has the browser allocate its pixels now, rather than in the first frame that draws
/// on it. One canvas a step, each in a task of its own: where the first touch of fresh memory
/// is slow, five canvases in one task took up to 50 ms, a single one up to 140 ms.
pub fn prepare_canvas(fr: &Frame<'_>, step: usize) {
    let ui = &fr.ui;
    if step == 0 && fr.file().is_some_and(is_small) {
        // A small timeline is drawn on `#plot` alone (see [`draw`]): the base layer keeps no pixels.
        fit_canvas(&ui.plot_layer, 0.0, 0.0, fr.state.dpr());
        return;
    }
    let canvases = [
        (&ui.plot_layer, &ui.plot_layer_ctx, fr.state.plot_css()),
        (&ui.plot, &ui.plot_ctx, fr.state.plot_css()),
        (&ui.minimap, &ui.minimap_ctx, fr.state.minimap_css()),
    ];
    if let Some((canvas, ctx, css)) = canvases.get(step) {
        fit_with_pixels(canvas, ctx, *css, fr.state.dpr());
        return;
    }
    // The held copies take the plot area's size (as the base layer's raster does).
    let (Some(f), Some(p)) = (fr.file(), ui.held.get(step - canvases.len())) else { return };
    let (_, _, w, h) = raster_area(&f.plot_rect(fr.state.plot_css()), fr.state.dpr());
    p.reserve((w as f64, h as f64));
}

/// Sizes `#plot` and the minimap for a file not yet shown (CSS px) and has their pixels made
/// (as [`prepare_canvas`] does); frames without a file keep their size.
pub fn size_ahead(ui: &crate::dom::Ui, plot_css: (f64, f64), minimap_css: (f64, f64), dpr: f64) {
    fit_with_pixels(&ui.plot, &ui.plot_ctx, plot_css, dpr);
    fit_with_pixels(&ui.minimap, &ui.minimap_ctx, minimap_css, dpr);
}

/// Sizes `canvas` for `css` (CSS px), unless that has no area, and has the browser make its
/// pixels now (touching one of them).
fn fit_with_pixels(canvas: &HtmlCanvasElement, ctx: &CanvasRenderingContext2d, css: (f64, f64), dpr: f64) {
    if css.0 > 0.0 && css.1 > 0.0 {
        fit_canvas(canvas, css.0, css.1, dpr);
        let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
        ctx.clear_rect(0.0, 0.0, 1.0, 1.0);
    }
}

/// What the base layer is drawn from: the held copies stretched to the window (`preview`), or
/// the layout, keeping a copy of the result.
pub struct Holding<'a> {
    /// The copies: the last exact frame, and the last exact frame of the whole window.
    pub plots: &'a [HeldPlot; 2],
    /// What is drawn now, but for the window.
    pub what: HeldWhat,
    /// Draw from the copies instead of the layout.
    pub preview: bool,
}

impl Holding<'_> {
    /// Whether a copy of `what` is held, so that a preview can be drawn.
    fn can_preview(plots: &[HeldPlot; 2], what: &HeldWhat) -> bool {
        plots.iter().any(|p| p.shows(what).is_some())
    }
}

/// What the held copies of the base layer are of, for the file shown (none for a small one).
fn held_what(fr: &Frame<'_>) -> Option<HeldWhat> {
    shown_what(fr).filter(|_| fr.file().is_some_and(|f| !is_small(f)))
}

/// What the timeline shows of the file shown, but for its window.
fn shown_what(fr: &Frame<'_>) -> Option<HeldWhat> {
    let f = fr.file()?;
    Some((
        fr.state.current(),
        fr.state.generation(),
        fr.state.view(),
        f.x_axis,
        f.viewport.y_max_bytes.to_bits(),
        (fr.state.plot_css().0.to_bits(), fr.state.plot_css().1.to_bits(), fr.state.dpr().to_bits()),
        fr.state.theme().theme(),
    ))
}

/// Writes every part of the page outside the canvases from the state (controls, status line,
/// landing, search, stack panel, panels, pool note, which controls show): what decides the
/// canvases' sizes.
pub fn sync_page(fr: &Frame<'_>, memo: &mut PaintMemo) {
    sync_dom(fr, memo);
    crate::chrome::sync(fr, &mut memo.chrome);
    sync_landing(fr);
    crate::search::sync(fr, &mut memo.search);
    crate::stack::sync(fr, &mut memo.stack);
    crate::panels::sync(fr, &mut memo.panels);
    crate::pools::sync_note(fr, &mut memo.pools);
    // The body's classes show the controls that need a file (two rows of the status bar).
    crate::views::show_panel_or_timeline(fr.ui, fr.state, &memo.views);
}

/// Draws everything from the state: the page, the canvases (`draw_frame`) and the hovered
/// band's outline over a small timeline (`sync_hover_outline`).
pub fn draw(fr: &Frame<'_>, memo: &mut PaintMemo) {
    draw_frame(fr, memo);
    sync_hover_outline(fr, memo);
    // Every frame, also one that draws no canvas (a hover outlined in `#plot-hover`).
    write_hover_hooks(fr);
}

/// Shows the hovered band's outline in `#plot-hover` where [`hover_on_svg`] says so, and hides
/// it elsewhere; writes the DOM only when it changes.
fn sync_hover_outline(fr: &Frame<'_>, memo: &mut PaintMemo) {
    let shown = if hover_on_svg(fr) && fr.state.plot_css().0 >= 1.0 && memo.canvas.is_some() {
        hover_outline(fr, &memo.frame).map(|(d, view_box, place)| HoverSvg {
            d,
            view_box,
            place: place.map(f64::to_bits),
            stroke: (fr.palette().outline, (1.5 * fr.state.dpr()).to_bits()),
        })
    } else {
        None
    };
    if memo.hover_svg == shown {
        return;
    }
    // Styles go through the CSSOM: the page's content security policy refuses style attributes.
    let (svg, path) = (&fr.ui.hover_svg, &fr.ui.hover_path);
    let style = svg.style();
    match &shown {
        Some(h) => {
            let _ = path.set_attribute("d", &h.d);
            let _ = path.set_attribute("stroke", h.stroke.0);
            let _ = path.set_attribute("stroke-width", &f64::from_bits(h.stroke.1).to_string());
            let _ = svg.set_attribute("viewBox", &h.view_box);
            for (name, v) in ["left", "top", "width", "height"].iter().zip(h.place) {
                let _ = style.set_property(name, &format!("{}px", f64::from_bits(v)));
            }
            let _ = style.remove_property("display");
        }
        None => {
            let _ = style.set_property("display", "none");
        }
    }
    memo.hover_svg = shown;
}

/// What `#plot-hover` shows (`sync_hover_outline`).
#[derive(Clone, Debug, PartialEq)]
pub struct HoverSvg {
    /// The path's data (device px).
    d: String,
    /// The SVG's viewBox (device px).
    view_box: String,
    /// Its left, top, width and height (CSS px), bit for bit.
    place: [u64; 4],
    /// The stroke's colour and width (device px, bit for bit).
    stroke: (&'static str, u64),
}

/// Draws the page and the canvases from the state.
///
/// The timeline is two canvases: the base (`#plot-base`: axes, bands, annotations, OOM
/// markers), drawn only when what it shows changed (a zoom, a pan, a new layout), and over it the
/// page's `#plot` with what the pointer points at and the other marks (pins, highlights, search
/// matches, pools), cleared and drawn again every frame. Neither is copied into the other, so a
/// frame rasterizes only what it drew. A small timeline ([`is_small`]) is drawn whole on `#plot`
/// instead, base and marks, at each change (a few ms): a second canvas of the plot's size
/// weighed about 7 MB of renderer memory (its pixels and the compositor's copies of them).
fn draw_frame(fr: &Frame<'_>, memo: &mut PaintMemo) {
    let t0 = fr.ui.now_ms();
    sync_page(fr, memo);
    if memo.canvases_pending {
        return;
    }
    if compare::draw(fr, &mut memo.compare) {
        // The timeline must draw everything again when it comes back.
        memo.canvas = None;
        return;
    }
    if crate::views::draw(fr, &mut memo.views) {
        // The timeline must draw everything again when it comes back.
        memo.canvas = None;
        memo.stack.invalidate();
        if fr.state.loading().is_none() {
            if let Some(t) = memo.ready_pending.take() {
                fr.ui.mark("memviz:ready");
                let total_ms = fr.ui.now_ms() - t.started_ms;
                let _ = fr.ui.plot.set_attribute("data-timings", &format!("{{\"total_ms\":{total_ms:.1}}}"));
            }
        }
        return;
    }
    // A canvas measured while hidden has no size: nothing is drawn into it, and the resize
    // observer asks for a frame once it has one.
    if fr.file().is_some() && !(fr.state.plot_css().0 >= 1.0 && fr.state.plot_css().1 >= 1.0) {
        return;
    }
    let ui = fr.ui;
    // A zoom or pan in progress is drawn from the held copies while they show this file as it is.
    let what = held_what(fr);
    let preview =
        memo.bands_next_frame || (fr.previewing() && what.as_ref().is_some_and(|w| Holding::can_preview(&ui.held, w)));
    // Canvases are redrawn only when something they show changed (not for progress updates).
    let key = CanvasKey::of(fr, preview);
    if memo.canvas.as_ref() == Some(&key) {
        return;
    }
    let base_changed = memo.canvas.as_ref().map(CanvasKey::base) != Some(key.base());
    let single = fr.file().is_some_and(is_small);
    if base_changed || single {
        let holding = what.map(|what| Holding { plots: &ui.held, what, preview });
        // The plot area computed ahead for this very view, if there is one; a small timeline's
        // is kept for the frames that change only the marks over it.
        let pixels_key = pixels_key(fr);
        let prepared = if preview { None } else { memo.prepared.take() };
        let mut pixels = prepared.filter(|p| Some(p.0) == pixels_key).map(|p| p.1);
        let layer = if single {
            fit_canvas(&ui.plot_layer, 0.0, 0.0, fr.state.dpr());
            (&ui.plot, &ui.plot_ctx)
        } else {
            (&ui.plot_layer, &ui.plot_layer_ctx)
        };
        let info = draw_timeline_base(
            fr.file(),
            fr.palette(),
            fr.state.plot_css(),
            fr.state.dpr(),
            layer,
            holding,
            &mut pixels,
        );
        if single || info.hold_later {
            memo.prepared = pixels_key.zip(pixels);
        }
        if base_changed {
            draw_minimap(fr);
        }
        memo.frame = info;
    }
    let ctx = &ui.plot_ctx;
    if !single {
        // Without a file it keeps its size (see [`size_ahead`]).
        if fr.file().is_some() {
            fit_canvas(&ui.plot, fr.state.plot_css().0, fr.state.plot_css().1, fr.state.dpr());
        }
        let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
        ctx.clear_rect(0.0, 0.0, f64::from(ui.plot.width()), f64::from(ui.plot.height()));
    }
    memo.canvas = Some(key);
    let _ = ui.plot.set_attribute("data-preview", if preview { "1" } else { "0" });
    if preview {
        // Outlines and highlights need the exact band edges; they come back with the exact frame.
        return;
    }
    // Matches first: their dimming must not hide what the pointer points at.
    crate::search::draw(fr, &memo.frame, ctx);
    draw_timeline_overlay(fr, &memo.frame, ctx);
    crate::panels::draw_highlight(fr, &memo.frame, ctx);
    crate::pools::draw(fr, &mut memo.pools, ctx);
    let frame_ms = fr.ui.now_ms() - t0;
    write_test_hooks(fr, &memo.frame, frame_ms);
    if let Some(t) = memo.ready_pending.take() {
        if is_first_complete_frame(fr) {
            report_ready(fr, &t, &memo.frame, t0, frame_ms);
        } else {
            memo.ready_pending = Some(t);
        }
    }
}

/// Everything the canvases show; equal keys draw equal pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct CanvasKey {
    current: Option<usize>,
    generation: usize,
    view: View,
    viewport: Option<(Viewport, memviz_view::xmap::XAxis)>,
    hover: Option<Target>,
    pinned: Option<Target>,
    brush: Option<(f64, f64)>,
    sizes: ((f64, f64), (f64, f64), f64),
    minimap_columns: usize,
    analysis: usize,
    search: memviz_core::search::Query,
    pool_hover: Option<memviz_view::state::PoolHover>,
    cursor_entry: Option<u32>,
    theme: memviz_view::theme::Theme,
    /// Drawn from the held copies ([`HeldPlot`]) rather than exactly.
    preview: bool,
}

impl CanvasKey {
    /// The part of the key that the timeline's base shows (all but what the pointer points at
    /// and the analysis panel's marks).
    fn base(&self) -> CanvasKey {
        CanvasKey {
            hover: None,
            pinned: None,
            analysis: 0,
            search: memviz_core::search::Query::default(),
            pool_hover: None,
            cursor_entry: None,
            ..self.clone()
        }
    }

    fn of(fr: &Frame<'_>, preview: bool) -> CanvasKey {
        CanvasKey {
            preview,
            current: fr.state.current(),
            generation: fr.state.generation(),
            view: fr.state.view(),
            viewport: fr.file().map(|f| (f.viewport, f.x_axis)),
            hover: if hover_on_svg(fr) { None } else { fr.state.hover() },
            pinned: fr.state.pinned(),
            brush: match fr.state.drag() {
                Some(Drag::Brush { start, end, .. }) => Some((start, end)),
                _ => None,
            },
            sizes: (fr.state.plot_css(), fr.state.minimap_css(), fr.state.dpr()),
            minimap_columns: fr.derived.minimap_cols.len(),
            analysis: fr.state.analysis().canvas_seq,
            search: fr.state.search().clone(),
            pool_hover: fr.state.pool_hover(),
            cursor_entry: fr.state.cursor_entry(),
            theme: fr.state.theme().theme(),
        }
    }
}
