"""Tensors as users see them: `Tensor` (symbolic, inside a graph) and `EagerTensor`
(a computed value, outside any graph). Both support Python's operators.

``==`` and ``!=`` are elementwise (`tw.equal`, `tw.not_equal`), as in TensorFlow 2, JAX
and NumPy, between tensors as against numbers and arrays; comparing with None gives
False (``!=``: True). Hashing stays by identity, so tensors still work as ``feed_dict``
keys; to find a tensor in a set, a dict or a list, use ``t.ref()`` (a `Reference`, equal
only to references to the same tensor) rather than the tensor itself: ``t in tensors``
compares elementwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype, string_array
from ..compiler.ir import Node, Value
from ..compiler.types import TensorType, format_shape
from ..errors import TracingError
from .tensor_shape import TensorShape, UnknownRankError, from_static
from .tensor_shape import as_shape as as_static_shape


def _math():
    from .ops import math
    return math


def _op_name(tensor, operator: str) -> str | None:
    # TensorFlow 1's name of the operator's op in a v1 graph (``x + y`` is ``add``)
    from .tf1_names import operator_name
    return operator_name(tensor, operator)


def _bitwise():
    from .ops import bitwise
    return bitwise


def _array():
    from .ops import array
    return array


def _comparable(o) -> bool:
    """Whether ``tensor == o`` is an elementwise comparison: `o` is a tensor-like object, a
    Python number, a NumPy value, or a list/tuple of numbers."""
    return (isinstance(o, (TensorOps, bool, int, float, np.ndarray, np.generic, list, tuple))
            or hasattr(o, "_as_tensor"))


class Reference:
    """A hashable stand-in for a tensor or variable (``x.ref()``), compared by identity:
    what tensors themselves were before ``==`` became elementwise."""

    __slots__ = ("_obj",)

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def deref(self) -> Any:
        """The tensor or variable this refers to."""
        return self._obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reference) and other._obj is self._obj

    def __hash__(self) -> int:
        return id(self._obj)

    def __repr__(self) -> str:
        return f"<Reference to {self._obj!r}>"


class TensorOps:
    """Python operators shared by every tensor-like class."""

    __slots__ = ()
    __array_priority__ = 100  # numpy defers to our reflected operators

    def __add__(self, o): return _math().add(self, o, name=_op_name(self, "add"))
    def __radd__(self, o): return _math().add(o, self, name=_op_name(self, "add"))
    def __sub__(self, o): return _math().subtract(self, o, name=_op_name(self, "sub"))
    def __rsub__(self, o): return _math().subtract(o, self, name=_op_name(self, "sub"))
    def __mul__(self, o): return _math().multiply(self, o, name=_op_name(self, "mul"))
    def __rmul__(self, o): return _math().multiply(o, self, name=_op_name(self, "mul"))
    def __truediv__(self, o): return _math().divide(self, o, name=_op_name(self, "truediv"))
    def __rtruediv__(self, o): return _math().divide(o, self, name=_op_name(self, "truediv"))
    def __floordiv__(self, o): return _math().floordiv(self, o, name=_op_name(self, "floordiv"))
    def __rfloordiv__(self, o): return _math().floordiv(o, self, name=_op_name(self, "floordiv"))
    def __mod__(self, o): return _math().floormod(self, o, name=_op_name(self, "mod"))
    def __rmod__(self, o): return _math().floormod(o, self, name=_op_name(self, "mod"))
    def __pow__(self, o): return _math().pow(self, o, name=_op_name(self, "pow"))
    def __rpow__(self, o): return _math().pow(o, self, name=_op_name(self, "pow"))
    def __matmul__(self, o): return _math().matmul(self, o, name=_op_name(self, "matmul"))
    def __rmatmul__(self, o): return _math().matmul(o, self, name=_op_name(self, "matmul"))
    def __neg__(self): return _math().negative(self)
    def __pos__(self): return self
    def __abs__(self): return _math().abs(self)
    def __lt__(self, o): return _math().less(self, o)
    def __le__(self, o): return _math().less_equal(self, o)
    def __gt__(self, o): return _math().greater(self, o)
    def __ge__(self, o): return _math().greater_equal(self, o)
    # bitwise on integers, logical on bools (TensorFlow's operators)
    def __and__(self, o): return _bitwise().and_operator(self, o)
    def __rand__(self, o): return _bitwise().and_operator(o, self)
    def __or__(self, o): return _bitwise().or_operator(self, o)
    def __ror__(self, o): return _bitwise().or_operator(o, self)
    def __xor__(self, o): return _bitwise().xor_operator(self, o)
    def __rxor__(self, o): return _bitwise().xor_operator(o, self)
    def __invert__(self): return _bitwise().invert_operator(self)
    def __lshift__(self, o): return _bitwise().left_shift(self, o)
    def __rlshift__(self, o): return _bitwise().left_shift(o, self)
    def __rshift__(self, o): return _bitwise().right_shift(self, o)
    def __rrshift__(self, o): return _bitwise().right_shift(o, self)
    def __getitem__(self, key): return _array().getitem(self, key)

    def __eq__(self, o):
        # Elementwise, as in TensorFlow 2: identity here made `p == l` a Python False that
        # tw.cast turned into a wrong answer. None is never equal (TensorFlow's rule, and
        # what `x == None` checks mean); other objects are left to Python (identity).
        if o is None:
            return False
        if not _comparable(o):
            return NotImplemented
        return _math().equal(self, o)

    def __ne__(self, o):
        if o is None:
            return True
        if not _comparable(o):
            return NotImplemented
        return _math().not_equal(self, o)

    # By identity, as TensorFlow's, so that feed_dict keys work. Containers that compare
    # keys (`in` on a list, a hash collision in a dict) need `ref()`.
    __hash__ = object.__hash__

    def ref(self) -> Reference:
        """A hashable reference to this tensor, equal only to references to the same
        object: use it as a set member or dict key (``t.ref().deref() is t``)."""
        return Reference(self)

    def experimental_ref(self) -> Reference:
        """The old name of `ref` (TensorFlow 2.0 to 2.2)."""
        return self.ref()

    @property
    def T(self):
        """The transpose (reverses all axes)."""
        return _array().transpose(self)


class Tensor(TensorOps):
    """A symbolic tensor: one output of a node in the graph being built."""

    __slots__ = ("value", "builder", "__weakref__")

    def __init__(self, value: Value, builder: Any) -> None:
        self.value = value
        self.builder = builder

    @property
    def type(self) -> TensorType:
        return self.value.type

    @property
    def dtype(self) -> DType:
        return self.value.type.dtype

    @property
    def shape(self) -> TensorShape:
        """Static shape: a `TensorShape` (a tuple of ints, with None for dims unknown until
        run time, with TensorFlow's ``as_list()``, ``ndims`` ...)."""
        return from_static(self.value.type.shape)

    def get_shape(self) -> TensorShape:
        """The static shape (TensorFlow 1's spelling of `shape`)."""
        return self.shape

    def set_shape(self, shape: Any) -> None:
        """TensorFlow's ``set_shape``: check that `shape` is compatible with the static
        shape (ValueError if not). A graph's types are fixed once ops read them, so a
        shape that knows more is taken only by a tensor nothing reads yet: a
        placeholder, or a tensor of unknown rank (a v1 graph's, computed from a
        placeholder made without a shape: when a Session specializes the graph to the
        values fed, the shape inferred must agree with it, else the run is an error
        naming the op); other tensors say so (a ``tf.py_func`` output takes its first
        shape this way)."""
        given, current = as_static_shape(shape), self.shape
        if not current.is_compatible_with(given):
            # TensorFlow's words (its shape inference's merge)
            if given.rank != current.rank:
                raise ValueError(f"Shapes must be equal rank, but are {current.rank} and "
                                 f"{given.rank}")
            i, a, b = next((i, a, b) for i, (a, b) in enumerate(zip(current, given))
                           if a is not None and b is not None and a != b)
            raise ValueError(f"Dimension {i} in both shapes must be equal, but are {a} and "
                             f"{b}. Shapes are {format_shape(current)} and "
                             f"{format_shape(given)}.")
        merged = current.merge_with(given)
        if merged == current:
            return
        node = self.value.producer
        unread = node is not None and not node.graph.consumers().get(self.value)
        if unread and (node.op == "Placeholder" or current.rank is None):
            if node.op == "Placeholder":
                node.attrs["shape"] = None if merged.rank is None else tuple(merged)
            self.value.type = TensorType(self.dtype, merged)
            return
        from .building import user_location
        loc = user_location()
        raise TracingError(f"set_shape({list(given)}) would narrow the static shape of "
                           f"{self._where()} to {merged}; tensorweave fixes an op's output "
                           f"types when the op is built: give the shape where the tensor "
                           f"is made (a placeholder's shape, before it is used)",
                           location=str(loc) if loc else None)

    @property
    def ndim(self) -> int:
        """The rank; an `UnknownRankError` (a ValueError) for a tensor of unknown rank
        (TensorFlow gives None, which arithmetic on ranks would take for a number)."""
        shape = self.shape
        if shape.rank is None:
            raise UnknownRankError(f"the rank of {self._where()} is unknown (a "
                                   f"tf.placeholder made without a shape, or computed from "
                                   f"one)")
        return len(shape)

    @property
    def name(self) -> str:
        return self.value.name if self.value.producer is None or len(
            self.value.producer.outputs) > 1 else f"{self.value.name}:0"

    @property
    def op(self) -> Node | None:
        """The node that produces this tensor (None for a function argument)."""
        return self.value.producer

    @property
    def graph(self):
        return self.value.graph

    def _where(self) -> str:
        node = self.value.producer
        loc = f" created at {node.loc}" if node is not None and node.loc else ""
        return f"tensor '{self.value.name}' ({self.type}){loc}"

    def __bool__(self) -> bool:
        from .building import user_location
        loc = user_location()
        raise TracingError(
            f"using {self._where()} as a Python bool is not allowed while tracing: its value "
            f"is unknown until the graph runs. Use tw.cond(pred, true_fn, false_fn) for "
            f"branches and tw.while_loop(cond, body, loop_vars) for loops",
            location=str(loc) if loc else None)

    def __iter__(self):
        raise TracingError(f"iterating over {self._where()} is not supported while tracing; "
                           f"use tw.unstack, tw.split or tw.while_loop")

    def __len__(self) -> int:
        if self.shape and self.shape[0] is not None:
            return self.shape[0]
        raise TracingError(f"len() of {self._where()} is unknown while tracing; "
                           f"use tw.shape(x)[0]")

    def __index__(self) -> int:
        raise TracingError(f"{self._where()} cannot be used as a Python int while tracing")

    def __array__(self, dtype=None, copy=None):
        raise TracingError(f"{self._where()} is symbolic and has no NumPy value while "
                           f"tracing; return it from the compiled function to get its value")

    def __repr__(self) -> str:
        return f"<tw.Tensor '{self.name}' shape={format_shape(self.shape)} dtype={self.dtype.tf_name}>"


class EagerTensor(TensorOps):
    """A concrete tensor computed outside any graph (eager execution)."""

    __slots__ = ("_array", "__weakref__")

    def __init__(self, array: np.ndarray) -> None:
        arr = np.asarray(array)
        if arr.dtype.kind in "OSU":
            arr = string_array(arr)  # (a string tensor holds bytes objects)
        as_dtype(arr.dtype)  # reject unsupported dtypes early
        if arr.flags.writeable:
            arr = arr.copy()
            arr.flags.writeable = False
        self._array = arr

    @property
    def dtype(self) -> DType:
        return as_dtype(self._array.dtype)

    @property
    def shape(self) -> TensorShape:
        """The shape, a `TensorShape` (a tuple of ints)."""
        return from_static(self._array.shape)

    def get_shape(self) -> TensorShape:
        """The shape (TensorFlow 1's spelling of `shape`)."""
        return self.shape

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def type(self) -> TensorType:
        return TensorType(self.dtype, self.shape)

    def numpy(self) -> np.ndarray:
        """The value as a (writeable) NumPy array; a string scalar as `bytes`, as
        TensorFlow's."""
        if self._array.dtype == object and self._array.ndim == 0:
            return self._array[()]
        return self._array.copy()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's conversion (NumPy 2 semantics): ``np.asarray(t)`` is a read-only view of
        the tensor's buffer, ``np.array(t)`` a fresh writeable copy; ``copy=False`` with a
        `dtype` that needs a conversion raises ValueError, as NumPy's own arrays do."""
        arr = self._array
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"converting a {self.dtype.ir_name} tensor to {np.dtype(dtype)} "
                                 f"needs a copy, and copy=False was given")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        """A DLPack capsule of the tensor's buffer (CPU), shared without a copy and marked
        read-only, for consumers of DLPack 1.0 and later (``np.from_dlpack``,
        ``torch.from_dlpack``). Older consumers cannot be told that the buffer is
        read-only, so they get a copy unless ``copy=False`` (then BufferError)."""
        # NumPy's exporter keeps the exported array alive until the consumer frees the
        # capsule; a view (not the buffer's owner) is exported so that nothing the consumer
        # does to its flags reaches this tensor.
        view = self._array.view()
        kwargs: dict[str, Any] = {"stream": stream}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        try:
            return view.__dlpack__(**kwargs)
        except BufferError:
            # (read-only buffers need DLPack >= 1.0's flag; or a copy the consumer may own)
            if copy is False or view.flags.writeable:
                raise
            kwargs["copy"] = None
            return self._array.copy().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        """(device type, device id) for DLPack: (1, 0), the CPU."""
        return self._array.__dlpack_device__()

    def __bool__(self) -> bool:
        return bool(self._array)

    def __float__(self) -> float:
        return float(self._array)

    def __int__(self) -> int:
        return int(self._array)

    def __index__(self) -> int:
        return int(self._array)

    def __len__(self) -> int:
        return len(self._array)

    def __iter__(self):
        return (EagerTensor(a) for a in self._array)

    def __repr__(self) -> str:
        return f"<tw.Tensor: shape={format_shape(self.shape)}, dtype={self.dtype.tf_name}, " \
               f"numpy={np.array2string(self._array, threshold=20)}>"
