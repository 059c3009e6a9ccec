#!/usr/bin/env python3
"""Generate a large memory snapshot shaped like a real one, for load-time and memory tests.

The trace of a real snapshot (default: tests/data/real/resnet50_fixed.pickle)
is replayed until ``--entries`` trace entries exist:

* replay r shifts the addresses that fall into segments the source trace
  created (``segment_alloc``) by ``r * SHIFT``, and all times by
  ``r * (duration + gap)``; addresses inside segments that existed before the
  source trace started are kept, since those segments are still there;
* between replays, everything the previous replay left allocated is freed and
  the segments it created are released (``free_requested``/``free_completed``
  and ``segment_free`` entries), so each replay starts from the same state and
  the trace stays consistent;
* like a ring buffer that wrapped, only the newest ``--entries`` entries are
  kept: the file starts part-way through the first replay (frees without their
  alloc are expected there);
* the final ``segments`` are the source's, with the created segments shifted
  like the last replay, so they match the end of the trace;
* each replay copies each distinct frame list of the source with probability
  ``--unique-stack-fraction`` (new list objects holding the same frame dicts),
  otherwise it references the original list: some stacks are shared, some
  are not, as in real snapshots;
* with ``--inline-frame-dicts``, every entry instead gets its own
  ``copy.deepcopy`` of its frame list: new list and frame dict objects
  (strings stay shared), so the pickle writes every frame dict inline, as
  ``pickle.dump`` does for snapshots whose frame dicts are not shared.

The pickle (protocol 4) is written as it is generated, one entry at a time,
with the same opcodes, memo and framing as CPython's pickler; nothing close to
the full object is ever held in memory.  ``--self-check`` builds the whole
object for a small run and checks that ``pickle.dumps`` gives identical bytes.

Usage::

    python3 tests/gen/big_snapshot.py --entries 1000000 --out target/big_1m.big.pickle
"""

from __future__ import annotations

import argparse
import bisect
import copy
import io
import os
import pickle
import random
import struct
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SOURCE = REPO / "tests" / "data" / "real" / "resnet50_fixed.pickle"
DEFAULT_OUT = REPO / "target" / "big_snapshot.big.pickle"

FRAME_TARGET = 64 * 1024
BATCH = 1000
REPLAY_GAP_US = 50_000


class InlineFrames:
    """Stands for `copy.deepcopy(src)` in an entry: written as a new object, never built."""

    __slots__ = ("src",)

    def __init__(self, src):
        self.src = src


