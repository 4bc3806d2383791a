"""TensorFlow 1's ``tf.TFRecordReader``: records of the files named by a queue of file
names (``tf.train.string_input_producer``), one per ``read``.

A reader is Session state, as a queue is: ``ReaderReadRecord`` finds the reader's state
(the file it is in and where) in the step's `ResourceManager` under the reader's name,
creating it on first use, so each Session reads on its own. When the current file is
done, the op dequeues the next name from the queue (blocking as a dequeue does, and
failing with OutOfRangeError once the queue is closed and empty). The key of a record is
``b"FILE:OFFSET"`` as TensorFlow's. The ops are stateful and ``blocking``: a step with
them runs on the dataflow executor, like a step with a dequeue.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..compiler.dtypes import int64, string
from ..compiler.ops.common import expect_resource
from ..compiler.registry import attr, def_op, not_differentiable
from ..compiler.types import TensorType
from ..errors import InvalidArgumentError, OutOfRangeError
from ..frontend.building import apply_op
from ..frontend.context import current_builder
from ..runtime.queues import Waiter
from .tfrecord import compression_kind, records_with_offsets

_READER = {"shared_name": attr("str"), "compression": attr("str", "")}

ReaderReadRecord = def_op(
    "ReaderReadRecord", ["queue"], _READER, stateful=True, tags=["blocking"],
    doc="The next (key, record) of the TFRecord reader `shared_name`; a new file name is "
        "dequeued from `queue` when the current file is done.")
ReaderReadRecordUpTo = def_op(
    "ReaderReadRecordUpTo", ["queue"], {**_READER, "n": attr("int")}, stateful=True,
    tags=["blocking"],
    doc="Up to `n` (key, record) pairs, fewer when the queue closes first.")
ReaderRecordsProduced = def_op(
    "ReaderRecordsProduced", [], {"shared_name": attr("str")}, stateful=True,
    side_effects=False, doc="How many records the reader `shared_name` has produced.")
not_differentiable("ReaderReadRecord", "ReaderReadRecordUpTo", "ReaderRecordsProduced")


class _ReaderState:
    """One reader's place: the file it reads (an iterator of its records) and counts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.path: str | None = None
        self.records: Iterator[tuple[int, bytes]] | None = None
        self.produced = 0

    def next_record(self, queue: Any, waiter: Waiter, compression: str) -> tuple[bytes, bytes]:
        while True:
            if self.records is None:
                (name,) = queue.dequeue(waiter)
                self.path = np.asarray(name)[()].decode("utf-8")
                self.records = records_with_offsets(self.path, compression,
                                                    "tf.TFRecordReader")
            item = next(self.records, None)
            if item is None:
                self.records = None
                continue
            self.produced += 1
            return f"{self.path}:{item[0]}".encode(), item[1]


def _state(ctx: Any, shared_name: str) -> _ReaderState:
    return ctx.resources.get_or_create(f"reader:{shared_name}", _ReaderState)


def _check_queue(queue: Any) -> None:
    expect_resource(queue, "queue")


@ReaderReadRecord.infer
def _read_infer(queue: Any, *, shared_name: str, compression: str) -> list:
    _check_queue(queue)
    return [TensorType(string, ()), TensorType(string, ())]


def _scalar(value: bytes) -> np.ndarray:
    out = np.empty((), object)
    out[()] = value
    return out


def _check_names(queue: Any) -> None:
    if len(queue.dtypes) != 1 or not queue.dtypes[0].is_string:
        raise InvalidArgumentError(f"a reader reads a queue of file names (string scalars), "
                                   f"got a queue of {[d.name for d in queue.dtypes]}")


@ReaderReadRecord.kernel("reference", context=True)
def _read_kernel(ctx: Any, queue: Any, *, shared_name: str, compression: str) -> tuple:
    _check_names(queue)
    state = _state(ctx, shared_name)
    with state.lock:
        key, value = state.next_record(queue, Waiter.from_context(ctx, -1), compression)
    return _scalar(key), _scalar(value)


