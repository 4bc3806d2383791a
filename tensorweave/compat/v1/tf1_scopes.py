"""The name scopes of TensorFlow 1's Python-level functions, in v1 graphs.

TensorFlow builds ``tf.clip_by_value``, ``tf.nn.sigmoid_cross_entropy_with_logits``,
``tf.zeros`` and the like in a name scope of their own (``clip_by_value/Minimum``) and
names their last op after the scope (``clip_by_value``). tensorweave builds some of them
from several ops, and some of its single ops from several: without the scope those ops
took root names that TensorFlow gives the program's own ops (``Maximum``, ``Add``,
``Fill``, ``Log1p``), so ``graph.get_tensor_by_name("Maximum:0")`` fetched the clip where
TensorFlow fetches the user's ``tf.maximum``: a wrong tensor, silently. Each function
below runs in TensorFlow's scope (checked against TensorFlow 2.21's ``tf.compat.v1`` in
graph mode), its last op named as the scope.

A reduction over every axis (``tf.reduce_mean(x)``) also makes TensorFlow's root
``Const`` (the axes ``[0, .., rank - 1]``), which numbers the program's own constants:
TensorFlow's first ``tf.constant`` after ``tf.reduce_mean(loss)`` is ``Const_1``. A v1
graph makes that constant too (tensorweave's reductions take their axes as an attribute:
the constant is read by nothing), so ``Const_N`` names the same constant as in TensorFlow.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ...frontend.building import constant
from ...frontend.context import current_builder, name_scope
from .graph import in_default_graph

# (namespace, function) -> TensorFlow 1's scope (its default name), TF 2.21 graph mode
SCOPES = {
    ("", "clip_by_value"): "clip_by_value",
    ("", "clip_by_norm"): "clip_by_norm",
    ("", "zeros"): "zeros",
    ("", "ones"): "ones",
    ("", "reduce_logsumexp"): "ReduceLogSumExp",
    ("", "count_nonzero"): "count_nonzero",
    ("", "einsum"): "einsum",
    ("", "tensordot"): "Tensordot",
    ("", "multinomial"): "multinomial",
    ("", "rank"): "Rank",
    ("", "reverse"): "ReverseV2",
    ("", "to_float"): "ToFloat",
    ("", "to_double"): "ToDouble",
    ("", "to_int32"): "ToInt32",
    ("", "to_int64"): "ToInt64",
    ("", "div"): "div",
    ("", "group"): "group_deps",
    **{(space, f"assert_{check}"): f"assert_{check}"
       for space in ("", "debugging")
       for check in ("equal", "none_equal", "less", "less_equal", "greater", "greater_equal",
                     "positive", "negative", "non_negative", "non_positive", "near", "rank")},
    ("nn", "sigmoid_cross_entropy_with_logits"): "logistic_loss",
    ("nn", "softmax_cross_entropy_with_logits_v2"): "softmax_cross_entropy_with_logits",
    ("nn", "softmax_cross_entropy_with_logits"): "softmax_cross_entropy_with_logits_sg",
    ("nn", "embedding_lookup"): "embedding_lookup",
    ("nn", "l2_normalize"): "l2_normalize",
    ("nn", "elu"): "Elu",
    ("nn", "relu6"): "Relu6",
    ("nn", "leaky_relu"): "LeakyRelu",
    ("nn", "softplus"): "Softplus",
    ("nn", "selu"): "Selu",
    ("nn", "softsign"): "Softsign",
    ("math", "reduce_std"): "reduce_std",
    ("math", "reduce_variance"): "reduce_variance",
    ("math", "reduce_logsumexp"): "ReduceLogSumExp",
    ("math", "count_nonzero"): "count_nonzero",
    ("math", "softplus"): "Softplus",
    ("math", "softsign"): "Softsign",
}

# reductions that make TensorFlow's root ``Const`` of axes when given none
FULL_REDUCTIONS = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                   "reduce_all", "reduce_any")


def _building_v1() -> bool:
    builder = current_builder()
    return builder is not None and builder.tf1_naming


def in_scope(fn: Callable, scope: str) -> Callable:
    """`fn` run in TensorFlow 1's name scope `scope` (or the `name` given), its last op
    named as the scope, when it builds a v1 graph; unchanged elsewhere."""
    split = _name_argument(fn)
    if split is None:
        return fn

    @functools.wraps(fn)
    def scoped(*args: Any, **kwargs: Any) -> Any:
        if not _building_v1():
            return fn(*args, **kwargs)
        args, kwargs, name = split(args, kwargs)
        with name_scope(name or scope) as full:
            # a name ending in "/" is the scope's own name, taken exactly
            return fn(*args, name=full, **kwargs)

    return in_default_graph(scoped)


def _name_argument(fn: Callable) -> Callable[[tuple, dict], tuple[tuple, dict, Any]] | None:
    """How to take the `name` argument out of a call of `fn`: a function of the call's
    ``(args, kwargs)`` giving the rest of them and the name (None if not given); None if
    `fn` takes no `name`."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    names = [p.name for p in parameters]
    if "name" not in names and not any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    position = names.index("name") if "name" in names else None
    if position is not None and any(p.kind is p.VAR_POSITIONAL
                                    for p in parameters[:position]):
        position = None  # `name` is keyword-only after *args

    def split(args: tuple, kwargs: dict) -> tuple[tuple, dict, Any]:
        kwargs = dict(kwargs)
        if position is not None and len(args) > position:
            # given by position: the arguments after it go by keyword
            rest = {n: v for n, v in zip(names[position + 1:], args[position + 1:])}
            return args[:position], {**kwargs, **rest}, args[position]
        return args, kwargs, kwargs.pop("name", None)

    return split


def with_axes_constant(fn: Callable) -> Callable:
    """Reduction `fn` that, reducing every axis of an input of known rank in a v1 graph,
    first makes TensorFlow's ``Const`` of the axes (read by nothing)."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def reduce(*args: Any, **kwargs: Any) -> Any:
        if _building_v1():
            bound = signature.bind(*args, **kwargs)
            given = [bound.arguments.get(k) for k in ("axis", "reduction_indices")]
            rank = getattr(getattr(bound.arguments.get("input_tensor"), "shape", None),
                           "rank", None)
            if all(a is None for a in given) and rank is not None:
                constant(np.arange(rank, dtype=np.int32), name="Const")
        return fn(*args, **kwargs)

    return in_default_graph(reduce)


def apply(namespaces: dict[str, Any]) -> None:
    """Replace the functions of `SCOPES` and `FULL_REDUCTIONS` in the v1 namespaces
    (``""``: the top-level module's globals, else a module) by their scoped forms."""
    for (space, fn_name), scope in SCOPES.items():
        target = namespaces.get(space)
        table = target if isinstance(target, dict) else getattr(target, "__dict__", None)
        if table is not None and callable(table.get(fn_name)):
            table[fn_name] = in_scope(table[fn_name], scope)
    for space in ("", "math"):
        target = namespaces.get(space)
        table = target if isinstance(target, dict) else getattr(target, "__dict__", None)
        for fn_name in FULL_REDUCTIONS:
            if table is not None and callable(table.get(fn_name)):
                table[fn_name] = with_axes_constant(table[fn_name])


__all__ = ["SCOPES", "FULL_REDUCTIONS", "apply", "in_scope", "with_axes_constant"]