class StreamPickler:
    """Protocol-4 pickler that can be fed a structure piece by piece.

    It reproduces CPython's C pickler byte for byte (memoize every str, list,
    dict and tuple; batches of 1000 items; a FRAME opcode whenever 64 KiB have
    accumulated at an object boundary).  Objects are memoized by id(), so a
    caller that drops an object must call `forget()` for it before the id can
    be reused.
    """

    def __init__(self, f):
        self.f = f
        self.frame = bytearray()
        self.memo: dict[int, bytes] = {}  # id(obj) -> BINGET/LONG_BINGET opcode
        self.n = 0
        # id(source frame list) -> how its deep copy pickles (`copy_template`)
        self.templates: dict[int, tuple] = {}

    # -- framing ------------------------------------------------------------
    def boundary(self):
        if len(self.frame) >= FRAME_TARGET:
            self.commit()

    def commit(self):
        fr = self.frame
        if fr:
            if len(fr) >= 4:
                self.f.write(b"\x95" + struct.pack("<Q", len(fr)))
            self.f.write(fr)
            fr.clear()

    def start(self):
        self.f.write(b"\x80\x04")

    def finish(self):
        self.frame += b"."
        self.commit()

    # -- memo -----------------------------------------------------------------
    def memoize(self, obj=None):
        self.frame += b"\x94"
        if obj is not None:
            n = self.n
            self.memo[id(obj)] = b"h" + bytes((n,)) if n < 256 else b"j" + struct.pack("<I", n)
        self.n += 1

    def forget(self, obj):
        self.memo.pop(id(obj), None)

    # -- objects ----------------------------------------------------------------
    def save(self, obj):
        fr = self.frame
        if len(fr) >= FRAME_TARGET:
            self.commit()
        # Only live objects are in the memo, so an id() found there is this object.
        got = self.memo.get(id(obj))
        if got is not None:
            fr += got
            return
        t = type(obj)
        if t is InlineFrames:
            self.save_deepcopy(obj.src)
            return
        if t is int:
            if 0 <= obj <= 0xFF:
                fr += b"K" + bytes((obj,))
            elif 0 <= obj <= 0xFFFF:
                fr += b"M" + struct.pack("<H", obj)
            elif -0x80000000 <= obj <= 0x7FFFFFFF:
                fr += b"J" + struct.pack("<i", obj)
            elif obj > 0:
                n = (obj.bit_length() >> 3) + 1
                if n < 256:
                    fr += b"\x8a" + bytes((n,)) + obj.to_bytes(n, "little", signed=True)
                else:
                    fr += b"\x8b" + struct.pack("<i", n) + obj.to_bytes(n, "little", signed=True)
            else:
                enc = pickle.encode_long(obj)
                if len(enc) < 256:
                    fr += b"\x8a" + bytes((len(enc),)) + enc
                else:
                    fr += b"\x8b" + struct.pack("<i", len(enc)) + enc
            return
        if obj is None:
            fr += b"N"
            return
        if t is bool:
            fr += b"\x88" if obj else b"\x89"
            return
        if t is float:
            fr += b"G" + struct.pack(">d", obj)
            return
        if t is str:
            b = obj.encode("utf-8", "surrogatepass")
            if len(b) <= 0xFF:
                fr += b"\x8c" + bytes((len(b),)) + b
            else:
                fr += b"X" + struct.pack("<I", len(b)) + b
            self.memoize(obj)
        elif t is list:
            fr += b"]"
            self.memoize(obj)
            self.items(obj)
        elif t is dict:
            fr += b"}"
            self.memoize(obj)
            self.pairs(list(obj.items()))
        elif t is tuple:
            if not obj:
                fr += b")"
                return
            if len(obj) <= 3:
                for x in obj:
                    self.save(x)
                self.frame += (b"\x85", b"\x86", b"\x87")[len(obj) - 1]
            else:
                fr += b"("
                for x in obj:
                    self.save(x)
                self.frame += b"t"
            self.memoize(obj)
        else:
            raise TypeError(f"cannot pickle {t.__name__} here")

    def items(self, seq):
        n = len(seq)
        if n == 1:
            self.save(seq[0])
            self.frame += b"a"
            return
        save = self.save
        for i in range(0, n, BATCH):
            self.frame += b"("
            for x in seq[i:i + BATCH]:
                save(x)
            self.frame += b"e"

    def pairs(self, kv):
        n = len(kv)
        if n == 1:
            self.save(kv[0][0])
            self.save(kv[0][1])
            self.frame += b"s"
            return
        save = self.save
        for i in range(0, n, BATCH):
            self.frame += b"("
            for k, v in kv[i:i + BATCH]:
                save(k)
                save(v)
            self.frame += b"u"

    # -- deep copies written without building them -------------------------------
    def atom_bytes(self, obj):
        """The bytes `save` writes for an int, None, bool, float or memoized str; else None."""
        t = type(obj)
        if t is str:
            return self.memo.get(id(obj))
        if t is int or obj is None or t is bool or t is float:
            fr = self.frame
            self.frame = bytearray()
            self.save(obj)
            out = bytes(self.frame)
            self.frame = fr
            return out
        return None

    def copy_template(self, seq):
        """How `copy.deepcopy(seq)` of a list of flat dicts pickles once its strings are memoized.

        Returns (bytes, boundaries, patches, memo slots) or None when `seq` holds anything else or
        a string not yet memoized. `boundaries` are the offsets where `save` would check the
        frame size; `patches` are (offset, slot) of LONG_BINGETs of a dict copied earlier in the
        same copy (deepcopy keeps repeats of one dict as one object), slot counted from the
        list's own memo slot.
        """
        if type(seq) is not list:
            return None
        rec = bytearray()
        bounds = []
        patches = []
        seen = {}
        slots = 0
        atoms = {}

        def atom(x):
            b = atoms.get(id(x)) if type(x) is str else None
            if b is None:
                b = self.atom_bytes(x)
                if b is None:
                    return False
                if type(x) is str:
                    atoms[id(x)] = b
            bounds.append(len(rec))
            rec.extend(b)
            return True

        def item(d):
            nonlocal slots
            if type(d) is not dict:
                return False
            bounds.append(len(rec))
            got = seen.get(id(d))
            if got is not None:
                patches.append((len(rec), got))
                rec.extend(b"j\0\0\0\0")
                return True
            rec.extend(b"}\x94")
            seen[id(d)] = slots
            slots += 1
            kv = list(d.items())
            if len(kv) == 1:
                if not (atom(kv[0][0]) and atom(kv[0][1])):
                    return False
                rec.extend(b"s")
                return True
            for i in range(0, len(kv), BATCH):
                rec.extend(b"(")
                for k, v in kv[i:i + BATCH]:
                    if not (atom(k) and atom(v)):
                        return False
                rec.extend(b"u")
            return True

        bounds.append(0)
        rec.extend(b"]\x94")
        slots += 1
        if len(seq) == 1:
            if not item(seq[0]):
                return None
            rec.extend(b"a")
        else:
            for i in range(0, len(seq), BATCH):
                rec.extend(b"(")
                for d in seq[i:i + BATCH]:
                    if not item(d):
                        return None
                rec.extend(b"e")
        return bytes(rec), bounds, patches, slots

    def save_deepcopy(self, seq):
        """Writes `copy.deepcopy(seq)` as `save` would write that new object."""
        key = id(seq)
        tpl = self.templates.get(key)
        if tpl is None and self.n >= 256:
            tpl = self.copy_template(seq)
            if tpl is not None:
                self.templates[key] = tpl
        if tpl is None or self.n < 256:
            self.save_copy(seq, {})
            return
        rec, bounds, patches, slots = tpl
        base = self.n
        if patches:
            blob = bytearray(rec)
            for off, slot in patches:
                blob[off + 1:off + 5] = struct.pack("<I", base + slot)
        else:
            blob = rec
        self.n += slots
        # Commit frames where `save` would have: at the first boundary the frame reaches the target.
        start = 0
        while True:
            need = FRAME_TARGET - len(self.frame) + start
            i = bisect.bisect_left(bounds, need)
            if i == len(bounds):
                self.frame += blob[start:] if start else blob
                return
            cut = bounds[i]
            self.frame += blob[start:cut]
            self.commit()
            start = cut

    def save_copy(self, obj, copied):
        """Writes `copy.deepcopy(obj)` object by object (lists, dicts and tuples of atoms)."""
        t = type(obj)
        if t is not list and t is not dict:
            if t is tuple:
                raise TypeError("--inline-frame-dicts: tuples in frame lists are not supported")
            self.save(obj)
            return
        if len(self.frame) >= FRAME_TARGET:
            self.commit()
        got = copied.get(id(obj))
        if got is not None:
            self.frame += b"h" + bytes((got,)) if got < 256 else b"j" + struct.pack("<I", got)
            return
        copied[id(obj)] = self.n
        if t is list:
            self.frame += b"]"
            self.memoize(None)
            seq = obj
            if len(seq) == 1:
                self.save_copy(seq[0], copied)
                self.frame += b"a"
                return
            for i in range(0, len(seq), BATCH):
                self.frame += b"("
                for x in seq[i:i + BATCH]:
                    self.save_copy(x, copied)
                self.frame += b"e"
        else:
            self.frame += b"}"
            self.memoize(None)
            kv = list(obj.items())
            if len(kv) == 1:
                self.save(kv[0][0])
                self.save_copy(kv[0][1], copied)
                self.frame += b"s"
                return
            for i in range(0, len(kv), BATCH):
                self.frame += b"("
                for k, v in kv[i:i + BATCH]:
                    self.save(k)
                    self.save_copy(v, copied)
                self.frame += b"u"

    def save_transient_dict(self, kv):
        """A dict that is not kept: memo slot used (as CPython does) but not registered."""
        if len(self.frame) >= FRAME_TARGET:
            self.commit()
        self.frame += b"}"
        self.memoize(None)
        self.pairs(kv)


