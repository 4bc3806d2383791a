"""Gradient APIs: `gradients` inside a graph, `grad` and `value_and_grad` on functions."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..compiler.ir import Value
from ..errors import CompileError, DTypeError, TracingError
from . import nest
from .building import apply_op1, convert_to_tensor, user_location
from .context import current_builder, name_scope
from .indexed_slices import aggregate
from .tensor import Tensor
from .variables import Variable


def stop_gradient(input: Any, name: str | None = None) -> Any:
    """The input unchanged, but treated as a constant by differentiation."""
    return apply_op1("StopGradient", [input], name=name)


def _values_of(x: Any) -> list[Value]:
    """The graph values standing for `x`: a tensor's value, or every read of a variable."""
    builder = current_builder()
    if isinstance(x, Variable):
        handle = builder.var_handles.get(x.shared_name)
        if handle is None:
            return []
        return [n.outputs[0] for n in builder.graph.nodes
                if n.op == "ReadVariable" and n.inputs[0] is handle]
    t = convert_to_tensor(x)
    if not isinstance(t, Tensor):
        raise TracingError("tw.gradients needs tensors of the graph being built")
    return [t.value]


def gradients(ys: Any, xs: Any, grad_ys: Any = None, name: str = "gradients",
              stop_gradients: Any = None, unconnected_gradients: str = "none") -> list[Any]:
    """Symbolic gradients of ``sum(ys)`` with respect to each of `xs` (TensorFlow's
    ``tf.gradients``). `xs` may hold tensors and variables. Returns a list with one tensor
    per x; unconnected xs give None, or zeros with ``unconnected_gradients="zero"``."""
    return sparse_gradients(ys, xs, grad_ys, name, stop_gradients, unconnected_gradients,
                            keep_sparse=False)


def sparse_gradients(ys: Any, xs: Any, grad_ys: Any = None, name: str = "gradients",
                     stop_gradients: Any = None, unconnected_gradients: str = "none", *,
                     keep_sparse: bool = True) -> list[Any]:
    """`gradients`, where the gradient of a variable that only Gathers read is a
    `tw.IndexedSlices` (what optimizers take, to update only the rows looked up)."""
    if current_builder() is None:
        raise TracingError("tw.gradients builds gradient ops and works inside @tw.compile "
                           "or a tw.compat.v1 Graph; use tw.grad(fn) to differentiate a "
                           "function directly")
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError("unconnected_gradients must be 'none' or 'zero'")
    from ..passes.autodiff import add_gradients
    ys_list = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    xs_list = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    y_vals = [convert_to_tensor(y).value for y in ys_list]
    for y in y_vals:
        if not y.type.dtype.is_floating:
            # the autodiff pass would fail later, without the user's line
            loc = user_location()
            raise DTypeError(f"tw.gradients: ys must be floating point (f16, bf16, f32, f64) "
                             f"to have gradients, got '{y.name}' of type {y.type}",
                             location=str(loc) if loc else None)
    gy = None
    if grad_ys is not None:
        gy_list = list(grad_ys) if isinstance(grad_ys, (list, tuple)) else [grad_ys]
        gy = [None if g is None else convert_to_tensor(g).value for g in gy_list]
    x_vals = [_values_of(x) for x in xs_list]
    from .control_flow import check_no_region_reads_reach
    # (reads inside a region that assigns the variable: no gradient, an error)
    check_no_region_reads_reach(current_builder().graph,
                                [x.shared_name for x in xs_list if isinstance(x, Variable)],
                                y_vals)
    flat = [v for vs in x_vals for v in vs]
    stops = [convert_to_tensor(s).value for s in (stop_gradients or [])]
    with name_scope(name):
        flat_grads = add_gradients(y_vals, flat, gy, stops, keep_sparse=keep_sparse)
        out, i = [], 0
        for x, vs in zip(xs_list, x_vals):
            parts = [g for g in flat_grads[i:i + len(vs)] if g is not None]
            i += len(vs)
            if parts:
                # several reads of one variable: their gradients add up
                out.append(aggregate(parts))
            elif unconnected_gradients == "zero":
                out.append(apply_op1("ZerosLike", [x]))
            else:
                out.append(None)
    return out


