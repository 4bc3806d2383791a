"""A library's failing op returned a bare status (1) and nothing else: a C caller with
an out-of-range index, a zero divisor or a NaN caught by check_numerics could not tell
which op failed, or why, where the JIT names the op, its node and the source line.
``NAME_run_with_error`` now gives the JIT's message (fixed when the library is built)
for every (failing action, status) pair, in nested loops too; NULL on success."""

from __future__ import annotations

import ctypes
import os
import subprocess
import textwrap

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.targets.cpu.aot import build_library, c_compiler
from tests.helpers import line_of, needs_c_compiler

S = tw.TensorSpec


def _model(x, i, d):
    picked = tw.gather(x, i)
    q = tw.cast(tw.reduce_sum(picked), tw.int32) // d
    total = tw.while_loop(lambda k, a: k < 2, lambda k, a: (k + 1, a + tw.gather(x, i + 1)),
                          [0, tw.zeros([2])])[1]
    return picked, q, tw.debugging.check_numerics(total, "loop total")


def _library(tmp_path):
    f = tw.compile(_model, input_signature=[S([4], tw.float32), S([2], tw.int32),
                                            S([], tw.int32)])
    return f, build_library(f.get_concrete_function(), str(tmp_path), name="errs")


def _call(lib, x, i, d):
    run = ctypes.CDLL(lib.library).errs_run_with_error
    run.restype = ctypes.c_int
    args = [np.asarray(x, np.float32), np.asarray(i, np.int32), np.asarray(d, np.int32)]
    outs = [np.zeros(2, np.float32), np.zeros((), np.int32), np.zeros(2, np.float32)]
    error = ctypes.c_char_p(b"untouched")
    status = run((ctypes.c_void_p * 3)(*[a.ctypes.data for a in args]),
                 (ctypes.c_void_p * 3)(*[o.ctypes.data for o in outs]), ctypes.byref(error))
    return status, error.value and error.value.decode()


@needs_c_compiler
def test_a_failing_op_is_named_with_its_line(tmp_path):
    _, lib = _library(tmp_path)
    x = [1, 2, 3, np.nan]
    assert _call(lib, x, [0, 1], 1) == (0, None)
    status, error = _call(lib, x, [0, 7], 1)
    assert status > 0 and error.startswith("Gather 'gather' (")
    assert line_of(_model, "picked = tw.gather") in error and "not in [0, 4)" in error
    status, error = _call(lib, x, [0, 1], 0)
    assert status > 0 and "FloorDiv" in error and "integer division by zero" in error
    assert line_of(_model, "// d") in error
    status, error = _call(lib, x, [3, 2], 1)  # the loop body's gather reads x[4]
    assert status > 0 and error.startswith("Gather") and "not in [0, 4)" in error
    assert line_of(_model, "a + tw.gather(x, i + 1)") in error
    status, error = _call(lib, x, [1, 2], 1)  # the loop adds x[3] = NaN
    assert status > 0 and "loop total" in error and "NaN" in error


@needs_c_compiler
def test_a_c_program_prints_the_message(tmp_path):
    _, lib = _library(tmp_path)
    src = tmp_path / "main.c"
    src.write_text(textwrap.dedent("""
        #include <stdio.h>
        #include "errs.h"
        int main(void) {
            float x[4] = {1, 2, 3, 4}, picked[2], total[2];
            int32_t i[2] = {0, 9}, d = 1, q;
            const void *args[3] = {x, i, &d};
            void *results[3] = {picked, &q, total};
            const char *error = "untouched";
            int status = errs_run_with_error(args, results, &error);
            printf("%d %s\\n", status, error);
            i[1] = 1;
            status = errs_run_with_error(args, results, &error);
            printf("%d %s\\n", status, error ? error : "NULL");
            return errs_run_with_error(args, results, NULL) != 0;
        }
    """))
    exe = str(tmp_path / "main")
    subprocess.run([*c_compiler().split(), "-o", exe, str(src), f"-I{tmp_path}",
                    f"-L{tmp_path}", "-lerrs", "-lm", f"-Wl,-rpath,{tmp_path}"],
                   check=True, capture_output=True, text=True)
    proc = subprocess.run([exe], capture_output=True, text=True, check=True,
                          env={k: v for k, v in os.environ.items()
                               if not k.startswith("PYTHON")})
    failed, ok = proc.stdout.splitlines()
    assert failed.startswith("1 Gather 'gather' (") and "not in [0, 4)" in failed
    assert ok == "0 NULL"


@needs_c_compiler
@pytest.mark.parametrize("name", ["tw", "tw_step", "tw_consts"])
def test_library_names_do_not_collide_with_internal_symbols(tmp_path, name):
    """The entry points are NAME_run and NAME_run_with_error; the library's own symbols
    are not C identifiers of that form ("tw.run": a library named "tw" failed to build
    with DuplicatedNameError when the shared body was called "tw_run")."""
    f = tw.compile(lambda x: x + 1.0, input_signature=[S([2], tw.float32)])
    lib = build_library(f.get_concrete_function(), str(tmp_path), name=name)
    run = getattr(ctypes.CDLL(lib.library), f"{name}_run_with_error")
    x, out, error = np.ones(2, np.float32), np.zeros(2, np.float32), ctypes.c_char_p()
    assert run((ctypes.c_void_p * 1)(x.ctypes.data), (ctypes.c_void_p * 1)(out.ctypes.data),
               ctypes.byref(error)) == 0
    assert out.tolist() == [2.0, 2.0] and error.value is None
