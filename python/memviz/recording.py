"""Recording memory snapshots from a training script: :func:`record` and :func:`step`.

::

    with memviz.record("memory_snapshots", every=100):
        for batch in loader:
            train_step(batch)
            memviz.step()

On entry, recording starts with the arguments the installed PyTorch knows (read from the
signature of ``torch.cuda.memory._record_memory_history``). Snapshots are written as
torchtitan names them, ``PATH/iteration_{N}/rank{R}_memory_snapshot.pickle[.gz]``, where ``N`` is
the number of steps completed:

- every ``every`` steps, into ``iteration_{N}``;
- at the first out-of-memory error of the run, from PyTorch's out-of-memory observer (before the
  error is raised, so the snapshot holds the failing request), into ``iteration_{N}_exit``;
- on exit, into ``iteration_{N}_exit``, unless an out-of-memory snapshot was written (the
  moment of failure is what one wants to see, and a rank then has one ``_exit`` file).

A file is written with pickle protocol 4 (PyTorch's viewer reads no protocol 5), to a temporary
name in the same folder, flushed to disk and renamed: a crash never leaves a partial file under
the final name. The pure parts (names, rank, schedule, arguments, the atomic write) need no torch.
"""

from __future__ import annotations

import contextlib
import gzip
import inspect
import logging
import os
import pickle
import sys
import threading
import time
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

__all__ = ["Recorder", "record", "step", "snapshot_path", "rank_of", "history_kwargs", "write_atomic"]

_log = logging.getLogger("memviz")

#: PyTorch's viewer reads pickle protocols up to 4; Python 3.14 defaults to 5.
PICKLE_PROTOCOL = 4

#: gzip level: 6 writes a large snapshot several times faster than 9 for a few percent of size.
GZIP_LEVEL = 6

#: A step schedule: called with the index of the step just finished (0 for the first, as
#: ``torch.profiler.schedule`` counts); a truthy result, or ``ProfilerAction.RECORD_AND_SAVE``,
#: asks for a snapshot.
Schedule = Callable[[int], Any]

PathLike = Union[str, "os.PathLike[str]"]


def snapshot_path(root: PathLike, iteration: int, rank: int, compress: Optional[str] = "gz", exit: bool = False) -> str:
    """The file of one dump: ``root/iteration_{N}[_exit]/rank{R}_memory_snapshot.pickle[.gz]``."""
    folder = f"iteration_{int(iteration)}" + ("_exit" if exit else "")
    name = f"rank{int(rank)}_memory_snapshot.pickle" + (".gz" if compress else "")
    return os.path.join(os.fspath(root), folder, name)


def rank_of(dist: Any = None, environ: Optional[Mapping[str, str]] = None) -> int:
    """This process's rank: ``torch.distributed``'s when a process group is up (``dist`` is that
    module, or ``None``), else the ``RANK`` variable, else 0."""
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:  # a half-set-up process group is no reason to lose the snapshot
            pass
    env = os.environ if environ is None else environ
    value = env.get("RANK", "").strip()
    return int(value) if value.isdigit() else 0


def wants_dump(every: Union[int, Schedule, None], completed: int) -> bool:
    """Whether ``every`` asks for a snapshot once ``completed`` steps are done (1 or more)."""
    if every is None or completed < 1:
        return False
    if callable(every):
        action = every(completed - 1)
        name = getattr(action, "name", None)
        if isinstance(name, str):  # a torch.profiler.ProfilerAction
            return name == "RECORD_AND_SAVE"
        return bool(action)
    return int(every) > 0 and completed % int(every) == 0


