#!/usr/bin/env bash
# Installs whatever is missing (scripts/setup.sh), then runs every check and test:
#   1. the house style: rustfmt, clippy (natively and for wasm32, warnings are errors) and no
#      import cycle between the modules of a crate (scripts/check-cycles.py);
#   2. builds the page (dist/) so the CLI embeds the viewer for its offline-HTML commands;
#   3. core, view and CLI tests, natively (unit, integration, reference-output, hostile, property;
#      the page's logic in memviz-view);
#   4. the core and view crates built for wasm32 on their own, and a check that they have no
#      browser crates;
#   5. the web crate's tests in headless Chromium (wasm-bindgen-test);
#   6. the Python wheel: built once with that page embedded, installed into a fresh venv, checked
#      there (scripts/wheel-check.sh); its pages are opened in Chromium by the e2e tests;
#   7. end-to-end tests of the built page in headless Chromium (playwright-core).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh

step() { printf '\n==> %s\n' "$*"; }

# clippy::too_many_lines is on (at warn, so a new long function fails here); the long functions
# carry an allow with their reason. The web crate's modules still import each other in a cycle
# (its state is moving into memviz-view), so the cycle check leaves it out for now.
step "rustfmt"
cargo fmt --all --check

step "clippy (native and wasm32)"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p memviz-core -p memviz-view -p memviz-web --target wasm32-unknown-unknown -- -D warnings

step "no import cycle between modules"
python3 scripts/check-cycles.py crates/core crates/view crates/cli crates/web

step "build the page"
trunk build --release --offline

step "core, view, CLI and the page's native tests"
cargo test -p memviz-core -p memviz-view -p memviz -p memviz-web

step "PyTorch's viewer tests, restated (tests/data/conformance): the pass count"
cargo test -p memviz --test conformance -- --nocapture 2>&1 | grep -E "conformance:|test result"

step "core and view build for wasm32 without browser crates"
cargo build -p memviz-core -p memviz-view --target wasm32-unknown-unknown
for crate in memviz-core memviz-view; do
  if cargo tree -p "$crate" --target wasm32-unknown-unknown -e normal | grep -E "web-sys|js-sys|wasm-bindgen|gloo"; then
    echo "$crate must not depend on browser crates" >&2
    exit 1
  fi
done

step "web crate tests in headless Chromium"
bash scripts/wasm-test.sh

step "the Python wheel in a fresh venv"
MEMVIZ_VIEWER_DIST="$PWD/dist" bash scripts/wheel-check.sh
export MEMVIZ_WHEEL_PAGE_DIR="$PWD/target/wheel-check/pages"

step "end-to-end tests of the built page"
cd tests/e2e
node --test --test-concurrency=1 test/
