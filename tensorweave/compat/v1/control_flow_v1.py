"""TensorFlow 1's ``tf.while_loop`` (one loop variable comes back as itself), ``tf.cond``
(`strict`, and one-element results unpacked without it), ``tf.switch_case`` (an
integer-indexed conditional) and ``tf.tuple`` (tensors that are ready only when all of
them are), on ``tw.while_loop``, ``tw.cond``, ``tw.case`` and control dependencies."""

from __future__ import annotations

import builtins
from typing import Any

from ...compiler import ir
from ...frontend.context import control_dependencies, name_scope
from ...frontend.control_flow import case
from ...frontend.control_flow import cond as _cond
from ...frontend.control_flow import while_loop as _while_loop
from ...frontend.grouping import group
from ...frontend.ops import array as _array
from ...frontend.ops import math as _math
from ...frontend.tensor import Tensor
from ...frontend.tensor_array import TensorArray
from .graph import in_default_graph


def _leaves(structure: Any) -> list[Any]:
    """The tensors and TensorArrays of a nest of lists, tuples and dicts (a TensorArray
    is one leaf, as TensorFlow's nest sees it)."""
    if isinstance(structure, TensorArray) or not isinstance(structure, (list, builtins.tuple,
                                                                        dict)):
        return [structure]
    values = structure.values() if isinstance(structure, dict) else structure
    return [leaf for v in values for leaf in _leaves(v)]


@in_default_graph
def while_loop(cond: Any, body: Any, loop_vars: Any, shape_invariants: Any = None,
               parallel_iterations: int = 10, back_prop: bool = True,
               swap_memory: bool = False, name: str | None = None,
               maximum_iterations: Any = None, return_same_structure: bool = False) -> Any:
    """TensorFlow 1's ``tf.while_loop`` (its parameters in its order: `name` before
    `maximum_iterations`): ``tw.while_loop``, except that without
    ``return_same_structure=True`` a result holding one tensor (or TensorArray) is that
    tensor itself, not a one-element list: ``tf.while_loop(c, b, [i])`` is a tensor."""
    # as TensorFlow 1: the loop's ops, its body's included, under the name scope "while"
    # (made unique: "while_1"), the loop node named after the scope
    with name_scope(name or "while") as scope:
        out = _while_loop(cond, body, loop_vars, shape_invariants, parallel_iterations,
                          back_prop, swap_memory, maximum_iterations, scope)
    if return_same_structure:
        return out
    leaves = _leaves(out)
    return leaves[0] if len(leaves) == 1 else out


def _unpacked_if_singleton(fn: Any) -> Any:
    """`fn` returning the element of a one-element list or tuple it returns."""
    def call() -> Any:
        out = fn()
        if isinstance(out, (list, builtins.tuple)) and not isinstance(out, TensorArray) and \
                len(out) == 1:
            return out[0]
        return out
    return call


@in_default_graph
def cond(pred: Any, true_fn: Any = None, false_fn: Any = None, strict: bool = False,
         name: str | None = None, fn1: Any = None, fn2: Any = None) -> Any:
    """TensorFlow 1's ``tf.cond`` (its parameters in its order; `fn1`/`fn2` are the old
    names of `true_fn`/`false_fn`): ``tw.cond``, except that without ``strict=True`` a
    one-element list or tuple that a branch returns is unpacked, so ``tf.cond(p, lambda:
    [a], lambda: [b])`` is a tensor (TensorFlow 1's non-strict mode; TensorFlow 2's graphs
    with control flow v2 ignore `strict`)."""
    for new, old, label in ((true_fn, fn1, "true_fn"), (false_fn, fn2, "false_fn")):
        if new is not None and old is not None:
            raise TypeError(f"tf.cond: {label} and {'fn1' if label == 'true_fn' else 'fn2'} "
                            f"may not be set simultaneously")
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if true_fn is None or false_fn is None:
        raise TypeError("tf.cond: true_fn and false_fn are required")
    if not strict:
        true_fn, false_fn = _unpacked_if_singleton(true_fn), _unpacked_if_singleton(false_fn)
    # as TensorFlow 1: the branches' ops under the name scope "cond" (``cond/add``)
    with name_scope(name or "cond") as scope:
        return _cond(pred, true_fn, false_fn, scope)


