#!/usr/bin/env python3
"""Independent figures for memviz_core::analysis::categories_join: a snapshot's allocations
matched with the profiler's raw memory timeline (export_memory_timeline_raw) of the same run.

Usage: python3 tests/gen/verify_join.py SNAPSHOT.pickle TIMELINE.raw.json.gz

Reads the raw export's own events (time_ns, action, bytes, category index; actions as in
torch/profiler/_memory_profiler.py: 1 live before the profiler, 2 create, 3 version change, 4
destroy), not a timeline of totals. Rules, from the module's documentation:
* a create of b bytes matches the snapshot's nearest unmatched alloc made from 10 ms before to
  1 ms after it whose size rounded up to 512 is b (or, above 1 MiB, whose rounded size is under b
  by at most 1 MiB), an exact size first;
* a version change that moves b bytes from category X to Y moves the latest made of the matched
  allocations in X whose create had b bytes, live at that time;
* allocations live when the profiler started take its category when the events before it have
  one category and the same bytes (requested or rounded).
Prints the counts, the matched allocations per category, and bytes per category of the matched
allocations live at the profiler's peak beside the profiler's own bytes there.
"""

import bisect
import sys

from verify_common import lifetimes, load, read_json_maybe_gz

NAMES = ["parameter", "optimizer_state", "input", "temporary", "activation", "gradient", "autograd_detail", "unknown"]


def r512(n):
    return (n + 511) // 512 * 512


def fits(size, b):
    if r512(size) == b:
        return 0
    if size > 1 << 20 and r512(size) < b <= r512(size) + (1 << 20):
        return 1
    return None


def main():
    snap = load(sys.argv[1])
    raw = read_json_maybe_gz(sys.argv[2])
    trace = snap["device_traces"][0]
    lives = lifetimes(snap, 0)
    t_of = lambda row: None if row is None else trace[row]["time_us"]
    by_time = sorted((t_of(l["alloc"]), i) for i, l in enumerate(lives) if l["alloc"] is not None)
    times = [t for t, _ in by_time]
    cat = {}
    block = {}  # the profiler's bytes of each matched allocation
    made = 0
    # (time_us, kind, bytes, category...) in the file's order; version changes come as -b then +b.
    events = []
    i = 0
    while i < len(raw):
        t, action, b, c = raw[i]
        if action == 2:
            events.append((t // 1000, "create", b, c))
        elif action == 3 and b < 0 and i + 1 < len(raw) and raw[i + 1][1] == 3 and raw[i + 1][2] == -b:
            if raw[i + 1][3] != c:
                events.append((t // 1000, "move", -b, c, raw[i + 1][3]))
            i += 1
        i += 1
    moved = 0
    for ev in events:
        t, kind, b = ev[0], ev[1], ev[2]
        if kind == "create":
            made += 1
            lo, hi = bisect.bisect_left(times, t - 10_000), bisect.bisect_right(times, t + 1_000)
            best = None
            for k in range(lo, hi):
                e = by_time[k][1]
                if e in cat:
                    continue
                f = fits(lives[e]["size"], b)
                if f is None:
                    continue
                key = (f, abs(by_time[k][0] - t), e)
                if best is None or key < best:
                    best = key
            if best:
                cat[best[2]] = ev[3]
                block[best[2]] = b
        else:
            src, dst = ev[3], ev[4]
            cands = [e for e, c in cat.items() if c == src and block[e] == b
                     and t_of(lives[e]["alloc"]) is not None and t_of(lives[e]["alloc"]) <= t
                     and (lives[e]["free"] is None or t_of(lives[e]["free"]) > t)]
            if cands:
                e = max(cands, key=lambda e: (t_of(lives[e]["alloc"]), e))
                cat[e] = dst
                moved += 1
                if "-v" in sys.argv: print("MOVE", t, b, src, dst, e)
    matched = len(cat)
    pre = [r for r in raw if r[1] == 1]
    start = min(r[0] for r in raw if r[0] >= 0) // 1000
    pre_cats = {r[3] for r in pre}
    before = [i for i, l in enumerate(lives) if i not in cat
              and (l["alloc"] is None or t_of(l["alloc"]) < start)
              and (l["free"] is None or t_of(l["free"]) >= start)]
    pre_bytes = sum(r[2] for r in pre)
    n_pre = 0
    if len(pre_cats) == 1 and pre_bytes in (sum(lives[i]["size"] for i in before),
                                            sum(r512(lives[i]["size"]) for i in before)):
        for i in before:
            cat[i] = next(iter(pre_cats))
            n_pre += 1
    print(f"profiler allocations: {made}")
    print(f"matched: {matched}")
    print(f"live when the profiler started: {n_pre}")
    print(f"moved to another category: {moved}")
    per = [0] * 8
    for c in cat.values():
        per[c] += 1
    print("matched per category:", per)
    # The profiler's own peak, and the matched allocations live then.
    cur, best, best_t, best_row = [0] * 8, -1, None, None
    for t, action, b, c in raw:
        cur[c] += b
        if sum(cur) > best:
            best, best_t, best_row = sum(cur), t // 1000, list(cur)
    live = [0] * 8
    for i, c in cat.items():
        l = lives[i]
        a, f = t_of(l["alloc"]), t_of(l["free"])
        if (a is None or a <= best_t) and (f is None or f > best_t):
            live[c] += l["size"]
    print(f"profiler's peak: {best} bytes at t = {best_t} us")
    for k, name in enumerate(NAMES):
        print(f"  {name:16} profiler {best_row[k]:>11}  matched live {live[k]:>11}")


if __name__ == "__main__":
    main()
