"""Turning op-function calls into IR nodes (or, outside any graph, into eager results).

Every public op function ends in `apply_op`: it converts the operands to tensors, records
the user's source line, applies name/device/control scopes and automatic control
dependencies, runs type inference (so shape errors surface at the line that made them)
and wraps the outputs as `Tensor`s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype, native_byte_order
from ..compiler.ir import Graph, Value
from ..compiler.registry import get_op
from ..compiler.types import ResourceType, TensorType
from ..errors import DTypeError, TensorWeaveError, TracingError
from ..runtime.kernel_context import CallCounters
from ..runtime.resources import default_resource_manager
from .call_site import api_name, user_location
from .context import GraphBuilder, building, current_builder
from .tensor import EagerTensor, Tensor
from .tf1_names import default_node_name

# ---------------------------------------------------------------- conversion to tensors


def _describe_value(value: Any) -> str:
    if value is None:
        return "None"
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    kind = type(value).__name__
    return f"the Python {kind} {text}" if not isinstance(value, np.ndarray) else \
        f"a NumPy array of dtype {value.dtype}"


def _plain_array(value: Any) -> np.ndarray:
    """`value` (a Python scalar or nested list) as a NumPy array, refusing what would only
    become a tensor by accident: None (NaN once cast to float), objects, ragged lists,
    strings mixed with numbers and complex numbers. str and bytes make a string tensor."""
    if value is None:
        raise DTypeError("got None where a tensor, array or number is needed (did a "
                         "function forget to `return` its result?)")
    if _contains_text(value):
        return _text_array(value)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:
        why = "its nested lists differ in length" if "inhomogeneous" in str(e) else str(e)
        raise DTypeError(f"cannot convert {_describe_value(value)} to a tensor: {why}") from None
    if arr.dtype != object:
        arr = native_byte_order(arr)  # (a list of '>f4' arrays; a NumPy array of text)
    elif all(isinstance(x, (bytes, str)) for x in arr.reshape(-1)):
        arr = native_byte_order(arr)  # (a list of object arrays of text)
    else:
        if _contains_none(value):
            why = "it contains None"
        elif _contains_big_int(value):
            why = "an integer in it does not fit in int64"
        else:
            why = "its elements are not all numbers, or its nested lists differ in length"
        raise DTypeError(f"cannot convert {_describe_value(value)} to a tensor: {why}")
    try:
        as_dtype(arr.dtype)
    except (TypeError, ValueError):
        raise DTypeError(f"cannot convert {_describe_value(value)} to a tensor: its NumPy "
                         f"dtype {arr.dtype} has no tensorweave dtype") from None
    return arr


def _contains_text(value: Any) -> bool:
    """Whether a Python value (scalar or nested list) holds a str or bytes."""
    if isinstance(value, (str, bytes)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_text(v) for v in value)
    return False


def _text_array(value: Any) -> np.ndarray:
    """A Python str/bytes or nested list of them as a string tensor's array. Built as an
    object array directly: NumPy's ``'S'`` arrays drop trailing NUL bytes."""
    def check(v: Any) -> None:
        if isinstance(v, (list, tuple)):
            for x in v:
                check(x)
        elif not isinstance(v, (str, bytes)):
            raise DTypeError(f"cannot convert {_describe_value(value)} to a tensor: it mixes "
                             f"strings with {_describe_value(v)}")
    check(value)
    if isinstance(value, (str, bytes)):
        arr = np.empty((), object)
        arr[()] = value
    else:
        try:
            arr = np.array(value, dtype=object)
        except ValueError:
            arr = None
        if arr is None or any(isinstance(x, (list, tuple)) for x in arr.reshape(-1)):
            raise DTypeError(f"cannot convert {_describe_value(value)} to a tensor: its "
                             f"nested lists differ in length")
    return native_byte_order(arr)  # (str elements encoded as UTF-8)


def _contains_none(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_none(v) for v in value)
    return False


