"""Reading checkpoints outside a Session, as TensorFlow 1's ``tf.train.list_variables``,
``load_variable``, ``load_checkpoint``/``NewCheckpointReader`` and
``init_from_checkpoint`` (warm-starting variables from another model's checkpoint).

Over tensorweave's checkpoint files (`runtime.checkpoint_io`). As in TensorFlow, a
partitioned variable saved as shards is seen whole: it is listed under its full name
with its full shape, and reading it assembles the shards.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ...compiler.dtypes import DType, as_dtype
from ...compiler.ops.io import encode_path
from ...errors import NotFoundError
from ...frontend.building import apply_op1, convert_to_tensor
from ...frontend.context import colocate_with
from ...runtime import checkpoint_io
from .graph import Variable
from .moving_averages import _outside_control_dependencies
from .var_scope import PartitionedVariable, SaveSliceInfo, _state, slice_spec


def _checkpoint_prefix(ckpt_dir_or_file: str) -> str:
    """The checkpoint prefix: the newest one recorded in a directory, else the path."""
    if os.path.isdir(ckpt_dir_or_file):
        prefix = checkpoint_io.latest_checkpoint(ckpt_dir_or_file)
        if prefix is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {ckpt_dir_or_file}")
        return prefix
    return ckpt_dir_or_file


class CheckpointReader:
    """The tensors of one checkpoint (TensorFlow's ``CheckpointReader``): names, shapes,
    dtypes and values. A missing or corrupt checkpoint is an error here, at once."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        if not os.path.exists(checkpoint_io.data_path(prefix)):
            raise NotFoundError(f"Unsuccessful checkpoint reader: no checkpoint '{prefix}' "
                                f"(file '{checkpoint_io.data_path(prefix)}' does not exist)")
        shapes, slices = checkpoint_io._contents(prefix)
        self._whole = {n: tuple(s) for n, s in shapes.items() if n not in slices}
        self._pieces: dict[str, list[str]] = {}  # a partitioned variable -> its shards
        self._full_shape: dict[str, tuple] = {}
        for stored, info in slices.items():
            self._pieces.setdefault(info["full"], []).append(stored)
            self._full_shape[info["full"]] = tuple(info["shape"])

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        """Every tensor's name and shape (partitioned variables whole)."""
        out = {n: list(s) for n, s in self._whole.items()}
        out.update({n: list(s) for n, s in self._full_shape.items()})
        return out

    def get_variable_to_dtype_map(self) -> dict[str, DType]:
        """Every tensor's name and dtype."""
        out = {n: as_dtype(checkpoint_io.read_tensors(self._prefix, [n])[n].dtype)
               for n in self._whole}
        for full, pieces in self._pieces.items():
            out[full] = as_dtype(checkpoint_io.read_tensors(self._prefix,
                                                            [pieces[0]])[pieces[0]].dtype)
        return out

    def has_tensor(self, name: str) -> bool:
        """Whether the checkpoint holds `name`."""
        return name in self._whole or name in self._full_shape

    def get_tensor(self, name: str) -> np.ndarray:
        """The value of tensor `name` (NotFoundError naming what the checkpoint has if
        there is none)."""
        if name in self._whole:
            return checkpoint_io.read_tensors(self._prefix, [name])[name]
        if name in self._full_shape:
            shape = self._full_shape[name]
            first = self._pieces[name][0]
            dtype = checkpoint_io.read_tensors(self._prefix, [first])[first].dtype
            return checkpoint_io.read_slice(self._prefix, name, shape, (0,) * len(shape),
                                            shape, dtype)
        have = sorted(self.get_variable_to_shape_map())
        raise NotFoundError(f"Key {name} not found in checkpoint '{self._prefix}' (it has: "
                            f"{', '.join(have[:10])}{', ...' if len(have) > 10 else ''})")

    def debug_string(self) -> bytes:
        """One ``name (dtype) [shape]`` line per tensor."""
        dtypes = self.get_variable_to_dtype_map()
        return "".join(f"{n} ({dtypes[n].ir_name}) {s}\n" for n, s in
                       sorted(self.get_variable_to_shape_map().items())).encode()


def NewCheckpointReader(filepattern: str) -> CheckpointReader:  # noqa: N802 (TF's name)
    """A `CheckpointReader` of checkpoint prefix `filepattern`."""
    return CheckpointReader(filepattern)


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A reader of the checkpoint: the newest one in a directory, or the prefix given."""
    return CheckpointReader(_checkpoint_prefix(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """``(name, shape)`` of every tensor of the checkpoint, sorted by name."""
    return sorted(load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value of tensor `name` (a trailing ``:0`` is ignored) in the checkpoint."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


# -- init_from_checkpoint ---------------------------------------------------------------------

def _set_initializer(var: Variable, prefix: str, tensor_name: str, spec: str) -> None:
    """Make `var`'s initializer load `tensor_name` (the part `spec` says) from `prefix`."""
    graph = var.graph
    with graph.as_default(), _outside_control_dependencies(), colocate_with(var):
        value = apply_op1("Restore", [convert_to_tensor(encode_path(prefix))],
                          {"name": tensor_name, "dtype": var.dtype, "shape": var.shape,
                           "slice": spec}, name=f"{var.shared_name}/checkpoint_initializer")
        var._initial_value = value
        var.initializer = var.assign(value, read_value=False)


def _set_from_checkpoint(var: Any, prefix: str, tensor_name: str, ckpt_shape: list[int]
                         ) -> None:
    if isinstance(var, PartitionedVariable):
        var = list(var)
    if isinstance(var, list):
        for shard in var:
            info = getattr(shard, "_save_slice_info", None)
            full = tuple(info.full_shape) if info is not None else tuple(shard.shape)
            if list(full) != list(ckpt_shape):
                raise ValueError(f"init_from_checkpoint: shape of partitioned variable "
                                 f"'{info.full_name if info else shard.shared_name}' "
                                 f"{list(full)} doesn't match with shape of tensor "
                                 f"'{tensor_name}' ({list(ckpt_shape)}) from the checkpoint")
            # the shard's part of the checkpoint's tensor (whole or itself partitioned)
            offset = info.var_offset if info is not None else (0,) * len(full)
            _set_initializer(shard, prefix, tensor_name,
                             SaveSliceInfo(tensor_name, full, offset).spec())
        return
    if list(var.shape) != list(ckpt_shape):
        raise ValueError(f"init_from_checkpoint: shape of variable '{var.shared_name}' "
                         f"{list(var.shape)} doesn't match with shape of tensor "
                         f"'{tensor_name}' ({list(ckpt_shape)}) from the checkpoint")
    whole = slice_spec(var, tensor_name)  # (a partitioned tensor of the checkpoint: assembled)
    _set_initializer(var, prefix, tensor_name, whole)


def _is_variable(x: Any) -> bool:
    return isinstance(x, (Variable, PartitionedVariable)) or (
        isinstance(x, list) and bool(x) and all(isinstance(v, Variable) for v in x))


def init_from_checkpoint(ckpt_dir_or_file: str, assignment_map: Any) -> None:
    """Replace the initializers of variables so that they load values from a checkpoint
    (TensorFlow 1's warm start; call it before ``global_variables_initializer()``).

    `assignment_map` maps checkpoint names to current ones: ``{"ckpt/w": var}``,
    ``{"ckpt/w": "model/w"}`` (a `get_variable` name), or whole scopes,
    ``{"old_scope/": "new_scope/"}`` (every `get_variable` variable under
    ``new_scope/`` from the same name under ``old_scope/``; ``"/"`` is the root).
    Names or shapes the checkpoint lacks are a ValueError here."""
    prefix = _checkpoint_prefix(ckpt_dir_or_file)
    variable_map = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    items = assignment_map.items() if hasattr(assignment_map, "items") else assignment_map
    store = _state().store
    for tensor_name, current in sorted(items, key=lambda kv: kv[0]):
        var = current if _is_variable(current) else store.get(current)
        if var is not None:
            if tensor_name not in variable_map:
                raise ValueError(f"init_from_checkpoint: tensor '{tensor_name}' is not found "
                                 f"in checkpoint '{prefix}' (it has: "
                                 f"{', '.join(sorted(variable_map)[:10])})")
            _set_from_checkpoint(var, prefix, tensor_name, variable_map[tensor_name])
            continue
        if not isinstance(current, str):
            raise TypeError(f"init_from_checkpoint: assignment_map['{tensor_name}'] must be a "
                            f"variable, a list of a partitioned variable's shards or a name, "
                            f"got {current!r}")
        if not tensor_name.endswith("/"):
            raise ValueError(f"init_from_checkpoint: '{current}' is not a variable made by "
                             f"get_variable; a scope maps to a scope: 'scope/': "
                             f"'other_scope/' (got '{tensor_name}': '{current}')")
        scope = current[:current.rindex("/")] if "/" in current else ""
        names = sorted(n for n in store if not scope or n.startswith(scope + "/"))
        if not names:
            raise ValueError(f"init_from_checkpoint: no get_variable variables under "
                             f"'{current}'")
        for name in names:
            full = name[len(scope):]
            if current != "/":
                full = full[1:]
            if tensor_name != "/":
                full = tensor_name + full
            full = full.rstrip("/")
            if full not in variable_map:
                raise ValueError(f"init_from_checkpoint: tensor '{full}' ('{name}' in "
                                 f"'{current}') is not found in checkpoint '{prefix}'")
            _set_from_checkpoint(store[name], prefix, full, variable_map[full])


__all__ = ["CheckpointReader", "NewCheckpointReader", "init_from_checkpoint",
           "list_variables", "load_checkpoint", "load_variable"]
