"""TensorFlow 1's top-level aliases (``tf.svd``, ``tf.matrix_inverse``, ``tf.norm(keep_dims=)``,
``tf.segment_sum``, ...), ``tf.foldr`` and ``tf.make_template``, checked against NumPy on
small inputs; this file also passes under TF 2.21's ``tf.compat.v1`` (the import swapped),
so the argument orders, return orders and names are TensorFlow's."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 3)) + 3 * np.eye(3)        # well conditioned
SPD = A @ A.T + np.eye(3)
B = RNG.standard_normal((3, 2))
BATCH = RNG.standard_normal((2, 3, 3))


def run(fn):
    with tf.Graph().as_default():
        out = fn()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(out)


def close(got, want, tol=1e-10):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_matrix_functions():
    close(run(lambda: tf.matrix_inverse(A)), np.linalg.inv(A))
    close(run(lambda: tf.matrix_inverse(A, adjoint=True)), np.linalg.inv(A.T))
    close(run(lambda: tf.matrix_determinant(BATCH)), np.linalg.det(BATCH))
    close(run(lambda: tf.matrix_solve(A, B)), np.linalg.solve(A, B))
    close(run(lambda: tf.matrix_solve(A, B, adjoint=True)), np.linalg.solve(A.T, B))
    lower = np.tril(A)
    close(run(lambda: tf.matrix_triangular_solve(lower, B)), np.linalg.solve(lower, B))
    close(run(lambda: tf.cholesky(SPD)), np.linalg.cholesky(SPD))
    close(run(lambda: tf.trace(BATCH)), np.trace(BATCH, axis1=-2, axis2=-1))
    close(run(lambda: tf.matrix_transpose(BATCH)), np.swapaxes(BATCH, -1, -2))


def test_band_and_diagonals():
    close(run(lambda: tf.matrix_band_part(A, 1, 0)), np.tril(A) - np.tril(A, -2))
    close(run(lambda: tf.matrix_band_part(A, -1, 0)), np.tril(A))
    d = np.array([[1.0, 2.0], [3.0, 4.0]])
    close(run(lambda: tf.matrix_diag(d)), np.stack([np.diag(r) for r in d]))
    close(run(lambda: tf.matrix_diag_part(BATCH)), np.diagonal(BATCH, axis1=-2, axis2=-1))
    want = BATCH.copy()
    for k in range(2):
        np.fill_diagonal(want[k], [7.0, 8.0, 9.0])
    close(run(lambda: tf.matrix_set_diag(BATCH, [[7.0, 8.0, 9.0]] * 2)), want)


def test_decompositions_return_tensorflows_order():
    s, u, v = run(lambda: tf.svd(A))                   # (s, u, v): v not transposed
    close(s, np.linalg.svd(A, compute_uv=False))
    close(u @ np.diag(s) @ v.T, A)
    close(run(lambda: tf.svd(A, compute_uv=False)), np.linalg.svd(A, compute_uv=False))
    q, r = run(lambda: tf.qr(B))                        # reduced: q [3, 2], r [2, 2]
    assert q.shape == (3, 2) and r.shape == (2, 2)
    close(q @ r, B)
    close(np.tril(r, -1), np.zeros((2, 2)))
    e, vecs = run(lambda: tf.self_adjoint_eig(SPD))
    close(e, np.linalg.eigvalsh(SPD))
    close(vecs @ np.diag(e) @ vecs.T, SPD)
    close(run(lambda: tf.self_adjoint_eigvals(SPD)), np.linalg.eigvalsh(SPD))


def test_norm_takes_keep_dims():
    close(run(lambda: tf.norm(B)), np.linalg.norm(B))
    close(run(lambda: tf.norm(B, axis=1, keep_dims=True)),
          np.linalg.norm(B, axis=1, keepdims=True))
    close(run(lambda: tf.norm(B, ord=1, axis=0)), np.abs(B).sum(0))
    close(run(lambda: tf.norm(A, ord="fro", axis=[0, 1])), np.linalg.norm(A, "fro"))


def test_segments_and_logic():
    data = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    ids = np.array([0, 0, 1, 2], np.int32)
    close(run(lambda: tf.segment_sum(data, ids)), [[4.0, 6.0], [5.0, 6.0], [7.0, 8.0]])
    close(run(lambda: tf.segment_mean(data, ids)), [[2.0, 3.0], [5.0, 6.0], [7.0, 8.0]])
    close(run(lambda: tf.segment_max(data, ids)), [[3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    close(run(lambda: tf.segment_min(data, ids)), [[1.0, 2.0], [5.0, 6.0], [7.0, 8.0]])
    close(run(lambda: tf.segment_prod(data, ids)), [[3.0, 8.0], [5.0, 6.0], [7.0, 8.0]])
    uids = np.array([1, 0, 1, 1], np.int32)
    close(run(lambda: tf.unsorted_segment_max(data, uids, 3))[:2], [[3.0, 4.0], [7.0, 8.0]])
    close(run(lambda: tf.unsorted_segment_min(data, uids, 2)), [[3.0, 4.0], [1.0, 2.0]])
    close(run(lambda: tf.unsorted_segment_prod(data, uids, 2)), [[3.0, 4.0], [35.0, 96.0]])
    close(run(lambda: tf.unsorted_segment_mean(data, uids, 2)),
          [[3.0, 4.0], [13 / 3, 16 / 3]])
    close(run(lambda: tf.unsorted_segment_sqrt_n(data, uids, 2)),
          [[3.0, 4.0], [13 / np.sqrt(3), 16 / np.sqrt(3)]])
    x, y = np.array([True, True, False, False]), np.array([True, False, True, False])
    np.testing.assert_array_equal(run(lambda: tf.logical_xor(x, y)), x ^ y)


def test_check_numerics_passes_finite_values_and_stops_on_nan():
    close(run(lambda: tf.check_numerics(tf.constant([1.0, 2.0]), "bad")), [1.0, 2.0])
    with pytest.raises(Exception, match="bad"):
        run(lambda: tf.check_numerics(tf.constant([1.0, np.nan]), "bad"))


def test_foldr_goes_right_to_left():
    elems = np.array([1.0, 2.0, 3.0, 4.0])
    # a - x from the right: ((10 - 4) - 3) - 2) - 1 = 0; without an initializer 4 - 3 - 2 - 1
    close(run(lambda: tf.foldr(lambda a, x: a - x, elems, initializer=np.float64(10))), 0.0)
    close(run(lambda: tf.foldr(lambda a, x: a - x, elems)), -2.0)
    # the order shows in a non-commutative accumulation
    close(run(lambda: tf.foldr(lambda a, x: a * 10 + x, elems, initializer=np.float64(0))),
          4321.0)
    # a nest of elems, and a gradient through the fold
    pair = (elems, 2 * elems)
    close(run(lambda: tf.foldr(lambda a, x: a + x[0] * x[1], pair,
                               initializer=np.float64(0))), (2 * elems * elems).sum())

    def grad():
        e = tf.constant(elems)
        return tf.gradients(tf.foldr(lambda a, x: a * x, e), e)[0]
    close(run(grad), [24.0, 12.0, 8.0, 6.0])


def test_make_template_shares_variables_between_calls():
    def lin(x, units):
        w = tf.get_variable("w", [x.shape[-1], units], initializer=tf.ones_initializer(),
                            dtype=tf.float64)
        return tf.matmul(x, w, name="mm")

    with tf.Graph().as_default():
        x = tf.constant(np.arange(6.0).reshape(2, 3))
        t = tf.make_template("lin", lin, units=2)
        a, b = t(x), t(x)
        c = tf.make_template("lin", lin, units=2)(x)   # another template: its own scope
        t3 = tf.make_template("pre", lin, create_scope_now_=True, units=4)
        with tf.variable_scope("outer"):
            d = t3(x)
            t4 = tf.make_template("inner", lin, units=1)
            e, e2 = t4(x), t4(x)
        names = [z.name for z in (a, b, c, d, e, e2)]
        variables = [v.name for v in tf.global_variables()]
        assert t.name == "lin" and t.variable_scope_name == "lin/"
        assert [v.name for v in t.trainable_variables] == ["lin/w:0"]
        assert t3.variable_scope_name == "pre/" and t4.variable_scope_name == "outer/inner/"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(t.variables[0], 2 * np.ones((3, 2))))
            got_a, got_b, got_c = sess.run([a, b, c])
    assert names == ["lin/mm:0", "lin_1/mm:0", "lin_2/mm:0", "outer/pre/mm:0",
                     "outer/inner/mm:0", "outer/inner_1/mm:0"]
    assert variables == ["lin/w:0", "lin_1/w:0", "pre/w:0", "outer/inner/w:0"]
    xs = np.arange(6.0).reshape(2, 3)
    close(got_a, xs @ (2 * np.ones((3, 2))))
    close(got_b, got_a)                                # the same variable
    close(got_c, xs @ np.ones((3, 2)))                 # not shared with the other template


def test_a_template_call_that_creates_a_new_variable_is_an_error():
    def fresh(x):
        name = f"q{len(tf.global_variables())}"
        return x * tf.get_variable(name, [], initializer=tf.zeros_initializer())

    with tf.Graph().as_default():
        t = tf.make_template("bad", fresh)
        t(tf.constant(1.0))
        with pytest.raises(ValueError, match="does not exist"):
            t(tf.constant(1.0))

    def with_variable(x):
        return x * tf.Variable(1.0)

    with tf.Graph().as_default():
        t = tf.make_template("v", with_variable)
        t(tf.constant(1.0))
        with pytest.raises(ValueError, match="Trainable variable created"):
            t(tf.constant(1.0))
