"""Queue ops: a handle to a runtime-owned queue, and the enqueue/dequeue/size/close ops
that act on it (TensorFlow's ``QueueEnqueueV2`` family).

``QueueHandle`` names a queue by `shared_name` and creates it in the runtime's
`ResourceManager` on first use (so a v1 Session gets its own queues, as it gets its own
variables). The component dtypes and shapes are attributes of the handle and of every
dequeue op, so that a dequeue's outputs are typed without looking at the handle.

Shapes are spelled with printable attribute kinds: `shapes` is the flat list of every
component's dims (-1 for an unknown dim) and `ranks` the rank of each component (-1 when
the component's shape was not given at all).

Enqueue and dequeue ops may block (a full or empty queue): they carry the ``blocking``
tag so the executor runs them where waiting does not starve other ops, and they wake up
when their step is cancelled or their ``timeout_ms`` (or the step deadline) passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DTypeError, ShapeError
from ...runtime.queues import Waiter, check_same_queue, make_queue
from ..dtypes import DType, as_dtype, bool_, int32, uint8
from ..registry import attr, def_op, not_differentiable
from ..types import RESOURCE, TensorType
from .common import expect_resource, expect_tensor

KINDS = ("fifo", "random_shuffle", "padding_fifo")


# ------------------------------------------------------------------ shape attributes

def encode_shapes(shapes: Sequence[Any] | None, n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(flat dims with -1 for unknown, ranks with -1 for an unknown shape) of `n`
    component shapes (None: no shapes given)."""
    if shapes is None:
        return (), (-1,) * n
    flat: list[int] = []
    ranks: list[int] = []
    for s in shapes:
        if s is None:
            ranks.append(-1)
            continue
        dims = [-1 if d is None else int(d) for d in s]
        ranks.append(len(dims))
        flat.extend(dims)
    return tuple(flat), tuple(ranks)


def decode_shapes(shapes: Sequence[int], ranks: Sequence[int]) -> list[tuple | None]:
    """The component shapes (None dims unknown; None for a shape not given)."""
    out: list[tuple | None] = []
    pos = 0
    for r in ranks:
        if r < 0:
            out.append(None)
            continue
        out.append(tuple(None if d < 0 else d for d in shapes[pos:pos + r]))
        pos += r
    if pos != len(shapes):
        raise ShapeError(f"queue shapes attribute has {len(shapes)} dims, ranks {tuple(ranks)} "
                         f"account for {pos}")
    return out


def _component_types(dtypes: Sequence[str], shapes: Sequence[int], ranks: Sequence[int],
                     what: str) -> list[tuple[DType, tuple]]:
    if len(dtypes) != len(ranks):
        raise ShapeError(f"queue has {len(dtypes)} component dtypes but {len(ranks)} ranks")
    out = []
    for i, (d, s) in enumerate(zip(dtypes, decode_shapes(shapes, ranks))):
        if s is None:
            raise ShapeError(f"{what} needs the shape of every queue component, component {i} "
                             f"has none: create the queue with shapes=[...] (None for dims of "
                             f"any size)")
        out.append((as_dtype(d), s))
    return out


def _expect_queue(t: Any) -> None:
    r = expect_resource(t, "handle")
    if r.value_type is not None:
        raise DTypeError(f"handle must be a queue, got a variable handle ({r})")


_SHAPE_ATTRS = {"dtypes": attr("strs"), "shapes": attr("ints", ()), "ranks": attr("ints")}
_TIMEOUT = {"timeout_ms": attr("int", -1)}


# ------------------------------------------------------------------------ the handle

QueueHandle = def_op(
    "QueueHandle", [],
    {"shared_name": attr("str"), "kind": attr("str", "fifo"), "capacity": attr("int"),
     **_SHAPE_ATTRS, "min_after_dequeue": attr("int", 0), "seed": attr("int", -1)},
    doc="The handle of the queue named `shared_name` (created on first use).")


@QueueHandle.infer
def _handle_infer(*, shared_name, kind, capacity, dtypes, shapes, ranks, min_after_dequeue,
                  seed):
    if kind not in KINDS:
        raise ShapeError(f"unknown queue kind {kind!r}; known: {', '.join(KINDS)}")
    if capacity <= 0:
        raise ShapeError(f"queue capacity must be positive, got {capacity}")
    if not dtypes:
        raise DTypeError("a queue needs at least one component dtype")
    for d in dtypes:
        as_dtype(d)
    if len(ranks) != len(dtypes):
        raise ShapeError(f"queue has {len(dtypes)} component dtypes but {len(ranks)} ranks")
    decode_shapes(shapes, ranks)
    return RESOURCE