def _check_scalar_loss(y: Any, fn: Callable) -> Tensor:
    y = convert_to_tensor(y)
    if y.shape != () or not y.dtype.is_floating:
        raise CompileError(f"tw.grad: {getattr(fn, '__name__', 'fn')} must return a float "
                           f"scalar, got {y.type}")
    return y


def _differentiable(arg: Any, i: int, fn: Callable, to_tensor: Callable[[Any], Any]) -> Any:
    """Positional argument `i` of `fn`, which `tw.grad` differentiates with respect to,
    with its Python floats made tensors by `to_tensor` (as a static value of the trace
    its gradient would be 0, not the derivative); an integer or bool leaf is an error,
    as in JAX (it has no derivative, and a silent 0 would pass for one)."""
    def leaf(x: Any) -> Any:
        if type(x) is float:  # (not np.float64, an array of its own dtype)
            return to_tensor(x)
        dtype = getattr(x, "dtype", None)
        if isinstance(x, (bool, int)) or (dtype is not None and
                                         not convert_to_tensor(x).dtype.is_floating):
            kind = type(x).__name__ if isinstance(x, (bool, int)) else \
                convert_to_tensor(x).dtype.ir_name
            raise DTypeError(f"tw.grad: argument {i} of {getattr(fn, '__name__', 'fn')} "
                             f"is differentiated (argnums) but holds a {kind}, which has "
                             f"no derivative; pass floats, or leave it out of argnums",
                             location=_where())
        return x
    return nest.map_structure(leaf, arg)


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc is not None else None


def _grad_impl(fn: Callable, argnums: int | Sequence[int], with_value: bool) -> Callable:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def traced(*args: Any, **kwargs: Any) -> Any:
        for i in nums:
            if i >= len(args):
                raise TypeError(f"argnums {i} is out of range for {len(args)} positional "
                                f"arguments")
        args = list(args)
        for i in nums:
            args[i] = _differentiable(args[i], i, fn, convert_to_tensor)
        value = _check_scalar_loss(fn(*args, **kwargs), fn)
        flat = [nest.flatten(args[i]) for i in nums]
        # One backward pass for every argument: the gradient ops are shared.
        gs = gradients([value], [x for leaves, _ in flat for x in leaves],
                       unconnected_gradients="zero")
        results, start = [], 0
        for leaves, tree in flat:
            results.append(nest.unflatten(tree, gs[start:start + len(leaves)]))
            start += len(leaves)
        g = results[0] if single else tuple(results)
        return (value, g) if with_value else g

    compiled = None

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal compiled
        if current_builder() is not None:
            return traced(*args, **kwargs)
        if compiled is None:
            from .function import compile
            compiled = compile(traced, name=f"grad_{getattr(fn, '__name__', 'fn')}")
        # Python floats as float32 arrays: arguments of the compiled call, not static
        # values (a new number would trace again)
        args = tuple(_differentiable(a, i, fn, np.float32) if i in nums or i - len(args) in nums
                     else a for i, a in enumerate(args))
        return compiled(*args, **kwargs)

    return wrapper


def grad(fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """A function computing the gradient of scalar-valued `fn` with respect to its
    positional argument(s) `argnums` (each may be a nested structure of tensors).

    Called inside a traced function it adds gradient ops to that graph; called directly
    it compiles itself (once per signature) and returns NumPy arrays."""
    return _grad_impl(fn, argnums, with_value=False)


def value_and_grad(fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """Like `grad`, but the function returns ``(fn(...), gradient)``."""
    return _grad_impl(fn, argnums, with_value=True)
