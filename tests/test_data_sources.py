"""tw.data sources: from_tensor_slices, from_tensors, range, from_generator, zip,
concatenate: elements, element_spec and cardinality against NumPy and Python's range."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.data import Dataset


def items(ds):
    return list(ds.as_numpy_iterator())


def test_from_tensor_slices_nested_tuple_and_dict():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.array([1, 2, 3, 4], np.int64)
    ds = Dataset.from_tensor_slices(({"x": x}, y))
    assert ds.element_spec == ({"x": tw.TensorSpec([3], tw.float32)}, tw.TensorSpec([], tw.int64))
    out = items(ds)
    assert len(out) == 4 and int(ds.cardinality()) == 4 and len(ds) == 4
    for i, (d, label) in enumerate(out):
        np.testing.assert_array_equal(d["x"], x[i])
        assert label == y[i] and label.dtype == np.int64


def test_python_lists_take_tensorflows_default_dtypes():
    ds = Dataset.from_tensor_slices(([1.5, 2.5], [1, 2]))
    assert ds.element_spec == (tw.TensorSpec([], tw.float32), tw.TensorSpec([], tw.int32))


def test_for_loop_yields_eager_tensors():
    for t in Dataset.from_tensor_slices(np.arange(3.0)):
        assert isinstance(t, tw.EagerTensor) and t.dtype is tw.float64


def test_namedtuple_elements_keep_their_type():
    Point = collections.namedtuple("Point", "x y")
    ds = Dataset.from_tensor_slices(Point(np.arange(2), np.arange(2) * 10))
    p = items(ds)[1]
    assert isinstance(p, Point) and (p.x, p.y) == (1, 10)


def test_from_tensor_slices_needs_one_first_dim():
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"from_tensor_slices.*\[3\].*\[4\]"):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    with pytest.raises(tw.errors.InvalidArgumentError, match="scalar"):
        Dataset.from_tensor_slices(np.float32(1))


def test_from_tensors_is_one_element():
    ds = Dataset.from_tensors((np.zeros((2, 3), np.float32), 7))
    assert ds.element_spec == (tw.TensorSpec([2, 3], tw.float32), tw.TensorSpec([], tw.int32))
    (only,) = items(ds)
    assert only[0].shape == (2, 3) and only[1] == 7


@given(st.integers(-6, 6), st.integers(-6, 6), st.integers(-3, 3).filter(lambda s: s != 0))
def test_range_is_pythons_range(start, stop, step):
    ds = Dataset.range(start, stop, step)
    out = items(ds)
    assert [int(v) for v in out] == list(range(start, stop, step))
    assert all(v.dtype == np.int64 for v in out)
    assert int(ds.cardinality()) == len(range(start, stop, step))


def test_range_forms_and_output_type():
    assert [int(v) for v in items(Dataset.range(3))] == [0, 1, 2]
    assert [int(v) for v in items(Dataset.range(2, 5))] == [2, 3, 4]
    ds = Dataset.range(2, output_type=tw.int32)
    assert ds.element_spec == tw.TensorSpec([], tw.int32)
    with pytest.raises(tw.errors.InvalidArgumentError, match="step must not be 0"):
        Dataset.range(0, 3, 0)


def test_from_generator_with_output_signature():
    def gen():
        for i in range(3):
            yield i, [float(i)] * (i + 1)

    ds = Dataset.from_generator(gen, output_signature=(tw.TensorSpec([], tw.int64),
                                                       tw.TensorSpec([None], tw.float32)))
    out = items(ds)
    assert [int(a) for a, _ in out] == [0, 1, 2]
    assert [b.tolist() for _, b in out] == [[0.0], [1.0, 1.0], [2.0, 2.0, 2.0]]
    assert out[0][0].dtype == np.int64 and out[0][1].dtype == np.float32
    assert int(ds.cardinality()) == tw.data.UNKNOWN_CARDINALITY
    # every iteration calls the generator again
    assert len(items(ds)) == 3


def test_from_generator_args_and_output_types():
    ds = Dataset.from_generator(lambda n: iter(range(int(n))), output_types=tw.int32,
                                output_shapes=[], args=(4,))
    assert [int(v) for v in items(ds)] == [0, 1, 2, 3]


def test_from_generator_element_of_another_structure_or_shape_is_an_error():
    ds = Dataset.from_generator(lambda: iter([(1, 2), 3]),
                                output_signature=(tw.TensorSpec([], tw.int32),) * 2)
    it = ds.as_numpy_iterator()
    next(it)
    with pytest.raises(tw.errors.InvalidArgumentError, match="does not match the structure"):
        next(it)
    ds = Dataset.from_generator(lambda: iter([[1, 2], [1, 2, 3]]),
                                output_signature=tw.TensorSpec([2], tw.int32))
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"shape \[2\], got \[3\]"):
        items(ds)
    ds = Dataset.from_generator(lambda: iter([1.5]), output_signature=tw.TensorSpec([], tw.int32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="not i32"):
        items(ds)


def test_zip_tuple_and_dict_and_shortest():
    a, b = Dataset.range(5), Dataset.from_tensor_slices(np.arange(3.0) * 2)
    z = Dataset.zip(a, b)
    assert z.element_spec == (tw.TensorSpec([], tw.int64), tw.TensorSpec([], tw.float64))
    assert [(int(x), float(y)) for x, y in items(z)] == [(0, 0.0), (1, 2.0), (2, 4.0)]
    assert int(z.cardinality()) == 3
    d = Dataset.zip({"a": a, "pair": (b, a)})
    first = items(d)[1]
    assert int(first["a"]) == 1 and float(first["pair"][0]) == 2.0 and int(first["pair"][1]) == 1
    assert int(Dataset.zip((a, a.repeat())).cardinality()) == 5
    assert int(Dataset.zip((a.repeat(), a.repeat())).cardinality()) == tw.data.INFINITE_CARDINALITY


def test_concatenate_relaxes_shapes_and_checks_dtypes():
    a = Dataset.from_tensors(np.zeros(2, np.float32))
    b = Dataset.from_tensors(np.ones(3, np.float32))
    c = a.concatenate(b)
    assert c.element_spec == tw.TensorSpec([None], tw.float32)
    assert [v.tolist() for v in items(c)] == [[0, 0], [1, 1, 1]]
    assert int(c.cardinality()) == 2
    with pytest.raises(tw.errors.DTypeError, match="concatenate.*i64"):
        a.concatenate(Dataset.range(2))
    with pytest.raises(tw.errors.InvalidArgumentError, match="different structures"):
        a.concatenate(Dataset.zip(a, a))


def test_symbolic_tensors_are_refused():
    @tw.compile
    def f(x):
        Dataset.from_tensor_slices(x)
        return x
    with pytest.raises(tw.errors.InvalidArgumentError, match="symbolic tensor"):
        f(np.zeros(3, np.float32))


def test_for_inside_a_traced_function_is_an_error():
    ds = Dataset.range(3)

    @tw.compile
    def f(x):
        for _ in ds:
            pass
        return x
    with pytest.raises(tw.errors.TracingError, match="make_one_shot_iterator"):
        f(np.zeros(1))


def test_as_numpy_iterator_gives_numpy_scalars_and_arrays_as_tensorflow():
    out = list(Dataset.from_tensor_slices((np.arange(2.0), np.ones((2, 2), np.int32)))
               .as_numpy_iterator())
    assert isinstance(out[0][0], np.float64) and out[0][0] == 0.0
    assert isinstance(out[1][1], np.ndarray) and out[1][1].dtype == np.int32


@pytest.mark.parametrize("module", [tw.data, tw.data.experimental, tw.compat.v1.data])
def test_data_namespaces_list_documented_public_names(module):
    assert module.__doc__ and set(dir(module)) == set(module.__all__)
    for name in module.__all__:
        obj = getattr(module, name)
        assert (getattr(obj, "__doc__", None) or "").strip() or isinstance(obj, int), name
    assert int(tw.data.experimental.cardinality(Dataset.range(4))) == 4