@QueueHandle.kernel("reference", context=True)
def _handle_kernel(ctx, *, shared_name, kind, capacity, dtypes, shapes, ranks,
                   min_after_dequeue, seed):
    def factory():
        return make_queue(kind, capacity, dtypes, decode_shapes(shapes, ranks), shared_name,
                          min_after_dequeue, None if seed < 0 else seed)
    return check_same_queue(ctx.resources.get_or_create(shared_name, factory), kind, capacity,
                            dtypes, decode_shapes(shapes, ranks), min_after_dequeue)


def queue_from_attrs(attrs: dict) -> Any:
    """A new runtime queue as a `QueueHandle` with these attributes describes it."""
    return make_queue(attrs["kind"], attrs["capacity"], attrs["dtypes"],
                      decode_shapes(attrs["shapes"], attrs["ranks"]), attrs["shared_name"],
                      attrs["min_after_dequeue"], None if attrs["seed"] < 0 else attrs["seed"])


# --------------------------------------------------------------------------- enqueue

QueueEnqueue = def_op("QueueEnqueue", ["handle", "*components"], _TIMEOUT,
                      stateful=True, tags=["blocking"],
                      doc="Add one element (a tuple of tensors) to the queue; blocks while "
                          "the queue is full.")
QueueEnqueueMany = def_op("QueueEnqueueMany", ["handle", "*components"], _TIMEOUT,
                          stateful=True, tags=["blocking"],
                          doc="Add the slices of the components along their first dimension, "
                              "in order; blocks while the queue is full.")


@QueueEnqueue.infer
def _enqueue_infer(handle, *components, timeout_ms):
    _expect_queue(handle)
    if not components:
        raise ShapeError("enqueue needs at least one component")
    for i, c in enumerate(components):
        expect_tensor(c, f"component {i}")
    return []


@QueueEnqueueMany.infer
def _enqueue_many_infer(handle, *components, timeout_ms):
    _enqueue_infer(handle, *components, timeout_ms=timeout_ms)
    batch = None
    for i, c in enumerate(components):
        if c.rank == 0:
            raise ShapeError(f"enqueue_many needs a leading batch dimension, component {i} is "
                             f"a scalar ({c})")
        if batch is not None and c.shape[0] is not None and c.shape[0] != batch:
            raise ShapeError(f"enqueue_many components disagree on the batch size: "
                             f"{', '.join(str(x) for x in components)}")
        batch = c.shape[0] if c.shape[0] is not None else batch
    return []


@QueueEnqueue.kernel("reference", context=True)
def _enqueue_kernel(ctx, queue, *components, timeout_ms):
    queue.enqueue(components, Waiter.from_context(ctx, timeout_ms))
    return ()


@QueueEnqueueMany.kernel("reference", context=True)
def _enqueue_many_kernel(ctx, queue, *components, timeout_ms):
    queue.enqueue_many(components, Waiter.from_context(ctx, timeout_ms))
    return ()


# --------------------------------------------------------------------------- dequeue

QueueDequeue = def_op("QueueDequeue", ["handle"], {**_SHAPE_ATTRS, **_TIMEOUT},
                      stateful=True, tags=["blocking"],
                      doc="Remove one element from the queue; blocks while it is empty.")
QueueDequeueMany = def_op("QueueDequeueMany", ["handle"],
                          {"n": attr("int"), **_SHAPE_ATTRS, **_TIMEOUT},
                          stateful=True, tags=["blocking"],
                          doc="Remove `n` elements, batched along a new first dimension.")
QueueDequeueUpTo = def_op("QueueDequeueUpTo", ["handle"],
                          {"n": attr("int"), **_SHAPE_ATTRS, **_TIMEOUT},
                          stateful=True, tags=["blocking"],
                          doc="Like QueueDequeueMany, but a closed queue yields its last "
                              "elements (fewer than `n`) instead of failing.")


@QueueDequeue.infer
def _dequeue_infer(handle, *, dtypes, shapes, ranks, timeout_ms):
    _expect_queue(handle)
    return [TensorType(d, s) for d, s in _component_types(dtypes, shapes, ranks, "dequeue")]


