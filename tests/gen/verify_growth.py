#!/usr/bin/env python3
"""Independent figures for `memviz insights` (iterations, growth, memory carried across
iterations), from `pickle.load` only.

Usage: python3 tests/gen/verify_growth.py SNAPSHOT.pickle

Definitions (crates/core/src/analysis/growth.rs):

* Iterations: annotation names are grouped by replacing digit runs with N. A group whose names
  differ (ProfilerStep#0, #1, ...) with 2+ STARTs gives one iteration per START, from the first
  entry with time_us >= START to the next START (the last one ends at the first entry with
  time_us > its END). Otherwise `Optimizer.zero_grad...` (else `Optimizer.step...`) ENDs end
  iterations: from the previous END (or entry 0) to the first entry with time_us > END.
* Peak of an iteration: highest live requested bytes after one of its entries (first such
  entry). End bytes: live bytes after its last entry.
* Growth: live bytes per stack (the frame list) at each iteration end; a stack grows when it ends
  higher than it starts, rises in >= 60% of the steps and falls in <= 25%; bytes per iteration is
  the least-squares slope.
* Carried over: allocations made in iteration k still live after the peak entry of iteration
  k+1, not optimizer allocations (inside an Optimizer.step region or with torch/optim frames),
  not growing stacks, and not freed before iteration k+1 ends. Those whose sizes match the
  optimizer's persistent state (one match per state tensor) are kept gradients.
"""

import re
import sys
from collections import Counter, defaultdict

from verify_common import lifetimes, live_after, live_series, load, row_at_time


def family(name):
    return re.sub(r"[0-9]+", "N", name)


def iterations(snap, n, trace):
    anns = [a for a in snap.get("external_annotations", []) if "time_us" in a]
    fams = defaultdict(lambda: {"starts": [], "ends": [], "names": set()})
    for a in anns:
        f = fams[family(a["name"])]
        f["names"].add(a["name"])
        (f["starts"] if a["stage"] == "START" else f["ends"]).append((a["time_us"], a["name"]))
    for f in fams.values():
        f["starts"].sort()
        f["ends"].sort()
    windows = []
    for name, f in fams.items():
        if name.startswith("Optimizer.step"):
            for (s, _), (e, _) in zip(f["starts"], f["ends"]):
                windows.append((row_at_time(trace, s), row_at_time(trace, e, after=True)))
    numbered = [(k, f) for k, f in fams.items() if len(f["names"]) > 1 and re.search("[0-9]", k + "".join(f["names"])) and len(f["starts"]) >= 2]
    ranges = []
    if numbered:
        def dur(f):
            return sum(e - s for (s, _), (e, _) in zip(f["starts"], f["ends"])) // max(1, len(f["starts"]))
        name, f = max(numbered, key=lambda kf: (dur(kf[1]), len(kf[1]["starts"])))
        rows = [(row_at_time(trace, t), nm) for t, nm in f["starts"]]
        for i, (r, nm) in enumerate(rows):
            if i + 1 < len(rows):
                end = rows[i + 1][0]
            else:
                last = f["starts"][-1][0]
                ends = [e for e, _ in f["ends"] if e >= last]
                end = row_at_time(trace, ends[-1], after=True) if ends else n
            ranges.append((r, end, nm))
    else:
        f = None
        for prefix in ("Optimizer.zero_grad", "Optimizer.step"):
            for k, g in fams.items():
                if k.startswith(prefix) and len(g["ends"]) >= 2:
                    f = g
                    break
            if f:
                break
        if f:
            prev = 0
            for i, (e, _) in enumerate(f["ends"]):
                r = row_at_time(trace, e, after=True)
                ranges.append((prev, r, f"iteration {i + 1}"))
                prev = r
    return [r for r in ranges if r[0] < r[1]], sorted(windows)


def slope(v):
    n = len(v)
    mx = (n - 1) / 2
    my = sum(v) / n
    num = sum((i - mx) * (y - my) for i, y in enumerate(v))
    den = sum((i - mx) ** 2 for i in range(n))
    return num / den if den else 0.0


