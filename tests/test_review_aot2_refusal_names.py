"""An ahead-of-time build of ``x * 2 + 1`` on an empty ``f32[0, 3]`` was refused with
"no native lowering for Fusion": true of no op the user wrote (an empty fused loop is left
to the reference kernels, which raise the errors of ops whose operands are not empty, and
a library cannot call them). The refusal now names the fused ops and the empty result."""

from __future__ import annotations

import pytest

import tensorweave as tw
from tensorweave.errors import UnimplementedError
from tensorweave.targets.cpu.aot import build_library


def test_an_empty_fused_cluster_is_named_by_its_ops(tmp_path):
    f = tw.compile(lambda x: x * 2.0 + 1.0, input_signature=[tw.TensorSpec([0, 3], tw.float32)])
    with pytest.raises(UnimplementedError) as err:
        build_library(f.get_concrete_function(), str(tmp_path), name="empty")
    assert str(err.value).endswith("no native lowering for Fusion (of Add, Mul, whose result "
                                   "f32[0,3] is empty)")
