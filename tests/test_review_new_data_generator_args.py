"""Review of tw.data against TensorFlow 2.21: ``from_generator(args=...)`` converts the
arguments as tensors (Python numbers to int32 / float32, as every tw.data source does)
and hands 0-d ones to the generator as NumPy scalars.

TensorFlow 2.21, same program: ``g(scale, n)`` yielding ``i * scale`` for i in 1..3 and
then ``n * 2**20`` with ``args=(0.1, 3000)`` into float64 gave 0.10000000149011612,
0.20000000298023224, 0.30000001192092896 (a float32 0.1) and -1149239296.0 (int32
arithmetic wraps); the generator saw ``np.int32`` / ``np.float32`` scalars and an int32
array for ``[1, 2]``. tensorweave passed float64 / int64 0-d arrays: 0.1, 0.2,
0.30000000000000004 and 3145728000.0."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
from tensorweave.data import Dataset


def test_python_number_args_are_int32_and_float32_scalars():
    seen = []

    def gen(a, b, c, d):
        seen.append((a, b, c, d))
        yield 1

    ds = Dataset.from_generator(gen, output_types=tw.int32, output_shapes=[],
                                args=(3, 2.0, [1, 2], np.float64(0.5)))
    list(ds.as_numpy_iterator())
    a, b, c, d = seen[0]
    assert type(a) is np.int32 and a == 3
    assert type(b) is np.float32 and b == 2.0
    assert isinstance(c, np.ndarray) and c.dtype == np.int32 and c.tolist() == [1, 2]
    assert type(d) is np.float64 and d == 0.5  # NumPy values keep their dtype


def test_generator_arithmetic_on_args_matches_tensorflow():
    def gen(scale, n):
        for i in range(1, 4):
            yield i * scale
        yield n * 2 ** 20

    ds = Dataset.from_generator(gen, output_signature=tw.TensorSpec([], tw.float64),
                                args=(0.1, 3000))
    with np.errstate(over="ignore"):
        out = [float(v) for v in ds.as_numpy_iterator()]
    assert out == [0.10000000149011612, 0.20000000298023224, 0.30000001192092896,
                   -1149239296.0]


def test_string_args_reach_the_generator():
    ds = Dataset.from_generator(lambda name: iter([len(name)]), output_types=tw.int32,
                                output_shapes=[], args=("abcd",))
    assert [int(v) for v in ds.as_numpy_iterator()] == [4]
