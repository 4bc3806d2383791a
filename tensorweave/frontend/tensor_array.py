"""`tw.TensorArray`: TensorFlow 2's list of same-shaped tensors, functional style.

A TensorArray is a value: ``write`` (and ``unstack``, ``scatter``) return a new array,
as in TensorFlow 2 (``ta = ta.write(i, x)``). It is one tensor, the *buffer* holding the
elements stacked along axis 0 (``[size, *element_shape]``): ``write`` is a
``DynamicUpdateRow``, ``read`` a ``Gather``, ``stack`` the buffer itself. So it goes
through `tw.while_loop`/`tw.scan` bodies as one loop variable (it is a tuple to
`nest`: its class keeps the dtype and element shape), and gradients flow through
writes and reads like through any other op, loops included.

Element shape: given as `element_shape`, or fixed by the first write (or unstack).
While it is unknown the buffer is a scalar placeholder, so an array must learn its
element shape before it enters a traced loop.

`dynamic_size`: a write past the end grows the buffer with zero rows up to the index.
Traced, the buffer's row count is left unknown (so the loop variable may change size),
and the growth is a ``tw.cond`` that appends a row at a time in a ``tw.while_loop``
(once for the usual append at ``size()``).

`clear_after_read` (default True) is enforced eagerly, as TensorFlow does (reading an
element twice raises); traced arrays keep their elements, like TensorFlow 2's.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype, int32
from ..errors import DTypeError, InvalidArgumentError, ShapeError, TracingError
from .building import apply_op1, convert_to_tensor, user_location
from .context import current_builder
from .tensor import EagerTensor


def _array():
    from .ops import array
    return array


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc else None


class TensorArray(tuple):
    """A list of tensors of one dtype and shape, written and read by index
    (TensorFlow's ``tf.TensorArray``); see the module docstring for how it is
    represented. ``TensorArray(dtype, size=None, dynamic_size=None,
    clear_after_read=None, element_shape=None, ...)``."""

    _fields = ("buffer",)  # nest treats it as a namedtuple of one tensor
    _config: tuple = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> TensorArray:
        if cls is not TensorArray:
            # rebuilt by nest.unflatten: the class holds the configuration
            (leaf,) = args
            return tuple.__new__(cls, (leaf,))
        return _create(*args, **kwargs)

    # -- configuration -----------------------------------------------------------------
    @property
    def dtype(self) -> DType:
        """The dtype of the elements."""
        return self._config[0]

    @property
    def element_shape(self) -> tuple | None:
        """The shape of each element, or None while unknown."""
        return self._config[1]

    @property
    def dynamic_size(self) -> bool:
        """Whether writes past the end grow the array."""
        return self._config[2]

    @property
    def _clear_after_read(self) -> bool:
        return self._config[3]

    @property
    def _static_size(self) -> int | None:
        return self._config[4]

    @property
    def buffer(self) -> Any:
        """The elements stacked along axis 0 (a scalar placeholder while the element
        shape is unknown)."""
        leaf = tuple.__getitem__(self, 0)
        return leaf.buffer if isinstance(leaf, _Handle) else leaf

    def _known(self) -> bool:
        return self.element_shape is not None

    def _with(self, buffer: Any, element_shape: tuple | None = None,
              read: set | None = None) -> TensorArray:
        cfg = list(self._config)
        if element_shape is not None:
            cfg[1] = tuple(element_shape)
        if cfg[1] is not None:
            cfg[4] = None  # the buffer's rows say the size from now on
        return _make(tuple(cfg), buffer, read)

    def _eager(self) -> bool:
        return current_builder() is None and isinstance(self.buffer, EagerTensor)

    def _read_set(self) -> set:
        leaf = tuple.__getitem__(self, 0)
        return leaf.read if isinstance(leaf, _Handle) else set()

    # -- queries -----------------------------------------------------------------------
    def size(self, name: str | None = None) -> Any:
        """The number of elements, an int32 scalar tensor."""
        if not self._known():
            return convert_to_tensor(np.int32(self._static_size or 0))
        if self._eager():
            return convert_to_tensor(np.int32(self.buffer.shape[0]))
        return _array().shape(self.buffer)[0]

    def _rows(self) -> int | None:
        """The static number of elements, if known."""
        if not self._known():
            return self._static_size or 0
        return self.buffer.shape[0]

    # -- reading -----------------------------------------------------------------------
    def read(self, index: Any, name: str | None = None) -> Any:
        """The element at `index` (zeros if it was never written)."""
        index = _index(index, "read")
        self._need_shape("read")
        if self._eager():
            k, n = int(index), self.buffer.shape[0]
            if not 0 <= k < n:
                raise InvalidArgumentError(f"TensorArray.read: tried to read from index {k} "
                                           f"but array size is: {n}", location=_where())
            if self._clear_after_read:
                read = self._read_set()
                if k in read:
                    raise InvalidArgumentError(
                        f"TensorArray.read: could not read index {k} twice because it was "
                        f"cleared after a previous read (perhaps try setting "
                        f"clear_after_read=False)", location=_where())
                read.add(k)
        return _array().gather(self.buffer, index, name=name)

    def stack(self, name: str | None = None) -> Any:
        """Every element, stacked along a new axis 0."""
        if not self._known():
            if self._static_size == 0 or self._static_size is None:
                raise ShapeError("TensorArray.stack: the array is empty and its element "
                                 "shape is unknown; pass element_shape", location=_where())
            self._need_shape("stack")
        return _array().identity(self.buffer, name=name)

    def gather(self, indices: Any, name: str | None = None) -> Any:
        """The elements at `indices`, stacked along a new axis 0."""
        self._need_shape("gather")
        indices = convert_to_tensor(indices, dtype_hint=int32)
        return _array().gather(self.buffer, indices, name=name)

    def concat(self, name: str | None = None) -> Any:
        """The elements joined along their axis 0."""
        self._need_shape("concat")
        shape = self.element_shape
        if not shape:
            raise ShapeError("TensorArray.concat: the elements are scalars; use stack",
                             location=_where())
        if None in shape[1:]:
            raise ShapeError(f"TensorArray.concat needs the element shape after axis 0, "
                             f"got {list(shape)}", location=_where())
        return _array().reshape(self.buffer, [-1, *shape[1:]], name=name)

    def _need_shape(self, what: str) -> None:
        if not self._known():
            raise ShapeError(f"TensorArray.{what}: nothing has been written yet and the "
                             f"element shape is unknown; pass element_shape (or write "
                             f"first)", location=_where())

    # -- writing -----------------------------------------------------------------------
    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        """A new array whose element `index` is `value`."""
        index = _index(index, "write")
        value = self._element(value, "write")
        buf, shape = self._buffer_for(value)
        array = _array()
        if self._eager():
            k, n = int(index), buf.shape[0]
            if k < 0 or (k >= n and not self.dynamic_size):
                raise InvalidArgumentError(f"TensorArray.write: tried to write to index {k} "
                                           f"but array size is: {n}", location=_where())
            if k >= n:
                buf = array.concat([buf, array.zeros([k + 1 - n, *shape], dtype=self.dtype)],
                                   0)
            read = set(self._read_set())
            read.discard(k)
            return self._with(apply_op1("DynamicUpdateRow", [buf, index, value], name=name),
                              shape, read)
        if self.dynamic_size:
            from .control_flow import cond, while_loop
            from .ops import math
            row = array.expand_dims(array.zeros_like(value), 0)

            def grow() -> Any:
                # one zero row at a time until index fits (usually once: an append)
                return while_loop(lambda b: math.less_equal(array.shape(b)[0], index),
                                  lambda b: array.concat([b, row], 0), buf,
                                  shape_invariants=[None, *shape])

            buf = cond(math.less(index, array.shape(buf)[0]), lambda: buf, grow)
        return self._with(apply_op1("DynamicUpdateRow", [buf, index, value], name=name), shape)

    def _element(self, value: Any, what: str) -> Any:
        v = convert_to_tensor(value, dtype_hint=self.dtype)
        if v.dtype is not self.dtype:
            raise DTypeError(f"TensorArray.{what}: the array's dtype is {self.dtype.ir_name} but "
                             f"the value is {v.dtype.ir_name}", location=_where())
        if self._known() and not _compatible(tuple(v.shape), self.element_shape):
            raise ShapeError(f"TensorArray.{what}: the value's shape {list(v.shape)} is "
                             f"incompatible with the array's element shape "
                             f"{list(self.element_shape)}", location=_where())
        return v

    def _buffer_for(self, value: Any) -> tuple[Any, tuple]:
        """The buffer to write into (made on the first write) and the element shape."""
        if self._known():
            return self.buffer, self.element_shape
        shape = tuple(value.shape)
        if None in shape:
            raise ShapeError(f"TensorArray: the first element written has shape "
                             f"{list(shape)}; its shape must be static (or pass "
                             f"element_shape)", location=_where())
        if current_builder() is not None and getattr(self.buffer, "value", None) is not None \
                and self.buffer.value.producer is None:
            # the placeholder became a loop (or function) argument: too late to shape it
            raise TracingError("TensorArray: this array entered a loop (or function) before "
                               "its element shape was known; pass element_shape= to "
                               "tw.TensorArray (or write an element before the loop)",
                               location=_where())
        return _empty(self.dtype, self._static_size or 0, shape, self.dynamic_size), shape

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """A new array whose elements are the slices of `value` along axis 0."""
        v = convert_to_tensor(value, dtype_hint=self.dtype)
        if v.dtype is not self.dtype:
            raise DTypeError(f"TensorArray.unstack: the array's dtype is {self.dtype.ir_name} "
                             f"but the value is {v.dtype.ir_name}", location=_where())
        if len(v.shape) < 1:
            raise ShapeError("TensorArray.unstack needs a value of rank >= 1",
                             location=_where())
        shape = tuple(v.shape[1:])
        if self._known() and not _compatible(shape, self.element_shape):
            raise ShapeError(f"TensorArray.unstack: elements of shape {list(shape)} do not "
                             f"fit the element shape {list(self.element_shape)}",
                             location=_where())
        n = self._rows()
        if not self.dynamic_size and n is not None and v.shape[0] is not None and \
                v.shape[0] != n:
            raise ShapeError(f"TensorArray.unstack: the array has size {n}, the value has "
                             f"{v.shape[0]} rows", location=_where())
        buf = _array().identity(v, name=name)
        if self.dynamic_size and current_builder() is not None:
            buf = _unknown_rows(buf)
        return self._with(buf, shape if not self._known() else None)

    def split(self, value: Any, lengths: Any, name: str | None = None) -> TensorArray:
        """A new array whose elements are consecutive pieces of `value` along axis 0, of
        the given `lengths` (TensorFlow's ``TensorArray.split``).

        The array holds elements of one shape, so the `lengths` (static ints) must all be
        equal, and the dims of `value` after axis 0 static; the pieces are then one
        Reshape of `value`, differentiable like the rest. ``concat`` is the inverse."""
        array = _array()
        v = convert_to_tensor(value, dtype_hint=self.dtype)
        if v.dtype is not self.dtype:
            raise DTypeError(f"TensorArray.split: the array's dtype is {self.dtype.ir_name} "
                             f"but the value is {v.dtype.ir_name}", location=_where())
        if len(v.shape) < 1:
            raise ShapeError("TensorArray.split needs a value of rank >= 1",
                             location=_where())
        from .ops.array import _static_ints
        sizes = _static_ints(lengths, "TensorArray.split", "lengths")
        if not sizes or any(k < 0 for k in sizes) or len(set(sizes)) > 1:
            raise ShapeError(f"TensorArray.split: lengths must be one or more equal, "
                             f"non-negative ints (this TensorArray holds elements of one "
                             f"shape), got {list(sizes)}", location=_where())
        n, length = len(sizes), sizes[0]
        rest = tuple(v.shape[1:])
        if None in rest:
            raise ShapeError(f"TensorArray.split needs the value's dims after axis 0 known "
                             f"when the graph is built, got {list(v.shape)}",
                             location=_where())
        if v.shape[0] is not None and v.shape[0] != n * length:
            raise ShapeError(f"TensorArray.split: the lengths sum to {n * length} but the "
                             f"value has {v.shape[0]} rows", location=_where())
        shape = (length, *rest)
        if self._known() and not _compatible(shape, self.element_shape):
            raise ShapeError(f"TensorArray.split: pieces of shape {list(shape)} do not fit "
                             f"the element shape {list(self.element_shape)}",
                             location=_where())
        size = self._rows()
        if not self.dynamic_size and size is not None and size != n:
            raise ShapeError(f"TensorArray.split: the array has size {size}, the value is "
                             f"split into {n} pieces", location=_where())
        # a static target shape: Reshape checks at run time that the rows are n * length
        buf = array.reshape(v, [n, *shape], name=name)
        if self.dynamic_size and current_builder() is not None:
            buf = _unknown_rows(buf)
        return self._with(buf, shape if not self._known() else None)

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        """A new array whose elements ``indices[j]`` are ``value[j]``."""
        indices = convert_to_tensor(indices, dtype_hint=int32)
        v = convert_to_tensor(value, dtype_hint=self.dtype)
        if len(indices.shape) != 1 or indices.shape[0] is None:
            raise ShapeError(f"TensorArray.scatter needs a vector of indices of static "
                             f"length, got {indices.type}", location=_where())
        out = self
        array = _array()
        for j in range(indices.shape[0]):
            out = out.write(array.gather(indices, np.int32(j)), array.gather(v, np.int32(j)))
        return out

    def identity(self) -> TensorArray:
        """This array (TensorArrays are values)."""
        return self

    def mark_used(self) -> None:
        """Nothing to do (TensorFlow 1 checked for unused arrays)."""

    def close(self, name: str | None = None) -> None:
        """Nothing to do: the buffer is freed with its last use."""

    def __repr__(self) -> str:
        shape = "?" if self.element_shape is None else list(self.element_shape)
        return f"<tw.TensorArray dtype={self.dtype.name} element_shape={shape}>"

    def __getitem__(self, key: Any) -> Any:
        raise TypeError("TensorArray elements are read with .read(i), not [i]")


def _compatible(shape: tuple, want: tuple) -> bool:
    return len(shape) == len(want) and all(a is None or b is None or a == b
                                           for a, b in zip(shape, want))


def _index(index: Any, what: str) -> Any:
    t = convert_to_tensor(index, dtype_hint=int32)
    if t.dtype.ir_name not in ("i32", "i64") or tuple(t.shape) != ():
        raise DTypeError(f"TensorArray.{what}: the index must be an integer scalar, got "
                         f"{t.type}", location=_where())
    return t


def _empty(dtype: DType, n: int, shape: tuple, dynamic: bool) -> Any:
    buf = _array().zeros([n, *shape], dtype=dtype)
    if dynamic and current_builder() is not None:
        buf = _unknown_rows(buf)
    return buf


def _unknown_rows(buf: Any) -> Any:
    """`buf` with its row count unknown to shape inference (the value unchanged), so a
    loop may grow it: partition 0 of ``[buf; one more row]`` split as ``[0...0, 1]``."""
    array = _array()
    extra = array.concat([buf, array.expand_dims(array.zeros(buf.shape[1:], dtype=buf.dtype),
                                                 0)], 0)
    n = buf.shape[0]
    parts = np.array([0] * n + [1], dtype=np.int32)
    return array.dynamic_partition(extra, parts, 2)[0]


class _Handle(EagerTensor):
    """The leaf of an eager array: a scalar whose shape never changes (eager loops check
    loop variables' shapes) carrying the buffer, whatever size it grows to, and the
    indices read so far (for clear_after_read)."""

    __slots__ = ("buffer", "read")

    def __init__(self, buffer: EagerTensor, read: set) -> None:
        super().__init__(np.int32(0))
        self.buffer = buffer
        self.read = read


def _make(config: tuple, buffer: Any, read: set | None = None) -> TensorArray:
    """An array of `config` holding `buffer`: traced, the buffer is its one leaf (a loop
    variable); eagerly, a `_Handle` of it is."""
    if current_builder() is None and isinstance(buffer, EagerTensor):
        return _class(config)(_Handle(buffer, set() if read is None else read))
    return _class(config)(buffer)


@functools.cache
def _class(config: tuple) -> type:
    """The TensorArray subclass for one configuration (dtype, element shape, dynamic
    size, clear after read, size while the element shape is unknown)."""
    return type("TensorArray", (TensorArray,), {"_config": config, "__slots__": ()})


def _create(dtype: Any, size: Any = None, dynamic_size: bool | None = None,
            clear_after_read: bool | None = None, tensor_array_name: str | None = None,
            handle: Any = None, flow: Any = None, infer_shape: bool = True,
            element_shape: Any = None, colocate_with_first_write_call: bool = True,
            name: str | None = None) -> TensorArray:
    del tensor_array_name, handle, flow, infer_shape, colocate_with_first_write_call, name
    dtype = as_dtype(dtype)
    dynamic = bool(dynamic_size)
    if size is None:
        if not dynamic:
            raise ShapeError("tw.TensorArray needs a size unless dynamic_size=True",
                             location=_where())
        size = 0
    n = _static_size(size)
    shape = None
    if element_shape is not None:
        shape = tuple(None if d in (None, -1) else int(d) for d in element_shape)
        if None in shape:
            shape = None  # fixed by the first write
    clear = True if clear_after_read is None else bool(clear_after_read)
    config = (dtype, shape, dynamic, clear, n)
    if shape is None:
        return _make(config, convert_to_tensor(np.zeros((), dtype.np)))
    return _make(config, _empty(dtype, n, shape, dynamic))


def _static_size(size: Any) -> int:
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        n = int(size)
    elif isinstance(size, (EagerTensor, np.ndarray)) and np.ndim(size) == 0:
        n = int(size)
    else:
        from .ops.array import _const_array
        arr = _const_array(size)
        if arr is None or arr.ndim != 0:
            raise DTypeError(f"tw.TensorArray: size must be a static int (a Python int or a "
                             f"constant), got {size!r}", location=_where())
        n = int(arr)
    if n < 0:
        raise ShapeError(f"tw.TensorArray: size must be >= 0, got {n}", location=_where())
    return n


__all__ = ["TensorArray"]
