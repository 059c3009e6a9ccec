"""memviz: a fast, private, offline viewer for PyTorch CUDA memory snapshots.

The package runs the ``memviz`` command line that comes with it (the whole viewer is built into
that binary), so it needs neither torch nor a network; it uses torch when it is there, to take a
snapshot of the current process when none is given.

A *snapshot* is any of:

- a path (``str`` or ``os.PathLike``) to a snapshot file: a pickle from
  ``torch.cuda.memory._dump_snapshot``, a JSON snapshot, either compressed with gzip, xz or
  zstd, or an HTML page written by ``python -m torch.cuda._memory_viz trace_plot`` or by memviz;
- the bytes of such a file;
- a snapshot dict (``torch.cuda.memory._snapshot()``), pickled in memory;
- ``None``: ``torch.cuda.memory._snapshot()`` of this process (needs torch).

In a notebook::

    import memviz, torch
    memviz.show(torch.cuda.memory._snapshot())

In a training script (:mod:`memviz.recording`; callbacks for Lightning and ``transformers`` in
:mod:`memviz.integrations`)::

    with memviz.record("memory_snapshots", every=100):
        for batch in loader:
            train_step(batch)
            memviz.step()
"""

from __future__ import annotations

import html as _html
import json as _json
import os as _os
import pickle as _pickle
import re as _re
import shutil as _shutil
import subprocess as _subprocess
import sys as _sys
import sysconfig as _sysconfig
from typing import Any, Dict, List, Optional, Union

from .recording import Recorder, record, step

__all__ = [
    "Viewer",
    "binary",
    "info",
    "save_html",
    "show",
    "stats",
    "to_html",
    "MemvizError",
    "Recorder",
    "record",
    "step",
]

Snapshot = Union[str, "_os.PathLike[str]", bytes, bytearray, memoryview, Dict[str, Any], List[Any], None]


class MemvizError(RuntimeError):
    """The memviz command line refused the input (its one-line message is the error's text)."""


def _exe_name() -> str:
    return "memviz.exe" if _os.name == "nt" else "memviz"


def binary() -> str:
    """The path of the ``memviz`` binary this package runs.

    Looked for, in order: ``$MEMVIZ_BINARY``; the scripts folder of this interpreter's
    environment (where the wheel installs it, also for ``--user`` installs); next to the
    interpreter; then ``PATH``.
    """
    env = _os.environ.get("MEMVIZ_BINARY")
    if env:
        return env
    name = _exe_name()
    dirs: List[str] = []
    for scheme in (None, f"{_os.name}_user"):
        try:
            d = _sysconfig.get_path("scripts", scheme) if scheme else _sysconfig.get_path("scripts")
        except KeyError:
            continue
        if d:
            dirs.append(d)
    dirs.append(_os.path.dirname(_sys.executable))
    for d in dirs:
        p = _os.path.join(d, name)
        if _os.path.isfile(p) and _os.access(p, _os.X_OK):
            return p
    found = _shutil.which(name)
    if found:
        return found
    raise MemvizError(
        "cannot find the memviz binary (it comes with the memviz wheel: pip install memviz); "
        "set MEMVIZ_BINARY to its path"
    )


def _torch_snapshot() -> Dict[str, Any]:
    try:
        import torch  # type: ignore[import-not-found]
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise MemvizError("no snapshot given, and torch is not installed to take one") from e
    return torch.cuda.memory._snapshot()


def _as_input(snapshot: Snapshot) -> "tuple[str, Optional[bytes]]":
    """The file argument for the command line and the bytes for its standard input."""
    if snapshot is None:
        snapshot = _torch_snapshot()
    if isinstance(snapshot, (str, _os.PathLike)):
        path = _os.fspath(snapshot)
        if not _os.path.exists(path):
            raise FileNotFoundError(path)
        return path, None
    if isinstance(snapshot, (bytes, bytearray, memoryview)):
        return "-", bytes(snapshot)
    if isinstance(snapshot, (dict, list)):
        return "-", _pickle.dumps(snapshot, protocol=4)
    raise TypeError(f"a snapshot is a path, bytes or a snapshot dict, not {type(snapshot).__name__}")


