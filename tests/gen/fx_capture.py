"""A real snapshot whose frames carry FX fields (`fx_node_op`, `fx_node_name`, `fx_node_target`,
`fx_original_trace`): an MLP compiled with `backend="aot_eager"` (the generated FX graph runs in
Python, so its frames are FX code) with `torch.fx.experimental._config.enrich_profiler_metadata`
on (graph modules register their line maps when compiled), recorded from before the compile, one training step, then
`_snapshot(augment_with_fx_traces=True)`. Needs PyTorch and a CUDA GPU.

    python3 tests/gen/fx_capture.py OUT.pickle
"""

import pickle
import sys

import torch
import torch.fx.experimental._config  # noqa: F401
from torch import nn


def main():
    out = sys.argv[1]
    torch.fx.experimental._config.enrich_profiler_metadata = True
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)).cuda()
    torch.cuda.memory._record_memory_history(max_entries=100000)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    for _ in range(2):
        loss = compiled(torch.randn(64, 256, device="cuda")).square().mean()
        loss.backward()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot(augment_with_fx_traces=True)
    torch.cuda.memory._record_memory_history(enabled=None)
    keys = {}
    for t in snap["device_traces"]:
        for e in t:
            for f in e.get("frames", []):
                for k in f:
                    if k.startswith("fx_"):
                        keys[k] = keys.get(k, 0) + 1
    print("fx keys:", keys, "torch", torch.__version__)
    with open(out, "wb") as f:
        pickle.dump(snap, f, protocol=4)


if __name__ == "__main__":
    main()
