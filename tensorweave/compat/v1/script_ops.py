"""TensorFlow 1's Python callbacks in a graph: ``tf.py_func`` and ``tf.numpy_function``.

A ``PyFunc`` op calls a Python function on NumPy copies of its inputs each time it runs
and checks what comes back against the declared dtypes (TensorFlow's rules: a float64
result for a float32 output is an error, not a silent cast). The function is kept in a
registry under a token (``pyfunc_0`` ...), the op's only reference to it, so the op's
attributes print and fingerprint like any other's. On the cpu target the op runs by
calling back into Python (it has no native lowering), on the reference target directly.

The op is always stateful: never folded at compile time, merged with another call or
dropped (``stateful=False`` is accepted; TensorFlow may then merge equal calls, this
never does, which only means the function may run more often than TensorFlow's would).
It has no gradient: as in TensorFlow, ``tf.gradients`` gives None for what reaches a loss
only through it.

TensorFlow gives the outputs an unknown shape; tensorweave's graphs need every rank, so
an output must be given its shape with ``.set_shape([...])`` (None for dims unknown until
run time), as TensorFlow 1 programs usually do, before it is used. Until then using it is
an error that says so, and at run time a result that does not fit the shape is an error.
"""

from __future__ import annotations

import itertools
import threading
import traceback
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ...compiler.dtypes import (
    DType,
    as_dtype,
    bfloat16,
    float16,
    float32,
    float64,
    native_byte_order,
)
from ...compiler.registry import attr, def_op, not_differentiable
from ...compiler.types import TensorType, format_shape
from ...errors import InvalidArgumentError, OutOfRangeError, ShapeError, UnimplementedError, UnknownError
from ...frontend.building import apply_op, convert_to_tensor
from ...frontend.call_site import user_location
from ...frontend.context import current_builder
from ...frontend.tensor import Tensor
from ...frontend.tensor_shape import TensorShape, as_shape, from_static
from .graph import in_default_graph

PyFunc = def_op(
    "PyFunc", ["*inputs"], {"token": attr("str"), "Tout": attr("any"),
                            "unshaped": attr("ints", ())},
    stateful=True,
    doc="Calls the Python function registered as `token` on its inputs (NumPy arrays) and "
        "returns its results, which must have the types `Tout` (a tuple of TensorTypes). "
        "The outputs listed in `unshaped` were never given a shape (set_shape): nothing "
        "can read them, their results are checked for dtype only.")
not_differentiable("PyFunc")


@PyFunc.infer
def _py_func_infer(*inputs: Any, token: str, Tout: tuple, unshaped: tuple = ()) -> list:
    return list(Tout)


_functions: dict[str, Callable] = {}
_functions_lock = threading.Lock()
_tokens = itertools.count()


def _register(func: Callable, graph: Any) -> str:
    """Keep `func` for the ops that call it while `graph` (the IR graph holding them)
    lives, as TensorFlow keeps it for its graph's life; its token."""
    with _functions_lock:
        token = f"pyfunc_{next(_tokens)}"
        _functions[token] = func
    weakref.finalize(graph, _forget, token)
    return token


def _forget(token: str) -> None:
    with _functions_lock:
        _functions.pop(token, None)


# TensorFlow's names of dtypes in its messages ("is double, but expects float")
_TF_MESSAGE_NAMES = {float32: "float", float64: "double", float16: "half", bfloat16: "bfloat16"}


def _message_name(dtype: Any) -> str:
    try:
        d = as_dtype(dtype)
    except Exception:  # a dtype tensorweave has no equivalent of (str, object ...)
        return str(dtype)
    return _TF_MESSAGE_NAMES.get(d, d.tf_name)


# The error of a Python function's exception, as TensorFlow's py_func maps them (others:
# UnknownError). StopIteration is how a py_func reading an iterator says the input ended:
# OutOfRangeError, which ends a queue runner's input as any other end does.
_PYTHON_ERRORS = {ValueError: InvalidArgumentError, TypeError: InvalidArgumentError,
                  StopIteration: OutOfRangeError, NotImplementedError: UnimplementedError}


