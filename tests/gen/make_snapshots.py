#!/usr/bin/env python3
"""Generate the committed test snapshots under tests/data/.

Three sets, each in its own folder:

* ``real/``    -- real snapshots recorded with PyTorch, with local script paths
                  rewritten to neutral ones (``--real DIR``);
* ``synth/``   -- small synthetic snapshots, one per format variant;
* ``hostile/`` -- malformed and malicious inputs that a reader must reject
                  (or accept with warnings) without crashing.

For ``real/`` and ``synth/`` every pickle gets ``NAME.ref.stats.txt`` and
``NAME.ref.trace.txt``: the exact stdout of the reference command line
(PyTorch's ``torch/cuda/_memory_viz.py``).  When the reference exits with an
error, no file is written and the exit status plus the last line of stderr
go into ``manifest.json`` instead.

Usage::

    python3 tests/gen/make_snapshots.py --ref /path/to/_memory_viz.py
    python3 tests/gen/make_snapshots.py --ref "python3 -m torch.cuda._memory_viz"
    python3 tests/gen/make_snapshots.py --ref ... --real /path/to/recorded/pickles

Only the standard library is needed.  The output is deterministic: running the
script again with the same reference reproduces identical bytes.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import pickle
import random
import shlex
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "tests" / "data"
DEFAULT_FIXTURES = REPO / "tests" / "data" / "real"

# --------------------------------------------------------------------------
# Reference command line
# --------------------------------------------------------------------------


class Reference:
    """Runs the reference CLI (`stats` / `trace`) on one file."""

    def __init__(self, spec: str):
        path = Path(spec)
        if path.suffix == ".py" and path.is_file():
            self.argv = [sys.executable, str(path.resolve())]
            self.sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            self.argv = shlex.split(spec)
            self.sha256 = None

    def run(self, command: str, path: Path):
        env = dict(os.environ)
        env.update(PYTHONIOENCODING="utf-8", PYTHONHASHSEED="0")
        # Run from the file's folder with a relative name so that nothing
        # machine-specific can end up in the recorded output.
        proc = subprocess.run(
            self.argv + [command, path.name],
            cwd=path.parent,
            capture_output=True,
            env=env,
            timeout=900,
        )
        return proc.returncode, proc.stdout, proc.stderr


def last_line(data: bytes) -> str:
    lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def write_refs(ref: Reference | None, path: Path) -> dict:
    """Write NAME.ref.{stats,trace}.txt next to `path`; return the manifest record."""
    result = {}
    stem = path.name[: -len(".pickle")] if path.name.endswith(".pickle") else path.stem
    for command in ("stats", "trace"):
        out = path.parent / f"{stem}.ref.{command}.txt"
        if ref is None:
            result[command] = None
            continue
        rc, stdout, stderr = ref.run(command, path)
        if rc == 0:
            out.write_bytes(stdout)
            result[command] = {"ok": True, "file": out.name}
        else:
            if out.exists():
                out.unlink()
            result[command] = {
                "ok": False,
                "exit_status": rc,
                "stderr_last_line": last_line(stderr),
            }
    return result


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------
# Part 1: real snapshots
# --------------------------------------------------------------------------

REAL_NAMES = [
    "growth_leak",
    "metadata_mempool",
    "expandable_segments",
    "multistream",
    "gpt_amp_annotated",
    # torch.cuda.memory._record_memory_history(max_entries=64), then 300 allocations of 4-28 KiB
    # with at most six live: the ring buffer wrapped (PyTorch 2.11 writes no overflow flag).
    "ring_buffer_wrapped",
]

# Frame file names are rewritten by rule, so that nothing about the machine
# that recorded a snapshot ends up in the repository:
#   * library files (anything under site-packages/dist-packages or a Python
#     install) and C++ frames (relative names, "??") are kept as they are;
#   * TorchInductor's generated code moves to /tmp/torchinductor_user/...;
#   * any other absolute path is a local script: the script of the
#     `<module>` frames (the program that was run) becomes
#     /home/user/project/train.py, the others model.py, utils.py, ... in
#     the order of their original paths.
PROJECT = "/home/user/project/"
LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/", "/lib/python3")
INDUCTOR_PREFIX = "/tmp/torchinductor_"


def is_library(filename: str) -> bool:
    return any(m in filename for m in LIBRARY_MARKERS)


def is_neutral(filename: str) -> bool:
    return (not filename.startswith("/") or is_library(filename) or filename.startswith(PROJECT)
            or filename.startswith(INDUCTOR_PREFIX + "user/"))


def iter_frames(snapshot):
    segments = snapshot["segments"] if isinstance(snapshot, dict) else snapshot
    for seg in segments:
        yield seg.get("frames")
        for b in seg.get("blocks", []):
            yield b.get("frames")
            for h in b.get("history", []) or []:
                yield h.get("frames")
    if isinstance(snapshot, dict):
        for trace in snapshot.get("device_traces", []):
            for e in trace:
                yield e.get("frames")


def entry_scripts(snapshot) -> set[str]:
    out = set()
    for frames in iter_frames(snapshot):
        for f in frames or []:
            fn = f.get("filename")
            if f.get("name") == "<module>" and isinstance(fn, str) and not is_neutral(fn):
                out.add(fn)
    return out


LOCAL_NAMES = ["model.py", "utils.py", "data.py", "layers.py"]


def local_names(snapshot) -> dict[str, str]:
    """Neutral names for the local scripts of one snapshot."""
    entry = entry_scripts(snapshot)
    local = set()
    for frames in iter_frames(snapshot):
        for f in frames or []:
            fn = f.get("filename")
            if isinstance(fn, str) and not is_neutral(fn) and not fn.startswith(INDUCTOR_PREFIX):
                local.add(fn)
    names = {}
    for fn in sorted(entry)[:1]:
        names[fn] = PROJECT + "train.py"
    others = [fn for fn in sorted(local) if fn not in names]
    for i, fn in enumerate(others):
        names[fn] = PROJECT + (LOCAL_NAMES[i] if i < len(LOCAL_NAMES) else f"module{i}.py")
    return names


def neutral_path(filename: str, names: dict[str, str]) -> str:
    if is_neutral(filename):
        return filename
    if filename.startswith(INDUCTOR_PREFIX):
        rest = filename[len(INDUCTOR_PREFIX):].split("/", 1)
        return INDUCTOR_PREFIX + "user/" + (rest[1] if len(rest) > 1 else "")
    return names[filename]


def rewrite_frames_in_place(snapshot) -> dict:
    """Rewrite every frame's `filename` in place.

    Frame dicts and frame lists are edited where they are, so objects that
    PyTorch shared (and pickle memoized) stay shared.  Replacement strings are
    cached by the identity of the original string, so two frames that shared
    one string object still share one after the rewrite, and two that did not
    still do not.  Returns {new file name: number of frame dicts changed}.
    """
    names = local_names(snapshot)
    seen_frames: set[int] = set()
    new_strings: dict[int, str] = {}
    keep_alive = []
    counts: dict[str, int] = {}
    for frames in iter_frames(snapshot):
        if not isinstance(frames, list):
            continue
        for f in frames:
            if not isinstance(f, dict) or id(f) in seen_frames:
                continue
            seen_frames.add(id(f))
            old = f.get("filename")
            if not isinstance(old, str):
                continue
            new = neutral_path(old, names)
            if new == old:
                continue
            key = id(old)
            if key not in new_strings:
                # a new string object per original object (not one per value)
                new_strings[key] = new.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
                keep_alive.append(old)
            f["filename"] = new_strings[key]
            counts[new] = counts.get(new, 0) + 1
    return counts


def check_no_local_paths(snapshot) -> list[str]:
    bad = []
    for frames in iter_frames(snapshot):
        for f in frames or []:
            fn = f.get("filename")
            if isinstance(fn, str) and not is_neutral(fn):
                bad.append(fn)
    return bad


def make_real(src_dir: Path, out_dir: Path, ref: Reference | None) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for name in REAL_NAMES:
        src = src_dir / f"{name}.pickle"
        with open(src, "rb") as f:
            snapshot = pickle.load(f)
        counts = rewrite_frames_in_place(snapshot)
        bad = check_no_local_paths(snapshot)
        if bad:
            raise SystemExit(f"{name}: local paths left after rewrite: {sorted(set(bad))[:5]}")
        dst = out_dir / f"{name}.pickle"
        with open(dst, "wb") as f:
            pickle.dump(snapshot, f, protocol=4)
        traces = snapshot.get("device_traces", [])
        record = {
            "file": dst.name,
            "bytes": dst.stat().st_size,
            "trace_entries": [len(t) for t in traces],
            "segments": len(snapshot["segments"]),
            "rewritten_filenames": dict(sorted(counts.items())),
            "ref": write_refs(ref, dst),
        }
        files.append(record)
        print(f"real/{dst.name}: {record['bytes']} bytes")
    write_json(
        out_dir / "manifest.json",
        {
            "about": "Real snapshots recorded with PyTorch 2.11 (CUDA, one H200). Local script paths "
            "were rewritten to /home/user/project/train.py (the script that was run) and "
            "model.py, ... (other local scripts), TorchInductor's cache to /tmp/torchinductor_user/; library paths are "
            "unchanged. Re-dumped with pickle protocol 4, object sharing preserved.",
            "reference_sha256": ref.sha256 if ref else None,
            "files": files,
        },
    )


# --------------------------------------------------------------------------
# Part 2: synthetic snapshots
# --------------------------------------------------------------------------

T0 = 1764412345678901  # µs since the Unix epoch (late 2025)
TRAIN = "/home/user/project/train.py"
MODEL = "/home/user/project/model.py"
SITE = "/opt/conda/lib/python3.12/site-packages"
TORCH = SITE + "/torch"

SMALL_SIZE = 1 << 20  # requests up to 1 MiB go to the small pool
SMALL_BUFFER = 2 << 20  # small-pool segment size
LARGE_BUFFER = 20 << 20  # large-pool segment size for requests < 10 MiB
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20

ALLOCATOR_SETTINGS_KEYS = ["1", "2", "4", "8", "16", "32", "64", "128", "256", "512",
                           "1024", "2048", "4096", "8192", "16384", "32768"]


def allocator_settings(conf: str = "", expandable: bool = False) -> dict:
    return {
        "PYTORCH_CUDA_ALLOC_CONF": conf,
        "max_split_size": -1,
        "garbage_collection_threshold": 0.0,
        "expandable_segments": expandable,
        "pinned_num_register_threads": 1,
        "release_lock_on_cudamalloc": False,
        "pinned_use_cuda_host_register": False,
        "graph_capture_record_stream_reuse": False,
        "roundup_power2_divisions": {k: 0 for k in ALLOCATOR_SETTINGS_KEYS},
    }


class Stacks:
    """Interns frame dicts and stacks, so that a repeated stack is one list object.

    PyTorch symbolizes all tracebacks in one batch and hands out the same
    Python list for identical tracebacks (and the same dict for identical
    frames), which pickle then memoizes.  Doing the same here keeps the files
    shaped like real ones.
    """

    def __init__(self):
        self._frames: dict = {}
        self._stacks: dict = {}

    def frame(self, name, filename, line, **extra):
        key = (name, filename, line, tuple(extra.items()))
        f = self._frames.get(key)
        if f is None:
            f = {"name": name, "filename": filename, "line": line}
            f.update(extra)
            self._frames[key] = f
        return f

    def stack(self, *frames):
        key = tuple(id(f) for f in frames)
        s = self._stacks.get(key)
        if s is None:
            s = list(frames)
            self._stacks[key] = s
        return s

    def py(self, *sites, cpp: bool = False):
        """Build a stack from (name, filename, line) tuples, innermost first."""
        frames = [self.frame(*s) for s in sites]
        if cpp:
            frames = [
                self.frame("torch::unwind::unwind()", "??", 0),
                self.frame("torch::CapturedTraceback::gather(bool, bool, bool)", "??", 0),
                self.frame("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp", 0),
                self.frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)", "CUDACachingAllocator.cpp", 0),
                self.frame("at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "TensorFactories.cpp", 0),
                self.frame("at::(anonymous namespace)::wrapper_CUDA_memory_format_empty(c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "RegisterCUDA_0.cpp", 0),
                self.frame("_PyEval_EvalFrameDefault", "??", 0),
            ] + frames
        return self.stack(*frames)


def common_stacks(S: Stacks) -> dict:
    mod = TORCH + "/nn/modules/module.py"
    call = [("_call_impl", mod, 1790), ("_wrapped_call_impl", mod, 1779)]
    tail = [("train_step", TRAIN, 88), ("main", TRAIN, 131), ("<module>", TRAIN, 140)]
    return {
        "param": S.py(("_apply", mod, 942), ("cuda", mod, 1069), ("build_model", MODEL, 57),
                      ("main", TRAIN, 118), ("<module>", TRAIN, 140)),
        "data": S.py(("to_device", TRAIN, 33), ("train_step", TRAIN, 79), ("main", TRAIN, 131),
                     ("<module>", TRAIN, 140)),
        "linear": S.py(("forward", TORCH + "/nn/modules/linear.py", 134), *call,
                       ("forward", MODEL, 88), *call, *tail),
        "relu": S.py(("relu", TORCH + "/nn/functional.py", 1704),
                     ("forward", TORCH + "/nn/modules/activation.py", 144), *call,
                     ("forward", MODEL, 89), *call, *tail),
        "linear_cpp": S.py(("forward", TORCH + "/nn/modules/linear.py", 134), *call,
                           ("forward", MODEL, 91), *call, *tail, cpp=True),
        "loss": S.py(("cross_entropy", TORCH + "/nn/functional.py", 3494),
                     ("forward", TORCH + "/nn/modules/loss.py", 1310), *call,
                     ("train_step", TRAIN, 82), ("main", TRAIN, 131), ("<module>", TRAIN, 140)),
        "backward": S.py(("_engine_run_backward", TORCH + "/autograd/graph.py", 829),
                         ("backward", TORCH + "/autograd/__init__.py", 364),
                         ("backward", TORCH + "/_tensor.py", 648),
                         ("train_step", TRAIN, 84), ("main", TRAIN, 131), ("<module>", TRAIN, 140)),
        "autograd": S.stack(),  # backward allocations on the autograd thread: no Python frames
        "optim": S.py(("_init_group", TORCH + "/optim/adam.py", 166),
                      ("step", TORCH + "/optim/adam.py", 235),
                      ("wrapper", TORCH + "/optim/optimizer.py", 517),
                      ("train_step", TRAIN, 85), ("main", TRAIN, 131), ("<module>", TRAIN, 140)),
        "free_site": S.py(("train_step", TRAIN, 86), ("main", TRAIN, 131), ("<module>", TRAIN, 140)),
        "empty_cache": S.py(("empty_cache", TORCH + "/cuda/memory.py", 224),
                            ("main", TRAIN, 135), ("<module>", TRAIN, 140)),
        "oom": S.py(("forward", TORCH + "/nn/modules/linear.py", 134), *call,
                    ("forward", MODEL, 95), *call, *tail),
    }


def round_size(n: int) -> int:
    return max(512, (n + 511) // 512 * 512)


def segment_size_for(n: int) -> int:
    if n <= SMALL_SIZE:
        return SMALL_BUFFER
    if n < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (n + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class Block:
    __slots__ = ("address", "size", "requested", "state", "frames")

    def __init__(self, address, size, requested, state="inactive", frames=None):
        self.address = address
        self.size = size
        self.requested = requested
        self.state = state
        self.frames = frames if frames is not None else []


class Segment:
    def __init__(self, device, address, size, stream, pool, kind, expandable, frames):
        self.device = device
        self.address = address
        self.total_size = size
        self.stream = stream
        self.pool = pool
        self.kind = kind
        self.expandable = expandable
        self.frames = frames
        self.blocks = [Block(address, size, size)]


class Device:
    """A small model of one device's caching allocator that records a trace.

    It is not PyTorch's algorithm, only close enough that the final segments
    and blocks agree with the recorded trace (sizes sum up, frees match
    allocations), which is what readers and the reference CLI check.
    """

    def __init__(self, device=0, *, seed=0, t0=T0, base=139724914106368, time=True,
                 compile_context=True, user_metadata=True, frames=True, free_context="alloc",
                 pool_id=False):
        self.device = device
        self.rng = random.Random(seed)
        self.t = t0
        self.next_va = base
        self.segments: list[Segment] = []
        self.trace: list[dict] = []
        self.live: dict[int, tuple[Segment, Block]] = {}
        self.recording = True
        self.with_time = time
        self.with_cc = compile_context
        self.with_um = user_metadata
        self.with_frames = frames
        self.free_context = free_context
        self.with_pool_id = pool_id
        self.compile_context = "N/A"
        self.user_metadata = ""
        self.forward_frames = None
        # _record_memory_history(skip_actions=[...]): these actions are never stored.
        self.skip_actions: set[str] = set()

    # -- trace entries ------------------------------------------------------
    def now(self, lo=2, hi=900):
        self.t += self.rng.randint(lo, hi)
        return self.t

    def emit(self, action, addr, size, stream, frames, pool=None, addr_key="addr", **extra):
        if not self.recording or action in self.skip_actions:
            return None
        e = {"action": action, addr_key: addr, "size": size, "stream": stream}
        if self.with_time:
            e["time_us"] = self.now()
        if self.with_cc:
            e["compile_context"] = self.compile_context
        if self.with_um:
            e["user_metadata"] = self.user_metadata
        if self.with_pool_id and pool is not None:
            e["pool_id"] = pool
        e.update(extra)
        if self.with_frames and frames is not None:
            e["frames"] = frames
        self.trace.append(e)
        return e

    # -- segments -----------------------------------------------------------
    def take_va(self, size, gap=True):
        addr = self.next_va
        self.next_va += size
        if gap:
            self.next_va += self.rng.choice([0, 0, 2, 4, 20]) << 20
        return addr

    def new_segment(self, size, stream=0, pool=(0, 0), frames=None, kind=None, address=None):
        kind = kind or ("small" if size <= SMALL_BUFFER else "large")
        addr = address if address is not None else self.take_va(size)
        frames = frames if frames is not None else []
        seg = Segment(self.device, addr, size, stream, pool, kind, False, frames)
        self.segments.append(seg)
        self.emit("segment_alloc", addr, size, stream, frames, pool=pool)
        return seg

    def release_segment(self, seg, frames=None):
        assert all(b.state == "inactive" for b in seg.blocks), "segment still in use"
        self.segments.remove(seg)
        self.emit("segment_free", seg.address, seg.total_size, seg.stream,
                  frames if frames is not None else seg.frames, pool=seg.pool)

    def empty_cache(self, frames=None):
        for seg in list(self.segments):
            if not seg.expandable and all(b.state == "inactive" for b in seg.blocks):
                self.release_segment(seg, frames)

    # -- blocks -------------------------------------------------------------
    def find_block(self, size, kind, stream, pool):
        best = None
        for seg in self.segments:
            if seg.kind != kind or seg.stream != stream or seg.pool != pool:
                continue
            for b in seg.blocks:
                if b.state == "inactive" and b.size >= size:
                    if best is None or b.size < best[1].size:
                        best = (seg, b)
        return best

    def malloc(self, req, frames, stream=0, pool=(0, 0), **extra):
        size = round_size(req)
        kind = "small" if size <= SMALL_SIZE else "large"
        found = self.find_block(size, kind, stream, pool)
        if found is None:
            seg = self.new_segment(segment_size_for(size), stream, pool, frames, kind)
            found = (seg, seg.blocks[0])
        seg, b = found
        rest = b.size - size
        split = rest >= 512 if kind == "small" else rest > SMALL_SIZE
        if split:
            i = seg.blocks.index(b)
            seg.blocks.insert(i + 1, Block(b.address + size, rest, b.requested))
            b.size = size
        b.state = "active_allocated"
        b.requested = req
        b.frames = frames
        self.live[b.address] = (seg, b)
        if self.forward_frames is not None:
            extra = dict(extra, forward_frames=self.forward_frames)
        self.emit("alloc", b.address, req, stream, frames, pool=pool, **extra)
        return b.address

    def free(self, addr, frames=None, defer=False):
        seg, b = self.live[addr]
        ctx = frames if (frames is not None and self.free_context == "all") else b.frames
        self.emit("free_requested", addr, b.requested, seg.stream, ctx, pool=seg.pool)
        if defer:
            b.state = "active_pending_free"
        else:
            self.complete(addr, ctx)

    def complete(self, addr, frames=None):
        seg, b = self.live.pop(addr)
        ctx = frames if frames is not None else b.frames
        self.emit("free_completed", addr, b.requested, seg.stream, ctx, pool=seg.pool)
        b.state = "inactive"
        b.frames = []
        i = seg.blocks.index(b)
        if i + 1 < len(seg.blocks) and seg.blocks[i + 1].state == "inactive":
            b.size += seg.blocks.pop(i + 1).size
        if i > 0 and seg.blocks[i - 1].state == "inactive":
            prev = seg.blocks[i - 1]
            b.address = prev.address
            b.size += prev.size
            seg.blocks.pop(i - 1)

    def free_all(self, frames=None):
        for addr in list(self.live):
            if self.live[addr][1].state == "active_allocated":
                self.free(addr, frames)

    # -- expandable segments --------------------------------------------------
    def exp_reserve(self, reserve, stream=0, pool=(0, 0), kind="large"):
        """Reserve a virtual range; nothing is mapped yet."""
        return {"base": self.take_va(reserve), "reserve": reserve, "stream": stream,
                "pool": pool, "kind": kind, "granule": SMALL_BUFFER if kind == "small" else LARGE_BUFFER,
                "mapped": []}

    def exp_segments(self, vr):
        return [s for s in self.segments if s.expandable and vr["base"] <= s.address < vr["base"] + vr["reserve"]]

    def exp_malloc(self, vr, req, frames):
        size = round_size(req)
        for seg in sorted(self.exp_segments(vr), key=lambda s: s.address):
            for b in seg.blocks:
                if b.state == "inactive" and b.size >= size:
                    return self._exp_take(seg, b, size, req, frames)
        # Map more pages at the end of the last mapped range (or at the base).
        segs = sorted(self.exp_segments(vr), key=lambda s: s.address)
        g = vr["granule"]
        if segs:
            last = segs[-1]
            tail = last.blocks[-1]
            have = tail.size if tail.state == "inactive" else 0
            need = (size - have + g - 1) // g * g
            start = last.address + last.total_size
            self.emit("segment_map", start, need, vr["stream"], frames, pool=vr["pool"])
            last.total_size += need
            if tail.state == "inactive":
                tail.size += need
            else:
                last.blocks.append(Block(start, need, need))
            return self._exp_take(last, last.blocks[-1], size, req, frames)
        need = (size + g - 1) // g * g
        seg = Segment(self.device, vr["base"], need, vr["stream"], vr["pool"], vr["kind"], True, frames)
        self.segments.append(seg)
        self.emit("segment_map", seg.address, need, seg.stream, frames, pool=seg.pool)
        return self._exp_take(seg, seg.blocks[0], size, req, frames)

    def _exp_take(self, seg, b, size, req, frames):
        rest = b.size - size
        if rest > 0:
            i = seg.blocks.index(b)
            seg.blocks.insert(i + 1, Block(b.address + size, rest, b.requested))
            b.size = size
        b.state = "active_allocated"
        b.requested = req
        b.frames = frames
        self.live[b.address] = (seg, b)
        self.emit("alloc", b.address, req, seg.stream, frames, pool=seg.pool)
        return b.address

    def exp_unmap_free(self, vr, frames):
        """Unmap every granule-aligned free range (what empty_cache does)."""
        g = vr["granule"]
        for seg in sorted(self.exp_segments(vr), key=lambda s: s.address):
            pieces = []  # (start, end) ranges to unmap
            for b in seg.blocks:
                if b.state != "inactive":
                    continue
                lo = (b.address + g - 1) // g * g
                hi = (b.address + b.size) // g * g
                if hi > lo:
                    pieces.append((lo, hi))
            for lo, hi in pieces:
                self.emit("segment_unmap", lo, hi - lo, seg.stream, frames, pool=seg.pool)
            if pieces:
                self._exp_split(seg, pieces)

    def _exp_split(self, seg, holes):
        """Cut holes out of a segment; each remaining run becomes its own segment."""
        self.segments.remove(seg)
        cuts = []
        for b in seg.blocks:
            start, end = b.address, b.address + b.size
            parts = [(start, end)]
            for lo, hi in holes:
                nxt = []
                for s, e in parts:
                    if hi <= s or lo >= e:
                        nxt.append((s, e))
                        continue
                    if s < lo:
                        nxt.append((s, lo))
                    if hi < e:
                        nxt.append((hi, e))
                parts = nxt
            for s, e in parts:
                cuts.append(Block(s, e - s, b.requested if b.state != "inactive" else e - s,
                                  b.state, b.frames))
        runs: list[list[Block]] = []
        for nb in cuts:
            if runs and runs[-1][-1].address + runs[-1][-1].size == nb.address:
                runs[-1].append(nb)
            else:
                runs.append([nb])
        for run in runs:
            ns = Segment(seg.device, run[0].address, sum(b.size for b in run), seg.stream, seg.pool,
                         seg.kind, True, seg.frames)
            ns.blocks = run
            self.segments.append(ns)
            for b in run:
                if b.state != "inactive":
                    self.live[b.address] = (ns, b)

    # -- output ---------------------------------------------------------------
    def segment_dicts(self, fmt="modern"):
        out = []
        for seg in sorted(self.segments, key=lambda s: s.address):
            assert sum(b.size for b in seg.blocks) == seg.total_size
            active = [b for b in seg.blocks if b.state != "inactive"]
            if fmt == "modern":
                blocks = [
                    {"address": b.address, "size": b.size, "requested_size": b.requested,
                     "state": b.state, "frames": b.frames}
                    for b in seg.blocks
                ]
                d = {
                    "device": seg.device,
                    "address": seg.address,
                    "total_size": seg.total_size,
                    "allocated_size": sum(b.size for b in seg.blocks if b.state == "active_allocated"),
                    "active_size": sum(b.size for b in active),
                    "requested_size": sum(b.requested for b in active),
                    "stream": seg.stream,
                    "segment_type": seg.kind,
                    "segment_pool_id": seg.pool,
                    "is_expandable": seg.expandable,
                    "blocks": blocks,
                    "frames": seg.frames,
                }
            elif fmt == "legacy":
                # 2022 - mid 2023: blocks carry `history` instead of frames/requested_size.
                blocks = []
                for b in seg.blocks:
                    bd = {"size": b.size, "state": b.state}
                    if b.state != "inactive":
                        h = {"addr": b.address, "real_size": b.requested}
                        if b.frames:
                            h["frames"] = b.frames
                        bd["history"] = [h]
                    blocks.append(bd)
                d = {
                    "device": seg.device,
                    "address": seg.address,
                    "total_size": seg.total_size,
                    "allocated_size": sum(b.size for b in seg.blocks if b.state == "active_allocated"),
                    "active_size": sum(b.size for b in active),
                    "stream": seg.stream,
                    "segment_type": seg.kind,
                    "blocks": blocks,
                }
            else:
                raise ValueError(fmt)
            out.append(d)
        return out


def annotations(device, t0, names):
    out = []
    t = t0
    for name in names:
        out.append({"stage": "START", "name": name, "device": device, "time_us": t})
        t += 1731
        out.append({"stage": "END", "name": name, "device": device, "time_us": t})
        t += 97
    return out


def snapshot(devs, settings=None, ext=None, fmt="modern"):
    segs = []
    for d in devs:
        segs.extend(d.segment_dicts(fmt))
    snap = {"segments": segs, "device_traces": [d.trace for d in devs]}
    if settings is not None:
        snap["allocator_settings"] = settings
    if ext is not None:
        snap["external_annotations"] = ext
    return snap


# -- scenario helpers ------------------------------------------------------

def warm_model(dev: Device, st: dict, n=4):
    """Allocations made before recording started (model parameters)."""
    dev.recording = False
    params = [dev.malloc(sz, st["param"]) for sz in (4194304, 16384, 4194304, 16384, 1048576, 4096)[:n]]
    dev.recording = True
    return params


def train_step(dev: Device, st: dict, batch=32, free_site=False, stream=0):
    x = dev.malloc(batch * 3072 * 4, st["data"], stream)            # input
    h = dev.malloc(batch * 4096 * 4, st["linear"], stream)          # linear out
    r = dev.malloc(batch * 4096 * 4, st["relu"], stream)            # relu out
    o = dev.malloc(batch * 1000 * 4, st["linear_cpp"], stream)      # logits
    loss = dev.malloc(4, st["loss"], stream)
    g1 = dev.malloc(batch * 4096 * 4, st["autograd"], stream)
    dev.free(o, st["free_site"] if free_site else None)
    g2 = dev.malloc(4096 * 3072 * 4, st["autograd"], stream)        # weight grad (48 MiB)
    dev.free(r)
    dev.free(h)
    dev.free(g1)
    dev.free(x)
    dev.free(loss)
    return g2


def typical(seed=1):
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=seed, free_context="all")
    params = warm_model(dev, st)
    g = train_step(dev, st, free_site=True)
    m = dev.malloc(4096 * 3072 * 4, st["optim"])                    # Adam state
    dev.free(g, st["free_site"])
    g = train_step(dev, st)
    big = dev.malloc(1048575, st["data"])                           # 1024.0KiB quirk
    dev.free(big)
    tmp = dev.malloc(30 << 20, st["data"])
    dev.free(tmp, st["free_site"])
    dev.empty_cache(st["empty_cache"])
    del params, m
    ext = annotations(0, T0 + 100, ["ProfilerStep#0", "Optimizer.step#Adam.step", "ProfilerStep#1"])
    return snapshot([dev], allocator_settings(), ext)


# --------------------------------------------------------------------------
# Synthetic variants.  Each function returns (snapshot object, description).
# --------------------------------------------------------------------------

def v_bare_list_legacy():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=2)
    warm_model(dev, st, 6)
    a = dev.malloc(777, st["data"])
    dev.malloc(3 << 20, st["linear"])
    dev.free(a)
    return dev.segment_dicts("legacy"), (
        "Bare list of segments, as torch.cuda.memory_snapshot() returned in PyTorch <= 1.13: "
        "no top-level dict, blocks with `history`. The reference wraps it as "
        "{'segments': ..., 'traces': []} (sic), so its `trace` command fails.")


def v_bare_list_modern():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=3)
    warm_model(dev, st)
    train_step(dev, st)
    return dev.segment_dicts(), (
        "Bare list of modern segments: what torch.cuda.memory_snapshot() / MemPool.snapshot() "
        "return in PyTorch 2.x when someone pickles that instead of _snapshot(). `trace` fails "
        "in the reference.")


def v_legacy_history():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=4, time=False, compile_context=False, user_metadata=False)
    warm_model(dev, st)
    train_step(dev, st)
    a = dev.malloc(5000, st["linear"])
    b = dev.malloc(3000000, st["autograd"])  # empty stack -> history entry without frames
    snap = snapshot([dev], fmt="legacy")
    # Give one active block a two-entry history (the older format chained
    # earlier allocations in the block) and one a history entry without frames.
    for seg in snap["segments"]:
        for blk in seg["blocks"]:
            h = blk.get("history")
            if h and h[0]["addr"] == a:
                h.append({"addr": a + 4096, "real_size": 96, "frames": st["relu"]})
    del b
    return snap, (
        "Legacy block format (before mid-2023): blocks carry `history: [{addr, real_size, "
        "frames?}]` and no `frames`/`requested_size`; segments have no requested_size, "
        "segment_pool_id, is_expandable or frames. Includes a two-entry history and a history "
        "entry without `frames`. Trace without time_us/compile_context/user_metadata.")


def v_legacy_no_history():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=5, time=False, compile_context=False, user_metadata=False, frames=False)
    warm_model(dev, st)
    train_step(dev, st)
    snap = snapshot([dev], fmt="legacy")
    for seg in snap["segments"]:
        for blk in seg["blocks"]:
            blk.pop("history", None)
    return snap, (
        "Legacy blocks with neither `history` nor `frames`/`requested_size` (recorded without "
        "context): readers must fall back to requested_size = size. Trace entries have no "
        "frames and no time_us.")


def v_legacy_empty_history():
    snap, _ = v_legacy_history()
    for seg in snap["segments"]:
        for blk in seg["blocks"]:
            if blk["state"] == "active_allocated":
                blk["history"] = []
                break
        else:
            continue
        break
    return snap, (
        "Legacy block whose `history` is an empty list. The reference `stats` crashes on it "
        "(IndexError in _block_extra_legacy); a reader should fall back to requested_size = size.")


def v_no_time_us():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=6, time=False, compile_context=False, user_metadata=False)
    warm_model(dev, st)
    train_step(dev, st)
    train_step(dev, st)
    return snapshot([dev], allocator_settings()), (
        "Trace entries without `time_us` (PyTorch before ~2.2); no external_annotations key.")


def v_no_frames():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=7, frames=False)
    warm_model(dev, st)
    train_step(dev, st)
    snap = snapshot([dev], allocator_settings(), [])
    return snap, (
        "context='state': trace entries have no `frames` key at all (blocks and segments still "
        "carry stacks).")


def v_oom():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=8)
    warm_model(dev, st)
    a = dev.malloc(200 << 20, st["linear"])
    b = dev.malloc(300 << 20, st["linear"])
    dev.free(a)
    dev.empty_cache(st["oom"])
    # the allocator gives up: rounded size and cudaMemGetInfo's free bytes, no addr
    dev.emit("oom", 146806013952 - (300 << 20), 546068992, 0, st["oom"], addr_key="device_free")
    dev.emit("oom", 17179869184, 1073741824, 0, None, addr_key="device_free")  # without frames
    del b
    return snapshot([dev], allocator_settings(), []), (
        "`oom` entries: `device_free` instead of `addr`, rounded size; one without frames. "
        "Preceded by the segment_free of the allocator's retry.")


def v_user_defined():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=9, compile_context=False, user_metadata=False)
    warm_model(dev, st)

    def ud(stage, name):
        dev.trace.append({"action": "user_defined", "addr": 0, "size": 0, "stream": 0,
                          "time_us": dev.now(),
                          "frames": [{"name": stage, "filename": name, "line": 0}]})

    ud("START", "ProfilerStep#0")
    train_step(dev, st)
    ud("END", "ProfilerStep#0")
    ud("START", "## optimizer ##")
    dev.malloc(8192, st["optim"])
    ud("END", "## optimizer ##")
    return snapshot([dev], allocator_settings()), (
        "Historical (mid-2024) record_function annotations stored as trace entries "
        "{action: 'user_defined', addr: 0, size: 0, frames: [{name: START|END, filename: "
        "<label>, line: 0}]}; no external_annotations key.")


def v_historical_free():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=10, time=False, compile_context=False, user_metadata=False)
    warm_model(dev, st)
    train_step(dev, st)
    # Late-2022 traces had one `free` action instead of free_requested/free_completed.
    merged = []
    i = 0
    tr = dev.trace
    while i < len(tr):
        e = tr[i]
        if (e["action"] == "free_requested" and i + 1 < len(tr)
                and tr[i + 1]["action"] == "free_completed" and tr[i + 1]["addr"] == e["addr"]):
            f = dict(e)
            f["action"] = "free"
            merged.append(f)
            i += 2
        else:
            merged.append(e)
            i += 1
    dev.trace[:] = merged
    return snapshot([dev], fmt="legacy"), (
        "Late-2022 format: a single `free` action instead of free_requested/free_completed, "
        "legacy `history` blocks, no time_us. The reference `trace` prints `free` entries as "
        "the repr of the dict.")


def v_snapshot_annotate():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=11)
    params = warm_model(dev, st)
    x = dev.malloc(1 << 20, st["data"])
    active = sum(b.size for s in dev.segments for b in s.blocks if b.state != "inactive")
    dev.emit("snapshot", 0, active, 0, None)
    label = S.py(("_annotate_tensor", TORCH + "/cuda/memory.py", 1311), ("main", TRAIN, 126))
    dev.user_metadata = "kv-cache layer 3"
    dev.emit("annotate", x, 0, 0, label)
    dev.user_metadata = ""
    dev.emit("annotate", params[0], 0, 0, label, user_metadata="embedding weight")
    dev.free(x)
    active = sum(b.size for s in dev.segments for b in s.blocks if b.state != "inactive")
    dev.emit("snapshot", 0, active, 0, None)
    return snapshot([dev], allocator_settings(), []), (
        "`snapshot` entries (addr 0, size = active bytes, no frames) left by earlier "
        "_snapshot() calls, and 2026 `annotate` entries (label in user_metadata, addr of a "
        "live allocation).")


def v_unknown_action():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=12)
    warm_model(dev, st)
    x = dev.malloc(4096, st["data"])
    dev.emit("segment_defrag", x, 4096, 0, st["data"])
    dev.emit("host_alloc", 0, 65536, 0, None, pinned=True)
    dev.free(x)
    return snapshot([dev], allocator_settings(), []), (
        "Action names no version of PyTorch writes (`segment_defrag`, `host_alloc` with an "
        "extra key): readers should keep going; the reference prints the repr.")


def v_expandable():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=13, base=12918456320)
    vr = dev.exp_reserve(1 << 34)
    vs = dev.exp_reserve(1 << 30, kind="small")
    keep = [dev.exp_malloc(vr, 64 << 20, st["param"]) for _ in range(3)]
    tmp = [dev.exp_malloc(vr, 48 << 20, st["linear"]) for _ in range(3)]
    small = [dev.exp_malloc(vs, 16384, st["data"]) for _ in range(4)]
    tail = dev.exp_malloc(vr, 20 << 20, st["relu"])
    for a in tmp:
        dev.free(a)
    dev.free(small[1])
    dev.exp_unmap_free(vr, st["empty_cache"])   # unmaps the middle: the range splits in two
    dev.exp_malloc(vr, 8 << 20, st["linear"])
    t2 = dev.exp_malloc(vr, 30 << 20, st["linear"])  # maps more after `tail`
    dev.free(t2)
    dev.exp_unmap_free(vr, st["empty_cache"])   # unmaps the end again
    del keep, tail
    return snapshot([dev], allocator_settings("expandable_segments:True", True), []), (
        "Expandable segments: `segment_map`/`segment_unmap` instead of segment_alloc/free, "
        "`is_expandable: True`, one segment per contiguous mapped range (an unmap in the "
        "middle splits a range in two).")


def big_address(base, seed, desc, top=None):
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=seed, base=base)
    warm_model(dev, st)
    train_step(dev, st)
    a = dev.malloc(25 << 20, st["linear"])
    b = dev.malloc(100, st["data"])
    dev.free(a)
    dev.empty_cache(st["empty_cache"])
    if top is not None:
        dev.next_va = top  # one more segment close to the top of the address range
        c = dev.malloc((26 << 20) - 1000, st["linear"])
        assert dev.live[c][0].address == top
        del c
    del b
    return snapshot([dev], allocator_settings(), []), desc


def v_addr_2_53():
    return big_address((1 << 53) + 2097152 * 3 + 512 * 0, 14,
                       "Addresses >= 2^53 (lose precision as JS numbers) in segments, blocks and "
                       "trace entries; odd low bits survive only with 64-bit ints.")


def v_addr_2_63():
    return big_address((1 << 63) + (1 << 40) + 2097152, 15,
                       "Addresses >= 2^63 and < 2^64 (XPU-style pointers; LONG1 with 9 bytes) in "
                       "segments, blocks and trace entries; the last segment ends 2 MiB below 2^64.",
                       top=(1 << 64) - (28 << 20))


def v_profile_plot():
    # Shaped like torch.cuda._memory_viz._profile_to_snapshot(): one synthetic segment per
    # device, blocks without address, alloc entries with `category`, frees reusing the
    # alloc's frames list, device_traces has device_count + 1 lists (the last is the CPU).
    def st(*names):
        return [{"filename": "none", "line": 0, "name": n} for n in names]

    base = 139724914106368
    events = []
    live = {}
    frames = {
        "p": st("aten::empty", "aten::to", "nn.Module: Linear_0"),
        "a": st("aten::addmm", "aten::linear", "nn.Module: Linear_0"),
        "g": st("aten::mm", "autograd::engine::evaluate_function: AddmmBackward0"),
        "o": st("aten::zeros_like", "Optimizer.step#Adam.step"),
        "x": [],
    }
    plan = [
        ("a", 0, 1048576, "activation"), ("a", 1048576, 4194304, "activation"),
        ("g", 5242880, 4194304, "gradient"), ("free", 0), ("o", 25165824, 4194304, "optimizer_state"),
        ("x", 29360128, 512, "unknown"), ("free", 1048576), ("a", 0, 2048, "temporary"),
        ("free", 29360128), ("free", 5242880),
    ]
    for p in plan:
        if p[0] == "free":
            a = live.pop(p[1])
            for act in ("free_requested", "free_completed"):
                events.append({"action": act, "addr": a["addr"], "size": a["size"], "stream": 0,
                               "frames": a["frames"]})
        else:
            key, off, size, cat = p
            e = {"action": "alloc", "addr": base + off, "size": size, "stream": 0,
                 "frames": frames[key], "category": cat}
            live[off] = e
            events.append(e)
    # blocks at the end: the parameter (allocated before profiling) + live ones
    blocks = []
    end = 0
    for off in sorted(live):
        e = live[off]
        if off > end:
            blocks.append({"size": off - end, "state": "inactive"})
        blocks.append({"size": e["size"], "state": "active_allocated", "requested_size": e["size"],
                       "frames": e["frames"]})
        end = off + e["size"]
    total = 29360128 + 512
    if end < total:
        blocks.append({"size": total - end, "state": "inactive"})
    blocks_sum = sum(b["size"] for b in blocks)
    seg = {"device": 0, "address": base, "total_size": blocks_sum, "stream": 0, "blocks": blocks}
    snap = {"device_traces": [events, [], []], "segments": [seg]}
    return snap, (
        "profile_plot style (torch.cuda._memory_viz._profile_to_snapshot): only `device_traces` "
        "and `segments`; one synthetic segment without allocated_size/segment_type; blocks "
        "without address; alloc entries carry `category`; frees reuse the alloc's frames list; "
        "frames use filename 'none'. The reference `trace` fails (KeyError: 'allocated_size').")


def v_multi_device():
    devs = []
    S = Stacks()
    st = common_stacks(S)
    for i in range(4):
        dev = Device(i, seed=20 + i, base=139724914106368 + (i << 36))
        if i in (0, 2):
            warm_model(dev, st)
            train_step(dev, st)
        elif i == 1:
            dev.recording = False
            warm_model(dev, st)  # state but no trace
        devs.append(dev)
    return snapshot(devs, allocator_settings(), annotations(0, T0, ["ProfilerStep#0"])), (
        "Four devices: 0 and 2 with traces, 1 with segments but an empty trace, 3 with neither. "
        "The reference prints `TOTAL MEM: ...` without a newline, so the next `Device` header "
        "follows on the same line.")


def v_multi_stream():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=30)
    warm_model(dev, st)
    streams = [0, 94371782864384, 94371782865920, 3735928559, 18446744073709551615 - 0xFFFF]
    for s in streams:
        x = dev.malloc(6 << 20, st["linear"], stream=s)
        y = dev.malloc(4096, st["data"], stream=s)
        dev.free(y)
        if s % 2:
            dev.free(x)
    return snapshot([dev], allocator_settings(), []), (
        "Several streams with large raw cudaStream_t values (up to 2^64 - 65536); segments are "
        "per stream; stats rows end with `stream_<raw int>`.")


def v_private_pools():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=31, pool_id=True)
    warm_model(dev, st)
    graph = S.py(("capture_begin", TORCH + "/cuda/graphs.py", 120),
                 ("__enter__", TORCH + "/cuda/graphs.py", 241), ("capture", TRAIN, 64))
    mempool = S.py(("use_mem_pool", TORCH + "/cuda/memory.py", 1201), ("run_pool", TRAIN, 70))
    a = dev.malloc(1 << 20, graph, pool=(1, 0))
    b = dev.malloc(12 << 20, graph, pool=(1, 0))
    dev.free(a)
    c = dev.malloc(1048576, mempool, pool=(0, 1))
    d = dev.malloc(1048576, mempool, pool=(0, 1))
    e = dev.malloc(1 << 20, mempool, pool=(0, 1))
    dev.free(c)
    f = dev.malloc(300, st["data"])
    dev.free(f)
    del b, d, e
    return snapshot([dev], allocator_settings(), []), (
        "Private pools: segments with segment_pool_id (1, 0) (CUDA graph) and (0, 1) (MemPool) "
        "next to the default (0, 0); trace entries carry `pool_id` tuples (2026 format).")


def v_metadata_compile_context():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=32)
    warm_model(dev, st)
    dev.user_metadata = "phase=warmup"
    train_step(dev, st)
    dev.user_metadata = "phase=train step=1"
    dev.compile_context = "Torch-Compiled Region: 0/0"
    train_step(dev, st)
    dev.compile_context = "Torch-Compiled Region: 1/3"
    dev.user_metadata = ""
    x = dev.malloc(65536, st["linear"])
    dev.compile_context = "N/A"
    dev.free(x)
    return snapshot([dev], allocator_settings(), []), (
        "`user_metadata` (set by _set_memory_metadata) and `compile_context` "
        "('Torch-Compiled Region: 0/0' ...) varying along the trace.")


def v_forward_frames():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=33)
    warm_model(dev, st)
    x = dev.malloc(1 << 20, st["linear"])
    dev.forward_frames = [
        'File "/home/user/project/model.py", line 88, in forward\n    h = self.fc1(x)\n',
        'File "/home/user/project/train.py", line 80, in train_step\n    out = model(batch)\n',
    ]
    g = dev.malloc(1 << 20, st["autograd"])
    dev.forward_frames = None
    dev.free(x)
    del g
    return snapshot([dev], allocator_settings(), []), (
        "`forward_frames` (list of strings: the forward-pass traceback of a tensor made in "
        "backward) on alloc entries whose own stack is empty.")


def v_fx_frames():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=34)
    warm_model(dev, st)
    gen = "/tmp/torchinductor_user/ab/cab4kqgefw5jw7nnqmrm7wiyyuwrbbsnqrtmj4g5gtj2e5t5mtr.py"
    fx = S.stack(
        S.frame("call", gen, 97, fx_node_op="call_function", fx_node_name="addmm",
                fx_node_target="aten.addmm.default",
                fx_original_trace='  File "/home/user/project/model.py", line 88, in forward\n'
                                  '    h = self.fc1(x)\n'
                                  '  File "/opt/conda/lib/python3.12/site-packages/torch/nn/modules/linear.py", line 134, in forward\n'
                                  '    return F.linear(input, self.weight, self.bias)\n'),
        S.frame("call", gen, 102, fx_node_op="call_function", fx_node_name="relu",
                fx_node_target="aten.relu.default", fx_original_trace=""),
        S.frame("__call__", TORCH + "/_inductor/output_code.py", 584),
        S.frame("forward", MODEL, 88),
        S.frame("main", TRAIN, 131),
    )
    dev.compile_context = "Torch-Compiled Region: 0/0"
    x = dev.malloc(2 << 20, fx)
    y = dev.malloc(4096, fx)
    dev.free(y)
    del x
    return snapshot([dev], allocator_settings(), []), (
        "Frames augmented with FX fields (fx_node_op, fx_node_name, fx_node_target, "
        "fx_original_trace as a multi-line string), as _snapshot(augment_with_fx_traces=True) "
        "writes them.")


def v_record_stream():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=35)
    warm_model(dev, st)
    side = 94371782864384
    x = dev.malloc(8 << 20, st["linear"])
    y = dev.malloc(4096, st["data"])
    dev.free(x, defer=True)        # used on `side` via record_stream: completion waits
    dev.free(y, defer=True)
    for _ in range(3):
        t = dev.malloc(1 << 20, st["relu"], stream=side)
        dev.free(t)
    dev.t += 250000                 # the side stream finishes much later
    dev.complete(x)
    z = dev.malloc(512, st["data"])
    dev.free(z, defer=True)         # still pending when the snapshot is taken
    # y stays pending too
    return snapshot([dev], allocator_settings(), []), (
        "record_stream delays: free_requested and free_completed far apart (other entries and "
        "250 ms in between); blocks still `active_pending_free` in the final state (counted as "
        "external free by the reference `stats`).")


def v_inconsistent_free_without_alloc():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=36)
    p = warm_model(dev, st)
    x = dev.malloc(4096, st["data"])
    dev.free(x)
    dev.free(p[1])                    # block from before recording: free without alloc
    # free of an address that never held anything
    dev.emit("free_requested", 139724914106368 + 123456, 777, 0, st["free_site"])
    dev.emit("free_completed", 139724914106368 + 123456, 777, 0, st["free_site"])
    # free again at x's address after it completed (stale name in the reference)
    dev.emit("free_requested", x, 4096, 0, st["free_site"])
    dev.emit("free_completed", x, 4096, 0, st["free_site"])
    return snapshot([dev], allocator_settings(), []), (
        "Frees without a matching alloc: a block allocated before recording, an address that "
        "never held anything, and a second free of an already completed address (the reference "
        "`trace` then reuses the stale name).")


def v_inconsistent_double_alloc():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=37)
    warm_model(dev, st)
    x = dev.malloc(8192, st["data"])
    dev.emit("alloc", x, 4096, 0, st["linear"])  # second alloc at a live address
    dev.free(x)
    dev.malloc(1024, st["relu"])
    return snapshot([dev], allocator_settings(), []), (
        "Two allocs at one address with no free between them (e.g. after a lost ring-buffer "
        "entry); the final state has only one block there.")


def v_inconsistent_alloc_outside():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=38)
    warm_model(dev, st)
    seg = dev.segments[-1]
    dev.emit("alloc", 4096, 512, 0, st["data"])                          # far below every segment
    dev.emit("alloc", seg.address + seg.total_size + 512, 512, 0, st["data"])  # just past the end
    dev.emit("free_requested", 4096, 512, 0, st["data"])
    dev.emit("free_completed", 4096, 512, 0, st["data"])
    # inside a segment but past its allocated_size: the reference matches snapshot segments by
    # allocated_size, not total_size, so this prints as MEM[...]
    dev.emit("alloc", seg.address + seg.total_size - 1024, 512, 0, st["data"])
    return snapshot([dev], allocator_settings(), []), (
        "Allocs outside every segment (below all, just past a segment's end) and one in a "
        "segment's free tail (beyond allocated_size: the reference prints `MEM[<abs addr>:...]`).")


def v_segment_reuse():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=39)
    a = dev.malloc(30 << 20, st["linear"])
    first = dev.segments[0].address
    dev.free(a)
    dev.empty_cache(st["empty_cache"])
    dev.next_va = first
    b = dev.malloc(40 << 20, st["linear"])  # same address range as the freed segment
    c = dev.malloc(100, st["data"])
    dev.free(c)
    del b
    return snapshot([dev], allocator_settings(), []), (
        "A segment freed and a new one created at the same address: the reference never "
        "forgets trace segment intervals, so later allocs there still name the old segment; "
        "names are never recycled either.")


def v_stats_pages():
    # Hand-made segments to exercise the `stats` page glyphs.
    P = 20 << 20
    base = 139724914106368
    segs = []

    def seg(addr, blocks, stream=0):
        total = sum(b[0] for b in blocks)
        bl = []
        a = addr
        for size, req, state in blocks:
            bl.append({"address": a, "size": size, "requested_size": req, "state": state, "frames": []})
            a += size
        act = [b for b in bl if b["state"] != "inactive"]
        return {"device": 0, "address": addr, "total_size": total,
                "allocated_size": sum(b["size"] for b in bl if b["state"] == "active_allocated"),
                "active_size": sum(b["size"] for b in act),
                "requested_size": sum(b["requested_size"] for b in act), "stream": stream,
                "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
                "blocks": bl, "frames": []}

    A, I, F = "active_allocated", "inactive", "active_pending_free"
    two = 2 << 20
    # ten 2 MiB blocks in one page: 0.1 summed ten times is 0.9999999999999999 -> '9', not '*'
    segs.append(seg(base, [(two, two, A)] * 10))
    # pages shared by two blocks (digits), single-block pages (letters), an empty page
    segs.append(seg(base + P, [(P + P // 2, P + P // 2, A), (P // 4, P // 4, A), (P // 4, 1000, A),
                               (P, P, I), (P, P, A)]))
    # 30 active blocks: letters wrap after 'z'; partial first page
    segs.append(seg(base + 7 * P, [(P, P - 4096, A)] * 30, stream=94371782864384))
    # pending-free blocks count as external free
    segs.append(seg(base + 40 * P, [(P, P, F), (P, P // 2, A), (P, P, I)]))
    # fully free 20 MiB segment and a < 20 MiB one (no row, still in totals)
    segs.append(seg(base + 45 * P, [(P, P, I)]))
    segs.append(seg(base + 46 * P, [(two, 512, A)]))
    # equal total_size and active bytes: stable sort keeps input order
    segs.append(seg(base + 50 * P, [(P, 100, A), (P, 0, I)], stream=7))
    segs.append(seg(base + 52 * P, [(P, 200, A), (P, 0, I)], stream=3))
    # an active block with requested_size 0 on a page boundary
    segs.append(seg(base + 54 * P, [(P, 0, A), (P, P, A)]))
    # a segment of 20 MiB + 1 byte: two pages, the last one almost empty
    segs.append(seg(base + 56 * P, [(P + 1, P + 1, A)]))
    trace = [{"action": "alloc", "addr": base + 56 * P, "size": P + 1, "stream": 0,
              "time_us": T0, "compile_context": "N/A", "user_metadata": "", "frames": []}]
    return {"segments": segs, "device_traces": [trace], "allocator_settings": allocator_settings(),
            "external_annotations": []}, (
        "Hand-made segments for the `stats` page glyphs: a page filled by ten 2 MiB blocks "
        "(float sum -> '9', not '*'), digit pages, letter wrap after 26 blocks, pending-free "
        "blocks, empty and sub-20 MiB segments, equal sort keys, zero requested size, a "
        "20 MiB + 1 byte segment.")


def v_stats_mismatch():
    snap, _ = v_stats_pages()
    snap["segments"] = snap["segments"][:2]
    snap["segments"][1]["total_size"] += 512
    return snap, (
        "A segment whose block sizes do not add up to total_size: the reference `stats` raises "
        "AssertionError('Segment size mismatch'); a reader should warn, not crash.")


def v_empty():
    return {"segments": [], "device_traces": [[]], "allocator_settings": allocator_settings(),
            "external_annotations": []}, (
        "Nothing allocated and nothing recorded: `stats` prints zero totals, `trace` prints an "
        "empty line.")


def v_size_formatting():
    sizes = [0, 1, 511, 1023, 1024, 1280, 1536, 2304, 3840, 1048524, 1048575, 1048576,
             (1 << 30) - 1, 1 << 30, 1 << 40, (1 << 50) * 1023, 1 << 60, (1 << 63) - 1,
             (1 << 64) - 1, 1 << 70, 1 << 80, (1 << 80) * 1023, 1 << 90, 12345678901234567890123456789]
    base = 139724914106368
    tr = []
    t = T0
    for i, sz in enumerate(sizes):
        addr = base + i * 4096
        t += 11
        tr.append({"action": "alloc", "addr": addr, "size": sz, "stream": 0, "time_us": t,
                   "compile_context": "N/A", "user_metadata": ""})
        tr.append({"action": "free_requested", "addr": addr, "size": sz, "stream": 0,
                   "time_us": t + 1, "compile_context": "N/A", "user_metadata": ""})
        tr.append({"action": "free_completed", "addr": addr, "size": sz, "stream": 0,
                   "time_us": t + 2, "compile_context": "N/A", "user_metadata": ""})
    tr.append({"action": "segment_alloc", "addr": base + (1 << 40), "size": (1 << 64) - 1, "stream": 0,
               "time_us": t + 5, "compile_context": "N/A", "user_metadata": ""})
    tr.append({"action": "oom", "device_free": (1 << 80) * 1023, "size": 1048575, "stream": 0,
               "time_us": t + 9, "compile_context": "N/A", "user_metadata": ""})
    return {"segments": [], "device_traces": [tr], "allocator_settings": allocator_settings(),
            "external_annotations": []}, (
        "Sizes at the edges of the reference's byte formatting (f'{n:3.1f}{unit}B' with 1024 "
        "steps): 1023.0B, 1.2KiB for 1280 (round-half-even), 1024.0KiB for 1048575, EiB, ZiB, "
        "YiB beyond 2^80, 2^90 and larger; also sizes >= 2^64.")


REPR_STRINGS = [
    "plain",
    "it's",
    'say "hi"',
    "both ' and \"",
    "back\\slash",
    "C:\\path\\to\\file",
    "new\nline",
    "tab\there",
    "cr\rlf\r\n",
    "bell\x07 esc\x1b del\x7f nul\x00",
    "caf\u00e9 na\u00efve",
    "\u4e2d\u6587",
    "emoji \U0001f600 \U0001f9e0",
    "nbsp\u00a0 soft\u00ad hyphen",
    "zero\u200bwidth \u2028 line sep \u2029 para",
    "c1 \x85 \x9f",
    "e\u0301 combining",
    "tag \U000e0001 private \ue000",
    "",
    " ",
    "'",
    '"',
    "\\",
    "'\"\\",
]


def v_repr_strings():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=40)
    fr = S.stack(*[S.frame(s, s, i) for i, s in enumerate(REPR_STRINGS[:8])])
    dev.emit("custom_event", 0, 0, 0, fr, text=REPR_STRINGS, label="caf\u00e9 \U0001f600")
    for s in REPR_STRINGS:
        dev.emit("custom_event", 0, 0, 0, None, text=s)
    dev.user_metadata = "meta \"quoted\" 'single' \\ \n\t \u00e9"
    x = dev.malloc(512, st["data"])
    dev.free(x)
    return snapshot([dev], allocator_settings(), []), (
        "Unknown-action entries whose repr (printed by the reference `trace`) exercises Python "
        "str repr: quote choice, backslashes, \\n \\t \\r, control characters (\\x07, \\x1b, "
        "\\x7f, \\x00, C1 \\x85), non-ASCII kept as is (é, 中文, emoji), non-printable "
        "escaped (\\xa0, \\xad, \\u200b, \\u2028, \\U000e0001, \\ue000).")


def v_repr_numbers():
    S = Stacks()
    dev = Device(0, seed=41)
    floats = [0.1, 1e16, 1.5e-05, float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.0, 2.5,
              1e-4, 0.0001234, 1e15, 123456789012345678.0, 1e22, 5e-324, 1.7976931348623157e308,
              -1.25, 100.0, 1e-7, 3.141592653589793, 2.0 ** 53, 0.30000000000000004]
    ints = [0, -1, 255, 256, 65535, 65536, 2 ** 31 - 1, -2 ** 31, 2 ** 31, 2 ** 53 + 1, 2 ** 63 - 1,
            -2 ** 63, 2 ** 63, 2 ** 64 - 1, 2 ** 64, -2 ** 64, 10 ** 30, -(10 ** 40)]
    dev.emit("custom_numbers", 0, 0, 0, None, floats=floats, ints=ints,
             bools=[True, False], none=None)
    for f in floats:
        dev.emit("custom_float", 0, 0, 0, None, value=f)
    dev.emit("custom_int", 2 ** 64 - 1, -5, -1, None, value=10 ** 30)
    del S
    return snapshot([dev], allocator_settings(), []), (
        "Unknown-action entries with floats (0.1, 1e16 -> 1e+16, 1.5e-05, nan, inf, -inf, -0.0, "
        "5e-324, 1.7976931348623157e+308 ...), ints of every pickle width (BININT1/2, BININT, "
        "LONG1 up to 2^64 and beyond, negative), bools and None: Python repr formatting.")


def v_repr_containers():
    dev = Device(0, seed=42)
    shared = [1, 2]
    dev.emit("custom_containers", 0, 0, 0, None,
             empty_tuple=(), one=(1,), pair=(0, 0), nested=((1, (2,)), [], {}, [()]),
             tuple_of_str=("a", "b'", 'c"'), bytes_=b"\x00\x01\xff abc ' \" \\ \n\t\x7f",
             empty_bytes=b"", quote_bytes=b"it's", dq_bytes=b'say "x"',
             both_bytes=b"'\"", big_bytes=bytes(range(256)),
             dict_int_keys={1: "one", -2: "minus two", 2 ** 70: "big"},
             dict_mixed_keys={None: 0, 2.5: "f", (1, 2): "tuple", "s": [shared, shared]},
             empty_list=[], empty_dict={}, deep=[[[[[["bottom"]]]]]])
    return snapshot([dev], allocator_settings(), []), (
        "Unknown-action entries with tuples ((), (1,), (0, 0), nested), bytes (b'...' repr "
        "with escapes and quote choice, all 256 byte values), dicts with int/None/float/tuple "
        "keys, a list shared twice, empty containers, nesting: Python repr formatting.")


def v_repr_surrogate():
    dev = Device(0, seed=43)
    dev.emit("custom_surrogate", 0, 0, 0, None, lone_high="a\ud800b", lone_low="\udfff",
             pair_as_two="\ud83d\ude00")
    return snapshot([dev], allocator_settings(), []), (
        "Strings with lone UTF-16 surrogates (pickle writes them with 'surrogatepass', i.e. "
        "bytes ED A0 80): not valid UTF-8; Python's repr escapes them as \\ud800.")


def v_json_twin():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=50)
    warm_model(dev, st, 2)
    x = dev.malloc(393216, st["data"])
    h = dev.malloc(524288, st["free_site"])
    dev.free(x)
    g = dev.malloc(50331648, st["empty_cache"])
    dev.free(h)
    del g
    snap = snapshot([dev], allocator_settings(), annotations(0, T0 + 100, ["ProfilerStep#0"]))
    text = json.dumps(snap, indent=None, separators=(",", ":"), ensure_ascii=False)
    back = json.loads(text)  # tuples become lists; sharing is lost
    return back, text, (
        "A snapshot as JSON (the upstream viewer tries JSON before pickle). The pickle twin "
        "holds exactly json.loads() of the JSON (tuples become lists, no shared objects), so "
        "the reference outputs apply to both.")


# -- PyTorch 2.14+ shapes ----------------------------------------------------

PIN = TORCH + "/utils/data/_utils/pin_memory.py"


def pinned_host_pair(seed):
    """A CUDA device and pinned host memory (device -1) recorded together."""
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=seed, pool_id=True)
    warm_model(dev, st)
    host = Device(-1, seed=seed + 1, base=140230000000000, pool_id=True)
    pin = S.py(("pin_memory", PIN, 18), ("_pin_memory_loop", PIN, 51), ("train_step", TRAIN, 77),
               ("main", TRAIN, 131), ("<module>", TRAIN, 140))
    batches = [host.malloc(32 * 3072 * 4, pin) for _ in range(3)]
    g = train_step(dev, st)
    host.free(batches[0])
    labels = host.malloc(32 * 8, pin)
    dev.free(g)
    del labels
    return dev, host


def v_pinned_host():
    dev, host = pinned_host_pair(51)
    snap = snapshot([dev], allocator_settings(), [])
    snap["host_segments"] = host.segment_dicts()
    snap["host_traces"] = host.trace
    return snap, (
        "Pinned host memory (PyTorch 2.14+, record_pinned_host_memory=True): `host_segments` "
        "(device -1) and `host_traces` as one list of entries, shaped like `segments` and "
        "`device_traces`; entries carry `pool_id`. The reference CLI ignores the host keys.")


def v_pinned_host_lists():
    dev, host = pinned_host_pair(53)
    snap = snapshot([dev], allocator_settings(), [])
    snap["host_segments"] = host.segment_dicts()
    snap["host_traces"] = [[], host.trace]
    return snap, (
        "Pinned host memory with `host_traces` as one list per device (the first empty), read "
        "as one trace of a \"pinned host\" device.")


def v_annotate_entries():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=57, pool_id=True)
    params = warm_model(dev, st)
    kv = dev.malloc(8 << 20, st["data"])
    act = dev.malloc(1 << 20, st["linear"])
    label = S.py(("_annotate_memory", TORCH + "/cuda/memory.py", 1311), ("build_cache", MODEL, 140),
                 ("main", TRAIN, 126), ("<module>", TRAIN, 140))
    dev.emit("annotate", kv, 0, 0, label, user_metadata="kv-cache layer 3")
    dev.emit("annotate", kv, 0, 0, label, user_metadata="kv-cache layer 3: resized for 4096 tokens")
    dev.emit("annotate", params[0], 0, 0, label, user_metadata="embedding weight")
    dev.free(act)
    g = train_step(dev, st)
    dev.free(kv)
    dev.free(g)
    return snapshot([dev], allocator_settings(), []), (
        "`annotate` entries as PyTorch 2.14+ writes them (torch.cuda.memory._annotate_memory): "
        "addr of a live allocation, size 0, `user_metadata` text, time_us, frames, `pool_id`; "
        "two on one traced allocation, one on a parameter allocated before recording. They are "
        "no allocations.")


def v_trace_overflowed():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=59, pool_id=True)
    warm_model(dev, st)
    for _ in range(4):
        g = train_step(dev, st)
        dev.free(g)
    keep = 40
    dev.trace[:] = dev.trace[-keep:]
    settings = allocator_settings()
    settings["trace_alloc_max_entries"] = keep
    settings["trace_alloc_overflowed"] = True
    return snapshot([dev], settings, []), (
        "A trace whose ring buffer wrapped: allocator_settings.trace_alloc_overflowed is True and "
        "trace_alloc_max_entries=40, the trace holds the last 40 entries, so it frees "
        "allocations it never saw allocated.")


def v_skip_free_requested():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=61, pool_id=True)
    dev.skip_actions = {"free_requested"}
    warm_model(dev, st)
    for _ in range(3):
        g = train_step(dev, st)
        dev.free(g)
    # A free held back by another stream: without free_requested only its completion is stored.
    side = dev.malloc(6 << 20, st["data"], stream=0)
    dev.free(side, defer=True)
    g = train_step(dev, st)
    dev.complete(side)
    dev.free(g)
    return snapshot([dev], allocator_settings(), []), (
        "Recorded with _record_memory_history(skip_actions=['free_requested']) (PyTorch 2.10+): "
        "no free_requested entries, frees are their free_completed alone, one of them completed "
        "many entries after the block was let go (a deferred free nothing can call stalled).")


def v_skip_segment_actions():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=63, pool_id=True)
    dev.skip_actions = {"segment_alloc", "segment_free"}
    warm_model(dev, st)
    for _ in range(2):
        g = train_step(dev, st)
        dev.free(g)
    dev.empty_cache(st["empty_cache"])
    g = train_step(dev, st)
    dev.free(g)
    return snapshot([dev], allocator_settings(), []), (
        "Recorded with skip_actions=['segment_alloc', 'segment_free']: allocations and frees "
        "only; an empty_cache() freed segments that held traced allocations, so some addresses "
        "lie in no final segment and no segment_free says where they went.")


def v_host_only():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=65, pool_id=True)
    warm_model(dev, st)
    dev.recording = False  # record_cuda=False: the CUDA allocator stores no trace
    g = train_step(dev, st)
    host = Device(-1, seed=66, base=140230000000000, pool_id=True)
    pin = S.py(("pin_memory", PIN, 18), ("_pin_memory_loop", PIN, 51), ("train_step", TRAIN, 77),
               ("main", TRAIN, 131), ("<module>", TRAIN, 140))
    kept = []
    for i in range(6):
        batch = host.malloc(32 * 3072 * 4, pin)
        labels = host.malloc(32 * 8, pin)
        host.free(labels)
        if i % 2:
            kept.append(batch)  # every other batch is kept alive: host memory grows
        else:
            host.free(batch)
    del g, kept
    snap = snapshot([dev], allocator_settings(), [])
    snap["host_segments"] = host.segment_dicts()
    snap["host_traces"] = host.trace
    return snap, (
        "Host memory only: _record_memory_history(record_cuda=False, "
        "record_pinned_host_memory=True). The CUDA trace is empty but its segments are there "
        "(state); `host_traces` holds six steps of pinned batches, every other one kept alive.")


def v_internal_metadata():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=67, pool_id=True)
    warm_model(dev, st)
    g = train_step(dev, st)
    dev.free(g)
    # mallocWithAddress: the allocator takes a prefix block up to the wanted address for itself
    # and gives it back at once, so the block at that address can be handed out.
    prefix = dev.malloc(2 << 20, [], internal_metadata="mallocWithAddress")
    want = dev.malloc(4 << 20, st["data"])
    seg, b = dev.live[prefix]
    dev.emit("free_requested", prefix, b.requested, seg.stream, [], pool=seg.pool,
             internal_metadata="mallocWithAddress")
    dev.recording = False
    dev.complete(prefix)
    dev.recording = True
    dev.emit("free_completed", prefix, 2 << 20, seg.stream, [], pool=seg.pool,
             internal_metadata="mallocWithAddress")
    g = train_step(dev, st)
    dev.free(want)
    dev.free(g)
    return snapshot([dev], allocator_settings(), []), (
        "Entries carrying `internal_metadata` (PyTorch 2.15's pickled path, only when non-empty): "
        "the allocator's own prefix-block alloc/free pair of mallocWithAddress (no frames), "
        "before the allocation at the wanted address.")


def v_pool_snapshot_no_traces():
    S = Stacks()
    st = common_stacks(S)
    dev = Device(0, seed=69, pool_id=True)
    pool = (1, 4)
    warm_model(dev, st)
    keep = [dev.malloc(sz, st["linear"], pool=pool) for sz in (3 << 20, 1 << 20, 6 << 20, 65536)]
    dev.free(keep[1])
    segs = [d for d in dev.segment_dicts() if tuple(d["segment_pool_id"]) == pool]
    for d in segs:
        for b in d["blocks"]:
            b["frames"] = []
    return segs, (
        "MemPool.snapshot(include_traces=False) / memory_snapshot(mempool_id, include_traces=False) "
        "(PyTorch 2.11+): a bare list of the pool's segments, no trace and no frames on blocks.")


SYNTH_VARIANTS = [
    ("bare_list_legacy", v_bare_list_legacy),
    ("bare_list_modern", v_bare_list_modern),
    ("legacy_history", v_legacy_history),
    ("legacy_no_history", v_legacy_no_history),
    ("legacy_empty_history", v_legacy_empty_history),
    ("no_time_us", v_no_time_us),
    ("no_frames", v_no_frames),
    ("oom", v_oom),
    ("user_defined", v_user_defined),
    ("historical_free", v_historical_free),
    ("snapshot_annotate", v_snapshot_annotate),
    ("unknown_action", v_unknown_action),
    ("expandable", v_expandable),
    ("addr_2_53", v_addr_2_53),
    ("addr_2_63", v_addr_2_63),
    ("profile_plot", v_profile_plot),
    ("multi_device", v_multi_device),
    ("multi_stream", v_multi_stream),
    ("private_pools", v_private_pools),
    ("metadata_compile_context", v_metadata_compile_context),
    ("forward_frames", v_forward_frames),
    ("fx_frames", v_fx_frames),
    ("record_stream", v_record_stream),
    ("inconsistent_free_without_alloc", v_inconsistent_free_without_alloc),
    ("inconsistent_double_alloc", v_inconsistent_double_alloc),
    ("inconsistent_alloc_outside", v_inconsistent_alloc_outside),
    ("segment_reuse", v_segment_reuse),
    ("stats_pages", v_stats_pages),
    ("stats_mismatch", v_stats_mismatch),
    ("empty", v_empty),
    ("size_formatting", v_size_formatting),
    ("repr_strings", v_repr_strings),
    ("repr_numbers", v_repr_numbers),
    ("repr_containers", v_repr_containers),
    ("repr_surrogate", v_repr_surrogate),
    ("pinned_host", v_pinned_host),
    ("pinned_host_lists", v_pinned_host_lists),
    ("annotate_entries", v_annotate_entries),
    ("trace_overflowed", v_trace_overflowed),
    ("skip_free_requested", v_skip_free_requested),
    ("skip_segment_actions", v_skip_segment_actions),
    ("host_only", v_host_only),
    ("internal_metadata", v_internal_metadata),
    ("pool_snapshot_no_traces", v_pool_snapshot_no_traces),
]


def make_synth(out_dir: Path, ref: Reference | None) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []

    def add(name, obj, covers, protocol=4, extra=None):
        path = out_dir / f"{name}.pickle"
        path.write_bytes(pickle.dumps(obj, protocol=protocol))
        rec = {"file": path.name, "protocol": protocol, "bytes": path.stat().st_size,
               "covers": covers}
        if extra:
            rec.update(extra)
        rec["ref"] = write_refs(ref, path)
        files.append(rec)
        print(f"synth/{path.name}: {rec['bytes']} bytes")

    typ = typical()
    for proto in range(6):
        add(f"typical_p{proto}", typ,
            f"One typical snapshot (segments with blocks, alloc/free_requested/free_completed/"
            f"segment_alloc/segment_free, allocator_settings, external_annotations, shared frame "
            f"lists, C++ frames) pickled with protocol {proto}. All six files hold the same data.",
            protocol=proto)
    for name, fn in SYNTH_VARIANTS:
        obj, covers = fn()
        add(name, obj, covers)

    obj, text, covers = v_json_twin()
    (out_dir / "json_snapshot.json").write_text(text + "\n", encoding="utf-8")
    files.append({"file": "json_snapshot.json", "bytes": (out_dir / "json_snapshot.json").stat().st_size,
                  "covers": covers, "twin": "json_snapshot.pickle", "ref": None})
    add("json_snapshot", obj, "Pickle twin of json_snapshot.json (same content).",
        extra={"twin": "json_snapshot.json"})

    failures = {}
    for rec in files:
        for cmd, r in (rec.get("ref") or {}).items():
            if r and not r["ok"]:
                failures.setdefault(rec["file"], {})[cmd] = r["stderr_last_line"]
    write_json(out_dir / "manifest.json", {
        "about": "Small synthetic snapshots, one per format variant. NAME.ref.stats.txt and "
                 "NAME.ref.trace.txt are the exact stdout of the reference CLI "
                 "(torch/cuda/_memory_viz.py stats|trace NAME.pickle); when it failed, `ref` "
                 "holds its exit status and the last line of stderr instead.",
        "generator": "tests/gen/make_snapshots.py",
        "reference_sha256": ref.sha256 if ref else None,
        "files": files,
        "reference_failures": failures,
    })


# --------------------------------------------------------------------------
# Part 3: hostile inputs
# --------------------------------------------------------------------------

PROTO = b"\x80"
STOP = b"."


def p_str(s: str) -> bytes:
    b = s.encode("utf-8")
    assert len(b) < 256
    return b"\x8c" + bytes([len(b)]) + b


def minimal_snapshot_body() -> bytes:
    """Opcodes (no PROTO/STOP) for {'segments': [], 'device_traces': [[]]}."""
    return b"}(" + p_str("segments") + b"]" + p_str("device_traces") + b"]]au"


def python_load_result(data: bytes) -> str:
    """What CPython's pickle.loads does with the bytes (run in a child with limits).

    Class lookups are blocked, so nothing named in the payload is imported or called.
    """
    code = r"""
