"""``tf.summary`` of TensorFlow 1: summary ops that output serialized ``Summary`` protos,
``merge``/``merge_all``, and ``FileWriter``.

    loss_summary = tf.summary.scalar("loss", loss)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter("logs/train", sess.graph)
    summary, _ = sess.run([merged, train_op], feed_dict=...)
    writer.add_summary(summary, step)

There is no string dtype, so a summary tensor is the proto's bytes as ``u8[?]``: a session
returns a uint8 array, which `FileWriter.add_summary` (and ``bytes(array)``) take.
Needs the optional ``tensorboard`` package: ``pip install 'tensorweave[tensorboard]'``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...frontend.building import apply_op1
from ...frontend.tensor import Tensor
from ...runtime import summary_io
from .graph import get_default_graph, in_default_graph

SUMMARIES = "summaries"  # tf.GraphKeys.SUMMARIES


def _build(op: str, kind: str, name: str, tensor: Any, collections: Any, family: str | None,
           attrs: dict[str, Any]) -> Tensor:
    summary_io.require_tensorboard(f"tf.summary.{kind}")
    base = f"{family}/{name}" if family else name
    out = apply_op1(op, [tensor], {"tag": base, **attrs}, name=base)
    # TensorFlow 1 tags a summary with its name scope made unique, which is the op's name
    # (a second "loss" is "loss_1", so merge_all does not see the tag twice), and puts a
    # family in front once more ("train/train/loss") so it names the dashboard's tab
    node = out.op
    node.attrs["tag"] = f"{family}/{node.name}" if family else node.name
    for key in (collections if collections is not None else [SUMMARIES]):
        get_default_graph().add_to_collection(key, out)
    return out


@in_default_graph
def scalar(name: str, tensor: Any, collections: Any = None, family: str | None = None) -> Tensor:
    """A serialized Summary of scalar `tensor` under `name` (prefixed with the name scope
    and `family`), added to the ``summaries`` collection (or `collections`)."""
    return _build("ScalarSummary", "scalar", name, tensor, collections, family, {})


@in_default_graph
def histogram(name: str, values: Any, collections: Any = None, family: str | None = None) -> Tensor:
    """A serialized Summary holding a histogram (30 equal-width buckets) of `values`."""
    return _build("HistogramSummary", "histogram", name, values, collections, family,
                  {"buckets": 30})


@in_default_graph
def image(name: str, tensor: Any, max_outputs: int = 3, collections: Any = None,
          family: str | None = None) -> Tensor:
    """A serialized Summary holding up to `max_outputs` PNGs of `tensor` ([k, h, w, c]),
    tagged ``name/image/i``. uint8 pixels are kept; float images are rescaled one by one
    as TensorFlow 1 does (all >= 0: the largest becomes 255; any negative: 0 becomes 128
    and the largest magnitude 1 or 255; NaN/inf pixels red)."""
    return _build("ImageSummary", "image", name, tensor, collections, family,
                  {"max_outputs": int(max_outputs)})


@in_default_graph
def text(name: str, tensor: Any, collections: Any = None) -> Tensor:
    """A serialized Summary of text `tensor` (a Python str, or UTF-8 bytes as uint8) for
    TensorBoard's text dashboard."""
    if isinstance(tensor, str):
        tensor = tensor.encode("utf-8")
    if isinstance(tensor, bytes):
        tensor = np.frombuffer(tensor, dtype=np.uint8).copy()
    return _build("TextSummary", "text", name, tensor, collections, None, {})


@in_default_graph
def merge(inputs: Any, collections: Any = None, name: str | None = None) -> Tensor:
    """One serialized Summary holding the values of every summary in `inputs`."""
    summary_io.require_tensorboard("tf.summary.merge")
    out = apply_op1("MergeSummary", list(inputs), {}, name=name or "merge_summary")
    for key in collections or []:
        get_default_graph().add_to_collection(key, out)
    return out


def merge_all(key: str = SUMMARIES, scope: str | None = None, name: str | None = None) -> Tensor | None:
    """`merge` of every summary in the default graph's collection `key` (with `scope`,
    those whose op name the regular expression matches from the start, as
    ``get_collection``: the name, not the tag, which a family changes); None when there
    is none."""
    found = get_default_graph().get_collection(key, scope)
    return merge(found, name=name) if found else None


class FileWriter:
    """Writes serialized summaries and graphs to an event file in `logdir` for TensorBoard
    (``tf.summary.FileWriter``). With `graph` (``sess.graph``, a tf.Graph, or a GraphDef),
    the graph is written first."""

    def __init__(self, logdir: str, graph: Any = None, max_queue: int = 10,
                 flush_secs: float = 120, graph_def: Any = None,
                 filename_suffix: str | None = None, session: Any = None) -> None:
        self._events = summary_io.EventWriter(logdir, max_queue=max_queue, flush_secs=flush_secs,
                                              filename_suffix=filename_suffix or "")
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        """The directory of the event file."""
        return self._events.logdir

    def add_summary(self, summary: Any, global_step: int | None = None) -> None:
        """Append `summary` (what a session returned for a summary tensor, its bytes, or a
        ``Summary`` proto) at `global_step`."""
        self._events.add_summary(summary_io.parse(summary), global_step)

    def add_graph(self, graph: Any, global_step: int | None = None, graph_def: Any = None) -> None:
        """Append a graph: a tf.Graph (``sess.graph``), a compiled function, an IR graph or
        a GraphDef."""
        from ...graph_export import as_graph_def
        self._events.add_graph_def(as_graph_def(graph if graph is not None else graph_def),
                                   global_step)

    def add_event(self, event: Any) -> None:
        """Append an ``Event`` proto."""
        self._events.add_event(event)

    def flush(self) -> None:
        """Write pending events to disk."""
        self._events.flush()

    def close(self) -> None:
        """Flush and close the file (`reopen` starts a new one)."""
        self._events.close()

    def reopen(self) -> None:
        """Open a new event file after `close`."""
        self._events.reopen()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["FileWriter", "histogram", "image", "merge", "merge_all", "scalar", "text"]
