#!/usr/bin/env python3
"""Writes tests/data/conformance/: PyTorch's own tests of its viewer's layout restated as data.

PyTorch tests the layout logic of its memory viewer (``process_alloc_data`` in
torch/utils/viz/process_alloc_data.js) in ``test/profiler/test_memory_viz.js``. Every call of
``process_alloc_data`` there is restated here: the snapshot the test builds becomes
``NAME.json`` (a JSON snapshot memviz opens), and what the test asserts about the result becomes
checks in ``cases.json``, run against ``memviz layout FILE --device 0 --view V --detail N --json``
by ``crates/cli/tests/cli/conformance.rs``.

The translation:
- ``process_alloc_data(s, 0, plot_segments, max_entries, include_private_inactive)``: ``--view
  segments`` when plot_segments, else ``pools`` when include_private_inactive, else ``active``;
  ``--detail max_entries``.
- ``result.max_size`` -> ``max_size_bytes``; ``Math.max(...max_at_time)`` -> ``peak_bytes``;
  ``elements_length`` -> ``elements``; the ``pool:`` entries of ``allocations_over_time`` ->
  ``envelopes`` (key, largest size); stripes (``opacity 0.5``) -> ``stripes``; ``ghost`` entries
  -> ``ghosts``; per-pool summarized stripes (``opacity 0.3``) -> ``pool_summaries``; the
  summarized band -> ``summarized``; ``context_for_id(i)`` -> ``context[i]``.
- A trace event's ``segment_pool_id`` (MemoryViz's name after loading) is written as the entry's
  ``pool_id``, the key PyTorch 2.12+ writes in the file.
- Assertions about the series' points (offsets, timesteps, the polygon point budget) have no
  counterpart in a layout that stores lifetimes, not points: they are kept with ``op: "points"``
  and listed in docs/layout.md like any other difference.

Usage: python3 tests/gen/make_conformance.py
"""
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "conformance"
SOURCE = "pytorch/pytorch test/profiler/test_memory_viz.js"

CASES = []


def seg(address, total_size, pool=(0, 0), stream=0, blocks=()):
    return {"device": 0, "address": address, "total_size": total_size, "segment_pool_id": list(pool),
            "stream": stream, "blocks": list(blocks)}


def blk(address, size, state, frames=(), version=None):
    b = {"address": address, "size": size, "requested_size": size, "state": state, "frames": list(frames)}
    if version is not None:
        b["version"] = version
    return b


def ev(action, addr, size, stream=0, frames=(), pool=None, **extra):
    e = {"action": action, "addr": addr, "size": size, "frames": list(frames), "stream": stream}
    if pool is not None:
        e["pool_id"] = list(pool)
    e.update(extra)
    return e


def case(name, traces, segments, calls):
    """calls: [(view, detail, [(what, op, value), ...]), ...]"""
    CASES.append({"name": name, "snapshot": {"device_traces": [traces], "segments": segments, "categories": []},
                  "calls": calls})


def c(what, value, op="eq"):
    return (what, op, value)


P = "pools"
A = "active"
SG = "segments"
D = 15000

case("test_basic_alloc_free",
     [ev("alloc", 1000, 100), ev("free_completed", 1000, 100)], [seg(0, 4096)],
     [(A, D, [c("max_size_bytes", 100)])])

case("test_free_completed_is_matched",
     [ev("alloc", 1000, 200), ev("free_completed", 1000, 200)], [seg(0, 4096)],
     [(A, D, [c("max_size_bytes", 200)])])

case("test_pool_free_without_alloc_no_inflation",
     [ev("free_completed", 0x788c2000000, 94371840), ev("alloc", 0x788c2000000, 256)],
     [seg(0x788c0000000, 83886080, (1, 42))],
     [(P, D, [c("max_size_bytes", 94371840), c("elements", 2), c("peak_bytes", 94371840),
              c("envelopes.count", 1), c("envelopes.keys", ["pool:1,42,s0"]), c("stripes.count", 2),
              c("stripes[0].size_bytes", 94371840), c("stripes[1].size_bytes", 256),
              ("max_at_time not empty", "points", None)])])

case("test_pool_alloc_then_free_normal",
     [ev("alloc", 2000, 500), ev("free_completed", 2000, 500)], [seg(0, 8192, (1, 7))],
     [(P, D, [c("max_size_bytes", 8192)])])

case("test_multiple_pool_frees_without_alloc",
     [ev("free_completed", 1000, 500), ev("free_completed", 2000, 500), ev("free_completed", 3000, 500)],
     [seg(0, 16384, (1, 99))],
     [(P, D, [c("max_size_bytes", 16384, "le")])])