def _contains_big_int(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return not -2**63 <= value < 2**63
    if isinstance(value, (list, tuple)):
        return any(_contains_big_int(v) for v in value)
    return False


def python_array(value: Any, dtype: DType | None) -> np.ndarray:
    """A NumPy array for a Python scalar/list, with TensorFlow's default dtypes; with
    `dtype`, only if the value converts exactly (no fraction dropped, no overflow, no
    number turned into a bool)."""
    arr = _plain_array(value)
    if dtype is not None and (arr.dtype == object) != dtype.is_string:
        # (never parsed or printed: TensorFlow refuses both ways)
        raise DTypeError(f"expected a value of dtype {dtype.name}, got "
                         f"{_describe_value(value)}: strings and numbers do not convert "
                         f"into each other")
    if dtype is not None and dtype.is_string:
        return arr
    if dtype is not None:
        target = dtype.np
        got = _describe_value(value)
        if arr.dtype.kind == "f" and dtype.is_integer:
            if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
                raise DTypeError(f"expected a value that {dtype.ir_name} can hold, got {got}: "
                                 f"its fractional part would be lost (TensorFlow does not "
                                 f"promote integers to floats: use tw.cast)")
        if arr.dtype.kind in "iu" and dtype.is_integer:
            info = np.iinfo(target)
            if arr.size and (arr.min() < info.min or arr.max() > info.max):
                raise DTypeError(f"expected a value that {dtype.ir_name} can hold, got {got}: "
                                 f"it does not fit in [{info.min}, {info.max}]")
        if arr.dtype.kind != "b" and dtype.is_bool:
            raise DTypeError(f"expected a bool, got {got}")
        with np.errstate(over="ignore", invalid="ignore"):
            out = arr.astype(target)
        if dtype.is_floating and arr.dtype.kind in "iuf" and arr.size and \
                np.any(np.isinf(out.astype(np.float64)) & np.isfinite(arr.astype(np.float64))):
            raise DTypeError(f"expected a value that {dtype.ir_name} can hold, got {got}: it "
                             f"overflows to infinity")
        return out
    if arr.dtype == np.float64:
        with np.errstate(over="ignore"):
            out = arr.astype(np.float32)
        if arr.size and np.any(np.isinf(out) & np.isfinite(arr)):
            raise DTypeError(f"cannot convert {_describe_value(value)} to float32 (the "
                             f"dtype of Python floats): it overflows to infinity; pass "
                             f"dtype=tw.float64")
        return out
    if arr.dtype.kind in "iu":
        if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31):
            return arr.astype(np.int32)
        return arr.astype(np.int64)
    return arr


def _in_context(e: DTypeError, operand: str | None = None) -> DTypeError:
    """`e` naming the public function the user called, their line and the operand."""
    err = e.with_context(op=api_name(), location=_location_text())
    if operand and not err.message.startswith(operand):
        err = type(err).__new__(type(err))
        TensorWeaveError.__init__(err, f"{operand}: {e.message}", op=e.op or api_name(),
                                  location=e.location or _location_text())
    return err


def _location_text() -> str | None:
    loc = user_location()
    return str(loc) if loc is not None else None


def convert_to_tensor(value: Any, dtype: DType | str | None = None, name: str | None = None,
                      *, dtype_hint: DType | str | None = None) -> Tensor | EagerTensor:
    """Convert a tensor, variable, NumPy array or Python value to a tensor of the current
    graph (or an eager tensor).

    Python scalars and lists take `dtype`, else `dtype_hint`, else TensorFlow's defaults
    (float32, int32); NumPy arrays keep their dtype, and a `dtype` that differs from it is
    an error rather than a silent cast. None, strings and ragged lists are errors that
    name the function the user called and their line.
    """
    try:
        return _convert(value, dtype, name, dtype_hint)
    except DTypeError as e:
        raise _in_context(e) from None


