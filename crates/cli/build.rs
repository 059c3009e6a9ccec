//! Embeds the built viewer (Trunk's `dist/`: the wasm-bindgen JS module, the wasm, the CSS and the
//! page body) into the binary, so `memviz trace-plot` and friends write self-contained pages with
//! no separate web build at run time. Build the viewer first (`scripts/build-viewer.sh`); without
//! it the binary still builds (with a warning) and those commands explain how to get a viewer.
//! `MEMVIZ_REQUIRE_VIEWER=1` makes a missing viewer an error instead: the wheel build
//! (`scripts/build-wheel.sh`) sets it, so a wheel always carries the viewer.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dist = std::env::var("MEMVIZ_VIEWER_DIST").map(PathBuf::from).unwrap_or_else(|_| manifest.join("../../dist"));
    println!("cargo:rerun-if-env-changed=MEMVIZ_VIEWER_DIST");
    println!("cargo:rerun-if-env-changed=MEMVIZ_REQUIRE_VIEWER");
    let files = ["index.html", "memviz-web.js", "memviz-web_bg.wasm", "style.css"];
    for f in files {
        println!("cargo:rerun-if-changed={}", dist.join(f).display());
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("viewer.rs");
    let all_there = files.iter().all(|f| dist.join(f).is_file());
    let code = if all_there {
        let p = |f: &str| -> String { path_literal(&dist.join(f)) };
        format!(
            "/// The built viewer, when it was present at build time.\npub const VIEWER: Option<Viewer> = Some(Viewer {{ index_html: include_str!({}), js: include_str!({}), wasm: include_bytes!({}), css: include_str!({}) }});\n",
            p("index.html"),
            p("memviz-web.js"),
            p("memviz-web_bg.wasm"),
            p("style.css")
        )
    } else {
        let missing = format!(
            "no built viewer in {} (run scripts/build-viewer.sh, or set MEMVIZ_VIEWER_DIST): this memviz cannot write HTML pages (trace-plot, segment-plot, viewer)",
            dist.display()
        );
        if std::env::var("MEMVIZ_REQUIRE_VIEWER").is_ok_and(|v| v == "1") {
            eprintln!("error: {missing}");
            std::process::exit(1);
        }
        println!("cargo:warning={missing}");
        "/// The built viewer, when it was present at build time.\npub const VIEWER: Option<Viewer> = None;\n"
            .to_string()
    };
    if let Err(e) = std::fs::write(&out, code) {
        println!("cargo:warning=cannot write {}: {e}", out.display());
    }
}

fn path_literal(p: &Path) -> String {
    format!("{:?}", p.canonicalize().unwrap_or_else(|_| p.to_path_buf()).display().to_string())
}
