"""Printing and run-time checks as graph ops: `tw.print` (TensorFlow's ``tf.print``) and
the ``tw.debugging`` assertions (``assert_equal``, ``check_numerics``, ...).

All of them are side-effecting ops that run when the step runs (or at once, eagerly).
Inside a traced function they are ordered as TensorFlow 2's automatic control
dependencies order them: each runs after every stateful op built before it (variable
updates, earlier prints and assertions), so prints come out in program order.
Assertions are ``Assert`` ops (natively lowered on the cpu target): a false condition
fails the step with `tw.errors.InvalidArgumentError` carrying the message, the op and
the user's line.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from ...compiler.dtypes import bool_
from ...compiler.ir import Node
from ...compiler.registry import attr, def_op
from ...compiler.types import format_shape
from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ..building import SIDE_EFFECTS_KEY, apply_op, convert_to_tensor, user_location
from ..context import control_dependencies, current_builder
from ..tensor import EagerTensor, Tensor


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc else None


# ------------------------------------------------------------------------------ PrintV2

PrintV2 = def_op(
    "PrintV2", ["*inputs"],
    {"template": attr("str"), "summarize": attr("int", 3), "output_stream": attr("str", "stderr"),
     "end": attr("str", "\n")},
    stateful=True,
    doc="Writes `template` with each '{}' replaced by the next input formatted as "
        "TensorFlow prints tensors (at most `summarize` entries at each end of every "
        "dimension; -1: all) to `output_stream` ('stderr', 'stdout', 'log(LEVEL)' or "
        "'file://PATH').")


@PrintV2.infer
def _print_infer(*inputs: Any, template: str, summarize: int, output_stream: str,
                 end: str) -> list:
    return []


@PrintV2.kernel("reference")
def _print_kernel(*inputs: Any, template: str, summarize: int, output_stream: str,
                  end: str) -> tuple:
    text = template.format(*[format_tensor(np.asarray(a), summarize) for a in inputs])
    _write(output_stream, text + end)
    return ()


def _write(stream: str, text: str) -> None:
    if stream == "stderr":
        sys.stderr.write(text)
        sys.stderr.flush()
    elif stream == "stdout":
        sys.stdout.write(text)
        sys.stdout.flush()
    elif stream.startswith("log(") and stream.endswith(")"):
        level = logging.getLevelName(stream[4:-1].upper())
        logging.getLogger("tensorweave").log(level if isinstance(level, int) else logging.INFO,
                                             text.rstrip("\n"))
    elif stream.startswith("file://"):
        with open(stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(text)
    else:
        raise InvalidArgumentError(f"unknown output stream {stream!r}")


def _element(x: Any, dtype: np.dtype) -> str:
    """One element as TensorFlow's StrCat writes it: floats with the fewest of 6 (9 for
    float32 values that need it; 15/17 for float64) significant digits that round-trip."""
    if dtype.kind == "b":
        return "1" if x else "0"
    if dtype.kind == "f" or dtype.name == "bfloat16":
        v = float(x)
        if np.isnan(v):
            return "nan"
        if np.isinf(v):
            return "inf" if v > 0 else "-inf"
        if dtype == np.float64:
            short = f"{v:.15g}"
            return short if float(short) == v else f"{v:.17g}"
        f32 = np.float32(v)
        short = f"{float(f32):.6g}"
        return short if np.float32(short) == f32 else f"{float(f32):.9g}"
    return str(x)


def format_tensor(a: np.ndarray, summarize: int = 3) -> str:
    """`a` as ``tf.print`` shows it: ``[[1 2 ... 9 10]\\n [...]]``, eliding the middle of
    every dimension longer than ``2 * summarize`` (``summarize=-1``: nothing elided)."""
    if a.ndim == 0:
        return _element(a[()], a.dtype)
    ends = a.size if summarize is None or summarize < 0 else summarize
    out: list[str] = []

    def spacing(dim: int) -> None:
        if dim == a.ndim - 1:
            out.append(" ")
        else:
            out.append("\n" * (a.ndim - dim - 1) + " " * (dim + 1))

    def go(dim: int, index: tuple) -> None:
        if dim == a.ndim:
            out.append(_element(a[index], a.dtype))
            return
        out.append("[")
        count = a.shape[dim]
        for i in range(min(ends, count)):
            if i > 0:
                spacing(dim)
            go(dim + 1, (*index, i))
        if count > 2 * ends:
            spacing(dim)
            out.append("...")
        for i in range(max(ends, count - ends), count):
            spacing(dim)
            go(dim + 1, (*index, i))
        out.append("]")

    go(0, ())
    return "".join(out)


def _stream_name(stream: Any) -> str:
    # the process's streams, or whatever replaces them now (pytest, notebooks): the op
    # writes to the current sys.stderr / sys.stdout when it runs
    if stream is None or stream is sys.stderr or stream is sys.__stderr__:
        return "stderr"
    if stream is sys.stdout or stream is sys.__stdout__:
        return "stdout"
    if isinstance(stream, str) and stream.startswith("file://"):
        return stream
    for level in ("debug", "info", "warning", "error", "critical"):
        if stream is getattr(logging, level):
            return f"log({level})"
    raise InvalidArgumentError(f"output_stream must be sys.stderr, sys.stdout, a 'file://PATH' "
                               f"string or a logging function (logging.info ...), got "
                               f"{stream!r}", op="tw.print", location=_where())


def _is_tensor(x: Any) -> bool:
    return isinstance(x, (Tensor, EagerTensor)) or hasattr(x, "_as_tensor")


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _template(x: Any, tensors: list[Any], top: bool) -> str:
    """The text of one input with '{}' where each tensor goes (tensors collected)."""
    if _is_tensor(x):
        tensors.append(x)
        return "{}"
    if isinstance(x, str):
        return _escape(x if top else repr(x))
    if isinstance(x, dict):
        return "{{" + ", ".join(f"{_escape(repr(k))}: {_template(v, tensors, False)}"
                                for k, v in x.items()) + "}}"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_template(v, tensors, False) for v in x)
        if isinstance(x, tuple):
            return "(" + inner + ("," if len(x) == 1 else "") + ")"
        return "[" + inner + "]"
    return _escape(str(x) if top else repr(x))


def _side_effect(op: str, inputs: Sequence[Any], attrs: dict[str, Any],
                 name: str | None) -> Node | None:
    """Apply side-effecting op `op`; while tracing, order it after every stateful op
    built before it, and the stateful ops built after it after it (TensorFlow 2's
    automatic control dependencies), and return it."""
    builder = current_builder()
    if builder is None:
        apply_op(op, inputs, attrs, name=name)
        return None
    after = [n for n in dict.fromkeys(builder.last_stateful.values())
             if n.graph is builder.graph] if builder.auto_control_deps else []
    with control_dependencies(after):
        apply_op(op, inputs, attrs, name=name)
    node = builder.graph.nodes[-1]
    builder.last_stateful[SIDE_EFFECTS_KEY] = node  # later stateful ops run after it
    return node


def _check_summarize(summarize: Any, op: str) -> None:
    """`summarize` (how many values a print or a failed assertion shows) must be an int."""
    if not isinstance(summarize, int) or isinstance(summarize, bool):
        raise DTypeError(f"summarize must be an int, got {summarize!r}", op=op,
                         location=_where())


def print(*inputs: Any, output_stream: Any = None, summarize: int = 3,  # noqa: A001
          sep: str = " ", end: str = "\n", name: str | None = None) -> Node | None:
    """Print `inputs` when the op runs (TensorFlow's ``tf.print``): tensors as TensorFlow
    formats them (at most `summarize` entries at each end of every dimension; -1 for
    all), strings as they are, Python structures with their tensors formatted, separated
    by `sep` and followed by `end`, to `output_stream`: sys.stderr (the default),
    sys.stdout, a ``"file://PATH"`` (appended to) or a `logging` function such as
    ``logging.info`` (the "tensorweave" logger). Returns the op inside a traced function (None
    eagerly, where it prints at once)."""
    _check_summarize(summarize, "tw.print")
    tensors: list[Any] = []
    template = _escape(sep).join(_template(x, tensors, True) for x in inputs)
    values = [convert_to_tensor(t) for t in tensors]
    attrs = {"template": template, "summarize": summarize,
             "output_stream": _stream_name(output_stream), "end": end}
    return _side_effect("PrintV2", values, attrs, name or "print")


# ------------------------------------------------------------------------------ asserts

def _assert(condition: Any, message: str, name: str | None,
            data: Sequence[tuple[str, Any]] = (), summarize: int | None = None) -> Node | None:
    """An Assert of `condition`; on failure its message shows the first `summarize`
    values (default 3; -1: all) of each named tensor in `data`, as TensorFlow's do."""
    if summarize is None:
        summarize = 3
    _check_summarize(summarize, "Assert")
    return _side_effect("Assert", [convert_to_tensor(condition, dtype=bool_)]
                        + [convert_to_tensor(t) for _, t in data],
                        {"message": message, "summarize": summarize,
                         "data_names": tuple(n for n, _ in data)}, name)


def _all(x: Any) -> Any:
    from . import math
    return math.reduce_all(x)


def _text(message: str | None) -> str:
    return f"{message}: " if message else ""


def _compare(x: Any, y: Any, relation: Callable[[Any, Any], Any], symbol: str,
             message: str | None, name: str | None, api: str,
             summarize: int | None = None) -> Node | None:
    from ..building import convert_operands
    x, y = convert_operands(x, y)
    what = (f"{_text(message)}Condition x {symbol} y did not hold element-wise: x is "
            f"{x.dtype.ir_name}{format_shape(x.shape)}, y is {y.dtype.ir_name}{format_shape(y.shape)}")
    return _assert(_all(relation(x, y)), what, name or api, [("x", x), ("y", y)], summarize)


def assert_equal(x: Any, y: Any, message: str | None = None, summarize: int | None = None,
                 name: str | None = None) -> Node | None:
    """Fail with InvalidArgumentError unless ``x == y`` everywhere (broadcasting)."""
    from . import math
    return _compare(x, y, math.equal, "==", message, name, "assert_equal",
                    summarize)


def assert_less(x: Any, y: Any, message: str | None = None, summarize: int | None = None,
                name: str | None = None) -> Node | None:
    """Fail with InvalidArgumentError unless ``x < y`` everywhere."""
    from . import math
    return _compare(x, y, math.less, "<", message, name, "assert_less",
                    summarize)


def assert_greater(x: Any, y: Any, message: str | None = None, summarize: int | None = None,
                   name: str | None = None) -> Node | None:
    """Fail with InvalidArgumentError unless ``x > y`` everywhere."""
    from . import math
    return _compare(x, y, math.greater, ">", message, name, "assert_greater",
                    summarize)


def assert_non_negative(x: Any, message: str | None = None, summarize: int | None = None,
                        name: str | None = None) -> Node | None:
    """Fail with InvalidArgumentError unless every element of `x` is ``>= 0``."""
    from . import math
    x = convert_to_tensor(x)
    what = (f"{_text(message)}Condition x >= 0 did not hold element-wise: x is "
            f"{x.dtype.ir_name}{format_shape(x.shape)}")
    return _assert(_all(math.greater_equal(x, np.zeros((), x.dtype.np))), what,
                   name or "assert_non_negative", [("x", x)], summarize)


def assert_positive(x: Any, message: str | None = None, summarize: int | None = None,
                    name: str | None = None) -> Node | None:
    """Fail with InvalidArgumentError unless every element of `x` is ``> 0``."""
    from . import math
    x = convert_to_tensor(x)
    what = (f"{_text(message)}Condition x > 0 did not hold element-wise: x is "
            f"{x.dtype.ir_name}{format_shape(x.shape)}")
    return _assert(_all(math.greater(x, np.zeros((), x.dtype.np))), what,
                   name or "assert_positive", [("x", x)], summarize)


def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, message: str | None = None,
                summarize: int | None = None, name: str | None = None) -> Node | None:
    """Fail with InvalidArgumentError unless ``|x - y| <= atol + rtol * |y|`` everywhere
    (defaults: 10 machine epsilons of the dtype for both), as TensorFlow's."""
    from ..building import convert_operands
    from . import math
    x, y = convert_operands(x, y)
    if not x.dtype.is_floating:
        raise DTypeError(f"tw.debugging.assert_near needs floating-point tensors, got "
                         f"{x.dtype.ir_name}", location=_where())
    # ml_dtypes' finfo knows bfloat16 (NumPy's does not): its epsilon is 2**-7
    eps = float(ml_dtypes.finfo(x.dtype.np).eps)
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    ok = math.less_equal(math.abs(x - y), atol + rtol * math.abs(y))
    what = (f"{_text(message)}x and y not equal to tolerance rtol = {rtol}, atol = {atol}: "
            f"x is {x.dtype.ir_name}{format_shape(x.shape)}, y is "
            f"{y.dtype.ir_name}{format_shape(y.shape)}")
    return _assert(_all(ok), what, name or "assert_near", [("x", x), ("y", y)], summarize)


