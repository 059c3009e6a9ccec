#!/usr/bin/env python3
"""Writes tests/data/synth/metadata_dict.pickle: a small snapshot whose `user_metadata` is a Python
dict on some entries (not the JSON text `_set_memory_metadata` writes), JSON text on others, empty
on a backward-like allocation without frames, plus an allocation live before the trace.
Deterministic: running it again gives the same bytes.

Usage: python3 tests/gen/make_metadata_dict.py [OUT]
"""

import pickle
import sys

USER = "/home/user/project/train.py"
LIB = "/opt/conda/lib/python3.12/site-packages/torch/nn/modules/linear.py"


def frames(user_line):
    return [{"filename": LIB, "line": 134, "name": "forward"},
            {"filename": USER, "line": user_line, "name": "step"}]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/synth/metadata_dict.pickle"
    base = 0x7F0000000000
    trace, t = [], 1_000_000
    allocs = [  # (size, metadata, user line)
        (1 << 20, {"phase": "forward", "layer": 0}, 10),
        (2 << 20, {"phase": "forward", "layer": 1}, 11),
        (3 << 20, '{"phase": "backward", "layer": 1}', 12),
        (4 << 20, "optimizer step 0", 13),
        (5 << 20, {"phase": "forward", "layer": 2}, 10),
        (512, {}, 14),
    ]
    for i, (size, meta, line) in enumerate(allocs):
        t += 10
        trace.append({"action": "alloc", "addr": base + i * (8 << 20), "size": size, "stream": 0, "time_us": t,
                      "compile_context": "N/A", "user_metadata": meta, "frames": frames(line)})
    # Made in autograd's backward thread: no frames, no metadata.
    t += 10
    trace.append({"action": "alloc", "addr": base + 6 * (8 << 20), "size": 6 << 20, "stream": 0, "time_us": t,
                  "compile_context": "N/A", "user_metadata": "", "frames": []})
    # Free the second one: it is not live at the end.
    t += 10
    trace.append({"action": "free_completed", "addr": base + (8 << 20), "size": 2 << 20, "stream": 0, "time_us": t,
                  "compile_context": "N/A", "user_metadata": "", "frames": frames(20)})
    # A tensor freed in the trace but allocated before it.
    t += 10
    trace.append({"action": "free_completed", "addr": base + 7 * (8 << 20), "size": 7 << 20, "stream": 0,
                  "time_us": t, "compile_context": "N/A", "user_metadata": "", "frames": frames(21)})
    snap = {"segments": [], "device_traces": [trace]}
    with open(out, "wb") as f:
        f.write(pickle.dumps(snap, protocol=4))


if __name__ == "__main__":
    main()
