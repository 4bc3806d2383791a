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

from ..compiler.dtypes import as_dtype
from ..compiler.ir import Node
from ..compiler.ops.queue import encode_shapes
from ..errors import InvalidArgumentError, TracingError
from ..frontend import nest
from ..frontend.building import apply_op
from ..frontend.call_site import user_location
from ..frontend.context import GraphBuilder, building, current_builder
from ..frontend.function import TensorSpec
from . import experimental
from .dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset
from .structure import Structure, flatten_shapes


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

    def __init__(self, dataset: Dataset | None, one_shot: bool, shared_name: str | None = None,
                 name: str = "Iterator", structure: Structure | None = None) -> None:
        if dataset is not None and not isinstance(dataset, Dataset):
            raise TypeError(f"expected a tw.data.Dataset, got {type(dataset).__name__}")
        self._dataset = dataset
        self._structure = dataset._structure if dataset is not None else structure
        self._one_shot = one_shot
        self._builder = builder = _v1_builder()
        if one_shot and dataset is not None and _graph_tensors(dataset):
            raise InvalidArgumentError(
                "a one-shot iterator cannot capture tensors of the graph (the dataset is "
                f"made of {', '.join(t.name for t in _graph_tensors(dataset))}): use "
                "make_initializable_iterator and feed them to its initializer",
                location=str(user_location()))
        self._shared_name = shared_name or builder.v1_graph.unique_variable_name(name)
        key = "" if dataset is None else self._register(dataset)
        attrs = {"shared_name": self._shared_name, "dataset": key, "one_shot": one_shot}
        with building(builder):
            node = builder.graph.add_node("IteratorHandle", [], attrs,
                                          name=builder.scoped_name(name), device=builder.device,
                                          loc=user_location())
            self._handle = node.outputs[0]
            self._initializer: Node | None = None
            if not one_shot and dataset is not None:
                fed = _graph_tensors(dataset)
                # with graph tensors it names its dataset: each run binds a new copy of it
                apply_op("MakeIterator", [self._handle, *fed],
                         {"dataset": key} if fed else {}, name=f"{name}/initializer")
                self._initializer = builder.graph.nodes[-1]

    def _register(self, dataset: Dataset) -> str:
        """The dataset's key for the graph ops; the graph keeps the dataset alive."""
        from . import graph_ops
        graph = self._builder.v1_graph
        kept = getattr(graph, "_tw_data_datasets", None)
        if kept is None:
            kept = graph._tw_data_datasets = []
        kept.append(dataset)
        return graph_ops.register_dataset(dataset)

    @staticmethod
    def from_structure(output_types: Any, output_shapes: Any = None,
                       shared_name: str | None = None, output_classes: Any = None) -> Iterator:
        """A reinitializable iterator for elements of this structure, bound to no dataset:
        `make_initializer(ds)` gives the op that starts a pass over `ds`
        (``tf.compat.v1.data.Iterator.from_structure``: one `get_next()` for training and
        validation data)."""
        structure = _structure_of_types(output_types, output_shapes)
        return Iterator(None, one_shot=False, shared_name=shared_name, structure=structure)

    def make_initializer(self, dataset: Dataset, name: str | None = None) -> Node:
        """The op that starts a pass of this iterator over `dataset`, whose elements must
        fit the iterator's structure (same nesting and dtypes, compatible shapes)."""
        if not isinstance(dataset, Dataset):
            raise TypeError(f"expected a tw.data.Dataset, got {type(dataset).__name__}")
        _check_fits(dataset._structure, self._structure)
        with building(self._builder):
            apply_op("MakeIterator", [self._handle, *_graph_tensors(dataset)],
                     {"dataset": self._register(dataset)}, name=name or "make_initializer")
            return self._builder.graph.nodes[-1]

    @property
    def initializer(self) -> Node:
        """The op that starts a new pass (run it before `get_next()`, and again to
        restart)."""
        if self._initializer is None:
            raise ValueError("this iterator has no initializer: a one-shot iterator starts "
                             "by itself, one made with Iterator.from_structure starts with "
                             "make_initializer(dataset)")
        return self._initializer

    @property
    def element_spec(self) -> Any:
        """The spec of the elements."""
        return self._structure.element_spec

    @property
    def output_types(self) -> Any:
        """The elements' dtypes, nested as the elements."""
        s = self._structure
        return s.nest([spec.dtype for spec in s.specs])

    @property
    def output_shapes(self) -> Any:
        """The elements' shapes (None dims unknown), nested as the elements."""
        s = self._structure
        return s.nest([spec.shape for spec in s.specs])

    def get_next(self, name: str | None = None) -> Any:
        """Tensors of the next element, nested as the elements: each run of a step that
        uses them takes one element; at the end the run raises
        `tw.errors.OutOfRangeError`."""
        structure = self._structure
        flat, ranks = encode_shapes([s.shape for s in structure.specs], len(structure.specs))
        attrs = {"dtypes": tuple(s.dtype.ir_name for s in structure.specs), "shapes": flat,
                 "ranks": ranks}
        # inside a while_loop body or cond branch of the iterator's graph the op goes
        # there (the handle is captured), so that it takes an element each time the body
        # runs; at the top of the graph the loop would reuse one element taken before it
        builder = current_builder()
        if not _nested_in(builder, self._builder):
            builder = self._builder
        with building(builder):
            outs = apply_op("IteratorGetNext", [self._handle], attrs,
                            name=name or "IteratorGetNext")
        return structure.nest(outs)


