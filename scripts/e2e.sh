#!/usr/bin/env bash
# Builds the release page into dist/ and runs the end-to-end tests against it in headless
# Chromium. Screenshots go to tests/e2e/out/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
trunk build --release --offline
cd tests/e2e
exec node --test --test-concurrency=1 test/
