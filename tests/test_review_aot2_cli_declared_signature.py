"""``--signature`` for a function that declares an ``input_signature`` was ignored:
tracing keeps to the declared types, so ``tensorweave aot m.py:f --signature 'x:f32[5]'``
of a function declaring ``f32[2]`` wrote a library (status 0, exit 0) whose header says
two floats, and ``dump`` printed the f32[2] graph for an i32 request. A --signature that
differs from the declared one is now a one-line error; the same one is accepted."""

from __future__ import annotations

import textwrap

import pytest

from tensorweave.cli import main

MODULE = textwrap.dedent("""
    import tensorweave as tw

    @tw.compile(input_signature=[tw.TensorSpec([2], tw.float32),
                                 tw.TensorSpec([None, 3], tw.int32)])
    def f(x, k):
        return x * 2, k + 1
""")


@pytest.fixture
def module(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(MODULE)
    return path


@pytest.mark.parametrize("command", ["dump", "aot"])
@pytest.mark.parametrize("signature, given", [
    ("x:f32[5],k:i32[?,3]", "x:f32[5],k:i32[?,3]"),
    ("f32[2],i64[?,3]", "x:f32[2],k:i64[?,3]"),
    ("x:f32[2],k:i32[4,3]", "x:f32[2],k:i32[4,3]")])
def test_a_signature_other_than_the_declared_one_is_an_error(module, tmp_path, capsys,
                                                             command, signature, given):
    out = ["-o", str(tmp_path / "out")] if command == "aot" else []
    code = main([command, f"{module}:f", *out, "--signature", signature])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (f"tensorweave: error: f() declares the input_signature "
                   f"x:f32[2],k:i32[?,3], but --signature gives {given}: leave --signature "
                   f"out, or change the input_signature\n")
    assert not (tmp_path / "out").exists()


def test_the_declared_signature_itself_is_accepted(module, capsys):
    code = main(["dump", f"{module}:f", "--stage", "traced", "--signature",
                 "x:f32[2],k:i32[?,3]"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "tensor<2xf32>" in out and "tensor<?x3xi32>" in out
