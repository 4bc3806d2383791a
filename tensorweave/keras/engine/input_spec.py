"""`InputSpec`: what a layer accepts (rank, dtype, fixed dims), and the check that turns
an input it cannot take into an error naming the layer, the input, what was expected
and what came (tf_keras' messages), with the user's line."""

from __future__ import annotations

from typing import Any

from ...errors import ShapeError
from ...frontend.call_site import user_location
from ...frontend.nest import flatten

__all__ = ["InputSpec", "assert_input_compatibility", "display_shape", "layer_error"]


class InputSpec:
    """The rank (`ndim`, `min_ndim`, `max_ndim`), `dtype`, full `shape` (None for any
    dim) and fixed dims (`axes`: ``{-1: 784}``) an input of a layer must have."""

    def __init__(self, dtype: Any = None, shape: Any = None, ndim: int | None = None,
                 max_ndim: int | None = None, min_ndim: int | None = None,
                 axes: dict[int, int | None] | None = None, allow_last_axis_squeeze: bool = False,
                 name: str | None = None, optional: bool = False) -> None:
        self.dtype = None if dtype is None else getattr(dtype, "name", str(dtype))
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        self.name = name
        self.optional = optional
        if self.axes and self.ndim is None and self.min_ndim is None:
            # the largest axis named must exist
            need = max(a if a >= 0 else -a - 1 for a in self.axes) + 1
            self.min_ndim = need

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in (("dtype", self.dtype), ("shape", self.shape),
                                          ("ndim", self.ndim), ("max_ndim", self.max_ndim),
                                          ("min_ndim", self.min_ndim),
                                          ("axes", self.axes or None)) if v is not None]
        return f"InputSpec({', '.join(parts)})"


def display_shape(shape: Any) -> str:
    """A shape as Keras prints it: ``(None, 784)``."""
    return str(tuple(None if d is None else int(d) for d in shape))


def layer_error(layer_name: str, message: str) -> ShapeError:
    """A `ShapeError` about layer `layer_name` at the user's line."""
    loc = user_location()
    return ShapeError(message, op=f'layer "{layer_name}"', location=str(loc) if loc else None)


def _incompatible(index: int, layer_name: str, what: str) -> ShapeError:
    return layer_error(layer_name, f'Input {index} of layer "{layer_name}" is incompatible '
                                   f"with the layer: {what}")


def assert_input_compatibility(input_spec: Any, inputs: Any, layer_name: str) -> None:
    """Raise a `ShapeError` naming the layer, the input and the difference when `inputs`
    do not meet `input_spec` (an `InputSpec`, a list of them, or None)."""
    if not input_spec:
        return
    specs = flatten(input_spec)[0]
    xs = flatten(inputs)[0]
    if len(xs) != len(specs):
        raise layer_error(layer_name, f'Layer "{layer_name}" expects {len(specs)} input(s), '
                                      f"but it received {len(xs)} input tensors")
    for i, (x, spec) in enumerate(zip(xs, specs)):
        if spec is None or (x is None and spec.optional):
            continue
        if not hasattr(x, "shape"):
            raise TypeError(f"Inputs to a layer should be tensors. Got {x!r} (of type "
                            f"{type(x).__name__}) as input for layer '{layer_name}'.")
        shape = list(x.shape)
        ndim = len(shape)
        if spec.ndim is not None and not spec.allow_last_axis_squeeze and ndim != spec.ndim:
            raise _incompatible(i, layer_name, f"expected ndim={spec.ndim}, found ndim={ndim}. "
                                               f"Full shape received: {display_shape(shape)}")
        if spec.max_ndim is not None and ndim > spec.max_ndim:
            raise _incompatible(i, layer_name, f"expected max_ndim={spec.max_ndim}, found "
                                               f"ndim={ndim}. Full shape received: "
                                               f"{display_shape(shape)}")
        if spec.min_ndim is not None and ndim < spec.min_ndim:
            raise _incompatible(i, layer_name, f"expected min_ndim={spec.min_ndim}, found "
                                               f"ndim={ndim}. Full shape received: "
                                               f"{display_shape(shape)}")
        if spec.dtype is not None and x.dtype.name != spec.dtype:
            raise _incompatible(i, layer_name, f"expected dtype={spec.dtype}, found "
                                               f"dtype={x.dtype.name}")
        for axis, value in spec.axes.items():
            if value is not None and shape[axis] not in (value, None):
                raise _incompatible(i, layer_name, f"expected axis {axis} of input shape to "
                                                   f"have value {value}, but received input "
                                                   f"with shape {display_shape(shape)}")
        if spec.shape is not None:
            got, want = list(shape), list(spec.shape)
            if spec.allow_last_axis_squeeze:
                got = got[:-1] if got and got[-1] == 1 else got
                want = want[:-1] if want and want[-1] == 1 else want
            if len(got) != len(want) or any(
                    w is not None and g is not None and w != g for w, g in zip(want, got)):
                raise _incompatible(i, layer_name, f"expected shape={display_shape(spec.shape)}, "
                                                   f"found shape={display_shape(shape)}")
