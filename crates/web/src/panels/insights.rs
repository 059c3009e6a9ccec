//! The Insights tab: iterations, growth per iteration, findings (each one highlights its
//! allocations when clicked) and out-of-memory explanations.

use std::fmt::Write;

use memviz_core::analysis::growth::{BoundarySource, Edge};
use memviz_core::analysis::oom::OomReport;
use memviz_core::analysis::{signed_size_text, site_label, size_text};
use memviz_core::describe::utc_time;
use memviz_core::snapshot::Snapshot;

use memviz_core::analysis::fragmentation::{FragPoint, FragSeries};
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

use super::{esc, Analysis};

/// `97.5 MiB (102228128 bytes)`.
pub fn sz(bytes: u64) -> String {
    format!("{} ({bytes} bytes)", size_text(bytes))
}

/// Writes the tab.
pub fn html(snap: &Snapshot, a: &Analysis, s: &mut String) {
    let i = &a.insights;
    let list = &i.iterations.list;
    let problems = i.findings.iter().filter(|f| f.problem).count();
    let _ = write!(
        s,
        "<p class=\"an-verdict {}\" data-problems=\"{problems}\">{}</p>",
        if problems > 0 { "bad" } else { "good" },
        if problems > 0 {
            format!(
                "{problems} problem{} found",
                if problems == 1 { "" } else { "s" }
            )
        } else {
            "No problem found".to_string()
        }
    );
    // Iterations.
    s.push_str("<h3>Iterations</h3><p class=\"an-iterations\">");
    match &i.iterations.source {
        None => s.push_str(
            "None found (no repeated annotation, no periodic shape of the live-bytes curve).",
        ),
        Some(BoundarySource::Annotation { family, edge }) => {
            let _ = write!(
                s,
                "{} iterations, {} of the <code>{}</code> annotations.",
                list.len(),
                if *edge == Edge::Start {
                    "from the starts"
                } else {
                    "ending at the ends"
                },
                esc(family)
            );
        }
        Some(BoundarySource::Periodic { period_rows, score }) => {
            let _ = write!(
                s,
                "{} iterations from the periodic live-bytes curve, about {period_rows} entries each (autocorrelation {score:.2}).",
                list.len()
            );
        }
    }
    s.push_str("</p>");
    if !list.is_empty() {
        s.push_str("<table class=\"an-table\"><thead><tr><th>#</th><th>label</th><th>entries</th><th>peak</th><th>end</th></tr></thead><tbody>");
        for it in list.iter().take(30) {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}..{}</td><td title=\"{} bytes\">{}</td><td title=\"{} bytes\">{}</td></tr>",
                it.index + 1,
                esc(&it.label),
                it.start_row,
                it.end_row,
                it.peak_bytes,
                size_text(it.peak_bytes),
                it.end_bytes,
                size_text(it.end_bytes)
            );
        }
        s.push_str("</tbody></table>");
    }
    // Growth.
    if let Some(g) = &i.growth {
        s.push_str("<h3>Growth</h3>");
        if g.significant {
            let _ = write!(
                s,
                "<p class=\"an-growth bad\">Growth: <b>{} bytes per iteration</b> ({})</p><table class=\"an-table\"><thead><tr><th>bytes/iteration</th><th>site</th></tr></thead><tbody>",
                g.bytes_per_iteration,
                signed_size_text(i128::from(g.bytes_per_iteration))
            );
            for st in g.stacks.iter().take(10) {
                let _ = write!(
                    s,
                    "<tr class=\"an-growing\"><td>{}</td><td>{}</td></tr>",
                    st.bytes_per_iteration,
                    esc(&site_label(snap, st.stack))
                );
            }
            s.push_str("</tbody></table>");
        } else {
            let _ = write!(
                s,
                "<p class=\"an-growth\">No steady growth (trend of live bytes at iteration ends: {} bytes per iteration).</p>",
                g.bytes_per_iteration
            );
        }
    }
    // Findings.
    s.push_str("<h3>Findings</h3>");
    if i.findings.is_empty() {
        s.push_str(
            "<p>No findings (too few iterations to judge growth; no out-of-memory entries).</p>",
        );
    }
    for (k, f) in i.findings.iter().enumerate() {
        let _ = write!(
            s,
            "<div class=\"finding {}\" data-act=\"finding\" data-i=\"{k}\" data-key=\"finding:{k}\" data-kind=\"{}\" data-elements=\"{}\" title=\"Click to highlight its {} allocations on the timeline\"><div class=\"f-title\"><span class=\"badge\">{}</span> {}</div>",
            if f.problem { "problem" } else { "note" },
            f.kind,
            f.elements.len(),
            f.elements.len(),
            if f.problem { "problem" } else { "note" },
            esc(&f.title)
        );
        if !f.details.is_empty() {
            s.push_str("<ul>");
            for d in &f.details {
                let _ = write!(s, "<li>{}</li>", esc(d));
            }
            s.push_str("</ul>");
        }
        for t in &f.suggestions {
            let _ = write!(s, "<p class=\"try\">Try: {}</p>", esc(t));
        }
        s.push_str("</div>");
    }
    for (k, o) in i.ooms.iter().enumerate() {
        oom_html(snap, o, k, s);
    }
    frag_html(&a.fragmentation, s);
}