case("test_non_pool_free_without_alloc",
     [ev("free_completed", 8000, 300)], [seg(0, 16384)],
     [(A, D, [c("max_size_bytes", 0), c("peak_bytes", 300)])])

case("test_mixed_pool_and_nonpool",
     [ev("alloc", 100, 200), ev("alloc", 5000, 400), ev("free_completed", 100, 200), ev("free_completed", 5000, 400)],
     [seg(0, 4096), seg(4096, 8192, (1, 5))],
     [(P, D, [c("max_size_bytes", 8392)])])

case("test_include_private_inactive_false_ignores_pools",
     [ev("alloc", 5000, 800), ev("free_completed", 5000, 800)], [seg(4096, 8192, (1, 10))],
     [(A, D, [c("max_size_bytes", 800)])])

case("test_context_for_id_with_pool",
     [ev("alloc", 0xabc000, 2048, stream=3, frames=[{"filename": "model.py", "line": 42, "name": "forward"}],
         version=5, time_us=1700000000000000)],
     [seg(0xa00000, 0x200000, (2, 7))],
     [(A, D, [c("context[0]", "abc000", "contains"), c("context[0]", "_5", "contains"),
              c("context[0]", "2.0KiB", "contains"), c("context[0]", "2048 bytes", "contains"),
              c("context[0]", "pool_id (2, 7)", "contains"), c("context[0]", "stream 3", "contains"),
              c("context[0]", "model.py:42:forward", "contains")])])

case("test_context_for_id_unknown_pool",
     [ev("alloc", 0xff0000, 512, frames=[{"filename": "train.py", "line": 10, "name": "step"}], version=0)],
     [seg(0x100000, 0x100000)],
     [(A, D, [c("context[0]", "pool_id unknown", "contains"), c("context[0]", "ff0000", "contains"),
              c("context[0]", "512.0B", "contains")])])

case("test_context_for_id_free_without_alloc",
     [ev("free_completed", 0xdead00, 4096, frames=[{"filename": "fsdp.py", "line": 750, "name": "free_storage"}],
         version=2)],
     [seg(0xd00000, 0x100000)],
     [(A, D, [c("context[0]", "alloc not recorded", "contains"), c("context[0]", "dead00", "contains"),
              c("context[0]", "4.0KiB", "contains"), c("context[0]", "fsdp.py:750:free_storage", "contains")])])

case("test_post177717_pool_id_from_trace_event",
     [ev("alloc", 0xff0000, 1024, pool=(3, 15)), ev("free_completed", 0xff0000, 1024, pool=(3, 15))], [],
     [(P, D, [c("max_size_bytes", 1024), c("context[0]", "pool_id (3, 15)", "contains")])])

case("test_post177717_pool_free_without_alloc_no_segment",
     [ev("free_completed", 0xdead00, 2048, pool=(1, 42))], [],
     [(P, D, [c("max_size_bytes", 2048, "le"), c("context[0]", "pool_id (1, 42)", "contains"),
              c("context[0]", "alloc not recorded", "contains")])])

case("test_post177717_mixed_events_with_and_without_pool_id",
     [ev("alloc", 100, 300), ev("alloc", 0xf000, 500, pool=(2, 8)), ev("free_completed", 100, 300),
      ev("free_completed", 0xf000, 500, pool=(2, 8))],
     [seg(0, 4096)],
     [(P, D, [c("max_size_bytes", 800), c("context[0]", "pool_id (0, 0)", "contains"),
              c("context[1]", "pool_id (2, 8)", "contains")])])

case("test_pool_grouped_by_stream",
     [ev("alloc", 1000, 500, stream=1), ev("alloc", 2000, 300, stream=2), ev("free_completed", 1000, 500, stream=1),
      ev("free_completed", 2000, 300, stream=2)],
     [seg(0, 4096, (1, 5))],
     [(P, D, [c("envelopes.count", 2), c("envelopes.keys", ["pool:1,5,s1", "pool:1,5,s2"])])])

case("test_segment_snapshot_with_trace_history",
     [ev("alloc", 5000, 1000), ev("free_completed", 5000, 1000)],
     [seg(4096, 8192, (1, 42), blocks=[blk(5000, 1000, "inactive", version=0)])],
     [(P, D, [c("elements", 1)])])

case("test_segment_snapshot_no_trace",
     [], [seg(4096, 8192, (1, 42), blocks=[blk(5000, 1000, "inactive", version=0)])],
     [(P, D, [c("elements", 0)]), (A, D, [c("elements", 0)])])

