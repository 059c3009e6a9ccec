#!/usr/bin/env bash
# Builds the Python wheel into target/wheels/: the `memviz` binary (crates/cli) with the release
# viewer embedded, plus the pure-Python package in python/memviz (pyproject.toml, maturin with
# bindings = "bin"). `pip install target/wheels/memviz-*.whl` then gives `memviz` on PATH, HTML
# commands included, on a machine with no Rust.
#
# The viewer: the page is built first (`trunk build --release --offline` into dist/), unless
# MEMVIZ_VIEWER_DIST names a built one already (scripts/test.sh passes the dist/ it has just
# built). The binary is built with MEMVIZ_REQUIRE_VIEWER=1, so a wheel without the viewer
# cannot be made. maturin comes from PyPI, into target/wheel-tools (a venv), when missing.
# Extra arguments go to `maturin build`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

MATURIN_SPEC="maturin>=1.5,<2"
tools=target/wheel-tools
if [ ! -x "$tools/bin/maturin" ]; then
  echo "build-wheel: installing maturin into $tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check "$MATURIN_SPEC"
fi

if [ -z "${MEMVIZ_VIEWER_DIST:-}" ]; then
  MEMVIZ_SETUP=build bash scripts/setup.sh
  trunk build --release --offline
  export MEMVIZ_VIEWER_DIST="$PWD/dist"
fi
for f in index.html memviz-web.js memviz-web_bg.wasm style.css; do
  if [ ! -f "$MEMVIZ_VIEWER_DIST/$f" ]; then
    echo "build-wheel: $MEMVIZ_VIEWER_DIST/$f is missing: build the page first" >&2
    exit 1
  fi
done
export MEMVIZ_REQUIRE_VIEWER=1

rm -f target/wheels/memviz-*.whl
"$tools/bin/maturin" build --release --out target/wheels "$@"
ls -l target/wheels/memviz-*.whl
