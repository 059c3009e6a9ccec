//! The page's elements, found once by id ([`Ui::find`]), with the canvases' 2D contexts, and
//! the clock and marks of `window.performance`.

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    CanvasRenderingContext2d, Document, HtmlCanvasElement, HtmlElement, HtmlInputElement, HtmlProgressElement,
    HtmlSelectElement, Performance, Window,
};

use crate::canvas::HeldPlot;

/// The page's elements.
pub struct Ui {
    /// The window.
    pub window: Window,
    /// The document.
    pub document: Document,
    /// `window.performance`.
    pub performance: Option<Performance>,
    /// The file picker.
    pub file_input: HtmlInputElement,
    /// "Try a demo".
    pub demo_button: HtmlElement,
    /// Loaded files.
    pub file_select: HtmlSelectElement,
    /// Devices of the current file.
    pub device_select: HtmlSelectElement,
    /// Views.
    pub view_select: HtmlSelectElement,
    /// Detail slider.
    pub detail: HtmlInputElement,
    /// "Detail: N of M entries".
    pub detail_label: HtmlElement,
    /// Steps or time.
    pub x_axis_select: HtmlSelectElement,
    /// Load progress.
    pub progress: HtmlProgressElement,
    /// Stops the load in progress.
    pub cancel_button: HtmlElement,
    /// Status line.
    pub status: HtmlElement,
    /// Error box.
    pub error: HtmlElement,
    /// The error box's text.
    pub error_text: HtmlElement,
    /// The error box's dismiss button.
    pub error_close: HtmlElement,
    /// The timeline canvas: what the pointer points at and other marks, over `plot_layer`.
    pub plot: HtmlCanvasElement,
    /// Its context.
    pub plot_ctx: CanvasRenderingContext2d,
    /// The canvas under `plot` (`#plot-base`, made here) holding the rest of the timeline, so
    /// that a frame where only the marks change leaves it alone.
    pub plot_layer: HtmlCanvasElement,
    /// Its context.
    pub plot_layer_ctx: CanvasRenderingContext2d,
    /// `#plot-hover`: the hovered band's outline over a small timeline, an SVG of the outline's
    /// size (made by the page's code).
    pub hover_svg: web_sys::SvgElement,
    /// Its one path.
    pub hover_path: web_sys::Element,
    /// Copies of the last exact plot area and of the last exact one of the whole window, that
    /// a zoom or pan stretches into its first frame ([`HeldPlot`]).
    pub held: [HeldPlot; 2],
    /// The overview canvas.
    pub minimap: HtmlCanvasElement,
    /// Its context.
    pub minimap_ctx: CanvasRenderingContext2d,
    /// The stack panel (`#stack`).
    pub stack: HtmlElement,
    /// Shown before any file is open.
    pub empty: HtmlElement,
    /// Shown while files are dragged over the page.
    pub drop_overlay: HtmlElement,
    /// The part of the page that holds the plot.
    pub main: HtmlElement,
}

/// The element with this id, as a `T`; an error naming what is missing otherwise.
pub fn by_id<T: JsCast>(document: &Document, id: &str) -> Result<T, JsValue> {
    document
        .get_element_by_id(id)
        .ok_or_else(|| JsValue::from_str(&format!("the page has no #{id}")))?
        .dyn_into::<T>()
        .map_err(|_| JsValue::from_str(&format!("#{id} is not the element expected")))
}

/// The element with this id, as a `T`, where the page has one (parts that may be absent).
pub fn find<T: JsCast>(document: &Document, id: &str) -> Option<T> {
    document.get_element_by_id(id)?.dyn_into::<T>().ok()
}

/// The 2D context of a canvas.
pub fn context_2d(canvas: &HtmlCanvasElement) -> Result<CanvasRenderingContext2d, JsValue> {
    canvas
        .get_context("2d")?
        .ok_or_else(|| JsValue::from_str("no 2D canvas context"))?
        .dyn_into::<CanvasRenderingContext2d>()
        .map_err(|_| JsValue::from_str("no 2D canvas context"))
}

