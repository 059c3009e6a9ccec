#!/usr/bin/env python3
"""Independent figures for `memviz categories` / memviz_core::analysis::categories.

Usage:
  python3 tests/gen/verify_categories.py TIMELINE.json[.gz]   # the profiler's export_memory_timeline
  python3 tests/gen/verify_categories.py SNAPSHOT.pickle      # categories inferred from a snapshot

For a profiler timeline: the number of points and the point with the highest total, with its bytes
per category. The row layout is PyTorch's `_coalesce_timeline`: one unused leading slot, then
parameter, optimizer_state, input, temporary, activation, gradient, autograd_detail, unknown.

For a snapshot: bytes per inferred category at the peak of live bytes, by the rules documented on
`memviz_core::analysis::categories::infer` (iterations as in verify_growth.py).
"""

import sys
from collections import defaultdict

from verify_common import lifetimes, live_series, load, peak, read_json_maybe_gz, row_at_time
from verify_growth import iterations

NAMES = ["parameter", "optimizer_state", "input", "temporary", "activation", "gradient", "autograd_detail", "unknown"]


def timeline(path):
    times, sizes = read_json_maybe_gz(path)
    totals = [sum(r[1:]) for r in sizes]
    best = max(range(len(totals)), key=lambda i: (totals[i], -i))
    print(f"points {len(times)}; peak {totals[best]} at index {best}, time {times[best]}")
    for n, b in zip(NAMES, sizes[best][1:]):
        print(f"  {n:<16} {b}")


def is_backward(frames):
    for f in frames:
        n, fn = f.get("name", ""), f.get("filename", "")
        if ("torch/autograd/" in fn and n in ("backward", "_make_grads", "_engine_run_backward")) or "torch::autograd::Engine" in n:
            return True
    return False


def snapshot(path):
    snap = load(path)
    trace = snap["device_traces"][0]
    lives = lifetimes(snap)
    initial, series = live_series(snap)
    its, windows = iterations(snap, len(series), trace)

    def it_of(row):
        for k, (a, b, _) in enumerate(its):
            if a <= row < b:
                return k
        return None

    def is_opt(l):
        return (l["alloc"] is not None and any(a <= l["alloc"] < b for a, b in windows)) or any("torch/optim/" in f["filename"] for f in l["frames"])

    params = set()
    for l in lives:
        if l["alloc"] is not None and is_opt(l):
            k = it_of(l["alloc"])
            end = its[k][1] if k is not None else l["alloc"]
            if l["free"] is None or l["free"] >= end:
                params.add(l["size"])
    if not params:
        params = {l["size"] for l in lives if l["alloc"] is None and l["free"] is None}
    bw_rows = [row_at_time(trace, a["time_us"]) for a in snap.get("external_annotations", [])
               if a["stage"] == "START" and "backward" in a["name"].lower()]
    bw = []
    for a, b, _ in its:
        cands = [r for r in bw_rows if a <= r < b]
        cands += [r for r in range(a, b) if trace[r]["action"] == "alloc" and is_backward(trace[r].get("frames", []))][:1]
        bw.append(min(cands) if cands else None)

    def opt_start(k):
        a, b, _ = its[k]
        return next((w[0] for w in windows if a <= w[0] < b), None)

    def category(l):
        if l["alloc"] is None:
            return "parameter" if l["free"] is None else "unknown"
        k = it_of(l["alloc"])
        if is_opt(l):
            end = its[k][1] if k is not None else l["alloc"]
            return "optimizer_state" if l["free"] is None or l["free"] >= end else "temporary"
        if k is None:
            return "unknown"
        a, end, _ = its[k]
        if bw[k] is None:
            return "activation" if l["free"] is None or l["free"] >= end else "temporary"
        if l["alloc"] < bw[k]:
            return "activation" if l["free"] is None or l["free"] >= bw[k] else "temporary"
        due = opt_start(k)
        due = end if due is None else due
        if l["size"] in params and (l["free"] is None or l["free"] >= due):
            return "gradient"
        if l["free"] is not None and l["free"] < end:
            return "temporary"
        return "unknown"

    row, total = peak(initial, series)
    by = defaultdict(int)
    for l in lives:
        live = (l["alloc"] is None or (row is not None and l["alloc"] <= row)) and (l["free"] is None or (row is not None and l["free"] > row))
        if live:
            by[category(l)] += l["size"]
    print(f"peak {total} at entry {row}")
    for n in NAMES:
        print(f"  {n:<16} {by[n]}")


if __name__ == "__main__":
    p = sys.argv[1]
    if p.endswith(".json") or p.endswith(".gz"):
        timeline(p)
    else:
        snapshot(p)
