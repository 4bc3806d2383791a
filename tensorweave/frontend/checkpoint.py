"""Saving and restoring variables with graph ops: `tw.train.Checkpoint` and
`CheckpointManager`.

Saving runs a compiled step whose ``Save`` node reads every variable; restoring runs one
whose ``Restore`` nodes feed ``AssignVariable``. Values are stored by object path (the
format stays the project's safetensors file, no pickle). Optimizer slots that do not
exist yet (they are created on the first training step) are restored when they are
created.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ..compiler.dtypes import as_dtype
from ..compiler.ops.io import encode_path
from ..errors import NotFoundError
from ..runtime import checkpoint_index, checkpoint_io
from .building import apply_op, apply_op1
from .function import TensorSpec, compile
from .module import Module, module_attributes
from .ops.random import Generator
from .optimizers import Optimizer
from .variables import Variable

# slot shared name -> value read from a checkpoint before the slot existed
_pending_slots: dict[str, np.ndarray] = {}
# id(optimizer) -> the names it has in `_pending_slots` (a later restore replaces them)
_pended_by: dict[int, set[str]] = {}


def pending_slot_value(shared_name: str) -> np.ndarray | None:
    """The restored value for a slot variable about to be created, if any."""
    return _pending_slots.pop(shared_name, None)


def _is_trackable(value: Any) -> bool:
    """Whether a value inside a module holds checkpointable state."""
    if isinstance(value, (Variable, Optimizer, Module, Generator)):
        return True
    if isinstance(value, Mapping):
        return any(_is_trackable(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_is_trackable(v) for v in value)
    return False


def _named_variables(prefix: str, obj: Any, out: dict[str, Any],
                     optimizers: dict[str, Optimizer] | None = None,
                     modules_seen: set[int] | None = None) -> None:
    """Fill `out` with ``object path -> variable`` for `obj` (a variable, optimizer,
    module, or a list/dict of them); optimizers are collected in `optimizers` (their
    state is named after the paths of the variables it belongs to, see `Checkpoint`)."""
    modules_seen = set() if modules_seen is None else modules_seen
    if isinstance(obj, Variable):
        _claim(out, prefix, obj)
    elif isinstance(obj, Generator):
        _claim(out, f"{prefix}/state", obj.state)
    elif isinstance(obj, Optimizer):
        if optimizers is None:
            for v in obj.variables():
                out[f"{prefix}/{v.shared_name}"] = v
        else:
            optimizers[prefix] = obj
    elif isinstance(obj, Module):
        if id(obj) in modules_seen:  # a module reachable twice is saved once
            return
        modules_seen.add(id(obj))
        for key, value in module_attributes(obj):
            if _is_trackable(value):
                _named_variables(f"{prefix}/{key}", value, out, optimizers, modules_seen)
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            _named_variables(f"{prefix}/{k}", v, out, optimizers, modules_seen)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _named_variables(f"{prefix}/{i}", v, out, optimizers, modules_seen)
    elif hasattr(obj, "variables"):
        vs = obj.variables() if callable(obj.variables) else obj.variables
        _named_variables(prefix, list(vs), out, optimizers, modules_seen)
    else:
        raise TypeError(f"cannot checkpoint {type(obj).__name__} at '{prefix}': expected "
                        f"variables, optimizers, tw.Modules, random Generators, or "
                        f"lists/dicts of them")


def _claim(out: dict[str, Variable], path: str, var: Variable) -> None:
    """Name `var` `path` in `out`; the same variable reached again keeps its name, and
    another variable at a taken path is an error (one of them would not be saved)."""
    taken = out.setdefault(path, var)
    if taken is not var:
        raise ValueError(f"cannot checkpoint two variables ({taken.name} and {var.name}) "
                         f"at the same path '{path}': a dict key with a '/' in it, or "
                         f"keys that print alike (0 and '0'), name two objects alike")


def _optimizer_state(key: str, opt: Optimizer, paths: dict[int, str]) -> dict[str, Variable]:
    """The checkpoint names of an optimizer's state: ``key/<variable path>/<slot>`` for
    the slots of variables tracked elsewhere in the checkpoint (so they restore into
    fresh objects of the same structure), ``key/<slot variable's runtime name>`` for
    others, and ``key/iterations`` (and other per-optimizer state) by name."""
    out: dict[str, Variable] = {}
    for shared, slots in opt._slots.items():
        owner = opt._slot_owner.get(shared)
        path = paths.get(id(owner)) if owner is not None else None
        for slot_name, slot in slots.items():
            out[f"{key}/{path}/{slot_name}" if path else f"{key}/{slot.shared_name}"] = slot
    for name, var in opt._non_slot.items():
        out[f"{key}/{name}"] = var
    if opt._iterations is not None:
        out[f"{key}/iterations"] = opt._iterations
    return out


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
    """Groups variables, optimizers, `tw.Module`s and containers of them under names, and
    saves or restores them all: ``tw.train.Checkpoint(model=module, optimizer=opt)``.

    Every variable is stored under its *object path*: the keyword, then attribute names,
    list indices and dict keys (``model/layers/0/kernel``); an optimizer's slots under
    the optimizer's keyword and the path of their variable (``optimizer/model/layers/0/
    kernel/m``), its step counter as ``optimizer/iterations``. So a checkpoint restores
    into newly built objects of the same structure; optimizer state that does not exist
    yet (before the first training step) is restored when the optimizer creates it."""

    def __init__(self, **objects: Any) -> None:
        if not objects:
            raise ValueError("Checkpoint needs at least one object to track")
        self._objects = objects
        self.save_counter = 0
        self._fns: dict[Any, Any] = {}

    def _tracked(self) -> tuple[dict[str, Variable], dict[str, Optimizer]]:
        """The variables of the tracked objects by path, and the optimizers by key."""
        out: dict[str, Variable] = {}
        optimizers: dict[str, Optimizer] = {}
        for k, obj in self._objects.items():
            _named_variables(k, obj, out, optimizers)
        return out, optimizers

    def _variables(self) -> dict[str, Variable]:
        out, optimizers = self._tracked()
        paths = {id(v): k for k, v in out.items()}
        for key, opt in optimizers.items():
            for path, var in _optimizer_state(key, opt, paths).items():
                _claim(out, path, var)
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

    def restore(self, save_path: str) -> CheckpointLoadStatus:
        """Load every tracked variable from checkpoint `save_path`; optimizer state that
        does not exist yet is restored when the optimizer creates it (what an earlier
        restore left pending is dropped: the last restore decides). A variable the
        checkpoint lacks, or whose stored shape or dtype differs, is an error naming its
        path, raised before anything is assigned. Returns a status whose
        `assert_consumed` checks that every stored value found its object."""
        if save_path is None:
            raise NotFoundError("no checkpoint to restore (save_path is None)")
        stored = checkpoint_io.read_tensors(save_path)
        named = self._variables()
        missing = [k for k in named if k not in stored]
        if missing:
            more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
            raise NotFoundError(f"checkpoint '{save_path}' lacks {', '.join(missing[:5])}"
                                f"{more}: the objects being restored have variables the "
                                f"saved ones did not")
        for k, v in named.items():
            _check_compatible(save_path, k, v, stored[k])
        waiting: dict[str, list[_WaitingSlot]] = {}  # slots of variables not made yet
        deferred = self._defer_optimizer_state(stored, named, waiting)
        if named:
            self._fn("restore", named)(encode_path(save_path))
        base = os.path.basename(save_path)
        if "-" in base and base.rsplit("-", 1)[1].isdigit():
            self.save_counter = int(base.rsplit("-", 1)[1])
        unused = [k for k in stored if k not in named and k not in deferred]
        landed: set[str] = set()
        self._defer_module_variables(save_path, unused, landed, waiting)
        return CheckpointLoadStatus(save_path, unused, landed)

    def _defer_module_variables(self, save_path: str, keys: list[str], landed: set[str],
                                waiting: dict[str, list[_WaitingSlot]]) -> None:
        """Hand each stored value that no variable took (`keys`) to the deepest tracked
        module on its path, to be read and assigned when the module makes the variable
        (`restore_on_attach`), with the optimizer slots `waiting` for that variable; what
        an earlier restore left with these modules is dropped. Only names are kept, not
        values: a bigger model's checkpoint restored into part of it (most of its values
        never used) holds no memory."""
        modules: dict[str, Module] = {}
        for key, obj in self._objects.items():
            _modules_by_path(key, obj, modules, set())
        for module in modules.values():
            module.__dict__.pop(PENDING_ATTR, None)
        by_length = sorted(modules, key=len, reverse=True)
        for key in keys:
            owner = next((p for p in by_length if key.startswith(p + "/")), None)
            if owner is not None:
                pending = modules[owner].__dict__.setdefault(PENDING_ATTR, {})
                pending[key[len(owner) + 1:]] = _Pending(save_path, key, landed,
                                                         waiting.get(key, []))

    def _defer_optimizer_state(self, stored: dict[str, np.ndarray],
                               named: dict[str, Variable],
                               waiting: dict[str, list[_WaitingSlot]]) -> set[str]:
        """Hand stored optimizer state that has no variable yet to its optimizer, to be
        assigned when created; returns the keys handed over. Slots of a variable the
        checkpoint holds and the objects lack (a module makes it later) go to `waiting`,
        by the variable's path."""
        tracked, optimizers = self._tracked()
        taken: set[str] = set()
        for key, opt in optimizers.items():
            # what an earlier restore left pending is replaced: restoring a checkpoint
            # without this state (saved before the first step) must not let the first
            # restore's moments and step count land on the second's weights
            opt._deferred_slots.clear()
            opt._deferred_non_slot.clear()
            for name in _pended_by.pop(id(opt), ()):
                _pending_slots.pop(name, None)
            slot_of = {f"{key}/{path}/": var for path, var in tracked.items()}
            for name, value in stored.items():
                if name in named or not name.startswith(f"{key}/"):
                    continue
                rest = name[len(key) + 1:]
                head, _, slot = name.rpartition("/")
                var = slot_of.get(head + "/")
                if var is not None:
                    opt._deferred_slots[(var.shared_name, slot)] = value
                elif "/" not in rest:  # iterations, u_product...
                    opt._deferred_non_slot[rest] = value
                elif head[len(key) + 1:] in stored:
                    # a slot named by the object path of a variable the checkpoint holds
                    # and the objects being restored lack: handed to the optimizer if a
                    # module makes that variable later (`restore_on_attach`), else unused
                    # as the variable is (never pended by name: no slot is made under it)
                    waiting.setdefault(head[len(key) + 1:], []).append(
                        _WaitingSlot(opt, slot, name))
                    continue
                else:  # a slot stored under its runtime name (variables not tracked)
                    _pending_slots[rest] = value
                    _pended_by.setdefault(id(opt), set()).add(rest)
                taken.add(name)
        return taken


