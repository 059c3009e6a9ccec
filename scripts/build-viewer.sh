#!/usr/bin/env bash
# Builds the page (release) into dist/, which `memviz` embeds when it is built afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
MEMVIZ_SETUP=build bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
exec trunk build --release --offline "$@"
