"""``tw.bitcast``: a tensor's bytes read as another dtype, without copying values through
a conversion (TensorFlow's ``tf.bitcast``; the shape rule is in
`tensorweave.compiler.ops.bitcast`)."""

from __future__ import annotations

from typing import Any

from ...compiler.dtypes import DType, as_dtype
from ...errors import DTypeError
from ..building import apply_op1, convert_to_tensor, user_location
from ..tensor import EagerTensor, Tensor


def bitcast(input: Any, type: DType | str, name: str | None = None) -> Tensor | EagerTensor:  # noqa: A002
    """The bytes of `input` as dtype `type` (``tf.bitcast``). The same element size keeps
    the shape; a smaller `type` adds a last dimension of ``in_size / out_size`` (f32 ->
    uint8: ``[..., 4]``); a larger one needs a last dimension of ``out_size / in_size``
    and removes it. Not differentiable; bool is refused, as in TensorFlow."""
    x = convert_to_tensor(input)
    try:
        target = as_dtype(type)
    except DTypeError as e:
        loc = user_location()
        raise DTypeError(f"cannot bitcast {x.dtype.name} to {type!r}: {e.message} (tensorweave "
                         f"has no unsigned 16/32/64-bit or complex dtypes)", op="tw.bitcast",
                         location=str(loc) if loc else None) from None
    return apply_op1("Bitcast", [x], {"type": target}, name=name)


__all__ = ["bitcast"]
