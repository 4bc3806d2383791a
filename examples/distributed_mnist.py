"""Between-graph replicated training with parameter servers, in the style of
TensorFlow 1's ``mnist_replica.py``: the same program, with the import changed.

Every task runs this script. Parameter-server tasks only serve; each worker builds the
graph, with its variables on the PS tasks (``replica_device_setter``) and its compute on
itself, and trains asynchronously: the paper's default data-parallel scheme. Worker 0
(the chief) initializes the variables; the others wait for it.

    tensorweave launch --ps 1 --workers 2 examples/distributed_mnist.py -- --steps 400
    tensorweave launch --ps 1 --workers 3 examples/distributed_mnist.py -- --sync_replicas \
        --replicas_to_aggregate 2 --straggle 1.0     # synchronous, one backup worker

or by hand, one terminal per task::

    python examples/distributed_mnist.py --ps_hosts 127.0.0.1:2222 \\
        --worker_hosts 127.0.0.1:2223,127.0.0.1:2224 --job_name worker --task_index 0

The cluster comes from ``TW_CONFIG`` when the flags do not give it (the launcher sets it).
"""

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tensorweave.compat.v1 as tf  # was: import tensorflow as tf
from tensorweave.datasets import mnist as input_data
from tensorweave.datasets.mnist import DataSet


def train(sess: Any, train_step: Any, global_step: Any, last_step: int, sync_replicas: bool, *,
          feed: Callable[[], dict], before_step: Callable[[], None] | None = None,
          task_index: int = 0) -> tuple[int, int]:
    """Run `train_step` until the global step reaches `last_step`: (local steps, the
    global step this worker saw last).

    With sync replicas every worker stops on the token its train op ends by taking (the
    global step it would compute at next), not on a read of `global_step`: that read
    runs beside the train op and may predate the step that made the token, so a worker
    holding a token of `last_step` could go on for one more step, needing a token of a
    step the others, stopped, never help make (the chief among them, with nobody left to
    release it). Each step hands out one token per worker, so every worker gets one of
    `last_step`'s and nobody waits for a step that will not come."""
    local_step = 0
    while True:
        if before_step is not None:
            before_step()
        if sync_replicas:
            step = int(sess.run(train_step, feed_dict=feed()))
        else:
            _, step = sess.run([train_step, global_step], feed_dict=feed())
        local_step += 1
        if local_step % 100 == 0:
            print(f"worker {task_index}: local step {local_step}, global step {step}",
                  flush=True)
        if step >= last_step:
            return local_step, int(step)