def _convert(value: Any, dtype: DType | str | None, name: str | None,
             dtype_hint: DType | str | None) -> Tensor | EagerTensor:
    dtype = as_dtype(dtype) if dtype is not None else None
    builder = current_builder()
    if hasattr(value, "_as_tensor"):  # variables and other tensor-convertible objects
        source, value = value, value._as_tensor()
        if eager_observers and builder is None:
            for observer in list(eager_observers):
                observer.record_read(source, value)
    if isinstance(value, Tensor):
        if builder is None and value.builder.kind == "v1":
            return value  # v1 graph-mode tensors build into their own graph
        if builder is None or value.value.graph is not builder.graph:
            captured = _capture(value.value, builder)
            if captured is None:
                _foreign_tensor(value, builder)
            value = Tensor(captured, builder)
        _check_dtype(value, dtype)
        return value
    if isinstance(value, EagerTensor):
        _check_dtype(value, dtype)
        if builder is None:
            return value
        # A GradientTape's builder stands recorded eager tensors for their graph values.
        lift = getattr(builder, "lift_eager", None)
        lifted = lift(value) if lift is not None else None
        return lifted if lifted is not None else constant(value._array, name=name)
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = native_byte_order(np.asarray(value))
        if dtype is not None and arr.dtype != dtype.np:
            raise DTypeError(f"expected a {dtype.ir_name} tensor, got a NumPy array of dtype "
                             f"{arr.dtype}; convert it with .astype() or tw.cast")
        return constant(arr, name=name)
    hint = dtype or (as_dtype(dtype_hint) if dtype_hint is not None else None)
    return constant(python_array(value, hint), name=name)


def _check_dtype(t: Tensor | EagerTensor, dtype: DType | None) -> None:
    if dtype is not None and t.dtype is not dtype:
        raise DTypeError(f"expected a {dtype.ir_name} tensor, got a {t.dtype.ir_name} tensor; "
                         f"use tw.cast")


def _capture(value: Value, builder: GraphBuilder | None) -> Value | None:
    """`value` (of another graph) as a value of the graph being built, when the builder
    captures values of enclosing graphs (a control-flow region turns them into explicit
    arguments); None when it cannot be used there."""
    capture = getattr(builder, "capture", None)
    return capture(value) if capture is not None else None


def _foreign_tensor(t: Tensor, builder: GraphBuilder | None) -> None:
    where = "outside any graph" if builder is None else f"while building '{builder.graph.name}'"
    raise TracingError(
        f"tensor '{t.value.name}' belongs to graph '{t.value.graph.name}' and cannot be used "
        f"{where}. A tensor from one trace (or from a tw.compat.v1 Graph) can't leak into "
        f"another: pass it as an argument or return it instead",
        location=str(user_location()))


def constant(value: Any, dtype: DType | str | None = None, shape: Sequence[int] | None = None,
             name: str | None = None) -> Tensor | EagerTensor:
    """A constant tensor (``tw.constant``); `shape` broadcasts a scalar or reshapes."""
    dtype = as_dtype(dtype) if dtype is not None else None
    if isinstance(value, (Tensor, EagerTensor)):
        raise TypeError("tw.constant expects a Python or NumPy value, not a tensor")
    if isinstance(value, (np.ndarray, np.generic)):
        arr = native_byte_order(np.asarray(value))
        if dtype is not None and (arr.dtype == object) != dtype.is_string:
            raise _in_context(DTypeError(f"expected a value of dtype {dtype.name}, got "
                                         f"{_describe_value(arr)}: strings and numbers do "
                                         f"not convert into each other"))
        if dtype is not None:
            arr = arr.astype(dtype.np)
    else:
        try:
            arr = python_array(value, dtype)
        except DTypeError as e:
            raise _in_context(e) from None
    as_dtype(arr.dtype)
    if shape is not None:
        shape = tuple(shape)
        if arr.size == 1:
            arr = np.broadcast_to(arr.reshape(()), shape)
        else:
            arr = arr.reshape(shape)
    arr = np.array(arr, copy=True)
    arr.flags.writeable = False
    builder = current_builder()
    if builder is None:
        return EagerTensor(arr)
    if name is None and builder.tf1_naming:
        name = IMPLICIT_CONST  # named after the op that reads it (`_name_implicit_consts`)
    return apply_op("Const", [], {"value": arr}, name=name)[0]


