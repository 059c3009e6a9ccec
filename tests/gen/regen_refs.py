#!/usr/bin/env python3
"""Regenerate every reference output under tests/data with one version of PyTorch's CLI.

For each ``NAME.pickle`` in ``tests/data/real`` and ``tests/data/synth`` and each
``NAME.pickle.gz`` in ``tests/data/containers`` (decompressed to a temporary file first),
``NAME.ref.stats.txt`` and ``NAME.ref.trace.txt`` are rewritten with the exact stdout of the
reference's ``stats`` / ``trace``; where the reference fails, the file is removed and the
manifest records the exit status and the last line of stderr. Each folder's ``manifest.json``
records the reference's version and SHA-256, and each file's record the version its outputs
came from.

The reference is ``torch/cuda/_memory_viz.py`` taken out of a torch wheel; it runs on its own
with the standard library (``stats`` and ``trace`` import nothing from torch)::

    pip download --no-deps torch==2.15.0 -d /tmp/torch
    unzip -o /tmp/torch/torch-2.15.0-*.whl torch/cuda/_memory_viz.py torch/version.py -d /tmp/torch/x
    python3 tests/gen/regen_refs.py --ref /tmp/torch/x/torch/cuda/_memory_viz.py

The version is read from ``torch/version.py`` two folders above the script (as the wheel lays
them out) or given with ``--torch-version``. ``--check`` writes nothing and exits 1 when an
output would change.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_snapshots import Reference, last_line, write_json  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
COMMANDS = ("stats", "trace")


def torch_version(ref_path: Path, given: str | None) -> str:
    if given:
        return given
    version_py = ref_path.resolve().parents[1] / "version.py"
    if version_py.is_file():
        m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", version_py.read_text(), re.M)
        if m:
            # The local build tag (+cu132) says which CUDA the wheel was built for, not the CLI.
            return m.group(1).split("+")[0]
    sys.exit(f"cannot tell the torch version of {ref_path}: no torch/version.py beside it; pass --torch-version")


def run_refs(ref: Reference, snapshot: Path, out_dir: Path, stem: str, check: bool, changed: list) -> dict:
    """Runs stats and trace on `snapshot`, writes out_dir/stem.ref.*.txt; returns the manifest record."""
    record = {}
    for command in COMMANDS:
        out = out_dir / f"{stem}.ref.{command}.txt"
        rc, stdout, stderr = ref.run(command, snapshot)
        old = out.read_bytes() if out.is_file() else None
        if rc == 0:
            if old != stdout:
                changed.append(str(out.relative_to(REPO)))
                if not check:
                    out.write_bytes(stdout)
            record[command] = {"ok": True, "file": out.name}
        else:
            if old is not None:
                changed.append(f"{out.relative_to(REPO)} (now fails)")
                if not check:
                    out.unlink()
            record[command] = {"ok": False, "exit_status": rc, "stderr_last_line": last_line(stderr)}
    return record


def update_manifest(folder: Path, records: dict, about_ref: dict, version: str, check: bool) -> None:
    path = folder / "manifest.json"
    old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    # The reference's record takes the place of the older `reference_sha256`, keys in their order.
    manifest = {}
    for key, value in old.items():
        manifest["reference" if key == "reference_sha256" else key] = about_ref if key == "reference_sha256" else value
    manifest["reference"] = about_ref
    files = manifest.setdefault("files", [])
    known = {f.get("file"): f for f in files}
    for name, ref in records.items():
        rec = known.get(name)
        if rec is None:
            rec = {"file": name}
            files.append(rec)
        rec["ref"] = ref
        rec["ref_torch_version"] = version
    if "reference_failures" in manifest:
        manifest["reference_failures"] = {
            f["file"]: {c: r["stderr_last_line"] for c, r in f["ref"].items() if not r["ok"]}
            for f in files
            if f.get("ref") and any(not r["ok"] for r in f["ref"].values())
        }
    if not check:
        write_json(path, manifest)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True, type=Path, help="path to torch/cuda/_memory_viz.py")
    ap.add_argument("--torch-version", help="the version of torch the script comes from (else read)")
    ap.add_argument("--data", type=Path, default=DATA, help="the tests/data folder")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if any output would change")
    args = ap.parse_args()
    if not args.ref.is_file():
        sys.exit(f"{args.ref}: no such file")
    ref = Reference(str(args.ref))
    version = torch_version(args.ref, args.torch_version)
    about_ref = {
        "cli": "torch/cuda/_memory_viz.py",
        "torch_version": version,
        "sha256": hashlib.sha256(args.ref.read_bytes()).hexdigest(),
        "regenerated_by": "tests/gen/regen_refs.py",
    }
    changed: list[str] = []
    count = 0
    for sub in ("real", "synth"):
        folder = args.data / sub
        records = {}
        for snap in sorted(folder.glob("*.pickle")):
            records[snap.name] = run_refs(ref, snap, folder, snap.name[: -len(".pickle")], args.check, changed)
            count += 1
        update_manifest(folder, records, about_ref, version, args.check)
    folder = args.data / "containers"
    records = {}
    with tempfile.TemporaryDirectory() as tmp:
        for gz in sorted(folder.glob("*.pickle.gz")):
            stem = gz.name[: -len(".pickle.gz")]
            plain = Path(tmp) / f"{stem}.pickle"
            plain.write_bytes(gzip.decompress(gz.read_bytes()))
            records[gz.name] = run_refs(ref, plain, folder, stem, args.check, changed)
            count += 1
    if records:
        update_manifest(folder, records, about_ref, version, args.check)
    verb = "would change" if args.check else "changed"
    print(f"torch {version}: {count} snapshots, {len(changed)} outputs {verb}")
    for c in changed:
        print(f"  {c}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
