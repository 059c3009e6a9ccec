#!/usr/bin/env python3
"""Independent check of `memviz info`'s peak figures, with nothing but `pickle.load`.

Usage: python3 tests/gen/check_info.py SNAPSHOT.pickle [...]

For every device it prints the entry count, the peak of live requested bytes and the trace row at
which that peak is first reached, using the definition of crates/core/src/info.rs:

* live bytes before the first entry ("initial") are the sizes of frees whose alloc the trace does not
  hold, plus the requested sizes of blocks that are allocated in the final segments but were not
  allocated by the trace (a block's address is its segment's address plus the sizes of the blocks
  before it);
* then the trace is replayed: `alloc` adds its size, `free_completed` and `free` take it off (never
  below zero); the peak is the highest value seen, starting from the initial one.

The expected numbers in crates/cli/tests/cli/commands.rs come from this script.
"""

import json
import pickle
import sys


def blocks_of(seg):
    addr = seg.get("address", 0)
    for b in seg.get("blocks", []) or []:
        size = b.get("size", 0)
        if "frames" in b:
            req = b.get("requested_size", size)
        elif "history" in b:
            hist = b["history"]
            req = hist[0].get("real_size", size) if hist else size
        else:
            req = b.get("requested_size", size)
        yield addr, b.get("state"), req
        addr += size


def device_summary(snapshot, device, trace):
    open_allocs = {}
    initial = 0
    for e in trace:
        action, addr, size = e.get("action"), e.get("addr", 0), e.get("size", 0)
        if action == "alloc":
            open_allocs[addr] = size
        elif action in ("free_completed", "free"):
            if open_allocs.pop(addr, None) is None:
                initial += size
    segments = snapshot.get("segments", []) if isinstance(snapshot, dict) else snapshot
    for seg in segments:
        if seg.get("device", 0) != device:
            continue
        for addr, state, req in blocks_of(seg):
            if state == "active_allocated" and addr not in open_allocs:
                initial += req
    live = peak = initial
    peak_row = None
    for row, e in enumerate(trace):
        action, size = e.get("action"), e.get("size", 0)
        if action == "alloc":
            live += size
            if live > peak:
                peak, peak_row = live, row
        elif action in ("free_completed", "free"):
            live = max(0, live - size)
    return {"device": device, "entries": len(trace), "peak_allocated_bytes": peak, "peak_allocated_entry": peak_row}


def main(paths):
    for path in paths:
        with open(path, "rb") as f:
            snapshot = pickle.load(f)
        traces = snapshot.get("device_traces", []) if isinstance(snapshot, dict) else []
        out = [device_summary(snapshot, i, t) for i, t in enumerate(traces)]
        print(json.dumps({"file": path, "devices": out}))


if __name__ == "__main__":
    main(sys.argv[1:])
