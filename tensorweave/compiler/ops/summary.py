"""Summary ops: values of a step written to TensorBoard event files.

TensorFlow 2 style (``tw.summary``): ``WriteScalarSummary``, ``WriteHistogramSummary``,
``WriteImageSummary`` and ``WriteTextSummary`` take the value and, optionally, the step
and a record condition (``*extra``: ``has_step`` / ``has_cond`` say which), and write
one event to the default writer *when they run*, returning whether they did. They are
stateful with side effects, so they are kept although nothing uses their output and are
never folded or merged. The writer and, for summaries built without a step tensor, the
default step are looked up at run time (`runtime.summary_io`), so one compiled step
writes to whichever writer is the default when it is called. On the cpu target they run
as host callbacks on the buffers the native step computed.

TensorFlow 1 style (``tf.summary`` of ``compat.v1``): ``ScalarSummary``,
``HistogramSummary``, ``ImageSummary`` and ``TextSummary`` output the serialized
``Summary`` proto as ``u8[?]`` bytes (there is no string dtype), ``MergeSummary``
concatenates several; a ``FileWriter`` writes what a session fetched.
"""

from __future__ import annotations

import numpy as np

from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ...runtime import summary_io
from ..dtypes import bool_, uint8
from ..registry import attr, def_op, not_differentiable
from ..types import TensorType
from .common import expect_tensor

_COMMON = {"tag": attr("str"), "has_step": attr("bool", False), "has_cond": attr("bool", False),
           "description": attr("str", "")}


def _numeric(t: TensorType, role: str) -> None:
    if t.dtype is bool_:
        raise DTypeError(f"{role} must be numeric, got {t} (cast it first)")


def _check_scalar(t, role: str) -> TensorType:
    t = expect_tensor(t, role)
    if t.shape is not None and t.rank != 0 and t.num_elements != 1:
        raise ShapeError(f"{role} must be a scalar, got {t}")
    return t


def _check_image(t) -> TensorType:
    t = expect_tensor(t, "images")
    if t.rank != 4 or t.shape[3] not in (1, 3, 4, None):
        raise ShapeError(f"images must be [k, h, w, c] with c = 1, 3 or 4 channels, got {t}")
    if t.dtype is not uint8 and not t.dtype.is_floating:
        raise DTypeError(f"images must be uint8 or floating point in [0, 1], got {t}")
    return t


def _check_text(t) -> TensorType:
    t = expect_tensor(t, "text")
    if t.dtype is not uint8 or t.rank != 1:
        raise DTypeError(f"text must be UTF-8 bytes (u8[?]), got {t}")
    return t


def _check_extra(extra, has_step: bool, has_cond: bool) -> None:
    want = int(has_step) + int(has_cond)
    if len(extra) != want:
        raise ShapeError(f"expected {want} step/condition operands, got {len(extra)}")
    if has_step:
        s = _check_scalar(extra[0], "step")
        if not s.dtype.is_integer:
            raise DTypeError(f"step must be an integer, got {s}")
    if has_cond:
        c = _check_scalar(extra[-1], "record condition")
        if c.dtype is not bool_:
            raise DTypeError(f"record condition must be a bool, got {c}")


def _writer_op(name: str, check, extra_attrs: dict, values_fn, doc: str):
    op = def_op(name, ["tensor", "*extra"], {**_COMMON, **extra_attrs}, stateful=True, doc=doc)

    @op.infer
    def _infer(tensor, *extra, tag, has_step, has_cond, description, **kind):
        check(tensor)
        _check_extra(extra, has_step, has_cond)
        return TensorType(bool_, ())

    @op.kernel("reference")
    def _kernel(tensor, *extra, tag, has_step, has_cond, description, **kind):
        if has_cond and not bool(np.asarray(extra[-1]).reshape(())):
            return np.array(False)
        writer = summary_io.default_writer()
        if writer is None:
            return np.array(False)
        step = int(np.asarray(extra[0]).reshape(())) if has_step else summary_io.step_now(tag)
        values = values_fn(tag, tensor, **kind)
        if description:
            for v in values:
                v.metadata.summary_description = description
        writer.add_summary(values, step)
        return np.array(True)

    not_differentiable(name)
    return op


def _scalar_check(t) -> None:
    _numeric(_check_scalar(t, "data"), "data")


