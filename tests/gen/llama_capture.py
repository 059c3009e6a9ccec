"""A real capture of the shape large training runs now write: a Llama-style model (transformers'
`LlamaConfig`, hidden 1024, 8 layers, bf16, AdamW, random weights, batch 4 x 512 tokens) trained
until the ring buffer of `_record_memory_history(max_entries=N, stacks="all")` has wrapped, so
every entry carries its Python and C++ frames. Needs PyTorch, transformers and a CUDA GPU.

    python3 tests/gen/llama_capture.py OUT.pickle [--entries 1000000] [--steps 360]

Prints the steps run, the dump's size and the time it took. The 1M-entry file is about 175 MB
(xz: about 5 MB); keep such files out of git (`*.big.pickle` is ignored).
"""

import argparse
import os
import pickle
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=360)
    args = ap.parse_args()
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=32000,
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=8,
        num_attention_heads=16,
        num_key_value_heads=16,
        max_position_embeddings=1024,
    )
    model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    torch.cuda.memory._record_memory_history(max_entries=args.entries, stacks="all")
    t0 = time.time()
    for step in range(args.steps):
        ids = torch.randint(0, cfg.vocab_size, (4, 512), device="cuda")
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 50 == 0:
            torch.cuda.synchronize()
            print(f"step {step}: {time.time() - t0:.1f} s", flush=True)
    torch.cuda.synchronize()
    t1 = time.time()
    snap = torch.cuda.memory._snapshot()
    t2 = time.time()
    with open(args.out + ".tmp", "wb") as f:
        pickle.dump(snap, f, protocol=4)
    os.replace(args.out + ".tmp", args.out)
    t3 = time.time()
    entries = sum(len(t) for t in snap["device_traces"])
    print(
        f"{args.steps} steps in {t1 - t0:.1f} s; snapshot {t2 - t1:.1f} s, pickle {t3 - t2:.1f} s; "
        f"{entries} entries, {os.path.getsize(args.out) / 1e6:.1f} MB, torch {torch.__version__}"
    )
    torch.cuda.memory._record_memory_history(enabled=None)


if __name__ == "__main__":
    main()
