#!/usr/bin/env python3
"""Independent figures for `memviz live` and memviz_core::analysis::live, from `pickle.load` only.

Usage: python3 tests/gen/verify_live.py SNAPSHOT.pickle [ENTRY|peak|start|end] [TOP]

Prints the entry of the moment, live requested bytes and allocations there, and the largest source
lines (sites, see verify_common.py) with bytes and counts. The expected numbers in
crates/core/src/analysis/live.rs and crates/cli/tests come from this script.
"""

import sys
from collections import defaultdict

from verify_common import life_site, lifetimes, live_after, live_series, load, peak


def main():
    path = sys.argv[1]
    at = sys.argv[2] if len(sys.argv) > 2 else "peak"
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    snap = load(path)
    lives = lifetimes(snap)
    initial, series = live_series(snap)
    if at == "peak":
        row, _ = peak(initial, series)
    elif at == "start":
        row = None
    elif at == "end":
        row = len(series) - 1 if series else None
    else:
        row = int(at)
    live = [l for l in lives if live_after(l, row)]
    total = sum(l["size"] for l in live)
    print(f"entry {row}: {total} bytes in {len(live)} allocations")
    by = defaultdict(lambda: [0, 0])
    for l in live:
        g = by[life_site(l)]
        g[0] += l["size"]
        g[1] += 1
    for lab, (b, c) in sorted(by.items(), key=lambda x: (-x[1][0], x[0]))[:top]:
        print(f"{b:>12} {c:>6}  {lab}")
    stacks = defaultdict(int)
    for l in live:
        stacks[tuple((f["filename"], f["line"], f["name"]) for f in l["frames"])] += l["size"]
    print(f"distinct stacks: {len(stacks)}")


if __name__ == "__main__":
    main()
