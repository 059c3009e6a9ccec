#!/usr/bin/env bash
# Installs whatever is missing (scripts/setup.sh), then runs every test:
#   1. builds the page (dist/) so the CLI embeds the viewer for its offline-HTML commands;
#   2. core, view and CLI tests, natively (unit, integration, reference-output, hostile, property;
#      the page's logic in memviz-view);
#   3. the core and view crates built for wasm32 on their own, and a check that they have no
#      browser crates;
#   4. the web crate's tests in headless Chromium (wasm-bindgen-test);
#   5. end-to-end tests of the built page in headless Chromium (playwright-core).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh

step() { printf '\n==> %s\n' "$*"; }

step "build the page"
trunk build --release --offline

step "core, view and CLI tests"
cargo test -p memviz-core -p memviz-view -p memviz

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

step "end-to-end tests of the built page"
cd tests/e2e
node --test --test-concurrency=1 test/
