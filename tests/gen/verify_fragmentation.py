#!/usr/bin/env python3
"""Independent figures for `memviz fragmentation` / memviz_core::analysis::fragmentation.

Usage: python3 tests/gen/verify_fragmentation.py SNAPSHOT.pickle [ENTRY ...]

For each entry (default: every 500th and the last), the allocator state just after it, found by
undoing the later entries from the final segments (as verify_oom.py does): reserved bytes,
allocated (requested) bytes, free bytes inside segments and the largest free block. Then, by
brute force over every entry, the entry with the most reserved-but-unallocated bytes (first one).
Only `segment_alloc`/`segment_free` segments are modelled (not expandable segments).
"""

import sys

from verify_common import load
from verify_oom import state_at


def figures(snap, trace, row):
    segs, blocks = state_at(snap, trace, row)
    free = []
    addrs = sorted(blocks)
    import bisect
    for sa, ss in segs.items():
        cur = sa
        i = bisect.bisect_left(addrs, sa)
        while i < len(addrs) and addrs[i] < sa + ss:
            ba = addrs[i]
            if ba > cur:
                free.append(ba - cur)
            cur = max(cur, ba + blocks[ba][0])
            i += 1
        if sa + ss > cur:
            free.append(sa + ss - cur)
    return sum(segs.values()), sum(v[1] for v in blocks.values()), sum(free), max(free, default=0)


def main():
    snap = load(sys.argv[1])
    trace = snap["device_traces"][0]
    rows = [int(x) for x in sys.argv[2:]] or list(range(0, len(trace), 500)) + [len(trace) - 1]
    for r in rows:
        res, alloc, free, largest = figures(snap, trace, r)
        print(f"entry {r}: reserved {res} allocated {alloc} unused {res - alloc} free {free} largest_free {largest}")
    # Brute force: reserved - allocated after every entry, by a forward pass from the state before entry 0.
    res, alloc, _, _ = figures(snap, trace, -1)
    live = {}
    segs0, blocks0 = state_at(snap, trace, -1)
    live = {a: v[1] for a, v in blocks0.items()}
    segs = dict(segs0)
    best = (res - alloc, None)
    for i, e in enumerate(trace):
        a = e["action"]
        if a == "alloc":
            live[e["addr"]] = e["size"]
        elif a in ("free_completed", "free"):
            live.pop(e["addr"], None)
        elif a == "segment_alloc":
            segs[e["addr"]] = e["size"]
        elif a == "segment_free":
            segs.pop(e["addr"], None)
        u = sum(segs.values()) - sum(live.values())
        if u > best[0]:
            best = (u, i)
    print(f"most unused: {best[0]} at entry {best[1]}")


if __name__ == "__main__":
    main()