def _graph_tensors(dataset: Dataset) -> list[Any]:
    """The graph tensors the sources of `dataset`'s pipeline are made of."""
    from .fed_sources import fed_sources
    return [t for source in fed_sources(dataset) for t in source.graph_tensors]


def _nested_in(builder: GraphBuilder | None, graph_builder: GraphBuilder) -> bool:
    """Whether `builder` builds `graph_builder`'s graph or a control-flow region within
    it."""
    while builder is not None:
        if builder is graph_builder:
            return True
        builder = getattr(builder, "parent", None)
    return False


def _structure_of_types(output_types: Any, output_shapes: Any) -> Structure:
    """The structure `Iterator.from_structure` describes (dtypes nest, shapes are leaves)."""
    types, tree = nest.flatten(output_types)
    if output_shapes is None:
        raise InvalidArgumentError("Iterator.from_structure: tensorweave needs output_shapes "
                                   "(None for dims of any size)")
    shapes, shape_tree = flatten_shapes(output_shapes)
    if shape_tree != tree or any(s is None for s in shapes):
        raise InvalidArgumentError(f"Iterator.from_structure: output_shapes {output_shapes!r} "
                                   f"does not give a shape for each of output_types "
                                   f"{output_types!r}")
    return Structure(tree, tuple(TensorSpec(s, as_dtype(t)) for t, s in zip(types, shapes)))


def _check_fits(given: Structure, wanted: Structure) -> None:
    """A dataset's elements fit an iterator's structure, or a clear error."""
    ok = given.tree == wanted.tree and all(
        a.dtype is b.dtype and len(a.shape) == len(b.shape)
        and all(x is None or y is None or x == y for x, y in zip(a.shape, b.shape))
        for a, b in zip(given.specs, wanted.specs))
    if not ok:
        raise InvalidArgumentError(f"make_initializer: the dataset's elements "
                                   f"{given.describe()} do not fit the iterator's "
                                   f"{wanted.describe()}")


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
        return x._structure
    if isinstance(x, Dataset):
        return x._structure
    raise TypeError(f"expected a Dataset or an Iterator, got {type(x).__name__}")


__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Dataset", "Iterator",
           "make_one_shot_iterator", "make_initializable_iterator", "get_output_types",
           "get_output_shapes", "experimental"]


def __dir__() -> list[str]:
    return sorted(__all__)
