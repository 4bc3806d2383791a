"""Shared pieces of the per-op gradient tests: small shapes (finite differences run the
forward function twice per element), float64 values kept inside an op's differentiable
domain, and a check that gradients traced with unknown dims match the static ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw

MAX_ELEMENTS = 24
seeds = st.integers(0, 2**32 - 1)


def n_elements(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def small_shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 0,
                 max_side: int = 3) -> st.SearchStrategy:
    """Shapes of at most MAX_ELEMENTS elements."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side).filter(lambda s: n_elements(s) <= MAX_ELEMENTS)


def broadcastable_shapes(num_shapes: int, max_dims: int = 3,
                         min_side: int = 0) -> st.SearchStrategy:
    """`num_shapes` shapes that broadcast together, each (and the result) small."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=0, max_dims=max_dims, min_side=min_side, max_side=3
    ).filter(lambda b: n_elements(b.result_shape) <= MAX_ELEMENTS)


def values(seed: int, shape: Sequence[int], domain: str = "any") -> np.ndarray:
    """Random float64 values of `shape` in a domain: "any" (standard normal), "positive"
    ([0.5, 2]), "nonzero" (|x| in [0.3, 2]) or "distinct" (no two closer than 0.15, so a
    max/min does not change its winner under a finite-difference step)."""
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    if domain == "any":
        return rng.standard_normal(shape)
    if domain == "positive":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "nonzero":
        return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 2.0, shape)
    if domain == "distinct":
        n = n_elements(shape)
        grid = (rng.permutation(n) - n / 2) * 0.25 + rng.uniform(-0.05, 0.05, n)
        return grid.reshape(shape)
    raise ValueError(f"unknown domain {domain!r}")


def check_unknown_dims(fn: Callable, specs: Sequence[tw.TensorSpec], *arrays: np.ndarray,
                       argnums: Sequence[int] | None = None) -> None:
    """The gradients of ``sum(fn(*args) * W)`` traced with `specs` (dims may be None) have
    the spec's types and match the gradients traced with static shapes."""
    arrays = [np.asarray(x) for x in arrays]
    if argnums is None:
        argnums = tuple(i for i, x in enumerate(arrays) if x.dtype.kind == "f")
    out = np.asarray(tw.compile(fn)(*arrays))
    weights = np.random.default_rng(1).normal(size=out.shape)

    def loss(*args):
        return tw.reduce_sum(fn(*args) * weights)

    grad = tw.grad(loss, argnums=tuple(argnums))
    dynamic = tw.compile(grad, input_signature=list(specs))
    results = dynamic.get_concrete_function().graph.results
    for k, i in enumerate(argnums):
        assert results[k].type.shape == tuple(specs[i].shape), (results[k].type, specs[i].shape)
    for got, want in zip(dynamic(*arrays), grad(*arrays)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def spec(*shape: int | None) -> tw.TensorSpec:
    """A float64 TensorSpec."""
    return tw.TensorSpec(list(shape), tw.float64)


def _slice_component(dim: int) -> st.SearchStrategy:
    bound = st.none() | st.integers(-dim - 2, dim + 2)
    sl = st.builds(slice, bound, bound, st.none() | st.integers(-3, 3).filter(bool))
    return sl if dim == 0 else st.integers(-dim, dim - 1) | sl


@st.composite
def index_keys(draw, shape: Sequence[int]):
    """A basic-indexing key for `shape`: ints, slices (any non-zero step), None and at
    most one ``...``."""
    rank = len(shape)
    k = draw(st.integers(0, rank))  # entries that consume a dimension
    ellipsis = draw(st.booleans())
    head = draw(st.integers(0, k)) if ellipsis else k
    dims = list(range(head)) + list(range(rank - (k - head), rank))
    items = [draw(_slice_component(shape[d])) for d in dims]
    if ellipsis:
        items.insert(head, Ellipsis)
    for _ in range(draw(st.integers(0, 1))):
        items.insert(draw(st.integers(0, len(items))), None)
    return tuple(items)
