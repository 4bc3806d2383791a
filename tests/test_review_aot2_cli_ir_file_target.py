"""``tensorweave dump FILE.mlir --target T`` ran the default pipeline (every target's
stages) and ignored ``--target``: an IR file dumped with ``--target reference`` printed the
cpu target's ``tw.Fusion`` nodes, which the reference target never builds, and
``--format dot`` drew them too. The IR file path now runs the stages of the target asked
for, as ``FILE.py:FN --target T`` does."""

from __future__ import annotations

import textwrap

import pytest

from tensorweave.cli import main

MODULE = textwrap.dedent("""
    import tensorweave as tw

    @tw.compile(input_signature=[tw.TensorSpec([2], tw.float32)])
    def f(x):
        return tw.exp(x) * 2 + 1
""")


def _dump(capsys, *argv) -> str:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.mark.parametrize("target", ["reference", "cpu", "gpu"])
@pytest.mark.parametrize("fmt", ["mlir", "dot"])
def test_an_ir_file_runs_the_stages_of_the_target_asked_for(tmp_path, capsys, target, fmt):
    src = tmp_path / "m.py"
    src.write_text(MODULE)
    ir_file = tmp_path / "f.mlir"
    ir_file.write_text(_dump(capsys, "dump", f"{src}:f", "--stage", "traced"))
    from_python = _dump(capsys, "dump", f"{src}:f", "--target", target, "--format", fmt)
    from_text = _dump(capsys, "dump", ir_file, "--target", target, "--format", fmt)
    assert from_text == from_python
    assert ("Fusion" in from_text) == (target != "reference")
