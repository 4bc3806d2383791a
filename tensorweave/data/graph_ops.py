"""The graph ops of a `tw.compat.v1` dataset iterator: a handle, an initializer and
``IteratorGetNext`` (TensorFlow's ``IteratorV2``/``MakeIterator``/``IteratorGetNext``).

An iterator is a host-side resource, as a queue is: ``IteratorHandle`` names it by
`shared_name` and creates it in the step's `ResourceManager` on first use, so each v1
Session has its own iterator state. The dataset itself is a Python object; the handle's
`dataset` attribute is its key in this module's registry (the graph that holds the
iterator keeps the dataset alive). ``IteratorGetNext`` runs the pipeline on the host for
one element and fails with `OutOfRangeError` at the end, as TensorFlow's does; it is
``blocking`` (the pipeline may take a while, or wait on a generator), so a step with it
runs on the dataflow executor.

The ops are declared when this module is first imported, i.e. when a program makes its
first v1 iterator, so the op registry of programs that never do stays as it was.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..compiler.dtypes import as_dtype
from ..compiler.ops.common import expect_resource
from ..compiler.ops.queue import decode_shapes
from ..compiler.registry import attr, def_op, get_op, not_differentiable
from ..compiler.types import RESOURCE, TensorType
from ..errors import FailedPreconditionError, OutOfRangeError, ShapeError
from .structure import Element

# the datasets of live v1 iterators, by the key their IteratorHandle names
_DATASETS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_KEYS = itertools.count()


def register_dataset(dataset: Any) -> str:
    """A key under which `IteratorHandle` finds `dataset` (held weakly: the iterator's
    graph keeps it alive)."""
    key = f"dataset_{next(_KEYS)}"
    _DATASETS[key] = dataset
    return key


def _dataset(key: str, user: str) -> Any:
    ds = _DATASETS.get(key)
    if ds is None:
        raise FailedPreconditionError(f"the dataset of '{user}' no longer exists (its graph "
                                      f"was dropped)")
    return ds


class IteratorState:
    """One iterator's position in a dataset: the pass in progress, or none yet. A
    reinitializable iterator (`dataset` None) gets its dataset from each initializer."""

    def __init__(self, dataset: Any | None, one_shot: bool) -> None:
        self._dataset = dataset
        self._one_shot = one_shot
        self._elements: Iterator[Element] | None = None
        self._started = False
        self._lock = threading.Lock()

    def initialize(self, dataset: Any | None = None) -> None:
        """Start a new pass, over `dataset` if given (the previous pass, if any, is
        stopped)."""
        with self._lock:
            self._close()
            if dataset is not None:
                self._dataset = dataset
            self._elements = self._dataset._iterate()
            self._started = True

    def get_next(self) -> Element:
        """The next element; OutOfRangeError at the end of the pass."""
        with self._lock:
            if self._elements is None:
                if self._one_shot and not self._started:
                    self._elements = self._dataset._iterate()
                    self._started = True
                elif not self._started:
                    raise FailedPreconditionError(
                        "GetNext() failed because the iterator has not been initialized. "
                        "Ensure that you have run the initializer operation for this "
                        "iterator before getting the next element.")
                else:
                    raise OutOfRangeError("End of sequence")
            try:
                return next(self._elements)
            except StopIteration:
                self._elements = None
                raise OutOfRangeError("End of sequence") from None

    def _close(self) -> None:
        elements, self._elements = self._elements, None
        if elements is not None:
            elements.close()

    def __del__(self) -> None:
        try:
            self._close()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass


def _declare() -> None:
    try:
        get_op("IteratorHandle")
        return  # declared already (by an earlier import of this module's code)
    except Exception:  # noqa: BLE001  (VerificationError: not declared yet)
        pass

    handle = def_op("IteratorHandle", [],
                    {"shared_name": attr("str"), "dataset": attr("str"),
                     "one_shot": attr("bool", False)},
                    doc="The handle of the dataset iterator named `shared_name` (created on "
                        "first use over the dataset registered as `dataset`).")
    make = def_op("MakeIterator", ["handle", "*fed"], {"dataset": attr("str", "")},
                  stateful=True,
                  doc="Start a new pass of the iterator over its dataset, or over the "
                      "dataset registered as `dataset` when given; `fed` are the values "
                      "of the graph tensors its sources are made of (fed_sources.py).")
    get_next = def_op("IteratorGetNext", ["handle"],
                      {"dtypes": attr("strs"), "shapes": attr("ints", ()),
                       "ranks": attr("ints")},
                      stateful=True, tags=["blocking"],
                      doc="The iterator's next element; OutOfRangeError at the end.")

    @handle.infer
    def _handle_infer(*, shared_name, dataset, one_shot):
        return RESOURCE

    @handle.kernel("reference", context=True)
    def _handle_kernel(ctx, *, shared_name, dataset, one_shot):
        def factory() -> IteratorState:
            if not dataset:  # reinitializable: an initializer names the dataset
                return IteratorState(None, one_shot)
            return IteratorState(_dataset(dataset, shared_name), one_shot)
        state = ctx.resources.get_or_create(shared_name, factory)
        if not isinstance(state, IteratorState):
            raise FailedPreconditionError(f"resource '{shared_name}' is a "
                                          f"{type(state).__name__}, not a dataset iterator")
        return state

    @make.infer
    def _make_infer(handle, *fed, dataset):
        expect_resource(handle, "handle")
        return []

    @make.kernel("reference", context=True)
    def _make_kernel(ctx, state, *fed, dataset):
        ds = _dataset(dataset, "MakeIterator") if dataset else None
        if fed:  # a copy of the pipeline holding this run's values of its graph tensors
            from .fed_sources import bind_pipeline
            ds = bind_pipeline(ds, [np.asarray(v) for v in fed])
        state.initialize(ds)
        return ()

    @get_next.infer
    def _get_next_infer(handle, *, dtypes, shapes, ranks):
        expect_resource(handle, "handle")
        if len(dtypes) != len(ranks):
            raise ShapeError(f"{len(dtypes)} component dtypes but {len(ranks)} ranks")
        return [TensorType(as_dtype(d), s) for d, s in zip(dtypes, decode_shapes(shapes, ranks))]

    @get_next.kernel("reference", context=True)
    def _get_next_kernel(ctx, state, *, dtypes, shapes, ranks):
        return tuple(state.get_next())

    not_differentiable("IteratorHandle", "MakeIterator", "IteratorGetNext")


_declare()
