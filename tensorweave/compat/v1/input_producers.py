"""TensorFlow 1's input producers (``tf.train.input_producer``, ``range_input_producer``,
``slice_input_producer``, ``string_input_producer``): a FIFO queue that a `QueueRunner`
fills with the rows of a tensor (file names, for ``string_input_producer``), epoch after
epoch.

Each run of the runner's enqueue op puts one epoch in the queue: the rows in order, or
in a new random order (``shuffle=True``: `random_shuffle` runs again each time). With
`num_epochs`, a `limit_epochs` counter makes the enqueue fail with OutOfRangeError after
the last epoch; the runner then closes the queue, and a dequeue raises OutOfRangeError
once the queue is empty. The runner is added to the graph's ``QUEUE_RUNNERS``
collection, for ``tf.train.start_queue_runners``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...compiler.dtypes import float32, int32, string
from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ...frontend.building import convert_to_tensor, user_location
from ...frontend.context import control_dependencies, name_scope
from ...frontend.ops import array as _array
from ...frontend.ops import math as _math
from ...frontend.ops.random import shuffle as _random_shuffle
from ...frontend.queue_runner import QueueRunner, add_queue_runner
from ...frontend.queues import FIFOQueue
from ...frontend.tensor import Tensor
from .graph import in_default_graph
from .input_epochs import limit_epochs


def _where(fn: str) -> dict[str, Any]:
    """The op and user line that an input-pipeline error names."""
    return {"op": f"tf.train.{fn}", "location": str(user_location())}


def _merged_element_shape(input_tensor: Tensor, element_shape: Any) -> tuple:
    """The shape of one row of `input_tensor`, merged with `element_shape`; every dim
    must be known (the queue's elements have one fixed shape)."""
    row = tuple(input_tensor.shape[1:])
    if element_shape is not None:
        given = tuple(None if d in (None, -1) else int(d) for d in element_shape)
        if len(given) != len(row) or any(a is not None and b is not None and a != b
                                         for a, b in zip(row, given)):
            raise ShapeError(f"the rows of input_tensor have shape {list(row)}, "
                             f"element_shape is {list(given)}: they are not compatible",
                             **_where("input_producer"))
        row = tuple(a if a is not None else b for a, b in zip(row, given))
    if any(d is None for d in row):
        raise InvalidArgumentError(
            f"Either `input_tensor` must have a fully defined shape or `element_shape` must "
            f"be specified (the rows have shape {list(row)})", **_where("input_producer"))
    return row


def fraction_full_summary(name: str, queue: Any, capacity: int, above: int = 0) -> None:
    """Add TensorFlow's queue-fill summary: ``max(0, size - above) / (capacity - above)``
    as scalar summary `name`. Skipped when the optional 'tensorboard' package (which
    summaries need) is missing: the pipeline works the same without it."""
    from ...runtime import summary_io
    try:
        summary_io.require_tensorboard("the input pipeline's queue summary")
    except ImportError:
        return
    from .summary import scalar
    size = queue.size()
    if above:
        size = _math.maximum(0, size - above)
    scalar(name, _math.cast(size, float32) * (1.0 / (capacity - above)))


@in_default_graph
def input_producer(input_tensor: Any, element_shape: Any = None, num_epochs: int | None = None,
                   shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                   shared_name: str | None = None, summary_name: str | None = None,
                   name: str | None = None, cancel_op: Any = None) -> FIFOQueue:
    """A FIFO queue of the rows of `input_tensor` (its slices along the first dim),
    refilled one epoch at a time by a QueueRunner (in ``QUEUE_RUNNERS``): in order, or
    shuffled anew each epoch with `shuffle`; OutOfRangeError after `num_epochs` epochs
    (None: forever). `summary_name`: also a scalar summary of how full the queue is."""
    with name_scope(name or "input_producer") as scope:
        return _produce(convert_to_tensor(input_tensor), element_shape, num_epochs, shuffle,
                        seed, capacity, shared_name, summary_name, scope, cancel_op)


def _produce(input_tensor: Tensor, element_shape: Any, num_epochs: int | None, shuffle: bool,
             seed: int | None, capacity: int, shared_name: str | None,
             summary_name: str | None, scope: str, cancel_op: Any) -> FIFOQueue:
    """`input_producer`'s queue, runner and summary, in the name scope `scope` (the
    queue is named after it)."""
    if input_tensor.shape == ():
        raise ShapeError("input_tensor must have a first dimension to slice, got a scalar",
                         **_where("input_producer"))
    row = _merged_element_shape(input_tensor, element_shape)
    if shuffle:
        input_tensor = _random_shuffle(input_tensor, seed=seed)
    input_tensor = limit_epochs(input_tensor, num_epochs)
    queue = FIFOQueue(capacity, [input_tensor.dtype], shapes=[list(row)],
                      shared_name=shared_name, name=scope.rstrip("/"))
    enqueue = queue.enqueue_many([input_tensor])
    add_queue_runner(QueueRunner(queue, [enqueue], cancel_op=cancel_op))
    if summary_name is not None:
        fraction_full_summary(summary_name, queue, capacity)
    return queue


def _index_range(limit: Any) -> Tensor:
    """``[0, 1, ..., limit - 1]`` (int32) for a Python int or a scalar tensor (a tensor
    with no value at graph time goes through NumPy, as tensorweave's ``range`` needs
    static bounds)."""
    if isinstance(limit, (int, np.integer)):
        return _array.range(int(limit), dtype=int32)
    limit = convert_to_tensor(limit)
    if limit.shape != () or not limit.dtype.is_integer:
        raise InvalidArgumentError(f"limit must be an integer scalar, got {limit.dtype.name}"
                                   f"{list(limit.shape)}", **_where("range_input_producer"))
    from .script_ops import py_func
    indices = py_func(lambda n: np.arange(n, dtype=np.int32), [limit], int32, stateful=False,
                      name="range")
    indices.set_shape([None])
    return indices


@in_default_graph
def range_input_producer(limit: Any, num_epochs: int | None = None, shuffle: bool = True,
                         seed: int | None = None, capacity: int = 32,
                         shared_name: str | None = None, name: str | None = None) -> FIFOQueue:
    """A queue of the integers ``0 .. limit - 1`` (int32), an epoch at a time, as
    `input_producer` (shuffled anew each epoch unless ``shuffle=False``)."""
    with name_scope(name or "input_producer") as scope:
        return _produce(_index_range(limit), [], num_epochs, shuffle, seed, capacity,
                        shared_name, f"fraction_of_{capacity}_full", scope, None)


@in_default_graph
def slice_input_producer(tensor_list: Any, num_epochs: int | None = None, shuffle: bool = True,
                         seed: int | None = None, capacity: int = 32,
                         shared_name: str | None = None, name: str | None = None) -> list[Any]:
    """One row of each tensor of `tensor_list` at a time, the same row of every tensor:
    a `range_input_producer` over the rows, gathered. All tensors must have the same
    number of rows (checked when the graph is built if known, else when it runs)."""
    with name_scope(name or "input_producer"):
        tensors = [convert_to_tensor(t) for t in tensor_list]
        if not tensors:
            raise InvalidArgumentError("Expected at least one tensor in "
                                       "slice_input_producer().", **_where("slice_input_producer"))
        for i, t in enumerate(tensors):
            if t.shape == ():
                raise ShapeError(f"tensor {i} is a scalar: every tensor needs rows to slice",
                                 **_where("slice_input_producer"))
        rows = {t.shape[0] for t in tensors} - {None}
        if len(rows) > 1:
            raise ShapeError(f"the tensors have different numbers of rows "
                             f"{[t.shape[0] for t in tensors]}: each must have as many as "
                             f"the first", **_where("slice_input_producer"))
        count = tensors[0].shape[0]
        if count is None or any(t.shape[0] is None for t in tensors):
            count = _rows_checked(tensors)
        queue = range_input_producer(count, num_epochs=num_epochs, shuffle=shuffle,
                                     seed=seed, capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()
        return [_array.gather(t, index) for t in tensors]


def _rows_checked(tensors: list[Tensor]) -> Tensor:
    """The first tensor's row count as a tensor that fails to compute when another
    tensor's count differs (TensorFlow gathers those silently: a longer tensor lost its
    last rows). Only the count depends on the check, not the queue's close op, so a
    failing check ends the runner with its error instead of leaving consumers waiting."""
    from .assertions import assert_equal
    counts = [_array.shape(t)[0] for t in tensors]
    checks = [assert_equal(counts[0], c, message=f"slice_input_producer: tensor {i} has a "
                           f"different number of rows than tensor 0")
              for i, c in enumerate(counts[1:], 1)]
    with control_dependencies(checks):
        return _array.identity(counts[0])


@in_default_graph
def string_input_producer(string_tensor: Any, num_epochs: int | None = None,
                          shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                          shared_name: str | None = None, name: str | None = None,
                          cancel_op: Any = None) -> FIFOQueue:
    """A FIFO queue of the strings of `string_tensor` (a vector: file names, for a
    ``TFRecordReader``), refilled an epoch at a time as `input_producer` (shuffled anew
    each epoch unless ``shuffle=False``; OutOfRangeError after `num_epochs`)."""
    string_tensor = convert_to_tensor(string_tensor, dtype_hint=string)
    if not string_tensor.dtype.is_string:
        raise DTypeError(f"string_tensor must be a string tensor, got "
                         f"{string_tensor.dtype.name}", **_where("string_input_producer"))
    if len(string_tensor.shape) != 1:
        raise ShapeError(f"string_tensor must be a vector, got shape "
                         f"{list(string_tensor.shape)}", **_where("string_input_producer"))
    if string_tensor.shape[0] == 0:
        raise InvalidArgumentError("string_input_producer requires a non-null input tensor",
                                   **_where("string_input_producer"))
    with name_scope(name or "input_producer") as scope:
        return _produce(string_tensor, [], num_epochs, shuffle, seed, capacity, shared_name,
                        f"fraction_of_{capacity}_full", scope, cancel_op)


__all__ = ["input_producer", "range_input_producer", "slice_input_producer",
           "string_input_producer", "fraction_full_summary"]
