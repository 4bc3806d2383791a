"""tw.io.decode_raw and tw.io.decode_csv: TensorFlow 2.21's results and messages on the
cases of tests/io/fixture_inputs.py, NumPy's bytes for random arrays, Python's own
formatting read back exactly (float32 rounded once), on both targets."""

import struct
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tensorweave.io.decoding import _to_float32
from tests.helpers import line_of
from tests.io.fixture_inputs import CSV_CASES, RAW_CASES
from tests.io.tf_fixtures import assert_same, decode, results

DTYPES = {"float32": tw.float32, "float64": tw.float64, "int32": tw.int32, "int64": tw.int64,
          "string": tw.string}


@pytest.mark.parametrize("index", range(len(CSV_CASES)))
def test_decode_csv_equals_tensorflow(index):
    records, defaults, kwargs = CSV_CASES[index]
    expected = results()["csv"][index]
    tw_defaults = [tw.constant(np.array(v, DTYPES[d].np) if d != "string" else
                               np.array([x.encode() for x in v], object).reshape(len(v)))
                   for d, v in defaults]
    try:
        got = tw.io.decode_csv(records, tw_defaults, **kwargs)
    except tw.errors.InvalidArgumentError as e:
        assert isinstance(expected, dict), f"TensorFlow gave {expected}, tensorweave: {e}"
        assert expected["message"] in str(e)
        return
    assert isinstance(expected, list), f"TensorFlow failed: {expected}"
    for g, e in zip(got, expected):
        assert_same(g, decode(e))


@pytest.mark.parametrize("index", range(len(RAW_CASES)))
def test_decode_raw_equals_tensorflow(index):
    data, dtype, kwargs = RAW_CASES[index]
    expected = results()["raw"][index]
    try:
        got = tw.io.decode_raw(data, getattr(tw, dtype if dtype != "bool" else "bool_"), **kwargs)
    except tw.errors.InvalidArgumentError as e:
        assert isinstance(expected, dict), f"TensorFlow gave {expected}, tensorweave: {e}"
        # (tensorweave names the sizes the right way round: element 1's, then element 0's)
        assert expected["message"].split(", but")[0] in str(e)
        return
    assert_same(got, decode(expected))


RAW_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
              np.uint8]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(RAW_DTYPES), st.booleans(), st.integers(0, 3), st.integers(0, 4),
       st.data())
def test_decode_raw_reads_numpys_bytes(dtype, little, rows, width, data):
    arr = data.draw(hnp.arrays(dtype, (rows, width)))
    order = "<" if little else ">"
    strings = np.empty(rows, object)
    strings[:] = [row.astype(np.dtype(dtype).newbyteorder(order)).tobytes() for row in arr]
    for target in ("reference", "cpu"):
        got = tw.compile(lambda s: tw.io.decode_raw(s, tw.as_dtype(dtype), little_endian=little),
                         target=target)(strings)
        # (no strings tell no length: TensorFlow's [0, 0] too)
        assert got.dtype == dtype and got.shape == (rows, width if rows else 0)
        assert got.tobytes() == arr.tobytes()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1),
                          st.floats(allow_nan=False), st.floats(width=32, allow_nan=False),
                          # (no lone surrogates: a record is UTF-8 text, and Python
                          # cannot encode '\ud800', the test's own encode() failed)
                          st.text(alphabet=st.characters(blacklist_characters='",\r\n',
                                                         blacklist_categories=("Cs",)),
                                  max_size=4)),
                max_size=5))
def test_decode_csv_reads_back_what_python_writes(rows):
    records = [f"{a},{b},{c!r},{d!r},{e}" for a, b, c, d, e in rows]
    defaults = [[0], tw.constant([0], tw.int64), tw.constant([0.0], tw.float64), [0.0], [""]]
    got = tw.io.decode_csv(np.array([r.encode() for r in records] or [b"0,0,0,0,x"],
                                    object)[:len(records)], defaults)
    for col, (g, dtype) in enumerate(zip(got, [np.int32, np.int64, np.float64, np.float32])):
        expected = np.array([row[col] for row in rows], dtype)
        assert np.asarray(g).dtype == dtype
        np.testing.assert_array_equal(np.asarray(g), expected)
    strings = [row[4] for row in rows]
    assert np.asarray(got[4]).tolist() == [s.encode() if s else b"" for s in strings]


def test_float32_is_rounded_once_from_the_decimal():
    # 1 + 2**-24 (a float32 midpoint) plus a little: the double nearest it is the midpoint,
    # which NumPy rounds to even (1.0); the decimal is above it, so float32 is 1 + 2**-23
    text = "1.00000005960464477550"
    assert float(text) == 1 + 2**-24 and np.float32(float(text)) == 1.0
    assert _to_float32(text, float(text)) == np.float32(1 + 2**-23)
    below = str(Decimal(1 + 2**-24) - Decimal("1e-30"))
    assert _to_float32(below, float(below)) == 1.0
    got = tw.io.decode_csv([text], [[0.0]])[0]
    assert np.asarray(got).tolist() == [np.float32(1 + 2**-23)]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(-40, 40))
def test_float32_rounding_matches_exact_arithmetic(bits, exponent):
    f = struct.unpack("<f", struct.pack("<I", bits))[0]
    if not np.isfinite(f):
        return
    text = f"{Decimal(f) * Decimal(10) ** exponent:.30e}"
    exact = Decimal(text)
    got = _to_float32(text, float(text))
    if not np.isfinite(got):
        return
    lo, hi = np.nextafter(got, np.float32(-np.inf)), np.nextafter(got, np.float32(np.inf))
    # no float32 neighbour of the result is nearer the decimal
    for n in (lo, hi):
        if np.isfinite(n):
            assert abs(Decimal(float(got)) - exact) <= abs(Decimal(float(n)) - exact)


def test_errors_name_the_function_and_line():
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        tw.io.decode_csv(["1,2"], [[0]])
    assert "Expect 1 fields but have 2 in record 0" in str(err.value)
    assert line_of(test_errors_name_the_function_and_line, '["1,2"]') in str(err.value)
    with pytest.raises(tw.errors.InvalidArgumentError, match="empty list"):
        tw.io.decode_csv(["1"], [[]])
    with pytest.raises(tw.errors.DTypeError, match="record_defaults\\[0\\] has dtype bool"):
        tw.io.decode_csv(["1"], [[True]])
    with pytest.raises(tw.errors.ShapeError, match="only be 1 default per field"):
        tw.io.decode_csv(["1"], [[1, 2]])
    with pytest.raises(tw.errors.DTypeError, match="records must be a string tensor"):
        tw.io.decode_csv(np.zeros(2), [[0]])
    with pytest.raises(tw.errors.DTypeError, match="out_type"):
        tw.io.decode_raw(b"ab", tw.string)
