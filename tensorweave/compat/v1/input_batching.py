"""TensorFlow 1's queue batching: ``tf.train.batch``, ``shuffle_batch``, their ``_join``
and ``maybe_`` forms.

Each builds a queue (FIFO; padding FIFO with ``dynamic_pad``; random shuffle for the
``shuffle_`` forms), an enqueue op per producer thread (``batch``: `num_threads` runs
of one op; ``_join``: one op per tensor list, so the lists are read in parallel), a
`QueueRunner` for them in ``QUEUE_RUNNERS``, TensorFlow's fill summary, and returns a
dequeue of `batch_size` elements (``dequeue_up_to`` with ``allow_smaller_final_batch``,
so that the last, partial batch comes out once the queue is closed; else
``dequeue_many``, and the leftover elements are dropped). The result has the structure
of `tensors`: a dict with the same keys, else one tensor for one component or a list.

``keep_input`` (the ``maybe_`` forms) chooses which elements are enqueued: a bool scalar
for the whole enqueue, or with ``enqueue_many`` a bool vector, one per row. An element
that is dropped is never enqueued; the op still runs, so the producers' inputs (and an
epoch counter among them) advance as in TensorFlow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...compiler.dtypes import bool_, int32
from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ...frontend.building import convert_to_tensor, user_location
from ...frontend.context import name_scope
from ...frontend.ops import array as _array
from ...frontend.ops import math as _math
from ...frontend.queue_runner import QueueRunner, add_queue_runner
from ...frontend.queues import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from ...frontend.tensor import Tensor
from .graph import in_default_graph
from .input_producers import fraction_full_summary


def _where(fn: str) -> dict[str, Any]:
    return {"op": f"tf.train.{fn}", "location": str(user_location())}


def _as_tensor_list(tensors: Any, fn: str) -> list[Tensor]:
    """The components of one element: a dict's values in sorted-key order, or the
    items of a list/tuple, as tensors."""
    if isinstance(tensors, dict):
        items = [tensors[k] for k in sorted(tensors)]
    elif isinstance(tensors, (list, tuple)):
        items = list(tensors)
    else:
        raise DTypeError(f"tensors must be a list, tuple or dict of tensors, got "
                         f"{type(tensors).__name__} (wrap a single tensor in a list: "
                         f"[tensor])", **_where(fn))
    if not items:
        raise InvalidArgumentError(f"Expected at least one tensor in {fn}().", **_where(fn))
    return [convert_to_tensor(t) for t in items]


def _as_original_type(original: Any, dequeued: Any) -> Any:
    """The dequeued batch in the structure of `original`."""
    if isinstance(original, dict):
        parts = [dequeued] if len(original) == 1 else dequeued
        return {k: parts[i] for i, k in enumerate(sorted(original))}
    return dequeued


def _keep_input(keep_input: Any, enqueue_many: bool, fn: str) -> Tensor | bool:
    """`keep_input` checked: True (Python) needs no op; else a bool scalar, or with
    `enqueue_many` a bool vector."""
    if keep_input is True or (isinstance(keep_input, np.bool_) and bool(keep_input)):
        return True
    keep = convert_to_tensor(keep_input, dtype=bool_)
    if len(keep.shape) > 1:
        raise ShapeError(f"`keep_input` must be 0 or 1 dimensions, got shape "
                         f"{list(keep.shape)}", **_where(fn))
    if len(keep.shape) == 1 and not enqueue_many:
        raise ShapeError("`keep_input` cannot be a vector when `enqueue_many=False`.",
                         **_where(fn))
    return keep


def _element_shape(t: Tensor, enqueue_many: bool, fn: str) -> list[int | None]:
    if not enqueue_many:
        return list(t.shape)
    if len(t.shape) == 0:
        raise ShapeError(f"with enqueue_many=True each tensor is a batch of elements, got a "
                         f"scalar {t.name}: Shape () must have rank at least 1", **_where(fn))
    return list(t.shape[1:])


def _merge(a: list, b: list, fn: str) -> list:
    if len(a) != len(b) or any(x is not None and y is not None and x != y
                               for x, y in zip(a, b)):
        raise ShapeError(f"Shapes {a} and {b} are not compatible (the same component of two "
                         f"tensor lists)", **_where(fn))
    return [x if x is not None else y for x, y in zip(a, b)]


def _queue_shapes(lists: list[list[Tensor]], shapes: Any, enqueue_many: bool,
                  fn: str) -> list[list[int | None]]:
    """The queue's component shapes: `shapes` as given, else the elements' shapes (each
    component's shapes merged across the tensor lists)."""
    if shapes is not None:
        shapes = [list(s) for s in shapes]
        if len(shapes) != len(lists[0]):
            raise InvalidArgumentError(f"{len(lists[0])} tensors but {len(shapes)} shapes",
                                       **_where(fn))
        return [[None if d in (None, -1) else int(d) for d in s] for s in shapes]
    out = []
    for i in range(len(lists[0])):
        merged = _element_shape(lists[0][i], enqueue_many, fn)
        for tl in lists[1:]:
            merged = _merge(merged, _element_shape(tl[i], enqueue_many, fn), fn)
        out.append(merged)
    return out


def _dtypes(lists: list[list[Tensor]], fn: str) -> list[Any]:
    dtypes = [t.dtype for t in lists[0]]
    for tl in lists[1:]:
        if len(tl) != len(dtypes):
            raise InvalidArgumentError(f"every tensor list must have the same number of "
                                       f"tensors: {len(dtypes)} vs. {len(tl)}", **_where(fn))
        for a, b in zip(dtypes, tl):
            if a is not b.dtype:
                raise DTypeError(f"Expected types to be consistent: {a.name} vs. "
                                 f"{b.dtype.name}.", **_where(fn))
    return dtypes


def _make_queue(kind: str, capacity: int, dtypes: list[Any], shapes: list[list], *,
                min_after_dequeue: int = 0, seed: int | None = None,
                shared_name: str | None = None, scope: str, fn: str) -> Any:
    """The batching queue (named ``<scope>/fifo_queue`` etc., as TensorFlow's); a queue
    that does not pad needs every dim known, as TensorFlow's (its elements are stacked
    as they are)."""
    if kind != "padding_fifo" and any(d is None for s in shapes for d in s):
        raise ShapeError(f"All shapes must be fully defined: {shapes} (pass shapes=, or "
                         f"dynamic_pad=True to pad each batch to its longest element)",
                         **_where(fn))
    name = f"{scope}{kind}_queue"
    if kind == "padding_fifo":
        return PaddingFIFOQueue(capacity, dtypes, shapes=shapes, shared_name=shared_name,
                                name=name)
    if kind == "fifo":
        return FIFOQueue(capacity, dtypes, shapes=shapes, shared_name=shared_name, name=name)
    return RandomShuffleQueue(capacity, min_after_dequeue, dtypes, shapes=shapes, seed=seed,
                              shared_name=shared_name, name=name)


def _selected(tensors: list[Tensor], keep: Tensor | bool, enqueue_many: bool) -> tuple:
    """The components to enqueue and whether they are a batch: the rows that `keep`
    selects (TensorFlow's partition 1 of ``dynamic_partition`` by `keep`; a single
    element is a batch of one, so that a dropped one is a batch of none)."""
    if keep is True:
        return tensors, enqueue_many
    if not enqueue_many:
        tensors = [_array.expand_dims(t, 0) for t in tensors]
    select = _math.cast(keep, int32)
    if len(keep.shape) == 0:  # the same choice for every row of a batch
        select = select + _row_zeros(tensors[0])
    return [_array.dynamic_partition(t, select, 2)[1] for t in tensors], True


def _row_zeros(t: Tensor) -> Tensor:
    """An int32 zero per row of `t` (its first dim may be known only when it runs)."""
    zeros = _math.cast(_array.zeros_like(t), int32)
    if len(t.shape) > 1:
        zeros = _math.reduce_sum(zeros, axis=list(range(1, len(t.shape))))
    return zeros


def _enqueue_ops(queue: Any, lists: list[list[Tensor]], keep: Tensor | bool,
                 enqueue_many: bool) -> list[Any]:
    ops = []
    for tl in lists:
        values, many = _selected(tl, keep, enqueue_many)
        ops.append(queue.enqueue_many(values) if many else queue.enqueue(values))
    return ops


def _dequeue(queue: Any, batch_size: Any, allow_smaller_final_batch: bool, fn: str,
             scope: str) -> Any:
    """The batch's dequeue, named as its scope (``batch``, ``shuffle_batch_1``): TensorFlow's
    name of the result, ``batch:0``."""
    if isinstance(batch_size, Tensor) or not isinstance(batch_size, (int, np.integer)):
        raise DTypeError(f"batch_size must be a Python int (tensorweave's dequeues take a "
                         f"static count), got {batch_size!r}", **_where(fn))
    if batch_size <= 0:
        raise InvalidArgumentError(f"batch_size must be positive, got {batch_size}",
                                   **_where(fn))
    take = queue.dequeue_up_to if allow_smaller_final_batch else queue.dequeue_many
    return take(int(batch_size), name=scope)


def _build(fn: str, kind: str, tensors_list: list[Any], batch_size: Any, keep_input: Any, *,
           threads: int = 1, capacity: int, min_after_dequeue: int = 0,
           seed: int | None = None, enqueue_many: bool, shapes: Any,
           allow_smaller_final_batch: bool, shared_name: str | None, name: str | None,
           scope_name: str) -> Any:
    """The queue, its runner, its summary and the dequeue, for every form."""
    with name_scope(name or scope_name) as scope:
        if kind == "random_shuffle" and capacity <= min_after_dequeue:
            raise InvalidArgumentError(f"capacity {capacity} must be bigger than "
                                       f"min_after_dequeue {min_after_dequeue}.", **_where(fn))
        if threads < 1:
            raise InvalidArgumentError(f"num_threads must be at least 1, got {threads}",
                                       **_where(fn))
        lists = [_as_tensor_list(t, fn) for t in tensors_list]
        if any(isinstance(t, dict) for t in tensors_list) and any(
                not isinstance(t, dict) or set(t) != set(tensors_list[0])
                for t in tensors_list):
            raise InvalidArgumentError("every dict of tensors must have the same keys",
                                       **_where(fn))
        keep = _keep_input(keep_input, enqueue_many, fn)
        dtypes = _dtypes(lists, fn)
        queue = _make_queue(kind, capacity, dtypes,
                            _queue_shapes(lists, shapes, enqueue_many, fn),
                            min_after_dequeue=min_after_dequeue, seed=seed,
                            shared_name=shared_name, scope=scope, fn=fn)
        ops = _enqueue_ops(queue, lists, keep, enqueue_many)
        add_queue_runner(QueueRunner(queue, ops * threads))
        if kind == "random_shuffle":
            fraction_full_summary(f"fraction_over_{min_after_dequeue}_of_"
                                  f"{capacity - min_after_dequeue}_full", queue, capacity,
                                  above=min_after_dequeue)
        else:
            fraction_full_summary(f"fraction_of_{capacity}_full", queue, capacity)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, fn, scope)
        return _as_original_type(tensors_list[0], dequeued)


