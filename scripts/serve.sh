#!/usr/bin/env bash
# Builds the page and serves it at http://127.0.0.1:8080/ (offline), rebuilding on changes.
# Installs only what building the page needs (MEMVIZ_SETUP=build: no browser, no npm).
set -euo pipefail
cd "$(dirname "$0")/.."
MEMVIZ_SETUP=build bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
exec trunk serve --offline --address 127.0.0.1 --port 8080 "$@"
