#!/usr/bin/env python3
"""A large profiler trace for performance measurements (not committed): the events of a real
trace (default: tests/data/real/gpt_profile.trace.json.gz) replayed until the file reaches
--mb megabytes.

Each replay shifts every timestamp past the end of the previous one, every `Ev Idx` past the
previous replay's, and every `[memory]` address by replay x 2^40, so lifetimes never mix; what a
replay leaves allocated stays allocated (the running `Total Allocated` and `Total Reserved` are
recomputed accordingly). Header keys (schemaVersion, deviceProperties, baseTimeNanoseconds...)
are kept. Deterministic.

Usage: python3 tests/gen/big_trace.py --mb 500 --out target/big_500m.trace.json
"""

import argparse
import gzip
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default="tests/data/real/gpt_profile.trace.json.gz")
    ap.add_argument("--mb", type=float, default=500)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.source, "rb") as f:
        raw = f.read()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    events = doc.pop("traceEvents")
    t0 = min(e["ts"] for e in events if "ts" in e)
    t1 = max(e["ts"] + e.get("dur", 0) for e in events if "ts" in e)
    span = (t1 - t0) + 1000.0
    ev_span = 1 + max(e.get("args", {}).get("Ev Idx", 0) for e in events)
    mem = sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: (e["ts"], e["args"]["Ev Idx"]))
    # Per device: the bytes allocated before the trace, and each event's running totals.
    totals = {}
    for e in mem:
        a = e["args"]
        key = (a["Device Type"], a["Device Id"])
        if key not in totals:
            totals[key] = [a["Total Allocated"] - a["Bytes"], a["Total Reserved"]]
    limit = int(args.mb * 1e6)
    written = 0
    replay = 0
    with open(args.out, "w") as out:
        head = json.dumps(doc, indent=2)[:-2]
        out.write(head + ',\n  "traceEvents": [\n')
        written += len(head)
        first = True
        while written < limit:
            shift = replay * span
            for e in events:
                e2 = dict(e)
                if "ts" in e2:
                    e2["ts"] = round(e["ts"] + shift, 3)
                a = e.get("args")
                if a is not None:
                    a2 = dict(a)
                    if "Ev Idx" in a2:
                        a2["Ev Idx"] = a["Ev Idx"] + replay * ev_span
                    if e.get("name") == "[memory]":
                        a2["Addr"] = a["Addr"] + (replay << 40)
                    e2["args"] = a2
                if e.get("name") == "[memory]":
                    continue
                line = ("" if first else ",\n") + json.dumps(e2)
                first = False
                out.write(line)
                written += len(line)
            for e in mem:
                a = dict(e["args"])
                key = (a["Device Type"], a["Device Id"])
                totals[key][0] += a["Bytes"]
                totals[key][1] = max(totals[key][1], totals[key][0])
                a["Total Allocated"] = totals[key][0]
                a["Total Reserved"] = totals[key][1]
                a["Addr"] = a["Addr"] + (replay << 40)
                a["Ev Idx"] = a["Ev Idx"] + replay * ev_span
                e2 = dict(e, ts=round(e["ts"] + shift, 3), args=a)
                line = ",\n" + json.dumps(e2)
                out.write(line)
                written += len(line)
            replay += 1
        out.write('\n  ],\n  "traceName": "big"\n}\n')
    print(f"{args.out}: {written / 1e6:.0f} MB, {replay} replays, {replay * len(mem)} memory events")


if __name__ == "__main__":
    main()