def _join_lists(tensors_list: Any, fn: str) -> list[Any]:
    if not isinstance(tensors_list, (list, tuple)) or not tensors_list:
        raise InvalidArgumentError("Expected at least one set of tensors (a list of tensor "
                                   "lists or dicts)", **_where(fn))
    return list(tensors_list)


@in_default_graph
def batch(tensors: Any, batch_size: int, num_threads: int = 1, capacity: int = 32,
          enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
          allow_smaller_final_batch: bool = False, shared_name: str | None = None,
          name: str | None = None) -> Any:
    """Batches of `batch_size` elements of `tensors` (a list or dict; each a single
    element, or with `enqueue_many` a batch of them along the first dim), through a FIFO
    queue filled by `num_threads` threads (with one, in order). `dynamic_pad`: elements
    of different shapes, each batch padded with zeros to its longest."""
    return maybe_batch(tensors, True, batch_size, num_threads, capacity, enqueue_many, shapes,
                       dynamic_pad, allow_smaller_final_batch, shared_name, name)


@in_default_graph
def maybe_batch(tensors: Any, keep_input: Any, batch_size: int, num_threads: int = 1,
                capacity: int = 32, enqueue_many: bool = False, shapes: Any = None,
                dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
                shared_name: str | None = None, name: str | None = None) -> Any:
    """`batch` of the elements that `keep_input` (a bool scalar, or a bool vector with
    `enqueue_many`) keeps."""
    return _build("maybe_batch" if keep_input is not True else "batch",
                  "padding_fifo" if dynamic_pad else "fifo", [tensors], batch_size, keep_input,
                  threads=num_threads, capacity=capacity, enqueue_many=enqueue_many,
                  shapes=shapes, allow_smaller_final_batch=allow_smaller_final_batch,
                  shared_name=shared_name, name=name, scope_name="batch")