# The name a v1 graph gives a constant made without a name (a Python value converted for
# an op) until an op reads it. TensorFlow 1 converts such a value inside the op's name
# scope (``x * 2.0`` reads ``mul/y``), so it never takes a ``Const`` name: a program's own
# ``tf.constant`` is ``Const``, ``Const_1``, ... and is fetched by that name. TensorFlow
# op names cannot start with "_", so no name a TF1 program asks for is taken meanwhile.
IMPLICIT_CONST = "_Const"
_IMPLICIT_CONST_NAME = re.compile(r"(^|/)_Const(_\d+)?$")


def _name_implicit_consts(builder: Any, opdef: Any, values: Sequence[Value],
                          node_name: str) -> None:
    """Name each unnamed constant that the new node `node_name` reads first as TensorFlow
    1 does: ``<node_name>/<input name>`` (``mul/y``, ``Add/y``)."""
    for i, value in enumerate(values):
        node = value.producer
        if node is None or node.op != "Const" or node.graph is not builder.graph \
                or not _IMPLICIT_CONST_NAME.search(node.name):
            continue
        new_name = builder.unique_name(f"{node_name}/{_input_name(opdef, i)}/")
        builder.graph.rename(node, new_name)


def _input_name(opdef: Any, i: int) -> str:
    """The name of input `i` of `opdef` (``values_2`` for the third of a variadic
    ``*values``)."""
    names = list(opdef.inputs or ())
    for k, name in enumerate(names):
        if name.startswith("*"):
            return f"{name[1:]}_{i - k}" if i >= k else names[i]
        if k == i:
            return name
    return f"input_{i}"


# ------------------------------------------------------------------------ applying ops

def apply_op(op: str, inputs: Sequence[Any] = (), attrs: Mapping[str, Any] | None = None, *,
             name: str | None = None, default_name: str | None = None
             ) -> list[Tensor | EagerTensor]:
    """Create a node for registered op `op` in the current graph (or run it eagerly) and
    return its outputs. `inputs` may hold tensors, variables, arrays or Python values
    (converted with default dtypes) and raw IR values (resources). Without `name` the
    node is named `default_name` (else the op's default), or in a v1 graph as
    TensorFlow 1 names it (`tf1_names`)."""
    builder = current_builder()
    if builder is None:
        v1_builder = next((x.builder for x in inputs if isinstance(x, Tensor)
                           and x.builder.kind == "v1"), None)
        if v1_builder is None:
            return _run_eager(op, inputs, attrs or {})
        # TensorFlow 1 semantics: an op on graph tensors goes to their graph.
        with building(v1_builder):
            return apply_op(op, inputs, attrs, name=name, default_name=default_name)
    values = [_as_value(x) for x in inputs]
    opdef = get_op(op)
    loc = user_location()
    node_name = builder.unique_name(
        name or default_node_name(op, default_name or opdef.default_name, builder.tf1_naming))
    control = builder.control_inputs()
    if opdef.stateful and builder.auto_control_deps:
        # after earlier stateful ops on the same resources, and after the last print or
        # assertion (TensorFlow 2 runs side effects in program order)
        for key in [*_resource_keys(values), SIDE_EFFECTS_KEY]:
            prev = builder.last_stateful.get(key)
            if prev is not None and prev not in control and prev.graph is builder.graph:
                control.append(prev)
    if builder.tf1_naming and op != "Const":
        _name_implicit_consts(builder, opdef, values, node_name)
    node = builder.graph.add_node(op, values, attrs, name=node_name, control_inputs=control,
                                  device=builder.device, loc=loc)
    if builder.has_device_functions:
        node.device = builder.device_for(node)
    if opdef.stateful:
        for key in _resource_keys(values):
            builder.last_stateful[key] = node
    if opdef.side_effects:
        builder.side_effect_nodes.append(node)
    return [Tensor(v, builder) if isinstance(v.type, TensorType) else v for v in node.outputs]


def apply_op1(op: str, inputs: Sequence[Any] = (), attrs: Mapping[str, Any] | None = None, *,
              name: str | None = None, default_name: str | None = None
              ) -> Tensor | EagerTensor:
    """`apply_op` for single-output ops."""
    return apply_op(op, inputs, attrs, name=name, default_name=default_name)[0]


