"""`tw.queue`: queues of tensors shared between steps (TensorFlow's ``tf.queue``).

A queue's state lives in the runtime, like a `tw.Variable`'s: created eagerly, it sits in
the process's resource manager and every graph that uses it refers to it by name through
a ``QueueHandle`` op; created in a `tw.compat.v1` graph, it is a node of that graph and
each Session makes its own queue the first time a step uses it.

Methods work in all three modes: eagerly the op runs now (and may block the caller),
inside ``@tw.compile`` functions and v1 graphs they add ops to the graph (an enqueue or
close returns the op, to run with ``sess.run`` or as a control dependency).

    q = tw.queue.FIFOQueue(100, [tw.float32, tw.int32], shapes=[[784], []])
    q.enqueue_many((images, labels))

    @tw.compile
    def step():
        x, y = q.dequeue_many(32)
        ...
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype
from ..compiler.ir import Node, Value
from ..compiler.ops.queue import encode_shapes
from ..compiler.types import format_shape
from ..errors import InvalidArgumentError, ShapeError, TracingError
from ..runtime.queues import QueueBase as _RuntimeQueue
from ..runtime.queues import check_same_queue, make_queue
from ..runtime.resources import ResourceManager, default_resource_manager
from .building import apply_op, convert_to_tensor, user_location
from .context import GraphBuilder, building, current_builder

Shape = tuple


def _as_dtypes(dtypes: Any) -> list[DType]:
    if isinstance(dtypes, (list, tuple)):
        return [as_dtype(d) for d in dtypes]
    return [as_dtype(dtypes)]


def _as_shapes(shapes: Any, n: int) -> list[Shape] | None:
    """TensorFlow's reading of `shapes`: None, one shape (a list of ints/None, used when
    there is a single component), or one shape per component."""
    if shapes is None:
        return None
    shapes = list(shapes)
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]
    if len(shapes) != n:
        raise ValueError(f"queue has {n} components but {len(shapes)} shapes were given")
    out = []
    for s in shapes:
        if s is None:
            raise ValueError("give every component a shape (None dims for any size), or no "
                             "shapes at all")
        out.append(tuple(None if d in (None, -1) else int(d) for d in s))
    return out


class QueueBase:
    """A queue of elements, each a tuple of tensors with the queue's component dtypes
    (and shapes, if given). See `FIFOQueue`, `RandomShuffleQueue`, `PaddingFIFOQueue`."""

    _kind = "fifo"

    def __init__(self, capacity: int, dtypes: Any, shapes: Any = None, names: Any = None,
                 shared_name: str | None = None, name: str = "queue", *,
                 min_after_dequeue: int = 0, seed: int | None = None,
                 resources: ResourceManager | None = None) -> None:
        builder = current_builder()
        if builder is not None and builder.kind == "function":
            raise TracingError("create queues outside @tw.compile functions (create the queue "
                               "once, then use it inside)", location=str(user_location()))
        self._dtypes = _as_dtypes(dtypes)
        self._shapes = _as_shapes(shapes, len(self._dtypes))
        self._names = self._check_names(names)
        self._capacity = int(capacity)
        self._min_after_dequeue = int(min_after_dequeue)
        self._seed = seed
        self._name = name
        # a v1 graph owns the queue's handle; eagerly, the runtime holds the queue now
        self._v1_builder: GraphBuilder | None = builder
        self._state: _RuntimeQueue | None = None
        if builder is None:
            self._resources = resources or default_resource_manager()
            self._shared_name = shared_name or self._resources.unique_resource_name(name)
            self._state = check_same_queue(
                self._resources.get_or_create(self._shared_name, self._make_state),
                self._kind, self._capacity, self._dtypes, self._shapes,
                self._min_after_dequeue)
        else:
            self._resources = None
            self._shared_name = shared_name or builder.v1_graph.unique_variable_name(name)
            self._handle()  # the handle node is part of the graph from now on

    def _make_state(self) -> _RuntimeQueue:
        return make_queue(self._kind, self._capacity, self._dtypes, self._shapes,
                          self._shared_name, self._min_after_dequeue, self._seed)

    def _check_names(self, names: Any) -> list[str] | None:
        if names is None:
            return None
        names = [names] if isinstance(names, str) else list(names)
        if len(names) != len(self._dtypes):
            raise ValueError(f"queue has {len(self._dtypes)} components but {len(names)} names")
        return names

    # -- properties -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The queue's name in the runtime (its shared name)."""
        return self._shared_name

    @property
    def shared_name(self) -> str:
        return self._shared_name

    @property
    def dtypes(self) -> list[DType]:
        return list(self._dtypes)

    @property
    def shapes(self) -> list[Shape] | None:
        return None if self._shapes is None else list(self._shapes)

    @property
    def names(self) -> list[str] | None:
        return None if self._names is None else list(self._names)

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def graph(self) -> Any:
        """The tw.compat.v1 graph holding the queue, or None for an eager queue."""
        return None if self._v1_builder is None else self._v1_builder.v1_graph

    @property
    def state(self) -> _RuntimeQueue:
        """The runtime queue (eager queues only; a v1 queue lives in each Session)."""
        if self._state is None:
            raise TracingError(f"queue '{self.name}' belongs to a tw.compat.v1 graph: its state "
                               f"lives in each Session")
        return self._state

    # -- graph plumbing ------------------------------------------------------------------
    def _handle_attrs(self) -> dict[str, Any]:
        flat, ranks = encode_shapes(self._shapes, len(self._dtypes))
        return {"shared_name": self._shared_name, "kind": self._kind,
                "capacity": self._capacity, "dtypes": tuple(d.ir_name for d in self._dtypes),
                "shapes": flat, "ranks": ranks, "min_after_dequeue": self._min_after_dequeue,
                "seed": -1 if self._seed is None else int(self._seed)}

    def _component_attrs(self) -> dict[str, Any]:
        flat, ranks = encode_shapes(self._shapes, len(self._dtypes))
        return {"dtypes": tuple(d.ir_name for d in self._dtypes), "shapes": flat, "ranks": ranks}

    def _handle(self) -> Value:
        """The queue's handle in the graph being built (one per graph, so that stateful
        ops on the queue are chained by automatic control dependencies)."""
        builder = current_builder() or self._v1_builder
        handles = getattr(builder, "queue_handles", None)
        if handles is None:
            handles = builder.queue_handles = {}
        h = handles.get(self._shared_name)
        if h is not None:
            self._check_same_handle(h.producer)
        else:
            node = builder.graph.add_node("QueueHandle", [], self._handle_attrs(),
                                          name=self._shared_name, device=builder.device,
                                          loc=user_location())
            h = handles[self._shared_name] = node.outputs[0]
        return h

    def _check_same_handle(self, node: Node) -> None:
        """A queue that shares its name with one of the graph's (and so its handle node)
        must describe the same queue: its dequeues are typed by its own shapes."""
        mine = self._handle_attrs()
        differ = [k for k in mine if k not in ("seed", "shared_name")
                  and node.attrs.get(k) != mine[k]]
        if differ:
            what = ", ".join(f"{k} {node.attrs.get(k)!r} vs {mine[k]!r}" for k in differ)
            raise InvalidArgumentError(f"queue '{self._shared_name}' already exists in this "
                                       f"graph as another queue ({what}: shapes, dtypes, "
                                       f"capacity and kind must match)",
                                       location=str(user_location()))

    @contextlib.contextmanager
    def _building(self) -> Iterator[GraphBuilder | None]:
        """Where this call's ops go: the current graph, else the queue's v1 graph, else
        nowhere (eager)."""
        builder = current_builder()
        if builder is None and self._v1_builder is not None:
            with building(self._v1_builder) as b:
                yield b
        else:
            yield builder

    def _resource_arg(self) -> Any:
        return self if current_builder() is None else self._handle()

    def _eager_resource(self) -> _RuntimeQueue:
        return self.state

    def _apply(self, op: str, inputs: Sequence[Any], attrs: dict[str, Any],
               name: str | None) -> tuple[list[Any], Node | None]:
        """Run or add `op` on this queue; returns its outputs and (in a graph) its node."""
        outs = apply_op(op, [self._resource_arg(), *inputs], attrs, name=name)
        builder = current_builder()
        return outs, (builder.graph.nodes[-1] if builder is not None else None)

    # -- components in and out -------------------------------------------------------------
    def _flatten_vals(self, vals: Any) -> list[Any]:
        if self._names is not None:
            if not isinstance(vals, dict) or set(vals) != set(self._names):
                raise InvalidArgumentError(
                    f"queue '{self.name}' has named components {self._names}: enqueue a dict "
                    f"with exactly those keys")
            return [vals[n] for n in self._names]
        if isinstance(vals, dict):
            raise InvalidArgumentError(f"queue '{self.name}' has no component names; enqueue "
                                       f"a tuple or list of values")
        return list(vals) if isinstance(vals, (list, tuple)) else [vals]

    def _convert(self, vals: Any, batched: bool) -> list[Any]:
        """The values as tensors of the component dtypes, checked against the shapes."""
        flat = self._flatten_vals(vals)
        what = "enqueue_many" if batched else "enqueue"
        if len(flat) != len(self._dtypes):
            raise InvalidArgumentError(
                f"queue '{self.name}' has {len(self._dtypes)} components, {what} got "
                f"{len(flat)} values", location=str(user_location()))
        tensors = [convert_to_tensor(v, dtype=d) for v, d in zip(flat, self._dtypes)]
        for i, t in enumerate(tensors):
            self._check_shape(i, t.shape, batched, what)
        return tensors

    def _check_shape(self, i: int, shape: Shape, batched: bool, what: str) -> None:
        if batched:
            if len(shape) == 0:
                raise ShapeError(f"queue '{self.name}': {what} needs values with a leading "
                                 f"batch dimension, component {i} is a scalar",
                                 location=str(user_location()))
            shape = shape[1:]
        want = None if self._shapes is None else self._shapes[i]
        if want is not None and (len(want) != len(shape) or any(
                a is not None and b is not None and a != b for a, b in zip(want, shape))):
            raise ShapeError(f"queue '{self.name}': component {i} has shape "
                             f"{format_shape(want)}, {what} got an element of shape "
                             f"{format_shape(shape)}", location=str(user_location()))

    def _pack(self, outs: list[Any]) -> Any:
        """Dequeued components as TensorFlow returns them: one tensor for a single
        component, a dict for named components, else a list."""
        if self._names is not None:
            return dict(zip(self._names, outs))
        return outs[0] if len(outs) == 1 else list(outs)

    # -- the operations -----------------------------------------------------------------
    def enqueue(self, vals: Any, name: str | None = None) -> Node | None:
        """Add one element (a tensor, a tuple/list of tensors, or a dict for named
        components); blocks while the queue is full. Returns the op in a graph."""
        with self._building():
            _, node = self._apply("QueueEnqueue", self._convert(vals, False), {},
                                  name or "enqueue")
            return node

    def enqueue_many(self, vals: Any, name: str | None = None) -> Node | None:
        """Add the slices of `vals` along their first dimension as separate elements."""
        with self._building():
            _, node = self._apply("QueueEnqueueMany", self._convert(vals, True), {},
                                  name or "enqueue_many")
            return node

    def dequeue(self, name: str | None = None) -> Any:
        """Remove one element; blocks while the queue is empty. Raises OutOfRangeError
        once the queue is closed and empty."""
        with self._building():
            outs, _ = self._apply("QueueDequeue", [], self._component_attrs(), name or "dequeue")
            return self._pack(outs)

    def dequeue_many(self, n: int, name: str | None = None) -> Any:
        """Remove `n` elements, batched along a new first dimension of size `n`."""
        with self._building():
            outs, _ = self._apply("QueueDequeueMany", [], {"n": int(n), **self._component_attrs()},
                                  name or "dequeue_many")
            return self._pack(outs)

    def dequeue_up_to(self, n: int, name: str | None = None) -> Any:
        """Like `dequeue_many`, but once the queue is closed return the last elements even
        if fewer than `n` remain."""
        with self._building():
            outs, _ = self._apply("QueueDequeueUpTo", [], {"n": int(n), **self._component_attrs()},
                                  name or "dequeue_up_to")
            return self._pack(outs)

    def size(self, name: str | None = None) -> Any:
        """The number of elements in the queue (an i32 scalar)."""
        with self._building():
            return self._apply("QueueSize", [], {}, name or "size")[0][0]

    def is_closed(self, name: str | None = None) -> Any:
        """Whether the queue is closed (a bool scalar)."""
        with self._building():
            return self._apply("QueueIsClosed", [], {}, name or "is_closed")[0][0]

    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None) -> Node | None:
        """Close the queue: later enqueues fail with CancelledError, dequeues drain what is
        left and then fail with OutOfRangeError. With `cancel_pending_enqueues`, blocked
        enqueues fail now instead of completing."""
        with self._building():
            _, node = self._apply("QueueClose", [],
                                  {"cancel_pending_enqueues": bool(cancel_pending_enqueues)},
                                  name or "close")
            return node

    def close_with_error(self, message: Any, name: str | None = None) -> Node | None:
        """Close the queue for good with an error (a tensorweave extension): every
        pending and later enqueue and dequeue, on any task, raises
        `tw.errors.FailedPreconditionError(message)`. `message` is a str or the UTF-8
        bytes of one as a u8 vector (a placeholder, to choose the text when it runs)."""
        if isinstance(message, str):
            message = np.frombuffer(message.encode("utf-8"), np.uint8)
        with self._building():
            _, node = self._apply("QueueFail", [message], {}, name or "close_with_error")
            return node

    def __repr__(self) -> str:
        comps = ", ".join(d.tf_name + ("" if self._shapes is None else format_shape(s))
                          for d, s in zip(self._dtypes, self._shapes or [()] * len(self._dtypes)))
        return f"<tw.queue.{type(self).__name__} '{self.name}' capacity={self._capacity} ({comps})>"


