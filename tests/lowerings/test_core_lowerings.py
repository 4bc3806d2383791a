"""Native lowerings of the core ops (copies, MatMul) against their reference kernels."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.lowerings.helpers import check_lowering


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_matmul_matches_reference(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    m, n, k = (data.draw(st.integers(0, 7)) for _ in range(3))
    ta, tb = data.draw(st.booleans()), data.draw(st.booleans())
    batch_a = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    batch_b = batch_a[len(batch_a) - data.draw(st.integers(0, len(batch_a))):]
    if batch_b and data.draw(st.booleans()):
        batch_b = (1,) + batch_b[1:]  # broadcast over the first batch dim
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    a = rng.standard_normal(batch_a + ((k, m) if ta else (m, k))).astype(dtype)
    b = rng.standard_normal(batch_b + ((n, k) if tb else (k, n))).astype(dtype)
    check_lowering("MatMul", [a, b], gemm_modes=("blas", "generated"),
                   transpose_a=ta, transpose_b=tb)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_reshape_is_a_copy(dtype):
    x = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    out = check_lowering("Reshape", [x], shape=(2, 6))[0]
    assert out.ctypes.data != x.ctypes.data


def _inputs_of(node, graph, args):
    """The values of `node`'s inputs: graph arguments or constants."""
    return [args[v] if v.is_arg else
            np.asarray(v.producer.attrs["value"]).reshape(v.type.shape) for v in node.inputs]


def test_fusion_node_compiles_to_one_function():
    import tensorweave as tw
    from tensorweave.compiler.pipeline import run_pipeline
    from tensorweave.targets.cpu.lowering import compile_node

    def f(x, b):
        return tw.reduce_sum(tw.nn.relu(x * 2.0 + b), axis=-1)

    x = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    b = np.arange(7, dtype=np.float32)
    graph = run_pipeline(tw.compile(f).get_concrete_function(x, b).graph, "fused", "cpu")
    (node,) = [n for n in graph.nodes if n.op == "Fusion"]
    args = _inputs_of(node, graph, {graph.args[0]: x, graph.args[1]: b})
    (out,) = compile_node(node)(args)
    np.testing.assert_allclose(out, np.maximum(x * 2 + b, 0).sum(-1), rtol=1e-5)


def test_fusion_status_names_the_inner_op():
    import tensorweave as tw
    from tensorweave.compiler.pipeline import run_pipeline
    from tensorweave.errors import InvalidArgumentError
    from tensorweave.targets.cpu.lowering import compile_node

    def f(x, y):
        return tw.floordiv(x, y) + 1

    x, y = np.array([4, 5], np.int32), np.array([2, 0], np.int32)
    graph = run_pipeline(tw.compile(f).get_concrete_function(x, y).graph, "fused", "cpu")
    (node,) = [n for n in graph.nodes if n.op == "Fusion"]
    with pytest.raises(InvalidArgumentError, match="FloorDiv.*division by zero"):
        compile_node(node)(_inputs_of(node, graph, {graph.args[0]: x, graph.args[1]: y}))


def test_assert_fails_with_its_message_natively():
    from tensorweave.errors import InvalidArgumentError
    from tensorweave.targets.cpu.lowering import compile_node
    from tests.lowerings.helpers import single_node

    node = single_node("Assert", [np.bool_(True)], message="x must be positive")
    kernel = compile_node(node)
    assert kernel([np.bool_(True)]) == []
    with pytest.raises(InvalidArgumentError, match="x must be positive"):
        kernel([np.bool_(False)])
