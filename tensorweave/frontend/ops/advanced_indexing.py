"""Advanced indexing of tensors, NumPy's rules for one index array: ``t[idx]`` and
``t[..., idx, :]`` with an integer tensor, list or array pick slices along that axis
(a Gather; negative indices count from the end), and ``t[mask]`` with a bool tensor,
list or array keeps the slices where the mask is true (a BooleanMask over the axes the
mask covers), as ``tf.experimental.numpy`` does.

Any number of ints, slices, ``None`` and ``...`` may go with the one index array: they are
applied first (one StridedSlice, `array.getitem`), the index array's axes standing as
full slices, and the index array then applies where its axes ended up, which is where
NumPy puts the result's new axes for a single index array (unless ints stand apart from
it, ``t[1, :, idx]``: NumPy then puts the new axes first, and so does this). Two or more
index arrays
(NumPy's broadcasting of index arrays together) are a TypeError pointing to
``tw.gather_nd``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...compiler.dtypes import bool_, int32, int64
from ..building import convert_to_tensor
from ..tensor import EagerTensor, Tensor
from . import array, indexing, math

TensorLike = Any


def _index_value(k: Any) -> Any:
    """An index array as a NumPy array (lists, arrays) or a tensor (tensors, variables)."""
    if isinstance(k, (Tensor, EagerTensor)) or hasattr(k, "_as_tensor"):
        t = convert_to_tensor(k)
        if not (t.dtype.is_integer or t.dtype is bool_):
            raise TypeError(f"tensor indices must be integers or bools (NumPy's advanced "
                            f"indexing), got a {t.dtype.ir_name} index tensor; cast it first")
        return t
    try:
        arr = np.asarray(k)
    except ValueError:
        arr = np.asarray(k, dtype=object)
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # [] indexes nothing, as in NumPy
    if arr.dtype.kind not in "iub":
        raise TypeError(f"tensor indices must be integers or bools (NumPy's advanced "
                        f"indexing), got {arr.dtype} index {k!r}")
    return arr


def _is_bool(index: Any) -> bool:
    return index.dtype is bool_ if not isinstance(index, np.ndarray) else index.dtype == bool


def _axes_consumed(k: Any, index: Any, p: int, i: int) -> int:
    """How many axes of the tensor component `i` of the key indexes (p: the index array)."""
    if i == p:
        return len(index.shape) if _is_bool(index) else 1
    return 0 if k is None or k is Ellipsis else 1


def advanced_getitem(tensor: TensorLike, key: tuple) -> TensorLike:
    """``tensor[key]`` where exactly one entry of `key` is an index array (see the module
    docstring); the other entries are ints, slices, ``None`` or ``...``."""
    tensor = convert_to_tensor(tensor)
    positions = [i for i, k in enumerate(key) if array._is_advanced_index(k)]
    if len(positions) > 1:
        raise TypeError(f"indexing a tensor with {len(positions)} index arrays (NumPy's "
                        f"broadcast advanced indexing) is not supported; index with one "
                        f"array at a time, or use tw.gather_nd with the coordinates")
    (p,) = positions
    index = _index_value(key[p])
    rank = len(tensor.shape)
    consumed = sum(_axes_consumed(k, index, p, i) for i, k in enumerate(key))
    # the index array's axes as full slices, so an ellipsis expands exactly as in NumPy
    width = _axes_consumed(key[p], index, p, p)
    basic = key[:p] + (slice(None),) * width + key[p + 1:]
    if consumed > rank:  # StridedSlice's error: too many indices, naming the user's line
        return array.getitem(tensor, basic)
    axis = 0
    for k in key[:p]:
        if k is Ellipsis:
            axis += rank - consumed
        elif k is None or isinstance(k, slice):
            axis += 1
    base = tensor if all(isinstance(k, slice) and k == slice(None) for k in basic) \
        else array.getitem(tensor, basic)
    if _is_bool(index):
        out, new_axes = indexing.boolean_mask(base, index, axis=axis), 1
    else:
        out = array.gather(base, _wrapped(index, base, axis), axis=axis)
        new_axes = len(index.shape)
    if axis and not _contiguous(key, p):
        # NumPy: ints count as index arrays too, and index arrays apart from each other
        # put the result's new axes first
        out_rank = len(out.shape)
        moved = list(range(axis, axis + new_axes))
        out = array.transpose(out, moved + [d for d in range(out_rank) if d not in moved])
    return out


def _contiguous(key: tuple, p: int) -> bool:
    """Whether the ints of `key` and its index array (at `p`) are next to each other."""
    advanced = [i for i, k in enumerate(key)
                if i == p or not (k is None or k is Ellipsis or isinstance(k, slice))]
    return advanced == list(range(advanced[0], advanced[-1] + 1))


def _wrapped(index: Any, base: Any, axis: int) -> Any:
    """Integer indices with the negative ones counted from the end of `axis` (NumPy),
    as int32 or int64 for Gather; static ones are range-checked now, like NumPy's."""
    dim = base.shape[axis]
    if isinstance(index, np.ndarray):
        if dim is not None:
            bad = index[(index < -dim) | (index >= dim)]
            if bad.size:
                raise IndexError(f"index {int(bad.reshape(-1)[0])} is out of bounds for axis "
                                 f"{axis} with size {dim}")
            return convert_to_tensor(np.where(index < 0, index + dim, index).astype(np.int64))
        index = convert_to_tensor(index.astype(np.int64))
    if index.dtype not in (int32, int64):
        index = math.cast(index, int64 if index.dtype.bits > 32 else int32)
    if index.dtype.kind == "uint":
        return index
    size = dim if dim is not None else math.cast(array.shape(base)[axis], index.dtype)
    # out-of-range indices stay out of range, and Gather names them when the graph runs
    return math.where(math.less(index, 0), index + size, index)
