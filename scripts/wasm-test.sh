#!/usr/bin/env bash
# Runs the web crate's wasm-bindgen tests in headless Chromium (wasm-bindgen-test-runner drives
# it through Debian's chromedriver). Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
# Browser options (Debian's chromium binary, no background networking); the runner adds
# headless, no-sandbox and disable-dev-shm-usage itself.
export WASM_BINDGEN_TEST_WEBDRIVER_JSON="${WASM_BINDGEN_TEST_WEBDRIVER_JSON:-$PWD/crates/web/webdriver.json}"
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-120}"
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
exec cargo test -p memviz-web --target wasm32-unknown-unknown "$@"
