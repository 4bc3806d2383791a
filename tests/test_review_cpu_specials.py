"""Review of the cpu target's vector code on NaN, +-inf and out-of-range values: what it
gives must be what the reference target (NumPy) gives.

- Max/Min and their reductions, ArgMax/ArgMin, Relu, Clip, Sort and TopK with NaN in
  any lane position of a vector and of its scalar remainder (x86's vector max drops a
  NaN in one operand order; the cpu target compares explicitly);
- float-to-integer casts of NaN, +-inf and values out of the integer's range: undefined
  in C and LLVM (poison); the cpu target gives what x86, and so NumPy, gives (the
  integer's minimum for int32 and int64, NumPy's results for the narrower types), never
  poison, so results do not depend on the optimizer."""

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.frontend import nest

SIZES = (1, 3, 8, 9, 17, 33)  # one lane, remainders, whole vectors of 8 and 16


def _both(fn, *args):
    want = tw.compile(fn, target="reference")(*args)
    got = tw.compile(fn, target="cpu")(*args)
    return [np.asarray(g) for g in nest.flatten(got)[0]], \
        [np.asarray(w) for w in nest.flatten(want)[0]]


def _same(got, want) -> None:
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)  # (NaNs at the same places)


FNS = {
    "maximum": lambda x: tw.maximum(x, x[::-1] * 0.5),
    "minimum": lambda x: tw.minimum(x[::-1] * 0.5, x),
    "reduce_max": lambda x: tw.reduce_max(x, axis=-1),
    "reduce_min": lambda x: tw.reduce_min(x, axis=0),
    "argmax": lambda x: tw.argmax(x, axis=-1),
    "argmin": lambda x: tw.argmin(x, axis=0),
    "relu": tw.nn.relu,
    "clip": lambda x: tw.clip_by_value(x, -1.0, 1.0),
    "sort": lambda x: tw.sort(x, axis=-1),
    "top_k": lambda x: tw.math.top_k(x, k=1),
}


@pytest.mark.parametrize("name", sorted(FNS))
@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
def test_a_special_value_in_each_lane_position(name, special) -> None:
    fn = FNS[name]
    for dtype in (np.float32, np.float64):
        for n in SIZES:
            for pos in sorted({0, n // 2, n - 1}):
                x = np.linspace(-2, 2, 2 * n).reshape(2, n).astype(dtype)
                x[0, pos] = special
                _same(*_both(fn, x))


def test_float_to_int_casts_of_nan_inf_and_out_of_range_values() -> None:
    values = [np.nan, np.inf, -np.inf, 3e9, -3e9, 1e20, -1e20, 255.9, 256.0, -129.0,
              2.5, -2.5]
    for src in (np.float32, np.float64):
        x = np.array(values, src)
        for dst in ("int8", "uint8", "int16", "int32", "int64"):
            got, want = _both(lambda a, d=dst: tw.cast(a * 1.0, d), x)
            _same(got, want)
            if dst in ("int32", "int64"):  # x86's "integer indefinite"
                lowest = np.iinfo(dst).min
                assert (got[0][:3] == lowest).all()
            if dst != "uint8":  # in range: truncation toward zero
                assert got[0][-2:].tolist() == [2, -2]
