"""Two different variables at the same checkpoint path (a dict key with a '/' in it, or
keys 0 and "0") must be an error naming the path: the second was silently left out of
the checkpoint, and a restore then passed `assert_consumed` leaving its value as it was."""

import numpy as np
import pytest

import tensorweave as tw


class _Params(tw.Module):
    def __init__(self):
        super().__init__()
        self.params = {"dense/kernel": tw.Variable(1.0, name="flat_kernel"),
                       "dense": {"kernel": tw.Variable(2.0, name="nested_kernel")}}


def test_two_variables_at_one_path_are_an_error(tmp_path):
    ckpt = tw.train.Checkpoint(model=_Params())
    with pytest.raises(ValueError, match="model/params/dense/kernel"):
        ckpt.save(str(tmp_path / "c"))
    with pytest.raises(ValueError, match="a/0"):
        tw.train.Checkpoint(a={"0": tw.Variable(7.0), 0: tw.Variable(8.0)}).save(
            str(tmp_path / "d"))


def test_one_variable_at_two_paths_still_saves_and_restores(tmp_path):
    v = tw.Variable(np.arange(3.0), name="shared")
    ckpt = tw.train.Checkpoint(first=v, second={"again": v})
    path = ckpt.save(str(tmp_path / "c"))
    v.assign(np.zeros(3))
    ckpt.restore(path).assert_consumed()
    np.testing.assert_array_equal(v.numpy(), np.arange(3.0))
