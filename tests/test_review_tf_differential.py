"""tensorweave against TensorFlow 2.21's own results and gradients, recorded.

`tools/tf_differential.py` runs the cases of `tests/tf_differential_cases.py` in
TensorFlow 2.21 and in tensorweave and prints every difference (docs/api.md, "Against
TensorFlow 2.21: the differential run"). TensorFlow is not a dependency, so the files in
`tests/data/tf_differential/` keep what it recorded for some draws: the arguments, the
results, the weights W of the scalar ``sum(out * W)`` and TensorFlow's float64 gradients
of it (or the error TensorFlow raised). Each draw is replayed here and must agree: dtype,
shape, values (NaN where NaN, signs of zeros in results), gradients, errors.

- ``regressions.npz``: the draws that showed the bugs the run found (float floordiv and
  floormod, in_top_k with a non-finite prediction, polygamma of even order at a pole, the
  gradient of reduce_prod at inf and past overflow, histogram_fixed_width of NaN);
  eagerly and compiled on the reference and cpu targets. Each failed before its fix.
- ``sample.npz``: one draw of every case with small shapes (250 functions and variants of
  tw.math, tw.nn, tw.linalg and the array ops, with gradients where the case has them),
  eagerly and on the reference target; ``sample_cpu.npz``: larger shapes (the cpu
  target's vector loops and their remainders) of 26 of the ``big.*`` cases, on the cpu
  target.

Re-recording (TensorFlow's Python, then tensorweave's):
    tools/tf_differential.py record DIR; tools/tf_differential.py pack DIR FILE CASE[:KEYS] ...
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tensorweave as tw
from tests import tf_differential_cases as cases

FIXTURES = Path(__file__).parent / "data" / "tf_differential"
REGRESSIONS = cases.read_draws(FIXTURES / "regressions.npz")
SAMPLE = cases.read_draws(FIXTURES / "sample.npz")
SAMPLE_CPU = cases.read_draws(FIXTURES / "sample_cpu.npz")


def _ids(draws: dict) -> list[str]:
    return [f"{case}[{key}]" for case, key in draws]


def _check(draws: dict, ident: tuple[str, str], mode: str) -> None:
    draw = draws[ident]
    assert draw["meta"]["tf_version"] == "2.21.0"
    found = cases.compare_draw(tw, cases.CASES[ident[0]], draw, mode)
    assert not found, f"{ident[0]} {mode}: " + " | ".join(found)


@pytest.mark.parametrize("mode", ["eager", "reference", "cpu"])
@pytest.mark.parametrize("ident", list(REGRESSIONS), ids=_ids(REGRESSIONS))
def test_regressions_agree_with_tensorflow(ident, mode):
    _check(REGRESSIONS, ident, mode)


@pytest.mark.parametrize("mode", ["eager", "reference"])
@pytest.mark.parametrize("ident", list(SAMPLE), ids=_ids(SAMPLE))
def test_sample_agrees_with_tensorflow(ident, mode):
    _check(SAMPLE, ident, mode)


@pytest.mark.parametrize("ident", list(SAMPLE_CPU), ids=_ids(SAMPLE_CPU))
def test_larger_shapes_agree_with_tensorflow_on_cpu(ident):
    _check(SAMPLE_CPU, ident, "cpu")


def test_fixtures_cover_the_cases():
    # every case with small shapes has a draw in the sample, so one added later is recorded
    assert {case for case, _ in SAMPLE} == {c for c in cases.CASES if not c.startswith("big.")}
    assert {case for case, _ in SAMPLE_CPU} <= set(cases.CASES)
    assert len(REGRESSIONS) >= 15 and len(SAMPLE_CPU) >= 20


def test_a_difference_is_reported():
    # the comparison can fail: a result one ulp off in float64 beyond the tolerance, a
    # changed sign of zero, a missing NaN, and an error only one side raises
    ident = next(i for i in REGRESSIONS if i[0] == "regress.floordiv_floormod")
    draw = REGRESSIONS[ident]
    tampered = dict(draw, outs=[o.copy() for o in draw["outs"]])
    tampered["outs"][0][0] += 1.0
    found = cases.compare_draw(tw, cases.CASES[ident[0]], tampered, "reference")
    assert found and "out0" in found[0]
    zero = dict(draw, outs=[o.copy() for o in draw["outs"]])
    at = [i for i, v in enumerate(zero["outs"][1]) if v == 0][0]
    zero["outs"][1][at] = -zero["outs"][1][at]
    assert any("signed zero" in f for f in cases.compare_draw(tw, cases.CASES[ident[0]], zero,
                                                              "reference"))
    raised = dict(draw, meta=dict(draw["meta"], error="InvalidArgumentError: x"))
    assert cases.compare_draw(tw, cases.CASES[ident[0]], raised, "reference") == [
        "TF raises, tw does not: TF InvalidArgumentError: x"]
