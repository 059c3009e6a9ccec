#!/usr/bin/env bash
# Builds the wheel (scripts/build-wheel.sh), installs it into a fresh venv and checks it there
# (tests/python/test_wheel.py): `memviz --version`, byte-identical `stats`, the Python API on a
# path, bytes and a dict, the notebook iframe. It leaves the pages that API wrote in
# target/wheel-check/pages for tests/e2e/test/wheel.test.mjs, which opens them in Chromium
# (export MEMVIZ_WHEEL_PAGE_DIR=target/wheel-check/pages). MEMVIZ_VIEWER_DIST: a built page to
# embed (else build-wheel.sh builds one).
#
#   bash scripts/wheel-check.sh          builds the host's wheel, then checks it
#   bash scripts/wheel-check.sh WHEEL    checks a wheel already built (e.g. one of --all's)
set -euo pipefail
wheel=""
if [ $# -gt 0 ]; then
  wheel=$(realpath "$1")
  [ -f "$wheel" ] || { echo "wheel-check: no wheel at $1" >&2; exit 1; }
fi
cd "$(dirname "$0")/.."
if [ -z "$wheel" ]; then
  bash scripts/build-wheel.sh
  wheel=$(ls target/wheels/memviz-*.whl)
fi
work=target/wheel-check
rm -rf "$work"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel"
# Outside the repository, so `import memviz` finds the installed package, not python/memviz.
pages="$PWD/$work/pages"
mkdir -p "$pages"
(cd "$work" && PATH="$PWD/venv/bin:$PATH" MEMVIZ_WHEEL_PAGE_DIR="$pages" venv/bin/python -m unittest discover -s "$OLDPWD/tests/python" -v)
ls -l "$wheel"
