"""Resampling along the height and width axes as compositions of existing ops (gather,
arithmetic, einsum) over the sampling tables of `sampling`: they run on every target
and differentiate through those ops' gradients (a gather's gradient adds each output's
gradient back into the pixel it read, as TensorFlow's ResizeBilinearGrad and
ResizeNearestNeighborGrad do)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import bool_
from ..frontend.building import constant
from ..frontend.ops.array import gather, reshape, zeros_like
from ..frontend.ops.einsum import einsum
from ..frontend.ops.math import cast, where

# tables with more taps than this are applied as one [out, in] matrix (einsum) instead
# of one gather per tap: area downscaling by a large factor reads many pixels per output.
# (Gathers cost about the input's size whatever the taps; the limit bounds the graph.)
_MAX_GATHER_TAPS = 32


def _indices(idx: Any) -> Any:
    """Gather indices: a NumPy table as an int32 constant; a table computed in the graph
    (`graph_sampling`) as it is."""
    if isinstance(idx, np.ndarray):
        return constant(np.ascontiguousarray(idx, dtype=np.int32))
    return idx


def _along(values: Any, axis: int, ndim: int, dtype: Any) -> Any:
    """`values` (one per position along `axis`: a NumPy table or a graph tensor) shaped
    to broadcast against a rank-`ndim` tensor."""
    shape = [1] * (ndim - axis)
    shape[0] = -1
    if isinstance(values, np.ndarray):
        return constant(values.reshape(shape).astype(dtype.np))
    return reshape(cast(values, dtype), shape)


def nearest(x: Any, rows: Any, cols: Any) -> Any:
    """`x` ([..., h, w, c]) at the pixels ``rows`` x ``cols``."""
    ndim = x.ndim
    return gather(gather(x, _indices(rows), axis=ndim - 3), _indices(cols), axis=ndim - 2)


def bilinear(x: Any, rows: tuple, cols: tuple) -> Any:
    """Bilinear interpolation of a floating-point `x` with the `sampling.linear` tables of
    both axes, in the kernel's order of operations: each row pair interpolated along the
    width (``left + (right - left) * x_lerp``), then the two results along the height."""
    ndim = x.ndim
    h_axis, w_axis = ndim - 3, ndim - 2
    (top, bottom, y_lerp), (left, right, x_lerp) = rows, cols
    x_weight = _along(x_lerp, w_axis, ndim, x.dtype)
    y_weight = _along(y_lerp, h_axis, ndim, x.dtype)

    def across(r: Any) -> Any:
        lv = gather(r, _indices(left), axis=w_axis)
        rv = gather(r, _indices(right), axis=w_axis)
        return lv + (rv - lv) * x_weight

    upper = across(gather(x, _indices(top), axis=h_axis))
    lower = across(gather(x, _indices(bottom), axis=h_axis))
    return upper + (lower - upper) * y_weight


def weighted(x: Any, rows: tuple, cols: tuple) -> Any:
    """A separable resampling of a floating-point `x`: along the height with the
    ``(indices, weights[, padding])`` taps `rows`, then along the width with `cols`
    (`padding`, a bool ``[taps, out]``, marks taps that only fill the table)."""
    ndim = x.ndim
    return _weighted_axis(_weighted_axis(x, *rows, axis=ndim - 3), *cols, axis=ndim - 2)


def _weighted_axis(x: Any, idx: np.ndarray, w: np.ndarray, pad: np.ndarray | None = None, *,
                   axis: int) -> Any:
    ndim = x.ndim
    if idx.shape[0] <= _MAX_GATHER_TAPS:
        out = None
        for k in range(idx.shape[0]):
            term = gather(x, _indices(idx[k]), axis=axis) * _along(w[k], axis, ndim, x.dtype)
            if pad is not None and pad[k].any():
                # a padding tap adds nothing, also where the pixel it reads is inf or NaN
                # (0 * inf would be NaN; TensorFlow's kernels never read such a tap)
                term = where(_along(pad[k], axis, ndim, bool_), zeros_like(term), term)
            out = term if out is None else out + term
        return out
    size_in = x.shape[axis]
    matrix = np.zeros((idx.shape[1], size_in), np.float64)
    for k in range(idx.shape[0]):
        np.add.at(matrix, (np.arange(idx.shape[1]), idx[k]), w[k].astype(np.float64))
    letters = "nhwc"[4 - ndim:]
    src = letters[axis]
    out_letters = letters.replace(src, "o")
    m = constant(matrix.astype(x.dtype.np))
    return einsum(f"o{src},{letters}->{out_letters}", m, x)


