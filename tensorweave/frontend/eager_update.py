"""Optimizer updates outside any graph: TensorFlow 2's everyday training loop.

```python
with tw.GradientTape() as tape:
    loss = loss_fn(model(x), y)
grads = tape.gradient(loss, model.trainable_variables)
opt.apply_gradients(zip(grads, model.trainable_variables))
```

An optimizer's update is graph code (`frontend/optimizers.py`): read the slots, compute,
assign. Run eagerly op by op it would be a few dozen tiny kernel launches per variable
through the Python eager path. Instead `apply_gradients` called eagerly *traces the same
update code once* into a `tw.compile` function, per (optimizer, variables, gradient
layout, hyperparameters), and calls it with the gradients as arguments. The traced graph
is exactly the one `apply_gradients` builds inside ``@tw.compile``, so an eager step and a
compiled step leave the same variables (bitwise on the same target); the slots and the
``iterations`` counter are the optimizer's own variables (what `tw.train.Checkpoint`
saves), created by the first trace; the function runs on the default target.

What is static and what is an argument:

* the gradients are arguments; an `IndexedSlices` gradient passes its values and indices
  (its dense shape is static). The functions trace with ``reduce_retracing``, so slices
  whose number of rows changes from step to step share one trace after the second;
* hyperparameters (``beta_1``, ``clipnorm``, ...: the optimizer's public attributes) are
  static, part of the cache key: changing one traces again;
* the learning rate: a schedule is evaluated inside the update at ``iterations``, as in a
  compiled step; a `tw.Variable` is read inside it; a callable is called eagerly each
  step and its result used as below; a Python number is static (bitwise the constant a
  compiled step bakes in) until it has taken more than ``_MAX_STATIC_LRS`` values, after
  which numbers are a float64 argument (a hand-decayed rate does not trace every step);
  a tensor is an argument.

`eager_gradients` is `compute_gradients` / `minimize` outside a graph: a callable loss
is run under a `GradientTape` (Keras' ``minimize(loss_fn, var_list)``), or the gradients
come from the tape the caller passes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import CompileError
from .building import convert_to_tensor
from .indexed_slices import IndexedSlices
from .tensor import EagerTensor, Tensor
from .variables import Variable

# compiled updates kept per optimizer (least recently used dropped first)
_MAX_FUNCTIONS = 32
# distinct Python-number learning rates traced as constants before numbers become an
# argument of the update
_MAX_STATIC_LRS = 4


class EagerUpdates:
    """The compiled update functions of one optimizer, by cache key, with the objects
    their keys name by id (kept alive, so that no id is reused while its key lives)."""

    def __init__(self) -> None:
        self.functions: OrderedDict[Any, tuple[Callable[..., Any], tuple]] = OrderedDict()
        self.static_lrs: set[Any] = set()

    def get(self, key: Any) -> Callable[..., Any] | None:
        """The function cached under `key` (now the most recently used), or None."""
        entry = self.functions.get(key)
        if entry is None:
            return None
        self.functions.move_to_end(key)
        return entry[0]

    def put(self, key: Any, fn: Callable[..., Any], keepalive: tuple) -> None:
        """Cache `fn` under `key`, dropping the least recently used beyond the limit."""
        self.functions[key] = (fn, keepalive)
        while len(self.functions) > _MAX_FUNCTIONS:
            self.functions.popitem(last=False)


def _updates_of(opt: Any) -> EagerUpdates:
    updates = opt.__dict__.get("_eager_updates")
    if updates is None:
        updates = opt._eager_updates = EagerUpdates()
    return updates


# ------------------------------------------------------------------------ the cache key

_PRIMITIVES = (bool, int, float, str, bytes, type(None))


def _freeze(value: Any, keepalive: list) -> Any:
    """A hashable stand-in for a hyperparameter's value: itself for numbers and strings,
    tuples for containers, and the identity of anything else (kept alive)."""
    if isinstance(value, _PRIMITIVES):
        return (type(value).__name__, value)
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_freeze(v, keepalive) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(_freeze(v, keepalive) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((repr(k), _freeze(v, keepalive))
                                      for k, v in value.items()), key=lambda kv: kv[0])))
    keepalive.append(value)
    return ("id", id(value))


def _hyper_key(opt: Any, keepalive: list) -> tuple:
    """The optimizer's hyperparameters: its public attributes (all but the learning
    rate, handled apart) and the private ones its class names in `_eager_key_attrs`."""
    items = []
    for k, v in vars(opt).items():
        if k == "learning_rate" or (k.startswith("_") and k not in opt._eager_key_attrs):
            continue
        items.append((k, _freeze(v, keepalive)))
    return tuple(sorted(items, key=lambda kv: kv[0]))


def _lr_plan(opt: Any, updates: EagerUpdates, keepalive: list) -> tuple[Any, Any, Any]:
    """How the learning rate enters the update: (key part, the value the trace uses in
    place of ``opt.learning_rate`` or None to use it as is, and the array argument or
    None)."""
    from .optimizers import _is_schedule
    lr = opt.learning_rate
    if _is_schedule(lr):  # a function of `iterations`: evaluated inside the update
        keepalive.append(lr)
        return ("schedule", id(lr)), None, None
    if callable(lr) and not isinstance(lr, Variable):
        lr = lr()  # TensorFlow 2 calls it on every step
    if isinstance(lr, Variable):
        keepalive.append(lr)
        return ("variable", id(lr)), lr, None
    if isinstance(lr, (int, float)) and not isinstance(lr, bool):
        static = (type(lr).__name__, lr)
        if static in updates.static_lrs or len(updates.static_lrs) < _MAX_STATIC_LRS:
            updates.static_lrs.add(static)
            return ("number",) + static, lr, None
        return ("argument", "float64", ()), _ARGUMENT, np.asarray(lr, np.float64)
    if isinstance(lr, (Tensor,)):
        raise CompileError(f"{type(opt).__name__}: the learning rate is the symbolic tensor "
                           f"'{lr.name}' of a graph, which an eager step cannot read; use a "
                           f"number, a tw.Variable, a schedule or a callable")
    arr = np.asarray(lr) if isinstance(lr, (EagerTensor, np.ndarray, np.generic)) else \
        np.asarray(convert_to_tensor(lr))
    return ("argument", arr.dtype.str, arr.shape), _ARGUMENT, arr


class _Argument:
    """Marks a learning rate that is an argument of the traced update."""


_ARGUMENT = _Argument()


# --------------------------------------------------------------------------- gradients

def _array(value: Any) -> np.ndarray:
    """A gradient (or part of one) as a NumPy array, without copying an array or an eager
    tensor's buffer."""
    if type(value) is np.ndarray:
        return value
    if isinstance(value, EagerTensor):
        return np.asarray(value)
    return np.asarray(convert_to_tensor(value))


