"""Saving and restoring variables with graph ops: `tw.train.Checkpoint` and
`CheckpointManager`.

Saving runs a compiled step whose ``Save`` node reads every variable; restoring runs one
whose ``Restore`` nodes feed ``AssignVariable``. Optimizer slots that do not exist yet
(they are created on the first training step) are restored when they are created.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..compiler.ops.io import encode_path
from ..errors import NotFoundError
from ..runtime import checkpoint_index, checkpoint_io
from .building import apply_op, apply_op1
from .function import TensorSpec, compile
from .optimizers import Optimizer
from .variables import Variable

# slot shared name -> value read from a checkpoint before the slot existed
_pending_slots: dict[str, np.ndarray] = {}


def pending_slot_value(shared_name: str) -> np.ndarray | None:
    """The restored value for a slot variable about to be created, if any."""
    return _pending_slots.pop(shared_name, None)


def _named_variables(prefix: str, obj: Any, out: dict[str, Any]) -> None:
    if isinstance(obj, Variable):
        out[prefix] = obj
    elif isinstance(obj, Optimizer):
        for v in obj.variables():
            out[f"{prefix}/{v.shared_name}"] = v
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            _named_variables(f"{prefix}/{k}", v, out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _named_variables(f"{prefix}/{i}", v, out)
    elif hasattr(obj, "variables"):
        vs = obj.variables() if callable(obj.variables) else obj.variables
        _named_variables(prefix, list(vs), out)
    else:
        raise TypeError(f"cannot checkpoint {type(obj).__name__} at '{prefix}': expected "
                        f"variables, optimizers, or lists/dicts of them")


_PATH_SPEC = [TensorSpec([None], "uint8")]


def _save_function(names: tuple[str, ...], variables: tuple[Variable, ...]) -> Any:
    def save(filename):
        apply_op("Save", [filename] + [v.read_value() for v in variables], {"names": names})
        return ()
    return compile(save, input_signature=_PATH_SPEC, name="save")


def _restore_function(names: tuple[str, ...], variables: tuple[Variable, ...]) -> Any:
    def restore(filename):
        for name, v in zip(names, variables):
            value = apply_op1("Restore", [filename], {"name": name, "dtype": v.dtype,
                                                      "shape": v.shape})
            v.assign(value, read_value=False)
        return ()
    return compile(restore, input_signature=_PATH_SPEC, name="restore")


class Checkpoint:
    """Groups variables, optimizers and containers of them under names, and saves or
    restores them all: ``tw.train.Checkpoint(model=params, optimizer=opt)``."""

    def __init__(self, **objects: Any) -> None:
        if not objects:
            raise ValueError("Checkpoint needs at least one object to track")
        self._objects = objects
        self.save_counter = 0
        self._fns: dict[Any, Any] = {}

    def _variables(self) -> dict[str, Variable]:
        out: dict[str, Variable] = {}
        for k, obj in self._objects.items():
            _named_variables(k, obj, out)
        return out

    def _fn(self, kind: str, named: dict[str, Variable]) -> Any:
        names, vars_ = tuple(named), tuple(named.values())
        key = (kind, names, tuple(map(id, vars_)))
        if key not in self._fns:
            make = _save_function if kind == "save" else _restore_function
            self._fns[key] = make(names, vars_)
        return self._fns[key]

    def write(self, file_prefix: str) -> str:
        """Save every tracked variable to `file_prefix` (no numbering, no index)."""
        self._fn("save", self._variables())(encode_path(file_prefix))
        return file_prefix

    def save(self, file_prefix: str, max_to_keep: int | None = None) -> str:
        """Save as ``{file_prefix}-{n}`` (n counts saves), record it as the latest in the
        directory's index, keep the newest `max_to_keep`; returns the prefix written."""
        self.save_counter += 1
        prefix = self.write(f"{file_prefix}-{self.save_counter}")
        checkpoint_io.record_checkpoint(prefix, max_to_keep)
        return prefix

    def restore(self, save_path: str) -> Checkpoint:
        """Load every tracked variable from checkpoint `save_path`; optimizer slots that
        do not exist yet are restored when the optimizer creates them."""
        if save_path is None:
            raise NotFoundError("no checkpoint to restore (save_path is None)")
        stored = checkpoint_io.read_tensors(save_path)
        named = self._variables()
        present = {k: v for k, v in named.items() if k in stored}
        missing = [k for k in named if k not in stored]
        if missing:
            raise NotFoundError(f"checkpoint '{save_path}' lacks {', '.join(missing[:5])}")
        if present:
            self._fn("restore", present)(encode_path(save_path))
        opt_prefixes = {k: obj for k, obj in self._objects.items() if isinstance(obj, Optimizer)}
        for key, value in stored.items():
            if key in named:
                continue
            head, _, shared = key.partition("/")
            if head in opt_prefixes:
                _pending_slots[shared] = value
        base = os.path.basename(save_path)
        if "-" in base and base.rsplit("-", 1)[1].isdigit():
            self.save_counter = int(base.rsplit("-", 1)[1])
        return self


