"""TensorFlow 1's assertions (``tf.assert_equal``, ``tf.assert_positive``, ``tf.Assert``,
...; also ``tf.compat.v1.debugging``), with TensorFlow 1's signatures: `data` third,
then `summarize`, `message` and `name`.

Each builds the `Assert` op of ``tw.debugging`` (the same op, messages and failure
report): it fails at run time with InvalidArgumentError naming the op, the line that
made it and the message, and shows the values compared (or the tensors of `data`). As
in TensorFlow 1's graph mode, the returned op checks only when it runs: fetch it or
put it in ``tf.control_dependencies``. When both operands are known while building
(Python or NumPy values, or tensors made by ``tf.constant``) the check is also done at
once (TensorFlow 1 raises InvalidArgumentError while building).
Rank, dtype and scalar checks are static (graphs know every rank and dtype).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from ...compiler.types import format_shape
from ...errors import InvalidArgumentError
from ...frontend.building import convert_operands, convert_to_tensor
from ...frontend.call_site import user_location
from ...frontend.grouping import no_op
from ...frontend.ops import debugging as _debugging
from ...frontend.ops import math as _math
from ...frontend.ops.array import _const_array
from ...frontend.tensor import Tensor
from .graph import in_default_graph


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc is not None else None


def _is_graph_value(x: Any) -> bool:
    return isinstance(x, Tensor) or hasattr(x, "_resource_arg")


def _data_pairs(data: Any) -> tuple[list[str], list[tuple[str, Any]]]:
    """`data`'s strings (added to the message) and its tensors (shown on failure)."""
    texts, pairs = [], []
    for k, d in enumerate(data):
        if isinstance(d, (str, bytes)):
            texts.append(d if isinstance(d, str) else d.decode())
        else:
            pairs.append((f"data[{k}]", d))
    return texts, pairs


def _check(condition: Any, what: str, name: str, shown: list[tuple[str, Any]], data: Any,
           summarize: int | None) -> Any:
    """The Assert op; `data` (when given) replaces the tensors shown on failure."""
    if data is not None:
        texts, shown = _data_pairs(data)
        what = " ".join([what, *texts])
    return _debugging._assert(_math.reduce_all(condition), what, name, shown, summarize)


def _static_value(x: Any) -> np.ndarray | None:
    """`x`'s value when known while building: a Python or NumPy value, or a tensor made
    by a Const op (TensorFlow's ``constant_value``, which folds nothing else)."""
    if hasattr(x, "_resource_arg"):
        return None
    return _const_array(x)


def _static_failure(api: str, what: str, x: Any, y: Any) -> InvalidArgumentError:
    return InvalidArgumentError(f"{what}\nx = {np.asarray(x)!r}\ny = {np.asarray(y)!r}",
                                op=api, location=_where())


def _binary(api: str, relation: Callable[[Any, Any], Any], np_relation: Callable,
            symbol: str) -> Callable[..., Any]:
    @in_default_graph
    def check(x: Any, y: Any, data: Any = None, summarize: int | None = None,
              message: str | None = None, name: str | None = None) -> Any:
        what = f"{_debugging._text(message)}Condition x {symbol} y did not hold element-wise"
        xs, ys = _static_value(x), _static_value(y)
        if xs is not None and ys is not None:
            # known operands (constants too) are compared while building, as TensorFlow 1
            if not np.all(np_relation(xs, ys)):
                raise _static_failure(api, what, xs, ys)
            if not _is_graph_value(x) and not _is_graph_value(y):
                return no_op(name=name or api)
        if data is None:  # tw.debugging's own assertion
            return _debugging._compare(x, y, relation, symbol, message, name, api, summarize)
        xt, yt = convert_operands(x, y)
        return _check(relation(xt, yt), what, name or api, [], data, summarize)

    check.__name__ = api
    check.__doc__ = (f"An op failing with InvalidArgumentError unless ``x {symbol} y`` "
                     f"everywhere (broadcasting); TensorFlow 1's ``tf.{api}``.")
    return check


def _unary(api: str, relation: Callable[[Any, Any], Any], np_relation: Callable,
           symbol: str) -> Callable[..., Any]:
    @in_default_graph
    def check(x: Any, data: Any = None, summarize: int | None = None,
              message: str | None = None, name: str | None = None) -> Any:
        x = convert_to_tensor(x)
        what = (f"{_debugging._text(message)}Condition x {symbol} 0 did not hold "
                f"element-wise: x is {x.dtype.ir_name}{format_shape(x.shape)}")
        zero = np.zeros((), x.dtype.np)
        xs = _static_value(x)
        if xs is not None and not np.all(np_relation(xs, zero)):
            raise _static_failure(api, what, xs, zero)  # (TensorFlow 1 checks constants)
        return _check(relation(x, zero), what, name or api, [("x", x)], data, summarize)

    check.__name__ = api
    check.__doc__ = (f"An op failing with InvalidArgumentError unless every element of `x` "
                     f"is ``{symbol} 0``; TensorFlow 1's ``tf.{api}``.")
    return check


assert_equal = _binary("assert_equal", _math.equal, np.equal, "==")
assert_none_equal = _binary("assert_none_equal", _math.not_equal, np.not_equal, "!=")
assert_less = _binary("assert_less", _math.less, np.less, "<")
assert_less_equal = _binary("assert_less_equal", _math.less_equal, np.less_equal, "<=")
assert_greater = _binary("assert_greater", _math.greater, np.greater, ">")
assert_greater_equal = _binary("assert_greater_equal", _math.greater_equal, np.greater_equal,
                               ">=")
