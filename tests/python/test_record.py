"""Checks of memviz.record / memviz.step / memviz.integrations with no torch installed: a fake
``torch`` module (its snapshot is tests/data/containers/oom.pickle.gz's) stands in for PyTorch,
and fake ``lightning`` and ``transformers`` modules for the frameworks. The files written are
opened with the installed memviz binary.

    python -m unittest discover -s tests/python -p 'test_record.py' -v
"""
import enum
import gzip
import io
import os
import pickle
import subprocess
import sys
import tempfile
import types
import unittest
import warnings
from contextlib import contextmanager, redirect_stderr
from pathlib import Path

import memviz
from memviz import recording

ROOT = Path(__file__).resolve().parents[2]
OOM = ROOT / "tests" / "data" / "containers" / "oom.pickle.gz"
SNAPSHOT = pickle.loads(gzip.decompress(OOM.read_bytes()))


# The signatures of torch.cuda.memory._record_memory_history across releases.
def history_2_11(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None,
                 clear_history=False, compile_context=False, global_record_annotations=False, skip_actions=None):
    pass


def history_2_1(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None):
    pass


def history_2_0(enabled, record_context=True, trace_alloc_max_entries=1, trace_alloc_record_context=False,
                device=None, record_context_cpp=False):
    pass


def history_any(enabled="all", *args, **kwargs):
    pass


class FakeTorch:
    """A ``torch`` module with what memviz.record touches, recording the calls made."""

    def __init__(self, signature=history_2_11, cuda=True, rank=None, observer=True):
        self.calls = []
        self.observers = []
        self.snapshots = 0
        mod = types.ModuleType("torch")
        calls = self.calls

        def record_history(*args, **kwargs):
            calls.append(kwargs)

        record_history.__signature__ = __import__("inspect").signature(signature)

        def snapshot():
            self.snapshots += 1
            return SNAPSHOT

        memory = types.SimpleNamespace(_record_memory_history=record_history, _snapshot=snapshot)
        mod.cuda = types.SimpleNamespace(is_available=lambda: cuda, memory=memory)
        mod._C = types.SimpleNamespace()
        if observer:
            mod._C._cuda_attach_out_of_memory_observer = self.observers.append
        mod.distributed = types.SimpleNamespace(
            is_available=lambda: True,
            is_initialized=lambda: rank is not None,
            get_rank=lambda: rank,
        )
        self.module = mod

    def oom(self, alloc_bytes=546_068_992):
        """What PyTorch's allocator does on an out-of-memory error: calls every observer."""
        for fn in self.observers:
            fn(0, alloc_bytes, 80 << 30, 1 << 20)


@contextmanager
def modules(**fakes):
    """Puts fake modules into sys.modules (``lightning_pytorch`` for ``lightning.pytorch``) and
    takes them out again, so no later test sees a torch."""
    names = {k.replace("_pytorch", ".pytorch"): v for k, v in fakes.items()}
    saved = {k: sys.modules.get(k) for k in names}
    sys.modules.update(names)
    recording._Observer.attached_to = None
    recording._Observer.active = None
    try:
        yield
    finally:
        recording._Observer.attached_to = None
        recording._Observer.active = None
        for k, m in saved.items():
            if m is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = m


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file())


def quiet():
    return redirect_stderr(io.StringIO())


class Naming(unittest.TestCase):
    def test_torchtitan_names(self):
        self.assertEqual(recording.snapshot_path("out", 10, 3), os.path.join("out", "iteration_10", "rank3_memory_snapshot.pickle.gz"))
        self.assertEqual(recording.snapshot_path("out", 0, 0, None), os.path.join("out", "iteration_0", "rank0_memory_snapshot.pickle"))
        self.assertEqual(recording.snapshot_path(Path("o"), 7, 1, "gz", exit=True), os.path.join("o", "iteration_7_exit", "rank1_memory_snapshot.pickle.gz"))

    def test_rank_from_the_process_group_then_rank_then_zero(self):
        up = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True, get_rank=lambda: 5)
        down = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: False, get_rank=lambda: 9)
        self.assertEqual(recording.rank_of(up, {"RANK": "2"}), 5)
        self.assertEqual(recording.rank_of(down, {"RANK": "2"}), 2)
        self.assertEqual(recording.rank_of(None, {"RANK": "3"}), 3)
        self.assertEqual(recording.rank_of(None, {}), 0)
        self.assertEqual(recording.rank_of(None, {"RANK": "x"}), 0)

        def broken():
            raise RuntimeError("no backend")

        self.assertEqual(recording.rank_of(types.SimpleNamespace(is_available=broken), {"RANK": "4"}), 4)


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def profiler_schedule(wait, warmup, active):
    """torch.profiler.schedule's actions (one cycle, repeating)."""

    def at(step):
        i = step % (wait + warmup + active)
        if i < wait:
            return ProfilerAction.NONE
        if i < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if i < wait + warmup + active - 1 else ProfilerAction.RECORD_AND_SAVE

    return at