import pickle, sys, io, resource
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
class Safe(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"blocked global {module}.{name}")
data = sys.stdin.buffer.read()
try:
    obj = Safe(io.BytesIO(data)).load()
    kind = type(obj).__name__
    print(f"ok: {kind}")
except RecursionError as e:
    print(f"RecursionError: {e}")
except BaseException as e:
    msg = str(e).replace("\n", " ")
    print(f"{type(e).__name__}: {msg}"[:200])
"""
    proc = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=120)
    out = proc.stdout.decode("utf-8", "replace").strip()
    if not out:
        out = f"child exited with status {proc.returncode}: {last_line(proc.stderr)}"
    return out


def make_hostile(out_dir: Path, fixtures: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    cases: dict[str, dict] = {}

    def add(name, data: bytes, expect, why, contains):
        (out_dir / name).write_bytes(data)
        cases[name] = {"expect": expect, "why": why, "error_contains": contains,
                       "bytes": len(data), "python_pickle_load": python_load_result(data)}
        print(f"hostile/{name}: {len(data)} bytes")

    # truncated copies of a real fixture
    src = (fixtures / "oom.pickle").read_bytes()
    cuts = [(1, "inside the PROTO opcode"), (7, "inside the FRAME length"),
            (56, "inside a LONG1 address"), (170, "inside a SHORT_BINUNICODE string"),
            (len(src) // 2, "half way through")]
    for i, (cut, where) in enumerate(cuts, 1):
        add(f"truncated_{i}_at_{cut}.pickle", src[:cut], "error",
            f"The fixture oom.pickle cut after {cut} of {len(src)} bytes ({where}).", "truncated")

    rng = random.Random(1234)
    rand = bytearray(rng.randbytes(4096))
    rand[0] = 0xF3  # not an opcode, not a known magic number
    add("random_bytes.bin", bytes(rand), "error",
        "4 KiB of random bytes starting with a byte that is no pickle opcode.", "opcode")
    add("empty.pickle", b"", "error", "An empty file.", "empty")

    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w", zipfile.ZIP_STORED) as z:
        # What torch.save writes: a zip whose data.pkl uses GLOBAL/REDUCE/BINPERSID.
        def bu(text):
            return b"X" + struct.pack("<I", len(text)) + text.encode()

        data_pkl = (b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01" + bu("fc1.weight") + b"q\x02"
                    + b"ctorch._utils\n_rebuild_tensor_v2\nq\x03((" + bu("storage") + b"q\x04"
                    + b"ctorch\nFloatStorage\nq\x05" + bu("0") + b"q\x06" + bu("cuda:0") + b"q\x07"
                    + b"K\x10tq\x08QK\x00K\x04K\x04\x86q\tK\x04K\x01\x86q\n\x89h\x00)Rq\x0btq\x0cRq\rs.")
        for nm, payload in [("archive/data.pkl", data_pkl), ("archive/byteorder", b"little"),
                            ("archive/data/0", bytes(64)), ("archive/version", b"3\n"),
                            ("archive/.data/serialization_id", b"0123456789012345678901234567890123456789")]:
            info = zipfile.ZipInfo(nm, date_time=(2025, 1, 1, 0, 0, 0))
            z.writestr(info, payload)
    add("torch_save_checkpoint.zip.pt", zbuf.getvalue(), "error",
        "A torch.save() checkpoint (zip archive with archive/data.pkl), not a snapshot. Starts "
        "with 'PK' -- 'P' is also the PERSID opcode, so a naive reader reports a confusing error.",
        "zip")

    gz_inner = pickle.dumps({"segments": [], "device_traces": [[]]}, protocol=4)
    gbuf = io.BytesIO()
    with gzip.GzipFile(fileobj=gbuf, mode="wb", mtime=0, filename="") as g:
        g.write(gz_inner)
    add("gzipped_snapshot.pickle.gz", gbuf.getvalue(), "ok_with_warnings",
        "A gzip file (the content is a valid empty snapshot). The upstream viewer does not "
        "decompress; memviz opens the snapshot inside.", "")

    evil = "echo this-command-must-never-run"
    ev = evil.encode()
    add("global_reduce_os_system.pickle",
        PROTO + b"\x02cos\nsystem\nX" + struct.pack("<I", len(ev)) + ev + b"\x85R" + STOP, "error",
        "GLOBAL os.system + REDUCE: the classic pickle code-execution payload. Must be refused "
        "at the GLOBAL opcode, never imported or called.", "global")
    add("stack_global_reduce.pickle",
        PROTO + b"\x04" + p_str("os") + b"\x94" + p_str("system") + b"\x94\x93\x94"
        + p_str(evil) + b"\x94\x85\x94R\x94" + STOP, "error",
        "STACK_GLOBAL os.system + REDUCE (protocol 4 form of the same payload).", "global")
    add("reduce_without_global.pickle", PROTO + b"\x02}q\x00)R" + STOP, "error",
        "REDUCE applied to a plain dict (no GLOBAL before it): must be refused as an "
        "unsupported opcode.", "reduce")
    add("build.pickle", PROTO + b"\x04" + minimal_snapshot_body() + b"}b" + STOP, "error",
        "A valid snapshot dict followed by BUILD (set state on an object): class-instance "
        "opcode, refused.", "build")
    add("newobj.pickle", PROTO + b"\x02}q\x00)\x81" + STOP, "error",
        "NEWOBJ (cls.__new__(cls, *args)) with a dict in the class slot.", "newobj")
    add("newobj_ex.pickle", PROTO + b"\x04})}\x92" + STOP, "error",
        "NEWOBJ_EX (protocol 4 cls.__new__ with kwargs).", "newobj")
    add("inst.pickle", b"(ios\nsystem\n" + STOP, "error",
        "INST os.system (protocol 0 instance creation, calls the class with the marked args).",
        "inst")
    add("obj.pickle", PROTO + b"\x02(}o" + STOP, "error",
        "OBJ (protocol 1 instance creation) with a dict as the class.", "obj")
    add("persid.pickle", b"P0\n" + STOP, "error",
        "PERSID (persistent id, as torch.save uses for storages).", "pers")
    add("binpersid.pickle", PROTO + b"\x02X\x01\x00\x00\x000Q" + STOP, "error",
        "BINPERSID.", "pers")
    add("ext1.pickle", PROTO + b"\x02\x82\x01" + STOP, "error",
        "EXT1: extension registry code, resolves to a global.", "ext")

    # deep nesting, written by hand
    depth = 100000
    add("deep_nesting_append.pickle", PROTO + b"\x02" + b"]" * depth + b"a" * (depth - 1) + STOP,
        "error", f"{depth} nested lists built with EMPTY_LIST ']' and APPEND 'a'. Python loads it "
        "(its unpickler is not recursive), but recursive code on the result (drop, repr, "
        "serde) overflows the stack. A reader should cap nesting depth.", "nest")
    add("deep_nesting_marks.pickle", b"(" * depth + b"l" * depth + STOP, "error",
        f"{depth} nested lists built with MARK '(' and LIST 'l' (protocol 0): mark stack "
        f"{depth} deep, then lists nested {depth} deep.", "nest")

    # huge declared lengths
    add("binunicode8_huge.pickle", PROTO + b"\x04\x8d" + struct.pack("<Q", 1 << 62) + b"abc" + STOP,
        "error", "BINUNICODE8 declaring 2^62 bytes with 4 present: must not allocate.", "truncated")
    add("binbytes8_huge.pickle", PROTO + b"\x04\x8e" + struct.pack("<Q", (1 << 64) - 1) + b"abc" + STOP,
        "error", "BINBYTES8 declaring 2^64 - 1 bytes.", "truncated")
    add("binunicode_2pow31.pickle", PROTO + b"\x02X" + struct.pack("<I", 1 << 31) + b"abc" + STOP,
        "error", "BINUNICODE declaring 2^31 bytes (unsigned 32-bit length).", "truncated")
    add("binbytes_2pow32m1.pickle", PROTO + b"\x03B" + struct.pack("<I", (1 << 32) - 1) + b"abc" + STOP,
        "error", "BINBYTES declaring 2^32 - 1 bytes.", "truncated")
    add("long4_2pow31.pickle", PROTO + b"\x02\x8b" + struct.pack("<I", 1 << 31) + b"\x01\x02" + STOP,
        "error", "LONG4 with length bytes 00 00 00 80: the length is a signed int32, so this is "
        "-2^31 (Python: 'LONG pickle has negative byte count').", "long")
    add("long4_2pow31m1.pickle", PROTO + b"\x02\x8b" + struct.pack("<i", (1 << 31) - 1) + b"\x01\x02" + STOP,
        "error", "LONG4 declaring 2^31 - 1 bytes with 2 present.", "truncated")

    # memo bombs
    add("memo_long_binput_2pow32m1.pickle",
        PROTO + b"\x04" + b"}(" + p_str("segments") + b"]r\xff\xff\xff\xff" + p_str("device_traces")
        + b"]]au" + STOP, "error",
        "LONG_BINPUT with index 2^32 - 1 inside an otherwise valid snapshot. CPython grows its "
        "memo array to the index and fails with MemoryError; a reader should cap memo indices "
        "(or use a map) and never allocate by index.", "memo")
    add("memo_binget_unset.pickle",
        PROTO + b"\x04" + b"}(" + p_str("segments") + b"h\x07" + p_str("device_traces") + b"]]au" + STOP,
        "error", "BINGET of memo index 7 that was never stored.", "memo")
    add("memo_long_binget_unset.pickle",
        PROTO + b"\x02]q\x00j\xff\xff\xff\x7fa" + STOP, "error",
        "LONG_BINGET of index 2^31 - 1 that was never stored.", "memo")

    # a list shared 2^20 times: legal and cheap if sharing is kept
    n = 1 << 20

    def entry_ops(action):
        return (b"}(" + p_str("action") + p_str(action) + p_str("addr")
                + b"\x8a\x06\x00\x00\x20\x0b\x14\x7f" + p_str("size") + b"M\x00\x02"
                + p_str("stream") + b"K\x00" + b"u")

    trace_list = (b"]q\x01(" + entry_ops("alloc") + entry_ops("free_requested")
                  + entry_ops("free_completed") + b"e")
    body = bytearray(PROTO + b"\x04}q\x00(" + p_str("segments") + b"]" + p_str("device_traces") + b"](")
    body += trace_list
    body += b"h\x01" * (n - 1)
    body += b"eu" + STOP
    add("shared_list_2pow20.pickle", bytes(body), "ok_with_warnings",
        "device_traces is one 3-entry trace list (alloc / free_requested / free_completed) "
        "referenced 2^20 times through BINGET: 2^20 devices with the same trace. Legal and cheap "
        "when the reader keeps sharing (Rc/indices) instead of deep-copying; expanding it costs "
        "3 * 2^20 entries. All 2^20 items come in one APPENDS (Python's pickler batches by 1000).", None)

    add("non_string_keys.pickle", pickle.dumps({
        "segments": [{"device": 0, "address": 139724914106368, "total_size": 2097152,
                      "allocated_size": 0, "active_size": 0, "requested_size": 0, "stream": 0,
                      "segment_type": "small", "segment_pool_id": (0, 0), "is_expandable": False,
                      "blocks": [{"address": 139724914106368, "size": 2097152, "requested_size": 0,
                                  "state": "inactive", "frames": [], 7: "int key"}],
                      "frames": [], (1, 2): "tuple key", None: "none key"}],
        "device_traces": [[]],
        1: "int key at the top level",
        "allocator_settings": {"roundup_power2_divisions": {1: 0, 2: 4, 2.5: 1}},
    }, protocol=4), "ok_with_warnings",
        "Dicts with int, tuple, None and float keys next to the expected string keys (unknown "
        "keys, should be ignored). Python's pickle accepts any hashable key.", None)

    # wrong schema
    add("schema_top_level_int.pickle", pickle.dumps(42, protocol=4), "error",
        "A pickle of the int 42.", "not a memory snapshot")
    add("schema_top_level_str.pickle", pickle.dumps("segments", protocol=4), "error",
        "A pickle of a string.", "not a memory snapshot")
    add("schema_no_segments.pickle", pickle.dumps({"device_traces": [[]], "allocator_settings": {}},
                                                 protocol=4), "error",
        "A dict without `segments`.", "segments")
    add("schema_segments_not_list.pickle", pickle.dumps({"segments": {"0": []}, "device_traces": [[]]},
                                                       protocol=4), "error",
        "`segments` is a dict, not a list.", "segments")
    add("schema_entries_not_dicts.pickle", pickle.dumps({"segments": [], "device_traces": [[1, "alloc", None]]},
                                                       protocol=4), "error",
        "Trace entries that are an int, a string and None.", "entry")
    add("schema_segment_not_dict.pickle", pickle.dumps({"segments": [[1, 2, 3]], "device_traces": [[]]},
                                                      protocol=4), "error",
        "A segment that is a list.", "segment")
    add("schema_size_string.pickle", pickle.dumps({
        "segments": [{"device": 0, "address": 139724914106368, "total_size": "2097152", "stream": 0,
                      "segment_type": "small", "blocks": [{"size": "2097152", "state": "inactive"}]}],
        "device_traces": [[{"action": "alloc", "addr": 139724914106368, "size": "512", "stream": 0}]],
    }, protocol=4), "error", "`size` / `total_size` given as strings.", "size")
    add("schema_device_traces_not_list.pickle", pickle.dumps({"segments": [], "device_traces": 5},
                                                            protocol=4), "error",
        "`device_traces` is an int.", "device_traces")

    add("missing_stop.pickle", PROTO + b"\x04" + minimal_snapshot_body(), "error",
        "A complete snapshot dict whose final STOP opcode is missing (Python: EOFError 'Ran out "
        "of input').", "truncated")
    add("trailing_garbage.pickle", pickle.dumps({"segments": [], "device_traces": [[]]}, protocol=4)
        + b"GARBAGE\x00\xff\x80\x04", "ok_with_warnings",
        "A valid snapshot followed by bytes after STOP. Python's pickle.load stops at STOP and "
        "ignores the rest.", None)
    add("unknown_opcode.pickle", PROTO + b"\x04}(" + p_str("segments") + b"]\xf0" + STOP, "error",
        "Byte 0xf0 where an opcode is expected (no pickle opcode uses it).", "opcode")
    add("protocol_6.pickle", PROTO + b"\x06" + minimal_snapshot_body() + STOP, "error",
        "PROTO 6: newer than any protocol Python writes today.", "protocol")
    add("pop_mark_dup.pickle", PROTO + b"\x04" + b"(K\x01K\x021" + minimal_snapshot_body() + b"2" + b"0" + STOP,
        "ok_with_warnings",
        "Valid snapshot built with rarely used stack opcodes: POP_MARK '1', DUP '2', POP '0'. "
        "Python loads it; a reader that supports the full protocol does too.", None)

    write_json(out_dir / "manifest.json", {
        "about": "Malformed or malicious inputs. `expect` is what a good reader does: `error` "
                 "(a clean error whose lowercased message contains `error_contains`) or "
                 "`ok_with_warnings` (loads, maybe with warnings). `python_pickle_load` is what "
                 "CPython's pickle.loads does with globals blocked, for information.",
        "generator": "tests/gen/make_snapshots.py",
        "files": cases,
    })


# --------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", help="reference CLI: path to torch/cuda/_memory_viz.py, or a command "
                                  "prefix such as 'python3 -m torch.cuda._memory_viz'")
    ap.add_argument("--real", type=Path, help="folder with the recorded real pickles to copy "
                                              f"({', '.join(REAL_NAMES)})")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output root (default: tests/data)")
    ap.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES,
                    help="shared fixtures folder (source of the truncated pickles)")
    ap.add_argument("--only", choices=["real", "synth", "hostile"], action="append",
                    help="make only these sets (repeatable)")
    args = ap.parse_args(argv)

    ref = Reference(args.ref) if args.ref else None
    if ref is None:
        print("warning: no --ref given; reference outputs are not written", file=sys.stderr)
    sets = args.only or ["real", "synth", "hostile"]
    if "real" in sets:
        if args.real:
            make_real(args.real, args.out / "real", ref)
        elif args.only:
            ap.error("--only real needs --real DIR")
    if "synth" in sets:
        make_synth(args.out / "synth", ref)
    if "hostile" in sets:
        make_hostile(args.out / "hostile", args.fixtures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