# --------------------------------------------------------------------------


class Plan:
    """Everything about the replays that does not depend on the output."""

    def __init__(self, src: dict, entries: int, seed: int, unique_fraction: float, inline_frames: bool = False):
        self.src = src
        self.inline_frames = inline_frames
        traces = src["device_traces"]
        self.dev = max(range(len(traces)), key=lambda i: len(traces[i]))
        T = traces[self.dev]
        if not T:
            raise SystemExit("the source snapshot has no trace entries")
        self.T = T
        L = len(T)
        self.unique_fraction = unique_fraction
        self.seed = seed

        # intervals of segments created by the source trace: their contents move per replay
        created = sorted((e["addr"], e["addr"] + e["size"]) for e in T if e["action"] == "segment_alloc")
        self.starts = [a for a, _ in created]
        self.ends = [b for _, b in created]
        self.shift_flags = [self.in_created(e.get("addr")) for e in T]

        # address shift: larger than the whole address span of the source
        addrs = [s["address"] for s in src["segments"]] + [s["address"] + s["total_size"] for s in src["segments"]]
        addrs += [e["addr"] for e in T if "addr" in e] + self.ends
        span = max(addrs) - min(addrs)
        self.shift = ((span >> 30) + 2) << 30

        times = [e["time_us"] for e in T if "time_us" in e]
        self.has_time = bool(times)

        # what the source leaves behind: freed/released between replays
        live: dict[int, int] = {}
        segs: dict[int, int] = {}
        for i, e in enumerate(T):
            a = e["action"]
            if a == "alloc":
                live[e["addr"]] = i
            elif a in ("free_completed", "free"):
                live.pop(e["addr"], None)
            elif a == "segment_alloc":
                segs[e["addr"]] = i
            elif a == "segment_free":
                segs.pop(e["addr"], None)
        self.cleanup = []
        for i in sorted(live.values()):
            self.cleanup.append(("free_requested", i))
            self.cleanup.append(("free_completed", i))
        for i in sorted(segs.values()):
            self.cleanup.append(("segment_free", i))
        C = len(self.cleanup)
        self.duration = (times[-1] - times[0]) if times else 0
        self.period = self.duration + REPLAY_GAP_US + C

        # strings for the cleanup actions: reuse the source's objects where there are some
        names = {}
        for e in T:
            names.setdefault(e["action"], e["action"])
        self.action_obj = {a: names.get(a, a) for a in ("free_requested", "free_completed", "segment_free")}

        # number of replays and how many of the oldest entries to drop
        R = 1
        while R * L + (R - 1) * C < entries:
            R += 1
        self.replays = R
        self.total = R * L + (R - 1) * C
        self.skip = self.total - entries
        self.entries = entries

        # distinct frame lists in order of first use
        seen = set()
        self.lists = []
        for e in T:
            fr = e.get("frames")
            if fr is not None and id(fr) not in seen:
                seen.add(id(fr))
                self.lists.append(fr)

    def in_created(self, addr):
        if not isinstance(addr, int):
            return False
        i = bisect.bisect_right(self.starts, addr) - 1
        return i >= 0 and addr < self.ends[i]

    def fresh_ids(self, rng):
        f = self.unique_fraction
        return {id(fr) for fr in self.lists if rng.random() < f}

    def segments(self):
        """Final segments: the source's, with created ones moved like the last replay."""
        delta = (self.replays - 1) * self.shift
        out = []
        for seg in self.src["segments"]:
            move = self.in_created(seg["address"])
            d = {}
            for k, v in seg.items():
                if k == "address" and move:
                    v = v + delta
                elif k == "blocks":
                    blocks = []
                    for b in v:
                        nb = dict(b)
                        if move and "address" in nb:
                            nb["address"] = nb["address"] + delta
                        blocks.append(nb)
                    v = blocks
                d[k] = v
            out.append(d)
        return out

    def entry_stream(self):
        """Yield (replay, list of (key, value) pairs, fresh copies dict) for each kept entry.

        Fresh frame-list copies live in a per-replay dict; `replay_done(r, copies)` is
        signalled by yielding (r, None, copies) after the last entry of a replay.
        """
        rng = random.Random(self.seed)
        T = self.T
        L = len(T)
        shift_flags = self.shift_flags
        pos = 0
        skip = self.skip
        for r in range(self.replays):
            fresh = self.fresh_ids(rng)
            copies: dict[int, list] = {}
            ashift = r * self.shift
            tshift = r * self.period

            def frames_of(fr):
                if self.inline_frames and isinstance(fr, list):
                    return InlineFrames(fr)
                if id(fr) in fresh:
                    c = copies.get(id(fr))
                    if c is None:
                        c = copies[id(fr)] = list(fr)
                    return c
                return fr

            for i in range(L):
                if pos < skip:
                    pos += 1
                    continue
                pos += 1
                e = T[i]
                kv = []
                move = shift_flags[i]
                for k, v in e.items():
                    if k == "addr" and move:
                        v = v + ashift
                    elif k == "time_us":
                        v = v + tshift
                    elif k == "frames":
                        v = frames_of(v)
                    kv.append((k, v))
                yield r, kv, None
            if r < self.replays - 1:
                t_end = (T[-1].get("time_us", 0) + tshift) if self.has_time else 0
                for j, (action, i) in enumerate(self.cleanup):
                    if pos < skip:
                        pos += 1
                        continue
                    pos += 1
                    e = T[i]
                    move = shift_flags[i]
                    kv = []
                    for k, v in e.items():
                        if k == "action":
                            v = self.action_obj[action]
                        elif k == "addr" and move:
                            v = v + ashift
                        elif k == "time_us":
                            v = t_end + 1 + j
                        elif k == "frames":
                            v = frames_of(v)
                        elif k == "category":
                            continue
                        kv.append((k, v))
                    yield r, kv, None
            yield r, None, copies

    def first_kept_time(self):
        """time_us of the oldest entry kept (the one at position `skip`)."""
        if not self.has_time:
            return None
        L, C = len(self.T), len(self.cleanup)
        r, rem = divmod(self.skip, L + C)
        if rem < L:
            return self.T[rem].get("time_us", 0) + r * self.period
        return self.T[-1].get("time_us", 0) + r * self.period + 1 + (rem - L)

    def annotations(self):
        src = self.src.get("external_annotations")
        if src is None:
            return None
        t_first = self.first_kept_time()
        out = []
        for r in range(self.replays):
            for a in src:
                d = dict(a)
                if "time_us" in d:
                    d["time_us"] = d["time_us"] + r * self.period
                    if t_first is not None and d["time_us"] < t_first:
                        continue
                out.append(d)
        return out


