"""TensorBoard event files: the Summary protos of each kind of summary, the event file
writer, and the process-wide summary state (default writer, default step, record
condition) that the summary ops' kernels read when they run.

The protos and the record writer are the `tensorboard` package's own
(``tensorboard.compat.proto``, ``tensorboard.summary.writer.event_file_writer``), an
optional extra: ``pip install 'tensorweave[tensorboard]'``. Nothing here imports it until a
summary is built or written, so tensorweave works without it.

The state is process-wide rather than per thread (TensorFlow 2 keeps it per thread)
because a compiled step runs its summary kernels on the executor's threads, not on the
thread that called it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import struct
import threading
import time
import types
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import FailedPreconditionError, InvalidArgumentError

EXTRA = "tensorweave[tensorboard]"

_MODULES = {
    "summary_pb2": "tensorboard.compat.proto.summary_pb2",
    "event_pb2": "tensorboard.compat.proto.event_pb2",
    "graph_pb2": "tensorboard.compat.proto.graph_pb2",
    "node_def_pb2": "tensorboard.compat.proto.node_def_pb2",
    "attr_value_pb2": "tensorboard.compat.proto.attr_value_pb2",
    "tensor_pb2": "tensorboard.compat.proto.tensor_pb2",
    "tensor_shape_pb2": "tensorboard.compat.proto.tensor_shape_pb2",
    "types_pb2": "tensorboard.compat.proto.types_pb2",
    "event_file_writer": "tensorboard.summary.writer.event_file_writer",
}


def require_tensorboard(what: str) -> types.SimpleNamespace:
    """The `tensorboard` modules summaries need, or an ImportError naming `what` needs
    them and the extra that installs them."""
    try:
        mods = {k: importlib.import_module(v) for k, v in _MODULES.items()}
    except ImportError as e:
        raise ImportError(f"{what} needs the 'tensorboard' package, which is not installed "
                          f"({e}); install it with: pip install '{EXTRA}'") from None
    return types.SimpleNamespace(**mods)


# ------------------------------------------------------------------ Summary protos

def scalar_values(tag: str, value: np.ndarray) -> list[Any]:
    """One ``simple_value`` (what `EventAccumulator.Scalars` and TensorBoard's scalars
    dashboard read)."""
    pb = require_tensorboard("a scalar summary").summary_pb2
    return [pb.Summary.Value(tag=tag, simple_value=float(np.asarray(value).reshape(())))]


def histogram_values(tag: str, value: np.ndarray, buckets: int) -> list[Any]:
    """A ``HistogramProto`` of `value` with `buckets` equal-width buckets between its
    minimum and maximum (TensorFlow 2's bucketing). `bucket_limit[i]` is the right edge
    of bucket i, as TensorBoard reads it."""
    pb = require_tensorboard("a histogram summary").summary_pb2
    x = np.asarray(value, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(x)):
        bad = "NaN" if np.any(np.isnan(x)) else "Inf"
        raise InvalidArgumentError(f"{bad} in summary histogram for: {tag}")
    hist = pb.HistogramProto(num=float(x.size))
    if x.size:
        lo, hi = float(x.min()), float(x.max())
        hist.min, hist.max = lo, hi
        hist.sum = float(x.sum())
        hist.sum_squares = float(np.dot(x, x))
        if lo == hi:
            counts, edges = np.array([x.size]), np.array([lo - 0.5, hi + 0.5])
        else:
            counts, edges = np.histogram(x, bins=buckets, range=(lo, hi))
        hist.bucket_limit.extend(float(e) for e in edges[1:])
        hist.bucket.extend(float(c) for c in counts)
    return [pb.Summary.Value(tag=tag, histo=hist)]


def image_values(tag: str, images: np.ndarray, max_outputs: int,
                 normalize: bool = False) -> list[Any]:
    """One PNG ``Summary.Image`` per image of a ``[k, h, w, c]`` batch (at most
    `max_outputs`), tagged as TensorFlow 1 does: ``tag/image`` for one image,
    ``tag/image/i`` for several. Floats are taken to be in [0, 1] and saturate (TF2's
    ``tf.summary.image``), or with `normalize` rescaled image by image as TensorFlow 1's
    ImageSummary does (`normalize_float_image`)."""
    pb = require_tensorboard("an image summary").summary_pb2
    arr = np.asarray(images)
    if normalize and arr.dtype != np.uint8:
        arr = np.stack([normalize_float_image(im) for im in arr[:max_outputs]]) \
            if arr.shape[0] and max_outputs > 0 else arr[:0].astype(np.uint8)
    elif arr.dtype != np.uint8:
        with np.errstate(invalid="ignore"):
            arr = np.clip(np.nan_to_num(arr.astype(np.float64)) * 255.0 + 0.5, 0, 255)
        arr = arr.astype(np.uint8)
    n = min(max_outputs, arr.shape[0])
    out = []
    for i in range(n):
        img = arr[i]
        name = f"{tag}/image" if n == 1 else f"{tag}/image/{i}"
        out.append(pb.Summary.Value(tag=name, image=pb.Summary.Image(
            height=img.shape[0], width=img.shape[1], colorspace=img.shape[2],
            encoded_image_string=encode_png(img))))
    return out


# TensorFlow 1's ImageSummary paints a pixel with a non-finite channel in its default
# bad_color, opaque red, cut to the image's depth
_BAD_COLOR = np.array([255, 0, 0, 255], np.uint8)


def normalize_float_image(image: np.ndarray) -> np.ndarray:
    """One ``[h, w, c]`` float image as uint8 pixels, as TensorFlow 1's ImageSummary
    (``NormalizeFloatImage``) makes them: over the pixels whose channels are all finite,
    if none is negative the largest becomes 255, otherwise ``x * 127 / max|x| + 128``
    (0 stays mid-gray); values are truncated, and a pixel with a NaN or infinite channel
    is red. Computed in float32, as the kernel does for float and half images."""
    x = np.asarray(image, np.float32)
    finite = np.isfinite(x).all(axis=-1)
    values = x[finite]
    lo = float(values.min()) if values.size else np.inf
    hi = float(values.max()) if values.size else -np.inf
    if lo < 0:
        largest = max(abs(lo), abs(hi))
        scale, offset = (0.0 if largest < 1e-6 else 127.0 / largest), 128.0
    else:
        scale, offset = (0.0 if hi < 1e-6 else 255.0 / hi), 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        pixels = (np.where(finite[..., None], x, np.float32(0)) * np.float32(scale)
                  + np.float32(offset)).astype(np.uint8)
    pixels[~finite] = _BAD_COLOR[:x.shape[-1]]
    return pixels


def text_values(tag: str, utf8: np.ndarray | bytes) -> list[Any]:
    """A string tensor summary for TensorBoard's text plugin (TensorFlow's layout:
    plugin ``text``, a scalar ``DT_STRING`` tensor)."""
    tb = require_tensorboard("a text summary")
    data = bytes(np.asarray(utf8, dtype=np.uint8)) if not isinstance(utf8, bytes) else utf8
    meta = tb.summary_pb2.SummaryMetadata(
        plugin_data=tb.summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
    tensor = tb.tensor_pb2.TensorProto(dtype=tb.types_pb2.DT_STRING, string_val=[data],
                                       tensor_shape=tb.tensor_shape_pb2.TensorShapeProto())
    return [tb.summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=tensor)]


def encode_png(img: np.ndarray) -> bytes:
    """``[h, w, c]`` uint8 pixels (c: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA) as a PNG file
    (no filtering, zlib level 6): enough for summaries, with no imaging library."""
    h, w, c = img.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    rows = np.ascontiguousarray(img, dtype=np.uint8).reshape(h, w * c)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rows], axis=1).tobytes()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def serialize(values: Sequence[Any]) -> bytes:
    """A ``Summary`` holding `values`, serialized (what TensorFlow 1's summary ops
    output)."""
    pb = require_tensorboard("a summary").summary_pb2
    return pb.Summary(value=list(values)).SerializeToString()


def parse(data: Any) -> Any:
    """A ``Summary`` from its serialized bytes (or a uint8 array of them, which is how a
    session returns a summary tensor)."""
    pb = require_tensorboard("a summary").summary_pb2
    if isinstance(data, pb.Summary):
        return data
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data, dtype=np.uint8).tobytes()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected a Summary proto or its serialized bytes, got "
                        f"{type(data).__name__}")
    return pb.Summary.FromString(bytes(data))


# ------------------------------------------------------------------ event files

class EventWriter:
    """Events for one log directory, appended to one ``events.out.tfevents.*`` file by
    TensorBoard's record writer (a background thread; `flush` waits for it). Safe to use
    from several threads."""

    def __init__(self, logdir: str, max_queue: int = 10, flush_secs: float = 120.0,
                 filename_suffix: str = "") -> None:
        tb = require_tensorboard("a summary file writer")
        self._tb = tb
        self.logdir = os.fspath(logdir)
        os.makedirs(self.logdir, exist_ok=True)
        self._args = (max_queue, flush_secs, filename_suffix)
        self._lock = threading.Lock()
        self._writer: Any = None
        self.reopen()

    def reopen(self) -> None:
        """Start a new event file after `close` (no-op while open)."""
        with self._lock:
            if self._writer is None:
                max_queue, flush_secs, suffix = self._args
                self._writer = self._tb.event_file_writer.EventFileWriter(
                    self.logdir, max_queue_size=max_queue, flush_secs=flush_secs,
                    filename_suffix=suffix)

    @property
    def closed(self) -> bool:
        return self._writer is None

    def add_event(self, event: Any) -> None:
        """Append an ``Event`` proto (its wall time is set to now when missing)."""
        if not event.wall_time:
            event.wall_time = time.time()
        with self._lock:
            if self._writer is None:
                raise FailedPreconditionError(f"the summary writer for '{self.logdir}' is "
                                              f"closed")
            self._writer.add_event(event)

    def add_summary(self, summary: Any, step: int | None) -> None:
        """Append a ``Summary`` (proto, or a list of its values) at `step`."""
        pb = self._tb
        if not isinstance(summary, pb.summary_pb2.Summary):
            summary = pb.summary_pb2.Summary(value=list(summary))
        event = pb.event_pb2.Event(summary=summary)
        if step is not None:
            event.step = int(step)
        self.add_event(event)

    def add_graph_def(self, graph_def: Any, step: int | None = None) -> None:
        """Append a ``GraphDef`` (what TensorBoard's graphs dashboard shows)."""
        event = self._tb.event_pb2.Event(graph_def=graph_def.SerializeToString())
        if step is not None:
            event.step = int(step)
        self.add_event(event)

    def flush(self) -> None:
        """Write every pending event to disk."""
        with self._lock:
            if self._writer is not None:
                self._writer.flush()

    def close(self) -> None:
        """Flush and close the file; later writes are errors until `reopen`."""
        with self._lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()


# ------------------------------------------------------------------ process-wide state

class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.writers: list[Any] = []      # the default writer is the last
        self.step: Any = None             # int, Variable, tensor or None
        self.conditions: list[Any] = []   # record_if: the innermost is the last


STATE = _State()


def default_writer() -> Any:
    """The writer that summaries go to now, or None."""
    with STATE.lock:
        return STATE.writers[-1] if STATE.writers else None


@contextlib.contextmanager
def writer_scope(writer: Any, step: Any = None) -> Iterator[None]:
    """Make `writer` the default (and `step` the default step, when given) in the block."""
    with STATE.lock:
        STATE.writers.append(writer)
        old_step = STATE.step
        if step is not None:
            STATE.step = step
    try:
        yield
    finally:
        with STATE.lock:
            # the innermost entry: the same writer may be the default in nested blocks
            last = len(STATE.writers) - 1 - STATE.writers[::-1].index(writer)
            del STATE.writers[last]
            if step is not None:
                STATE.step = old_step


def set_default_writer(writer: Any) -> None:
    """Make `writer` the default outside any ``as_default`` block (replacing the last
    one set this way)."""
    with STATE.lock:
        STATE.writers[:] = [w for w in STATE.writers if not getattr(w, "_set_as_default", False)]
        writer._set_as_default = True
        STATE.writers.insert(0, writer)


def get_step() -> Any:
    """The default step (`set_step`, ``as_default(step=)``), or None."""
    with STATE.lock:
        return STATE.step


def set_step(step: Any) -> None:
    """Set the default step: an int, a ``tw.Variable`` or an integer tensor (or None)."""
    with STATE.lock:
        STATE.step = step


def step_now(tag: str) -> int:
    """The default step's value now, for a summary that was built without one."""
    step = get_step()
    if step is None:
        raise InvalidArgumentError(
            f"summary '{tag}' has no step: pass step=, or set a default step with "
            f"tw.summary.experimental.set_step(...) or writer.as_default(step=...)")
    if hasattr(step, "numpy"):
        step = step.numpy()
    return int(np.asarray(step).reshape(()))


@contextlib.contextmanager
def record_scope(condition: Any) -> Iterator[None]:
    """Push a record condition for the block."""
    with STATE.lock:
        STATE.conditions.append(condition)
    try:
        yield
    finally:
        with STATE.lock:
            STATE.conditions.pop()


def record_condition() -> Any:
    """The innermost record condition (True when none was set)."""
    with STATE.lock:
        return STATE.conditions[-1] if STATE.conditions else True


__all__ = ["EXTRA", "EventWriter", "default_writer", "encode_png", "get_step",
           "histogram_values", "image_values", "normalize_float_image", "parse",
           "record_condition", "record_scope", "require_tensorboard", "scalar_values",
           "serialize", "set_default_writer", "set_step", "step_now", "text_values",
           "writer_scope"]
