"""Core ops: constants, placeholders and identity."""

from __future__ import annotations

from ...errors import InvalidArgumentError
from ..dtypes import as_dtype
from ..registry import attr, def_op
from ..types import TensorType

Const = def_op("Const", [], {"value": attr("tensor")}, doc="A constant tensor.",
               tags=["constant"])


@Const.infer
def _const_infer(*, value):
    return TensorType(as_dtype(value.dtype), value.shape)


@Const.kernel("reference")
def _const_kernel(*, value):
    return value


Placeholder = def_op("Placeholder", [], {"dtype": attr("dtype"), "shape": attr("shape", None)},
                     doc="A value that must be fed when the graph runs (v1 API); without "
                         "a shape, of unknown rank (any shape may be fed).")


@Placeholder.infer
def _placeholder_infer(*, dtype, shape):
    return TensorType(dtype, shape)


@Placeholder.kernel("reference", context=True)
def _placeholder_kernel(ctx, *, dtype, shape):
    t = TensorType(dtype, shape)
    raise InvalidArgumentError(
        f"you must feed a value for placeholder '{ctx.node.name}' of type {t}")


Identity = def_op("Identity", ["input"], tags=["elementwise"], doc="Returns its input.")


@Identity.infer
def _identity_infer(x):
    return x


@Identity.kernel("reference")
def _identity_kernel(x):
    return x


NoOp = def_op("NoOp", [], stateful=True, side_effects=False,
              doc="Does nothing; groups control dependencies (``tw.group``).")


@NoOp.infer
def _noop_infer():
    return []


@NoOp.kernel("reference")
def _noop_kernel():
    return ()
