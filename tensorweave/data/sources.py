"""Datasets that make elements: from arrays, ranges, generators, and combinations of
other datasets (zip, concatenate)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..compiler.dtypes import as_dtype, int64
from ..compiler.types import format_shape
from ..errors import InvalidArgumentError
from ..frontend import nest
from ..frontend.function import TensorSpec
from .dataset import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset
from .structure import (
    Element,
    Structure,
    conform,
    flatten_element,
    flatten_shapes,
    flatten_up_to,
    merge_structures,
    numpy_dtype,
    structure_of,
    to_array,
)


def _read_only(arrays: Element) -> Element:
    """Arrays the pipeline may hand out without copying: nobody can write to them."""
    out = []
    for a in arrays:
        a = np.array(a, copy=True) if a.flags.writeable else a
        a.flags.writeable = False
        out.append(a)
    return tuple(out)


class TensorsDataset(Dataset):
    """``Dataset.from_tensors``: one element."""

    def __init__(self, tensors: Any) -> None:
        super().__init__(Structure((), ()), "Dataset.from_tensors")
        flat, tree = flatten_element(tensors, self._op, self._location)
        self._element = _read_only(flat)
        self._structure = structure_of(self._element, tree)

    def _iterate(self) -> Iterator[Element]:
        yield self._element

    def _cardinality(self) -> int:
        return 1


class TensorSlicesDataset(Dataset):
    """``Dataset.from_tensor_slices``: one element per row of every leaf."""

    def __init__(self, tensors: Any) -> None:
        super().__init__(Structure((), ()), "Dataset.from_tensor_slices")
        flat, tree = flatten_element(tensors, self._op, self._location)
        if not flat:
            raise self._error(InvalidArgumentError, "needs at least one tensor")
        for i, a in enumerate(flat):
            if a.ndim == 0:
                raise self._error(InvalidArgumentError,
                                  f"component {i} is a scalar; slicing needs rank >= 1")
        rows = {a.shape[0] for a in flat}
        if len(rows) > 1:
            shapes = ", ".join(format_shape(a.shape) for a in flat)
            raise self._error(InvalidArgumentError,
                              f"all components must have the same first dimension, got "
                              f"shapes {shapes}")
        self._arrays = _read_only(flat)
        self._n = flat[0].shape[0]
        self._structure = Structure(tree, tuple(TensorSpec(a.shape[1:], as_dtype(a.dtype))
                                                for a in flat))

    def _iterate(self) -> Iterator[Element]:
        arrays = self._arrays
        for i in range(self._n):
            yield tuple([a[i, ...] for a in arrays])  # 0-d arrays, not NumPy scalars

    def _cardinality(self) -> int:
        return self._n


class RangeDataset(Dataset):
    """``Dataset.range``: int64 scalars (or `output_type`) as Python's range gives them."""

    def __init__(self, args: tuple, output_type: Any) -> None:
        super().__init__(Structure((), ()), "Dataset.range")
        if not 1 <= len(args) <= 3:
            raise self._error(InvalidArgumentError,
                              f"takes (stop), (start, stop) or (start, stop, step), got "
                              f"{len(args)} arguments")
        ints = []
        for a in args:
            v = np.asarray(a)
            if v.ndim != 0 or v.dtype.kind not in "iu":
                raise self._error(InvalidArgumentError,
                                  f"arguments must be integer scalars, got {a!r}")
            ints.append(int(v))
        start, stop, step = (0, ints[0], 1) if len(ints) == 1 else (*ints, 1)[:3]
        if step == 0:
            raise self._error(InvalidArgumentError, "step must not be 0")
        self._range = (start, stop, step)
        dtype = int64 if output_type is None else as_dtype(output_type)
        self._dtype = np.dtype(dtype.as_numpy_dtype)
        self._structure = Structure(("leaf",), (TensorSpec((), dtype),))

    def _iterate(self) -> Iterator[Element]:
        start, stop, step = self._range
        dtype = self._dtype
        i = start
        while (i < stop) if step > 0 else (i > stop):
            yield (np.asarray(i, dtype),)
            i += step

    def _cardinality(self) -> int:
        start, stop, step = self._range
        if step > 0:
            return max(0, -(-(stop - start) // step))
        return max(0, -(-(start - stop) // -step))


class CounterDataset(Dataset):
    """int64 scalars start, start + 1, ... without end (`Dataset.enumerate`'s indices)."""

    def __init__(self, start: int) -> None:
        super().__init__(Structure(("leaf",), (TensorSpec((), int64),)), "Dataset.enumerate")
        self._start = int(start)

    def _iterate(self) -> Iterator[Element]:
        i = self._start
        while True:
            yield (np.asarray(i, np.int64),)
            i += 1

    def _cardinality(self) -> int:
        return INFINITE_CARDINALITY


def _signature_structure(output_signature: Any, output_types: Any, output_shapes: Any,
                         what: str, location: str | None) -> Structure:
    if output_signature is not None:
        if output_types is not None or output_shapes is not None:
            raise InvalidArgumentError("give output_signature or output_types/"
                                       "output_shapes, not both", op=what, location=location)
        specs, tree = nest.flatten(output_signature)
        for s in specs:
            if not isinstance(s, TensorSpec):
                raise InvalidArgumentError(f"output_signature must be a nested "
                                           f"structure of tw.TensorSpec, got a leaf {s!r}",
                                           op=what, location=location)
        return Structure(tree, tuple(specs))
    if output_types is None:
        raise InvalidArgumentError("give output_signature (a structure of "
                                   "tw.TensorSpec)", op=what, location=location)
    types, tree = nest.flatten(output_types)
    if output_shapes is None:
        shapes = [None] * len(types)
    else:
        shapes, _ = flatten_shapes(output_shapes)
        if len(shapes) != len(types):
            raise InvalidArgumentError(f"output_shapes has {len(shapes)} shapes for "
                                       f"{len(types)} output_types", op=what, location=location)
    specs = []
    for t, s in zip(types, shapes):
        if s is None:
            raise InvalidArgumentError("tensorweave needs the rank of every "
                                       "component: give output_shapes (None for dims of any "
                                       "size)", op=what, location=location)
        specs.append(TensorSpec(s, as_dtype(t)))
    return Structure(tree, tuple(specs))


def _generator_arg(value: Any, op: str, location: str | None) -> Any:
    """An `args` entry as TensorFlow hands it to the generator: converted as a tensor
    (Python numbers to int32 / float32), a 0-d one as a NumPy scalar. A string stays a
    str (TensorFlow passes bytes; tensorweave has no string dtype)."""
    if isinstance(value, (str, bytes)):
        return value
    a = to_array(value, op, location)
    return a[()] if a.ndim == 0 else a


class GeneratorDataset(Dataset):
    """``Dataset.from_generator``: a Python generator's elements, checked against the
    signature."""

    def __init__(self, generator: Callable[..., Any], output_types: Any, output_shapes: Any,
                 args: Any, output_signature: Any) -> None:
        super().__init__(Structure((), ()), "Dataset.from_generator")
        if not callable(generator):
            raise self._error(InvalidArgumentError,
                              f"`generator` must be a callable that returns an iterator, "
                              f"got {type(generator).__name__}")
        self._generator = generator
        self._args = tuple(_generator_arg(a, self._op, self._location)
                           for a in args) if args is not None else ()
        self._structure = _signature_structure(output_signature, output_types, output_shapes,
                                               self._op, self._location)
        self._dtypes = [numpy_dtype(s) for s in self._structure.specs]

    def _convert(self, value: Any) -> Element:
        leaves = flatten_up_to(self._structure.tree, value)
        if leaves is None:
            # a bare leaf for a 1-tuple signature is a common slip; name both
            raise self._error(InvalidArgumentError,
                              f"the generator yielded {value!r:.200}, which does not match "
                              f"the structure of output_signature "
                              f"{self._structure.describe()}")
        flat = []
        for i, (v, dtype) in enumerate(zip(leaves, self._dtypes)):
            # a copy: the generator may reuse and change its arrays after yielding them
            a = np.array(v)
            if a.dtype.kind not in "biuf":
                raise self._error(InvalidArgumentError,
                                  f"component {i}: the generator yielded {v!r:.100}, not a "
                                  f"tensor of {as_dtype(dtype).ir_name}")
            if a.dtype != dtype and np.dtype(dtype).kind == "f":
                # TensorFlow converts the yielded values to the signature's dtype: a float
                # signature rounds (0.1 to float32; beyond its range, inf)
                with np.errstate(over="ignore"):
                    a = a.astype(dtype)
            elif a.dtype != dtype:
                # an integer signature: TensorFlow truncates 1.5 to 1 and wraps 300 to a
                # uint8 44; a cast that changes a value is an error here
                cast = a.astype(dtype)
                if not np.array_equal(cast.astype(a.dtype), a, equal_nan=a.dtype.kind == "f"):
                    raise self._error(InvalidArgumentError,
                                      f"component {i}: the generator yielded "
                                      f"{a.dtype.name} values that are not "
                                      f"{as_dtype(dtype).ir_name}: {v!r:.100}")
                a = cast
            flat.append(a)
        return conform(tuple(flat), self._structure.tree, self._structure, self._op, self._location)

    def _iterate(self) -> Iterator[Element]:
        iterator = iter(self._generator(*self._args))
        try:
            for value in iterator:
                yield self._convert(value)
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()


def _cardinality_min(counts: list[int]) -> int:
    """Zip's length, as TensorFlow's ZipDataset: unknown if any is, else the shortest
    finite one, infinite when all are."""
    if UNKNOWN_CARDINALITY in counts:
        return UNKNOWN_CARDINALITY
    finite = [c for c in counts if c != INFINITE_CARDINALITY]
    return min(finite) if finite else INFINITE_CARDINALITY


class ZipDataset(Dataset):
    """``Dataset.zip``: elements of a nested structure of datasets side by side."""

    def __init__(self, datasets: Any, op: str = "Dataset.zip") -> None:
        super().__init__(Structure((), ()), op)
        members, tree = nest.flatten(datasets)
        if not members:
            raise self._error(InvalidArgumentError, "needs at least one dataset")
        for m in members:
            if not isinstance(m, Dataset):
                raise self._error(InvalidArgumentError,
                                  f"takes a nested structure of datasets, got a "
                                  f"{type(m).__name__}")
        self._members = members
        # the zipped element nests each member's element at the member's place
        nested = nest.unflatten(tree, [m._structure.nest([0] * len(m._structure.specs))
                                       for m in members])
        self._structure = Structure(nest.flatten(nested)[1],
                                    tuple(s for m in members for s in m._structure.specs))

    def _iterate(self) -> Iterator[Element]:
        iterators = [m._iterate() for m in self._members]
        try:
            while True:
                out: list = []
                for it in iterators:
                    try:
                        out.extend(next(it))
                    except StopIteration:
                        return
                yield tuple(out)
        finally:
            for it in iterators:
                it.close()

    def _cardinality(self) -> int:
        return _cardinality_min([m._cardinality() for m in self._members])


class ConcatenateDataset(Dataset):
    """``Dataset.concatenate``: one dataset's elements, then another's."""

    def __init__(self, first: Dataset, second: Dataset) -> None:
        super().__init__(Structure((), ()), "Dataset.concatenate")
        if not isinstance(second, Dataset):
            raise self._error(InvalidArgumentError,
                              f"takes a Dataset, got {type(second).__name__}")
        self._parts = (first, second)
        self._structure = merge_structures(first._structure, second._structure, self._op,
                                           self._location)

    def _iterate(self) -> Iterator[Element]:
        for part in self._parts:
            yield from part._iterate()

    def _cardinality(self) -> int:
        a, b = (p._cardinality() for p in self._parts)
        if INFINITE_CARDINALITY in (a, b):
            return INFINITE_CARDINALITY
        if UNKNOWN_CARDINALITY in (a, b):
            return UNKNOWN_CARDINALITY
        return a + b
