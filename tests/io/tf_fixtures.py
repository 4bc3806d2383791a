"""Reading tests/io/fixtures/tf_results.json (written by make_tf_fixtures.py under
TensorFlow 2.21): TensorFlow's results as NumPy arrays."""

import base64
import json
import os

import numpy as np

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def path(name: str) -> str:
    return os.path.join(FIXTURES, name)


def results() -> dict:
    with open(path("tf_results.json")) as f:
        return json.load(f)


def decode(entry: dict):
    """A fixture value as NumPy (strings as an object array of bytes), or a tuple of
    three for a SparseTensor."""
    if "sparse" in entry:
        return tuple(decode(e) for e in entry["sparse"])
    if entry["dtype"] == "string":
        out = np.empty(len(entry["values"]), object)
        out[:] = [base64.b64decode(v) for v in entry["values"]]
        return out.reshape(entry["shape"])
    return np.array(entry["values"], dtype=entry["dtype"]).reshape(entry["shape"])


def assert_same(got, expected) -> None:
    """`got` (a tw result) equals TensorFlow's `expected` in dtype, shape and values
    (NaN where NaN, bit for bit for floats)."""
    if isinstance(expected, tuple):
        for g, e in zip((got.indices, got.values, got.dense_shape), expected):
            assert_same(g, e)
        return
    g = np.asarray(got)
    assert g.dtype == expected.dtype, (g.dtype, expected.dtype)
    if g.dtype == object:  # (elements that are 0-d arrays would compare equal to bytes)
        assert all(type(x) is bytes for x in g.reshape(-1)), g
    assert g.shape == expected.shape, (g.shape, expected.shape)
    if g.dtype.kind == "f":  # bit for bit, NaN where NaN (its sign and payload aside)
        nan = np.isnan(g)
        assert np.array_equal(nan, np.isnan(expected)), (g, expected)
        bits = f"u{g.itemsize}"
        assert np.array_equal(g[~nan].view(bits), expected[~nan].view(bits)), (g, expected)
    else:
        assert np.array_equal(g, expected), (g, expected)
