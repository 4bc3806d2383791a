"""Big-endian NumPy arrays (``'>f4'``: read from files written on another machine, or
``np.dtype('>i4')`` formats) are accepted wherever an array enters, converted by value
to this machine's byte order: constants, feeds, assignments, variables' initial values,
``Variable.load`` and ``tw.compile`` arguments (also after a call with native arrays of
the same shape, whose fast and native paths must not take the swapped bytes). Each
result is compared with the same program on the native array. TensorFlow 2.21 accepts
them too; note that its graph-mode ``tf.constant`` and ``tf.Variable`` of a big-endian
array give wrong values (the raw bytes: 0.0 for [1.5, -2.25, 3.0], 16777217 for 1),
where its feeds convert by value, as every entry point here does."""

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf

SWAPPED = [">f2", ">f4", ">f8", ">i2", ">i4", ">i8"]
TARGETS = ["reference", "cpu"]


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def _pair(code: str, shape=(2, 3)) -> tuple[np.ndarray, np.ndarray]:
    """A big-endian array and its native twin, with values whose bytes differ when
    swapped (a swap that went unnoticed would change every one)."""
    rng = np.random.default_rng(abs(hash(code)) % 2**32)
    native = np.dtype(code).newbyteorder("=")
    if native.kind == "f":
        values = rng.uniform(-100, 100, shape).astype(native)
    else:
        values = rng.integers(-120, 120, shape).astype(native)
    swapped = values.astype(code)
    assert not swapped.dtype.isnative and np.array_equal(swapped, values)
    return swapped, values


@pytest.mark.parametrize("code", SWAPPED)
def test_constants_and_initial_values(code):
    big, native = _pair(code)
    c = tf.constant(big)
    v = tf.Variable(big)
    assert c.dtype.np == native.dtype and v.dtype.np == native.dtype
    with tf.Session() as sess:
        sess.run(v.initializer)
        got_c, got_v = sess.run([c, v])
    np.testing.assert_array_equal(got_c, native)
    np.testing.assert_array_equal(got_v, native)
    assert got_c.dtype == native.dtype and got_c.dtype.isnative
    np.testing.assert_array_equal(tw.constant(big).numpy(), native)
    np.testing.assert_array_equal(tw.Variable(big).numpy(), native)
    np.testing.assert_array_equal(tw.convert_to_tensor(big).numpy(), native)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("code", [">f4", ">i4", ">f8"])
def test_feeds_assignments_and_load(code, target):
    big, native = _pair(code)
    dtype = tw.as_dtype(native.dtype)
    p = tf.placeholder(dtype, [None, 3])
    w = tf.Variable(np.zeros((2, 3), native.dtype))
    assign_const = tf.assign(w, big)
    with tf.Session(compile_target=target) as sess:
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run(p * 2, {p: big}), native * 2)
        np.testing.assert_array_equal(sess.run(assign_const), native)
        sess.run(w.initializer)
        w.load(big, sess)
        np.testing.assert_array_equal(sess.run(w), native)
    if native.dtype.kind == "f":  # a feed converted to another dtype on the way
        q = tf.placeholder(tf.float32, [None, 3])
        with tf.Session(compile_target=target) as sess:
            np.testing.assert_array_equal(sess.run(q, {q: native.astype(">f8")}),
                                          native.astype(np.float32))


@pytest.mark.parametrize("target", TARGETS)
def test_tw_variable_assign_eager_and_compiled(target):
    big, native = _pair(">f4")
    v = tw.Variable(np.zeros((2, 3), np.float32))
    v.assign(big)
    np.testing.assert_array_equal(v.numpy(), native)
    v.assign(np.zeros((2, 3), np.float32))

    @tw.compile(target=target)
    def set_from_closure():
        v.assign(big)
        return v.read_value() + 1

    np.testing.assert_array_equal(set_from_closure(), native + 1)
    np.testing.assert_array_equal(v.numpy(), native)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("code", SWAPPED)
def test_compiled_arguments_after_native_calls(code, target):
    big, native = _pair(code)

    @tw.compile(target=target)
    def f(x, y):
        return x * 2 + y, tw.reduce_sum(x)

    expected = (native * 2 + native, native.sum())
    # native calls first (the fast path, and the cpu target's native dispatcher, learn
    # this shape and dtype), then the big-endian array, then both mixed, several times
    for x, y in [(native, native), (native, native), (big, big), (big, native),
                 (native, big), (big, big), (native, native)]:
        out = f(x, y)
        np.testing.assert_array_equal(out[0], expected[0])
        if native.dtype.kind == "f":
            np.testing.assert_allclose(out[1], expected[1], rtol=1e-2)
        else:
            assert out[1] == expected[1]
    assert f.experimental_get_tracing_count() == 1  # one trace: the dtype is the same


def test_input_signature_takes_a_big_endian_array():
    big, native = _pair(">f4")

    @tw.compile(input_signature=[tw.TensorSpec([None, 3], tw.float32)])
    def g(x):
        return x - 1

    np.testing.assert_array_equal(g(big), native - 1)
    np.testing.assert_array_equal(g(big), native - 1)


def test_eager_ops_lists_datasets_and_py_func_results():
    big, native = _pair(">f4", (3,))
    np.testing.assert_array_equal(tw.math.add(big, big).numpy(), native * 2)
    np.testing.assert_array_equal((tw.constant(1.0) + big).numpy(), native + 1)
    np.testing.assert_array_equal(tw.constant([big, big]).numpy(), [native, native])
    assert tw.TensorSpec.from_array(big).dtype is tw.float32
    got = [x.numpy() for x in tw.data.Dataset.from_tensor_slices(big).map(lambda x: x * 2)]
    np.testing.assert_array_equal(got, native * 2)
    got = [{k: t.numpy() for k, t in x.items()} for x in tw.data.Dataset.from_tensors({"a": big})]
    np.testing.assert_array_equal(got[0]["a"], native)
    # a py_func returning a big-endian array (TensorFlow 2.21 reads its raw bytes:
    # [8.97e-44, ...] for [2, 4, 6]); converted by value here
    x = tf.placeholder(tf.float32, [3])
    y = tf.py_func(lambda a: (a * 2).astype(">f4"), [x], tf.float32)
    y.set_shape([3])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: native}), native * 2)
