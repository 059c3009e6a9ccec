//! Canvas resources the page keeps from frame to frame: the held copies of the plot area
//! ([`HeldPlot`]), putting the plot's pixels on a canvas ([`put_pixels`]), and sizing a
//! canvas' backing store ([`fit_canvas`]).

use memviz_view::theme::Theme;
use memviz_view::view::View;
use memviz_view::xmap::XAxis;
use wasm_bindgen::JsValue;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData};

/// What a held copy of the plot area shows, but for its window: the file and layout, the x
/// axis, the y scale, the canvas' size (CSS px and devicePixelRatio), bit for bit, and the theme.
pub type HeldWhat = (Option<usize>, usize, View, XAxis, u64, (u64, u64, u64), Theme);

/// Sizes a canvas' backing store to CSS size × devicePixelRatio.
pub fn fit_canvas(canvas: &HtmlCanvasElement, css_w: f64, css_h: f64, dpr: f64) {
    let w = (css_w * dpr).round().max(1.0) as u32;
    let h = (css_h * dpr).round().max(1.0) as u32;
    if canvas.width() != w {
        canvas.set_width(w);
    }
    if canvas.height() != h {
        canvas.set_height(h);
    }
}

/// A copy of the plot area of an exactly drawn base frame (bands and fills, no grid), kept off
/// screen. A zoom or a pan changes only the x window, so its first frame stretches the copies
/// into the new window at once (a `drawImage` each) and the exact drawing follows once the
/// input rests: the very next frame shows the new window, whatever the trace's size.
pub struct HeldPlot {
    pub(crate) canvas: HtmlCanvasElement,
    ctx: CanvasRenderingContext2d,
    /// What the copy shows and its window `(x0, x1)`, when it holds one.
    held: std::cell::Cell<Option<(HeldWhat, f64, f64)>>,
}

impl HeldPlot {
    /// An empty copy (a canvas that is never put in the document).
    pub fn new(document: &web_sys::Document) -> Result<HeldPlot, JsValue> {
        use wasm_bindgen::JsCast as _;
        let canvas: HtmlCanvasElement =
            document.create_element("canvas")?.dyn_into().map_err(|_| JsValue::from_str("no canvas element"))?;
        canvas.set_width(0);
        canvas.set_height(0);
        let ctx = canvas
            .get_context("2d")?
            .ok_or_else(|| JsValue::from_str("no 2d context"))?
            .dyn_into::<CanvasRenderingContext2d>()
            .map_err(|_| JsValue::from_str("no 2d context"))?;
        Ok(HeldPlot { canvas, ctx, held: std::cell::Cell::new(None) })
    }

    /// Sizes the copy's canvas to `(w, h)` device px and has its pixels allocated now.
    pub(crate) fn reserve(&self, size: (f64, f64)) {
        let (w, h) = (size.0.max(0.0) as u32, size.1.max(0.0) as u32);
        if self.canvas.width() != w || self.canvas.height() != h {
            self.held.set(None);
            self.canvas.set_width(w);
            self.canvas.set_height(h);
            self.ctx.clear_rect(0.0, 0.0, 1.0, 1.0);
        }
    }

    pub(crate) fn shows(&self, what: &HeldWhat) -> Option<(f64, f64)> {
        self.held.get().filter(|h| h.0 == *what).map(|h| (h.1, h.2))
    }

    /// Whether the copy has a canvas of its own yet (a copy into one not sized yet would
    /// allocate its pixels there and then).
    pub(crate) fn has_room(&self) -> bool {
        self.canvas.width() > 0 && self.canvas.height() > 0
    }

    /// Draws a copy of `size` (device px) with `draw`, which shows window `(x0, x1)` of `what`.
    pub(crate) fn keep_drawn(
        &self,
        size: (u32, u32),
        what: HeldWhat,
        window: (f64, f64),
        draw: impl FnOnce(&CanvasRenderingContext2d),
    ) {
        if size.0 == 0 || size.1 == 0 {
            self.held.set(None);
            return;
        }
        if self.canvas.width() != size.0 || self.canvas.height() != size.1 {
            self.canvas.set_width(size.0);
            self.canvas.set_height(size.1);
        } else {
            self.ctx.clear_rect(0.0, 0.0, f64::from(size.0), f64::from(size.1));
        }
        draw(&self.ctx);
        self.held.set(Some((what, window.0, window.1)));
    }

    /// Copies `(x, y, w, h)` of `from` (device px), which shows window `(x0, x1)` of `what`.
    pub(crate) fn keep(
        &self,
        from: &HtmlCanvasElement,
        area: (f64, f64, f64, f64),
        what: HeldWhat,
        window: (f64, f64),
    ) {
        let (x, y, w, h) = area;
        if w < 1.0 || h < 1.0 {
            self.held.set(None);
            return;
        }
        if self.canvas.width() != w as u32 || self.canvas.height() != h as u32 {
            self.canvas.set_width(w as u32);
            self.canvas.set_height(h as u32);
        } else {
            self.ctx.clear_rect(0.0, 0.0, w, h);
        }
        let ok = self
            .ctx
            .draw_image_with_html_canvas_element_and_sw_and_sh_and_dx_and_dy_and_dw_and_dh(
                from, x, y, w, h, 0.0, 0.0, w, h,
            )
            .is_ok();
        self.held.set(ok.then_some((what, window.0, window.1)));
    }
}

/// Puts `bytes` (RGBA rows of `size` px) on `ctx` at device px `at`, through an `ImageData`
/// that views them where they are, in the WebAssembly memory: no copy, and no pixel buffer of
/// the plot's size held in JavaScript between frames (one was 2.5 MB of a small file's renderer
/// memory).
pub fn put_pixels(ctx: &CanvasRenderingContext2d, bytes: &[u8], size: (u32, u32), at: (f64, f64)) {
    if bytes.len() as u64 != u64::from(size.0) * u64::from(size.1) * 4 {
        return;
    }
    // Nothing is allocated between making the view and putting it, so it stays valid.
    if let Ok(img) = ImageData::new_with_u8_clamped_array_and_sh(wasm_bindgen::Clamped(bytes), size.0, size.1) {
        let _ = ctx.put_image_data(&img, at.0, at.1);
    }
}