class Schedule(unittest.TestCase):
    def dumps(self, every, steps=10):
        return [n for n in range(1, steps + 1) if recording.wants_dump(every, n)]

    def test_every_n_steps(self):
        self.assertEqual(self.dumps(2), [2, 4, 6, 8, 10])
        self.assertEqual(self.dumps(3), [3, 6, 9])
        self.assertEqual(self.dumps(None), [])
        self.assertFalse(recording.wants_dump(2, 0))

    def test_profiler_style_schedules(self):
        # wait 1, warm up 1, record 2: the 4th step of each cycle of 4 saves.
        self.assertEqual(self.dumps(profiler_schedule(1, 1, 2)), [4, 8])
        self.assertEqual(self.dumps(lambda i: i in (0, 4)), [1, 5])

    def test_bad_arguments_are_refused(self):
        for bad in [dict(every=0), dict(every=-2), dict(stacks="cpp"), dict(compress="zip")]:
            with self.assertRaises(ValueError, msg=str(bad)):
                memviz.record("x", **bad)


class Arguments(unittest.TestCase):
    def kwargs(self, fn, **kw):
        return recording.history_kwargs(recording._parameters(fn), max_entries=1000, stacks="python", **kw)

    def test_only_the_names_each_release_knows(self):
        want = {"enabled": "all", "context": "all", "stacks": "python", "max_entries": 1000}
        self.assertEqual(self.kwargs(history_2_11), want)
        self.assertEqual(self.kwargs(history_2_1), want)
        self.assertEqual(self.kwargs(history_2_1, device=1), {**want, "device": 1})
        self.assertEqual(self.kwargs(history_any), want)
        self.assertEqual(recording._parameters(history_any), None)

    def test_the_2_0_names(self):
        self.assertEqual(
            self.kwargs(history_2_0),
            {"enabled": True, "record_context": True, "trace_alloc_max_entries": 1000, "trace_alloc_record_context": True, "record_context_cpp": False},
        )
        all_stacks = recording.history_kwargs(recording._parameters(history_2_0), max_entries=5, stacks="all")
        self.assertTrue(all_stacks["record_context_cpp"])
        self.assertEqual(recording.stop_kwargs(recording._parameters(history_2_0)), {"enabled": False})
        self.assertEqual(recording.stop_kwargs(recording._parameters(history_2_11)), {"enabled": None})


class Poison:
    """Pickling it fails (or ends the process), as a crash in the middle of a dump would."""

    def __init__(self, exit_code=None):
        self.exit_code = exit_code

    def __reduce__(self):
        if self.exit_code is not None:
            os._exit(self.exit_code)
        raise RuntimeError("failed halfway")


