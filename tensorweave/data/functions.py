"""Transformations that run a user function on elements: map, filter, reduce.

The function is traced once for the input's element spec with `tw.compile` (an
``input_signature``, so the None dims of the spec stay None in the trace and it is
never retraced), which also gives the output's spec. Calls go to the compiled function
with the elements' arrays; compiled calls release the GIL, so ``num_parallel_calls``
runs them on a thread pool for real.
"""

from __future__ import annotations

import collections
import concurrent.futures
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..errors import DTypeError, InvalidArgumentError, TracingError
from ..frontend import nest
from ..frontend.context import current_builder
from ..frontend.function import Function, TensorSpec
from ..frontend.function import compile as tw_compile
from ..frontend.tensor import Tensor
from .dataset import AUTOTUNE, UNKNOWN_CARDINALITY, Dataset
from .interleave import schedulable_cpus, spec_only
from .structure import (
    Element,
    Structure,
    format_spec,
    lists_as_tuples,
    merge_structures,
    numpy_dtype,
    spec_of,
    to_array,
)


def _call_with_element(fn: Callable[..., Any], element: Any) -> Any:
    # TensorFlow passes a plain tuple element as positional arguments, anything else
    # (a dict, a namedtuple, a single tensor) as one argument
    return fn(*element) if type(element) is tuple else fn(element)


class TracedFunction:
    """A user function traced once for `structure` (the input element's); `output` is
    the structure of what it returns."""

    def __init__(self, fn: Callable[..., Any], structures: list[Structure], target: str | None,
                 what: str, location: str | None) -> None:
        if not callable(fn):
            raise InvalidArgumentError(f"expected a function, got "
                                       f"{type(fn).__name__}", op=what, location=location)
        self._what = what
        self._location = location
        self._n_args = len(structures)
        signature = [s.element_spec for s in structures]

        if len(structures) == 1:
            def wrapper(element: Any) -> Any:
                return _call_with_element(fn, element)
        else:  # reduce: (state, element)
            def wrapper(state: Any, element: Any) -> Any:
                return fn(state, element)
        wrapper.__name__ = getattr(fn, "__name__", "dataset_fn")
        wrapper.__qualname__ = getattr(fn, "__qualname__", wrapper.__name__)
        builder = current_builder()
        if spec_only() and builder is not None:
            # made while an interleave function is traced: only the spec is wanted, and
            # `fn` may capture that trace's tensors, so trace it inline, in that graph
            self._compiled = None
            self.output = self._inline_output(wrapper, signature, builder)
            return
        self._compiled: Function | None = tw_compile(wrapper, input_signature=signature,
                                                     target=target)
        concrete = self._compiled.get_concrete_function()
        self.output = self._output_structure(concrete)

    def _inline_output(self, wrapper: Callable[..., Any], signature: list[Any],
                       builder: Any) -> Structure:
        args = []
        for spec_tree in signature:
            specs, tree = nest.flatten(spec_tree)
            args.append(nest.unflatten(tree, [Tensor(builder.graph.add_arg(s.type), builder)
                                              for s in specs]))
        leaves, tree = nest.flatten(wrapper(*args))
        specs = [TensorSpec(v.type.shape, v.type.dtype) if isinstance(v, Tensor)
                 else spec_of(to_array(v, self._what, self._location)) for v in leaves]
        return Structure(lists_as_tuples(tree), tuple(specs))

    def _output_structure(self, concrete: Any) -> Structure:
        results = concrete.graph.results
        specs = []
        for is_result, value in concrete._output_leaves:
            if is_result:
                t = results[value].type
                specs.append(TensorSpec(t.shape, t.dtype))
            else:  # a Python value the function returned as is
                specs.append(spec_of(to_array(value, self._what, self._location)))
        return Structure(lists_as_tuples(concrete._output_tree), tuple(specs))

    def __call__(self, *elements: Any) -> Element:
        """The function's result for the (nested) arguments, as a flat tuple of arrays of
        the output structure."""
        if self._compiled is None:
            raise TracingError("this function was traced for its spec only (inside an "
                               "interleave/flat_map function's trace)",
                               op=self._what, location=self._location)
        result = self._compiled(*elements)
        # the single trace fixed the structure (an input_signature never retraces)
        leaves, _ = nest.flatten(result)
        return tuple(np.asarray(v, numpy_dtype(s)) if not isinstance(v, np.ndarray) else v
                     for v, s in zip(leaves, self.output.specs))


def _workers(num_parallel_calls: int | None, what: str, location: str | None) -> int:
    if num_parallel_calls is None:
        return 1
    n = int(num_parallel_calls)
    if n == AUTOTUNE:
        return schedulable_cpus()
    if n < 1:
        raise InvalidArgumentError(f"num_parallel_calls must be >= 1 or "
                                   f"tw.data.AUTOTUNE, got {num_parallel_calls}", op=what,
                                   location=location)
    return n


