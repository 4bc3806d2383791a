"""``Dataset.interleave`` and ``Dataset.flat_map``: a dataset per input element, their
elements interleaved.

The function returns a dataset, so its element spec cannot come from running it on data
that does not exist yet. As TensorFlow does, the function is traced once with the input's
element spec: under `tw.compile` tracing, with sources (`from_tensors`,
`from_tensor_slices`, `range`) made of symbolic tensors building *spec-only* datasets
(their structure from the tensors' types; they cannot be iterated). That gives the
element spec. At run time the function is called eagerly with each element, and each
dataset it returns must fit that spec (same nesting and dtypes, compatible shapes), or
the pipeline fails naming the op and both specs.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterator
from typing import Any

from ..compiler.dtypes import as_dtype, int64
from ..errors import InvalidArgumentError, TracingError
from ..frontend.function import TensorSpec
from ..frontend.function import compile as tw_compile
from ..frontend.tensor import Tensor
from .dataset import AUTOTUNE, UNKNOWN_CARDINALITY, Dataset, check_count
from .structure import Element, Structure, flatten_data, spec_of, to_array

_SPEC_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("tw_data_spec_only",
                                                                  default=False)


def spec_only() -> bool:
    """Whether sources given symbolic tensors should build spec-only datasets now (while
    an interleave/flat_map function is traced)."""
    return _SPEC_ONLY.get()


class SpecOnlyDataset(Dataset):
    """A dataset known by its element spec only (made of symbolic tensors while an
    interleave function is traced); iterating it is an error."""

    def __init__(self, structure: Structure, op: str) -> None:
        super().__init__(structure, op)

    def _iterate(self) -> Iterator[Element]:
        raise self._error(TracingError, "this dataset was made of symbolic tensors while "
                                        "a function was traced; it has no elements")


def spec_source(tensors: Any, op: str, slices: bool) -> Dataset | None:
    """A spec-only `from_tensors`/`from_tensor_slices` dataset if `tensors` holds symbolic
    tensors while a function is traced; None otherwise (build the real one)."""
    leaves, tree = flatten_data(tensors)
    if not spec_only() or not any(isinstance(v, Tensor) for v in leaves):
        return None
    specs = []
    for v in leaves:
        spec = TensorSpec(v.type.shape, v.type.dtype) if isinstance(v, Tensor) \
            else spec_of(to_array(v, op))
        if slices:
            if not spec.shape:
                raise InvalidArgumentError("a component is a scalar; slicing needs rank >= 1",
                                           op=op)
            spec = TensorSpec(spec.shape[1:], spec.dtype)
        specs.append(spec)
    return SpecOnlyDataset(Structure(tree, tuple(specs)), op)


def spec_range(args: tuple, output_type: Any) -> Dataset | None:
    """A spec-only `range` if an argument is symbolic while a function is traced."""
    if not spec_only() or not any(isinstance(a, Tensor) for a in args):
        return None
    dtype = int64 if output_type is None else as_dtype(output_type)
    return SpecOnlyDataset(Structure(("leaf",), (TensorSpec((), dtype),)), "Dataset.range")


def _fits(given: Structure, wanted: Structure) -> bool:
    return given.tree == wanted.tree and all(
        a.dtype is b.dtype and len(a.shape) == len(b.shape)
        and all(x is None or y is None or x == y for x, y in zip(a.shape, b.shape))
        for a, b in zip(given.specs, wanted.specs))


def schedulable_cpus() -> int:
    """The CPUs this process may run on (its affinity, as TensorFlow's
    ``port::MaxParallelism()``; a taskset or cpuset limits it), else the machine's: the
    cycle length AUTOTUNE picks, which decides the order of an interleave's elements."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class InterleaveDataset(Dataset):
    """``Dataset.interleave(fn, cycle_length, block_length)`` (``flat_map``: one at a
    time), in TensorFlow's deterministic order: `cycle_length` input elements' datasets
    are open at once; `block_length` elements are taken from each in turn; a dataset that
    ends is replaced by the next input element's when its turn comes again."""

    def __init__(self, source: Dataset, fn: Callable[..., Any], cycle_length: int | None,
                 block_length: int | None, op: str) -> None:
        super().__init__(source._structure, op)
        self._source = source
        self._fn = fn
        self._cycle = schedulable_cpus() if cycle_length in (None, AUTOTUNE) \
            else check_count(cycle_length, f"{op}: cycle_length", self._location, minimum=1)
        self._block = 1 if block_length is None else check_count(
            block_length, f"{op}: block_length", self._location, minimum=1)
        self._structure = self._trace()

    def _call(self, element: Any) -> Any:
        return self._fn(*element) if type(element) is tuple else self._fn(element)

    def _trace(self) -> Structure:
        """The element spec of the datasets `fn` returns, from one trace."""
        made: list[Any] = []

        def probe(element: Any) -> Any:
            token = _SPEC_ONLY.set(True)
            try:
                made.append(self._call(element))
            finally:
                _SPEC_ONLY.reset(token)
            return 0

        probe.__name__ = getattr(self._fn, "__name__", "dataset_fn")
        tw_compile(probe, input_signature=[self._source.element_spec]).get_concrete_function()
        (ds,) = made
        if not isinstance(ds, Dataset):
            raise self._error(InvalidArgumentError, f"the function must return a Dataset, "
                                                    f"got {type(ds).__name__}")
        return ds._structure

    def _open(self, element: Element) -> Iterator[Element]:
        from .structure import user_element
        ds = self._call(user_element(self._source._structure, element, numpy=False))
        if not isinstance(ds, Dataset):
            raise self._error(InvalidArgumentError, f"the function must return a Dataset, "
                                                    f"got {type(ds).__name__}")
        if not _fits(ds._structure, self._structure):
            raise self._error(InvalidArgumentError,
                              f"the function returned a dataset of "
                              f"{ds._structure.describe()}, which does not fit the spec "
                              f"of its trace {self._structure.describe()}")
        return ds._iterate()

    def _iterate(self) -> Iterator[Element]:
        source = self._source._iterate()
        slots: list[Iterator[Element] | None] = [None] * self._cycle
        index = block = 0
        open_count = 0
        end_of_input = False
        try:
            while not end_of_input or open_count > 0:
                current = slots[index]
                if current is not None:
                    element = next(current, None)
                    if element is not None:
                        block += 1
                        if block == self._block:
                            block, index = 0, (index + 1) % self._cycle
                        yield element
                        continue
                    slots[index] = None
                    open_count -= 1
                    block, index = 0, (index + 1) % self._cycle
                elif not end_of_input:
                    element = next(source, None)
                    if element is None:
                        end_of_input = True
                        continue
                    slots[index] = self._open(element)
                    open_count += 1
                else:
                    block, index = 0, (index + 1) % self._cycle
        finally:
            for it in slots:
                if it is not None:
                    it.close()
            source.close()

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

