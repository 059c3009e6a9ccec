#!/usr/bin/env bash
# Builds the release page into dist/ and runs the end-to-end tests against it in headless
# Chromium. Screenshots go to tests/e2e/out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
trunk build --release --offline
# The wheel's pages, which test/wheel.test.mjs opens.
MEMVIZ_VIEWER_DIST="$PWD/dist" bash scripts/wheel-check.sh
export MEMVIZ_WHEEL_PAGE_DIR="$PWD/target/wheel-check/pages"
cd tests/e2e
exec node --test --test-concurrency=1 test/
