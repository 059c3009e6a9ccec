#!/usr/bin/env python3
"""Writes tests/data/containers/: fixtures wrapped the ways people keep them, for the tests that
check that each opens as the snapshot inside with byte-identical `stats` / `trace`.

    NAME.pickle.gz   gzip (Python's gzip module, mtime 0)
    NAME.pickle.xz   xz (Python's lzma module, the xz format, CRC-64)
    NAME.pickle.zst  zstd (the `zstd` command, when present)
    NAME.html        the page PyTorch's `python -m torch.cuda._memory_viz trace_plot` writes
                     (its template and `_format_viz`, copied: the pickle re-dumped, padded with
                     NULs to a multiple of three, base64 in a JSON list)

Usage: python3 tests/gen/make_containers.py [--fixtures tests/data/real]
"""
import argparse
import base64
import gzip
import json
import lzma
import pickle
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# torch/cuda/_memory_viz.py
_memory_viz_template = r"""
<!DOCTYPE html>
<html>
<head>
</head>
<body>
<script type="module">
import {add_local_files} from "https://cdn.jsdelivr.net/gh/pytorch/pytorch@main/torch/utils/viz/MemoryViz.js"
const local_files = $SNAPSHOT
add_local_files(local_files, $VIZ_KIND)
</script>
</body>
"""


def format_viz(data, viz_kind):
    buffer = pickle.dumps(data)
    buffer += b"\x00" * (3 - len(buffer) % 3)
    encoded_buffer = base64.b64encode(buffer).decode("utf-8")
    json_format = json.dumps([{"name": "snapshot.pickle", "base64": encoded_buffer}])
    return _memory_viz_template.replace("$VIZ_KIND", repr(viz_kind)).replace("$SNAPSHOT", json_format)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", default=str(ROOT / "tests" / "data" / "real"))
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "containers"))
    args = ap.parse_args()
    src, out = Path(args.fixtures), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in ["oom", "state_only"]:
        raw = (src / f"{name}.pickle").read_bytes()
        (out / f"{name}.pickle.gz").write_bytes(gzip.compress(raw, mtime=0))
        (out / f"{name}.pickle.xz").write_bytes(lzma.compress(raw, format=lzma.FORMAT_XZ))
        if shutil.which("zstd"):
            z = subprocess.run(["zstd", "-q", "-c", "-19"], input=raw, stdout=subprocess.PIPE, check=True).stdout
            (out / f"{name}.pickle.zst").write_bytes(z)
        kind = "Active Memory Timeline" if name == "oom" else "Allocator State History"
        (out / f"{name}.html").write_text(format_viz(pickle.loads(raw), kind))
        for ref in ["stats", "trace"]:
            r = src / f"{name}.ref.{ref}.txt"
            if r.is_file():
                shutil.copyfile(r, out / f"{name}.ref.{ref}.txt")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
