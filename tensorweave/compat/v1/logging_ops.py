"""TensorFlow 1's ``tf.Print``: an identity op that prints a message and tensors each
time it runs.

It is its own op, ``Print``, because TensorFlow 1 formats tensors its own way (the first
`summarize` entries in row-major order, then ``...``: ``[[1 2 3...]...]``), not as
``tf.print``/``tw.print`` (``PrintV2``) do, and because it prints only on its first
`first_n` runs. Elements are spelled by the same helper as ``tw.print``'s, the text goes
to the current ``sys.stderr`` through the same writer. The op is stateful: never folded
or merged with another print. On the cpu target it runs by calling back into Python
(it has no native lowering), as ``PrintV2`` does.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ...compiler.registry import attr, def_op, register_gradient
from ...errors import DTypeError
from ...frontend.building import apply_op1, convert_to_tensor
from ...frontend.ops.debugging import _check_summarize, _element, _where, _write
from ...frontend.tensor import Tensor
from .graph import in_default_graph

PrintV1 = def_op(
    "Print", ["input", "*data"],
    {"message": attr("str", ""), "first_n": attr("int", -1), "summarize": attr("int", 3),
     "counter": attr("str", "")},
    stateful=True,
    doc="Returns `input`; while it has run fewer than `first_n` times (-1: always), writes "
        "`message` and then each of `data` as '[' + its first `summarize` values + ']' to "
        "stderr (TensorFlow 1's Print). `counter` names the op's run count.")


@PrintV1.infer
def _print_infer(x: Any, *data: Any, message: str, first_n: int, summarize: int,
                 counter: str) -> Any:
    return x


# How often a Print op has printed is kept in the runtime's resources (a Session's own)
# under its `counter` token: a token, not the node, so that the count is the op's whichever
# compiled step runs it (a Session compiles one per set of fetches), and a new Session
# counts from 0, as TensorFlow counts in the op's kernel, which each session makes anew.
_tokens = itertools.count()


def _should_print(ctx: Any, counter: str, first_n: int) -> bool:
    if first_n < 0:
        return True
    count = ctx.resources.get_or_create(f"print_count:{counter}", itertools.count)
    return next(count) < first_n  # (next on an itertools.count is atomic)


@PrintV1.kernel("reference", context=True)
def _print_kernel(ctx: Any, x: Any, *data: Any, message: str, first_n: int, summarize: int,
                  counter: str) -> Any:
    if _should_print(ctx, counter, first_n):
        _write("stderr", message + "".join(f"[{summarize_value(np.asarray(d), summarize)}]"
                                           for d in data) + "\n")
    return x


@register_gradient("Print")
def _print_grad(op: Any, grad: Any) -> list:
    # as TensorFlow's: the gradient passes to `input`; the printed tensors get none
    return [grad] + [None] * (len(op.inputs) - 1)


def summarize_value(a: np.ndarray, summarize: int) -> str:
    """`a` as TensorFlow 1's ``Tensor::SummarizeValue`` writes it: its first `summarize`
    elements (-1: all) in row-major order, each dimension bracketed as far as it was
    reached, and ``...`` where elements were left out: ``[[1 2 3...]...]``."""
    total = a.size
    limit = total if summarize < 0 else min(summarize, total)
    flat = a.reshape(-1)
    if a.ndim == 0:
        return " ".join(_element(flat[i], a.dtype) for i in range(limit)) + \
            ("..." if total > limit else "")
    out: list[str] = []
    index = 0  # the next element of `flat` to write

    def one_dim(dim: int) -> None:
        # TensorFlow's PrintOneDim, step for step
        nonlocal index
        if index >= limit:
            return
        count = a.shape[dim]
        if dim == a.ndim - 1:
            for i in range(count):
                if index >= limit:
                    if dim != 0:
                        out.append("...")
                    return
                if i > 0:
                    out.append(" ")
                out.append(_element(flat[index], a.dtype))
                index += 1
            return
        for _ in range(count):
            opened = index < limit
            if opened:
                out.append("[")
            one_dim(dim + 1)
            if index < limit or opened:
                out.append("]")

    one_dim(0)
    return "".join(out) + ("..." if total > limit else "")


@in_default_graph
def Print(input_: Any, data: Any, message: str | None = None, first_n: int | None = None,
          summarize: int | None = None, name: str | None = None) -> Tensor:
    """TensorFlow 1's ``tf.Print``: `input_` unchanged, and, each time it is computed (at
    most `first_n` times when given), `message` followed by each tensor of `data` as
    ``[v0 v1 v2...]`` (its first `summarize` values, default 3; -1: all) on stderr.
    The print happens only when the result is computed: use the result."""
    summarize = 3 if summarize is None else summarize
    _check_summarize(summarize, "tf.Print")
    first_n = -1 if first_n is None else first_n
    if not isinstance(first_n, int) or isinstance(first_n, bool):
        raise DTypeError(f"first_n must be an int, got {first_n!r}", op="tf.Print",
                         location=_where())
    if isinstance(data, (Tensor, np.ndarray)) or not isinstance(data, (list, tuple)):
        data = [data]
    inputs = [convert_to_tensor(input_)] + [convert_to_tensor(d) for d in data]
    return apply_op1("Print", inputs,
                     {"message": "" if message is None else str(message), "first_n": first_n,
                      "summarize": summarize, "counter": f"print_{next(_tokens)}"},
                     name=name or "Print")