def _as_value(x: Any) -> Value:
    if isinstance(x, Value):
        builder = current_builder()
        if builder is not None and x.graph is not builder.graph:
            return _capture(x, builder) or x  # e.g. a queue handle used in a loop body
        return x
    t = convert_to_tensor(x)
    assert isinstance(t, Tensor)
    return t.value


def _resource_keys(values: Sequence[Value]) -> list[Any]:
    keys = []
    for v in values:
        if isinstance(v.type, ResourceType):
            p = v.producer
            keys.append(("var", p.attrs["shared_name"]) if p is not None and p.op == "VarHandle"
                        else ("value", id(v)))
    return keys


_eager_counters = CallCounters()

# `GraphBuilder.last_stateful` key of the last print or assertion (frontend/ops/debugging.py)
SIDE_EFFECTS_KEY = ("side_effect", "io")

# What watches eager execution: the GradientTapes recording now (frontend/tape.py; and
# tw.custom_gradient noting the variables a function reads). Each gets every eager op run
# (`record_op`) and every eager read of a variable (`record_read`); the list is empty, and
# the checks free, when nothing records.
eager_observers: list[Any] = []


def _run_eager(op: str, inputs: Sequence[Any], attrs: Mapping[str, Any]) -> list[Any]:
    """Run one op now on the reference kernels (eager execution)."""
    from ..targets.reference import run_kernel
    arrays: list[Any] = []
    for x in inputs:
        if hasattr(x, "_eager_resource"):
            arrays.append(x._eager_resource())
        elif isinstance(x, Value):
            raise TracingError(f"an IR value was passed to eager op {op}")
        else:
            arrays.append(convert_to_tensor(x)._array)
    scratch = Graph(f"eager_{op}")
    args = [scratch.add_arg(_type_of(a)) for a in arrays]
    loc = user_location()
    node = scratch.add_node(op, args, attrs, loc=loc)
    try:
        outs = run_kernel(node, arrays, default_resource_manager(), _eager_counters)
    except TensorWeaveError as e:
        raise e.with_context(**node.error_context()) from None
    results = [EagerTensor(o) if isinstance(v.type, TensorType) else o
               for o, v in zip(outs, node.outputs)]
    for observer in list(eager_observers):
        observer.record_op(op, inputs, attrs, results)
    return results


def _type_of(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return TensorType(as_dtype(a.dtype), a.shape)
    return ResourceType(a.type)  # a VariableState


def _has_dtype(v: Any) -> bool:
    return hasattr(v, "_as_tensor") or isinstance(v, (Tensor, EagerTensor, np.ndarray,
                                                      np.generic))


def convert_operands(*values: Any) -> list[Tensor | EagerTensor]:
    """Convert the operands of an elementwise op: Python scalars and lists take the dtype of
    the first operand that has one (a tensor, variable or NumPy array), as in TensorFlow.
    A value that dtype cannot hold exactly (``int32 + 1.5``) is an error naming the
    operand, not a silent rounding."""
    source = next((i for i, v in enumerate(values) if _has_dtype(v)), None)
    dtype = None
    if source is not None:
        v = values[source]
        dtype = v.dtype if not isinstance(v, (np.ndarray, np.generic)) else \
            as_dtype(np.asarray(v).dtype.newbyteorder("="))  # ('>f4': converted below)
    out = []
    for i, v in enumerate(values):
        try:
            if dtype is not None and not _has_dtype(v):
                out.append(_convert(v, dtype, None, None))
            else:
                out.append(_convert(v, None, None, None))
        except DTypeError as e:
            what = f"operand {i + 1}"
            if dtype is not None and not _has_dtype(v) and v is not None:
                what += f" (must be {dtype.ir_name}, the dtype of operand {source + 1})"
            raise _in_context(e, what) from None
    return out


__all__ = ["apply_op", "apply_op1", "convert_to_tensor", "convert_operands", "constant",
           "python_array", "user_location"]