PENDING_ATTR = "_tw_pending_restore"  # module attribute: relative path -> _Pending


class _WaitingSlot(NamedTuple):
    """A stored optimizer slot of a variable that a module has not made yet."""

    optimizer: Optimizer
    slot: str
    key: str  # its name in the checkpoint


class _Pending(NamedTuple):
    """A stored value waiting for the variable a module has not made yet."""

    save_path: str
    key: str           # its name in the checkpoint (read when the variable is made)
    landed: set[str]   # the restore's status: keys assigned since
    slots: list[_WaitingSlot]  # its optimizer state, handed over when it is made


def _modules_by_path(prefix: str, obj: Any, out: dict[str, Module], seen: set[int]) -> None:
    """Fill `out` with ``object path -> module`` for the modules reachable from `obj`
    (first path wins, as in `_named_variables`)."""
    if isinstance(obj, Module):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        out[prefix] = obj
        for key, value in module_attributes(obj):
            _modules_by_path(f"{prefix}/{key}", value, out, seen)
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            _modules_by_path(f"{prefix}/{k}", v, out, seen)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _modules_by_path(f"{prefix}/{i}", v, out, seen)


def _outer_modules(prefix: str, obj: Any, out: dict[str, Module]) -> None:
    """The modules in `obj` (itself, or in its lists and dicts), not those inside them."""
    if isinstance(obj, Module):
        out.setdefault(prefix, obj)
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            _outer_modules(f"{prefix}/{k}", v, out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _outer_modules(f"{prefix}/{i}", v, out)


def restore_on_attach(module: Module, name: str, value: Any) -> None:
    """`module.name = value` was just set on a module holding values of a restore that
    its variables did not exist for: assign those of the variables `value` brings (a
    shape or dtype unlike the stored one is an error naming it), and hand the rest for
    submodules in `value` down to them."""
    pending: dict[str, _Pending] = module.__dict__.get(PENDING_ATTR) or {}
    if not pending or not _is_trackable(value):
        return
    found: dict[str, Any] = {}
    try:
        _named_variables(name, value, found, {})
    except TypeError:
        return  # not checkpointable: saving it is the error
    for path, var in found.items():
        wait = pending.get(path)
        if wait is not None:
            # (a checkpoint deleted since the restore is a NotFoundError here)
            values = checkpoint_io.read_tensors(
                wait.save_path, [wait.key] + [slot.key for slot in wait.slots])
            _check_compatible(wait.save_path, wait.key, var, values[wait.key])
            var._state.assign(values[wait.key])
            wait.landed.add(wait.key)
            for slot in wait.slots:  # created by the optimizer's next step
                slot.optimizer._deferred_slots[(var.shared_name, slot.slot)] = \
                    values[slot.key]
                wait.landed.add(slot.key)
            del pending[path]
    subs: dict[str, Module] = {}
    _outer_modules(name, value, subs)
    for prefix, sub in subs.items():
        inner = {k[len(prefix) + 1:]: pending.pop(k) for k in list(pending)
                 if k.startswith(prefix + "/")}
        if inner:
            sub.__dict__.setdefault(PENDING_ATTR, {}).update(inner)
            for key, attr in module_attributes(sub):
                restore_on_attach(sub, key, attr)
    if not pending:
        module.__dict__.pop(PENDING_ATTR, None)


def _check_compatible(save_path: str, key: str, var: Variable, value: np.ndarray) -> None:
    want_shape = tuple(var.shape)
    shape_ok = len(want_shape) == value.ndim and all(
        d is None or d == n for d, n in zip(want_shape, value.shape))
    if not shape_ok or value.dtype != var.dtype.np:
        want = f"{var.dtype.ir_name}{[d for d in want_shape]}"
        raise ValueError(f"checkpoint '{save_path}' holds {key} as "
                         f"{as_dtype(value.dtype).ir_name}{list(value.shape)}, the variable "
                         f"being restored ({var.name}) is {want}")


class CheckpointLoadStatus:
    """What `Checkpoint.restore` did: `assert_consumed` raises if some stored values
    matched no object (a checkpoint of a bigger model); `expect_partial` silences that."""

    def __init__(self, save_path: str, unused: list[str],
                 landed: set[str] | None = None) -> None:
        self.save_path = save_path
        self._unused = unused
        self._landed = landed if landed is not None else set()

    @property
    def unused(self) -> list[str]:
        """The stored values no object took (yet: a variable a module makes later takes
        its value then)."""
        return [k for k in self._unused if k not in self._landed]

    def assert_consumed(self) -> CheckpointLoadStatus:
        """Raise `AssertionError` naming the stored values no object took."""
        unused = self.unused
        if unused:
            more = f" (and {len(unused) - 5} more)" if len(unused) > 5 else ""
            raise AssertionError(f"checkpoint '{self.save_path}' has values no tracked "
                                 f"object took: {', '.join(unused[:5])}{more}")
        return self

    def assert_existing_objects_matched(self) -> CheckpointLoadStatus:
        """Every existing tracked variable was restored (always true once `restore`
        returned: a missing one is an error there)."""
        return self

    def expect_partial(self) -> CheckpointLoadStatus:
        """Accept a partial restore (nothing to silence: restore warns about nothing)."""
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
