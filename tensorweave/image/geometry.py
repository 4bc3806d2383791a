"""Flips, rotations by quarter turns and transposes of images
(``tf.image.flip_left_right``, ``rot90``, ``transpose``, ``random_flip_*``): reverses and
transposes of the height and width axes of ``[h, w, c]`` or ``[batch, h, w, c]``
images."""

from __future__ import annotations

from typing import Any

from ..compiler.dtypes import float32, int32
from ..frontend.context import name_scope
from ..frontend.ops.array import _const_array, reshape
from ..frontend.ops.array import transpose as _transpose
from ..frontend.ops.indexing import reverse
from ..frontend.ops.math import cast, equal, floormod, less, where
from ..frontend.ops.random import stateless_uniform, uniform
from ..frontend.tensor import Tensor
from ._checks import image_tensor, shape_error, static_int

TensorLike = Any


def _axes(x: Any) -> tuple[int, int]:
    """The height and width axes of a rank-3 or rank-4 image tensor."""
    return x.ndim - 3, x.ndim - 2


def _checked(image: TensorLike, fn: str) -> Any:
    x = image_tensor(image, fn)
    if any(d == 0 for d in x.shape[-3:]):
        raise shape_error(fn, f"inner 3 dims of 'image.shape' must be > 0: "
                              f"{list(x.shape)}")
    return x


def flip_left_right(image: TensorLike) -> TensorLike:
    """`image` mirrored left to right: the width axis reversed
    (``tf.image.flip_left_right``)."""
    with name_scope("flip_left_right"):
        x = _checked(image, "flip_left_right")
        return reverse(x, [_axes(x)[1]])


def flip_up_down(image: TensorLike) -> TensorLike:
    """`image` upside down: the height axis reversed (``tf.image.flip_up_down``)."""
    with name_scope("flip_up_down"):
        x = _checked(image, "flip_up_down")
        return reverse(x, [_axes(x)[0]])


def _random_flip(image: TensorLike, fn: str, axis_of: int, draw: Any) -> TensorLike:
    """Flip `image` (one image) or each image of a batch with probability 1/2: drawn
    uniforms u in [0, 1), flipped where u < 0.5 (TensorFlow's rank-3 rule; its rank-4
    rule round(u) = 1 differs only at u = 0.5, which has the same probability). The
    choice is a `where`, so a NaN or inf pixel stays where it is (TensorFlow's batch
    version blends ``f * flipped + (1 - f) * image``, which spreads them)."""
    x = _checked(image, fn)
    flipped = reverse(x, [_axes(x)[axis_of]])
    if x.ndim == 3:
        return where(less(draw([]), 0.5), flipped, x)
    batch = x.shape[0]
    if batch is None:
        raise shape_error(fn, f"the batch size must be known when the graph is built (one "
                              f"random draw per image), got shape {list(x.shape)}; flip "
                              f"each image (rank 3) inside a dataset map instead")
    coin = reshape(less(draw([int(batch)]), 0.5), [int(batch), 1, 1, 1])
    return where(coin, flipped, x)


def random_flip_left_right(image: TensorLike, seed: int | None = None) -> TensorLike:
    """`image` mirrored left to right with probability 1/2, each image of a batch on its
    own draw (``tf.image.random_flip_left_right``); `seed` follows ``tw.random``'s seed
    rules (the draws are tensorweave's, not TensorFlow's numbers)."""
    with name_scope("random_flip_left_right"):
        return _random_flip(image, "random_flip_left_right", 1,
                            lambda shape: uniform(shape, 0, 1.0, float32, seed=seed))


def random_flip_up_down(image: TensorLike, seed: int | None = None) -> TensorLike:
    """`image` upside down with probability 1/2, each image of a batch on its own draw
    (``tf.image.random_flip_up_down``)."""
    with name_scope("random_flip_up_down"):
        return _random_flip(image, "random_flip_up_down", 0,
                            lambda shape: uniform(shape, 0, 1.0, float32, seed=seed))


def stateless_random_flip_left_right(image: TensorLike, seed: Any) -> TensorLike:
    """`image` mirrored left to right with probability 1/2, a pure function of `seed`
    (``[a, b]``; ``tf.image.stateless_random_flip_left_right``)."""
    with name_scope("stateless_random_flip_left_right"):
        return _random_flip(image, "stateless_random_flip_left_right", 1,
                            lambda shape: stateless_uniform(shape, seed, 0, 1.0, float32))


def stateless_random_flip_up_down(image: TensorLike, seed: Any) -> TensorLike:
    """`image` upside down with probability 1/2, a pure function of `seed`
    (``tf.image.stateless_random_flip_up_down``)."""
    with name_scope("stateless_random_flip_up_down"):
        return _random_flip(image, "stateless_random_flip_up_down", 0,
                            lambda shape: stateless_uniform(shape, seed, 0, 1.0, float32))


def _swap_hw(x: Any) -> Any:
    return _transpose(x, [1, 0, 2] if x.ndim == 3 else [0, 2, 1, 3])


def transpose(image: TensorLike, name: str | None = None) -> TensorLike:
    """`image` with height and width swapped (``tf.image.transpose``)."""
    with name_scope(name or "transpose"):
        return _swap_hw(_checked(image, "transpose"))


def rot90(image: TensorLike, k: Any = 1, name: str | None = None) -> TensorLike:
    """`image` rotated counter-clockwise by `k` quarter turns (``tf.image.rot90``; `k`
    modulo 4). A `k` computed in the graph (a random rotation) needs square images, so
    that every rotation has the same shape: the four are selected by `where`."""
    with name_scope(name or "rot90"):
        x = _checked(image, "rot90")
        if isinstance(k, Tensor) and _const_array(k) is None:
            return _rot90_dynamic(x, k)
        return _rotated(x, static_int(k, "rot90", "k") % 4)


def _rotated(x: Any, turns: int) -> Any:
    h_axis, w_axis = _axes(x)
    if turns == 1:
        return _swap_hw(reverse(x, [w_axis]))
    if turns == 2:
        return reverse(x, [h_axis, w_axis])
    if turns == 3:
        return reverse(_swap_hw(x), [w_axis])
    return x


def _rot90_dynamic(x: Any, k: Any) -> Any:
    h, w = x.shape[-3], x.shape[-2]
    if h is None or h != w:
        raise shape_error("rot90", f"a `k` computed in the graph needs square images of a "
                                   f"known size (a quarter turn would change the shape), got "
                                   f"shape {list(x.shape)}; pass a Python int k")
    if k.dtype.is_floating or k.ndim != 0:
        raise shape_error("rot90", f"`k` must be an integer scalar, got {k!r}")
    turns = floormod(cast(k, int32), 4)
    out = x
    for t in (1, 2, 3):
        out = where(equal(turns, t), _rotated(x, t), out)
    return out
