#!/usr/bin/env bash
# Writes README's screenshots into docs/img/ (timeline.png, ranks.png, insights.png): the built
# page in headless Chromium, 1280×800, light theme (tests/e2e/screenshots.mjs). Builds the page
# only when dist/ has none; installs the end-to-end tests' npm packages when missing.
#
#   bash scripts/screenshots.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if [ ! -f dist/index.html ]; then
  trunk build --release --offline
fi
if [ ! -d tests/e2e/node_modules/playwright-core ]; then
  (cd tests/e2e && npm ci --no-audit --no-fund)
fi
out=$(realpath -m "${1:-docs/img}")
cd tests/e2e
node screenshots.mjs "$out"