@in_default_graph
def batch_join(tensors_list: Any, batch_size: int, capacity: int = 32, enqueue_many: bool = False,
               shapes: Any = None, dynamic_pad: bool = False,
               allow_smaller_final_batch: bool = False, shared_name: str | None = None,
               name: str | None = None) -> Any:
    """`batch` from several tensor lists (or dicts) of the same structure, one producer
    thread each: the batches mix their elements."""
    return maybe_batch_join(tensors_list, True, batch_size, capacity, enqueue_many, shapes,
                            dynamic_pad, allow_smaller_final_batch, shared_name, name)


@in_default_graph
def maybe_batch_join(tensors_list: Any, keep_input: Any, batch_size: int, capacity: int = 32,
                     enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
                     allow_smaller_final_batch: bool = False, shared_name: str | None = None,
                     name: str | None = None) -> Any:
    """`batch_join` of the elements that `keep_input` keeps."""
    fn = "maybe_batch_join" if keep_input is not True else "batch_join"
    return _build(fn, "padding_fifo" if dynamic_pad else "fifo", _join_lists(tensors_list, fn),
                  batch_size, keep_input, capacity=capacity, enqueue_many=enqueue_many,
                  shapes=shapes, allow_smaller_final_batch=allow_smaller_final_batch,
                  shared_name=shared_name, name=name, scope_name="batch_join")


