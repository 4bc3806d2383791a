"""``tensorweave aot --cpu NAME`` with a CPU name LLVM does not know: LLVM only prints a
warning and then aborts the whole process ("LLVM ERROR: 64-bit code requested on a
subtarget that doesn't support it!"), so the name is checked first and refused with a
CompileError naming it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.helpers import needs_c_compiler

pytestmark = needs_c_compiler

MODULE = textwrap.dedent("""
    import tensorweave as tw

    @tw.compile(input_signature=[tw.TensorSpec([2], tw.float32)])
    def f(x):
        return x * 2
""")


def test_an_unknown_cpu_name_is_a_clear_error_not_an_abort(tmp_path):
    (tmp_path / "m.py").write_text(MODULE)
    # in a child process: before the check, LLVM aborted the interpreter
    proc = subprocess.run([sys.executable, "-m", "tensorweave.cli", "aot",
                           f"{tmp_path / 'm.py'}:f", "-o", str(tmp_path / "out"),
                           "--cpu", "no-such-cpu"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "LLVM ERROR" not in proc.stderr
    assert proc.stderr.startswith("tensorweave: error: CompileError:")
    assert "'no-such-cpu'" in proc.stderr
    assert not (tmp_path / "out" / "libf.so").exists()
