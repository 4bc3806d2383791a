"""tensorweave: a TensorFlow-style machine-learning system built as a graph compiler.

    import tensorweave as tw

    @tw.compile
    def f(x, w):
        return tw.nn.relu(x @ w)
"""

from . import _source, errors  # noqa: F401  (_source: the source as imported, for cache keys)
from .compiler.dtypes import (
                              DType,
                              as_dtype,
                              bfloat16,
                              bool_,
                              float16,
                              float32,
                              float64,
                              int8,
                              int16,
                              int32,
                              int64,
                              string,
                              uint8,
)
from .frontend.autodiff import grad, gradients, stop_gradient, value_and_grad
from .frontend.building import constant, convert_to_tensor
from .frontend.context import colocate_with, control_dependencies, device, name_scope
from .frontend.control_flow import case, cond, foldl, scan, while_loop
from .frontend.custom_gradient import custom_gradient
from .frontend.function import ConcreteFunction, Function, TensorSpec, compile
from .frontend.grouping import group, no_op
from .frontend.indexed_slices import IndexedSlices
from .frontend.map_fn import map_fn, vectorized_map, vmap
from .frontend.module import Module
from .frontend.ops import *  # noqa: F403
from .frontend.ops import __all__ as _ops_all
from .frontend.ops.bitcast import bitcast
from .frontend.ops.debugging import print  # noqa: A004  (TensorFlow's tf.print)
from .frontend.tape import GradientTape, UnconnectedGradients
from .frontend.tensor import EagerTensor, Tensor
from .frontend.tensor_array import TensorArray
from .frontend.tensor_shape import TensorShape
from .frontend.variables import Variable
from .sparse.sparse_tensor import SparseTensor

bool = bool_  # noqa: A001  (TensorFlow spells it tw.bool)
half = float16
double = float64

# the tw.config, tw.debugging, tw.linalg, tw.math, tw.nn, tw.random, tw.optimizers,
# tw.queue and tw.train namespaces
from . import (  # noqa: E402, F401
    bitwise,
    config,
    data,
    debugging,
    experimental,
    image,
    io,
    linalg,
    math,
    nn,
    optimizers,
    profiler,
    queue,
    random,
    sparse,
    summary,
    train,
)

__version__ = "0.1.0"


def __getattr__(name: str):  # noqa: ANN202
    # tw.distribute is imported on first use: it brings in gRPC (~0.1 s). So is tw.compat
    # (TensorFlow 1's API): it wraps every op function of this module, so it can only be
    # built once this module is complete. So is tw.keras (Keras' API, ~0.1 s).
    if name in ("distribute", "compat", "keras"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tensorweave' has no attribute {name!r}")


__all__ = ["errors", "DType", "as_dtype", "bfloat16", "bool", "bool_", "float16", "float32",
           "float64", "half", "double", "int8", "int16", "int32", "int64", "uint8", "string", "constant",
           "convert_to_tensor", "colocate_with", "control_dependencies", "device", "name_scope",
           "ConcreteFunction", "Function", "TensorSpec", "compile", "EagerTensor", "Tensor",
           "Variable", "IndexedSlices", "Module", "group", "no_op", "grad", "gradients", "stop_gradient",
           "value_and_grad", "SparseTensor", "bitcast",
           "case", "cond", "foldl", "scan", "while_loop",
           "GradientTape", "UnconnectedGradients", "custom_gradient", "map_fn", "vectorized_map",
           "vmap", "TensorArray", "TensorShape", "print",
           "nn", "optimizers", "profiler", "random", "train", "config", "debugging", "math", "queue",
           "summary", "bitwise", "experimental", "data", "image", "io", "sparse",
           "linalg", "compat", "distribute", "keras",
           *_ops_all]  # noqa: F405 (compat, distribute, keras: __getattr__)


def __dir__() -> list[str]:
    # the public API only: not the packages it is built from (tw.compiler, tw.runtime...)
    return sorted(__all__)
