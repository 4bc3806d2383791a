"""Type inference for ops whose inputs include a tensor of unknown rank.

Only a TensorFlow 1 graph under construction holds such tensors (``tf.placeholder``
without a shape, and what is computed from it); a Session specializes the pruned graph to
the ranks of the values fed before compiling it, and every op's own inference then sees
known ranks. While the graph is built, the static types are what can be said for every
rank the unknown input might have: the op's inference runs with each unknown-rank input
given every rank from 0 to `MAX_PROBE_RANK` (dims unknown), and each output gets what all
the ranks that the op accepts agree on: a dim known where every such rank gives it, the
rank where they all give one, else an unknown rank. (A rank the op accepts only with dims
known, as a squeeze of every size-1 dim, leaves its outputs' ranks unknown.) So ``tf.reshape(x, [-1, 3])`` is
``[?,3]``, ``tf.reduce_sum(x)`` a scalar, ``tf.shape(x)`` ``[?]``, ``x + 1`` and
``tf.matmul(x, w)`` (a batch product for ranks above 2) of unknown rank, and a cond on a
predicate of unknown rank has its branches' types, as in TensorFlow 1. No rank accepted is
an error at build time (a dtype mismatch, ``tf.matmul`` with a vector).

Every rank the op accepts is probed, so an output said to have a rank or a dim has it
for any input rank up to 8; for a rank beyond, inference at run time checks the value
against these static types again (a contradiction is an error naming the op, never a
wrong shape).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import DTypeError, ShapeError, TensorWeaveError
from .types import ResourceType, TensorType, Type

MAX_PROBE_RANK = 8
_MAX_PROBES = 729  # every combination of ranks for up to three unknown-rank inputs


def is_unranked(t: Any) -> bool:
    """Whether `t` is a tensor type of unknown rank."""
    return isinstance(t, TensorType) and t.shape is None


def infer_unranked(op_name: str, infer: Callable[..., list[Type]],
                   input_types: Sequence[Type], kwargs: Mapping[str, Any]) -> list[Type]:
    """The output types of op `op_name` for `input_types`, some of unknown rank: what
    `infer` (the op's inference, normalised to a list of types) gives at every rank the
    op accepts for them, merged (module docstring)."""
    unranked = [i for i, t in enumerate(input_types) if is_unranked(t)]
    ranks = range(MAX_PROBE_RANK + 1)
    every_combination = len(ranks) ** len(unranked) <= _MAX_PROBES
    # more unknown-rank inputs: probe equal ranks only (for the dtypes) and claim no shape
    combos = itertools.product(ranks, repeat=len(unranked)) if every_combination else \
        ((r,) * len(unranked) for r in ranks)
    results: list[list[Type]] = []
    failures: list[tuple[tuple[int, ...], Exception]] = []
    for combo in combos:
        try:
            results.append(infer(_probe(input_types, unranked, combo, None), kwargs))
            continue
        except Exception as e:  # noqa: BLE001  (a rank the op does not accept...)
            failures.append((combo, e))
        # ... or one whose inference needs dims known (a squeeze of every size-1 dim):
        # the rank is possible, and nothing can be said of the outputs' shapes
        for fill in (2, 1):
            try:
                out = infer(_probe(input_types, unranked, combo, fill), kwargs)
            except Exception:  # noqa: BLE001
                continue
            results.append([t.with_shape(None) if isinstance(t, TensorType) else t
                            for t in out])
            break
    if not results:
        raise _no_rank_error(op_name, input_types, unranked, failures)
    merged = _merge_all(op_name, results)
    if not every_combination:
        merged = [t.with_shape(None) if isinstance(t, TensorType) else t for t in merged]
    return merged


def _probe(input_types: Sequence[Type], unranked: list[int], ranks: Sequence[int],
           fill: int | None) -> list[Type]:
    """`input_types` with the unknown-rank inputs given `ranks`, every dim `fill`."""
    probe = list(input_types)
    for i, r in zip(unranked, ranks):
        probe[i] = TensorType(input_types[i].dtype, (fill,) * r)
    return probe


def _merge_all(op_name: str, results: list[list[Type]]) -> list[Type]:
    counts = {len(r) for r in results}
    if len(counts) != 1:
        raise ShapeError(f"{op_name} gives a different number of outputs for different "
                         f"ranks of its unknown-rank inputs ({sorted(counts)}): give the "
                         f"input a shape")
    merged = list(results[0])
    for out in results[1:]:
        merged = [_merge_pair(op_name, a, b) for a, b in zip(merged, out)]
    return merged


def _merge_pair(op_name: str, a: Type, b: Type) -> Type:
    """The type that holds for both `a` and `b` (outputs at two probed ranks)."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        if a.dtype is not b.dtype:
            raise DTypeError(f"{op_name} gives dtype {a.dtype.ir_name} or {b.dtype.ir_name} "
                             f"depending on the rank of its unknown-rank input: give the "
                             f"input a shape")
        if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
            return a.with_shape(None)
        return a.with_shape(x if x == y else None for x, y in zip(a.shape, b.shape))
    if isinstance(a, ResourceType) and isinstance(b, ResourceType):
        if a.value_type is None or b.value_type is None:
            return a if a.value_type is None else b
        return ResourceType(_merge_pair(op_name, a.value_type, b.value_type))
    if type(a) is not type(b) or a != b:
        raise DTypeError(f"{op_name} gives type {a} or {b} depending on the rank of its "
                         f"unknown-rank input: give the input a shape")
    return a


def _no_rank_error(op_name: str, input_types: Sequence[Type], unranked: list[int],
                   failures: list[tuple[tuple[int, ...], Exception]]) -> Exception:
    """The error of an op that accepts no rank of its unknown-rank inputs: a dtype error
    if one was found (it holds at every rank), else the error at the highest rank probed
    (the least likely to be about the unknown input's rank), saying so."""
    for _, e in failures:
        if isinstance(e, DTypeError):
            return e
    combo, last = failures[-1]
    if not isinstance(last, TensorWeaveError):
        return last  # an inference function's own bug: show it as it is
    which = ", ".join(f"input {i} ({input_types[i]})" for i in unranked)
    message = getattr(last, "message", str(last))
    try:
        return type(last)(f"{message} (and at every other rank of {which}, which has an "
                          f"unknown rank: no rank makes {op_name} valid)")
    except TypeError:  # (an error class with a constructor of its own)
        return last