@in_default_graph
def shuffle_batch(tensors: Any, batch_size: int, capacity: int, min_after_dequeue: int,
                  num_threads: int = 1, seed: int | None = None, enqueue_many: bool = False,
                  shapes: Any = None, allow_smaller_final_batch: bool = False,
                  shared_name: str | None = None, name: str | None = None) -> Any:
    """`batch` through a RandomShuffleQueue: each batch is drawn at random from the
    queue, which keeps at least `min_after_dequeue` elements (until it is closed) so
    that they mix with later ones."""
    return maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, True,
                               num_threads, seed, enqueue_many, shapes,
                               allow_smaller_final_batch, shared_name, name)


@in_default_graph
def maybe_shuffle_batch(tensors: Any, batch_size: int, capacity: int, min_after_dequeue: int,
                        keep_input: Any, num_threads: int = 1, seed: int | None = None,
                        enqueue_many: bool = False, shapes: Any = None,
                        allow_smaller_final_batch: bool = False,
                        shared_name: str | None = None, name: str | None = None) -> Any:
    """`shuffle_batch` of the elements that `keep_input` keeps."""
    return _build("maybe_shuffle_batch" if keep_input is not True else "shuffle_batch",
                  "random_shuffle", [tensors], batch_size, keep_input, threads=num_threads,
                  capacity=capacity, min_after_dequeue=min_after_dequeue, seed=seed,
                  enqueue_many=enqueue_many, shapes=shapes,
                  allow_smaller_final_batch=allow_smaller_final_batch,
                  shared_name=shared_name, name=name, scope_name="shuffle_batch")


@in_default_graph
def shuffle_batch_join(tensors_list: Any, batch_size: int, capacity: int,
                       min_after_dequeue: int, seed: int | None = None,
                       enqueue_many: bool = False, shapes: Any = None,
                       allow_smaller_final_batch: bool = False,
                       shared_name: str | None = None, name: str | None = None) -> Any:
    """`shuffle_batch` from several tensor lists, one producer thread each."""
    return maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                                    True, seed, enqueue_many, shapes,
                                    allow_smaller_final_batch, shared_name, name)


@in_default_graph
def maybe_shuffle_batch_join(tensors_list: Any, batch_size: int, capacity: int,
                             min_after_dequeue: int, keep_input: Any, seed: int | None = None,
                             enqueue_many: bool = False, shapes: Any = None,
                             allow_smaller_final_batch: bool = False,
                             shared_name: str | None = None, name: str | None = None) -> Any:
    """`shuffle_batch_join` of the elements that `keep_input` keeps."""
    fn = "maybe_shuffle_batch_join" if keep_input is not True else "shuffle_batch_join"
    return _build(fn, "random_shuffle", _join_lists(tensors_list, fn), batch_size, keep_input,
                  capacity=capacity, min_after_dequeue=min_after_dequeue, seed=seed,
                  enqueue_many=enqueue_many, shapes=shapes,
                  allow_smaller_final_batch=allow_smaller_final_batch,
                  shared_name=shared_name, name=name, scope_name="shuffle_batch_join")


__all__ = ["batch", "maybe_batch", "batch_join", "maybe_batch_join", "shuffle_batch",
           "maybe_shuffle_batch", "shuffle_batch_join", "maybe_shuffle_batch_join"]
