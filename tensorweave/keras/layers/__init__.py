"""``tw.keras.layers``: Keras' layers (tf_keras 2.x names, arguments and weights)."""

from ..engine.base_layer import InputSpec, Layer
from ..engine.input_layer import Input, InputLayer
from .convolutional import Conv1D, Conv2D, Convolution1D, Convolution2D
from .core import (
    Activation,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    Lambda,
    Permute,
    RepeatVector,
    Reshape,
)
from .merging import (
    Add,
    Average,
    Concatenate,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
    add,
    average,
    concatenate,
    maximum,
    minimum,
    multiply,
    subtract,
)
from .normalization import BatchNormalization, LayerNormalization
from .pooling import (
    AveragePooling1D,
    AveragePooling2D,
    AvgPool1D,
    AvgPool2D,
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalAvgPool1D,
    GlobalAvgPool2D,
    GlobalMaxPool1D,
    GlobalMaxPool2D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    MaxPool1D,
    MaxPool2D,
    MaxPooling1D,
    MaxPooling2D,
)
from .recurrent import GRU, LSTM, SimpleRNN

__all__ = ["Layer", "InputSpec", "Input", "InputLayer", "Dense", "Activation", "Dropout",
           "Flatten", "Reshape", "Permute", "RepeatVector", "Lambda", "Embedding", "Conv1D",
           "Conv2D", "Convolution1D", "Convolution2D", "MaxPooling1D", "MaxPooling2D",
           "AveragePooling1D", "AveragePooling2D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "MaxPool1D",
           "MaxPool2D", "AvgPool1D", "AvgPool2D", "GlobalAvgPool1D", "GlobalAvgPool2D",
           "GlobalMaxPool1D", "GlobalMaxPool2D", "BatchNormalization", "LayerNormalization",
           "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate",
           "SimpleRNN", "LSTM", "GRU"]


def __dir__() -> list[str]:
    return sorted(__all__)