class CheckpointManager:
    """Numbers checkpoints ``{directory}/{checkpoint_name}-N`` and keeps the newest
    `max_to_keep` (None: all), as TensorFlow's; with `keep_checkpoint_every_n_hours`,
    one checkpoint every that many hours is left on disk when it would be dropped.

    Starting a manager recovers the directory from crashes (`checkpoint_index.recover`:
    orphaned temporaries deleted, a checkpoint whose save was cut off before the index
    listed). Numbering continues after the highest checkpoint in the directory, even
    when the process saves before restoring, and a save never deletes a checkpoint
    numbered after the one it wrote. One manager per directory at a time."""

    def __init__(self, checkpoint: Checkpoint, directory: str, max_to_keep: int | None = 5,
                 keep_checkpoint_every_n_hours: float | None = None,
                 checkpoint_name: str = "ckpt") -> None:
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"expected a positive integer or None for max_to_keep, got "
                             f"{max_to_keep}")
        self.checkpoint = checkpoint
        self.directory = directory
        self.max_to_keep = max_to_keep
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self.checkpoint_name = checkpoint_name
        index = checkpoint_index.recover(directory, checkpoint_name)
        # TensorFlow counts the hours from the manager's creation when nothing was kept yet
        self._last_preserved: float = index.get("last_preserved_timestamp",
                                                checkpoint_index.now())
        self._highest = checkpoint_index.highest_number(directory, checkpoint_name)

    @property
    def latest_checkpoint(self) -> str | None:
        """The prefix of the newest checkpoint, or None."""
        return checkpoint_io.latest_checkpoint(self.directory)

    @property
    def checkpoints(self) -> list[str]:
        """The prefixes of the kept checkpoints, oldest first."""
        index = checkpoint_io.read_index(self.directory)
        return [os.path.join(self.directory, p) for p in index["all"]]

    def save(self, checkpoint_number: int | None = None) -> str:
        """Write the next checkpoint, or number `checkpoint_number`, record it as the
        latest and drop old ones beyond `max_to_keep`; returns its prefix."""
        self.checkpoint.save_counter += 1
        if checkpoint_number is None:
            # after the previous run's checkpoints, whether or not they were restored
            self.checkpoint.save_counter = max(self.checkpoint.save_counter, self._highest + 1)
            checkpoint_number = self.checkpoint.save_counter
        number = int(checkpoint_number)
        prefix = self.checkpoint.write(
            os.path.join(self.directory, f"{self.checkpoint_name}-{number}"))
        _, self._last_preserved = checkpoint_index.record(
            prefix, self.max_to_keep, self.keep_checkpoint_every_n_hours, self._last_preserved)
        self._highest = max(self._highest, number)
        return prefix


def latest_checkpoint(directory: str) -> str | None:
    """The newest checkpoint prefix recorded in `directory` (None if there is none)."""
    return checkpoint_io.latest_checkpoint(directory)
