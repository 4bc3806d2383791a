"""Ahead-of-time libraries: `tensorweave aot` writes libNAME.so + NAME.h; a C program
built with the system compiler against them computes what the Python function computes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import CompileError
from tensorweave.targets.cpu.aot import build_library, c_compiler


def _compiler() -> list[str] | None:
    try:
        return c_compiler().split()
    except CompileError:
        return None


pytestmark = pytest.mark.skipif(_compiler() is None, reason="needs a C compiler")
MAIN_C = os.path.join(os.path.dirname(__file__), "data", "aot_main.c")

MODEL = textwrap.dedent("""
    import numpy as np
    import tensorweave as tw

    rng = np.random.default_rng(0)
    w1 = tw.Variable(rng.standard_normal((784, 64)).astype(np.float32) * 0.05, name="w1")
    b1 = tw.Variable(rng.standard_normal(64).astype(np.float32) * 0.1, name="b1")
    w2 = tw.Variable(rng.standard_normal((64, 10)).astype(np.float32) * 0.1, name="w2")


    @tw.compile(input_signature=[tw.TensorSpec([4, 784], tw.float32)])
    def predict(x):
        h = tw.nn.relu(tw.matmul(x, w1) + b1)
        return tw.nn.softmax(tw.matmul(h, w2)), tw.argmax(h, axis=1)