def write_snapshot(plan: Plan, f) -> dict:
    """Stream the snapshot into `f`; returns a few statistics."""
    w = StreamPickler(f)
    src = plan.src
    segments = plan.segments()
    annotations = plan.annotations()
    w.start()
    # top-level dict, keys in the source's order
    w.boundary()
    w.frame += b"}"
    w.memoize(None)
    keys = list(src.keys())
    if not 2 <= len(keys) <= BATCH:
        raise SystemExit("unexpected number of top-level keys in the source")
    w.frame += b"("
    written = 0
    copies_written = 0
    for key in keys:
        w.save(key)
        if key == "segments":
            w.save(segments)
        elif key == "external_annotations" and annotations is not None:
            w.save(annotations)
        elif key == "device_traces":
            traces = src["device_traces"]
            w.boundary()
            w.frame += b"]"
            w.memoize(None)

            def big_trace():
                nonlocal written, copies_written
                w.boundary()
                w.frame += b"]"
                w.memoize(None)
                n = plan.entries
                if n == 1:
                    for r, kv, copies in plan.entry_stream():
                        if kv is not None:
                            w.save_transient_dict(kv)
                            written += 1
                    w.frame += b"a"
                    return
                in_batch = 0
                for r, kv, copies in plan.entry_stream():
                    if kv is None:
                        for c in copies.values():
                            if id(c) in w.memo:
                                copies_written += 1
                            w.forget(c)
                        continue
                    if in_batch == 0:
                        w.frame += b"("
                    w.save_transient_dict(kv)
                    written += 1
                    in_batch += 1
                    if in_batch == BATCH:
                        w.frame += b"e"
                        in_batch = 0
                if in_batch:
                    w.frame += b"e"

            if len(traces) == 1:
                big_trace()
                w.frame += b"a"
            else:
                for i0 in range(0, len(traces), BATCH):
                    w.frame += b"("
                    for i in range(i0, min(len(traces), i0 + BATCH)):
                        if i == plan.dev:
                            big_trace()
                        else:
                            w.save(traces[i])
                    w.frame += b"e"
        else:
            w.save(src[key])
    w.frame += b"u"
    w.finish()
    return {"entries": written, "fresh_lists_written": copies_written, "memo": w.n}


