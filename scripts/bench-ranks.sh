#!/usr/bin/env bash
# Measures `memviz ranks` over a training run of 64 ranks: one generated snapshot of 1M entries
# (tests/gen/big_snapshot.py, ~89 MB) linked 64 times as rank0..rank63 (hard links, so the files
# take the disk space of one; `BENCH_COPY=1` copies instead), read with the release binary.
# Prints the wall time and peak resident memory of each run (/usr/bin/time -v).
# Usage: bash scripts/bench-ranks.sh [RUNS] (default 3); BENCH_DIR (default /tmp/memviz-bench-ranks).
# BENCH_REAL=1: the file has the shape of real `stacks="all"` captures (~48 C++ frames an entry,
# part of the frame lists copied per step: ~174 MB) instead.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
dir=${BENCH_DIR:-/tmp/memviz-bench-ranks}
ranks=${BENCH_RANKS:-64}
mkdir -p "$dir/run"
if [ "${BENCH_REAL:-}" = 1 ]; then
  big="$dir/real_1m.pickle"
  shape=(--extra-cpp-frames 48 --unique-stack-fraction 0.4)
else
  big="$dir/big_1m.pickle"
  shape=()
fi
if [ ! -f "$big" ]; then
  python3 tests/gen/big_snapshot.py --entries 1000000 "${shape[@]}" --out "$big"
fi
for r in $(seq 0 $((ranks - 1))); do
  f="$dir/run/rank${r}_memory_snapshot.pickle"
  if [ ! -f "$f" ]; then
    if [ "${BENCH_COPY:-}" = 1 ]; then cp "$big" "$f"; else ln "$big" "$f"; fi
  fi
done
cargo build --release -p memviz
bin=target/release/memviz
echo "memviz ranks over $ranks files of $(stat -c %s "$big") bytes ($(nproc) cores)"
"$bin" ranks "$dir/run" > /dev/null # warm the page cache
for i in $(seq "$runs"); do
  /usr/bin/time -v "$bin" ranks --json "$dir/run" 2> "$dir/time.txt" > "$dir/out.json"
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$dir/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f MB", $2 / 1024 }' "$dir/time.txt")
  echo "run $i: $wall wall, $rss peak resident"
done
