"""Bitcast: the bytes of a tensor read as another dtype (TensorFlow's ``tf.bitcast``).

The element sizes decide the shape, as in TensorFlow:

- same size: the same shape;
- a smaller target (e.g. f32 -> u8): one more, last, dimension of ``in_size / out_size``;
- a larger target (e.g. u8 -> f32): the last dimension must be ``out_size / in_size`` and
  is consumed.

Bytes are read in this machine's order (little-endian everywhere tensorweave runs, as
TensorFlow's kernel). Bool is refused either way (TensorFlow refuses it too: its bytes
are not a number's), and so is every other non-number dtype; dtypes tensorweave lacks
(uint16/32/64, complex) are refused by `tw.bitcast` before an op is built.
"""

from __future__ import annotations

import numpy as np

from ...errors import DTypeError, ShapeError
from ..dtypes import bool_
from ..registry import attr, def_op, not_differentiable
from ..types import TensorType
from .common import expect_tensor

Bitcast = def_op("Bitcast", ["input"], {"type": attr("dtype")},
                 doc="The bytes of `input` as dtype `type` (TensorFlow's Bitcast): the same "
                     "shape for the same element size, one more last dim for a smaller "
                     "type, the last dim consumed for a larger one.")


def bitcast_shape(shape: tuple, in_bytes: int, out_bytes: int, where: str) -> tuple:
    """The result shape of a bitcast from `in_bytes` to `out_bytes` elements (None dims
    stay unknown); `where` names the conversion in errors."""
    if in_bytes == out_bytes:
        return tuple(shape)
    if in_bytes > out_bytes:
        return (*shape, in_bytes // out_bytes)
    ratio = out_bytes // in_bytes
    if not shape:
        raise ShapeError(f"{where}: a scalar cannot be bitcast to a larger type: the input "
                         f"needs a last dimension of {ratio}, got shape []")
    if shape[-1] is not None and shape[-1] != ratio:
        raise ShapeError(f"{where}: the last dimension of the input must be {ratio} (the "
                         f"output element size / the input element size), got shape "
                         f"{list(shape)}")
    return tuple(shape[:-1])


def _sizes(src, dst) -> tuple[int, int, str]:
    where = f"bitcast from {src.name} to {dst.name}"
    for role, d in (("input", src), ("target", dst)):
        if d is bool_:
            raise DTypeError(f"{where}: bool cannot be bitcast ({role} dtype); cast it to "
                             f"uint8 first")
        if d.kind not in ("float", "int", "uint"):  # (strings: host objects, no bytes)
            raise DTypeError(f"{where}: the {role} dtype must be a number type (float or "
                             f"integer), got {d.name}")
    return src.np.itemsize, dst.np.itemsize, where


@Bitcast.infer
def _bitcast_infer(x, *, type):  # noqa: A002 (TensorFlow's attribute name)
    t = expect_tensor(x, "input")
    in_bytes, out_bytes, where = _sizes(t.dtype, type)
    return TensorType(type, bitcast_shape(t.shape, in_bytes, out_bytes, where))


@Bitcast.kernel("reference")
def _bitcast_kernel(x, *, type):  # noqa: A002
    from ..dtypes import as_dtype
    in_bytes, out_bytes, where = _sizes(as_dtype(x.dtype), type)
    shape = bitcast_shape(x.shape, in_bytes, out_bytes, where)
    # a contiguous copy viewed as the target: NumPy's view changes the last dim the way
    # TensorFlow's shape rule does, then the shape is set explicitly (scalars included)
    flat = np.ascontiguousarray(x).reshape(-1)
    return flat.view(type.np).reshape(shape).copy()


not_differentiable("Bitcast")
