"""``tw.summary``: TensorFlow 2's summary API, writing TensorBoard event files.

    writer = tw.summary.create_file_writer("logs/run1")

    @tw.compile
    def train_step(x, y):
        loss = ...
        tw.summary.scalar("loss", loss, step=optimizer.iterations)
        return loss

    with writer.as_default():
        for x, y in batches:
            train_step(x, y)

Each summary function builds a summary op (``compiler/ops/summary.py``) that runs inside
the compiled step and writes the value the step computed (on the cpu target through a
host callback on the native step's buffers); outside a graph it writes at once. The op
looks up the default writer when it *runs*, so one compiled step writes to whichever
writer is the default at each call, and writes nothing (returning False) when there is
none. The default writer, step and record condition are process-wide (TensorFlow 2 keeps
them per thread), because the summary kernels run on the executor's threads.

The step: `step=` (an int, a ``tw.Variable`` or an integer tensor), else the default step
(``tw.summary.experimental.set_step``, ``writer.as_default(step=...)``). Inside a graph a
default step that is a Python int is read when the op runs, not frozen into the trace,
so ``set_step(i)`` in a loop around a compiled step works.

Needs the optional ``tensorboard`` package: ``pip install 'tensorweave[tensorboard]'``.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

from .compiler.dtypes import bool_, int64
from .errors import DTypeError, TensorWeaveError
from .frontend.building import apply_op1, convert_to_tensor
from .frontend.call_site import user_location
from .frontend.context import current_builder
from .frontend.tensor import EagerTensor, Tensor
from .runtime import summary_io

Result = Any  # a bool tensor (graph) or an EagerTensor (eager)


class SummaryWriter:
    """Writes summaries to one log directory (``tw.summary.create_file_writer``)."""

    def __init__(self, logdir: str, max_queue: int = 10, flush_millis: int = 120_000,
                 filename_suffix: str = ".v2") -> None:
        self._events = summary_io.EventWriter(logdir, max_queue=max_queue,
                                              flush_secs=flush_millis / 1000.0,
                                              filename_suffix=filename_suffix)

    @property
    def logdir(self) -> str:
        """The directory the event file is in."""
        return self._events.logdir

    def as_default(self, step: Any = None) -> contextlib.AbstractContextManager[SummaryWriter]:
        """Make this the default writer in the block (and `step` the default step, when
        given); flushes on exit, as TensorFlow does."""
        return self._as_default(step)

    @contextlib.contextmanager
    def _as_default(self, step: Any) -> Iterator[SummaryWriter]:
        self._events.reopen()
        try:
            with summary_io.writer_scope(self, step):
                yield self
        finally:
            self.flush()

    def set_as_default(self, step: Any = None) -> None:
        """Make this the default writer outside any ``as_default`` block."""
        self._events.reopen()
        summary_io.set_default_writer(self)
        if step is not None:
            summary_io.set_step(step)

    def add_summary(self, summary: Any, step: int | None) -> None:
        """Append a ``Summary`` proto (or a list of its values) at `step`."""
        self._events.add_summary(summary, step)

    def add_graph(self, graph: Any, step: int | None = None) -> None:
        """Append a graph for TensorBoard's graphs dashboard: a ``@tw.compile`` function
        (traced for its input signature), a ConcreteFunction, an IR graph or a GraphDef."""
        from .graph_export import as_graph_def
        self._events.add_graph_def(as_graph_def(graph), step)

    def init(self) -> None:
        """Open the event file (writers open on creation; kept for TensorFlow's API)."""
        self._events.reopen()

    def flush(self) -> None:
        """Write pending events to disk."""
        self._events.flush()

    def close(self) -> None:
        """Flush and close the event file (``as_default`` reopens a new one)."""
        self._events.close()


class _NoopWriter:
    """A writer that drops every summary (``tw.summary.create_noop_writer``)."""

    def as_default(self, step: Any = None) -> contextlib.AbstractContextManager[Any]:
        return summary_io.writer_scope(self, step)

    def add_summary(self, summary: Any, step: int | None) -> None:
        pass

    def add_graph(self, graph: Any, step: int | None = None) -> None:
        pass

    def set_as_default(self, step: Any = None) -> None:
        summary_io.set_default_writer(self)

    def init(self) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def create_file_writer(logdir: str, max_queue: int | None = None,
                       flush_millis: int | None = None, filename_suffix: str | None = None,
                       name: str | None = None, experimental_trackable: bool = False) -> SummaryWriter:
    """A writer of event files in `logdir` (created if missing). Raises ImportError
    naming the ``tensorweave[tensorboard]`` extra when `tensorboard` is missing."""
    return SummaryWriter(logdir, max_queue=10 if max_queue is None else max_queue,
                         flush_millis=120_000 if flush_millis is None else flush_millis,
                         filename_suffix=".v2" if filename_suffix is None else filename_suffix)


def create_noop_writer() -> Any:
    """A writer that writes nothing (a default writer that turns summaries off)."""
    return _NoopWriter()


def should_record_summaries() -> bool:
    """Whether summaries built now would be written: a default writer exists and the
    record condition is not False (a tensor condition counts as True here)."""
    cond = summary_io.record_condition()
    if callable(cond):
        cond = cond()
    if isinstance(cond, EagerTensor):
        cond = bool(cond.numpy())
    return summary_io.default_writer() is not None and cond is not False


@contextlib.contextmanager
def record_if(condition: Any) -> Iterator[None]:
    """Write summaries built in the block only when `condition` holds: a bool, a bool
    tensor (checked each time the step runs), or a callable returning either (called
    when each summary is built, so inside a compiled function it may build ops)."""
    with summary_io.record_scope(condition):
        yield


def flush(writer: Any = None, name: str | None = None) -> None:
    """Flush `writer` (default: the default writer) to disk."""
    writer = writer if writer is not None else summary_io.default_writer()
    if writer is not None:
        writer.flush()


# ------------------------------------------------------------------ the summary functions

def _require(kind: str) -> None:
    summary_io.require_tensorboard(f"tw.summary.{kind}")


def _step_operand(step: Any, in_graph: bool) -> Any:
    """The step as an int64 tensor, or None to read the default step when the op runs."""
    if step is None:
        step = summary_io.get_step()
        if step is None or (in_graph and isinstance(step, (int, np.integer))):
            return None
    t = convert_to_tensor(step, dtype_hint=int64)
    if not t.dtype.is_integer:
        raise DTypeError(f"step must be an integer, got a {t.dtype.ir_name} tensor")
    if t.dtype is not int64:
        from .frontend.ops.math import cast
        t = cast(t, int64)
    return t


def _cond_operand(in_graph: bool) -> tuple[bool, Any]:
    """(record?, condition tensor or None) from the innermost ``record_if``."""
    cond = summary_io.record_condition()
    if callable(cond):
        cond = cond()
    if isinstance(cond, (bool, np.bool_)):
        return bool(cond), None
    t = convert_to_tensor(cond)
    if t.dtype is not bool_:
        raise DTypeError(f"record_if needs a bool condition, got a {t.dtype.ir_name} tensor")
    if isinstance(t, EagerTensor):
        return bool(t.numpy()), None
    return True, t


def _write(op: str, kind: str, name: str, data: Any, step: Any, description: str | None,
           attrs: dict[str, Any]) -> Result:
    _require(kind)
    builder = current_builder()
    in_graph = builder is not None
    tag = builder.scoped_name(name) if in_graph else name
    try:
        record, cond = _cond_operand(in_graph)
        if not record:
            return convert_to_tensor(False)
        step_t = _step_operand(step, in_graph)
        if not in_graph and step_t is None:
            summary_io.step_now(tag)  # no step: the same clear error as at run time
    except TensorWeaveError as e:
        loc = user_location()
        raise e.with_context(op=f"tw.summary.{kind}",
                             location=str(loc) if loc is not None else None) from None
    extra = [x for x in (step_t, cond) if x is not None]
    return apply_op1(op, [data, *extra],
                     {"tag": tag, "has_step": step_t is not None, "has_cond": cond is not None,
                      "description": description or "", **attrs}, name=f"{name}/write_summary")


def scalar(name: str, data: Any, step: Any = None, description: str | None = None) -> Result:
    """Write scalar `data` under `name` (prefixed with the name scope) at `step`; returns
    a bool tensor: True when it was written."""
    return _write("WriteScalarSummary", "scalar", name, data, step, description, {})


def histogram(name: str, data: Any, step: Any = None, buckets: int | None = None,
              description: str | None = None) -> Result:
    """Write a histogram of `data`'s values (`buckets` equal-width buckets between the
    minimum and maximum, default 30) under `name` at `step`."""
    return _write("WriteHistogramSummary", "histogram", name, data, step, description,
                  {"buckets": 30 if buckets is None else int(buckets)})


def image(name: str, data: Any, step: Any = None, max_outputs: int = 3,
          description: str | None = None) -> Result:
    """Write up to `max_outputs` images of `data` (``[k, h, w, c]``, c = 1, 3 or 4; uint8,
    or floats in [0, 1]) as PNGs under ``name/image/i`` at `step`."""
    return _write("WriteImageSummary", "image", name, data, step, description,
                  {"max_outputs": int(max_outputs)})


def text(name: str, data: Any, step: Any = None, description: str | None = None) -> Result:
    """Write `data` (a Python str, or its UTF-8 bytes as a uint8 tensor) for TensorBoard's
    text dashboard under `name` at `step`."""
    if isinstance(data, bytes):
        data = np.frombuffer(data, dtype=np.uint8).copy()
    elif isinstance(data, str):
        data = np.frombuffer(data.encode("utf-8"), dtype=np.uint8).copy()
    elif not isinstance(data, (Tensor, EagerTensor, np.ndarray)):
        raise DTypeError(f"tw.summary.text needs a str or UTF-8 bytes, got "
                         f"{type(data).__name__}")
    elif isinstance(data, np.ndarray) and data.dtype != np.uint8:
        raise DTypeError(f"tw.summary.text needs UTF-8 bytes (uint8), got a {data.dtype} array")
    return _write("WriteTextSummary", "text", name, data, step, description, {})


def graph(graph_data: Any, step: int | None = None) -> bool:
    """Write a graph (a ``@tw.compile`` function with an input signature, a
    ConcreteFunction, an IR graph or a GraphDef) to the default writer for TensorBoard's
    graphs dashboard; False when there is no default writer."""
    writer = summary_io.default_writer()
    if writer is None:
        return False
    writer.add_graph(graph_data, step)
    return True


def _get_step() -> Any:
    """The default step (an int, variable or tensor), or None."""
    return summary_io.get_step()


def _set_step(step: Any) -> None:
    """Set the default step of summaries built without `step=`."""
    summary_io.set_step(step)


experimental = types.ModuleType(f"{__name__}.experimental",
                                "``tw.summary.experimental``: the default step.")
experimental.get_step = _get_step
experimental.set_step = _set_step
experimental.__all__ = ["get_step", "set_step"]
_get_step.__name__, _set_step.__name__ = "get_step", "set_step"

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "experimental", "flush",
           "graph", "histogram", "image", "record_if", "scalar", "should_record_summaries",
           "text"]
