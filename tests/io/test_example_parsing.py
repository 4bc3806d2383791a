"""tw.io.parse_example / parse_single_example: equal to TensorFlow 2.21's results on the
Examples of tests/io/fixtures (written by TensorFlow's protobuf, and hand-made wire
encodings), to a direct reading of random Examples built with tw.train.Example, on the
reference and cpu targets, eagerly and compiled; errors name the key and the line."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import line_of
from tests.io.fixture_inputs import EXAMPLE_SPECS
from tests.io.tf_fixtures import assert_same, decode, path, results

DTYPES = {"float32": tw.float32, "int64": tw.int64, "string": tw.string}


def _spec(spec: dict) -> dict:
    out = {}
    for key, (kind, dtype, *rest) in spec.items():
        if kind == "fixed":
            default = rest[1] if len(rest) > 1 else None
            out[key] = tw.io.FixedLenFeature(rest[0], DTYPES[dtype], default_value=default)
        else:
            out[key] = tw.io.VarLenFeature(DTYPES[dtype])
    return out


def _serialized() -> list[bytes]:
    return list(tw.io.tf_record_iterator(path("examples.tfrecord")))


def _check(got_or_error, expected: dict) -> None:
    if "error" in expected:
        assert isinstance(got_or_error, Exception), got_or_error
        assert type(got_or_error).__name__ == expected["error"]
        # the key TensorFlow names is named (TF's wording of count errors differs)
        key = expected["message"].split("Key: ")[-1].split(",")[0].split(".")[0] \
            if "Key: " in expected["message"] else expected["message"].split("Feature: ")[1][0]
        assert key in str(got_or_error), (str(got_or_error), expected["message"])
        return
    assert not isinstance(got_or_error, Exception), got_or_error
    assert set(got_or_error) == set(expected)
    for k, v in expected.items():
        assert_same(got_or_error[k], decode(v))


def _parse(fn, serialized, spec):
    try:
        return fn(serialized, spec)
    except tw.errors.InvalidArgumentError as e:
        return e


@pytest.mark.parametrize("spec_name", sorted(EXAMPLE_SPECS))
def test_single_examples_equal_tensorflows(spec_name):
    serialized = _serialized()
    spec = _spec(EXAMPLE_SPECS[spec_name])
    cases = [c for c in results()["examples"] if c["spec"] == spec_name]
    for case in cases:
        if case["index"] == "batch":
            got = _parse(tw.io.parse_example, np.array(serialized[:6], object), spec)
        else:
            got = _parse(tw.io.parse_single_example, serialized[case["index"]], spec)
        _check(got, case["result"])


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_compiled_parsing_equals_tensorflows_on_both_targets(target):
    serialized = _serialized()
    spec = _spec(EXAMPLE_SPECS["sparse"])

    @tw.compile(target=target)
    def parse(batch):
        d = tw.io.parse_example(batch, spec)
        return d["f"], d["i"], d["s"], tw.sparse.reduce_sum(d["f"]) * 2.0

    (case,) = [c for c in results()["examples"] if c["spec"] == "sparse" and c["index"] == "batch"]
    with pytest.raises(tw.errors.InvalidArgumentError, match="Key: i, Index: 4"):
        parse(np.array(serialized[:6], object))
    ok = [c for c in results()["examples"] if c["spec"] == "sparse" and c["index"] == 0]
    f, i, s, total = parse(np.array(serialized[:1], object))
    expected = ok[0]["result"]
    for got, key in ((f, "f"), (i, "i"), (s, "s")):
        e = decode(expected[key])
        # batched: the single example's rank-1 indices get a leading example index 0
        assert_same(got.values, e[1])
        np.testing.assert_array_equal(np.asarray(got.indices)[:, 1], e[0][:, 0])
        assert np.asarray(got.dense_shape).tolist() == [1, *e[2].tolist()]
    assert total == np.float32(2 * sum(decode(expected["f"])[1]))
    assert case["result"]["error"] == "InvalidArgumentError"


def test_the_cpu_target_runs_the_parse_on_the_host_and_says_why():
    fn = tw.compile(lambda s: tw.io.parse_single_example(
        s, {"x": tw.io.FixedLenFeature([2], tw.float32)})["x"] * 3.0, target="cpu")
    ex = tw.train.Example()
    ex.features.feature["x"].float_list.value.extend([1.0, 2.0])
    np.testing.assert_array_equal(fn(ex.SerializeToString()), np.float32([3.0, 6.0]))
    exe = fn.get_concrete_function(tw.TensorSpec([], tw.string)).executable
    assert exe.native_step([np.array(ex.SerializeToString(), object)]) is None
    assert "string tensor" in exe.native_reason


_VALUE = {"float": st.floats(width=32, allow_nan=False), "int64": st.integers(-2**63, 2**63 - 1),
          "bytes": st.binary(max_size=5)}


@st.composite
def _examples(draw):
    kinds = draw(st.fixed_dictionaries({"a": st.sampled_from(["float", "int64", "bytes"]),
                                        "b": st.sampled_from(["float", "int64", "bytes"])}))
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        row = {}
        for key, kind in kinds.items():
            if draw(st.booleans()):
                row[key] = draw(st.lists(_VALUE[kind], max_size=4))
        rows.append(row)
    return kinds, rows


def _build(row: dict, kinds: dict) -> bytes:
    ex = tw.train.Example()
    for key, values in row.items():
        feature = ex.features.feature[key]
        lst = {"float": feature.float_list, "int64": feature.int64_list,
               "bytes": feature.bytes_list}[kinds[key]]
        lst.value.extend(values)
    return ex.SerializeToString()


@settings(max_examples=40, deadline=None)
@given(_examples())
def test_random_examples_parse_to_their_values(example):
    kinds, rows = example
    dtype = {"float": tw.float32, "int64": tw.int64, "bytes": tw.string}
    serialized = np.empty(len(rows), object)
    serialized[:] = [_build(r, kinds) for r in rows]
    got = tw.io.parse_example(serialized, {k: tw.io.VarLenFeature(dtype[v])
                                           for k, v in kinds.items()})
    for key, kind in kinds.items():
        sp = got[key]
        per_row = [r.get(key, []) for r in rows]
        values = [v for r in per_row for v in r]
        if kind != "bytes":  # (bytes stay a list: NumPy's 'S' arrays drop trailing NULs)
            values = np.array(values, dtype[kind].np).tolist()
        assert np.asarray(sp.values).tolist() == values
        expected_indices = [[i, j] for i, r in enumerate(per_row) for j in range(len(r))]
        assert np.asarray(sp.indices).reshape(-1, 2).tolist() == expected_indices
        width = max((len(r) for r in per_row), default=0)
        assert np.asarray(sp.dense_shape).tolist() == [len(rows), width]
    dense = {k: tw.io.FixedLenFeature([1], dtype[v], default_value=[{"float": 0.5, "int64": -1,
                                                                        "bytes": b"d"}[v]])
             for k, v in kinds.items()}
    if all(len(r.get(k, [0])) == 1 for r in rows for k in kinds):
        got = tw.io.parse_example(serialized, dense)
        for key, kind in kinds.items():
            col = [r.get(key, [{"float": 0.5, "int64": -1, "bytes": b"d"}[kind]])[0] for r in rows]
            if kind == "float":
                col = np.array(col, np.float32).tolist()
            assert np.asarray(got[key]).reshape(-1).tolist() == col


def test_errors_name_the_key_the_function_and_the_line():
    ex = tw.train.Example()
    ex.features.feature["x"].float_list.value.extend([1.0, 2.0, 3.0])
    s = ex.SerializeToString()
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        tw.io.parse_single_example(s, {"x": tw.io.FixedLenFeature([2], tw.float32)})
    msg = str(err.value)
    assert "Key: x" in msg and "Values size: 3 but output shape: [2]" in msg
    assert line_of(test_errors_name_the_key_the_function_and_the_line, "FixedLenFeature([2]") \
        in msg
    with pytest.raises(tw.errors.InvalidArgumentError, match="Feature: y .* is required"):
        tw.io.parse_single_example(s, {"y": tw.io.FixedLenFeature([], tw.int64)})
    with pytest.raises(tw.errors.DTypeError, match="float32, int64 or string"):
        tw.io.parse_single_example(s, {"x": tw.io.FixedLenFeature([3], tw.float64)})
    with pytest.raises(tw.errors.ShapeError, match="needs every dim"):
        tw.io.parse_single_example(s, {"x": tw.io.FixedLenFeature([None], tw.float32)})
    with pytest.raises(tw.errors.ShapeError, match="has 1 values, its shape \\[2\\] needs 2"):
        tw.io.parse_single_example(s, {"z": tw.io.FixedLenFeature([2], tw.float32, 1.5)})
    with pytest.raises(tw.errors.ShapeError, match="must be a scalar"):
        tw.io.parse_single_example([s], {"x": tw.io.VarLenFeature(tw.float32)})
    with pytest.raises(tw.errors.InvalidArgumentError, match="Could not parse example input"):
        tw.io.parse_single_example(b"\x0a\x05\x01", {"x": tw.io.VarLenFeature(tw.float32)})
    with pytest.raises(tw.errors.DTypeError, match="serialized must be a string tensor"):
        tw.io.parse_example(np.zeros(2), {"x": tw.io.VarLenFeature(tw.float32)})


def test_wire_details_follow_protobuf():
    from tests.io.fixture_inputs import _example, _field, _varint
    ints = _field(3, _field(1, b"".join(_varint(v) for v in [0, 1, -1, 2**63 - 1, -2**63]
                                        + list(range(300, 400)))))
    got = tw.io.parse_single_example(_example([(b"k", ints)]), {"k": tw.io.VarLenFeature(tw.int64)})
    assert np.asarray(got["k"].values).tolist() == [0, 1, -1, 2**63 - 1, -2**63] + list(range(300, 400))
    too_long = _field(3, _field(1, b"\xff" * 10 + b"\x01"))
    with pytest.raises(tw.errors.InvalidArgumentError, match="longer than ten bytes"):
        tw.io.parse_single_example(_example([(b"k", too_long)]), {"k": tw.io.VarLenFeature(tw.int64)})
    odd = _field(2, _field(1, b"\x00\x00\x80\x3f\x00"))
    with pytest.raises(tw.errors.InvalidArgumentError, match="multiple of 4"):
        tw.io.parse_single_example(_example([(b"k", odd)]), {"k": tw.io.VarLenFeature(tw.float32)})
    unknown = _example([(b"k", _field(2, _field(1, b"\x00\x00\x80\x3f")))]) + _varint(9 << 3) + b"\x01"
    got = tw.io.parse_single_example(unknown, {"k": tw.io.FixedLenFeature([1], tw.float32)})
    assert np.asarray(got["k"]).tolist() == [1.0]
    assert math.isclose(float(np.asarray(got["k"])[0]), 1.0)
