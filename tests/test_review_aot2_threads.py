"""A library's calls may run concurrently (each allocates its own scratch memory, and the
step's own threads are started and joined per call). A C program calls one library from
four threads at once, twenty times each, on a function whose product and fused loop are
big enough to run on the step's threads (`parallel.MIN_GEMM_FLOPS`, `MIN_FUSED_WORK`)
when the machine has several cores: every call returns status 0 and the bits of a call
made alone."""

from __future__ import annotations

import os
import subprocess
import textwrap

import tensorweave as tw
from tensorweave.targets.cpu.aot import build_library, c_compiler
from tests.helpers import needs_c_compiler

MAIN = textwrap.dedent("""
    #include <pthread.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include "conc.h"

    static float x[CONC_ARG0_SIZE], m[CONC_ARG1_SIZE];
    static float want0[CONC_RESULT0_SIZE], want1[CONC_RESULT1_SIZE];
    static int bad = 0;

    static void *work(void *unused) {
        float *r0 = malloc(sizeof want0), *r1 = malloc(sizeof want1);
        for (int it = 0; it < 20; it++) {
            memset(r0, 0xAB, sizeof want0);
            memset(r1, 0xAB, sizeof want1);
            const void *args[2] = {x, m};
            void *results[2] = {r0, r1};
            if (conc_run(args, results) != 0 || memcmp(r0, want0, sizeof want0) ||
                memcmp(r1, want1, sizeof want1))
                __sync_fetch_and_add(&bad, 1);
        }
        free(r0);
        free(r1);
        return unused;
    }

    int main(void) {
        for (int i = 0; i < CONC_ARG0_SIZE; i++) x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
        for (int i = 0; i < CONC_ARG1_SIZE; i++) m[i] = (float)((i * 13) % 29) / 14.0f - 1.0f;
        const void *args[2] = {x, m};
        void *results[2] = {want0, want1};
        if (conc_run(args, results) != 0) return 3;
        pthread_t t[4];
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, NULL);
        for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
        printf("%d\\n", bad);
        return 0;
    }
""")


@needs_c_compiler
def test_concurrent_calls_from_c_threads_give_the_bits_of_a_lone_call(tmp_path):
    @tw.compile(input_signature=[tw.TensorSpec([256, 512], tw.float32),
                                 tw.TensorSpec([160, 160], tw.float32)])
    def conc(x, m):
        return tw.tanh(x) * 2.0 + tw.exp(-x), tw.matmul(m, tw.nn.relu(m))

    build_library(conc.get_concrete_function(), str(tmp_path), name="conc")
    (tmp_path / "main.c").write_text(MAIN)
    exe = str(tmp_path / "main")
    subprocess.run([*c_compiler().split(), "-O1", "-o", exe, str(tmp_path / "main.c"),
                    f"-I{tmp_path}", f"-L{tmp_path}", "-lconc", "-lm", "-lpthread",
                    f"-Wl,-rpath,{tmp_path}"], check=True, capture_output=True, text=True)
    proc = subprocess.run([exe], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items()
                               if not k.startswith("PYTHON")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0"]
