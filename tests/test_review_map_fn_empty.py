"""Adversarial review of `tw.map_fn` traced with a leading dim known only at run time:
an empty batch (0 elements) must map to an empty result, as in TensorFlow, and the
first element's work (and side effects) must not run when there is no element. Before,
the first element was gathered and mapped unconditionally, so any empty batch failed
with "Gather: indices[] = 0 is not in [0, 0)"."""

import numpy as np
import pytest

import tensorweave as tw

ROWS = [tw.TensorSpec([None, 3], tw.float32)]


def _doubled(x):
    return tw.map_fn(lambda r: r * 2.0, x)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_dynamic_batch_of_any_size(n):
    f = tw.compile(_doubled, input_signature=ROWS)
    x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
    got = f(x)
    assert got.shape == (n, 3) and got.dtype == np.float32
    np.testing.assert_array_equal(got, x * 2.0)


def test_structured_outputs_of_an_empty_dynamic_batch():
    @tw.compile(input_signature=ROWS)
    def f(x):
        return tw.map_fn(lambda r: {"sum": tw.reduce_sum(r), "cast": tw.cast(r, tw.int32)},
                         x, fn_output_signature={"sum": tw.float32, "cast": tw.int32})

    out = f(np.zeros((0, 3), np.float32))
    assert out["sum"].shape == (0,) and out["sum"].dtype == np.float32
    assert out["cast"].shape == (0, 3) and out["cast"].dtype == np.int32
    out = f(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(out["sum"], [3.0, 3.0])
    np.testing.assert_array_equal(out["cast"], np.ones((2, 3), np.int32))


def test_no_side_effect_for_an_empty_batch():
    count = tw.Variable(np.float32(0.0), name="review_map_fn_count", trainable=False)

    @tw.compile(input_signature=ROWS)
    def f(x):
        def one(r):
            count.assign_add(1.0)
            return r + 1.0
        return tw.map_fn(one, x)

    assert f(np.zeros((0, 3), np.float32)).shape == (0, 3)
    assert count.numpy() == 0.0
    f(np.zeros((4, 3), np.float32))
    assert count.numpy() == 4.0


def test_an_empty_batch_with_outputs_of_unknown_shape_is_an_error():
    # fn's output dims depend on the data: with no element there is no shape to give
    # (TensorFlow: "TensorArray has size zero, but element shape <unknown>")
    @tw.compile(input_signature=[tw.TensorSpec([None, None], tw.float32)])
    def f(x):
        return tw.map_fn(lambda r: r * 2.0, x)

    np.testing.assert_array_equal(f(np.ones((2, 2), np.float32)), np.full((2, 2), 2.0))
    with pytest.raises(tw.errors.InvalidArgumentError, match="tw.map_fn: elems are empty"):
        f(np.zeros((0, 2), np.float32))