def grows(v):
    steps = len(v) - 1
    inc = sum(1 for a, b in zip(v, v[1:]) if b > a)
    dec = sum(1 for a, b in zip(v, v[1:]) if b < a)
    return steps >= 2 and v[-1] > v[0] and inc * 5 >= steps * 3 and dec * 4 <= steps


def main():
    snap = load(sys.argv[1])
    trace = snap["device_traces"][0]
    lives = lifetimes(snap)
    initial, series = live_series(snap)
    its, windows = iterations(snap, len(series), trace)
    print(f"iterations: {len(its)}")
    peaks = []
    for i, (a, b, nm) in enumerate(its):
        pr = max(range(a, b), key=lambda r: (series[r], -r))
        peaks.append(pr)
        print(f"  {i + 1} {nm!r} entries {a}..{b} peak {series[pr]} at {pr} end {series[b - 1]}")
    if len(its) >= 3:
        ends = [b - 1 for a, b, _ in its]
        by_stack = defaultdict(lambda: [0] * len(ends))
        for l in lives:
            key = tuple((f["filename"], f["line"], f["name"]) for f in l["frames"])
            for j, e in enumerate(ends):
                if live_after(l, e):
                    by_stack[key][j] += l["size"]
        total = [series[e] for e in ends]
        print(f"total at iteration ends: {total}")
        print(f"total slope: {round(slope(total))}")
        growing = set()
        for key, v in sorted(by_stack.items(), key=lambda kv: -slope(kv[1])):
            if grows(v):
                growing.add(key)
                top = next((f"{fn}:{ln}" for fn, ln, _ in key if ln > 0), "<no frames>")
                print(f"  growing stack {top}: {round(slope(v))} bytes/iteration, ends {v}")
    else:
        growing = set()

    def is_opt(l):
        in_window = l["alloc"] is not None and any(a <= l["alloc"] < b for a, b in windows)
        return in_window or any("torch/optim/" in f["filename"] for f in l["frames"])

    # Optimizer state sizes: optimizer allocations still live when their iteration ends.
    def it_of(row):
        for k, (a, b, _) in enumerate(its):
            if a <= row < b:
                return k
        return None

    ref = Counter()
    for l in lives:
        if l["alloc"] is None or not is_opt(l):
            continue
        k = it_of(l["alloc"])
        end = its[k][1] if k is not None else l["alloc"]
        if l["free"] is None or l["free"] >= end:
            ref[l["size"]] += 1
    if not ref:
        ref = Counter(l["size"] for l in lives if l["alloc"] is None and l["free"] is None)
    for k in range(len(its) - 1):
        a, b, _ = its[k]
        p = peaks[k + 1]
        end_next = its[k + 1][1]
        kept = [l for l in lives if l["alloc"] is not None and a <= l["alloc"] < b and live_after(l, p)
                and not is_opt(l) and tuple((f["filename"], f["line"], f["name"]) for f in l["frames"]) not in growing
                and (l["free"] is None or l["free"] >= end_next)]
        left = Counter(ref)
        grads, once = [], []
        for l in sorted(kept, key=lambda l: l["alloc"]):
            if left[l["size"]] > 0:
                left[l["size"]] -= 1
                grads.append(l)
            else:
                once.append(l)
        if len(grads) < 2:
            once += grads
            grads = []
        if grads or once:
            print(f"iteration {k + 1} -> peak of {k + 2}: kept gradients {len(grads)} allocations {sum(l['size'] for l in grads)} bytes"
                  f" (entries {min((l['alloc'] for l in grads), default='-')}..{max((l['alloc'] for l in grads), default='-')},"
                  f" {sum(1 for l in grads if not l['frames'])} without frames); allocated once {len(once)} allocations {sum(l['size'] for l in once)} bytes")


if __name__ == "__main__":
    main()
