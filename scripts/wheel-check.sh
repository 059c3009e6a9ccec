#!/usr/bin/env bash
# Builds the wheel (scripts/build-wheel.sh), installs it into a fresh venv and checks it there
# (tests/python/test_wheel.py): `memviz --version`, byte-identical `stats`, the Python API on a
# path, bytes and a dict, the notebook iframe. It leaves the pages that API wrote in
# target/wheel-check/pages for tests/e2e/test/wheel.test.mjs, which opens them in Chromium
# (export MEMVIZ_WHEEL_PAGE_DIR=target/wheel-check/pages). MEMVIZ_VIEWER_DIST: a built page to
# embed (else build-wheel.sh builds one).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wheel.sh
work=target/wheel-check
rm -rf "$work"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-index target/wheels/memviz-*.whl
# Outside the repository, so `import memviz` finds the installed package, not python/memviz.
pages="$PWD/$work/pages"
mkdir -p "$pages"
(cd "$work" && PATH="$PWD/venv/bin:$PATH" MEMVIZ_WHEEL_PAGE_DIR="$pages" venv/bin/python -m unittest discover -s "$OLDPWD/tests/python" -v)
ls -l target/wheels/memviz-*.whl