def assert_shapes(shapes: Any, data: Any = None, summarize: int | None = None,
                  message: str | None = None, name: str | None = None) -> Node | None:
    """Check that each ``(tensor, shape)`` pair of `shapes` (a list of pairs or a dict)
    has that shape: ints must match, equal strings (``'N'``) must be equal dims
    everywhere, None and ``'.'`` match anything, and a leading ``'...'`` any number of
    leading dims. Dims known while tracing are checked at once (ValueError); the rest
    by an op that fails with InvalidArgumentError."""
    from . import array, math
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    checks: list[tuple[Any, str]] = []
    symbols: dict[str, tuple[Any, str]] = {}
    prefix = _text(message)
    for k, (tensor, spec) in enumerate(pairs):
        t = convert_to_tensor(tensor)
        if isinstance(spec, str):  # 'NHWC' or '...C': one symbol per letter
            spec = ["...", *spec[3:]] if spec.startswith("...") else list(spec)
        else:
            spec = list(spec)
        ellipsis = bool(spec) and spec[0] == "..."
        dims = spec[1:] if ellipsis else spec
        rank = len(t.shape)
        label = f"tensor {k} ({t.dtype.ir_name}{format_shape(t.shape)})"
        if (ellipsis and rank < len(dims)) or (not ellipsis and rank != len(dims)):
            raise ShapeError(f"{prefix}tw.debugging.assert_shapes: {label} has rank {rank}, "
                             f"expected shape {spec}", location=_where())
        offset = rank - len(dims)
        shape = None
        for j, d in enumerate(dims):
            axis = offset + j
            if d is None or d == ".":
                continue
            static = t.shape[axis]
            if isinstance(d, str):
                if d in symbols:
                    other, where = symbols[d]
                    if isinstance(other, int) and static is not None:
                        if other != static:
                            raise ShapeError(f"{prefix}tw.debugging.assert_shapes: dim "
                                             f"{axis} of {label} is {static}, but '{d}' is "
                                             f"{other} ({where})", location=_where())
                        continue
                    shape = array.shape(t) if shape is None else shape
                    checks.append((math.equal(shape[axis], other),
                                   f"dim {axis} of {label} differs from '{d}' ({where})"))
                else:
                    if static is None:
                        shape = array.shape(t) if shape is None else shape
                        symbols[d] = (shape[axis], f"dim {axis} of {label}")
                    else:
                        symbols[d] = (static, f"dim {axis} of {label}")
                continue
            if static is not None:
                if static != int(d):
                    raise ShapeError(f"{prefix}tw.debugging.assert_shapes: dim {axis} of "
                                     f"{label} is {static}, expected {int(d)}", location=_where())
                continue
            shape = array.shape(t) if shape is None else shape
            checks.append((math.equal(shape[axis], int(d)),
                           f"dim {axis} of {label} is not {int(d)}"))
    last = None
    for condition, what in checks:
        last = _assert(condition, f"{prefix}tw.debugging.assert_shapes: {what}",
                       name or "assert_shapes")
    return last