impl Ui {
    /// Finds the page's elements.
    pub fn find() -> Result<Ui, JsValue> {
        let window = web_sys::window().ok_or_else(|| JsValue::from_str("no window"))?;
        let document = window.document().ok_or_else(|| JsValue::from_str("no document"))?;
        let plot: HtmlCanvasElement = by_id(&document, "plot")?;
        let minimap: HtmlCanvasElement = by_id(&document, "minimap")?;
        let plot_layer: HtmlCanvasElement =
            document.create_element("canvas")?.dyn_into().map_err(|_| JsValue::from_str("no canvas element"))?;
        plot_layer.set_id("plot-base");
        plot_layer.set_attribute("aria-hidden", "true")?;
        if let Some(parent) = plot.parent_node() {
            parent.insert_before(&plot_layer, Some(&plot))?;
        }
        let svg_ns = Some("http://www.w3.org/2000/svg");
        let hover_svg: web_sys::SvgElement =
            document.create_element_ns(svg_ns, "svg")?.dyn_into().map_err(|_| JsValue::from_str("no svg element"))?;
        hover_svg.set_id("plot-hover");
        hover_svg.set_attribute("aria-hidden", "true")?;
        hover_svg.style().set_property("display", "none")?;
        let hover_path = document.create_element_ns(svg_ns, "path")?;
        hover_path.set_attribute("fill", "none")?;
        hover_svg.append_child(&hover_path)?;
        if let Some(parent) = plot.parent_node() {
            parent.append_child(&hover_svg)?;
        }
        let held = [HeldPlot::new(&document)?, HeldPlot::new(&document)?];
        Ok(Ui {
            held,
            plot_layer_ctx: context_2d(&plot_layer)?,
            plot_layer,
            hover_svg,
            hover_path,
            performance: window.performance(),
            file_input: by_id(&document, "file-input")?,
            demo_button: by_id(&document, "demo")?,
            file_select: by_id(&document, "file-select")?,
            device_select: by_id(&document, "device-select")?,
            view_select: by_id(&document, "view-select")?,
            detail: by_id(&document, "detail")?,
            detail_label: by_id(&document, "detail-label")?,
            x_axis_select: by_id(&document, "x-axis")?,
            progress: by_id(&document, "progress")?,
            cancel_button: by_id(&document, "cancel-load")?,
            status: by_id(&document, "status")?,
            error: by_id(&document, "error")?,
            error_text: by_id(&document, "error-text")?,
            error_close: by_id(&document, "error-close")?,
            plot_ctx: context_2d(&plot)?,
            minimap_ctx: context_2d(&minimap)?,
            plot,
            minimap,
            stack: by_id(&document, "stack")?,
            empty: by_id(&document, "empty")?,
            drop_overlay: by_id(&document, "drop-overlay")?,
            main: by_id(&document, "main")?,
            window,
            document,
        })
    }

    /// `performance.now()` in ms (0 without a Performance object).
    pub fn now_ms(&self) -> f64 {
        self.performance.as_ref().map_or(0.0, Performance::now)
    }

    /// `performance.mark(name)`.
    pub fn mark(&self, name: &str) {
        if let Some(p) = &self.performance {
            let _ = p.mark(name);
        }
    }

    /// Marks the performance timeline as [`Ui::mark`] does, keeping only the latest mark of that
    /// name (for marks of something repeated all day, such as each refocus).
    pub fn mark_latest(&self, name: &str) {
        if let Some(p) = &self.performance {
            p.clear_marks_with_mark_name(name);
            let _ = p.mark(name);
        }
    }

    /// Measures from mark `from` to mark `to` as `name`, keeping only the latest such measure.
    pub fn measure_latest(&self, name: &str, from: &str, to: &str) {
        if let Some(p) = &self.performance {
            p.clear_measures_with_measure_name(name);
            let _ = p.measure_with_start_mark_and_end_mark(name, from, to);
        }
    }
}