class FIFOQueue(QueueBase):
    """A queue whose elements come out in the order they went in."""

    _kind = "fifo"

    def __init__(self, capacity: int, dtypes: Any, shapes: Any = None, names: Any = None,
                 shared_name: str | None = None, name: str = "fifo_queue", *,
                 resources: ResourceManager | None = None) -> None:
        super().__init__(capacity, dtypes, shapes, names, shared_name, name, resources=resources)


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues elements in random order. Until it is closed, a dequeue
    leaves at least `min_after_dequeue` elements behind (so that they mix with later
    ones); `capacity` must exceed `min_after_dequeue`. Without a `seed` the order is
    random, unless a global (or v1 graph) seed is set: then the queue's seed is derived
    from it as a random op's is, and the same program shuffles the same way."""

    _kind = "random_shuffle"

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes: Any, shapes: Any = None,
                 names: Any = None, seed: int | None = None, shared_name: str | None = None,
                 name: str = "random_shuffle_queue", *,
                 resources: ResourceManager | None = None) -> None:
        if not 0 <= min_after_dequeue < capacity:
            raise ValueError(f"min_after_dequeue ({min_after_dequeue}) must be >= 0 and less "
                             f"than capacity ({capacity})")
        if seed is None:
            seed = _seed_from_global()
        super().__init__(capacity, dtypes, shapes, names, shared_name, name,
                         min_after_dequeue=min_after_dequeue, seed=seed, resources=resources)


def _seed_from_global() -> int | None:
    """The seed of a RandomShuffleQueue created without one: None (a random order) unless
    a global or graph seed is set (``tw.random.set_seed``), in which case it is derived
    from that seed and the op count by TensorFlow's rule (`get_seed`), so that the same
    program shuffles the same way on every run."""
    from .ops.random import _graph_seed, get_seed
    if _graph_seed() is None:
        return None
    seed, seed2 = get_seed(None)
    # one 63-bit int for the queue's rng and the handle's int64 "seed" attribute
    return (seed * 0x9E3779B97F4A7C15 + seed2) % (1 << 63)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose component shapes may have None dims; `dequeue_many` pads each
    component with zeros to the largest size in the batch."""

    _kind = "padding_fifo"

    def __init__(self, capacity: int, dtypes: Any, shapes: Any, names: Any = None,
                 shared_name: str | None = None, name: str = "padding_fifo_queue", *,
                 resources: ResourceManager | None = None) -> None:
        if shapes is None:
            raise ValueError("PaddingFIFOQueue needs shapes (None dims for any size)")
        super().__init__(capacity, dtypes, shapes, names, shared_name, name, resources=resources)


__all__ = ["QueueBase", "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue"]
