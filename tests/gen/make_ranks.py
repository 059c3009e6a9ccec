#!/usr/bin/env python3
"""Writes a generated training run of 8 ranks, the shapes of crates/cli/tests/cli/ranks.rs: every rank
holds 10 parameters of 10 MiB and runs 5 iterations of 8 activations of 32 MiB (annotated
ProfilerStep#N); rank 3 runs 3x the batch (and reserves 1 GiB, the others 512 MiB), rank 5 keeps
4 MiB more every iteration, rank 6 runs out of memory in its 4th iteration.

    python3 tests/gen/make_ranks.py OUT_DIR        # OUT_DIR/rank{0..7}_memory_snapshot.pickle
"""
import os
import pickle
import sys

MIB = 1 << 20
RANKS = 8
ITERATIONS = 5
PARAMS = 10
PARAM_BYTES = 10 * MIB
ACTIVATIONS = 8
ACTIVATION_BYTES = 32 * MIB
LEAK_BYTES = 4 * MIB


def expected_peak_bytes(rank):
    base = PARAMS * PARAM_BYTES
    if rank == 3:
        return base + 3 * ACTIVATIONS * ACTIVATION_BYTES
    if rank == 5:
        return base + ACTIVATIONS * ACTIVATION_BYTES + (ITERATIONS - 1) * LEAK_BYTES
    return base + ACTIVATIONS * ACTIVATION_BYTES


def reserved_bytes(rank):
    return 1 << 30 if rank == 3 else 512 << 20


def frame(name, line):
    return {"filename": "train.py", "line": line, "name": name}


def stack(name, line):
    return [frame(name, line), frame("main", 1)]


def rank_snapshot(rank):
    params, act, free, leak = stack("init_params", 10), stack("forward", 20), stack("backward", 30), stack("keep_loss", 40)
    base = 0x7F00_0000_0000
    entries, annotations = [], []
    t = [1_700_000_000_000_000]

    def push(action, addr, size, frames):
        t[0] += 10
        entries.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t[0], "frames": frames})

    push("segment_alloc", base, reserved_bytes(rank), params)
    for p in range(PARAMS):
        push("alloc", base + p * PARAM_BYTES, PARAM_BYTES, params)
    batch = 3 if rank == 3 else 1
    act_base = base + PARAMS * PARAM_BYTES
    leak_base = base + 400 * MIB
    for it in range(ITERATIONS):
        annotations.append({"stage": "START", "name": f"ProfilerStep#{it}", "device": 0, "time_us": t[0] + 1})
        n = ACTIVATIONS * batch
        for a in range(n):
            push("alloc", act_base + a * ACTIVATION_BYTES, ACTIVATION_BYTES, act)
        if rank == 6 and it == 3:
            t[0] += 10
            entries.append({"action": "oom", "device_free": 64 * MIB, "size": 2048 * MIB, "stream": 0, "time_us": t[0], "frames": act})
            break
        for a in reversed(range(n)):
            addr = act_base + a * ACTIVATION_BYTES
            push("free_requested", addr, ACTIVATION_BYTES, free)
            push("free_completed", addr, ACTIVATION_BYTES, free)
        if rank == 5:
            push("alloc", leak_base + it * LEAK_BYTES, LEAK_BYTES, leak)
    return {"segments": [], "device_traces": [entries], "external_annotations": annotations}


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for r in range(RANKS):
        with open(os.path.join(out, f"rank{r}_memory_snapshot.pickle"), "wb") as f:
            pickle.dump(rank_snapshot(r), f, protocol=4)


if __name__ == "__main__":
    main()
