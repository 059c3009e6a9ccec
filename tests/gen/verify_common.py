"""Shared code of the verify_*.py scripts: an independent replay of a snapshot with nothing but
`pickle.load`, written from the definitions in crates/core/src/analysis/mod.rs (not from its code).

* A lifetime starts at an `alloc` and ends at the next `free_completed` (or historical `free`) of
  the same address. A free whose alloc is not in the trace is a lifetime live from the start. An
  `active_allocated` block of the final segments whose address is not allocated at the end of the
  trace is live for the whole trace (its address is the segment address plus the sizes of the
  blocks before it).
* Live bytes are requested bytes: the `size` of the alloc (of the free, of the block's
  `requested_size`).
* The "site" of a stack is its innermost visible frame with a line number > 0; failing that the
  innermost visible frame whose name contains `autograd::generated::`; failing that the innermost
  visible frame that is not allocator plumbing; failing that the innermost visible frame.
  Allocations without frames that were live before the trace are labelled apart.
"""

import bisect
import gzip
import json
import pickle

OMIT_FUNCTIONS = ["unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "_start",
                  "__libc_start_main", "PyEval_", "PyObject_", "PyFunction_"]
OMIT_FILENAMES = ["core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c",
                  "Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h", "ceval.c",
                  "cpython/abstract.h"]
INTERNAL = ["CachingAllocator", "at::detail::empty", "at::native::empty", "empty_strided", "empty_cuda",
            "empty_generic", "create_out", "set_output_raw_strided", "TensorIteratorBase"]


def load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def visible(fr):
    name, fn = fr.get("name", ""), fr.get("filename", "")
    return not any(o in name for o in OMIT_FUNCTIONS) and not any(o in fn for o in OMIT_FILENAMES)


def short_path(p):
    for m in ("site-packages/", "dist-packages/"):
        i = p.rfind(m)
        if i >= 0:
            return p[i + len(m):]
    return p


def cpp_short(name):
    t = name.rstrip()
    if t.endswith(" const"):
        t = t[: -len(" const")]
    if not t.endswith(")"):
        return name
    depth = 0
    for i in range(len(t) - 1, -1, -1):
        c = t[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return t[:i]
    return name


def label(fr):
    if fr.get("line", 0) > 0:
        return f"{short_path(fr['filename'])}:{fr['line']} ({fr['name']})"
    return cpp_short(fr.get("name", ""))


def site(frames):
    vis = [f for f in frames if visible(f)]
    for pred in (lambda f: f.get("line", 0) > 0,
                 lambda f: "autograd::generated::" in f.get("name", ""),
                 lambda f: not any(p in f.get("name", "") for p in INTERNAL),
                 lambda f: True):
        for f in vis:
            if pred(f):
                return label(f)
    return "<no frames>"


BEFORE_TRACE = "<no frames, allocated before the trace>"


def life_site(l):
    """Site of a lifetime: allocations without frames that were live before the trace have their
    own label."""
    if l["alloc"] is None and not l["frames"]:
        return BEFORE_TRACE
    return site(l["frames"])


def final_blocks(snap, device):
    for s in snap.get("segments", []):
        if s.get("device", 0) != device:
            continue
        addr = s["address"]
        for b in s.get("blocks", []):
            yield s, addr, b
            addr += b["size"]


def lifetimes(snap, device=0):
    """List of dicts: addr, size, frames, alloc (row or None), free (row or None), origin."""
    trace = snap["device_traces"][device] if snap.get("device_traces") else []
    lives, open_ = [], {}
    for i, e in enumerate(trace):
        a = e["action"]
        if a == "alloc":
            open_[e["addr"]] = len(lives)
            lives.append(dict(addr=e["addr"], size=e["size"], frames=e.get("frames", []), alloc=i, free=None,
                              origin="traced", stream=e.get("stream", 0)))
        elif a in ("free_completed", "free"):
            j = open_.pop(e["addr"], None)
            if j is None:
                lives.append(dict(addr=e["addr"], size=e["size"], frames=e.get("frames", []), alloc=None, free=i,
                                  origin="freed_without_alloc", stream=e.get("stream", 0)))
            else:
                lives[j]["free"] = i
    for s, addr, b in final_blocks(snap, device):
        if b["state"] == "active_allocated" and addr not in open_:
            lives.append(dict(addr=addr, size=b.get("requested_size", b["size"]), frames=b.get("frames", []),
                              alloc=None, free=None, origin="ghost", stream=s.get("stream", 0)))
    return lives


def live_after(l, row):
    """Whether lifetime l is live just after trace row `row` (None: before the first entry)."""
    if row is None:
        return l["alloc"] is None
    return (l["alloc"] is None or l["alloc"] <= row) and (l["free"] is None or l["free"] > row)


def live_series(snap, device=0):
    lives = lifetimes(snap, device)
    n = len(snap["device_traces"][device]) if snap.get("device_traces") else 0
    delta = [0] * n
    initial = 0
    for l in lives:
        if l["alloc"] is None:
            initial += l["size"]
        else:
            delta[l["alloc"]] += l["size"]
        if l["free"] is not None:
            delta[l["free"]] -= l["size"]
    out, cur = [], initial
    for d in delta:
        cur += d
        out.append(cur)
    return initial, out


def peak(initial, series):
    best, row = initial, None
    for i, v in enumerate(series):
        if v > best:
            best, row = v, i
    return row, best


def row_at_time(trace, t, after=False):
    times = [e.get("time_us", 0) for e in trace]
    return bisect.bisect_right(times, t) if after else bisect.bisect_left(times, t)


def read_json_maybe_gz(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)