def build_object(plan: Plan):
    """The same snapshot as a Python object (small runs only, for --self-check).

    Returns (snapshot, keep): `keep` holds the per-replay frame-list copies alive,
    as they are while the streamed run writes them.
    """
    out = {}
    keep = []
    for key in plan.src:
        if key == "segments":
            out[key] = plan.segments()
        elif key == "external_annotations" and plan.src.get(key) is not None:
            out[key] = plan.annotations()
        elif key == "device_traces":
            traces = []
            for i, t in enumerate(plan.src["device_traces"]):
                if i == plan.dev:
                    entries = []
                    for _, kv, copies in plan.entry_stream():
                        if kv is None:
                            keep.append(copies)
                        else:
                            entries.append({k: copy.deepcopy(v.src) if type(v) is InlineFrames else v
                                            for k, v in kv})
                    traces.append(entries)
                else:
                    traces.append(t)
            out[key] = traces
        else:
            out[key] = plan.src[key]
    return out, keep


def deepen_stacks(src: dict, extra: int, seed: int) -> None:
    """Adds C++ frames to every distinct frame list of the source's traces, in place.

    The frames are the source's own C++ frame dicts (``filename`` "??" or a ``.cpp``/``.h``
    file), so strings and frame objects stay shared as PyTorch shares them; each list gets
    between ``extra // 2`` and ``extra * 3 // 2`` of them, inserted below the first three
    (unwinder) frames.  Lists stay shared: a list used by several entries is deepened once.
    """
    rng = random.Random(seed ^ 0x5EED)
    pool, seen_frames, lists = [], set(), []
    seen_lists = set()
    for trace in src["device_traces"]:
        for e in trace:
            fr = e.get("frames")
            if not isinstance(fr, list) or id(fr) in seen_lists:
                continue
            seen_lists.add(id(fr))
            lists.append(fr)
            for f in fr:
                name = f.get("filename", "") if isinstance(f, dict) else ""
                if id(f) not in seen_frames and (name == "??" or name.endswith((".cpp", ".h"))):
                    seen_frames.add(id(f))
                    pool.append(f)
    if not pool:
        raise SystemExit("--extra-cpp-frames: the source has no C++ frames to draw from")
    for fr in lists:
        n = rng.randint(extra // 2, extra * 3 // 2)
        at = min(3, len(fr))
        fr[at:at] = [rng.choice(pool) for _ in range(n)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE,
                    help="real snapshot whose trace is replayed (default: tests/data/real/resnet50_fixed.pickle)")
    ap.add_argument("--entries", type=int, default=1_000_000, help="trace entries to write (default 1000000)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output pickle (default: target/big_snapshot.big.pickle)")
    ap.add_argument("--seed", type=int, default=20240613, help="random seed (default 20240613)")
    ap.add_argument("--unique-stack-fraction", type=float, default=0.12,
                    help="probability that a replay copies a frame list instead of sharing it (default 0.12)")
    ap.add_argument("--extra-cpp-frames", type=int, default=0,
                    help="deepen every distinct frame list of the source by about this many C++ frames "
                         "(between half and 1.5 times it), drawn from the source's own C++ frames; "
                         "deep C++ stacks as `stacks='all'` records them in large models (default 0)")
    ap.add_argument("--inline-frame-dicts", action="store_true",
                    help="give every entry its own copy.deepcopy of its frame list, so every frame dict is "
                         "written inline (no frame dict or list is shared; strings still are)")
    ap.add_argument("--self-check", action="store_true",
                    help="also build the whole object and compare with pickle.dumps (small runs only)")
    args = ap.parse_args(argv)
    if args.entries < 1:
        ap.error("--entries must be at least 1")
    if not 0.0 <= args.unique_stack_fraction <= 1.0:
        ap.error("--unique-stack-fraction must be in [0, 1]")

    t0 = time.time()
    with open(args.source, "rb") as f:
        src = pickle.load(f)
    if not isinstance(src, dict) or "device_traces" not in src:
        raise SystemExit(f"{args.source}: not a snapshot with device_traces")
    if args.extra_cpp_frames < 0:
        ap.error("--extra-cpp-frames must not be negative")
    if args.extra_cpp_frames:
        deepen_stacks(src, args.extra_cpp_frames, args.seed)
    plan = Plan(src, args.entries, args.seed, args.unique_stack_fraction, args.inline_frame_dicts)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    with open(tmp, "wb", buffering=1 << 20) as f:
        stats = write_snapshot(plan, f)
    os.replace(tmp, args.out)
    size = args.out.stat().st_size
    print(f"{args.out}: {size} bytes, {stats['entries']} entries, {plan.replays} replays of "
          f"{len(plan.T)} (+{len(plan.cleanup)} cleanup) entries, {stats['fresh_lists_written']} "
          f"copied frame lists, {stats['memo']} memo slots, {time.time() - t0:.1f} s")

    if args.self_check:
        obj, keep = build_object(plan)
        ref = pickle.dumps(obj, protocol=4)
        mine = args.out.read_bytes()
        if ref != mine:
            n = next((i for i in range(min(len(ref), len(mine))) if ref[i] != mine[i]), None)
            raise SystemExit(f"self-check FAILED: pickle.dumps gives {len(ref)} bytes, stream "
                             f"{len(mine)}; first difference at byte {n}")
        back = pickle.loads(mine)
        assert len(back["device_traces"][plan.dev]) == args.entries
        print("self-check: identical to pickle.dumps(protocol=4), loads back")
        del keep
    return 0


if __name__ == "__main__":
    sys.exit(main())