/// Chart size, CSS px.
const FRAG_W_PX: f64 = 390.0;
const FRAG_H_PX: f64 = 120.0;

fn frag_html(fs: &FragSeries, s: &mut String) {
    let m = fs.max_unused.as_ref();
    let _ = write!(
        s,
        "<h3>Fragmentation over time</h3><p class=\"an-frag-summary\">{}</p><canvas class=\"an-frag\" data-points=\"{}\" data-max-unused-row=\"{}\" data-max-unused-bytes=\"{}\" aria-label=\"Reserved, allocated and largest free block over the trace\"></canvas><p class=\"an-legend\"><span class=\"sw reserved\"></span>reserved <span class=\"sw allocated\"></span>allocated <span class=\"sw unused\"></span>reserved − allocated <span class=\"sw largest\"></span>largest free block (x: trace entries)</p>",
        esc(&fs.summary()),
        fs.points.len(),
        m.and_then(|p| p.row).map_or(-1, i64::from),
        m.map_or(0, |p| p.unused_bytes())
    );
}

/// Draws the fragmentation series on its canvas.
pub fn draw_fragmentation(canvas: &HtmlCanvasElement, fs: &FragSeries, dpr: f64) {
    canvas.set_width((FRAG_W_PX * dpr).round() as u32);
    canvas.set_height((FRAG_H_PX * dpr).round() as u32);
    let Ok(Some(ctx)) = canvas.get_context("2d") else {
        return;
    };
    let Ok(ctx) = ctx.dyn_into::<CanvasRenderingContext2d>() else {
        return;
    };
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    let (left, right, top, bottom) = (52.0, FRAG_W_PX - 6.0, 6.0, FRAG_H_PX - 16.0);
    let max_bytes = fs
        .points
        .iter()
        .map(|p| p.reserved_bytes.max(p.allocated_bytes))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let rows = fs.entries.max(1) as f64;
    let x =
        |p: &FragPoint| left + (p.row.map_or(0.0, |r| f64::from(r) + 1.0) / rows) * (right - left);
    let y = |b: u64| bottom - (b as f64 / max_bytes) * (bottom - top);
    ctx.set_font("10px system-ui, sans-serif");
    ctx.set_fill_style_str("#555");
    ctx.set_text_align("right");
    ctx.set_text_baseline("middle");
    for k in 0..=2 {
        let b = max_bytes * f64::from(k) / 2.0;
        let yy = y(b as u64);
        let _ = ctx.fill_text(&size_text(b as u64), left - 4.0, yy);
        ctx.set_stroke_style_str("#ececec");
        ctx.begin_path();
        ctx.move_to(left, yy);
        ctx.line_to(right, yy);
        ctx.stroke();
    }
    if fs.points.is_empty() {
        return;
    }
    // Reserved minus allocated, filled.
    ctx.set_fill_style_str("rgba(214, 39, 40, 0.22)");
    ctx.begin_path();
    for (k, p) in fs.points.iter().enumerate() {
        let (xx, yy) = (x(p), y(p.reserved_bytes));
        if k == 0 {
            ctx.move_to(xx, yy)
        } else {
            ctx.line_to(xx, yy)
        }
    }
    for p in fs.points.iter().rev() {
        ctx.line_to(x(p), y(p.allocated_bytes.min(p.reserved_bytes)));
    }
    ctx.close_path();
    ctx.fill();
    let line = |colour: &str, width: f64, value: &dyn Fn(&FragPoint) -> u64| {
        ctx.set_stroke_style_str(colour);
        ctx.set_line_width(width);
        ctx.begin_path();
        for (k, p) in fs.points.iter().enumerate() {
            let (xx, yy) = (x(p), y(value(p)));
            if k == 0 {
                ctx.move_to(xx, yy)
            } else {
                ctx.line_to(xx, yy)
            }
        }
        ctx.stroke();
    };
    line("#4e79a7", 1.5, &|p| p.reserved_bytes);
    line("#59a14f", 1.2, &|p| p.allocated_bytes);
    line("#e15759", 1.2, &|p| p.largest_free_bytes);
    // The worst moment.
    if let Some(m) = &fs.max_unused {
        ctx.set_stroke_style_str("#d62728");
        ctx.set_line_width(1.0);
        let xx = x(m);
        ctx.begin_path();
        ctx.move_to(xx, top);
        ctx.line_to(xx, bottom);
        ctx.stroke();
    }
    ctx.set_fill_style_str("#555");
    ctx.set_text_align("left");
    ctx.set_text_baseline("top");
    let _ = ctx.fill_text("entry 0", left, bottom + 3.0);
    ctx.set_text_align("right");
    let _ = ctx.fill_text(&format!("entry {}", fs.entries), right, bottom + 3.0);
}