class AtomicWrite(unittest.TestCase):
    def test_protocol_4_plain_and_gzip(self):
        with tempfile.TemporaryDirectory() as d:
            for compress, name in [("gz", "a/x.pickle.gz"), (None, "b/x.pickle")]:
                p = os.path.join(d, name)
                size = recording.write_atomic(p, SNAPSHOT, compress)
                raw = Path(p).read_bytes()
                self.assertEqual(size, len(raw))
                data = gzip.decompress(raw) if compress else raw
                self.assertEqual(data[:2], b"\x80\x04")
                self.assertEqual(pickle.loads(data), SNAPSHOT)
            # The same snapshot gives the same bytes (no time in the gzip header).
            again = os.path.join(d, "c.pickle.gz")
            recording.write_atomic(again, SNAPSHOT)
            self.assertEqual(Path(again).read_bytes(), Path(d, "a/x.pickle.gz").read_bytes())

    def test_a_failure_halfway_leaves_the_old_file_and_no_temporary(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.pickle.gz")
            recording.write_atomic(p, {"old": True})
            with self.assertRaises(RuntimeError):
                recording.write_atomic(p, {"segments": [0] * 100000, "z": Poison()})
            self.assertEqual(os.listdir(d), ["x.pickle.gz"])
            self.assertEqual(pickle.loads(gzip.decompress(Path(p).read_bytes())), {"old": True})

    def test_a_process_dying_halfway_leaves_no_file_under_the_final_name(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "iteration_1", "rank0_memory_snapshot.pickle.gz")
            code = (
                "import sys; sys.path[:0] = [sys.argv[2]]; import test_record as t; from memviz import recording;"
                "recording.write_atomic(sys.argv[1], {'segments': list(range(200000)), 'z': t.Poison(3)})"
            )
            proc = subprocess.run([sys.executable, "-c", code, p, str(Path(__file__).parent)], capture_output=True)
            self.assertEqual(proc.returncode, 3, proc.stderr.decode())
            self.assertFalse(os.path.exists(p))
            left = os.listdir(os.path.dirname(p))
            self.assertEqual(len(left), 1)
            self.assertTrue(left[0].startswith(".rank0_memory_snapshot.pickle.gz.") and left[0].endswith(".tmp"), left)


class Record(unittest.TestCase):
    def test_every_two_steps_and_on_exit(self):
        fake = FakeTorch(rank=1)
        with tempfile.TemporaryDirectory() as d, modules(torch=fake.module), quiet() as err:
            with memviz.record(d, every=2, max_entries=5000) as rec:
                for _ in range(5):
                    memviz.step()
            self.assertEqual(
                files_under(d),
                [
                    "iteration_2/rank1_memory_snapshot.pickle.gz",
                    "iteration_4/rank1_memory_snapshot.pickle.gz",
                    "iteration_5_exit/rank1_memory_snapshot.pickle.gz",
                ],
            )
            self.assertEqual(rec.files, [os.path.join(d, f) for f in files_under(d)])
            self.assertEqual(rec.iteration, 5)
            self.assertEqual(fake.calls, [{"enabled": "all", "context": "all", "stacks": "python", "max_entries": 5000}, {"enabled": None}])
            log = err.getvalue()
            self.assertIn(f"memviz: wrote {d}/iteration_2/rank1_memory_snapshot.pickle.gz (", log)
            self.assertRegex(log, r"\(\d+\.\d KiB in \d+\.\d\d s\)")
            # Only rank 0 prints how to view the run.
            self.assertNotIn("memviz ranks", log)
            # memviz reads what was written.
            info = memviz.info(os.path.join(d, "iteration_4/rank1_memory_snapshot.pickle.gz"))
            self.assertEqual(info["devices"][0]["ooms"], 1)
        # Not recording: memviz.step() does nothing.
        self.assertIsNone(memviz.step())

    def test_out_of_memory_is_dumped_once_and_kept_as_the_last(self):
        fake = FakeTorch()
        with tempfile.TemporaryDirectory() as d, modules(torch=fake.module), quiet() as err:
            with self.assertRaises(MemoryError):
                with memviz.record(d, compress=None):
                    memviz.step()
                    fake.oom()
                    fake.oom()  # a second error in the run writes nothing more
                    raise MemoryError("CUDA out of memory")
            self.assertEqual(files_under(d), ["iteration_1_exit/rank0_memory_snapshot.pickle"])
            self.assertEqual(fake.snapshots, 1)
            self.assertEqual(len(fake.observers), 1)
            log = err.getvalue()
            self.assertIn("memviz: out of memory on cuda:0 asking for 520.8 MiB (1.0 MiB free)", log)
            self.assertIn("kept the out-of-memory snapshot", log)
            self.assertIn(f"memviz: view them with: memviz ranks {d}", log)
            self.assertEqual(memviz.stats(os.path.join(d, files_under(d)[0])), (ROOT / "tests/data/containers/oom.ref.stats.txt").read_text())
            # After the recorder is done, the observer (attached for good) does nothing.
            fake.oom()
            self.assertEqual(fake.snapshots, 1)
            # A second recorder in the process reuses the observer.
            with memviz.record(d, on_exit=False):
                fake.oom()
            self.assertEqual((len(fake.observers), fake.snapshots), (1, 2))

    def test_decorator_and_options(self):
        fake = FakeTorch(signature=history_2_0, observer=False)

        @memviz.record("decorated")
        def train():
            memviz.step()
            memviz.step()

        with tempfile.TemporaryDirectory() as d, modules(torch=fake.module), quiet():
            rec = memviz.record(d, on_oom=False, every=1, stacks="all")
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with rec:
                    memviz.step()
            self.assertEqual(w, [])
            self.assertEqual(fake.calls[0]["record_context_cpp"], True)
            self.assertEqual(fake.calls[-1], {"enabled": False})
            self.assertEqual(files_under(d), ["iteration_1/rank0_memory_snapshot.pickle.gz", "iteration_1_exit/rank0_memory_snapshot.pickle.gz"])
            # As a decorator, each call records afresh.
            os.chdir(d)
            try:
                train()
                train()
            finally:
                os.chdir(ROOT)
            self.assertIn("decorated/iteration_2_exit/rank0_memory_snapshot.pickle.gz", files_under(d))

    def test_no_observer_warns(self):
        fake = FakeTorch(observer=False)
        with tempfile.TemporaryDirectory() as d, modules(torch=fake.module), quiet():
            with self.assertWarnsRegex(UserWarning, "no out-of-memory observer"):
                with memviz.record(d, on_exit=False):
                    pass

    def test_nested_record_does_nothing(self):
        fake = FakeTorch()
        with tempfile.TemporaryDirectory() as d, modules(torch=fake.module), quiet():
            with memviz.record(d, on_exit=False) as outer:
                with self.assertWarnsRegex(UserWarning, "already recording"):
                    with memviz.record(d) as inner:
                        pass
                self.assertTrue(outer.active)
                self.assertFalse(inner.active)
            self.assertEqual(len(fake.calls), 2)
            self.assertEqual(files_under(d), [])

    def test_cpu_only_warns_and_does_nothing(self):
        fake = FakeTorch(cuda=False)
        with tempfile.TemporaryDirectory() as d, modules(torch=fake.module):
            with self.assertWarnsRegex(UserWarning, "CUDA is not available"):
                with memviz.record(d, every=1) as rec:
                    self.assertIsNone(memviz.step())
            self.assertFalse(rec.active)
            self.assertEqual((fake.calls, os.listdir(d)), ([], []))

    def test_without_torch_a_clear_error(self):
        with modules(torch=None):  # None in sys.modules: `import torch` raises ImportError
            with self.assertRaisesRegex(memviz.MemvizError, "needs PyTorch"):
                with memviz.record("never"):
                    pass
        self.assertFalse(os.path.exists("never"))


class Integrations(unittest.TestCase):
    def test_lightning_callback(self):
        fake = FakeTorch()
        pl = types.ModuleType("lightning.pytorch")

        class Callback:
            pass

        pl.Callback = Callback
        lightning = types.ModuleType("lightning")
        lightning.pytorch = pl
        with tempfile.TemporaryDirectory() as d, modules(torch=fake.module, lightning=lightning, lightning_pytorch=pl), quiet():
            from memviz import integrations

            integrations._made.clear()
            cb = integrations.LightningCallback(d, every=2)
            self.assertIsInstance(cb, Callback)
            cb.on_fit_start(None, None)
            for i in range(3):
                cb.on_train_batch_end(None, None, None, None, i)
            cb.on_exception(None, None, RuntimeError("x"))
            cb.teardown(None, None, "fit")
            self.assertEqual(files_under(d), ["iteration_2/rank0_memory_snapshot.pickle.gz", "iteration_3_exit/rank0_memory_snapshot.pickle.gz"])
            integrations._made.clear()

    def test_transformers_callback_counts_global_steps(self):
        fake = FakeTorch()
        tf = types.ModuleType("transformers")

        class TrainerCallback:
            pass

        tf.TrainerCallback = TrainerCallback
        with tempfile.TemporaryDirectory() as d, modules(torch=fake.module, transformers=tf), quiet():
            from memviz import integrations

            integrations._made.clear()
            cb = memviz.integrations.TransformersCallback(d, every=10)
            self.assertIsInstance(cb, TrainerCallback)
            state = types.SimpleNamespace(global_step=8)  # resumed at step 8
            cb.on_train_begin(None, state, None)
            for _ in range(3):
                state.global_step += 1
                cb.on_step_end(None, state, None)
            cb.on_train_end(None, state, None)
            self.assertEqual(files_under(d), ["iteration_10/rank0_memory_snapshot.pickle.gz", "iteration_11_exit/rank0_memory_snapshot.pickle.gz"])
            integrations._made.clear()

    def test_missing_framework_is_a_clear_import_error(self):
        with modules(transformers=None, lightning=None, lightning_pytorch=None, pytorch_lightning=None):
            from memviz import integrations

            integrations._made.clear()
            with self.assertRaisesRegex(ImportError, "transformers"):
                integrations.TransformersCallback
            with self.assertRaisesRegex(ImportError, "lightning.pytorch, pytorch_lightning"):
                integrations.LightningCallback


if __name__ == "__main__":
    unittest.main()
