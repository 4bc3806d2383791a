"""`tw.data.Dataset`: TensorFlow's input-pipeline API, run on the host.

A dataset is a recipe: every iteration (a Python ``for``, `as_numpy_iterator`, a v1
iterator's initializer) starts a fresh pass through it. Elements are nested structures
(tuples, dicts, namedtuples) of tensors; `element_spec` describes them with
`tw.TensorSpec`s whose dims are None where the pipeline does not know them statically.
Functions given to `map`, `filter` and `reduce` are traced once per element spec with
`tw.compile` (the cpu target by default), so they take and return tensors.

Sources are the static methods (`from_tensor_slices`, `from_tensors`, `range`,
`from_generator`, `zip`); transformations are the methods, each returning a new dataset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, TracingError
from ..frontend.call_site import user_location
from ..frontend.context import current_builder
from ..frontend.tensor import EagerTensor
from .structure import Element, Structure, user_element

AUTOTUNE = -1
"""Let the pipeline pick the parallelism or buffer size (``tf.data.AUTOTUNE``)."""

INFINITE_CARDINALITY = -1
"""`Dataset.cardinality` of a dataset that never ends (``tf.data.INFINITE_CARDINALITY``)."""

UNKNOWN_CARDINALITY = -2
"""`Dataset.cardinality` when the length is not known without running the pipeline."""


class Dataset:
    """A pipeline of elements (TensorFlow's ``tf.data.Dataset``); build one with the static
    methods (`from_tensor_slices`, `range`, ...) and transform it with the methods (`map`,
    `batch`, `shuffle`, ...). Iterate with ``for``, `as_numpy_iterator` or, in a
    `tw.compat.v1` graph, `tw.compat.v1.data.make_one_shot_iterator`."""

    def __init__(self, structure: Structure, op: str) -> None:
        self._structure = structure
        self._op = op  # the API that made it, e.g. "Dataset.batch", for error messages
        loc = user_location()
        self._location = None if loc is None else str(loc)

    # -- what subclasses provide ------------------------------------------------------
    def _iterate(self) -> Iterator[Element]:
        """A fresh pass over the elements, each a flat tuple of arrays."""
        raise NotImplementedError

    def _cardinality(self) -> int:
        """The number of elements, `INFINITE_CARDINALITY` or `UNKNOWN_CARDINALITY`."""
        return UNKNOWN_CARDINALITY

    # -- helpers for subclasses ---------------------------------------------------------
    def _error(self, cls: type, message: str) -> Exception:
        """An error of class `cls` naming this dataset's op and the line that made it."""
        return cls(message, op=self._op, location=self._location)

    # -- inspection ---------------------------------------------------------------------
    @property
    def element_spec(self) -> Any:
        """The nested structure of `tw.TensorSpec`s that describes every element."""
        return self._structure.element_spec

    def cardinality(self) -> EagerTensor:
        """The number of elements as an int64 scalar tensor, or `INFINITE_CARDINALITY`
        (-1) or `UNKNOWN_CARDINALITY` (-2)."""
        return EagerTensor(np.asarray(self._cardinality(), np.int64))

    def __len__(self) -> int:
        n = self._cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self) -> bool:
        return True  # not len(): an infinite dataset is truthy too

    def __repr__(self) -> str:
        return f"<{type(self).__name__} element_spec={self.element_spec!r}>"

    # -- iteration ----------------------------------------------------------------------
    def __iter__(self) -> DatasetIterator:
        builder = current_builder()
        if builder is not None:
            raise TracingError("iterating a tw.data.Dataset with `for` works eagerly; inside "
                               "@tw.compile pass the batches in as arguments, and in a "
                               "tw.compat.v1 graph use tf.compat.v1.data."
                               "make_one_shot_iterator(ds).get_next()",
                               location=str(user_location()))
        return DatasetIterator(self, numpy=False)

    def as_numpy_iterator(self) -> DatasetIterator:
        """An iterator whose elements are NumPy arrays (nested as the elements are)."""
        return DatasetIterator(self, numpy=True)

    def reduce(self, initial_state: Any, reduce_func: Callable[..., Any]) -> Any:
        """Fold every element into a state: ``state = reduce_func(state, element)``, traced
        once with `tw.compile` (again with None dims if the state's shape changes), as
        TensorFlow's ``Dataset.reduce``; returns the final state as eager tensors."""
        from .functions import reduce_dataset
        return reduce_dataset(self, initial_state, reduce_func)

    # -- sources (static) ----------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any, name: str | None = None) -> Dataset:
        """One element per row of the first dimension of every leaf of `tensors` (a nested
        structure of arrays that all have the same first dim)."""
        from .fed_sources import fed_source
        from .interleave import spec_source
        from .sources import TensorSlicesDataset
        return spec_source(tensors, "Dataset.from_tensor_slices", slices=True) \
            or fed_source(tensors, "Dataset.from_tensor_slices", slices=True) \
            or TensorSlicesDataset(tensors)

    @staticmethod
    def from_tensors(tensors: Any, name: str | None = None) -> Dataset:
        """A dataset of one element: `tensors` itself."""
        from .fed_sources import fed_source
        from .interleave import spec_source
        from .sources import TensorsDataset
        return spec_source(tensors, "Dataset.from_tensors", slices=False) \
            or fed_source(tensors, "Dataset.from_tensors", slices=False) \
            or TensorsDataset(tensors)

    @staticmethod
    def range(*args: int, output_type: Any = None, name: str | None = None) -> Dataset:
        """``range(stop)``, ``range(start, stop[, step])`` as int64 scalars (or
        `output_type`), as Python's range."""
        from .interleave import spec_range
        from .sources import RangeDataset
        return spec_range(args, output_type) or RangeDataset(args, output_type)

    @staticmethod
    def from_generator(generator: Callable[..., Any], output_types: Any = None,
                       output_shapes: Any = None, args: Any = None,
                       output_signature: Any = None, name: str | None = None) -> Dataset:
        """Elements from a Python generator: `generator(*args)` is called at the start of
        every iteration; each element it yields is checked against `output_signature` (a
        nested structure of `tw.TensorSpec`s; or the older `output_types` and
        `output_shapes`)."""
        from .sources import GeneratorDataset
        return GeneratorDataset(generator, output_types, output_shapes, args,
                                output_signature)

    @staticmethod
    def zip(*args: Any, datasets: Any = None, name: str | None = None) -> Dataset:
        """Elements of several datasets side by side: ``zip(a, b)`` gives ``(ea, eb)``;
        ``zip({"x": a, "y": b})`` keeps a nested structure of datasets. Stops at the
        shortest."""
        from .sources import ZipDataset
        if datasets is not None and args:
            raise TypeError("Dataset.zip: give the datasets positionally or as `datasets=`, "
                            "not both")
        if datasets is None:
            datasets = args[0] if len(args) == 1 else tuple(args)
        return ZipDataset(datasets)

    # -- transformations -----------------------------------------------------------------
    def concatenate(self, dataset: Dataset, name: str | None = None) -> Dataset:
        """This dataset's elements, then `dataset`'s (same structure and dtypes; shapes
        relaxed to what both fit)."""
        from .sources import ConcatenateDataset
        return ConcatenateDataset(self, dataset)

    def map(self, map_func: Callable[..., Any], num_parallel_calls: int | None = None,
            deterministic: bool | None = None, name: str | None = None, *,
            target: str | None = None) -> Dataset:
        """Apply `map_func` to every element (a tuple element is passed as positional
        arguments). The function is traced once with `tw.compile` on `target` (None:
        tw.compile's default, the cpu target) for the element spec; with
        `num_parallel_calls` (or `AUTOTUNE`) calls run on a thread pool and results keep
        their input order."""
        from .functions import MapDataset
        return MapDataset(self, map_func, num_parallel_calls, target)

    def interleave(self, map_func: Callable[..., Dataset], cycle_length: int | None = None,
                   block_length: int | None = None, num_parallel_calls: int | None = None,
                   deterministic: bool | None = None, name: str | None = None) -> Dataset:
        """The elements of the datasets `map_func` returns for the input elements,
        interleaved as TensorFlow does: `cycle_length` (default: the CPU count) open at
        once, `block_length` (default 1) elements from each in turn. `map_func` is traced
        once for the element spec and then called eagerly per element."""
        from .interleave import InterleaveDataset
        return InterleaveDataset(self, map_func, cycle_length, block_length,
                                 "Dataset.interleave")

    def flat_map(self, map_func: Callable[..., Dataset], name: str | None = None) -> Dataset:
        """The elements of the datasets `map_func` returns for the input elements, one
        dataset after the other."""
        from .interleave import InterleaveDataset
        return InterleaveDataset(self, map_func, 1, 1, "Dataset.flat_map")

    def filter(self, predicate: Callable[..., Any], name: str | None = None, *,
               target: str | None = None) -> Dataset:
        """The elements for which `predicate` (traced once, returning a bool scalar) is
        true."""
        from .functions import FilterDataset
        return FilterDataset(self, predicate, target)

    def batch(self, batch_size: int, drop_remainder: bool = False,
              num_parallel_calls: int | None = None, deterministic: bool | None = None,
              name: str | None = None) -> Dataset:
        """Stack `batch_size` consecutive elements along a new first dim (the last batch
        may be smaller unless `drop_remainder`, so the batch dim is None in
        `element_spec` unless `drop_remainder`)."""
        from .batching import BatchDataset
        return BatchDataset(self, batch_size, drop_remainder)

    def padded_batch(self, batch_size: int, padded_shapes: Any = None,
                     padding_values: Any = None, drop_remainder: bool = False,
                     name: str | None = None) -> Dataset:
        """Batch elements of different shapes, padding each component to `padded_shapes`
        (None dims: the largest in the batch; default: every dim so) with
        `padding_values` (default 0)."""
        from .batching import PaddedBatchDataset
        return PaddedBatchDataset(self, batch_size, padded_shapes, padding_values,
                                  drop_remainder)

    def unbatch(self, name: str | None = None) -> Dataset:
        """Split every element along its first dim into that many elements."""
        from .batching import UnbatchDataset
        return UnbatchDataset(self)

    def shuffle(self, buffer_size: int, seed: int | None = None,
                reshuffle_each_iteration: bool = True, name: str | None = None) -> Dataset:
        """Shuffle with a buffer of `buffer_size` elements (each output is a uniform pick
        from the buffer, refilled from the input), seeded by TensorFlow's rules with
        `tw.random.set_seed`; a new order every iteration unless
        `reshuffle_each_iteration=False`."""
        from .transforms import ShuffleDataset
        return ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count: int | None = None, name: str | None = None) -> Dataset:
        """The dataset `count` times (None or -1: forever), each a fresh pass."""
        from .transforms import RepeatDataset
        return RepeatDataset(self, count)

    def take(self, count: int, name: str | None = None) -> Dataset:
        """The first `count` elements (-1: all)."""
        from .transforms import TakeDataset
        return TakeDataset(self, count)

    def skip(self, count: int, name: str | None = None) -> Dataset:
        """All but the first `count` elements (-1: skip all)."""
        from .transforms import SkipDataset
        return SkipDataset(self, count)

    def enumerate(self, start: int = 0, name: str | None = None) -> Dataset:
        """``(index, element)`` pairs, the index an int64 scalar from `start`."""
        from .sources import CounterDataset, ZipDataset
        return ZipDataset((CounterDataset(start), self), op="Dataset.enumerate")

    def shard(self, num_shards: int, index: int, name: str | None = None) -> Dataset:
        """Every `num_shards`-th element starting at `index` (one worker's part)."""
        from .transforms import ShardDataset
        return ShardDataset(self, num_shards, index)

    def prefetch(self, buffer_size: int, name: str | None = None) -> Dataset:
        """Produce up to `buffer_size` elements ahead on a background thread (AUTOTUNE: a
        small buffer); errors of the producer are raised to the consumer."""
        from .prefetch import PrefetchDataset
        return PrefetchDataset(self, buffer_size)

    def cache(self, filename: str = "", name: str | None = None) -> Dataset:
        """Keep the elements in memory after the first complete pass; later passes replay
        them."""
        from .transforms import CacheDataset
        return CacheDataset(self, filename)

    # -- TensorFlow 1 (tf.compat.v1.data.Dataset's methods) ------------------------------
    def make_one_shot_iterator(self) -> Any:
        """A `tw.compat.v1` graph iterator over one pass of this dataset
        (`tw.compat.v1.data.make_one_shot_iterator`)."""
        from .v1 import make_one_shot_iterator
        return make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name: str | None = None) -> Any:
        """A `tw.compat.v1` graph iterator whose `initializer` starts each pass
        (`tw.compat.v1.data.make_initializable_iterator`)."""
        from .v1 import make_initializable_iterator
        return make_initializable_iterator(self, shared_name)

    def apply(self, transformation_func: Callable[[Dataset], Dataset]) -> Dataset:
        """``transformation_func(self)``, which must return a Dataset."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(f"Dataset.apply: the transformation returned "
                            f"{type(out).__name__}, not a Dataset")
        return out


class IteratorOptional:
    """What `get_next_as_optional` returns: an element or nothing (TensorFlow's
    ``tf.experimental.Optional``)."""

    def __init__(self, value: Any, element_spec: Any) -> None:
        self._value = value
        self._element_spec = element_spec

    @property
    def element_spec(self) -> Any:
        """The spec of the element it may hold."""
        return self._element_spec

    def has_value(self, name: str | None = None) -> Any:
        """A bool scalar tensor: whether it holds an element."""
        from ..frontend.building import convert_to_tensor
        return convert_to_tensor(self._value is not None)

    def get_value(self, name: str | None = None) -> Any:
        """The element; InvalidArgumentError when it holds none (the iterator had ended)."""
        if self._value is None:
            raise InvalidArgumentError("Optional.get_value: the optional has no value (the "
                                       "iterator had reached its end)")
        return self._value


class DatasetIterator:
    """One pass over a dataset (TensorFlow's ``OwnedIterator``): `next()` gives elements
    as eager tensors (or NumPy arrays from `as_numpy_iterator`). Closing it, or dropping
    the last reference, stops the pipeline's background threads."""

    def __init__(self, dataset: Dataset, numpy: bool) -> None:
        self._dataset = dataset
        self._numpy = numpy
        self._elements: Iterator[Element] | None = dataset._iterate()

    @property
    def element_spec(self) -> Any:
        """The spec of the elements (the dataset's)."""
        return self._dataset.element_spec

    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Any:
        if self._elements is None:
            raise StopIteration
        try:
            flat = next(self._elements)
        except StopIteration:
            self.close()
            raise
        except BaseException:
            self.close()
            raise
        return user_element(self._dataset._structure, flat, self._numpy)

    def get_next(self) -> Any:
        """The next element; `tw.errors.OutOfRangeError` at the end (TensorFlow's
        ``iterator.get_next()``)."""
        from ..errors import OutOfRangeError
        try:
            return next(self)
        except StopIteration:
            raise OutOfRangeError("End of sequence") from None

    def get_next_as_optional(self) -> IteratorOptional:
        """The next element as an Optional (``has_value()``, ``get_value()``), empty at
        the end (TensorFlow's ``tf.experimental.Optional``)."""
        return IteratorOptional(next(self, None), self._dataset.element_spec)

    def close(self) -> None:
        """Stop the pass (and any background threads of its pipeline)."""
        elements, self._elements = self._elements, None
        if elements is not None and hasattr(elements, "close"):
            elements.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown: nothing left to stop)
            pass


def check_count(value: Any, what: str, location: str | None, *, minimum: int) -> int:
    """An integer argument (`count`, `batch_size`...) as a Python int, at least `minimum`."""
    if isinstance(value, EagerTensor):
        value = value.numpy()
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{what} must be an integer, got {value!r}",
                                   location=location) from None
    if n != value or n < minimum:
        raise InvalidArgumentError(f"{what} must be an integer >= {minimum}, got {value!r}",
                                   location=location)
    return n