/// One out-of-memory explanation.
fn oom_html(snap: &Snapshot, o: &OomReport, k: usize, s: &mut String) {
    let _ = write!(
        s,
        "<section class=\"oom\" data-i=\"{k}\"><h3>Out of memory at entry {}{}</h3><table class=\"an-kv\">",
        o.row,
        o.time_us
            .map_or(String::new(), |t| format!(" ({})", esc(&utc_time(t))))
    );
    let mut kv = |k: &str, v: String| {
        let _ = write!(s, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    };
    kv("requested", sz(o.requested_bytes));
    if let Some(df) = o.device_free_bytes {
        kv("device free", sz(df));
    }
    kv("reserved", sz(o.reserved_bytes));
    kv(
        "allocated",
        format!(
            "{} (blocks {})",
            sz(o.allocated_bytes),
            size_text(o.allocated_block_bytes)
        ),
    );
    kv("free in segments", sz(o.free_in_segments_bytes));
    kv(
        "largest free block",
        format!("{} on the request's stream", sz(o.largest_free_bytes)),
    );
    kv("requested from", site_label(snap, o.stack));
    s.push_str("</table>");
    if !o.pools.is_empty() {
        s.push_str("<h4>Free space by stream and pool</h4><table class=\"an-table\"><thead><tr><th>stream</th><th>pool</th><th>segments</th><th>reserved</th><th>free</th><th>largest free</th></tr></thead><tbody>");
        for p in &o.pools {
            let pool = snap
                .pools
                .get(p.pool as usize)
                .map_or_else(String::new, |x| format!("({}, {})", x.0, x.1));
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td title=\"{} bytes\">{}</td></tr>",
                p.stream,
                esc(&pool),
                p.segments,
                size_text(p.reserved_bytes),
                size_text(p.free_bytes),
                p.largest_free_bytes,
                size_text(p.largest_free_bytes)
            );
        }
        s.push_str("</tbody></table>");
    }
    s.push_str("<h4>What happened</h4><ul>");
    for d in &o.diagnosis {
        let _ = write!(s, "<li>{}</li>", esc(d));
    }
    let _ = write!(
        s,
        "</ul><h4 class=\"clickable\" data-act=\"oom\" data-i=\"{k}\" data-key=\"oom:{k}\" title=\"Click to highlight them on the timeline\">Top holders ({} allocations)</h4><table class=\"an-table\"><thead><tr><th>bytes</th><th>count</th><th>site</th></tr></thead><tbody>",
        o.holders.count
    );
    for g in o.holders.by_site.iter().take(5) {
        let _ = write!(
            s,
            "<tr><td title=\"{} bytes\">{}</td><td>{}</td><td>{}</td></tr>",
            g.bytes,
            size_text(g.bytes),
            g.count,
            esc(&g.label)
        );
    }
    s.push_str("</tbody></table><h4>What to try</h4><ul class=\"try\">");
    for t in &o.suggestions {
        let _ = write!(s, "<li>{}</li>", esc(t));
    }
    s.push_str("</ul></section>");
}
