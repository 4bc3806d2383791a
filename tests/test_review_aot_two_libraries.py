"""A C program may link several ahead-of-time libraries. Each library exported its node
functions under names every library uses ("n0.Fusion", ...), so the dynamic linker bound
the second library's calls to the first library's definitions: linked with
``-lfa -lga``, ``ga_run`` (x + 1) returned x * 1 = [1, 2, 3, 4], status 0. Only
``NAME_run`` may be exported."""

from __future__ import annotations

import os
import subprocess
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
S = tw.TensorSpec

MAIN = textwrap.dedent("""
    #include <stdio.h>
    #include "fa.h"
    #include "ga.h"

    int main(void) {
        float x[4] = {1, 2, 3, 4}, y[4], z[4];
        const void *args[1] = {x};
        void *ry[1] = {y}, *rz[1] = {z};
        int sy = fa_run(args, ry), sz = ga_run(args, rz);
        printf("%d %g %g %g %g\\n", sy, y[0], y[1], y[2], y[3]);
        printf("%d %g %g %g %g\\n", sz, z[0], z[1], z[2], z[3]);
        return 0;
    }
""")


def test_two_libraries_linked_into_one_program_each_run_their_own_code(tmp_path):
    out = tmp_path / "out"
    fa = tw.compile(lambda x: x * 2.0, input_signature=[S([4], tw.float32)])
    ga = tw.compile(lambda x: x + 1.0, input_signature=[S([4], tw.float32)])
    build_library(fa.get_concrete_function(), str(out), name="fa")
    build_library(ga.get_concrete_function(), str(out), name="ga")
    (tmp_path / "main.c").write_text(MAIN)
    exe = str(tmp_path / "main")
    subprocess.run([*_compiler(), "-o", exe, str(tmp_path / "main.c"), f"-I{out}", f"-L{out}",
                    "-lfa", "-lga", "-lm", f"-Wl,-rpath,{out}"], check=True,
                   capture_output=True, text=True)
    proc = subprocess.run([exe], capture_output=True, text=True, check=True,
                          env={k: v for k, v in os.environ.items()
                               if not k.startswith("PYTHON")})
    lines = [[float(v) for v in line.split()] for line in proc.stdout.splitlines()]
    x = np.array([1, 2, 3, 4], np.float32)
    assert lines[0] == [0, *(x * 2)]
    assert lines[1] == [0, *(x + 1)]
