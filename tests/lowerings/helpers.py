"""Checks for native lowerings: one node, traced with static shapes, compiled on its own
(`tensorweave.targets.cpu.lowering.compile_node`) and compared with its reference kernel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import tensorweave as tw
from tensorweave.compiler.ir import Node
from tensorweave.frontend.building import apply_op
from tensorweave.runtime.kernel_context import CallCounters
from tensorweave.runtime.resources import ResourceManager
from tensorweave.targets.cpu.lowering import compile_node, find_lowering
from tensorweave.targets.reference.executor import PreparedKernel
from tests.helpers import assert_same


def single_node(op: str, arrays: Sequence[np.ndarray], **attrs: Any) -> Node:
    """A node of `op` whose inputs are graph arguments with the arrays' static types."""
    fn = tw.compile(lambda *xs: apply_op(op, list(xs), attrs))
    graph = fn.get_concrete_function(*arrays).graph
    nodes = [n for n in graph.nodes if n.op == op]
    assert len(nodes) == 1, f"expected one {op} node, got {len(nodes)}"
    assert all(v.is_arg for v in nodes[0].inputs), "inputs must be the graph's arguments"
    return nodes[0]


def reference_outputs(node: Node, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """What the reference kernel computes for `node` on `arrays`."""
    with np.errstate(all="ignore"):
        return PreparedKernel(node)(list(arrays), ResourceManager(), CallCounters())


def check_lowering(op: str, arrays: Sequence[np.ndarray], gemm_modes: Sequence[str] = ("blas",),
                   tol: dict | None = None, **attrs: Any) -> list[np.ndarray]:
    """`op`'s native lowering on `arrays` matches its reference kernel (exact dtype and
    shape; tolerances of `tests.helpers.tolerance`, or those `tol` widens them to).
    Returns the native outputs."""
    node = single_node(op, arrays, **attrs)
    assert find_lowering(node) is not None, f"{op} has no lowering for {node}"
    expected = reference_outputs(node, arrays)
    out: list[np.ndarray] = []
    for mode in gemm_modes:
        out = compile_node(node, mode)(list(arrays))
        assert len(out) == len(expected)
        for a, e in zip(out, expected):
            assert_same(a, np.asarray(e), **(tol or {}))
    return out
