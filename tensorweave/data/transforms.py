"""Transformations that reorder, repeat, cut or keep elements: shuffle, repeat, take,
skip, cache."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

import numpy as np

from ..errors import InvalidArgumentError
from ..frontend.ops.random import get_seed
from .dataset import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, check_count
from .structure import Element


class _Unary(Dataset):
    """A transformation of one input dataset with the same element structure."""

    def __init__(self, source: Dataset, op: str) -> None:
        super().__init__(getattr(source, "_structure", None), op)
        if not isinstance(source, Dataset):
            raise self._error(InvalidArgumentError, f"applies to a Dataset, got "
                                                    f"{type(source).__name__}")
        self._source = source


class ShuffleDataset(_Unary):
    """``Dataset.shuffle``: TensorFlow's buffer algorithm. The buffer is filled with the
    first `buffer_size` elements; each output is a uniformly random element of it, whose
    slot the next input element takes (once the input ends, the buffer drains in random
    order). Seeds follow TensorFlow's rules (`tw.random.set_seed` plus the op's seed); pass
    `k` of an iteration draws from a generator keyed by (seed, seed2, k), k = 0 always when
    `reshuffle_each_iteration` is False, so orders are reproducible."""

    def __init__(self, source: Dataset, buffer_size: int, seed: int | None,
                 reshuffle_each_iteration: bool) -> None:
        super().__init__(source, "Dataset.shuffle")
        self._buffer_size = check_count(buffer_size, "Dataset.shuffle: buffer_size",
                                        self._location, minimum=1)
        self._seeds = get_seed(None if seed is None else int(seed))
        self._reshuffle = bool(reshuffle_each_iteration)
        self._passes = itertools.count()

    def _generator(self) -> np.random.Generator:
        k = next(self._passes) if self._reshuffle else 0
        seed, seed2 = self._seeds
        return np.random.Generator(np.random.Philox(
            key=[seed % 2**64, seed2 % 2**64], counter=[k, 0, 0, 0]))

    def _iterate(self) -> Iterator[Element]:
        rng = self._generator()
        source = self._source._iterate()
        try:
            buffer: list[Element] = list(itertools.islice(source, self._buffer_size))
            exhausted = len(buffer) < self._buffer_size
            draws = rng.random(0)
            d = 0
            while buffer:
                if d == len(draws):  # uniform draws in blocks: one call per element is slow
                    draws, d = rng.random(1024), 0
                i = int(draws[d] * len(buffer))
                d += 1
                out = buffer[i]
                nxt = None if exhausted else next(source, None)
                if nxt is None:
                    exhausted = True
                    buffer[i] = buffer[-1]
                    buffer.pop()
                else:
                    buffer[i] = nxt
                yield out
        finally:
            source.close()

    def _cardinality(self) -> int:
        return self._source._cardinality()


_INT64_MIN = -2 ** 63


def _negative_is_minus_one(count: int) -> int:
    """A count of take/skip/repeat: TensorFlow's kernels treat every negative count as
    -1 (all / forever)."""
    return max(count, -1)


class RepeatDataset(_Unary):
    """``Dataset.repeat``: `count` fresh passes over the input (None or -1: forever; an
    input with no elements ends at once instead of looping)."""

    def __init__(self, source: Dataset, count: int | None) -> None:
        super().__init__(source, "Dataset.repeat")
        self._count = -1 if count is None else _negative_is_minus_one(
            check_count(count, "Dataset.repeat: count", self._location, minimum=_INT64_MIN))

    def _iterate(self) -> Iterator[Element]:
        passes = itertools.count() if self._count < 0 else range(self._count)
        for _ in passes:
            produced = False
            for element in self._source._iterate():
                produced = True
                yield element
            if not produced:
                return

    def _cardinality(self) -> int:
        n = self._source._cardinality()
        if self._count < 0:
            return 0 if n == 0 else INFINITE_CARDINALITY
        if self._count == 0:
            return 0
        if n in (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY):
            return n
        return n * self._count


class TakeDataset(_Unary):
    """``Dataset.take``: the first `count` elements (-1: all)."""

    def __init__(self, source: Dataset, count: int) -> None:
        super().__init__(source, "Dataset.take")
        self._count = _negative_is_minus_one(
            check_count(count, "Dataset.take: count", self._location, minimum=_INT64_MIN))

    def _iterate(self) -> Iterator[Element]:
        if self._count < 0:
            yield from self._source._iterate()
            return
        if self._count == 0:
            return
        source = self._source._iterate()
        try:
            # stop pulling once `count` elements are out: the input may be infinite
            for i, element in enumerate(source):
                yield element
                if i + 1 == self._count:
                    return
        finally:
            source.close()

    def _cardinality(self) -> int:
        n = self._source._cardinality()
        if self._count < 0 or n == UNKNOWN_CARDINALITY:
            return n
        if n == INFINITE_CARDINALITY:
            return self._count
        return min(n, self._count)


class SkipDataset(_Unary):
    """``Dataset.skip``: all but the first `count` elements (-1: none)."""

    def __init__(self, source: Dataset, count: int) -> None:
        super().__init__(source, "Dataset.skip")
        self._count = _negative_is_minus_one(
            check_count(count, "Dataset.skip: count", self._location, minimum=_INT64_MIN))

    def _iterate(self) -> Iterator[Element]:
        if self._count < 0:
            # TensorFlow skips everything; the input still runs (its errors surface)
            for _ in self._source._iterate():
                pass
            return
        source = self._source._iterate()
        try:
            for _ in itertools.islice(source, self._count):
                pass
            yield from source
        finally:
            source.close()

    def _cardinality(self) -> int:
        n = self._source._cardinality()
        if n in (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY):
            return n
        if self._count < 0:
            return 0
        return max(0, n - self._count)


class ShardDataset(_Unary):
    """``Dataset.shard``: the elements whose position is `index` modulo `num_shards`."""

    def __init__(self, source: Dataset, num_shards: int, index: int) -> None:
        super().__init__(source, "Dataset.shard")
        self._num_shards = check_count(num_shards, "Dataset.shard: num_shards",
                                       self._location, minimum=1)
        self._index = check_count(index, "Dataset.shard: index", self._location, minimum=0)
        if self._index >= self._num_shards:
            raise self._error(InvalidArgumentError,
                              f"index must be in [0, num_shards), got index {index} with "
                              f"num_shards {num_shards}")

    def _iterate(self) -> Iterator[Element]:
        source = self._source._iterate()
        try:
            yield from itertools.islice(source, self._index, None, self._num_shards)
        finally:
            source.close()

    def _cardinality(self) -> int:
        n = self._source._cardinality()
        if n in (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY):
            return n
        return n // self._num_shards + (1 if self._index < n % self._num_shards else 0)


class CacheDataset(_Unary):
    """``Dataset.cache()``: the first pass that runs to the end is kept in memory and every
    later pass replays it (a pass stopped early keeps nothing, as in TensorFlow 2)."""

    def __init__(self, source: Dataset, filename: str) -> None:
        super().__init__(source, "Dataset.cache")
        if filename:
            raise self._error(InvalidArgumentError,
                              f"caches in memory only; a file cache ({filename!r}) is not "
                              f"supported: call cache() without a filename")
        self._elements: list[Element] | None = None
        self._lock = threading.Lock()

    def _iterate(self) -> Iterator[Element]:
        cached = self._elements
        if cached is not None:
            yield from cached
            return
        recorded: list[Element] = []
        for element in self._source._iterate():
            # kept and handed out again: nobody may write to these arrays any more
            for a in element:
                a.flags.writeable = False
            recorded.append(element)
            yield element
        with self._lock:
            if self._elements is None:
                self._elements = recorded

    def _cardinality(self) -> int:
        return self._source._cardinality()