def _batched_infer(handle, batch, n, dtypes, shapes, ranks, what):
    _expect_queue(handle)
    if n < 0:
        raise ShapeError(f"{what} needs n >= 0, got {n}")
    return [TensorType(d, (batch, *s)) for d, s in _component_types(dtypes, shapes, ranks, what)]


@QueueDequeueMany.infer
def _dequeue_many_infer(handle, *, n, dtypes, shapes, ranks, timeout_ms):
    return _batched_infer(handle, n, n, dtypes, shapes, ranks, "dequeue_many")


@QueueDequeueUpTo.infer
def _dequeue_up_to_infer(handle, *, n, dtypes, shapes, ranks, timeout_ms):
    return _batched_infer(handle, None, n, dtypes, shapes, ranks, "dequeue_up_to")


@QueueDequeue.kernel("reference", context=True)
def _dequeue_kernel(ctx, queue, *, dtypes, shapes, ranks, timeout_ms):
    return tuple(queue.dequeue(Waiter.from_context(ctx, timeout_ms)))


@QueueDequeueMany.kernel("reference", context=True)
def _dequeue_many_kernel(ctx, queue, *, n, dtypes, shapes, ranks, timeout_ms):
    return tuple(queue.dequeue_many(n, Waiter.from_context(ctx, timeout_ms)))


@QueueDequeueUpTo.kernel("reference", context=True)
def _dequeue_up_to_kernel(ctx, queue, *, n, dtypes, shapes, ranks, timeout_ms):
    return tuple(queue.dequeue_up_to(n, Waiter.from_context(ctx, timeout_ms)))


# ----------------------------------------------------------------------- size, close

QueueSize = def_op("QueueSize", ["handle"], stateful=True, side_effects=False,
                   doc="The number of elements in the queue (i32 scalar).")
QueueIsClosed = def_op("QueueIsClosed", ["handle"], stateful=True, side_effects=False,
                       doc="Whether the queue was closed (bool scalar).")
QueueClose = def_op("QueueClose", ["handle"], {"cancel_pending_enqueues": attr("bool", False)},
                    stateful=True,
                    doc="Close the queue: no more enqueues; blocked enqueues fail if "
                        "`cancel_pending_enqueues`.")


QueueFail = def_op("QueueFail", ["handle", "message"], {}, stateful=True,
                   doc="Close the queue with an error: every pending and later enqueue and "
                       "dequeue raises FailedPreconditionError with `message` (UTF-8 bytes "
                       "as a u8 vector), elements left or not.")

QueueReset = def_op("QueueReset", ["handle"], {}, stateful=True,
                    doc="Drop every element and open the queue again, even after QueueClose "
                        "or QueueFail.")


@QueueSize.infer
def _size_infer(handle):
    _expect_queue(handle)
    return TensorType(int32, ())


@QueueIsClosed.infer
def _is_closed_infer(handle):
    _expect_queue(handle)
    return TensorType(bool_, ())


@QueueClose.infer
def _close_infer(handle, *, cancel_pending_enqueues):
    _expect_queue(handle)
    return []


@QueueFail.infer
def _fail_infer(handle, message):
    _expect_queue(handle)
    if expect_tensor(message, "message").dtype is not uint8 or message.rank != 1:
        raise DTypeError(f"message must be the UTF-8 bytes of the error as a u8 vector, "
                         f"got {message}")
    return []


@QueueReset.infer
def _reset_infer(handle):
    _expect_queue(handle)
    return []


@QueueReset.kernel("reference", context=True)
def _reset_kernel(ctx, queue):
    queue.reset()
    return ()


@QueueFail.kernel("reference", context=True)
def _fail_kernel(ctx, queue, message):
    queue.fail(np.asarray(message, np.uint8).tobytes().decode("utf-8", "replace"))
    return ()


@QueueSize.kernel("reference", context=True)
def _size_kernel(ctx, queue):
    return np.int32(queue.size())


@QueueIsClosed.kernel("reference", context=True)
def _is_closed_kernel(ctx, queue):
    return np.bool_(queue.closed)


@QueueClose.kernel("reference", context=True)
def _close_kernel(ctx, queue, *, cancel_pending_enqueues):
    queue.close(cancel_pending_enqueues)
    return ()


not_differentiable("QueueHandle", "QueueEnqueue", "QueueEnqueueMany", "QueueDequeue",
                   "QueueDequeueMany", "QueueDequeueUpTo", "QueueSize", "QueueIsClosed",
                   "QueueClose", "QueueFail", "QueueReset")

__all__ = ["encode_shapes", "decode_shapes", "queue_from_attrs"]
