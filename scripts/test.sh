#!/usr/bin/env bash
# Installs whatever is missing (scripts/setup.sh), then runs every check and test:
#   1. the house style: rustfmt, clippy (natively and for wasm32, warnings are errors), the API
#      docs (`cargo doc`, warnings such as broken intra-doc links are errors), no import cycle
#      between the modules of a crate (scripts/check-cycles.py), and the GitHub workflows linted
#      (actionlint);
#   2. builds the page (dist/) so the CLI embeds the viewer for its offline-HTML commands;
#   3. core, view and CLI tests, natively (unit, integration, reference-output, hostile, property;
#      the page's logic in memviz-view);
#   4. the core and view crates built for wasm32 on their own, and a check that they have no
#      browser crates;
#   5. the web crate's tests in headless Chromium (wasm-bindgen-test);
#   6. the Python wheel: built once with that page embedded, installed into a fresh venv, checked
#      there (scripts/wheel-check.sh); its pages are opened in Chromium by the e2e tests;
#   7. end-to-end tests of the built page in headless Chromium (playwright-core); none may skip.
# Everything a test reads is in the repository. MEMVIZ_CORPUS=DIR adds the opt-in check of other
# people's public snapshots (crates/cli/tests/corpus.rs): each *.pickle there with its
# NAME.ref.stats.txt / NAME.ref.trace.txt, byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh

step() { printf '\n==> %s\n' "$*"; }

# clippy::too_many_lines and clippy::wildcard_imports are on (at warn, so a new long function or
# glob import fails here); the long functions carry an allow with their reason.
step "rustfmt"
cargo fmt --all --check

step "clippy (native and wasm32)"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p memviz-core -p memviz-view -p memviz-web --target wasm32-unknown-unknown -- -D warnings

step "API docs (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

step "no import cycle between modules"
python3 scripts/check-cycles.py crates/core crates/view crates/cli crates/web

step "the GitHub workflows (actionlint, with shellcheck on their scripts)"
target/actionlint-venv/bin/actionlint

step "build the page"
trunk build --release --offline

step "core, view, CLI and the page's native tests"
cargo test -p memviz-core -p memviz-view -p memviz -p memviz-web

step "the public corpus (MEMVIZ_CORPUS)"
if [ -n "${MEMVIZ_CORPUS:-}" ]; then
  cargo clippy -p memviz --features corpus --tests -- -D warnings
  cargo test -p memviz --features corpus --test corpus -- --nocapture --test-threads=1
else
  echo "corpus: not given, so other people's public snapshots were not checked (MEMVIZ_CORPUS=DIR bash scripts/test.sh checks every *.pickle in DIR)"
fi

step "PyTorch's viewer tests, restated (tests/data/conformance): the pass count"
cargo test -p memviz --test cli conformance:: -- --nocapture 2>&1 | grep -E "conformance:|test result"

step "core and view build for wasm32 without browser crates"
cargo build -p memviz-core -p memviz-view --target wasm32-unknown-unknown
for crate in memviz-core memviz-view; do
  if cargo tree -p "$crate" --target wasm32-unknown-unknown -e normal | grep -E "web-sys|js-sys|wasm-bindgen|gloo"; then
    echo "$crate must not depend on browser crates" >&2
    exit 1
  fi
done

step "web crate tests in headless Chromium"
bash scripts/wasm-test.sh

step "the Python wheel in a fresh venv"
MEMVIZ_VIEWER_DIST="$PWD/dist" bash scripts/wheel-check.sh
export MEMVIZ_WHEEL_PAGE_DIR="$PWD/target/wheel-check/pages"

step "end-to-end tests of the built page (none may skip)"
# A test that cannot run must fail, naming what it lacks: no skip or todo option or call.
if grep -rnE "(\{ *|, *)(skip|todo)\b *[:,}]|\.(skip|todo)\(" tests/e2e/test tests/e2e/lib; then
  echo "the lines above let an end-to-end test skip: make it fail with the missing file's name instead" >&2
  exit 1
fi
log="$PWD/target/e2e.log"
cd tests/e2e
set +e
node --test --test-concurrency=1 --test-reporter=tap test/ 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if ! grep -qx '# skipped 0' "$log" || ! grep -qx '# todo 0' "$log"; then
  echo "end-to-end tests were skipped (see # skipped / # todo above)" >&2
  exit 1
fi
exit "$rc"