def _histogram_check(t) -> None:
    _numeric(expect_tensor(t, "data"), "data")


WriteScalarSummary = _writer_op(
    "WriteScalarSummary", _scalar_check, {},
    lambda tag, x: summary_io.scalar_values(tag, x),
    "Write scalar `tensor` under `tag` to the default summary writer.")
WriteHistogramSummary = _writer_op(
    "WriteHistogramSummary", _histogram_check, {"buckets": attr("int", 30)},
    lambda tag, x, buckets: summary_io.histogram_values(tag, x, buckets),
    "Write a histogram of `tensor`'s values under `tag` to the default summary writer.")
WriteImageSummary = _writer_op(
    "WriteImageSummary", _check_image, {"max_outputs": attr("int", 3)},
    lambda tag, x, max_outputs: summary_io.image_values(tag, x, max_outputs),
    "Write up to `max_outputs` images of `tensor` ([k, h, w, c]) to the default writer.")
WriteTextSummary = _writer_op(
    "WriteTextSummary", _check_text, {},
    lambda tag, x: summary_io.text_values(tag, x),
    "Write UTF-8 text `tensor` under `tag` to the default summary writer.")


# ------------------------------------------------------------------ TensorFlow 1

_BYTES = TensorType(uint8, (None,))


def _proto_op(name: str, check, extra_attrs: dict, values_fn, doc: str):
    op = def_op(name, ["tensor"], {"tag": attr("str"), **extra_attrs}, doc=doc)

    @op.infer
    def _infer(tensor, *, tag, **kind):
        check(tensor)
        return _BYTES

    @op.kernel("reference")
    def _kernel(tensor, *, tag, **kind):
        data = summary_io.serialize(values_fn(tag, tensor, **kind))
        return np.frombuffer(data, dtype=np.uint8).copy()

    not_differentiable(name)
    return op


ScalarSummary = _proto_op(
    "ScalarSummary", _scalar_check, {}, lambda tag, x: summary_io.scalar_values(tag, x),
    "A serialized Summary of scalar `tensor` under `tag`.")
HistogramSummary = _proto_op(
    "HistogramSummary", _histogram_check, {"buckets": attr("int", 30)},
    lambda tag, x, buckets: summary_io.histogram_values(tag, x, buckets),
    "A serialized Summary holding a histogram of `tensor`'s values.")
ImageSummary = _proto_op(
    "ImageSummary", _check_image, {"max_outputs": attr("int", 3)},
    lambda tag, x, max_outputs: summary_io.image_values(tag, x, max_outputs, normalize=True),
    "A serialized Summary holding up to `max_outputs` PNG images of `tensor` (float images "
    "rescaled one by one, as TensorFlow 1's ImageSummary).")
TextSummary = _proto_op(
    "TextSummary", _check_text, {}, lambda tag, x: summary_io.text_values(tag, x),
    "A serialized Summary holding UTF-8 text `tensor` for TensorBoard's text plugin.")

MergeSummary = def_op("MergeSummary", ["*inputs"],
                      doc="The values of several serialized Summaries as one Summary.")


@MergeSummary.infer
def _merge_infer(*inputs):
    if not inputs:
        raise ShapeError("merge needs at least one summary")
    for i, t in enumerate(inputs):
        t = expect_tensor(t, f"input {i}")
        if t.dtype is not uint8 or t.rank != 1:
            raise DTypeError(f"input {i} must be a serialized summary (u8[?]), got {t}")
    return _BYTES


@MergeSummary.kernel("reference")
def _merge_kernel(*inputs):
    values, seen = [], set()
    for x in inputs:
        for v in summary_io.parse(x).value:
            # TensorBoard would keep only one of two values with one tag in one event.
            if v.tag in seen:
                raise InvalidArgumentError(f"duplicate tag {v.tag!r} in the merged summaries")
            seen.add(v.tag)
            values.append(v)
    merged = summary_io.serialize(values)
    return np.frombuffer(merged, dtype=np.uint8).copy()


not_differentiable("MergeSummary")

__all__ = ["HistogramSummary", "ImageSummary", "MergeSummary", "ScalarSummary", "TextSummary",
           "WriteHistogramSummary", "WriteImageSummary", "WriteScalarSummary",
           "WriteTextSummary"]

