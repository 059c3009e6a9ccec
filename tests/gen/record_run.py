"""Real snapshots from `memviz.record` and friends, made on a machine with PyTorch and a CUDA GPU
(lightning and transformers optional). Everything lands in OUT:

- `run/`: two ranks (gloo, both on GPU 0, DDP over a small MLP) training 5 steps under
  `memviz.record(run, every=2)`, then a forced out-of-memory error (a 1% memory fraction and an
  8 GiB request) caught by the script: `iteration_{2,4}/` and `iteration_5_exit/` per rank.
- `lightning/`, `transformers/`: the callbacks of `memviz.integrations` over 4 steps, every 2.
- `skip_actions.pickle`: 3 steps of a small loop recorded with
  `_record_memory_history(max_entries=100000, skip_actions=["free_requested"])`.
- `fx_augmented.pickle`: one step of a `torch.compile`d MLP (after a warm-up step),
  `_dump_snapshot(path, augment_with_fx_traces=True)`.
- `NAME.ref.stats.txt` / `NAME.ref.trace.txt`: `python -m torch.cuda._memory_viz stats|trace` of
  those two and of `run/iteration_5_exit/rank0_memory_snapshot.pickle.gz` (gunzipped first, as
  `record_oom`), and `checks.json`: what was checked on the way.

    PYTHONPATH=python python3 tests/gen/record_run.py OUT
"""

import gzip
import inspect
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections import Counter

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

import memviz

CHECKS = {}


def mlp(width=1024):
    return nn.Sequential(nn.Linear(width, 4 * width), nn.ReLU(), nn.Linear(4 * width, width)).cuda()