@ReaderReadRecordUpTo.infer
def _read_up_to_infer(queue: Any, *, shared_name: str, compression: str, n: int) -> list:
    _check_queue(queue)
    if n <= 0:
        raise InvalidArgumentError(f"num_records must be positive, got {n}")
    return [TensorType(string, (None,)), TensorType(string, (None,))]


@ReaderReadRecordUpTo.kernel("reference", context=True)
def _read_up_to_kernel(ctx: Any, queue: Any, *, shared_name: str, compression: str,
                       n: int) -> tuple:
    _check_names(queue)
    state = _state(ctx, shared_name)
    keys, values = [], []
    with state.lock:
        while len(keys) < n:
            try:
                key, value = state.next_record(queue, Waiter.from_context(ctx, -1), compression)
            except OutOfRangeError:
                if keys:
                    break
                raise
            keys.append(key)
            values.append(value)
    out_k, out_v = np.empty(len(keys), object), np.empty(len(values), object)
    out_k[:], out_v[:] = keys, values
    return out_k, out_v


@ReaderRecordsProduced.infer
def _produced_infer(*, shared_name: str) -> TensorType:
    return TensorType(int64, ())


@ReaderRecordsProduced.kernel("reference", context=True)
def _produced_kernel(ctx: Any, *, shared_name: str) -> np.ndarray:
    return np.asarray(_state(ctx, shared_name).produced, np.int64)


_names = itertools.count()


class TFRecordReader:
    """TensorFlow 1's ``tf.TFRecordReader``: ``key, value = reader.read(filename_queue)``
    gives the next record (a string scalar) of the files whose names the queue holds;
    `options` a `TFRecordOptions` or compression name. Each Session keeps its own place."""

    def __init__(self, name: str | None = None, options: Any = None) -> None:
        from ..compat.v1.graph import get_default_graph
        builder = current_builder()
        base = name or "TFRecordReader"
        self._shared_name = builder.unique_name(base) if builder is not None else \
            f"{base}_{next(_names)}"
        self._compression = compression_kind(options, "tf.TFRecordReader")
        # (ops without a queue input go to the graph the reader was made in)
        self._graph = None if builder is not None else get_default_graph()

    @property
    def reader_ref(self) -> str:
        """The name the reader's state is kept under in a Session."""
        return self._shared_name

    def _attrs(self) -> dict[str, Any]:
        return {"shared_name": self._shared_name, "compression": self._compression}

    def read(self, queue: Any, name: str | None = None) -> tuple[Any, Any]:
        """(key, value): the next record and ``b"FILE:OFFSET"``; blocks for a file name
        when the current file is done; OutOfRangeError once the queue is closed and
        empty."""
        with queue._building():
            key, value = apply_op("ReaderReadRecord", [queue._resource_arg()], self._attrs(),
                                  name=name, default_name="ReaderReadV2")
        return key, value

    def read_up_to(self, queue: Any, num_records: int, name: str | None = None
                   ) -> tuple[Any, Any]:
        """Up to `num_records` (keys, values), fewer at the end of the file names."""
        with queue._building():
            keys, values = apply_op("ReaderReadRecordUpTo", [queue._resource_arg()],
                                    {**self._attrs(), "n": int(num_records)}, name=name,
                                    default_name="ReaderReadUpToV2")
        return keys, values

    def num_records_produced(self, name: str | None = None) -> Any:
        """How many records this reader has produced in the Session."""
        def build() -> Any:
            return apply_op("ReaderRecordsProduced", [], {"shared_name": self._shared_name},
                            name=name, default_name="ReaderNumRecordsProducedV2")[0]
        if current_builder() is None and self._graph is not None:
            with self._graph.as_default():
                return build()
        return build()

    @property
    def supports_serialize(self) -> bool:
        return False


__all__ = ["TFRecordReader"]