def main() -> None:
    """Every task of the cluster runs this: a PS serves, a worker trains."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="directory with the MNIST IDX files")
    parser.add_argument("--ps_hosts", default=None, help="comma-separated host:port of the PS tasks")
    parser.add_argument("--worker_hosts", default=None, help="comma-separated host:port of workers")
    parser.add_argument("--job_name", default=None, help="'ps' or 'worker'")
    parser.add_argument("--task_index", type=int, default=None)
    parser.add_argument("--steps", type=int, default=400, help="global training steps")
    parser.add_argument("--batch_size", type=int, default=100)
    parser.add_argument("--hidden_units", type=int, default=0,
                        help="units of a hidden ReLU layer (default 0: softmax regression)")
    parser.add_argument("--learning_rate", type=float, default=None,
                        help="Adam's learning rate (default 0.01; 0.005 with a hidden layer)")
    parser.add_argument("--sync_replicas", action="store_true",
                        help="aggregate gradients synchronously (SyncReplicasOptimizer)")
    parser.add_argument("--replicas_to_aggregate", type=int, default=None,
                        help="gradients per update (default: every worker; fewer = backup workers)")
    parser.add_argument("--straggle", type=float, default=0.0,
                        help="seconds the last worker sleeps before each step (a straggler)")
    FLAGS = parser.parse_args()
    if FLAGS.learning_rate is None:
        FLAGS.learning_rate = 0.005 if FLAGS.hidden_units else 0.01

    if FLAGS.ps_hosts is None:  # started by `tensorweave launch` (or any TW_CONFIG launcher)
        config = json.loads(os.environ["TW_CONFIG"])
        ps_spec = config["cluster"].get("ps", [])
        worker_spec = config["cluster"]["worker"]
        FLAGS.job_name, FLAGS.task_index = config["task"]["type"], config["task"]["index"]
    else:
        ps_spec = FLAGS.ps_hosts.split(",")
        worker_spec = FLAGS.worker_hosts.split(",")

    # ---- TensorFlow 1's mnist_replica.py, but for the import ---------------------------------
    cluster = tf.train.ClusterSpec({"ps": ps_spec, "worker": worker_spec})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return

    is_chief = FLAGS.task_index == 0
    mnist = input_data.read_data_sets(FLAGS.data, one_hot=True)
    train_data = DataSet(mnist.train.images, mnist.train.labels, seed=1 + FLAGS.task_index)

    worker_device = "/job:worker/task:%d/cpu:0" % FLAGS.task_index  # noqa: UP031 (as in TF)
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device,
                                                  ps_device="/job:ps/cpu:0", cluster=cluster)):
        global_step = tf.Variable(0, name="global_step", trainable=False)
        x = tf.placeholder(tf.float32, [None, 784])
        y_ = tf.placeholder(tf.float32, [None, 10])
        if FLAGS.hidden_units:
            hid_w = tf.Variable(tf.truncated_normal([784, FLAGS.hidden_units], stddev=1.0 / 28),
                                name="hid_w")
            hid_b = tf.Variable(tf.zeros([FLAGS.hidden_units]), name="hid_b")
            features = tf.nn.relu(tf.matmul(x, hid_w) + hid_b)
            width = FLAGS.hidden_units
        else:
            features, width = x, 784
        sm_w = tf.Variable(tf.truncated_normal([width, 10], stddev=float(1.0 / np.sqrt(width))),
                           name="sm_w")
        sm_b = tf.Variable(tf.zeros([10]), name="sm_b")
        logits = tf.matmul(features, sm_w) + sm_b
        cross_entropy = tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits))
        opt = tf.train.AdamOptimizer(FLAGS.learning_rate)
        num_workers = len(worker_spec)
        if FLAGS.sync_replicas:
            opt = tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=FLAGS.replicas_to_aggregate or num_workers,
                total_num_replicas=num_workers, name="mnist_sync_replicas")
        train_step = opt.minimize(cross_entropy, global_step=global_step)
        init_op = tf.global_variables_initializer()
        correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y_, 1))
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

    # Each worker sees only the PS tasks and itself (as mnist_replica.py does): a session
    # neither waits for nor depends on the other workers.
    sess_config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False,
                                 device_filters=["/job:ps", f"/job:worker/task:{FLAGS.task_index}"])
    sess = tf.Session(server.target, config=sess_config)
    if is_chief:
        sess.run(init_op)
        print("worker 0: variables initialized", flush=True)
    else:  # wait for the chief, as tf.train.Supervisor does
        ready = [tf.is_variable_initialized(v) for v in tf.global_variables()]
        while not all(sess.run(ready)):
            time.sleep(0.1)
    if FLAGS.sync_replicas:  # the chief aggregates and hands out tokens; everyone syncs
        sess.run(opt.local_step_init_op)
        if is_chief:
            sess.run([opt.chief_init_op, opt.get_init_tokens_op()])
            opt.get_chief_queue_runner().create_threads(sess, daemon=True, start=True)
    straggler = FLAGS.straggle > 0 and FLAGS.task_index == num_workers - 1

    start = time.time()
    local_step, _ = train(sess, train_step, global_step, FLAGS.steps, FLAGS.sync_replicas,
                          feed=lambda: dict(zip((x, y_), train_data.next_batch(FLAGS.batch_size))),
                          before_step=(lambda: time.sleep(FLAGS.straggle)) if straggler else None,
                          task_index=FLAGS.task_index)
    elapsed = time.time() - start
    acc = sess.run(accuracy, feed_dict={x: mnist.test.images, y_: mnist.test.labels})
    print(f"worker {FLAGS.task_index}: done, {local_step} local steps in {elapsed:.1f} s "
          f"({local_step / elapsed:.0f} steps/s), global step {sess.run(global_step)}, "
          f"test accuracy {acc:.4f}", flush=True)
    # No worker waits for a token here (each stopped on one of the last step's, see
    # `train`): closing the chief's session stops its queue runner.
    sess.close()


if __name__ == "__main__":
    main()