def train_steps(model, steps, batch=64, width=1024, on_step=None):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        x = torch.randn(batch, width, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if on_step:
            on_step()
    torch.cuda.synchronize()


def rank_main(rank, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.cuda.set_device(0)
    with memviz.record(out, every=2):
        model = nn.parallel.DistributedDataParallel(mlp(), device_ids=[0])
        train_steps(model, 5, on_step=memviz.step)
        torch.cuda.set_per_process_memory_fraction(0.01)
        try:
            torch.empty(8 << 30, dtype=torch.uint8, device="cuda")
            raise SystemExit("no out-of-memory error")
        except torch.OutOfMemoryError as e:
            print(f"rank {rank}: caught {str(e).splitlines()[0]}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def actions(snapshot):
    return Counter(e["action"] for t in snapshot["device_traces"] for e in t)


def reference(plain_path, name, out):
    """PyTorch's CLI on a plain pickle: its stdout into NAME.ref.{stats,trace}.txt."""
    for cmd in ["stats", "trace"]:
        p = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", cmd, plain_path], capture_output=True)
        CHECKS[f"{name} {cmd} exit"] = p.returncode
        if p.returncode != 0:
            CHECKS[f"{name} {cmd} stderr"] = p.stderr.decode()[-2000:]
            continue
        with open(os.path.join(out, f"{name}.ref.{cmd}.txt"), "wb") as f:
            f.write(p.stdout)


def gunzip_to(path, folder):
    plain = os.path.join(folder, os.path.basename(path)[: -len(".gz")])
    with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return plain


def check_files(root, label, tmp):
    """Every file under root: protocol 4, PyTorch's CLI reads it (stats), actions counted."""
    found = {}
    for folder, _, names in sorted(os.walk(root)):
        for n in sorted(names):
            path = os.path.join(folder, n)
            rel = os.path.relpath(path, root)
            plain = gunzip_to(path, tmp) if n.endswith(".gz") else path
            with open(plain, "rb") as f:
                head = f.read(2)
                f.seek(0)
                snap = pickle.load(f)
            p = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", "stats", plain], capture_output=True)
            found[rel] = {
                "bytes": os.path.getsize(path),
                "protocol": head[1] if head[:1] == b"\x80" else None,
                "actions": dict(actions(snap)),
                "pytorch_stats_exit": p.returncode,
            }
    CHECKS[label] = found


def part(name, fn, *args):
    try:
        fn(*args)
        CHECKS[f"{name} ok"] = True
    except Exception:
        CHECKS[f"{name} ok"] = False
        CHECKS[f"{name} error"] = traceback.format_exc()[-3000:]
        print(traceback.format_exc(), flush=True)


def signatures():
    m = torch.cuda.memory
    CHECKS["torch"] = torch.__version__
    CHECKS["python"] = sys.version
    CHECKS["_record_memory_history"] = str(inspect.signature(m._record_memory_history))
    CHECKS["_dump_snapshot"] = str(inspect.signature(m._dump_snapshot))
    CHECKS["_snapshot"] = str(inspect.signature(m._snapshot))
    CHECKS["oom observer"] = hasattr(torch._C, "_cuda_attach_out_of_memory_observer")


def skip_actions(out):
    params = inspect.signature(torch.cuda.memory._record_memory_history).parameters
    CHECKS["skip_actions in signature"] = "skip_actions" in params
    torch.cuda.memory._record_memory_history(max_entries=100000, skip_actions=["free_requested"], clear_history=True)
    model = mlp(512)
    train_steps(model, 3, width=512)
    del model
    path = os.path.join(out, "skip_actions.pickle")
    torch.cuda.memory._dump_snapshot(path)
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(path, "rb") as f:
        CHECKS["skip_actions actions"] = dict(actions(pickle.load(f)))
    reference(path, "skip_actions", out)


def fx_augmented(out):
    params = inspect.signature(torch.cuda.memory._dump_snapshot).parameters
    CHECKS["augment_with_fx_traces in signature"] = "augment_with_fx_traces" in params
    model = torch.compile(mlp(256))
    train_steps(model, 1, width=256)  # compiles
    torch.cuda.memory._record_memory_history(max_entries=100000, clear_history=True)
    train_steps(model, 1, width=256)
    path = os.path.join(out, "fx_augmented.pickle")
    torch.cuda.memory._dump_snapshot(path, augment_with_fx_traces=True)
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(path, "rb") as f:
        snap = pickle.load(f)
    keys = Counter(k for t in snap["device_traces"] for e in t for fr in e.get("frames", []) for k in fr if k.startswith("fx_"))
    CHECKS["fx_augmented fx frame keys"] = dict(keys)
    CHECKS["fx_augmented actions"] = dict(actions(snap))
    reference(path, "fx_augmented", out)


def two_ranks(out, tmp):
    run = os.path.join(out, "run")
    mp.spawn(rank_main, args=(run,), nprocs=2, join=True)
    check_files(run, "run files", tmp)
    plain = gunzip_to(os.path.join(run, "iteration_5_exit", "rank0_memory_snapshot.pickle.gz"), tmp)
    shutil.copy(plain, os.path.join(out, "record_oom.pickle"))
    reference(os.path.join(out, "record_oom.pickle"), "record_oom", out)
    os.remove(os.path.join(out, "record_oom.pickle"))  # the .gz under run/ is the file


def lightning_part(out, tmp):
    import lightning.pytorch as pl
    from memviz.integrations import LightningCallback

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256))

        def training_step(self, batch, batch_idx):
            return self.net(batch).square().mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    data = torch.utils.data.DataLoader(torch.randn(64, 256), batch_size=16)
    root = os.path.join(out, "lightning")
    trainer = pl.Trainer(
        accelerator="gpu", devices=1, max_steps=4, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, callbacks=[LightningCallback(root, every=2)],
    )
    trainer.fit(Module(), data)
    check_files(root, "lightning files", tmp)


def transformers_part(out, tmp):
    import transformers
    from memviz.integrations import TransformersCallback

    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=256, n_positions=64)
    model = transformers.GPT2LMHeadModel(config)
    ids = torch.randint(0, 256, (32, 32))
    data = [{"input_ids": x, "labels": x} for x in ids]
    root = os.path.join(out, "transformers")
    args = transformers.TrainingArguments(
        output_dir=os.path.join(tmp, "hf"), max_steps=4, per_device_train_batch_size=4,
        report_to=[], save_strategy="no", logging_strategy="no", disable_tqdm=True,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=[TransformersCallback(root, every=2)])
    trainer.train()
    check_files(root, "transformers files", tmp)


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        part("signatures", signatures)
        part("skip_actions", skip_actions, out)
        part("fx_augmented", fx_augmented, out)
        part("two ranks", two_ranks, out, tmp)
        part("lightning", lightning_part, out, tmp)
        part("transformers", transformers_part, out, tmp)
    with open(os.path.join(out, "checks.json"), "w") as f:
        json.dump(CHECKS, f, indent=1, default=str)
    print(json.dumps({k: v for k, v in CHECKS.items() if "error" not in k}, indent=1, default=str)[:6000])


if __name__ == "__main__":
    main()