def _flatten(grads: Sequence[Any]) -> tuple[list[np.ndarray], tuple]:
    """The gradients' arrays in order, and their layout: ``("dense",)`` or
    ``("sparse", dense_shape)`` each."""
    arrays: list[np.ndarray] = []
    layout = []
    for g in grads:
        if isinstance(g, IndexedSlices):
            arrays += [_array(g.values), _array(g.indices)]
            layout.append(("sparse", tuple(g.dense_shape)))
        else:
            arrays.append(_array(g))
            layout.append(("dense",))
    return arrays, tuple(layout)


def _unflatten(layout: tuple, tensors: Sequence[Any]) -> list[Any]:
    out, i = [], 0
    for kind in layout:
        if kind[0] == "sparse":
            out.append(IndexedSlices(tensors[i], tensors[i + 1], kind[1]))
            i += 2
        else:
            out.append(tensors[i])
            i += 1
    return out


def is_symbolic(value: Any) -> bool:
    """Whether `value` (a gradient) is a tensor of a graph (a TensorFlow 1 graph built
    without `as_default`), which only a graph-mode update can use."""
    if isinstance(value, IndexedSlices):
        return isinstance(value.values, Tensor) or isinstance(value.indices, Tensor)
    return isinstance(value, Tensor)


# ----------------------------------------------------------------------------- updates

def apply_eagerly(opt: Any, pairs: list[tuple[Any, Variable]], name: str | None) -> Any:
    """Apply ``(gradient, variable)`` `pairs` (None gradients already dropped) now, with
    `opt`'s update traced once into a compiled function (see the module docstring);
    returns ``opt.iterations``."""
    from .function import compile as tw_compile

    variables = [v for _, v in pairs]
    arrays, layout = _flatten([g for g, _ in pairs])
    updates = _updates_of(opt)
    keepalive: list[Any] = list(variables)
    lr_key, lr_value, lr_array = _lr_plan(opt, updates, keepalive)
    key = (tuple(id(v) for v in variables), layout, _hyper_key(opt, keepalive), lr_key,
           name)
    fn = updates.get(key)
    if fn is None:
        def update(*args: Any) -> None:
            grads = _unflatten(layout, args[:len(args) - (lr_array is not None)])
            override = args[-1] if lr_value is _ARGUMENT else lr_value
            previous = opt._lr_override
            opt._lr_override = override
            try:
                opt.apply_gradients(list(zip(grads, variables)), name=name)
            finally:
                opt._lr_override = previous

        fn = tw_compile(update, name=f"{opt.name}_apply_gradients", reduce_retracing=True)
        fn.watch_static_owners = False  # `key` holds the hyperparameters already
        updates.put(key, fn, tuple(keepalive))
    if lr_array is not None:
        arrays.append(lr_array)
    fn(*arrays)
    return opt.iterations


def eager_gradients(opt: Any, loss: Any, var_list: Any, tape: Any) -> list[tuple[Any, Any]]:
    """``[(gradient, variable), ...]`` outside a graph: `loss` (a callable) run under a
    new `GradientTape`, or differentiated on `tape` (the tape that recorded it).
    `var_list` may be a callable (called after the loss, so that a model built by its
    first call has its variables); None means the trainable variables the loss read."""
    from .tape import GradientTape
    cls = type(opt).__name__
    if tape is None:
        if not callable(loss):
            raise CompileError(
                f"{cls}.minimize outside @tw.compile needs `loss` as a callable (a loss "
                f"tensor computed eagerly keeps no record of how it was computed), or the "
                f"GradientTape that recorded it as tape=")
        with GradientTape() as tape:
            if var_list is not None and not callable(var_list):
                tape.watch(list(var_list))
            loss = loss()
    elif callable(loss):
        with tape:
            loss = loss()
    if callable(var_list):
        var_list = var_list()
    if var_list is None:
        var_list = [v for v in tape.watched_variables() if v.trainable]
        if not var_list:
            raise CompileError(f"{cls}.minimize: the loss reads no trainable variables; "
                               f"pass var_list")
    var_list = list(var_list)
    grads = tape.gradient(loss, var_list)
    return list(zip(grads, var_list))


__all__ = ["apply_eagerly", "eager_gradients", "is_symbolic", "EagerUpdates"]
