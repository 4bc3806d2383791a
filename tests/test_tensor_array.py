"""tw.TensorArray: functional writes and reads, in while_loop/scan bodies and eagerly,
differentiable through loops; results against NumPy, gradients against finite
differences, eagerly and on the reference and cpu targets."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.frontend import nest
from tests.grads.strategies import seeds, values
from tests.helpers import TARGETS, check_gradients

MODES = ["eager", *TARGETS]
rng = np.random.default_rng(4)


def run(mode, fn, *args):
    if mode == "eager":
        return nest.map_structure(np.asarray, fn(*[tw.constant(a) for a in args]))
    return tw.compile(fn, target=mode)(*args)


def loop_rows(x):
    """Row i of the result is x[i] * i + the previous row, written one by one in a loop."""
    n = x.shape[0]
    ta = tw.TensorArray(x.dtype, size=n, element_shape=x.shape[1:])

    def body(i, prev, ta):
        row = tw.gather(x, i) * tw.cast(i, x.dtype) + prev
        return i + 1, row, ta.write(i, row)

    _, _, ta = tw.while_loop(lambda i, prev, ta: i < n, body,
                             (0, tw.zeros(x.shape[1:], dtype=x.dtype), ta))
    return ta.stack()


def loop_rows_np(x):
    out, prev = [], np.zeros(x.shape[1:])
    for i, r in enumerate(x):
        prev = r * i + prev
        out.append(prev)
    return np.stack(out)


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=3)
@given(seed=seeds, n=st.integers(1, 4), k=st.integers(1, 3))
def test_writes_in_a_while_loop(mode, seed, n, k):
    x = values(seed, (n, k))
    np.testing.assert_allclose(run(mode, loop_rows, x), loop_rows_np(x), rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_gradient_through_loop_writes_and_reads(target):
    x = rng.normal(size=(4, 2))
    check_gradients(loop_rows, x, target=target)

    def read_back(x):
        ta = tw.TensorArray(tw.float64, size=4).unstack(tw.sin(x))
        return tw.scan(lambda acc, i: acc * ta.read(i) + 1.0, tw.range(4),
                       initializer=tw.ones([2], dtype=tw.float64))

    check_gradients(read_back, x, target=target)


@pytest.mark.parametrize("mode", MODES)
def test_dynamic_size_grows_in_a_loop(mode):
    x = rng.normal(size=(5, 3))

    def grow(x):
        ta = tw.TensorArray(tw.float64, size=0, dynamic_size=True, element_shape=[3])

        def body(i, ta):
            return i + 1, ta.write(ta.size(), tw.gather(x, i) * 2.0)

        _, ta = tw.while_loop(lambda i, ta: i < 5, body, (0, ta))
        return ta.stack(), ta.size()

    stacked, size = run(mode, grow, x)
    np.testing.assert_allclose(stacked, x * 2.0, rtol=1e-12)
    assert int(size) == 5

    def sparse(x):  # writes past the end leave zero rows between
        ta = tw.TensorArray(tw.float64, size=1, dynamic_size=True, element_shape=[3])
        _, ta = tw.while_loop(lambda i, ta: i < 3,
                              lambda i, ta: (i + 1, ta.write(i * 3 + 1, tw.sin(tw.gather(x, i)))),
                              (0, ta))
        return ta.stack()

    expected = np.zeros((8, 3))
    expected[[1, 4, 7]] = np.sin(x[:3])
    np.testing.assert_allclose(run(mode, sparse, x), expected, rtol=1e-12)
    if mode != "eager":
        check_gradients(lambda x: grow(x)[0] ** 2, x, target=mode)
        check_gradients(sparse, x, target=mode)


@pytest.mark.parametrize("mode", MODES)
def test_unstack_gather_scatter_concat_size(mode):
    x = rng.normal(size=(4, 2, 3))

    def ops(x):
        ta = tw.TensorArray(tw.float64, size=4).unstack(x)
        scattered = tw.TensorArray(tw.float64, size=3, element_shape=[2, 3]).scatter(
            [2, 0], tw.gather(x, [1, 3]) * -1.0)
        return (ta.gather([3, 1]), ta.concat(), ta.size(), scattered.stack(),
                ta.read(2))

    gathered, concat, size, scattered, read = run(mode, ops, x)
    np.testing.assert_allclose(gathered, x[[3, 1]])
    np.testing.assert_allclose(concat, x.reshape(8, 3))
    assert int(size) == 4 and np.asarray(size).dtype == np.int32
    np.testing.assert_allclose(scattered, np.stack([-x[3], np.zeros((2, 3)), -x[1]]))
    np.testing.assert_allclose(read, x[2])


@pytest.mark.parametrize("mode", MODES)
def test_element_shape_from_the_first_write(mode):
    def first_write(x):
        ta = tw.TensorArray(tw.float64, size=2)
        ta = ta.write(1, x)
        return ta.stack(), ta.element_shape

    if mode == "eager":
        stacked, shape = first_write(tw.constant(np.array([1.0, 2.0])))
        assert shape == (2,)
        stacked = stacked.numpy()
    else:
        stacked = tw.compile(lambda x: first_write(x)[0], target=mode)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(stacked, [[0.0, 0.0], [1.0, 2.0]])


def test_errors():
    ta = tw.TensorArray(tw.float32, size=2)
    with pytest.raises(TypeError, match="dtype is f32 but the value is f64"):
        ta.write(0, np.array([1.0]))
    ta = ta.write(0, np.array([1.0, 2.0], np.float32))
    with pytest.raises(tw.errors.ShapeError, match="incompatible with the array's element"):
        ta.write(1, np.array([1.0], np.float32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="write to index 2 but array size"):
        ta.write(2, np.array([1.0, 2.0], np.float32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="read from index 5"):
        ta.read(5)
    ta.read(0)
    with pytest.raises(tw.errors.InvalidArgumentError, match="clear_after_read"):
        ta.read(0)
    keep = tw.TensorArray(tw.float32, size=1, clear_after_read=False).write(0, np.float32(3))
    assert float(keep.read(0)) == float(keep.read(0)) == 3.0
    with pytest.raises(ValueError, match="needs a size"):
        tw.TensorArray(tw.float32)

    @tw.compile
    def shapeless(x):
        ta = tw.TensorArray(tw.float64, size=3)
        _, ta = tw.while_loop(lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i, x)),
                              (0, ta))
        return ta.stack()

    with pytest.raises(tw.errors.TracingError, match="pass element_shape"):
        shapeless(np.array([1.0]))

    @tw.compile
    def beyond(x):
        return tw.TensorArray(tw.float64, size=2).write(tw.cast(x[0], tw.int32), x).stack()

    with pytest.raises(tw.errors.InvalidArgumentError, match="index 3 is not in"):
        beyond(np.array([3.0]))


def test_eager_tape_through_tensor_array():
    x = rng.normal(size=(3, 2))
    xt = tw.constant(x)
    with tw.GradientTape() as tape:
        tape.watch(xt)
        y = tw.reduce_sum(loop_rows(xt) ** 2)
    expected = tw.compile(tw.grad(lambda x: tw.reduce_sum(loop_rows(x) ** 2)))(x)
    np.testing.assert_allclose(tape.gradient(y, xt).numpy(), expected, rtol=1e-12)
