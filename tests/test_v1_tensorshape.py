"""TensorFlow's `TensorShape` and `Dimension` as the static shapes users see.

Expected values were checked against TensorFlow 2.21 (``tf.TensorShape``,
``tf.compat.v1.Dimension``...); the comments quote what TensorFlow printed."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compiler.ir import Graph
from tensorweave.compiler.printer import graph_fingerprint, print_graph
from tensorweave.compiler.types import TensorType
from tensorweave.frontend import nest
from tensorweave.frontend.tensor_shape import UnknownDimension, unknown_shape

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


# -- the API on its own ---------------------------------------------------------------------------

def test_tensorshape_queries_match_tensorflow():
    s = tf.TensorShape([None, 3])
    # TF: TensorShape([None, 3]) (None, 3) [None, 3] 2 2 [Dimension(None), Dimension(3)] False
    assert repr(s) == "TensorShape([None, 3])"
    assert str(s) == "(None, 3)"
    assert s.as_list() == [None, 3]
    assert s.ndims == 2 and s.rank == 2
    assert [d.value for d in s.dims] == [None, 3]
    assert not s.is_fully_defined()
    # TF: s == [None, 3], s == (None, 3), s != [None, 3], s == TS([None, 3]), s == [2, 3]
    #     -> True True False True False
    assert s == [None, 3] and s == (None, 3) and not (s != [None, 3])
    assert s == tf.TensorShape([None, 3]) and s != [2, 3]
    # TF: s[0], s[1], s[0:1], s[-1] -> None 3 TensorShape([None]) 3
    assert s[0] is None and s[1] == 3 and s[-1] == 3
    assert isinstance(s[0:1], tf.TensorShape) and s[0:1] == [None]
    # TF: is_compatible_with([2,3]) True, ([2,4]) False; merge_with([2,None]) (2, 3);
    #     concatenate([4]) (None, 3, 4); with_rank(2) (None, 3); num_elements() None;
    #     TensorShape([2,3]).num_elements() 6
    assert s.is_compatible_with([2, 3]) and not s.is_compatible_with([2, 4])
    assert s.merge_with([2, None]) == [2, 3]
    assert s.concatenate([4]) == [None, 3, 4]
    assert s.with_rank(2) == s
    assert s.num_elements() is None and tf.TensorShape([2, 3]).num_elements() == 6
    assert tf.TensorShape([]).num_elements() == 1
    # TF: str(TS([])) (), str(TS([5])) (5,), TS(3) (3,)
    assert str(tf.TensorShape([])) == "()" and str(tf.TensorShape([5])) == "(5,)"
    assert tf.TensorShape(3) == [3]
    # TF: most_specific_compatible_shape([2, 3]) (None, 3); TS([1,2]) + TS([3]) (1, 2, 3)
    assert s.most_specific_compatible_shape([2, 3]) == [None, 3]
    assert tf.TensorShape([1, 2]) + tf.TensorShape([3]) == [1, 2, 3]
    assert [1] + tf.TensorShape([3]) == [1, 3]


def test_tensorshape_errors_match_tensorflow():
    s = tf.TensorShape([None, 3])
    # TF: ValueError Shape (None, 3) must have rank 3
    with pytest.raises(ValueError, match=r"Shape \(None, 3\) must have rank 3"):
        s.with_rank(3)
    with pytest.raises(ValueError, match=r"must have rank 3"):
        s.assert_has_rank(3)
    # TF: ValueError Shapes (None, 3) and (2, 4) are not compatible
    with pytest.raises(ValueError, match=r"Shapes \(None, 3\) and \(2, 4\) are not compatible"):
        s.merge_with([2, 4])
    # TF: ValueError Shapes (1, 2) and [1, 3] are incompatible
    with pytest.raises(ValueError, match=r"Shapes \(1, 2\) and \[1, 3\] are incompatible"):
        tf.TensorShape([1, 2]).assert_is_compatible_with([1, 3])
    # TF: ValueError Shape (None, 3) is not fully defined
    with pytest.raises(ValueError, match=r"Shape \(None, 3\) is not fully defined"):
        s.assert_is_fully_defined()
    # TF: must have rank at least 3 / at most 1
    with pytest.raises(ValueError, match="must have rank at least 3"):
        s.with_rank_at_least(3)
    with pytest.raises(ValueError, match="must have rank at most 1"):
        s.with_rank_at_most(1)
    assert s.with_rank_at_least(1) == s and s.with_rank_at_most(2) == s
    with pytest.raises(ValueError, match="Dimension -1 must be >= 0"):
        tf.TensorShape([-1])
    with pytest.raises(TypeError, match="must be an int or None"):
        tf.TensorShape([2.5])


def test_unknown_rank_shape():
    u = tf.TensorShape(None)
    # TF: TensorShape(None) <unknown> None None False None
    assert repr(u) == "TensorShape(None)" and str(u) == "<unknown>"
    assert u.ndims is None and u.rank is None and u.dims is None
    assert not u.is_fully_defined() and u.num_elements() is None
    # TF: as_list() is not defined on an unknown TensorShape.
    with pytest.raises(ValueError, match="as_list"):
        u.as_list()
    # TF: Cannot take the length of shape with unknown rank.
    with pytest.raises(ValueError, match="unknown rank"):
        len(u)
    with pytest.raises(ValueError, match="unknown rank"):
        tuple(u)  # never mistaken for a scalar's ()
    assert u != tf.TensorShape([]) and u == tf.TensorShape(None)
    # TF: TS([2, None]).merge_with(TS(None)) (2, None); is_compatible_with(TS(None)) True
    assert tf.TensorShape([2, None]).merge_with(u) == [2, None]
    assert u.merge_with([2, 3]) == [2, 3]
    assert tf.TensorShape([None, 3]).is_compatible_with(u)
    assert u.concatenate([1]).rank is None
    assert unknown_shape(rank=2) == [None, None] and unknown_shape().rank is None
    assert u.with_rank(2) == [None, None]


def test_dimension_matches_tensorflow():
    # TF: repr Dimension(3) str 3, repr Dimension(None) str ?, .value 3 / None
    d, n = tf.Dimension(3), tf.Dimension(None)
    assert str(d) == "3" and d.value == 3
    assert repr(n) == "Dimension(None)" and str(n) == "?" and n.value is None
    assert isinstance(n, UnknownDimension)
    # TF: Dimension(3) == 3 True, Dimension(None) == 3 None, Dimension(3) + 1 4,
    #     Dimension(None) * 2 ?
    assert d == 3 and (n == 3) is None
    assert (d + 1).value == 4 and (n * 2).value is None and (d * n).value is None
    # TF: dimension_value(Dimension(3)) 3, (4) 4, (None) None
    assert tf.dimension_value(d) == 3 and tf.dimension_value(4) == 4
    assert tf.dimension_value(None) is None and tf.dimension_value(n) is None
    # TF: dimension_at_index(TS([None, 3]), 0) Dimension(None), (.., 1) Dimension(3)
    s = tf.TensorShape([None, 3])
    assert tf.dimension_at_index(s, 0).value is None
    assert tf.dimension_at_index(s, 1).value == 3
    assert tf.TensorShape([tf.Dimension(None), tf.Dimension(3)]) == [None, 3]
    with pytest.raises(ValueError, match="Dimension -2 must be >= 0"):
        tf.Dimension(-2)
    assert d.merge_with(None) == 3 and n.merge_with(4) == 4
    with pytest.raises(ValueError, match="not compatible"):
        d.merge_with(4)


def test_products_of_dims_keep_value():
    """TensorFlow 1 code multiplies dims and reads ``.value`` of the product."""
    s = tf.TensorShape([2, 3, 4])
    assert (s[1] * s[2]).value == 12 and (s[2] - s[1]).value == 1
    assert s[1] - s[2] == -1  # a plain int past zero (internal arithmetic)
    assert s[1] * 0.5 == 1.5
    t = s[1] * tw.constant([1.0, 2.0])  # with a tensor: the tensor's operator, as an int's
    assert isinstance(t, tw.EagerTensor) and t.numpy().tolist() == [3.0, 6.0]
    x = tf.placeholder(tf.float32, [None, 3])
    assert isinstance(x.shape[1] + x, tf.Tensor) and isinstance(x.shape[1] * x[0, 0], tf.Tensor)


# -- still a tuple --------------------------------------------------------------------------------

def test_shape_is_still_a_tuple():
    s = tf.TensorShape([2, 3])
    assert isinstance(s, tuple) and s == (2, 3) and hash(s) == hash((2, 3))
    assert {(2, 3): "x"}[s] == "x"
    a, b = s
    assert (a, b) == (2, 3) and type(a) is int  # iteration gives the plain ints
    assert np.zeros(s).shape == (2, 3)
    assert s + (1,) == (2, 3, 1) and s[:1] + (-1,) == (2, -1)  # a reshape target
    assert (-1,) + s == (-1, 2, 3)
    t = tw.constant(4)  # a tuple holding a tensor stays a tuple
    assert type(s + (t,)) is tuple and (s + (t,))[2] is t and type((t,) + s) is tuple
    assert s != (2, t) and s != (2, "3") and s == (np.int64(2), 3)
    assert len(s) == 2 and list(s) == [2, 3] and 3 in s
    assert not tf.TensorShape([])  # a scalar's shape is falsy, as the tuple ()
    assert f"{s}" == "(2, 3)" and repr(s[0]) == "2"
    for blob in (pickle.dumps(s), pickle.dumps(tf.TensorShape(None))):
        assert pickle.loads(blob) == pickle.loads(blob)
    assert pickle.loads(pickle.dumps(s)) == s and copy.deepcopy(s) == s
    assert pickle.loads(pickle.dumps(tf.TensorShape(None))).rank is None
    assert type(pickle.loads(pickle.dumps(s[0]))) is int


def test_nest_round_trips_a_shape_as_a_tuple():
    leaves, tree = nest.flatten({"s": tf.TensorShape([2, None])})
    assert nest.unflatten(tree, leaves) == {"s": (2, None)}


def test_fingerprint_and_ir_text_do_not_depend_on_the_shape_class():
    """An attribute holding a TensorShape prints and fingerprints as the tuple it is."""
    def build(shape_attr):
        g = Graph("g")
        g.add_node("Placeholder", [], {"dtype": tw.float32, "shape": shape_attr},
                   output_types=[TensorType(tw.float32, (2, 3))], name="p")
        return g
    plain, wrapped = build((2, 3)), build(tf.TensorShape([2, 3]))
    assert print_graph(plain) == print_graph(wrapped)
    assert graph_fingerprint(plain) == graph_fingerprint(wrapped)


# -- where users meet it --------------------------------------------------------------------------

def test_v1_placeholder_and_tensor_shapes():
    x = tf.placeholder(tf.float32, [None, 3])
    for s in (x.shape, x.get_shape()):
        assert isinstance(s, tf.TensorShape) and s.as_list() == [None, 3]
    assert x.get_shape().ndims == 2 and x.shape[1].value == 3
    assert x.get_shape()[1:].as_list() == [3]
    y = tf.matmul(x, tf.ones([3, 5]))
    assert y.shape.as_list() == [None, 5] and y.shape[-1].value == 5
    t = tf.placeholder(tf.float32, tf.TensorShape([tf.Dimension(None), 2]))
    assert t.shape == [None, 2]
    assert tf.placeholder(tf.int32, [-1, 4]).shape == [None, 4]
    assert tf.placeholder(tf.float32, tf.TensorShape(None)).shape.rank is None
    d = tf.placeholder_with_default(tf.zeros([2, 3]), tf.TensorShape([None, 3]))
    assert d.shape.as_list() == [None, 3]


def test_variable_and_eager_shapes():
    v = tf.Variable(np.zeros((2, 3), np.float32))
    assert isinstance(v.shape, tf.TensorShape) and v.get_shape().as_list() == [2, 3]
    assert v.shape.is_fully_defined() and v.shape.num_elements() == 6
    e = tw.constant(np.ones((4, 1), np.float32))
    assert isinstance(e.shape, tw.TensorShape) and e.shape.as_list() == [4, 1]
    assert e.shape[0].value == 4
    ev = tw.Variable(np.zeros(3, np.float32))
    assert ev.shape.as_list() == [3]


def test_session_runs_a_graph_built_from_shape_arithmetic():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    s = x.get_shape()
    flat = tf.reshape(x, [-1, (s[1] * s[2]).value])
    with tf.Session() as sess:
        out = sess.run(flat, {x: np.arange(12, dtype=np.float32).reshape(2, 2, 3)})
    np.testing.assert_array_equal(out, np.arange(12, dtype=np.float32).reshape(2, 6))


def test_compiled_function_sees_tensorshape():
    seen = []

    @tw.compile
    def f(a):
        seen.append(a.shape)
        return tw.reshape(a, a.shape[:1] + (-1,))

    out = f(np.ones((2, 3, 2), np.float32))
    assert out.shape == (2, 6) and isinstance(seen[0], tw.TensorShape)


# -- properties against a tuple reference ---------------------------------------------------------

_dims = st.lists(st.one_of(st.none(), st.integers(0, 4)), max_size=4)


def _compatible(a, b):
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


@settings(max_examples=60, deadline=None)
@given(_dims, _dims)
def test_compatibility_and_merge_against_reference(a, b):
    sa = tf.TensorShape(a)
    assert sa.is_compatible_with(b) == _compatible(a, b)
    if _compatible(a, b):
        assert sa.merge_with(b).as_list() == [x if x is not None else y for x, y in zip(a, b)]
    else:
        with pytest.raises(ValueError):
            sa.merge_with(b)
    assert (sa == b) == (a == b) and (sa == tuple(b)) == (a == b)
    assert sa.concatenate(b).as_list() == a + b
    full = all(x is not None for x in a)
    assert sa.is_fully_defined() == full
    assert sa.num_elements() == (int(np.prod(a, dtype=np.int64)) if full else None)
    for i in range(-len(a), len(a)):
        assert tf.dimension_value(sa[i]) == a[i]