def _finite_checks(t: Any, message: str, name: str) -> list[Node | None]:
    from . import math
    nan = math.reduce_any(math.not_equal(t, t))
    inf = math.reduce_any(math.equal(math.abs(t), np.array(np.inf, t.dtype.np)))
    return [_assert(math.logical_not(nan), f"{message} : Tensor had NaN values", name),
            _assert(math.logical_not(inf), f"{message} : Tensor had Inf values", name)]


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Any:
    """`tensor`, after checking that it holds no NaN and no infinity: otherwise
    InvalidArgumentError("`message` : Tensor had NaN values" (or Inf values))."""
    from . import array
    t = convert_to_tensor(tensor)
    if not t.dtype.is_floating:
        raise DTypeError(f"tw.debugging.check_numerics needs a floating-point tensor, got "
                         f"{t.dtype.ir_name}", location=_where())
    nodes = [n for n in _finite_checks(t, message, name or "check_numerics") if n is not None]
    with control_dependencies(nodes or None):
        return array.identity(t)


def assert_all_finite(x: Any, message: str, name: str | None = None) -> Any:
    """`x`, checked to hold only finite values (TensorFlow 2's
    ``tf.debugging.assert_all_finite``; same as `check_numerics`)."""
    return check_numerics(x, message, name or "assert_all_finite")


__all__ = ["assert_all_finite", "assert_equal", "assert_greater", "assert_less", "assert_near",
           "assert_non_negative", "assert_positive", "assert_shapes", "check_numerics",
           "format_tensor", "print"]