def _branches(branch_fns: Any) -> list[Any]:
    """`branch_fns` (callables, ``(int, callable)`` pairs or ``{int: callable}``) as the
    list of callables in key order, checked as TensorFlow checks them."""
    if not branch_fns:
        raise ValueError("switch_case: must provide at least one item in 'branch_fns'")
    if not isinstance(branch_fns, (list, builtins.tuple, dict)):
        raise TypeError(f"switch_case: 'branch_fns' must be a list, tuple, or dict, got "
                        f"{type(branch_fns).__name__}")
    pairs = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in pairs):
        pairs = list(enumerate(pairs))
    for pair in pairs:
        if not isinstance(pair, builtins.tuple) or len(pair) != 2:
            raise TypeError(f"switch_case: each entry in 'branch_fns' must be a 2-tuple, "
                            f"got {pair!r}")
        key, fn = pair
        if not isinstance(key, int) or isinstance(key, bool):
            raise TypeError(f"switch_case: key must be a Python `int`, got {type(key).__name__}")
        if not callable(fn):
            raise TypeError(f"switch_case: fn for key {key} must be callable")
    keys = [k for k, _ in pairs]
    if min(keys) < 0 or max(keys) >= len(keys) or len(set(keys)) != len(keys):
        raise ValueError(f"switch_case: branch indices (keys) must form contiguous range of "
                         f"[0 to {len(keys)}) but found {{{','.join(map(str, sorted(keys)))}}}")
    return [fn for _, fn in sorted(pairs, key=lambda p: p[0])]


@in_default_graph
def switch_case(branch_index: Any, branch_fns: Any, default: Any = None,
                name: str = "switch_case") -> Any:
    """The result of ``branch_fns[branch_index]()``; an index out of range runs
    `default`, or without one the last branch (TensorFlow's ``tf.switch_case``). Only the
    chosen branch runs. `branch_index` is an integer scalar tensor."""
    if not isinstance(branch_index, Tensor):
        raise TypeError(f"switch_case: 'branch_index' must be a Tensor, got "
                        f"{type(branch_index).__name__}")
    if not branch_index.dtype.is_integer or len(branch_index.shape):
        raise TypeError(f"switch_case: 'branch_index' must be an integer scalar tensor, got "
                        f"{branch_index.dtype.ir_name}{list(branch_index.shape)}")
    fns = _branches(branch_fns)
    if default is not None:
        if not callable(default):
            raise TypeError("switch_case: default must be callable")
        fns.append(default)
    last = len(fns) - 1
    index = branch_index
    out_of_range = _math.logical_or(_math.less(index, 0), _math.greater_equal(index, last + 1))
    index = _math.where(out_of_range, _math.cast(last, index.dtype), index)
    if last == 0:
        return fns[0]()
    pairs = [(_math.equal(index, _math.cast(k, index.dtype)), fn) for k, fn in
             enumerate(fns[:-1])]
    return case(pairs, default=fns[-1], name=name)


@in_default_graph
def tuple(tensors: Any, name: str | None = None,  # noqa: A001 (TensorFlow's name)
          control_inputs: Any = None) -> list[Any]:
    """`tensors` again, each available only after every one of them (and every op of
    `control_inputs`) has been computed: a barrier (TensorFlow's ``tf.tuple``). None
    entries stay None; an op entry becomes an op that runs after the barrier."""
    tensors = list(tensors)
    gating = [t for t in tensors if t is not None] + list(control_inputs or [])
    for t in gating:
        if not isinstance(t, (Tensor, ir.Node)):
            raise TypeError(f"tf.tuple: expected tensors or ops, got {t!r}")
    gate = group(*gating, name=name or "tuple")
    out: list[Any] = []
    with control_dependencies([gate]):
        for t in tensors:
            if isinstance(t, Tensor):
                out.append(_array.identity(t))
            elif isinstance(t, ir.Node):
                out.append(group(t))
            else:
                out.append(None)
    return out


__all__ = ["cond", "switch_case", "tuple", "while_loop"]
