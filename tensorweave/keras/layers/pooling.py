"""Pooling layers: `MaxPooling1D/2D`, `AveragePooling1D/2D` (windows of `pool_size`,
`strides` defaulting to it, ``valid`` / ``same`` padding; a ``same`` average counts only
the real elements of a window, as TensorFlow's) and the global poolings."""

from __future__ import annotations

from typing import Any

import tensorweave as tw

from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec, layer_error
from .convolutional import conv_output_length, normalize_tuple
from .core import _data_format, config_of

__all__ = ["MaxPooling1D", "MaxPooling2D", "AveragePooling1D", "AveragePooling2D",
           "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D", "MaxPool1D", "MaxPool2D", "AvgPool1D", "AvgPool2D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D"]


class _Pooling(Layer):
    rank = 2
    kind = "max"

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        self.pool_size = normalize_tuple(pool_size, self.rank, "pool_size")
        self.strides = normalize_tuple(strides, self.rank, "strides", allow_zero=False)
        self.padding = str(padding).lower()
        if self.padding not in ("valid", "same"):
            raise ValueError(f"The `padding` argument must be one of 'valid', 'same'. "
                             f"Received: {padding}")
        self.data_format = _data_format(data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs: Any) -> Any:
        rank = self.rank + 2
        x = inputs
        if self.data_format == "channels_first":
            x = tw.transpose(x, [0, *range(2, rank), 1])
        for length, k, s in zip(x.shape[1:-1], self.pool_size, self.strides):
            out = conv_output_length(length, k, self.padding, s)
            if out is not None and out <= 0:
                raise layer_error(self.name, f"the pool size {self.pool_size} does not fit in "
                                             f"the input of shape {tuple(inputs.shape)} with "
                                             f"padding '{self.padding}': the output would be "
                                             f"empty")
        pool = {("max", 1): tw.nn.max_pool1d, ("avg", 1): tw.nn.avg_pool1d,
                ("max", 2): tw.nn.max_pool2d, ("avg", 2): tw.nn.avg_pool2d}[(self.kind,
                                                                             self.rank)]
        size = list(self.pool_size) if self.rank > 1 else self.pool_size[0]
        strides = list(self.strides) if self.rank > 1 else self.strides[0]
        y = pool(x, size, strides, self.padding.upper())
        if self.data_format == "channels_first":
            y = tw.transpose(y, [0, rank - 1, *range(1, rank - 1)])
        return y

    def get_config(self) -> dict[str, Any]:
        return config_of(self, pool_size=list(self.pool_size), strides=list(self.strides),
                         padding=self.padding, data_format=self.data_format)


class MaxPooling1D(_Pooling):
    """The maximum of each window along the steps of ``(batch, steps, channels)``."""

    rank, kind = 1, "max"


class MaxPooling2D(_Pooling):
    """The maximum of each ``pool_size`` window of ``(batch, rows, cols, channels)``."""

    rank, kind = 2, "max"

    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling1D(_Pooling):
    """The mean of each window along the steps."""

    rank, kind = 1, "avg"


class AveragePooling2D(_Pooling):
    """The mean of each ``pool_size`` window."""

    rank, kind = 2, "avg"

    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class _GlobalPooling(Layer):
    rank = 2
    kind = "avg"

    def __init__(self, data_format: str | None = None, keepdims: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = _data_format(data_format)
        self.keepdims = keepdims
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs: Any) -> Any:
        axes = (list(range(1, self.rank + 1)) if self.data_format == "channels_last"
                else list(range(2, self.rank + 2)))
        reduce = tw.reduce_mean if self.kind == "avg" else tw.reduce_max
        return reduce(inputs, axis=axes, keepdims=self.keepdims)

    def get_config(self) -> dict[str, Any]:
        return config_of(self, data_format=self.data_format, keepdims=self.keepdims)


class GlobalAveragePooling1D(_GlobalPooling):
    """The mean over the steps: ``(batch, steps, channels) -> (batch, channels)``."""

    rank, kind = 1, "avg"


class GlobalAveragePooling2D(_GlobalPooling):
    """The mean over rows and columns: ``(batch, rows, cols, channels) -> (batch,
    channels)``."""

    rank, kind = 2, "avg"


class GlobalMaxPooling1D(_GlobalPooling):
    """The maximum over the steps."""

    rank, kind = 1, "max"


class GlobalMaxPooling2D(_GlobalPooling):
    """The maximum over rows and columns."""

    rank, kind = 2, "max"


MaxPool1D, MaxPool2D = MaxPooling1D, MaxPooling2D
AvgPool1D, AvgPool2D = AveragePooling1D, AveragePooling2D
GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D