def _parameters(fn: Callable[..., Any]) -> Optional[List[str]]:
    """The keyword names ``fn`` takes; ``None`` when it takes any (``**kwargs``) or hides them."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def history_kwargs(
    params: Optional[Sequence[str]], *, max_entries: int, stacks: str, device: Any = None
) -> Dict[str, Any]:
    """The arguments that start recording, for a ``_record_memory_history`` taking ``params``.

    PyTorch 2.1 and later take ``enabled="all", context, stacks, max_entries, device`` (and more
    that are left at their defaults); PyTorch 2.0 took ``enabled=True, record_context,
    trace_alloc_max_entries, trace_alloc_record_context, record_context_cpp``. Only names the
    function knows are passed; ``params=None`` (unknown) gets the 2.1 names.
    """
    if params is not None and "max_entries" not in params and "trace_alloc_max_entries" in params:
        wanted: Dict[str, Any] = {
            "enabled": True,
            "record_context": True,
            "trace_alloc_max_entries": max_entries,
            "trace_alloc_record_context": True,
            "record_context_cpp": stacks == "all",
        }
    else:
        wanted = {"enabled": "all", "context": "all", "stacks": stacks, "max_entries": max_entries}
    if device is not None:
        wanted["device"] = device
    if params is None:
        return wanted
    return {k: v for k, v in wanted.items() if k in params}


def stop_kwargs(params: Optional[Sequence[str]]) -> Dict[str, Any]:
    """The arguments that stop recording: ``enabled=None`` (2.1+) or ``enabled=False`` (2.0)."""
    legacy = params is not None and "max_entries" not in params and "trace_alloc_max_entries" in params
    return {"enabled": False if legacy else None}


def write_atomic(path: PathLike, obj: Any, compress: Optional[str] = "gz") -> int:
    """Pickles ``obj`` (protocol 4) into ``path``, gzip-compressed when ``compress == "gz"``:
    written to a temporary name in the same folder, flushed to disk, then renamed, so ``path``
    is either absent or whole. Returns the file's size in bytes."""
    final = os.fspath(path)
    folder = os.path.dirname(final) or "."
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(final)}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as raw:
            if compress == "gz":
                # No name or time in the header: the same snapshot gives the same bytes.
                with gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0) as z:
                    pickle.dump(obj, z, protocol=PICKLE_PROTOCOL)
            else:
                pickle.dump(obj, raw, protocol=PICKLE_PROTOCOL)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    return os.path.getsize(final)


def _size_text(size_bytes: int) -> str:
    size = float(size_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size_bytes} B"  # pragma: no cover


def _say(message: str) -> None:
    """A line for the user: to the ``memviz`` logger when logging is set up, else to stderr."""
    if _log.hasHandlers():
        _log.info(message)
    else:
        print(f"memviz: {message}", file=sys.stderr, flush=True)


def _compress_name(compress: Union[str, bool, None]) -> Optional[str]:
    if compress in (None, False, "", "none"):
        return None
    if compress in (True, "gz", "gzip"):
        return "gz"
    raise ValueError(f"compress is 'gz' or None, not {compress!r}")


class _Observer:
    """The one out-of-memory observer of this process (PyTorch has no way to detach one): it
    hands each error to the recorder active at the time, if any."""

    attached_to: Any = None
    active: Optional["Recorder"] = None

    @classmethod
    def attach(cls, torch: Any) -> bool:
        if cls.attached_to is torch:
            return True
        attach = getattr(getattr(torch, "_C", None), "_cuda_attach_out_of_memory_observer", None)
        if attach is None:
            return False
        attach(cls.observe)
        cls.attached_to = torch
        return True

    @staticmethod
    def observe(device: int, alloc_bytes: int, device_allocated_bytes: int, device_free_bytes: int) -> None:
        rec = _Observer.active
        if rec is None:
            return
        try:
            rec._on_oom(device, alloc_bytes, device_free_bytes)
        except Exception as e:  # an error here would replace the out-of-memory error itself
            _say(f"could not write the out-of-memory snapshot: {e}")


