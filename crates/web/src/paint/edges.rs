//! The band edges of the visible window in device pixels (`PlotDev`), sampled per pixel
//! column, and the paths that trace them (on a canvas, or as SVG path data: `PathSink`).

use memviz_core::timeline::{BandEdges, Layout};
use memviz_view::decimate::decimate_into;
use memviz_view::state::OpenFile;
use memviz_view::viewport::{PlotRect, Viewport};
use memviz_view::xmap::XMap;
use web_sys::CanvasRenderingContext2d;

use super::{FrameInfo, ViewEdges};

/// Samples per device pixel of width at most, and in all, for band edges.
pub(crate) const MAX_EDGE_SAMPLES: usize = 4096;

/// Lower edges of the bands `wanted` inside steps `[s_left, s_right]`, sampled about once per
/// device pixel (every step when zoomed in that far, so the drawing is then exact).
pub(crate) fn view_edges(layout: &Layout, wanted: &[u32], s_left: f64, s_right: f64, width_dev: f64) -> BandEdges {
    let mut wanted = wanted.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let samples = layout.sample_steps(s_left, s_right, (width_dev.ceil().max(2.0) as usize).min(MAX_EDGE_SAMPLES));
    layout.band_edges(&wanted, &samples)
}

/// The lower edge of band `edges.bands[i]` inside steps `[s_left, s_right]`, in device pixels,
/// decimated: from where the band appears to where it is freed, through its sampled offsets.
pub(crate) fn band_edge(
    layout: &Layout,
    edges: &BandEdges,
    i: usize,
    s_left: f64,
    s_right: f64,
    to_dev: &impl Fn(f64, f64) -> (f64, f64),
    out: &mut Vec<(f64, f64)>,
) {
    out.clear();
    let (Some(&band), vertices) = (edges.bands.get(i), edges.edge(i)) else {
        return;
    };
    let (Some(&(_, first_off)), Some(&(_, last_off))) = (vertices.first(), vertices.last()) else {
        return;
    };
    let (first, last) = layout.band_step_range(band);
    let (first, last) = (f64::from(first), f64::from(last));
    if last <= s_left || first >= s_right || last <= first {
        return;
    }
    let start = first.max(s_left);
    let end = last.min(s_right);
    let inner = vertices.iter().filter(|v| v.0 > start && v.0 < end).map(|&(x, off)| to_dev(x, off));
    let pts = std::iter::once(to_dev(start, first_off)).chain(inner).chain(std::iter::once(to_dev(end, last_off)));
    decimate_into(pts, out);
}

/// Calls `f(band, edge)` with the device-pixel lower edge of each of `bands` that shows inside
/// steps `[s_left, s_right]` (bands in ascending order).
pub(crate) fn for_each_band_edge(
    layout: &Layout,
    bands: &[u32],
    s_left: f64,
    s_right: f64,
    width_dev: f64,
    to_dev: &impl Fn(f64, f64) -> (f64, f64),
    mut f: impl FnMut(u32, &[(f64, f64)]),
) {
    let edges = view_edges(layout, bands, s_left, s_right, width_dev);
    let mut edge = Vec::new();
    for (i, &b) in edges.bands.iter().enumerate() {
        band_edge(layout, &edges, i, s_left, s_right, to_dev, &mut edge);
        if edge.len() >= 2 {
            f(b, &edge);
        }
    }
}

/// Drawing over the timeline of a file in device pixels: the visible steps, the scale, and the
/// mapping from (step, bytes) to device pixels. Shared by everything that outlines or colours
/// bands over the base layer (hover, pin, search matches, live-set rows, categories).
pub(crate) struct PlotDev<'a> {
    pub layout: &'a Layout,
    pub rect: PlotRect,
    pub dpr: f64,
    /// First and last step in view.
    pub s_left: f64,
    pub s_right: f64,
    /// Device pixels per byte.
    pub px_per_byte_dev: f64,
    v: &'a Viewport,
    xm: XMap<'a>,
    /// What the base layer drew, whose band edges are reused when they are of this view.
    frame: Option<&'a FrameInfo>,
}

impl<'a> PlotDev<'a> {
    pub(crate) fn new(f: &'a OpenFile, rect: PlotRect, dpr: f64) -> Self {
        PlotDev::of(&f.plot.layout, f.xmap(), &f.viewport, rect, dpr)
    }

    /// Over any layout, on any x axis and window (the Compare view's timelines).
    pub(crate) fn of(layout: &'a Layout, xm: XMap<'a>, v: &'a Viewport, rect: PlotRect, dpr: f64) -> Self {
        PlotDev {
            layout,
            rect,
            dpr,
            s_left: xm.step(v.x0),
            s_right: xm.step(v.x1),
            px_per_byte_dev: v.px_per_byte(&rect) * dpr,
            v,
            xm,
            frame: None,
        }
    }

    /// Reuses the band edges of the base layer's last frame where they are of this view.
    pub(crate) fn reusing(self, frame: &'a FrameInfo) -> Self {
        PlotDev { frame: Some(frame), ..self }
    }