case("test_default_pool_ghost_block",
     [], [seg(4096, 8192, blocks=[blk(5000, 1000, "active_allocated", version=0)])],
     [(A, D, [c("elements", 1)])])

GHOST_SEGS = [
    seg(0x1e00000, 2097152, blocks=[blk(0x1e00000, 1048576, "active_allocated"), blk(0x1f00000, 1048576, "inactive")]),
    seg(0x6800000, 20971520, blocks=[blk(0x6800000, 2097152, "active_allocated",
                                         [{"filename": "test.py", "line": 10, "name": "early_alloc"}]),
                                     blk(0x6a00000, 18874368, "inactive")]),
]
GHOST_CHECKS = [c("elements", 5), c("ghosts.count", 2), c("ghosts.sizes", [1048576, 2097152]),
                c("ghost_contexts", "[Ghost block]", "contains"), c("ghost_contexts", "segment snapshot", "contains")]
case("test_ghost_blocks",
     [ev("free_completed", 0x6a00000, 4194304), ev("alloc", 0x6a00000, 4194304), ev("free_completed", 0x6a00000, 4194304),
      ev("alloc", 0x6a00000, 4194304), ev("free_completed", 0x6a00000, 4194304)],
     GHOST_SEGS,
     [(A, D, GHOST_CHECKS), (P, D, GHOST_CHECKS)])

case("test_ghost_blocks_not_created_for_traced_addrs",
     [ev("alloc", 1000, 512)], [seg(0, 4096, blocks=[blk(1000, 512, "active_allocated")])],
     [(P, D, [c("ghosts.count", 0), c("elements", 1)])])

GC = [c("ghosts.count", 2), c("ghosts.sizes", [1024, 2048])]
case("test_ghost_blocks_default_pool_collected",
     [], [seg(0x1000, 8192, blocks=[blk(0x1000, 2048, "active_allocated"), blk(0x1800, 1024, "active_allocated")])],
     [(A, D, GC), (P, D, GC)])

case("test_ghost_blocks_not_in_segment_mode",
     [], [seg(0, 4096, blocks=[blk(100, 512, "active_allocated")])],
     [(SG, D, [c("ghosts.count", 0)]), (SG, D, [c("ghosts.count", 0)])])

case("test_ghost_blocks_private_pool",
     [ev("alloc", 0xe600000, 3145728), ev("alloc", 0x6a00000, 4194304)],
     [seg(0x1e00000, 2097152, (0, 1), blocks=[blk(0x1e00000, 1048576, "active_allocated")]),
      seg(0x6800000, 20971520, blocks=[blk(0x6800000, 2097152, "active_allocated"),
                                       blk(0x6a00000, 4194304, "active_allocated")]),
      seg(0xe600000, 20971520, (0, 1), blocks=[blk(0xe600000, 3145728, "active_allocated")])],
     [(P, D, [c("ghosts.count", 2), c("ghosts.sizes", [1048576, 2097152]),
              ("default ghost at offset 0, from timestep 0, two timesteps", "points", None),
              ("pool ghost from timestep 0 to the end, both ghosts end together", "points", None),
              c("envelopes.count", 1), c("envelopes.keys", ["pool:0,1,s0"]),
              ("envelope starts at timestep 0 at its whole reserved size", "points", None),
              ("ghost stripe inside the envelope at timestep 0", "points", None),
              c("envelope:pool:0,1,s0.size_bytes", 2097152 + 20971520)]),
      (A, D, [c("ghosts.count", 2), c("envelopes.count", 0)])])

case("test_ghost_stripe_offset_with_multiple_pools",
     [ev("alloc", 0x100, 100)],
     [seg(0, 4096), seg(0x4000, 4096, (0, 3), blocks=[blk(0x4000, 3000, "active_allocated")]),
      seg(0x10000, 8192, (0, 2), blocks=[blk(0x10000, 2000, "active_allocated")]),
      seg(0x5000, 4096, (0, 3), blocks=[blk(0x5000, 1000, "active_allocated")])],
     [(P, D, [c("envelopes.count", 2), c("envelopes.keys", ["pool:0,2,s0", "pool:0,3,s0"]), c("ghosts.count", 3),
              c("ghosts.sizes", [1000, 2000, 3000]),
              ("the 2000-byte ghost's stripe at its envelope's offset, inside it", "points", None)])])

