"""The names TensorFlow 1 gives ops created without a name, for v1 graphs.

A TensorFlow op made by its generated wrapper is named after its op type (``MatMul``,
``BiasAdd``, ``Relu``); a Python-level function opens a lower-case name scope instead
(``tf.concat`` is ``concat``, ``tf.stack`` is ``stack``, ``x / y`` is ``truediv``).
TF1 programs fetch tensors by these names (``graph.get_tensor_by_name("dense/BiasAdd:0")``),
so a v1 graph names its nodes the same way. Traced functions keep tensorweave's own
names (the op type in snake case).
"""

from __future__ import annotations

from typing import Any

# tensorweave op -> TensorFlow 1's default name where it is not the op type (names
# checked against TF 2.21's tf.compat.v1 in graph mode)
_PYTHON_LEVEL_NAMES = {
    "Concat": "concat",            # tf.concat
    "Pack": "stack",               # tf.stack
    "Unpack": "unstack",           # tf.unstack
    "Div": "truediv",              # tf.divide, tf.truediv, x / y
    "FloorDiv": "floordiv",        # tf.floordiv, x // y
    "Transpose": "transpose",      # tf.transpose
    "ZerosLike": "zeros_like",
    "OnesLike": "ones_like",
    "Range": "range",
    "OneHot": "one_hot",
    "RandomNormal": "random_normal",
    "RandomUniform": "random_uniform",
    "TruncatedNormal": "truncated_normal",
    "Split": "split",
    "StridedSlice": "strided_slice",  # x[...]
    "Gather": "GatherV2",          # the op type of TensorFlow's tf.gather
    "TopK": "TopKV2",
}

# Tensor operators: TensorFlow names ``x + y`` ``add`` where ``tf.add`` is ``Add``
OPERATOR_NAMES = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "truediv", "floordiv": "floordiv",
    "mod": "mod", "pow": "pow", "matmul": "matmul",
}


def default_node_name(op: str, snake_case: str, tf1: bool) -> str:
    """The name of a node of op type `op` created without one: TensorFlow 1's in a v1
    graph (`tf1`), else `snake_case` (tensorweave's)."""
    if not tf1:
        return snake_case
    return _PYTHON_LEVEL_NAMES.get(op, op)


def operator_name(tensor: Any, operator: str) -> str | None:
    """The name TensorFlow gives the op of a Python operator (``x + y``: ``add``) when
    `tensor` is a v1 graph's, else None (the op function's default)."""
    builder = getattr(tensor, "builder", None)
    if builder is None:  # a v1 variable: its graph's builder
        builder = getattr(getattr(tensor, "_graph", None), "_builder", None)
    if builder is not None and getattr(builder, "tf1_naming", False):
        return OPERATOR_NAMES[operator]
    return None
