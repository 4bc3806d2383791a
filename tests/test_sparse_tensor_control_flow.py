"""SparseTensors as results of tw.cond branches and as while_loop variables (their three
components are loop variables / branch results), eagerly, compiled and in v1 graphs.
Before, both raised a TypeError from inside control_flow ('SparseTensor' object is not
iterable / a loop-variable count that did not match)."""

import numpy as np
import pytest

import tensorweave as tw

DENSE = np.array([[0.0, 1.0], [0.0, 0.0], [2.0, 0.0]])


def _sp():
    return tw.sparse.from_dense(tw.constant(DENSE))


def _cond(p):
    sp = _sp()
    r = tw.cond(p > 0, lambda: sp,
                lambda: tw.sparse.SparseTensor(sp.indices, sp.values * 10.0, sp.dense_shape))
    return tw.sparse.to_dense(r)


def _loop(n):
    def body(i, s):
        return i + 1, tw.sparse.SparseTensor(s.indices, s.values * 2.0, s.dense_shape)
    _, r = tw.while_loop(lambda i, s: i < n, body, (tw.constant(0), _sp()))
    return tw.sparse.to_dense(r)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_cond_and_while_loop_carry_sparse_tensors(mode):
    cond, loop = (_cond, _loop) if mode == "eager" else (tw.compile(_cond), tw.compile(_loop))
    np.testing.assert_array_equal(np.asarray(cond(np.float64(1.0))), DENSE)
    np.testing.assert_array_equal(np.asarray(cond(np.float64(-1.0))), DENSE * 10)
    np.testing.assert_array_equal(np.asarray(loop(np.int32(3))), DENSE * 8)
    np.testing.assert_array_equal(np.asarray(loop(np.int32(0))), DENSE)


def test_gradient_through_a_loop_of_sparse_values():
    w = tw.Variable(2.0, dtype=tw.float64)

    @tw.compile
    def grad():
        with tw.GradientTape() as tape:
            def body(i, s):
                return i + 1, tw.sparse.SparseTensor(s.indices, s.values * w, s.dense_shape)
            _, r = tw.while_loop(lambda i, s: i < 3, body, (tw.constant(0), _sp()))
            loss = tw.reduce_sum(tw.sparse.to_dense(r))
        return tape.gradient(loss, w)

    # loss = 3 w^3, d/dw = 3 * 3 w^2 = 36 at w = 2
    np.testing.assert_allclose(grad(), 36.0)


def test_v1_session():
    v1 = tw.compat.v1
    with v1.Graph().as_default():
        p = v1.placeholder(tw.float64, [])
        out = _cond(p)
        with v1.Session() as sess:
            np.testing.assert_array_equal(sess.run(out, {p: -1.0}), DENSE * 10)
