#!/usr/bin/env python3
"""Independent figures for `memviz compare` / memviz_core::analysis::compare, from `pickle.load`.

Usage: python3 tests/gen/verify_compare.py A.pickle B.pickle [TOP]

Prints both peaks (highest live requested bytes, first entry reaching it) and, at the two peaks,
live bytes per source line (site, see verify_common.py) in A and B with B - A, largest
differences first in both directions.
"""

import sys
from collections import defaultdict

from verify_common import life_site, lifetimes, live_after, live_series, load, peak


def by_site(snap, row):
    out = defaultdict(lambda: [0, 0])
    for l in lifetimes(snap):
        if live_after(l, row):
            g = out[life_site(l)]
            g[0] += l["size"]
            g[1] += 1
    return out


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    ra, pa = peak(*live_series(a))
    rb, pb = peak(*live_series(b))
    print(f"A peak {pa} at entry {ra}; B peak {pb} at entry {rb}; B - A = {pb - pa}")
    sa, sb = by_site(a, ra), by_site(b, rb)
    rows = []
    for k in set(sa) | set(sb):
        x, y = sa.get(k, [0, 0]), sb.get(k, [0, 0])
        rows.append((y[0] - x[0], k, x, y))
    print("more in B:")
    for d, k, x, y in sorted([r for r in rows if r[0] > 0], key=lambda r: (-r[0], r[1]))[:top]:
        print(f"  {d:+} A {x[0]} ({x[1]}) B {y[0]} ({y[1]}) {k}")
    print("more in A:")
    for d, k, x, y in sorted([r for r in rows if r[0] < 0], key=lambda r: (r[0], r[1]))[:top]:
        print(f"  {d:+} A {x[0]} ({x[1]}) B {y[0]} ({y[1]}) {k}")


if __name__ == "__main__":
    main()