assert_positive = _unary("assert_positive", _math.greater, np.greater, ">")
assert_negative = _unary("assert_negative", _math.less, np.less, "<")
assert_non_negative = _unary("assert_non_negative", _math.greater_equal, np.greater_equal,
                              ">=")
assert_non_positive = _unary("assert_non_positive", _math.less_equal, np.less_equal,
                              "<=")


@in_default_graph
def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, data: Any = None,
                summarize: int | None = None, message: str | None = None,
                name: str | None = None) -> Any:
    """An op failing unless ``|x - y| <= atol + rtol * |y|`` everywhere (defaults: 10
    epsilons of the dtype); ``tw.debugging.assert_near`` with `data` third."""
    xt, yt = convert_operands(x, y)
    if data is None or not xt.dtype.is_floating:  # (tw's refuses non-float dtypes)
        return _debugging.assert_near(x, y, rtol, atol, message, summarize, name)
    eps = float(ml_dtypes.finfo(xt.dtype.np).eps)
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    condition = _math.less_equal(_math.abs(xt - yt), atol + rtol * _math.abs(yt))
    what = (f"{_debugging._text(message)}x and y not equal to tolerance rtol = {rtol}, "
            f"atol = {atol}")
    return _check(condition, what, name or "assert_near", [], data, summarize)


@in_default_graph
def Assert(condition: Any, data: Any, summarize: int | None = None,  # noqa: N802 (TF's name)
           name: str | None = None) -> Any:
    """An op failing with InvalidArgumentError unless the boolean scalar `condition`
    holds; on failure it shows `data` (strings join the message)."""
    texts, pairs = _data_pairs(data)
    return _debugging._assert(condition, " ".join(texts) or "assertion failed",
                              name or "Assert", pairs, summarize)


@in_default_graph
def assert_rank(x: Any, rank: int, data: Any = None, summarize: int | None = None,
                message: str | None = None, name: str | None = None) -> Any:
    """ValueError unless `x` has rank `rank` (checked while building); returns a no-op.
    For `x` of unknown rank (a placeholder made without a shape) an Assert checks it
    when the graph runs (InvalidArgumentError), as TensorFlow's."""
    x = convert_to_tensor(x)
    if x.shape.rank is None:
        from ...frontend.ops.array import rank as _rank
        actual = _rank(x)
        return _debugging._assert(_math.equal(actual, int(rank)),
                                  f"{_debugging._text(message)}tf.assert_rank: tensor "
                                  f"{x.name!r} must have rank {int(rank)}",
                                  name or "assert_rank", [("rank", actual)], summarize)
    if len(x.shape) != int(rank):
        raise ValueError(f"{_debugging._text(message)}tf.assert_rank: tensor "
                         f"{x.name!r} must have rank {int(rank)}. Received rank "
                         f"{len(x.shape)}, shape {format_shape(x.shape)}"
                         + (f" ({_where()})" if _where() else ""))
    return no_op(name=name or "assert_rank")


@in_default_graph
def assert_type(tensor: Any, tf_type: Any, message: str | None = None,
                name: str | None = None) -> Any:
    """TypeError unless `tensor` has dtype `tf_type`; returns a no-op."""
    from ...compiler.dtypes import as_dtype
    t = convert_to_tensor(tensor)
    if t.dtype is not as_dtype(tf_type):
        raise TypeError(f"{_debugging._text(message)}tf.assert_type: {t.name!r} must be of "
                        f"type {as_dtype(tf_type).ir_name}, got {t.dtype.ir_name}")
    return no_op(name=name or "assert_type")


@in_default_graph
def assert_integer(x: Any, message: str | None = None, name: str | None = None) -> Any:
    """TypeError unless `x` has an integer dtype; returns a no-op."""
    t = convert_to_tensor(x)
    if not t.dtype.is_integer:
        raise TypeError(f"{_debugging._text(message)}tf.assert_integer: expected an integer "
                        f"tensor, {t.name!r} is {t.dtype.ir_name}")
    return no_op(name=name or "assert_integer")


@in_default_graph
def assert_scalar(tensor: Any, name: str | None = None, message: str | None = None) -> Any:
    """`tensor`, after checking (while building) that it is a scalar (ValueError)."""
    t = convert_to_tensor(tensor)
    if len(t.shape):
        raise ValueError(f"{_debugging._text(message)}tf.assert_scalar: expected scalar, "
                         f"{t.name!r} has shape {format_shape(t.shape)}")
    return t


@in_default_graph
def verify_tensor_all_finite(t: Any, msg: str, name: str | None = None) -> Any:
    """`t`, checked at run time to hold no NaN nor infinity (InvalidArgumentError with
    `msg`): TensorFlow 1's name of `check_numerics`."""
    return _debugging.check_numerics(t, msg, name or "verify_tensor_all_finite")


__all__ = ["Assert", "assert_equal", "assert_greater", "assert_greater_equal", "assert_integer",
           "assert_less", "assert_less_equal", "assert_near", "assert_negative",
           "assert_non_negative", "assert_non_positive", "assert_none_equal",
           "assert_positive", "assert_rank", "assert_scalar", "assert_type",
           "verify_tensor_all_finite"]


def debugging_namespace() -> dict[str, Any]:
    """The names of ``tf.compat.v1.debugging``: ``tw.debugging``'s, its run-time checks
    building into the default graph, and the assertions above (TensorFlow 1's
    signatures)."""
    from ... import debugging
    names = {n: getattr(debugging, n) for n in debugging.__all__}
    for n in ("assert_shapes", "assert_all_finite", "check_numerics"):
        names[n] = in_default_graph(names[n])
    names.update({n: globals()[n] for n in __all__})
    return names
