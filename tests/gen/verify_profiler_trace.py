#!/usr/bin/env python3
"""Independent figures for profiler traces read as memory (memviz_core::chrome_trace).

Usage:
  python3 tests/gen/verify_profiler_trace.py TRACE.json[.gz]

Reads the `[memory]` instant events of torch.profiler's export_chrome_trace with nothing but
`json`, per device (`Device Type` 1 = cuda:`Device Id`, 0 = cpu), in order of time then `Ev Idx`,
and prints for each device:

* the number of memory events, allocations and frees;
* the highest `Total Allocated` the profiler reported, and the same peak replayed from the
  events: the bytes allocated before the first event (its `Total Allocated` less its `Bytes`)
  plus the running sum of `Bytes`;
* the bytes live at the end, and how many allocations were never freed;
* at the (first) peak, the live allocated bytes by the innermost `cpu_op` open on the event's
  thread at its time (allocations made before profiling began count as `<before the trace>`),
  the largest five.

The definitions come from the profiler's event fields, not from memviz's code.
"""

import gzip
import json
import sys
from collections import defaultdict


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def innermost_op(ops_by_thread, thread, ts):
    best = None
    for start, end, name in ops_by_thread.get(thread, []):
        if start <= ts <= end and (best is None or start >= best[0]):
            best = (start, end, name)
    return best[2] if best else "<no op>"


def main(path):
    doc = read(path)
    events = doc["traceEvents"]
    ops = defaultdict(list)
    mem = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            ops[(e.get("pid"), e.get("tid"))].append((e["ts"], e["ts"] + e.get("dur", 0), e["name"]))
        elif e.get("ph") == "i" and e.get("name") == "[memory]":
            mem.append(e)
    devices = defaultdict(list)
    for e in mem:
        a = e["args"]
        key = f"cuda:{a.get('Device Id', 0)}" if a.get("Device Type") == 1 else "cpu"
        devices[key].append(e)
    print(f"events {len(events)}; memory events {len(mem)}")
    for dev in sorted(devices):
        evs = sorted(devices[dev], key=lambda e: (e["ts"], e["args"].get("Ev Idx", 0)))
        first = evs[0]["args"]
        before = first["Total Allocated"] - first["Bytes"]
        running = before
        peak_replayed, peak_at = before, -1
        live = {}
        for i, e in enumerate(evs):
            a = e["args"]
            running += a["Bytes"]
            if a["Bytes"] >= 0:
                live[a["Addr"]] = (a["Bytes"], innermost_op(ops, (e.get("pid"), e.get("tid")), e["ts"]))
            else:
                live.pop(a["Addr"], None)
            if running > peak_replayed:
                peak_replayed, peak_at = running, i
        peak_reported = max(e["args"]["Total Allocated"] for e in evs)
        allocs = sum(1 for e in evs if e["args"]["Bytes"] >= 0)
        # The live set at the peak: replay again up to peak_at.
        at_peak = {}
        for e in evs[: peak_at + 1]:
            a = e["args"]
            if a["Bytes"] >= 0:
                at_peak[a["Addr"]] = (a["Bytes"], innermost_op(ops, (e.get("pid"), e.get("tid")), e["ts"]))
            else:
                at_peak.pop(a["Addr"], None)
        by_op = defaultdict(int)
        for size, op in at_peak.values():
            by_op[op] += size
        freed_unseen = 0
        seen = set()
        for e in evs:
            a = e["args"]
            if a["Bytes"] >= 0:
                seen.add(a["Addr"])
            elif a["Addr"] not in seen:
                freed_unseen += -a["Bytes"]
            else:
                seen.discard(a["Addr"])
        if before - freed_unseen > 0:
            by_op["<before the trace>"] += before - freed_unseen
        print(f"{dev}: memory events {len(evs)} (allocations {allocs}, frees {len(evs) - allocs})")
        print(f"  peak Total Allocated {peak_reported}; replayed {peak_replayed}; before the trace {before}")
        print(f"  live at the end {sum(s for s, _ in live.values())} bytes in {len(live)} allocations; last Total Allocated {evs[-1]['args']['Total Allocated']}")
        print("  live at the peak by innermost op:")
        for op, b in sorted(by_op.items(), key=lambda kv: (-kv[1], kv[0]))[:5]:
            print(f"    {b:>12} {op}")


if __name__ == "__main__":
    main(sys.argv[1])
