"""The ``tensorweave`` command line: dump at every stage, signatures, errors."""

import subprocess
import sys

import pytest

from tensorweave.cli import main
from tensorweave.compiler.equality import graph_diff
from tensorweave.compiler.parser import parse_graph
from tensorweave.compiler.pipeline import stage_names

EXAMPLE = "examples/softmax_regression.py"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_stages(capsys):
    code, out, _ = run(capsys, "dump", "--list-stages")
    assert code == 0
    assert out.split() == stage_names()
    assert out.split()[:2] == ["traced", "optimized"]


@pytest.mark.parametrize("stage", stage_names())
def test_training_step_dumps_at_every_stage_and_parses_back(capsys, stage):
    code, out, err = run(capsys, "dump", f"{EXAMPLE}:train_step", "--stage", stage)
    assert code == 0, err
    assert out.startswith("func.func @train_step(")
    for op in ("tw.MatMul", "tw.Softmax", "tw.AssignSubVariable"):  # forward, grads, updates
        assert op in out
    graph = parse_graph(out)
    reprinted = main(["dump", "--stage", "traced", str(_write(out))])
    assert reprinted == 0
    again = capsys.readouterr().out
    assert graph_diff(graph, parse_graph(again)) is None


def _write(text, _counter=[0]):
    import tempfile
    _counter[0] += 1
    path = tempfile.mktemp(suffix=".mlir")
    with open(path, "w") as f:
        f.write(text)
    return path


def test_signature_for_a_function_without_one(tmp_path, capsys):
    src = tmp_path / "m.py"
    src.write_text("import tensorweave as tw\n\n@tw.compile\ndef f(x, w):\n"
                   "    return tw.nn.relu(x @ w)\n")
    code, out, err = run(capsys, "dump", f"{src}:f", "--signature", "x:f32[?,784]",
                         "w:f32[784,10]")
    assert code == 0, err
    assert "tensor<?x784xf32>" in out and "tensor<?x10xf32>" in out
    code, _, err = run(capsys, "dump", f"{src}:f")
    assert code == 2 and "declares no input_signature: pass --signature" in err


@pytest.mark.parametrize("argv,message", [
    (["dump", "examples/no_such_file.py:f"], "no such file: examples/no_such_file.py"),
    (["dump", f"{EXAMPLE}:nothing"], "has no function 'nothing' (it defines: main, predict, "
                                     "train_step)"),
    (["dump", f"{EXAMPLE}:train_step", "--stage", "bogus"], "unknown stage 'bogus'"),
    (["dump", f"{EXAMPLE}:predict", "--signature", "x:f32[?,oops]"], "bad dimension 'oops'"),
    (["dump", f"{EXAMPLE}:predict", "--signature", "x=f32"], "bad --signature entry"),
    (["dump", f"{EXAMPLE}:predict", "--signature", "z:f32[1]"], "--signature names z"),
    (["dump"], "dump needs FILE.py:FUNCTION"),
])
def test_user_errors_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert message in err
    assert err.count("\n") == 1 and err.startswith("tensorweave: error: ")


def test_malformed_ir_file_reports_line_and_column(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text('func.func @f(%x: tensor<2xf32>) -> (tensor<2xf32>) {\n'
                   '  %y = "tw.Nope"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n'
                   '  "func.return"(%y) : (tensor<2xf32>) -> ()\n}\n')
    code, _, err = run(capsys, "dump", str(bad))
    assert code == 1
    assert f"{bad}:2:" in err and "Nope" in err
    assert err.count("\n") == 1


def test_shape_error_in_traced_function_names_op_and_line(tmp_path, capsys):
    src = tmp_path / "shapes.py"
    src.write_text("import tensorweave as tw\n\n"
                   "@tw.compile(input_signature=[tw.TensorSpec([2, 3], tw.float32)])\n"
                   "def f(x):\n    return x @ x\n")
    code, _, err = run(capsys, "dump", f"{src}:f")
    assert code == 1
    assert "MatMul" in err and f"{src}:5" in err and "f32[2,3]" in err


def test_console_script_help():
    out = subprocess.run([sys.executable, "-m", "tensorweave.cli", "dump", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "--stage" in out and "--list-stages" in out and "--signature" in out



def test_profile_prints_the_ops_table_and_writes_a_trace(tmp_path, capsys):
    import json
    from pathlib import Path
    example = Path(__file__).resolve().parent.parent / "examples" / "softmax_regression.py"
    status = main(["profile", f"{example}:train_step", "--steps", "3", "--batch", "8",
                   "--logdir", str(tmp_path / "prof")])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "3 steps of" in out and "MatMul" in out and "total ms" in out
    trace = json.loads((tmp_path / "prof" / "trace.json").read_text())
    assert any(e["ph"] == "X" and e["name"] == "MatMul" for e in trace["traceEvents"])
