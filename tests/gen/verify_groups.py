#!/usr/bin/env python3
"""Independent figures for `memviz live --by` and memviz_core::analysis::grouping, from `pickle.load`
only: the live allocations at a moment summed per group.

Usage: python3 tests/gen/verify_groups.py SNAPSHOT.pickle BY [ENTRY|peak|start|end]

BY is `user-line`, `metadata` or `metadata:KEY`, defined here from the docs, not from the code:
* user-line: the innermost visible frame with a line number whose file is not a library's (its path
  contains none of LIBRARY); allocations live before the trace without frames, without frames,
  or with no such frame are groups without a value.
* metadata: the `user_metadata` of the allocation's `alloc` entry (empty: no value; a dict: compact
  JSON in its key order); with a KEY, the value of that key when the text is a JSON object (or the
  dict) that has it (strings bare, else JSON).
Prints one line per group, largest first: bytes, allocations, value (or `-` for no value).
"""

import json
import sys
from collections import defaultdict

from verify_common import label, lifetimes, live_after, live_series, load, peak, visible

LIBRARY = ["site-packages/", "dist-packages/", "/torch/", "/lib/python3", "/lib/python2", "torchinductor_",
           "<frozen ", "<eval_with_key>"]


def user_line(frames):
    for f in frames:
        if visible(f) and f.get("line", 0) > 0 and not any(m in f.get("filename", "") for m in LIBRARY):
            return label(f)
    return None


def metadata(trace, l, key):
    if l["alloc"] is None:
        return None
    text = trace[l["alloc"]].get("user_metadata", "") or ""
    if not text:
        return None
    if isinstance(text, dict):
        v, text = text, json.dumps(text, separators=(",", ":"))
    else:
        try:
            v = json.loads(text)
        except ValueError:
            v = None
    if key is None:
        return text
    if not isinstance(v, dict) or key not in v:
        return None
    v = v[key]
    return v if isinstance(v, str) else json.dumps(v)


def main():
    path, by = sys.argv[1], sys.argv[2]
    at = sys.argv[3] if len(sys.argv) > 3 else "peak"
    snap = load(path)
    trace = snap["device_traces"][0]
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
    groups = defaultdict(lambda: [0, 0])
    for l in live:
        if by == "user-line":
            g = user_line(l["frames"])
        elif by.startswith("metadata"):
            g = metadata(trace, l, by.split(":", 1)[1] if ":" in by else None)
        else:
            sys.exit(f"unknown grouping {by}")
        groups[g][0] += l["size"]
        groups[g][1] += 1
    total = sum(l["size"] for l in live)
    print(f"entry {row}: {total} bytes in {len(live)} allocations")
    for g, (b, c) in sorted(groups.items(), key=lambda x: (-x[1][0], str(x[0]))):
        print(f"{b:>12} {c:>6}  {g if g is not None else '-'}")


if __name__ == "__main__":
    main()