@PyFunc.kernel("reference")
def _py_func_kernel(*inputs: Any, token: str, Tout: tuple, unshaped: tuple = ()) -> tuple:
    func = _functions.get(token)
    if func is None:
        raise InvalidArgumentError(f"the Python function {token} of this py_func is gone: "
                                   f"the graph that made it was freed")
    # copies: the function may keep or change its arguments, the runtime's buffers stay ours
    args = [np.array(a) for a in inputs]
    try:
        result = func(*args)
    except Exception as e:
        error = next((tw_error for py_error, tw_error in _PYTHON_ERRORS.items()
                      if isinstance(e, py_error)), UnknownError)
        raise error(f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e
    if not Tout and result is None:
        return ()
    values = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(values) != len(Tout):
        raise InvalidArgumentError(f"{token} returns {len(values)} values, but expects to "
                                   f"see {len(Tout)} values.")
    out = []
    for i, (v, t) in enumerate(zip(values, Tout)):
        arr = native_byte_order(np.asarray(v))  # ('>f4': converted by value; TF reads the bytes)
        if arr.dtype != t.dtype.np:
            raise InvalidArgumentError(f"{i}-th value returned by {token} is "
                                       f"{_message_name(arr.dtype)}, but expects "
                                       f"{_message_name(t.dtype)}")
        if i in unshaped:  # (TensorFlow: an unknown shape) unused: a placeholder value
            out.append(np.zeros(t.shape, t.dtype.np))
            continue
        if not t.accepts(t.dtype, arr.shape):
            raise InvalidArgumentError(f"{i}-th value returned by {token} has shape "
                                       f"{list(arr.shape)}, but its output was given the "
                                       f"shape {format_shape(t.shape)} (set_shape)")
        out.append(np.array(arr, copy=True))
    return tuple(out)


class PyFuncOutput(Tensor):
    """An output of ``tf.py_func`` whose shape is not known yet (TensorFlow: unknown).
    ``set_shape`` gives it one; until then only its dtype, name and op can be read."""

    __slots__ = ("_dtype", "_shaped")

    def __init__(self, tensor: Tensor) -> None:
        _raw_value.__set__(self, tensor.value)
        self.builder = tensor.builder
        self._dtype = tensor.dtype
        self._shaped = False

    @property
    def value(self) -> Any:
        if not self._shaped:
            loc = user_location()
            raise ShapeError(
                f"output {self.name} of tf.py_func has no static shape yet and tensorweave's "
                f"graphs need every rank: call .set_shape([...]) on it (None for dims "
                f"unknown until run time) before using it", op="tf.py_func",
                location=str(loc) if loc else None)
        return _raw_value.__get__(self)

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        """Unknown (``TensorShape(None)``) until `set_shape`."""
        return from_static(_raw_value.__get__(self).type.shape) if self._shaped \
            else TensorShape(None)

    @property
    def name(self) -> str:
        return Tensor.name.fget(_Named(_raw_value.__get__(self)))

    @property
    def op(self) -> Any:
        return _raw_value.__get__(self).producer

    @property
    def graph(self) -> Any:
        return _raw_value.__get__(self).graph

    def set_shape(self, shape: Any) -> None:
        """Give the output its static shape (a known rank; None for dims unknown until
        run time), or check a later one against it. A result of another shape is an
        error when the op runs."""
        if self._shaped:
            Tensor.set_shape(self, shape)
            return
        shape = as_shape(shape)
        if shape.rank is None:
            raise ShapeError("set_shape needs a known rank: tensorweave's graphs need "
                             "every rank", op="tf.py_func")
        value = _raw_value.__get__(self)
        node = value.producer
        types = list(node.attrs["Tout"])
        types[value.index] = TensorType(self._dtype, tuple(shape))
        node.attrs["Tout"] = tuple(types)
        node.attrs["unshaped"] = tuple(i for i in node.attrs.get("unshaped", ())
                                       if i != value.index)
        value.type = types[value.index]
        self._shaped = True

    def __repr__(self) -> str:
        return f"<tw.Tensor '{self.name}' shape={self.shape} dtype={self._dtype.tf_name}>"


_raw_value = Tensor.__dict__["value"]  # the slot PyFuncOutput.value guards


class _Named:
    """What `Tensor.name` reads (`.value`), for naming an output before it has a shape."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _dtypes(Tout: Any) -> tuple[list[DType], bool]:
    """The declared output dtypes, and whether one (not a list) was given."""
    if isinstance(Tout, (list, tuple)):
        return [as_dtype(t) for t in Tout], False
    return [as_dtype(Tout)], True


def _build(func: Callable, inp: Any, Tout: Any, name: str | None, op: str) -> Any:
    if not callable(func):
        raise TypeError(f"{op}: func must be callable, got {type(func).__name__}")
    dtypes, single = _dtypes(Tout)
    inputs = [convert_to_tensor(x) for x in (inp if isinstance(inp, (list, tuple)) else [inp])]
    # placeholder types until set_shape gives each output its shape
    types = tuple(TensorType(d, ()) for d in dtypes)
    token = _register(func, current_builder().graph)
    outs = apply_op("PyFunc", inputs, {"token": token, "Tout": types,
                                       "unshaped": tuple(range(len(types)))},
                    name=name or "PyFunc")
    if not dtypes:  # as TensorFlow: the op itself, to run
        return current_builder().graph.nodes[-1]
    outs = [PyFuncOutput(t) for t in outs]
    return outs[0] if single else outs


@in_default_graph
def py_func(func: Callable, inp: Any, Tout: Any, stateful: bool = True,
            name: str | None = None) -> Any:
    """TensorFlow 1's ``tf.py_func``: `func` called on NumPy arrays of `inp` each time the
    op runs, returning values of the dtypes `Tout` (one dtype: one tensor; a list: a
    list). Give each output its shape with ``.set_shape([...])`` before using it. No
    gradient flows through it."""
    return _build(func, inp, Tout, name, "tf.py_func")


@in_default_graph
def numpy_function(func: Callable, inp: Any, Tout: Any, stateful: bool = True,
                   name: str | None = None) -> Any:
    """``tf.numpy_function``: `tf.py_func` under its TensorFlow 2 name."""
    return _build(func, inp, Tout, name, "tf.numpy_function")
