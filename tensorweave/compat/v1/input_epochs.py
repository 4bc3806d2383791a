"""TensorFlow 1's ``tf.count_up_to`` and ``tf.train.limit_epochs``: a counter variable
that ends an input pipeline with `OutOfRangeError` after a number of passes.

``CountUpTo`` is its own op because the check and the increment must be one atomic step
on the variable: a queue runner may run the same enqueue op on several threads, and a
separate read, compare and ``assign_add`` would let two of them both pass the limit. Its
kernel holds the variable's lock for both, as TensorFlow's does. It raises
`OutOfRangeError` (not InvalidArgumentError) at the limit, because that is what tells a
`QueueRunner` that its producer is done (it then closes the queue, and consumers drain it
and get OutOfRangeError in turn). It has no native lowering: a step holding it runs the
reference kernel, as one holding ``Print`` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...compiler.dtypes import int32, int64
from ...compiler.ops.common import expect_resource
from ...compiler.registry import attr, def_op, get_op, not_differentiable
from ...compiler.types import TensorType
from ...errors import DTypeError, InvalidArgumentError, OutOfRangeError, VerificationError
from ...frontend.building import apply_op1, convert_to_tensor, user_location
from ...frontend.context import control_dependencies, name_scope
from ...frontend.ops.array import identity
from .graph import GraphKeys, Variable, in_default_graph


def _declare() -> None:
    try:
        get_op("CountUpTo")
        return  # declared by an earlier import of this module's code
    except VerificationError:
        pass
    op = def_op("CountUpTo", ["resource"], {"limit": attr("int")}, stateful=True,
                doc="Increments the integer scalar variable and returns its old value; "
                    "OutOfRangeError (and no increment) once it has reached `limit`.")

    @op.infer
    def _infer(r: Any, *, limit: int) -> TensorType:
        r = expect_resource(r)
        vt = r.value_type
        if vt is None or vt.dtype not in (int32, int64) or vt.rank != 0:
            got = "a non-variable resource" if vt is None else f"a {vt} variable"
            raise DTypeError(f"CountUpTo needs an int32 or int64 scalar variable, got {got}")
        return TensorType(vt.dtype, ())

    @op.kernel("reference", context=True)
    def _kernel(ctx: Any, var: Any, *, limit: int) -> np.ndarray:
        with var.lock:
            if var.value is None:
                from ...errors import FailedPreconditionError
                raise FailedPreconditionError(
                    f"attempting to use uninitialized variable '{var.name}' (run "
                    f"tf.local_variables_initializer() for limit_epochs' counter)")
            old = var.value.copy()
            if old >= limit:
                raise OutOfRangeError(f"Reached limit of {limit}")
            var.value += 1
        return old

    not_differentiable("CountUpTo")


_declare()


@in_default_graph
def count_up_to(ref: Any, limit: int, name: str | None = None) -> Any:
    """Increment the int32/int64 scalar variable `ref` and return its value before the
    increment; once it has reached `limit`, running the op raises `OutOfRangeError`
    instead (and leaves the variable at `limit`)."""
    if not hasattr(ref, "handle"):
        raise DTypeError(f"count_up_to needs a variable, got {type(ref).__name__}",
                         op="tf.count_up_to", location=str(user_location()))
    return apply_op1("CountUpTo", [ref.handle()], {"limit": int(limit)},
                     name=name or "CountUpTo")


@in_default_graph
def limit_epochs(tensor: Any, num_epochs: int | None = None, name: str | None = None) -> Any:
    """`tensor`, `num_epochs` times; the next evaluation raises `OutOfRangeError`. None:
    no limit (`tensor` itself). The count is a local variable (``limit_epochs/epochs``,
    in ``LOCAL_VARIABLES``): run ``tf.local_variables_initializer()`` first."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise InvalidArgumentError(f"num_epochs must be > 0 not {num_epochs}",
                                   op="tf.train.limit_epochs", location=str(user_location()))
    with name_scope(name or "limit_epochs") as scope:
        tensor = convert_to_tensor(tensor)
        epochs = Variable(np.int64(0), name="epochs", trainable=False,
                          collections=[GraphKeys.LOCAL_VARIABLES])
        counter = count_up_to(epochs, num_epochs)
        with control_dependencies([counter]):
            return identity(tensor, name=scope)  # TensorFlow's ``limit_epochs:0``


__all__ = ["count_up_to", "limit_epochs"]
