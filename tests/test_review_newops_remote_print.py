"""tf.Print and tf.py_func ops in IR text read by a process that never imported compat.v1.

Both ops are declared in ``tensorweave.compat.v1``, which ``import tensorweave`` does not
load. A task process (``tensorweave server``) parses the partition it is sent: a tf.Print
placed on it was refused as an unknown op ('tw.Print'), where TensorFlow runs the print
on that task; ``tensorweave dump graph.mlir`` refused the IR it had printed itself.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import tensorweave.compat.v1 as tf
from tensorweave.distribute import Server

from .distributed.cluster_helpers import TOKEN, processes

IR = """\
func.func @graph(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %p = "tw.Print"(%x, %x) {counter = "print_0", first_n = -1 : i64, message = "m ", \
summarize = 3 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %f = "tw.PyFunc"(%x) {Tout = [tensor<2xf32>], token = "pyfunc_0"} : (tensor<2xf32>) -> tensor<2xf32>
  "func.return"(%p, %f) : (tensor<2xf32>, tensor<2xf32>) -> ()
}
"""


def test_ir_text_with_print_and_py_func_parses_without_compat_v1():
    code = ("import sys, tensorweave\n"
            "from tensorweave.compiler.parser import parse_graph\n"
            "from tensorweave.compiler.printer import print_graph\n"
            "assert 'tensorweave.compat.v1' not in sys.modules\n"
            "g = parse_graph(sys.stdin.read())\n"
            "print(sorted(n.op for n in g.nodes))\n")
    done = subprocess.run([sys.executable, "-c", code], input=IR, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr  # before: ParseError unknown op 'tw.Print'
    assert done.stdout.strip() == "['Print', 'PyFunc']"


def test_a_print_on_a_task_of_another_process_runs_and_prints_there(monkeypatch):
    monkeypatch.setenv("TW_TOKEN", TOKEN)
    with processes(ps=1, worker=1, in_test=("worker",)) as cluster:
        me = Server(cluster.spec, "worker", 0, token=TOKEN)
        try:
            g = tf.Graph()
            with g.as_default():
                x = tf.placeholder(tf.float32, [2])
                with tf.device("/job:ps/task:0"):
                    y = tf.Print(x * 2, [x], message="on the ps: ")
                out = y + 1
            with tf.Session(me.target, graph=g) as sess:
                # before: InternalError unknown op 'tw.Print' (on /job:ps/replica:0/task:0)
                np.testing.assert_array_equal(sess.run(out, {x: [1.0, 2.0]}), [3.0, 5.0])
        finally:
            me.stop(grace=0.2)
        cluster.kill("ps:0")
        text = cluster.procs["ps:0"].stdout.read().decode(errors="replace")
    assert "on the ps: [1 2]" in text.splitlines()