    /// Device pixels of a point (step, bytes).
    pub(crate) fn to_dev(&self, step: f64, bytes: f64) -> (f64, f64) {
        (self.v.x_px(&self.rect, self.xm.pos(step)) * self.dpr, self.v.y_px(&self.rect, bytes) * self.dpr)
    }

    /// Saves the context, switches it to device pixels and clips it to the plot area; the caller
    /// restores it.
    pub(crate) fn clip(&self, ctx: &CanvasRenderingContext2d) {
        ctx.save();
        let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
        ctx.begin_path();
        let r = &self.rect;
        let d = self.dpr;
        ctx.rect(r.left_px * d, r.top_px * d, r.width_px * d, r.height_px * d);
        ctx.clip();
    }

    /// Traces the polygon of each of `bands` that shows in the window (at least one device pixel
    /// tall) and calls `paint(band)` to fill or stroke it.
    pub(crate) fn trace_bands(&self, ctx: &impl PathSink, bands: &[u32], mut paint: impl FnMut(u32)) {
        let to_dev = |step: f64, bytes: f64| self.to_dev(step, bytes);
        let width_dev = self.rect.width_px * self.dpr;
        let height_of = |b: u32| (self.layout.band_size(b) as f64 * self.px_per_byte_dev).max(1.0);
        let frame = self.frame;
        let key = ViewEdges::key(self.layout, self.s_left, self.s_right, width_dev);
        let drawn = frame.as_ref().and_then(|f| f.edges.as_ref()).filter(|e| (e.layout, e.window) == key);
        // Bands the base layer left out (smaller than it draws) get their edges swept here.
        let mut rest: Vec<u32> = Vec::new();
        match drawn {
            Some(d) => {
                let mut edge = Vec::new();
                for &b in bands {
                    match d.edges.bands.binary_search(&b) {
                        Ok(i) => {
                            band_edge(self.layout, &d.edges, i, self.s_left, self.s_right, &to_dev, &mut edge);
                            if edge.len() >= 2 {
                                trace_band(ctx, &edge, height_of(b));
                                paint(b);
                            }
                        }
                        Err(_) if (self.layout.band_size(b) as f64) < d.min_size_bytes => rest.push(b),
                        // Big enough but without a vertex in view: nothing shows.
                        Err(_) => {}
                    }
                }
            }
            None => rest.extend_from_slice(bands),
        }
        if rest.is_empty() {
            return;
        }
        for_each_band_edge(self.layout, &rest, self.s_left, self.s_right, width_dev, &to_dev, |b, edge| {
            trace_band(ctx, edge, height_of(b));
            paint(b);
        });
    }
}

/// Where a traced path goes: a canvas' current path, or the data of an SVG path ([`SvgPath`]).
pub(crate) trait PathSink {
    fn begin_path(&self);
    fn move_to(&self, x: f64, y: f64);
    fn line_to(&self, x: f64, y: f64);
    fn close_path(&self);
}

impl PathSink for CanvasRenderingContext2d {
    fn begin_path(&self) {
        CanvasRenderingContext2d::begin_path(self);
    }
    fn move_to(&self, x: f64, y: f64) {
        CanvasRenderingContext2d::move_to(self, x, y);
    }
    fn line_to(&self, x: f64, y: f64) {
        CanvasRenderingContext2d::line_to(self, x, y);
    }
    fn close_path(&self) {
        CanvasRenderingContext2d::close_path(self);
    }
}

/// An SVG path's data and its box ([`memviz_view::path::SvgPath`]), traced through the
/// [`PathSink`] the canvas is traced through.
#[derive(Default)]
pub(crate) struct SvgPath(std::cell::RefCell<memviz_view::path::SvgPath>);

impl SvgPath {
    /// The path data and the box around it, if it has a point.
    pub(crate) fn finish(self) -> Option<(String, (f64, f64, f64, f64))> {
        self.0.into_inner().finish()
    }
}

impl PathSink for SvgPath {
    fn begin_path(&self) {}
    fn move_to(&self, x: f64, y: f64) {
        self.0.borrow_mut().move_to(x, y);
    }
    fn line_to(&self, x: f64, y: f64) {
        self.0.borrow_mut().line_to(x, y);
    }
    fn close_path(&self) {
        self.0.borrow_mut().close();
    }
}

/// Traces a band's polygon ([`memviz_view::path::band_polygon`]) as a path of its own.
pub(crate) fn trace_band(ctx: &impl PathSink, edge: &[(f64, f64)], height_dev: f64) {
    ctx.begin_path();
    add_band_polygon(ctx, edge, height_dev);
    ctx.close_path();
}

/// Adds a band's polygon to the current path as a subpath left open: a fill closes it (and
/// closing each of thousands of subpaths costs the canvas more than the rest).
pub(crate) fn add_band_polygon(ctx: &impl PathSink, edge: &[(f64, f64)], height_dev: f64) {
    for (i, (x, y)) in memviz_view::path::band_polygon(edge, height_dev).enumerate() {
        if i == 0 {
            ctx.move_to(x, y);
        } else {
            ctx.line_to(x, y);
        }
    }
}