S = 524288
FULL = [ev("segment_alloc", 0x7f08cde00000, 2097152), ev("alloc", 0x7f08cde00000, S),
        ev("segment_alloc", 0x7f08d2800000, 2097152), ev("alloc", 0x7f08d2800000, S),
        ev("free_requested", 0x7f08cde00000, S), ev("free_completed", 0x7f08cde00000, S),
        ev("free_requested", 0x7f08d2800000, S), ev("free_completed", 0x7f08d2800000, S),
        ev("alloc", 0x7f08cde00000, S), ev("alloc", 0x7f08d2800000, S), ev("alloc", 0x7f08d2880000, S),
        ev("alloc", 0x7f08cde80000, S)]
case("test_full_snapshot_private_pools", FULL,
     [seg(0x7f08cde00000, 2097152), seg(0x7f08d2800000, 2097152, (0, 1))],
     [(P, D, [c("elements", 6), c("max_size_bytes", 2 * S + 2097152), c("peak_bytes", 2 * S + 2097152),
              ("max_at_time, step by step (14 values)", "points", None),
              c("envelopes.count", 1), c("envelopes.keys", ["pool:0,1,s0"]),
              c("envelope:pool:0,1,s0.size_bytes", 2097152), c("stripes.count", 3), c("non_pool_bands", 3),
              c("context[0]", "7f08cde00000", "contains"), c("context[0]", "pool_id (0, 0)", "contains"),
              c("context[1]", "7f08d2800000", "contains"), c("context[1]", "pool_id (0, 1)", "contains")])])

K = 1024
case("test_full_snapshot_no_private_pools",
     [ev("segment_alloc", 0x7f08cde00000, 2097152), ev("alloc", 0x7f08cde00000, K),
      ev("segment_alloc", 0x7f08d2800000, 2097152), ev("alloc", 0x7f08d2800000, K),
      ev("free_requested", 0x7f08cde00000, K), ev("free_completed", 0x7f08cde00000, K),
      ev("free_requested", 0x7f08d2800000, K), ev("free_completed", 0x7f08d2800000, K),
      ev("alloc", 0x7f08cde00000, K), ev("alloc", 0x7f08d2800000, K), ev("alloc", 0x7f08d2800400, K),
      ev("alloc", 0x7f08cde00400, K)],
     [seg(0x7f08cde00000, 2097152), seg(0x7f08d2800000, 2097152, (0, 1))],
     [(A, D, [c("elements", 6), c("max_size_bytes", 4096), c("peak_bytes", 4096),
              ("max_at_time, step by step (11 values)", "points", None),
              c("envelopes.count", 0), c("stripes.count", 0), c("bands", 6),
              c("context[0]", "7f08cde00000", "contains"),
              c("context[0]", "Total memory used after allocation: 1.0KiB", "contains"),
              c("context[0]", "pool_id (0, 0)", "contains")])])

case("test_envelope_grows_on_segment_map",
     [ev("segment_map", 0x1000, 500), ev("alloc", 0x1000, 500), ev("free_completed", 0x1000, 500),
      ev("segment_map", 0x1200, 400), ev("alloc", 0x1200, 400)],
     [seg(0x1000, 900, (1, 10))],
     [(P, D, [c("envelopes.count", 1), c("envelope:pool:1,10,s0.size_bytes", 900), c("stripes.count", 2),
              c("stripes.sizes", [400, 500])])])

case("test_envelope_from_initial_reserved",
     [ev("alloc", 0x2000, 300)], [seg(0x2000, 2000, (1, 20))],
     [(P, D, [c("envelopes.count", 1), c("envelope:pool:1,20,s0.size_bytes", 2000)])])

case("test_envelope_segment_map_no_double_count",
     [ev("segment_map", 0x3000, 600), ev("alloc", 0x3000, 600)], [seg(0x3000, 600, (1, 30))],
     [(P, D, [c("envelopes.count", 1), c("envelope:pool:1,30,s0.size_bytes", 600)])])

case("test_envelope_active_exceeds_reserved",
     [ev("segment_map", 0x4000, 500), ev("alloc", 0x4000, 800), ev("alloc", 0x4400, 200)],
     [seg(0x4000, 1000, (1, 40))],
     [(P, D, [c("envelopes.count", 1), c("envelope:pool:1,40,s0.size_bytes", 1000)])])

case("test_envelope_default_pool_unaffected",
     [ev("segment_map", 100, 5000), ev("alloc", 100, 200), ev("free_completed", 100, 200)], [seg(0, 5000)],
     [(P, D, [c("envelopes.count", 0), c("max_size_bytes", 200)])])

