"""``tw.image.convert_image_dtype``: TensorFlow's pixel-range conversions (integers span
[0, MAX], floats [0, 1]) and the saturating cast it uses."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype, int32
from ..frontend.building import constant, convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops.array import identity
from ..frontend.ops.math import cast, clip_by_value, floordiv, minimum, multiply
from ._checks import type_error

TensorLike = Any


def saturate_cast(x: Any, dtype: DType) -> Any:
    """`x` cast to `dtype` after clamping to the values `dtype` holds, as TensorFlow's
    ``tf.dtypes.saturate_cast``: the clamp bounds are taken in x's dtype and nudged
    toward 0 where rounding would put them outside `dtype` (float32(2**31 - 1) is 2**31,
    so float32 -> int32 clamps at 2147483520)."""
    in_dt = x.dtype
    np_in = in_dt.np
    try:
        promoted: Any = np.promote_types(np_in, dtype.np)
    except TypeError:  # bfloat16
        promoted = float
    low = np_in.type(np.maximum(in_dt.min, dtype.min))
    if np.array([low, dtype.min], dtype=promoted)[0] < np.array([low, dtype.min],
                                                                dtype=promoted)[1]:
        low = np.nextafter(low, np_in.type(0), dtype=np_in)
    high = np_in.type(np.minimum(float(in_dt.max), float(dtype.max)))
    if np.array([high, dtype.max], dtype=promoted)[0] > np.array([high, dtype.max],
                                                                 dtype=promoted)[1]:
        high = np.nextafter(high, np_in.type(0), dtype=np_in)
    clamped = clip_by_value(x, constant(np.asarray(low, np_in)), constant(np.asarray(high, np_in)))
    return cast(clamped, dtype)


def convert_image_dtype(image: TensorLike, dtype: Any, saturate: bool = False,
                        name: str | None = None) -> TensorLike:
    """`image` in `dtype`, its values rescaled between the dtypes' pixel ranges
    (``tf.image.convert_image_dtype``): integer images span [0, MAX] of their dtype,
    float images [0, 1].

    Integer to integer multiplies (widening: cast, then times (MAX_out + 1) // (MAX_in +
    1)) or floor-divides (narrowing: by (MAX_in + 1) // (MAX_out + 1), then cast). Integer
    to float casts then multiplies by ``1 / MAX_in`` (rounded to the float dtype). Float to
    integer multiplies by ``MAX_out + 0.5`` then casts, truncating toward zero, so 1.0
    becomes MAX and values past the range are clamped only with `saturate`. Float to float
    is a cast; the same dtype returns the image unchanged."""
    with name_scope(name or "convert_image"):
        x = convert_to_tensor(image)
        dtype = as_dtype(dtype)
        if not (dtype.is_floating or dtype.is_integer):
            raise type_error("convert_image_dtype", f"dtype must be either floating point "
                                                    f"or integer, got {dtype.name}")
        src = x.dtype
        if not (src.is_floating or src.is_integer):
            raise type_error("convert_image_dtype", f"image dtype must be either floating "
                                                    f"point or integer, got {src.name}")
        if dtype == src:
            return identity(x)
        if src.is_integer and dtype.is_integer:
            scale_in, scale_out = int(src.max), int(dtype.max)
            if scale_in > scale_out:
                scaled = floordiv(x, (scale_in + 1) // (scale_out + 1))
                return saturate_cast(scaled, dtype) if saturate else cast(scaled, dtype)
            widened = saturate_cast(x, dtype) if saturate else cast(x, dtype)
            return multiply(widened, (scale_out + 1) // (scale_in + 1))
        if src.is_floating and dtype.is_floating:
            return cast(x, dtype)
        if src.is_integer:
            return multiply(cast(x, dtype), 1.0 / int(src.max))
        scale = float(dtype.max) + 0.5
        with np.errstate(over="ignore"):
            overflows = bool(np.isinf(src.np.type(scale)))
        if overflows:
            # TensorFlow multiplies by inf here and returns INT_MIN for every pixel
            raise type_error("convert_image_dtype", f"{src.name} cannot hold the scale "
                                                    f"{scale} that maps 1.0 to {dtype.name}'s "
                                                    f"maximum; convert the image to float32 "
                                                    f"first")
        scaled = multiply(x, scale)
        if saturate:
            return saturate_cast(scaled, dtype)
        if float(src.np.type(scale)) > float(dtype.max) and dtype.np.itemsize < 4:
            # x's dtype rounds the scale up (bfloat16: 255.5 -> 256; float16 and bfloat16:
            # 32767.5 -> 32768), so 1.0 scales past MAX and the cast would wrap it (a white
            # pixel 0 or -32768). TensorFlow's vectorized cast saturates there (255, 32767
            # for images of 16 pixels or more): through int32, which holds the product
            return cast(minimum(cast(scaled, int32), int(dtype.max)), dtype)
        return cast(scaled, dtype)
