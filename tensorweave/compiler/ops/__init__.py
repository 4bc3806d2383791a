"""The built-in op families; importing this package registers every op."""

from . import (  # noqa: F401
    accumulator,
    array,
    candidate,
    control,
    convolution,
    core,
    dataflow_control,
    fusion,
    grad_support,
    indexing,
    io,
    linalg,
    math,
    nn,
    partition,
    queue,
    random,
    scatter,
    state,
    transfer,
)