PP = [ev("alloc", 0x1000 + i * 0x100, (i + 1) * 100) for i in range(10)] + \
     [ev("alloc", 0x5000 + i * 0x100, (i + 1) * 200) for i in range(10)]
case("test_per_pool_summarization", PP, [seg(0x1000, 0x1000), seg(0x5000, 0x1000, (1, 50))],
     [(P, 5, [c("non_pool_bands", 0), c("stripes.count", 5), c("envelopes.count", 1), c("pool_summaries.count", 1),
              c("pool_summaries[0].max_bytes", 3000), c("summarized.max_bytes", 5500), c("elements", 20)])])

case("test_per_pool_summarization_with_frees",
     [ev("alloc", 0x8100 + i * 0x100, (i + 1) * 100) for i in range(6)] +
     [ev("free_completed", 0x8600, 600), ev("free_completed", 0x8100, 100)],
     [seg(0x8000, 0x1000, (1, 60))],
     [(P, 3, [c("stripes.count", 3), c("pool_summaries.count", 1), c("pool_summaries[0].max_bytes", 600),
              c("pool_summaries[0].final_bytes", 500)])])

case("test_per_pool_summarization_initially_allocated",
     [ev("free_completed", 0xa100 + i * 0x100, (i + 1) * 100) for i in range(4)],
     [seg(0xa000, 0x1000, (1, 70))],
     [(P, 2, [c("stripes.count", 2), c("stripes.sizes", [300, 400]), c("pool_summaries.count", 1),
              c("pool_summaries[0].max_bytes", 300), c("pool_summaries[0].final_bytes", 0)])])

case("test_per_pool_summarization_interleaved",
     [ev("alloc", 0xc000, 1800), ev("alloc", 0xc800, 200), ev("alloc", 0xd000, 1600), ev("alloc", 0xd800, 100)],
     [seg(0xc000, 0x2000, (1, 80))],
     [(P, 2, [c("stripes.count", 2), c("pool_summaries.count", 1), c("pool_summaries[0].final_bytes", 300),
              ("drawn stripes start at the envelope's base", "points", None),
              ("the pool's summarized stripe sits on the drawn stripes", "points", None)])])

# 120,000 allocations of 1 KiB at detail 0; the fixture is written as its rule, not its entries.
N = 120000
case("test_summarized_band_decimated_for_long_trace",
     {"repeat": N, "action": "alloc", "addr_start": 0x100000, "addr_step": 1024, "size": 1024}, [],
     [(A, 0, [("every series within 100,002 points, offsets and sizes aligned", "points", None),
              ("the summarized band has fewer points than actions", "points", None),
              c("summarized.final_bytes", N * 1024), c("summarized.max_bytes", N * 1024),
              ("max_at_time has one value per action", "points", None)])])


def check_id(name, call, what, op, value):
    v = "" if value is None else " " + json.dumps(value)
    return f"{name}#{call} {what} {op}{v}"


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.json"):
        old.unlink()
    cases = []
    total_checks = 0
    for k in CASES:
        name = k["name"][len("test_"):]
        snap = k["snapshot"]
        traces = snap["device_traces"][0]
        if isinstance(traces, dict):
            # A rule, expanded by the test: the snapshot keeps only the segments and the rule.
            snap = dict(snap, device_traces=[[]])
            expand = traces
        else:
            expand = None
        (OUT / f"{name}.json").write_text(json.dumps(snap, separators=(",", ":")) + "\n")
        calls = []
        for i, (view, detail, checks) in enumerate(k["calls"]):
            cs = [{"id": check_id(name, i, w, o, v), "what": w, "op": o, "value": v} for (w, o, v) in checks]
            total_checks += len(cs)
            calls.append({"view": view, "detail": detail, "checks": cs})
        rec = {"case": k["name"], "snapshot": f"{name}.json", "calls": calls}
        if expand:
            rec["expand_trace"] = expand
        cases.append(rec)
    doc = {
        "about": f"Every call of process_alloc_data in {SOURCE}, restated: the snapshot each test builds "
                 "(NAME.json) and what it asserts (checks), run by crates/cli/tests/cli/conformance.rs against "
                 "`memviz layout NAME.json --device 0 --view V --detail N --json`. Differences on purpose are "
                 "listed in docs/layout.md. Made by tests/gen/make_conformance.py.",
        "calls": sum(len(k["calls"]) for k in CASES),
        "checks": total_checks,
        "cases": cases,
    }
    (OUT / "cases.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(cases)} cases, {doc['calls']} calls, {total_checks} checks to {OUT}")


if __name__ == "__main__":
    main()