class Recorder(contextlib.ContextDecorator):
    """Records CUDA memory history and writes snapshots; made by :func:`record`.

    ``iteration`` is the number of steps completed (:meth:`step`); ``files`` the snapshots
    written, in order; ``active`` whether it is recording.
    """

    def __init__(
        self,
        path: PathLike = "memory_snapshots",
        *,
        max_entries: int = 1_000_000,
        stacks: str = "python",
        every: Union[int, Schedule, None] = None,
        on_oom: bool = True,
        on_exit: bool = True,
        compress: Union[str, bool, None] = "gz",
        device: Any = None,
    ) -> None:
        if stacks not in ("python", "all"):
            raise ValueError(f"stacks is 'python' or 'all', not {stacks!r}")
        if every is not None and not callable(every) and int(every) < 1:
            raise ValueError(f"every is a number of steps (1 or more), a schedule or None, not {every!r}")
        self.path = os.fspath(path)
        self.max_entries = int(max_entries)
        self.stacks = stacks
        self.every = every
        self.on_oom = on_oom
        self.on_exit = on_exit
        self.compress = _compress_name(compress)
        self.device = device
        self.iteration = 0
        self.files: List[str] = []
        self.active = False
        self._torch: Any = None
        self._params: Optional[List[str]] = None
        self._oom_written = False
        self._lock = threading.RLock()

    # -- recording -------------------------------------------------------------------------

    def __enter__(self) -> "Recorder":
        if _Observer.active is not None:
            warnings.warn("memviz.record is already recording; this one does nothing", stacklevel=2)
            return self
        try:
            import torch  # type: ignore[import-not-found]
        except ImportError as e:
            from . import MemvizError

            raise MemvizError("memviz.record needs PyTorch (pip install torch)") from e
        self.iteration, self.files, self._oom_written = 0, [], False
        if not torch.cuda.is_available():
            warnings.warn("memviz.record: CUDA is not available, so there is no GPU memory to record; doing nothing", stacklevel=2)
            return self
        start = torch.cuda.memory._record_memory_history
        self._params = _parameters(start)
        start(**history_kwargs(self._params, max_entries=self.max_entries, stacks=self.stacks, device=self.device))
        self._torch = torch
        self.active = True
        _Observer.active = self
        if self.on_oom and not _Observer.attach(torch):
            warnings.warn("memviz.record: this PyTorch has no out-of-memory observer; no snapshot at an out-of-memory error", stacklevel=2)
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        if not self.active:
            return None
        torch = self._torch
        try:
            if self.on_exit and not self._oom_written:
                self.dump(exit=True)
            elif self._oom_written:
                _say("kept the out-of-memory snapshot as this rank's last")
        finally:
            self.active = False
            _Observer.active = None
            with contextlib.suppress(Exception):
                torch.cuda.memory._record_memory_history(**stop_kwargs(self._params))
        if self.files and self.rank() == 0:
            _say(f"view them with: memviz ranks {self.path}   (in a notebook: memviz.show({self.files[-1]!r}))")
        return None

    def rank(self) -> int:
        """This process's rank (see :func:`rank_of`)."""
        dist = getattr(self._torch, "distributed", None) if self._torch is not None else None
        return rank_of(dist)

    def step(self, iteration: Optional[int] = None) -> Optional[str]:
        """Marks a step done (or sets the count of steps done to ``iteration``) and writes a
        snapshot if ``every`` asks for one now; returns its path, if one was written."""
        self.iteration = self.iteration + 1 if iteration is None else int(iteration)
        if self.active and wants_dump(self.every, self.iteration):
            return self.dump()
        return None

    def dump(self, exit: bool = False) -> Optional[str]:
        """Writes a snapshot of now into ``iteration_{N}`` (``iteration_{N}_exit`` with
        ``exit``); returns its path (``None`` when not recording)."""
        if not self.active:
            return None
        with self._lock:
            path = snapshot_path(self.path, self.iteration, self.rank(), self.compress, exit=exit)
            start = time.perf_counter()
            snapshot = self._torch.cuda.memory._snapshot()
            size_bytes = write_atomic(path, snapshot, self.compress)
            took_s = time.perf_counter() - start
            self.files.append(path)
            _say(f"wrote {path} ({_size_text(size_bytes)} in {took_s:.2f} s)")
            return path

    def _on_oom(self, device: int, alloc_bytes: int, device_free_bytes: int) -> None:
        if not self.on_oom or self._oom_written:
            return
        _say(f"out of memory on cuda:{device} asking for {_size_text(alloc_bytes)} ({_size_text(device_free_bytes)} free)")
        self.dump(exit=True)
        self._oom_written = True


def record(
    path: PathLike = "memory_snapshots",
    *,
    max_entries: int = 1_000_000,
    stacks: str = "python",
    every: Union[int, Schedule, None] = None,
    on_oom: bool = True,
    on_exit: bool = True,
    compress: Union[str, bool, None] = "gz",
    device: Any = None,
) -> Recorder:
    """Records CUDA memory history and writes snapshots under ``path``: a context manager and a
    decorator.

    ``max_entries``: trace entries kept (a ring buffer); 100,000 holds only a few steps of a large
    model. ``stacks``: ``"python"`` (fast) or ``"all"`` (C++ frames too; a large dump can take
    minutes). ``every``: write a snapshot every that many :func:`step` calls, or when a schedule
    (``torch.profiler.schedule(...)`` or any ``f(step_index) -> bool``) says so. ``on_oom``: write one
    at the first out-of-memory error; ``on_exit``: one on the way out. ``compress``: ``"gz"`` or
    ``None``. ``device``: passed on to ``_record_memory_history``.

    Without PyTorch it raises :class:`memviz.MemvizError`; without CUDA it warns and does nothing.
    """
    return Recorder(
        path,
        max_entries=max_entries,
        stacks=stacks,
        every=every,
        on_oom=on_oom,
        on_exit=on_exit,
        compress=compress,
        device=device,
    )


def step(iteration: Optional[int] = None) -> Optional[str]:
    """Marks a training step done for the active :func:`record` (none active: does nothing);
    returns the path of the snapshot it wrote, if any."""
    rec = _Observer.active
    return rec.step(iteration) if rec is not None else None
