"""Training-framework callbacks over :func:`memviz.record`: PyTorch Lightning and Hugging Face
``transformers``. Each framework is imported only when its callback is first asked for, so
memviz depends on neither.

::

    from memviz.integrations import LightningCallback
    trainer = lightning.Trainer(callbacks=[LightningCallback("memory_snapshots", every=100)])

    from memviz.integrations import TransformersCallback
    trainer = transformers.Trainer(..., callbacks=[TransformersCallback("memory_snapshots", every=100)])

Both take :func:`memviz.record`'s arguments, start recording when training starts (on every
rank, once the process group is up), count optimizer steps (Lightning: training batches;
``transformers``: the trainer's ``global_step``) and write the exit snapshot when training ends
or fails.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, Optional

from .recording import Recorder, record

__all__ = ["LightningCallback", "TransformersCallback", "lightning_callback", "transformers_callback"]

_made: Dict[str, type] = {}


def _first_module(names: tuple) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f"memviz.integrations needs one of: {', '.join(names)}")


class _RecordingCallback:
    """What both callbacks share: a :class:`Recorder` started and stopped by the framework."""

    def __init__(self, path: Any = "memory_snapshots", **record_kwargs: Any) -> None:
        super().__init__()
        self.recorder: Recorder = record(path, **record_kwargs)
        self._entered = False

    def _start(self) -> None:
        if not self._entered:
            self.recorder.__enter__()
            self._entered = True

    def _stop(self, error: Optional[BaseException] = None) -> None:
        if self._entered:
            self._entered = False
            self.recorder.__exit__(type(error) if error is not None else None, error, None)


def lightning_callback(module: Optional[str] = None) -> type:
    """The Lightning callback class, a subclass of ``lightning.pytorch.Callback`` (else
    ``pytorch_lightning.Callback``; ``module`` names the one your Trainer comes from)."""
    names = (module,) if module else ("lightning.pytorch", "pytorch_lightning")
    pl = _first_module(names)
    key = f"lightning:{pl.__name__}"
    if key not in _made:

        class LightningCallback(_RecordingCallback, pl.Callback):  # type: ignore[misc, name-defined]
            """Records memory during ``fit``: :func:`memviz.record`'s arguments."""

            def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
                self._start()

            def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
                self.recorder.step()

            def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
                self._stop()

            def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
                self._stop(exception)

            def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
                self._stop()

        _made[key] = LightningCallback
    return _made[key]


def transformers_callback() -> type:
    """The ``transformers`` callback class, a subclass of ``transformers.TrainerCallback``."""
    if "transformers" not in _made:
        tf = _first_module(("transformers",))

        class TransformersCallback(_RecordingCallback, tf.TrainerCallback):  # type: ignore[misc, name-defined]
            """Records memory during ``Trainer.train``: :func:`memviz.record`'s arguments. Steps
            are the trainer's ``global_step``, so a resumed run keeps its iteration numbers."""

            def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                self._start()
                self.recorder.iteration = int(getattr(state, "global_step", 0) or 0)

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                self.recorder.step(getattr(state, "global_step", None))

            def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                self._stop()

        _made["transformers"] = TransformersCallback
    return _made["transformers"]


def __getattr__(name: str) -> Any:
    # The classes are made on first use, importing their framework then.
    if name == "LightningCallback":
        return lightning_callback()
    if name == "TransformersCallback":
        return transformers_callback()
    raise AttributeError(name)