class MapDataset(Dataset):
    """``Dataset.map``: the traced function applied to every element, in order."""

    def __init__(self, source: Dataset, fn: Callable[..., Any], num_parallel_calls: int | None,
                 target: str | None) -> None:
        super().__init__(source._structure, "Dataset.map")
        self._source = source
        self._fn = TracedFunction(fn, [source._structure], target, self._op, self._location)
        self._structure = self._fn.output
        self._workers = _workers(num_parallel_calls, self._op, self._location)

    def _apply(self, flat: Element) -> Element:
        return self._fn(self._source._structure.nest(flat))

    def _iterate(self) -> Iterator[Element]:
        if self._workers == 1:
            for element in self._source._iterate():
                yield self._apply(element)
            return
        yield from self._iterate_parallel()

    def _iterate_parallel(self) -> Iterator[Element]:
        # at most 2 calls per worker in flight; results leave in input order
        pool = concurrent.futures.ThreadPoolExecutor(self._workers,
                                                     thread_name_prefix="tw.data.map")
        pending: collections.deque = collections.deque()
        source = self._source._iterate()
        try:
            exhausted = False
            failure: BaseException | None = None
            while True:
                while not exhausted and len(pending) < 2 * self._workers:
                    try:
                        element = next(source, None)
                    except Exception as e:  # noqa: BLE001 - raised after what came before
                        element, failure = None, e
                    if element is None:
                        exhausted = True
                    else:
                        pending.append(pool.submit(self._apply, element))
                if not pending:
                    if failure is not None:
                        raise failure
                    return
                yield pending.popleft().result()
        finally:
            for f in pending:
                f.cancel()
            pool.shutdown(wait=True)
            source.close()

    def _cardinality(self) -> int:
        return self._source._cardinality()


class FilterDataset(Dataset):
    """``Dataset.filter``: the elements whose predicate (a traced function returning a
    bool scalar) is true."""

    def __init__(self, source: Dataset, predicate: Callable[..., Any], target: str | None) -> None:
        super().__init__(source._structure, "Dataset.filter")
        self._source = source
        self._fn = TracedFunction(predicate, [source._structure], target, self._op,
                                  self._location)
        out = self._fn.output
        if len(out.specs) != 1 or out.tree != ("leaf",) or out.specs[0].shape != () \
                or not out.specs[0].dtype.is_bool:
            raise self._error(DTypeError, f"the predicate must return a bool scalar, got "
                                          f"{out.describe()}")

    def _iterate(self) -> Iterator[Element]:
        structure = self._source._structure
        for element in self._source._iterate():
            (keep,) = self._fn(structure.nest(element))
            if bool(keep):
                yield element

    def _cardinality(self) -> int:
        # always unknown, as TensorFlow 2.21's (even for an infinite or empty input)
        return UNKNOWN_CARDINALITY


def reduce_dataset(dataset: Dataset, initial_state: Any, reduce_func: Callable[..., Any]) -> Any:
    """`Dataset.reduce`: fold the elements into the state with a traced function. Traced
    with the state's spec; if the function changes a dim of the state, traced again with
    that dim None (TensorFlow's loop), so the state's shape may change between elements."""
    from .structure import flatten_element, structure_of, user_element
    what = "Dataset.reduce"
    location = dataset._location
    state, tree = flatten_element(initial_state, what, location)
    state = tuple(np.array(a) for a in state)  # ours: the result is handed out read-only
    state_structure = structure_of(state, tree)
    for _ in range(1 + max((len(s.shape) for s in state_structure.specs), default=0)):
        fn = TracedFunction(reduce_func, [state_structure, dataset._structure], None, what,
                            location)
        out = fn.output
        if out.tree != state_structure.tree:
            raise InvalidArgumentError(
                f"the function must return a state structured as the initial state "
                f"{state_structure.describe()}, got {out.describe()}", op=what,
                location=location)
        for i, (a, b) in enumerate(zip(state_structure.specs, out.specs)):
            if a.dtype is not b.dtype:
                raise DTypeError(f"state component {i} is {format_spec(a)} initially "
                                 f"but the function returns {format_spec(b)}", op=what,
                                 location=location)
        merged = merge_structures(state_structure, out, what, location)
        if merged == state_structure:
            break
        state_structure = merged
    else:  # each round relaxes a dim, so this is not reached
        raise InvalidArgumentError("the state's shape does not settle", op=what,
                                   location=location)
    element_structure = dataset._structure
    for element in dataset._iterate():
        state = fn(state_structure.nest(state), element_structure.nest(element))
    return user_element(state_structure, state, numpy=False)

