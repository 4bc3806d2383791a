"""tf.py_func's token (``pyfunc_N``, counted per process) never calls another function:
not in a second process that loads the step from the cpu target's disk cache and gave a
different function the same token, not across graphs of one process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

# The same program in two processes, but for the factor its py_func multiplies by: the
# traced graphs (token pyfunc_0 included) are identical, so the second process finds the
# step record and code the first stored.
PROGRAM = """
import sys
import numpy as np
import tensorweave as tw
import tensorweave.compat.v1 as tf
factor = np.float32(sys.argv[1])

@tw.compile(target="cpu")
def step(a):
    y = tf.py_func(lambda v: v * factor, [a], tf.float32)
    y.set_shape([2])
    return y + 1

print(step(np.float32([1, 2])).tolist())
"""


def _entries(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.suffix in (".twplan", ".twjit")}


def test_a_step_from_the_disk_cache_calls_this_process_function(tmp_path):
    env = dict(os.environ, TW_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    env.pop("TW_DISABLE_CACHE", None)
    outs = []
    for factor in ("3", "5"):
        done = subprocess.run([sys.executable, "-c", PROGRAM, factor], env=env,
                              capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout.strip().splitlines()[-1])
        if factor == "3":
            stored = _entries(tmp_path / "cache")
            assert any(name.endswith(".twplan") for name in stored)
    assert _entries(tmp_path / "cache") == stored  # the second process only loaded
    assert outs == ["[4.0, 7.0]", "[6.0, 11.0]"]  # each its own factor


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_equal_graphs_with_different_functions_keep_their_own(target):
    sessions = []
    for factor in (2, 3):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [2], name="x")
            y = tf.py_func(lambda v, k=factor: v * np.float32(k), [x], tf.float32)
            y.set_shape([2])
            tf.identity(y + 0, name="out")
        sessions.append(tf.Session(graph=g, compile_target=target))
    try:
        for factor, sess in zip((2, 3), sessions):
            np.testing.assert_array_equal(sess.run("out:0", {"x:0": [1.0, 2.0]}),
                                          [factor, 2 * factor])
    finally:
        for sess in sessions:
            sess.close()
