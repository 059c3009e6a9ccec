//! Self-contained HTML pages: the viewer (wasm, JS, CSS) and optionally snapshots, inlined into
//! one file that opens from `file://` with the network switched off. The page's
//! Content-Security-Policy allows only the inlined script and style (by hash) and no connections.

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The pieces of the built viewer.
pub struct Viewer {
    /// Trunk's index.html (its `<body>` is reused).
    pub index_html: &'static str,
    /// The wasm-bindgen ES module.
    pub js: &'static str,
    /// The WebAssembly module.
    pub wasm: &'static [u8],
    /// The page's stylesheet.
    pub css: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/viewer.rs"));

/// What the page opens with.
pub struct Embedded<'a> {
    /// File name shown in the page.
    pub name: &'a str,
    /// The snapshot's bytes.
    pub bytes: &'a [u8],
}

/// Page options carried to the viewer.
#[derive(Default)]
pub struct PageOptions {
    /// View to select (`active-memory-timeline`, `allocator-state-history`, ...).
    pub view: Option<String>,
    /// Device to select.
    pub device: Option<i64>,
    /// Hide allocations freed within the trace.
    pub filter_freed: bool,
    /// Show the first two files side by side in the Compare view.
    pub compare: bool,
}

fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(digest))
}

/// A JSON string literal safe inside a `<script>` element.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()).replace('<', "\\u003c")
}

/// The `<body>` of Trunk's index.html without its script tags.
fn body_of(index_html: &str) -> String {
    let start = index_html.find("<body").and_then(|i| index_html[i..].find('>').map(|j| i + j + 1)).unwrap_or(0);
    let end = index_html.rfind("</body>").unwrap_or(index_html.len());
    let mut body = index_html.get(start..end).unwrap_or("").to_string();
    // Drop any script tags Trunk added.
    while let Some(i) = body.find("<script") {
        let Some(j) = body[i..].find("</script>") else { break };
        body.replace_range(i..i + j + "</script>".len(), "");
    }
    body
}

/// Writes a self-contained page.
pub fn page(viewer: &Viewer, title: &str, files: &[Embedded<'_>], opts: &PageOptions) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let wasm_b64 = b64.encode(viewer.wasm);
    // The wasm-bindgen module, then the start-up: decode the inlined wasm and start the page.
    let script = format!(
        "{js}\n;(async () => {{\n  const el = document.getElementById('error');\n  try {{\n    const b = atob('{wasm_b64}');\n    const bytes = new Uint8Array(b.length);\n    for (let i = 0; i < b.length; i++) bytes[i] = b.charCodeAt(i);\n    await __wbg_init({{ module_or_path: bytes }});\n    start();\n  }} catch (e) {{\n    if (el) {{ el.textContent = `memviz could not start: ${{e}}`; el.hidden = false; }}\n    throw e;\n  }}\n}})();\n",
        js = viewer.js
    );
    let files_json: Vec<String> = files
        .iter()
        .map(|f| format!("{{\"name\":{},\"base64\":\"{}\"}}", json_string(f.name), b64.encode(f.bytes)))
        .collect();
    let config = format!(
        "{{\"files\":[{}],\"view\":{},\"device\":{},\"filter_freed\":{},\"compare\":{}}}",
        files_json.join(","),
        opts.view.as_deref().map_or_else(|| "null".to_string(), json_string),
        opts.device.map_or_else(|| "null".to_string(), |d| d.to_string()),
        opts.filter_freed,
        opts.compare
    );
    let csp = format!(
        "default-src 'none'; script-src {} 'wasm-unsafe-eval'; style-src {}; img-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'",
        csp_hash(&script),
        csp_hash(viewer.css)
    );
    let body = body_of(viewer.index_html);
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"referrer\" content=\"no-referrer\">\n<title>{title}</title>\n<style>{css}</style>\n</head>\n<body>{body}\n<script type=\"application/json\" id=\"memviz-embedded\">{config}</script>\n<script type=\"module\">{script}</script>\n</body>\n</html>\n",
        title = memviz_core::format::escape_html(title),
        css = viewer.css,
    )
}

/// The message for builds without a viewer.
pub const NO_VIEWER: &str = "this memviz was built without the web viewer, so it cannot write HTML pages: run scripts/build-viewer.sh (it builds dist/ with Trunk), then rebuild memviz (cargo build --release -p memviz)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_drops_scripts() {
        let b = body_of("<html><head></head><body class=x><p>hi</p><script src=a.js></script></body></html>");
        assert_eq!(b, "<p>hi</p>");
    }

    #[test]
    fn hashes_are_csp_sources() {
        assert!(csp_hash("x").starts_with("'sha256-"));
    }
}
