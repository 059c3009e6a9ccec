#!/usr/bin/env bash
# Builds the Python wheel into target/wheels/: the `memviz` binary (crates/cli) with the release
# viewer embedded, plus the pure-Python package in python/memviz (pyproject.toml, maturin with
# bindings = "bin"). `pip install target/wheels/memviz-*.whl` then gives `memviz` on PATH, HTML
# commands included, on a machine with no Rust.
#
#   bash scripts/build-wheel.sh                  the host's wheel (on Linux: manylinux2014)
#   bash scripts/build-wheel.sh --all            every target below, cross-built from Linux x86_64,
#                                                then checked (scripts/check-wheels.py)
#   bash scripts/build-wheel.sh --target TRIPLE  one of them
#
# Targets of --all (rustup targets; maturin links the Linux and macOS ones with zig from PyPI's
# `ziglang`, so a Linux binary needs only glibc 2.17's symbols and a macOS one needs no SDK):
#   x86_64-unknown-linux-gnu    manylinux2014_x86_64   (zig, glibc 2.17)
#   aarch64-unknown-linux-gnu   manylinux2014_aarch64  (zig, glibc 2.17)
#   universal2-apple-darwin     macosx_10_12_x86_64 + macosx_11_0_arm64, one universal2 wheel (zig)
#   x86_64-pc-windows-gnu       win_amd64              (Debian's MinGW-w64 linker)
# On Linux the host's wheel is built with zig too, so the test command's wheel is the same
# manylinux2014 one that --all makes. Elsewhere (the release's macOS and Windows runners) the
# host's wheel is built with the platform's own linker.
#
# The viewer: the page is built first (`trunk build --release --offline` into dist/), unless
# MEMVIZ_VIEWER_DIST names a built one already (scripts/test.sh passes the dist/ it has just
# built). The binary is built with MEMVIZ_REQUIRE_VIEWER=1, so a wheel without the viewer
# cannot be made. maturin and ziglang come from PyPI, into target/wheel-tools (a venv), when
# missing. Other arguments go to `maturin build`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

MATURIN_SPEC="maturin>=1.5,<2"
# Zig 0.14 is the newest release the maturin 1.x linker wrapper is known to drive.
ZIG_SPEC="ziglang>=0.13,<0.15"
ALL_TARGETS="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu universal2-apple-darwin x86_64-pc-windows-gnu"

targets=""
maturin_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --all) targets="$ALL_TARGETS" ;;
    --target)
      targets="${2:?--target needs a target triple}"
      shift
      ;;
    *) maturin_args+=("$1") ;;
  esac
  shift
done

host_os=$(uname -s)
host_arch=$(uname -m)
host_triple=$(rustc -vV | sed -n 's/^host: //p')
python=${PYTHON:-python3}
tools=target/wheel-tools
bin="$tools/bin"
[ -d "$tools/Scripts" ] && bin="$tools/Scripts" # a venv made by Windows' Python
if [ ! -x "$bin/maturin" ] && [ ! -x "$bin/maturin.exe" ]; then
  echo "build-wheel: installing maturin into $tools"
  "$python" -m venv "$tools"
  [ -d "$tools/Scripts" ] && bin="$tools/Scripts"
  "$bin/python" -m pip install --quiet --disable-pip-version-check "$MATURIN_SPEC"
fi
if [ "$host_os" = Linux ] && ! "$bin/python" -c "import ziglang" 2>/dev/null; then
  echo "build-wheel: installing $ZIG_SPEC into $tools (maturin links with zig)"
  "$bin/python" -m pip install --quiet --disable-pip-version-check "$ZIG_SPEC"
fi

# maturin runs zig as `python -m ziglang` with the first python on PATH: the venv's.
export PATH="$PWD/$bin:$PATH"

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

# One target: its rustup targets, its linker, then maturin. Prints why when it cannot be built.
build_one() {
  local target=$1 triples
  local args=(--release --out target/wheels)
  # The host's own triple builds into target/release, beside the plain release build.
  [ "$target" = "$host_triple" ] || args+=(--target "$target")
  case "$target" in
    universal2-apple-darwin) triples="x86_64-apple-darwin aarch64-apple-darwin" ;;
    *) triples=$target ;;
  esac
  for t in $triples; do
    if ! rustup target list --installed | grep -qx "$t"; then
      echo "build-wheel: adding the Rust target $t"
      rustup target add "$t" || {
        echo "build-wheel: $target: rustup could not add the standard library for $t" >&2
        return 1
      }
    fi
  done
  case "$target" in
    *-linux-gnu)
      if [ "$host_os" != Linux ]; then
        echo "build-wheel: $target is built on Linux (zig links it against glibc 2.17)" >&2
        return 1
      fi
      args+=(--zig --compatibility manylinux2014)
      ;;
    *-apple-darwin)
      if [ "$host_os" != Darwin ]; then
        # zig brings libSystem but no frameworks; chrono (through arrow) links CoreFoundation,
        # so the linker is given a stub of the few symbols it uses (scripts/macos-stub).
        args+=(--zig)
        for t in x86_64 aarch64; do
          export "CARGO_TARGET_${t^^}_APPLE_DARWIN_RUSTFLAGS=-C link-arg=-F$PWD/scripts/macos-stub/Frameworks"
        done
      fi
      ;;
    x86_64-pc-windows-gnu)
      # Rust's windows-gnu target links with MinGW-w64's gcc; Debian's package has it.
      if ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
        echo "build-wheel: $target needs x86_64-w64-mingw32-gcc (Debian: apt-get install gcc-mingw-w64-x86-64)" >&2
        return 1
      fi
      ;;
  esac
  "$bin/maturin" build "${args[@]}" ${maturin_args[@]+"${maturin_args[@]}"}
}

mkdir -p target/wheels
if [ -z "$targets" ]; then
  rm -f target/wheels/memviz-*.whl
  if [ "$host_os" = Linux ] && { [ "$host_arch" = x86_64 ] || [ "$host_arch" = aarch64 ]; }; then
    build_one "$host_arch-unknown-linux-gnu"
  else
    "$bin/maturin" build --release --out target/wheels ${maturin_args[@]+"${maturin_args[@]}"}
  fi
  ls -l target/wheels/memviz-*.whl
  exit 0
fi

rm -f target/wheels/memviz-*.whl
failed=()
for target in $targets; do
  echo "==> build-wheel: $target"
  if ! build_one "$target"; then
    failed+=("$target")
  fi
done
ls -l target/wheels/memviz-*.whl 2>/dev/null || true
if [ ${#failed[@]} -gt 0 ]; then
  echo "build-wheel: not built: ${failed[*]} (the reason is printed above each)" >&2
  exit 1
fi
if [ "$targets" = "$ALL_TARGETS" ]; then
  python3 scripts/check-wheels.py
fi