""")


def _build_c(tmp_path, header: str, name: str, arrays, results) -> str:
    exe = str(tmp_path / "main")
    sizes = lambda xs: "{" + ",".join(str(x.nbytes) for x in xs) + "}"  # noqa: E731
    cmd = [*_compiler(), "-O1", "-o", exe, MAIN_C,
           f"-DHEADER=\"{header}\"", f"-DRUN={name}_run", f"-DNARGS={len(arrays)}",
           f"-DNRESULTS={len(results)}", f"-DARG_BYTES={sizes(arrays)}",
           f"-DRESULT_BYTES={sizes(results)}", f"-L{tmp_path / 'out'}", f"-l{name}", "-lm",
           f"-Wl,-rpath,{tmp_path / 'out'}"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exe


def _run_c(tmp_path, exe: str, arrays, like) -> list[np.ndarray]:
    files = []
    for i, a in enumerate(arrays):
        path = tmp_path / f"arg{i}.bin"
        np.ascontiguousarray(a).tofile(path)
        files.append(str(path))
    proc = subprocess.run([exe, *files, str(tmp_path / "res")], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    assert proc.returncode == 0, proc.stderr
    return [np.fromfile(tmp_path / f"res.{j}", dtype=r.dtype).reshape(r.shape)
            for j, r in enumerate(like)]


def test_cli_library_runs_from_c(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "tensorweave.cli", "aot",
                           f"{tmp_path / 'model.py'}:predict", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    header = (out / "predict.h").read_text()
    assert "int predict_run(const void *const *args, void *const *results);" in header
    assert "PREDICT_ARG0_SHAPE[] = {4, 784}" in header
    assert "PREDICT_RESULT1_DTYPE \"i64\"" in header
    # the library needs nothing but libc/libm
    if shutil.which("ldd"):
        deps = subprocess.run(["ldd", str(out / "libpredict.so")], capture_output=True,
                              text=True)
        assert "blas" not in deps.stdout.lower() and "python" not in deps.stdout.lower()

    # the same model in this process gives the expected values
    sys.path.insert(0, str(tmp_path))
    try:
        import model  # noqa: PLC0415
    finally:
        sys.path.pop(0)
    x = np.random.default_rng(1).standard_normal((4, 784)).astype(np.float32)
    expected = model.predict(x)
    exe = _build_c(tmp_path, str(out / "predict.h"), "predict", [x], expected)
    got = _run_c(tmp_path, exe, [x], expected)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], expected[1])


def test_library_of_a_function_with_several_args(tmp_path):
    @tw.compile(input_signature=[tw.TensorSpec([3, 5], tw.float64),
                                 tw.TensorSpec([5], tw.float64), tw.TensorSpec([3], tw.int32)])
    def f(a, b, k):
        return tw.reduce_sum(tw.exp(a) * b, axis=1) + tw.cast(k, tw.float64), k * 2

    lib = build_library(f.get_concrete_function(), str(tmp_path / "out"), name="twoargs")
    assert os.path.exists(lib.library) and os.path.exists(lib.header)
    rng = np.random.default_rng(2)
    args = [rng.standard_normal((3, 5)), rng.standard_normal(5), np.array([1, -2, 3], np.int32)]
    expected = f(*args)
    exe = _build_c(tmp_path, lib.header, "twoargs", args, expected)
    got = _run_c(tmp_path, exe, args, expected)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)
    np.testing.assert_array_equal(got[1], expected[1])


def test_functions_that_assign_variables_are_refused(tmp_path):
    v = tw.Variable(np.zeros(3, np.float32))

    @tw.compile(input_signature=[tw.TensorSpec([3], tw.float32)])
    def step(x):
        v.assign_add(x)
        return v.read_value()

    with pytest.raises(CompileError, match="frozen variables"):
        build_library(step.get_concrete_function(), str(tmp_path))


def test_unknown_dimensions_are_refused(tmp_path):
    f = tw.compile(lambda x: x + 1, input_signature=[tw.TensorSpec([None], tw.float32)])
    with pytest.raises(CompileError, match="fixed shapes"):
        build_library(f.get_concrete_function(), str(tmp_path))


def test_cli_signature_for_a_function_without_an_input_signature(tmp_path):
    """`tensorweave aot FILE.py:FN --signature 'x:f32[2,5],w:f64[5,3]'` (issue 14): the
    library takes the shapes and dtypes given, and computes what the function does."""
    (tmp_path / "free.py").write_text(textwrap.dedent("""
        import tensorweave as tw

        @tw.compile
        def affine(x, w):
            return tw.matmul(tw.cast(x, tw.float64), w) + 1.0
    """))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "tensorweave.cli", "aot",
                           f"{tmp_path / 'free.py'}:affine", "-o", str(out),
                           "--signature", "x:f32[2,5],w:f64[5,3]"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    header = (out / "affine.h").read_text()
    assert "AFFINE_ARG0_SHAPE[] = {2, 5}" in header and "AFFINE_ARG1_SHAPE[] = {5, 3}" in header
    assert 'AFFINE_ARG0_DTYPE "f32"' in header and 'AFFINE_ARG1_DTYPE "f64"' in header
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 5)).astype(np.float32), rng.standard_normal((5, 3))
    expected = [x.astype(np.float64) @ w + 1.0]
    exe = _build_c(tmp_path, str(out / "affine.h"), "affine", [x, w], expected)
    np.testing.assert_allclose(_run_c(tmp_path, exe, [x, w], expected)[0], expected[0],
                               rtol=1e-12)
    # an unknown dim is refused with the --signature to give
    proc = subprocess.run([sys.executable, "-m", "tensorweave.cli", "aot",
                           f"{tmp_path / 'free.py'}:affine", "-o", str(out),
                           "--signature", "x:f32[?,5],w:f64[5,3]"],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "needs fixed shapes" in proc.stderr and "--signature 'x:f32[N,5]'" in proc.stderr


def test_bad_library_names_are_refused(tmp_path):
    f = tw.compile(lambda x: x + 1, input_signature=[tw.TensorSpec([2], tw.float32)])
    with pytest.raises(CompileError, match="C identifier"):
        build_library(f.get_concrete_function(), str(tmp_path), name="not-a-name")


def test_unsupported_dtypes_are_refused_naming_the_ops(tmp_path):
    from tensorweave.errors import UnimplementedError
    f = tw.compile(lambda x: x * x, input_signature=[tw.TensorSpec([4], tw.bfloat16)])
    with pytest.raises(UnimplementedError, match="no native lowering for"):
        build_library(f.get_concrete_function(), str(tmp_path), name="bf16")
