"""Every tiny depthwise convolution that LLVM's O2 pipeline (loop unroller off) got wrong,
checked at the default pipeline level against the loop reference.

An exhaustive grid (batch 2, one channel, H and W 1-3, filters 1-2 x 1-2, strides 1-2,
bottom/right padding 0-2: 1156 cases) found these 20 wrong at O2 and none at O3; the
cause is an LLVM InstCombine bug (docs/llvm_o2_miscompile.md). All have a 2x1 filter and
an output column wholly in the padding."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.ops.test_nn_extra import depthwise_ref

# (H, W, filter rows, filter cols, stride H, stride W, bottom padding, right padding)
WRONG_AT_O2 = [
    (2, 1, 2, 1, 1, 1, 0, 1), (2, 1, 2, 1, 1, 2, 0, 2), (2, 1, 2, 1, 2, 1, 0, 1),
    (2, 1, 2, 1, 2, 1, 1, 1), (2, 1, 2, 1, 2, 2, 0, 2), (2, 1, 2, 1, 2, 2, 1, 2),
    (2, 2, 2, 1, 1, 2, 0, 1), (2, 2, 2, 1, 1, 2, 0, 2), (2, 2, 2, 1, 2, 2, 0, 1),
    (2, 2, 2, 1, 2, 2, 0, 2), (2, 2, 2, 1, 2, 2, 1, 1), (2, 2, 2, 1, 2, 2, 1, 2),
    (3, 1, 2, 1, 1, 1, 0, 1), (3, 1, 2, 1, 1, 2, 0, 2), (3, 1, 2, 1, 2, 1, 0, 1),
    (3, 1, 2, 1, 2, 2, 0, 2), (3, 2, 2, 1, 1, 2, 0, 1), (3, 2, 2, 1, 1, 2, 0, 2),
    (3, 2, 2, 1, 2, 2, 0, 1), (3, 2, 2, 1, 2, 2, 0, 2),
]


def check_case(case, monkeypatch, opt_level: str | None) -> None:
    """Compile one WRONG_AT_O2 case on the cpu target at `opt_level` (None: the default)
    and compare with the loop reference."""
    h, w, kh, kw, sh, sw, ph, pw = case
    if opt_level is None:
        monkeypatch.delenv("TW_LLVM_OPT", raising=False)
    else:
        monkeypatch.setenv("TW_LLVM_OPT", opt_level)  # (the JIT's cache keys name the level)
    r = np.random.default_rng(h * 100 + w * 10 + sh)
    x = r.uniform(-1, 1, (2, h, w, 1)).astype(np.float32)
    f = r.uniform(-1, 1, (kh, kw, 1, 1)).astype(np.float32)
    pads = [[0, ph], [0, pw]]

    def conv(a, b):
        return tw.nn.depthwise_conv2d(a, b, [1, sh, sw, 1], [[0, 0], *pads, [0, 0]])

    got = np.asarray(tw.compile(conv, target="cpu")(x, f))
    np.testing.assert_allclose(got, depthwise_ref(x, f, (sh, sw), (1, 1), pads),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", WRONG_AT_O2)
def test_depthwise_case_o2_got_wrong_is_right_at_the_default_level(case, monkeypatch):
    check_case(case, monkeypatch, None)
