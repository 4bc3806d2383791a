"""Sources made of tensors of a TensorFlow 1 graph: ``from_tensor_slices(x)`` or
``from_tensors(x)`` where `x` is a placeholder (or any tensor) of a `tw.compat.v1` graph,
the TensorFlow 1 way to feed NumPy data to an iterator:

    x = tf.placeholder(tf.float32, [None, 784])
    it = tf.data.make_initializable_iterator(Dataset.from_tensor_slices(x).batch(32))
    sess.run(it.initializer, {x: images})        # each run may feed other data

A `FedSourceDataset` knows its element spec from the tensors' static types; it has no
elements of its own. The iterator's ``MakeIterator`` op takes the graph tensors as
inputs, so a run of the initializer computes them (feeds included), and its kernel
iterates a copy of the pipeline whose fed sources hold those values (`bind`): each
initialization gets its own copy, so Sessions and re-initializations never see each
other's values. Iterating such a dataset directly (eagerly, one-shot iterators) is an
error that says to use an initializable iterator, as TensorFlow's one-shot iterators
refuse to capture placeholders.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import FailedPreconditionError, InvalidArgumentError
from ..frontend.function import TensorSpec
from ..frontend.tensor import Tensor
from .dataset import UNKNOWN_CARDINALITY, Dataset
from .structure import Element, Structure, flatten_data, spec_of, to_array


def _is_v1_graph_tensor(value: Any) -> bool:
    builder = getattr(value, "builder", None)
    return isinstance(value, Tensor) and getattr(builder, "kind", None) == "v1"


class FedSourceDataset(Dataset):
    """``from_tensors``/``from_tensor_slices`` of leaves some of which are tensors of a
    v1 graph; `bind` gives the real source for their values."""

    def __init__(self, leaves: list[Any], tree: Any, op: str, slices: bool) -> None:
        super().__init__(Structure((), ()), op)
        self._tree = tree
        self._slices = slices
        self._leaves = [v if _is_v1_graph_tensor(v) else to_array(v, op, self._location)
                        for v in leaves]
        specs = []
        for i, v in enumerate(self._leaves):
            spec = TensorSpec(v.type.shape, v.type.dtype) if isinstance(v, Tensor) \
                else spec_of(v)
            if slices:
                if not spec.shape:
                    raise self._error(InvalidArgumentError,
                                      f"component {i} is a scalar; slicing needs rank >= 1")
                spec = TensorSpec(spec.shape[1:], spec.dtype)
            specs.append(spec)
        if slices:
            rows = {v.shape[0] for v in self._leaves if v.shape[0] is not None}
            if len(rows) > 1:
                raise self._error(InvalidArgumentError,
                                  f"all components must have the same first dimension, "
                                  f"got first dimensions {sorted(rows)}")
        self._structure = Structure(tree, tuple(specs))

    @property
    def graph_tensors(self) -> list[Tensor]:
        """The v1 graph tensors whose values the source needs, in leaf order."""
        return [v for v in self._leaves if isinstance(v, Tensor)]

    def bind(self, values: list[np.ndarray]) -> Dataset:
        """The source with `values` (one per graph tensor, in order) in their place."""
        from .dataset import Dataset as _D
        it = iter(values)
        leaves = [next(it) if isinstance(v, Tensor) else v for v in self._leaves]
        nested = _unflatten(self._tree, leaves)
        return _D.from_tensor_slices(nested) if self._slices else _D.from_tensors(nested)

    def _iterate(self) -> Iterator[Element]:
        raise self._error(FailedPreconditionError,
                          "this dataset is made of tensors of a tf.compat.v1 graph "
                          f"({', '.join(t.name for t in self.graph_tensors)}); iterate it "
                          "through tf.compat.v1.data.make_initializable_iterator and feed "
                          "them to sess.run(iterator.initializer, feed_dict)")

    def _cardinality(self) -> int:
        if not self._slices:
            return 1
        rows = {v.shape[0] for v in self._leaves}
        return rows.pop() if len(rows) == 1 and None not in rows else UNKNOWN_CARDINALITY


def _unflatten(tree: Any, leaves: list[Any]) -> Any:
    from ..frontend import nest
    return nest.unflatten(tree, leaves)


def fed_source(tensors: Any, op: str, slices: bool) -> Dataset | None:
    """A `FedSourceDataset` if a leaf of `tensors` is a tensor of a v1 graph; None
    otherwise (build the ordinary source)."""
    leaves, tree = flatten_data(tensors)
    if not any(_is_v1_graph_tensor(v) for v in leaves):
        return None
    return FedSourceDataset(list(leaves), tree, op, slices)


# -- the fed sources of a pipeline, and a copy of it bound to their values -----------------
def _children(value: Any) -> Iterator[tuple[Any, Any]]:
    """(key, dataset) for each dataset held by `value`'s attributes (directly, or in a
    list or tuple, as zip and concatenate hold theirs)."""
    for key, v in vars(value).items():
        if isinstance(v, Dataset):
            yield key, v
        elif isinstance(v, (list, tuple)) and any(isinstance(x, Dataset) for x in v):
            yield key, v


def fed_sources(dataset: Dataset) -> list[FedSourceDataset]:
    """The fed sources of `dataset`'s pipeline, each once, in a fixed order."""
    found: list[FedSourceDataset] = []
    seen: set[int] = set()

    def walk(ds: Dataset) -> None:
        if id(ds) in seen:
            return
        seen.add(id(ds))
        if isinstance(ds, FedSourceDataset):
            found.append(ds)
            return
        for _, v in _children(ds):
            for member in (v if isinstance(v, (list, tuple)) else [v]):
                if isinstance(member, Dataset):
                    walk(member)
    walk(dataset)
    return found


def bind_pipeline(dataset: Dataset, values: list[np.ndarray]) -> Dataset:
    """A copy of `dataset`'s pipeline whose fed sources (`fed_sources` order) hold
    `values` (the graph tensors' values, flat in that order); datasets without a fed
    source below them are shared, not copied."""
    sources = fed_sources(dataset)
    counts = [len(s.graph_tensors) for s in sources]
    if sum(counts) != len(values):
        raise InvalidArgumentError(f"the pipeline's sources need {sum(counts)} values, got "
                                   f"{len(values)}", op="MakeIterator")
    bound: dict[int, Dataset] = {}
    start = 0
    for s, n in zip(sources, counts):
        bound[id(s)] = s.bind(list(values[start:start + n]))
        start += n
    memo: dict[int, Dataset] = {}

    def rebuild(ds: Dataset) -> Dataset:
        if id(ds) in bound:
            return bound[id(ds)]
        if id(ds) in memo:
            return memo[id(ds)]
        clone = ds
        for key, v in list(_children(ds)):
            if isinstance(v, Dataset):
                new: Any = rebuild(v)
                changed = new is not v
            else:
                new = type(v)(rebuild(m) if isinstance(m, Dataset) else m for m in v)
                changed = any(a is not b for a, b in zip(new, v))
            if changed:
                if clone is ds:
                    clone = copy.copy(ds)
                setattr(clone, key, new)
        memo[id(ds)] = clone
        return clone
    return rebuild(dataset)


__all__ = ["FedSourceDataset", "fed_source", "fed_sources", "bind_pipeline"]
