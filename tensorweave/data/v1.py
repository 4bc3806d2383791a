"""``tf.compat.v1.data``: datasets read by TensorFlow 1 graphs through iterators.

    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    it = tf.data.make_one_shot_iterator(ds)       # or make_initializable_iterator(ds)
    xb, yb = it.get_next()
    with tf.Session() as sess:
        while True:
            try:
                sess.run(train_op)  # uses xb, yb
            except tf.errors.OutOfRangeError:
                break

An iterator is a resource of each Session (``IteratorHandle``, `graph_ops`); every
``sess.run`` that fetches (or depends on) `get_next()`'s tensors takes one element.
The pipeline runs on the host, as an eager iteration of the dataset would.
"""

from __future__ import annotations

from typing import Any

from ..compiler.ir import Node
from ..compiler.ops.queue import encode_shapes
from ..errors import TracingError
from ..frontend.building import apply_op
from ..frontend.call_site import user_location
from ..frontend.context import GraphBuilder, building, current_builder
from . import experimental
from .dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset


def _v1_builder() -> GraphBuilder:
    """The graph an iterator goes to: the one being built, else the default v1 graph."""
    builder = current_builder()
    if builder is None:
        from ..compat.v1.graph import get_default_graph
        return get_default_graph()._builder
    if builder.kind != "v1":
        raise TracingError("dataset iterators with get_next() belong to tw.compat.v1 graphs; "
                           "in @tw.compile functions pass the batches in as arguments "
                           "(for x, y in dataset: step(x, y))", location=str(user_location()))
    return builder


class Iterator:
    """A TensorFlow 1 dataset iterator in a graph: `get_next()` gives the element's
    tensors, `initializer` (initializable iterators) starts a new pass."""

    def __init__(self, dataset: Dataset, one_shot: bool, shared_name: str | None = None,
                 name: str = "Iterator") -> None:
        from . import graph_ops
        if not isinstance(dataset, Dataset):
            raise TypeError(f"expected a tw.data.Dataset, got {type(dataset).__name__}")
        self._dataset = dataset
        self._one_shot = one_shot
        self._builder = builder = _v1_builder()
        graph = builder.v1_graph
        # the graph keeps the dataset alive; the handle names it by its registry key
        kept = getattr(graph, "_tw_data_datasets", None)
        if kept is None:
            kept = graph._tw_data_datasets = []
        kept.append(dataset)
        self._shared_name = shared_name or graph.unique_variable_name(name)
        attrs = {"shared_name": self._shared_name,
                 "dataset": graph_ops.register_dataset(dataset), "one_shot": one_shot}
        with building(builder):
            node = builder.graph.add_node("IteratorHandle", [], attrs,
                                          name=builder.scoped_name(name), device=builder.device,
                                          loc=user_location())
            self._handle = node.outputs[0]
            self._initializer: Node | None = None
            if not one_shot:
                apply_op("MakeIterator", [self._handle], {}, name=f"{name}/initializer")
                self._initializer = builder.graph.nodes[-1]

    @property
    def initializer(self) -> Node:
        """The op that starts a new pass (run it before `get_next()`, and again to
        restart)."""
        if self._initializer is None:
            raise ValueError("a one-shot iterator has no initializer: it starts by itself "
                             "(use make_initializable_iterator to restart passes)")
        return self._initializer

    @property
    def element_spec(self) -> Any:
        """The spec of the elements (the dataset's)."""
        return self._dataset.element_spec

    @property
    def output_types(self) -> Any:
        """The elements' dtypes, nested as the elements."""
        s = self._dataset._structure
        return s.nest([spec.dtype for spec in s.specs])

    @property
    def output_shapes(self) -> Any:
        """The elements' shapes (None dims unknown), nested as the elements."""
        s = self._dataset._structure
        return s.nest([spec.shape for spec in s.specs])

    def get_next(self, name: str | None = None) -> Any:
        """Tensors of the next element, nested as the elements: each run of a step that
        uses them takes one element; at the end the run raises
        `tw.errors.OutOfRangeError`."""
        structure = self._dataset._structure
        flat, ranks = encode_shapes([s.shape for s in structure.specs], len(structure.specs))
        attrs = {"dtypes": tuple(s.dtype.name for s in structure.specs), "shapes": flat,
                 "ranks": ranks}
        with building(self._builder):
            outs = apply_op("IteratorGetNext", [self._handle], attrs,
                            name=name or "IteratorGetNext")
        return structure.nest(outs)


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """An iterator that makes one pass over `dataset` in each Session, starting at its
    first `get_next()` (``tf.compat.v1.data.make_one_shot_iterator``)."""
    return Iterator(dataset, one_shot=True)


def make_initializable_iterator(dataset: Dataset, shared_name: str | None = None) -> Iterator:
    """An iterator whose `initializer` op starts (and restarts) a pass over `dataset`
    (``tf.compat.v1.data.make_initializable_iterator``)."""
    return Iterator(dataset, one_shot=False, shared_name=shared_name)


def get_output_types(dataset_or_iterator: Any) -> Any:
    """The dtypes of the elements, nested as they are."""
    s = _structure(dataset_or_iterator)
    return s.nest([spec.dtype for spec in s.specs])


def get_output_shapes(dataset_or_iterator: Any) -> Any:
    """The shapes of the elements (None dims unknown), nested as they are."""
    s = _structure(dataset_or_iterator)
    return s.nest([spec.shape for spec in s.specs])


def _structure(x: Any) -> Any:
    if isinstance(x, Iterator):
        return x._dataset._structure
    if isinstance(x, Dataset):
        return x._structure
    raise TypeError(f"expected a Dataset or an Iterator, got {type(x).__name__}")


__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Dataset", "Iterator",
           "make_one_shot_iterator", "make_initializable_iterator", "get_output_types",
           "get_output_shapes", "experimental"]


def __dir__() -> list[str]:
    return sorted(__all__)
