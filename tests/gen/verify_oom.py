#!/usr/bin/env python3
"""Independent figures for `memviz oom` / memviz_core::analysis::oom, from `pickle.load` only.

Usage: python3 tests/gen/verify_oom.py SNAPSHOT.pickle

For every `oom` entry: the request (`size`), `device_free`, and the allocator state at that entry,
found by undoing the later entries from the final segments (block sizes of undone frees are the
requested size rounded up to 512 bytes; blocks of the final segments keep their real sizes):
reserved bytes, allocated (requested) bytes of live blocks, free bytes inside segments, the
largest free block, and the largest holders by source line (see verify_common.py).
"""

import sys
from collections import defaultdict

from verify_common import final_blocks, life_site, lifetimes, live_after, load


def rounded(n):
    return max(n, 1) + (-max(n, 1)) % 512


def state_at(snap, trace, row, device=0):
    segs = {s["address"]: s["total_size"] for s in snap["segments"] if s.get("device", 0) == device}
    blocks = {}
    for s, addr, b in final_blocks(snap, device):
        if b["state"] in ("active_allocated", "active_pending_free"):
            blocks[addr] = (b["size"], b.get("requested_size", b["size"]))
    for e in reversed(trace[row + 1:]):
        a = e["action"]
        if a == "alloc":
            blocks.pop(e["addr"], None)
        elif a in ("free_completed", "free"):
            blocks[e["addr"]] = (rounded(e["size"]), e["size"])
        elif a == "segment_alloc":
            segs.pop(e["addr"], None)
        elif a == "segment_free":
            segs[e["addr"]] = e["size"]
    return segs, blocks


def main():
    snap = load(sys.argv[1])
    trace = snap["device_traces"][0]
    lives = lifetimes(snap)
    for row, e in enumerate(trace):
        if e["action"] != "oom":
            continue
        segs, blocks = state_at(snap, trace, row)
        free = []
        for sa, ss in segs.items():
            cur = sa
            for ba in sorted(b for b in blocks if sa <= b < sa + ss):
                if ba > cur:
                    free.append(ba - cur)
                cur = max(cur, ba + blocks[ba][0])
            if sa + ss > cur:
                free.append(sa + ss - cur)
        print(f"oom at entry {row}: requested {e['size']} device_free {e.get('device_free')}")
        print(f"  reserved {sum(segs.values())} allocated {sum(v[1] for v in blocks.values())} "
              f"free_in_segments {sum(free)} largest_free {max(free, default=0)}")
        holders = defaultdict(lambda: [0, 0])
        for l in lives:
            if live_after(l, row):
                h = holders[life_site(l)]
                h[0] += l["size"]
                h[1] += 1
        for lab, (b, c) in sorted(holders.items(), key=lambda x: -x[1][0])[:5]:
            print(f"  holder {b} {c} {lab}")
        released = sum(1 for x in trace[:row] if x["action"] in ("segment_free", "segment_unmap"))
        print(f"  segment releases before: {released}")


if __name__ == "__main__":
    main()
