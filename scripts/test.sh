#!/usr/bin/env bash
# Installs whatever is missing (scripts/setup.sh), then runs every test:
#   1. builds the page (dist/) so the CLI embeds the viewer for its offline-HTML commands;
#   2. core and CLI tests, natively (unit, integration, reference-output, hostile, property);
#   3. the core crate built for wasm32 on its own, and a check that it has no browser crates;
#   4. the web crate's tests in headless Chromium (wasm-bindgen-test);
#   5. the Python wheel: built once with that page embedded, installed into a fresh venv, checked
#      there (scripts/wheel-check.sh); its pages are opened in Chromium by the e2e tests;
#   6. end-to-end tests of the built page in headless Chromium (playwright-core).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh

step() { printf '\n==> %s\n' "$*"; }

step "build the page"
trunk build --release --offline

step "core and CLI tests"
cargo test -p memviz-core -p memviz

step "core builds for wasm32 without browser crates"
cargo build -p memviz-core --target wasm32-unknown-unknown
if cargo tree -p memviz-core --target wasm32-unknown-unknown -e normal | grep -E "web-sys|js-sys|wasm-bindgen|gloo"; then
  echo "memviz-core must not depend on browser crates" >&2
  exit 1
fi

step "web crate tests in headless Chromium"
bash scripts/wasm-test.sh

step "the Python wheel in a fresh venv"
MEMVIZ_VIEWER_DIST="$PWD/dist" bash scripts/wheel-check.sh
export MEMVIZ_WHEEL_PAGE_DIR="$PWD/target/wheel-check/pages"

step "end-to-end tests of the built page"
cd tests/e2e
node --test --test-concurrency=1 test/