def _run(args: List[str], stdin: Optional[bytes]) -> str:
    proc = _subprocess.run(
        [binary(), *args],
        input=stdin if stdin is not None else b"",
        stdout=_subprocess.PIPE,
        stderr=_subprocess.PIPE,
        check=False,
    )
    if proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip()
        raise MemvizError(msg.removeprefix("memviz: error: ") if hasattr(msg, "removeprefix") else msg)
    return proc.stdout.decode("utf-8")


def _view_slug(view: str) -> str:
    return _re.sub(r"[^a-z0-9]+", "-", view.lower()).strip("-")


def to_html(snapshot: Snapshot = None, view: str = "Active Memory Timeline", device: Optional[int] = None) -> str:
    """A self-contained HTML page showing ``snapshot``: the whole viewer inlined, working from a
    file or an iframe with the network switched off.

    ``view`` is the view the page opens with, by its name in the page's menu ("Active Memory
    Timeline", "Active Cached Segment Timeline", "Allocator State History", "Allocator
    Settings", ...); ``device`` the device it shows first.
    """
    arg, data = _as_input(snapshot)
    args = ["trace-plot", arg, "-o", "-", "--view", _view_slug(view)]
    if device is not None:
        args += ["--device", str(int(device))]
    return _run(args, data)


def save_html(snapshot: Snapshot, path: Union[str, "_os.PathLike[str]"], view: str = "Active Memory Timeline", device: Optional[int] = None) -> str:
    """Writes :func:`to_html`'s page to ``path``; returns the path."""
    page = to_html(snapshot, view=view, device=device)
    out = _os.fspath(path)
    with open(out, "w", encoding="utf-8") as f:
        f.write(page)
    return out


def stats(snapshot: Snapshot = None) -> str:
    """What ``python -m torch.cuda._memory_viz stats`` prints for ``snapshot``, byte for byte."""
    arg, data = _as_input(snapshot)
    return _run(["stats", arg], data)


def info(snapshot: Snapshot = None) -> Dict[str, Any]:
    """A summary of ``snapshot`` (``memviz info --json``): devices, entries per action, true peaks,
    segments, the recording settings inferred."""
    arg, data = _as_input(snapshot)
    return _json.loads(_run(["info", "--json", arg], data))


class Viewer:
    """The viewer of one snapshot, shown inline by notebooks (Jupyter, VS Code) through
    ``_repr_html_``: an ``<iframe srcdoc>`` of the offline page, so it needs no server and no
    network."""

    def __init__(self, snapshot: Snapshot = None, view: str = "Active Memory Timeline", height: int = 640, device: Optional[int] = None):
        self.page: str = to_html(snapshot, view=view, device=device)
        self.height = int(height)

    def iframe(self) -> str:
        """The ``<iframe>`` element, the page escaped into its ``srcdoc``."""
        return (
            f'<iframe srcdoc="{_html.escape(self.page, quote=True)}" '
            f'style="width: 100%; height: {self.height}px; border: 1px solid #ddd" '
            'title="memviz"></iframe>'
        )

    def _repr_html_(self) -> str:
        return self.iframe()

    def save(self, path: Union[str, "_os.PathLike[str]"]) -> str:
        """Writes the page to ``path``; returns the path."""
        out = _os.fspath(path)
        with open(out, "w", encoding="utf-8") as f:
            f.write(self.page)
        return out


def show(snapshot: Snapshot = None, view: str = "Active Memory Timeline", height: int = 640, device: Optional[int] = None) -> Optional[Viewer]:
    """Shows ``snapshot`` in the viewer, inline in a notebook.

    In IPython (Jupyter, VS Code notebooks) the viewer is displayed at once and ``None`` is
    returned; elsewhere the :class:`Viewer` is returned (its ``_repr_html_`` is the iframe).
    """
    v = Viewer(snapshot, view=view, height=height, device=device)
    try:
        from IPython import get_ipython  # type: ignore[import-not-found]
        from IPython.display import display  # type: ignore[import-not-found]
    except ImportError:
        return v
    if get_ipython() is None:
        return v
    display(v)
    return None


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return _run(["--version"], None).split()[-1]
    if name == "integrations":
        import importlib

        return importlib.import_module(".integrations", __name__)
    raise AttributeError(name)
