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


# ---------------------------------------------------------------- signatures, FILE.py alone
# (issue 14: several entries in one --signature string; `dump FILE.py` names the functions)

def test_signature_entries_in_one_string_or_several():
    from tensorweave.cli import parse_signature
    one = parse_signature(["x:f32[1,784],w:f32[784,10]"])
    several = parse_signature(["x:f32[1,784]", "w:f32[784,10]"])
    assert [(n, s.shape, s.dtype.ir_name) for n, s in one] == \
        [("x", (1, 784), "f32"), ("w", (784, 10), "f32")]
    assert one == several
    specs = parse_signature(["a:f16[],b:f64[?],c:i8[2],d:i32[3,?],e:i64[1],f:u8[4],g:bool[5]"])
    assert [s.dtype.ir_name for _, s in specs] == ["f16", "f64", "i8", "i32", "i64", "u8", "i1"]
    assert [s.shape for _, s in specs] == [(), (None,), (2,), (3, None), (1,), (4,), (5,)]


@pytest.mark.parametrize("entry,message", [
    ("x:f33[1]", "bad dtype 'f33' in 'x:f33[1]': expected one of f16,"),
    ("x:f32[1,784", "'[' without ']'"),
    ("x:f32[1]],w:f32[2]", "']' without '['"),
    ("x:f32[1],,w:f32[2]", "empty --signature entry"),
    ("x:f32[1],", "empty --signature entry"),
    ("x:f32[1],x:f32[2]", "--signature gives 'x' twice"),
    ("x:f32[1],f32[2]", "must all be named"),
    ("x:f32[1,two]", "bad dimension 'two'"),
    ("x:f32", "bad --signature entry 'x:f32': expected NAME:DTYPE[DIMS]"),
])
def test_malformed_signatures_are_one_line_errors(capsys, entry, message):
    code, _, err = run(capsys, "dump", f"{EXAMPLE}:predict", "--signature", entry)
    assert code == 2, err
    assert message in err and err.count("\n") == 1


def test_dump_of_a_file_without_a_function_lists_its_compiled_functions(tmp_path, capsys):
    src = tmp_path / "model.py"
    src.write_text("import tensorweave as tw\n\n# a comment the IR parser used to trip on\n"
                   "@tw.compile\ndef predict(x):\n    return x * 2\n\n"
                   "@tw.compile\ndef train(x):\n    return x + 1\n\n"
                   "def helper(x):\n    return x\n")
    for command in (["dump", str(src)], ["dump", str(src), "--stage", "traced"],
                    ["aot", str(src), "-o", str(tmp_path / "out")]):
        code, _, err = run(capsys, *command)
        assert code == 2, err
        assert f"name the function to compile as {src}:FUNCTION" in err
        assert "@tw.compile functions: predict, train" in err and "helper" not in err
        assert err.count("\n") == 1
    plain = tmp_path / "plain.py"
    plain.write_text("def f(x):\n    return x\n")
    code, _, err = run(capsys, "dump", str(plain))
    assert code == 2 and "defines no @tw.compile function" in err
