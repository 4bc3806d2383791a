"""``tensorweave dump --target gpu --stage kernels`` prints the generated kernels and
``--ptx-dir`` writes their PTX (no GPU needed)."""

from __future__ import annotations

import textwrap

import pytest

from tensorweave.cli import main

MODEL = textwrap.dedent("""
    import tensorweave as tw

    @tw.compile(input_signature=[tw.TensorSpec([4, 8], tw.float32),
                                 tw.TensorSpec([8, 3], tw.float32)])
    def f(x, w):
        return tw.nn.softmax(tw.matmul(x, w) * 2.0)

    @tw.compile(input_signature=[tw.TensorSpec([None, 8], tw.float32)])
    def g(x):
        return tw.exp(x)
""")


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return str(path)


def test_dump_kernels_prints_each_kernels_source(model, capsys):
    assert main(["dump", f"{model}:f", "--target", "gpu", "--stage", "kernels"]) == 0
    out = capsys.readouterr().out
    assert out.count("@cuda.jit") == 2  # (the product applies `* 2.0` in its store)
    assert "# kernel k0_mat_mul: FusedMatMul 'mat_mul'" in out and \
        "cuda.shared.array((16, 16)" in out
    assert "Softmax 'softmax'" in out and "model.py:" in out


def test_ptx_dir_writes_one_ptx_per_kernel(model, tmp_path, capsys):
    pytest.importorskip("cuda.bindings")
    out_dir = tmp_path / "ptx"
    assert main(["dump", f"{model}:f", "--target", "gpu", "--stage", "kernels",
                 "--ptx-dir", str(out_dir), "--arch", "sm_80"]) == 0
    files = sorted(p.name for p in out_dir.iterdir())
    assert files == ["k0_mat_mul.ptx", "k1_softmax.ptx"]
    assert ".target sm_80" in (out_dir / "k0_mat_mul.ptx").read_text()


def test_kernels_need_fixed_shapes_and_the_gpu_target(model, capsys):
    assert main(["dump", f"{model}:g", "--target", "gpu", "--stage", "kernels"]) == 1
    assert "fixed shapes" in capsys.readouterr().err
    assert main(["dump", f"{model}:f", "--stage", "kernels"]) == 2
    assert "need --target gpu" in capsys.readouterr().err
