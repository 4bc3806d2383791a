"""SyncReplicasOptimizer against one process: two replicas, Adam, a dense weight and a
sharded embedding (sparse gradients, duplicate ids) on two PS tasks, stepped in lock
step. Each aggregated update must equal one process applying the mean of the two
replicas' gradients (for the embedding, each row's mean over the replicas whose ids held
it, as TensorFlow's SparseConditionalAccumulator averages element-wise), bitwise (the
reference kernels everywhere), and the global step
must count aggregated updates only. As in TensorFlow, the first tokens hold step 0, so
the replicas' second gradients (computed at step 0 after step 0 was taken) are stale
and dropped: 4 rounds make 3 updates."""

import threading
import time

import numpy as np

import tensorweave.compat.v1 as tf

from .cluster_helpers import servers

N, ROUNDS = 2, 4
RNG = np.random.default_rng(0)
X = [RNG.normal(size=(5, 3)).astype(np.float32) for _ in range(N)]
Y = [RNG.normal(size=(5, 1)).astype(np.float32) for _ in range(N)]
W0 = RNG.normal(size=(3, 1)).astype(np.float32)
E0 = RNG.normal(size=(7, 1)).astype(np.float32)
IDS = [np.array([0, 3, 3, 6, 1]), np.array([6, 6, 2, 0, 5])]


def model(x, y, ids):
    w = tf.get_variable("w", initializer=W0)
    emb = tf.get_variable("emb", initializer=E0, partitioner=tf.fixed_size_partitioner(2))
    pred = tf.matmul(x, w) + tf.nn.embedding_lookup(emb, ids, partition_strategy="div")
    return tf.reduce_mean(tf.square(pred - y)), w, emb


def one_process(updates):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [5, 3])
        y = tf.placeholder(tf.float32, [5, 1])
        ids = tf.placeholder(tf.int64, [5])
        loss, w, emb = model(x, y, ids)
        opt = tf.train.AdamOptimizer(0.05)
        pairs = opt.compute_gradients(loss)
        dense = [tf.math.unsorted_segment_sum(gr.values, gr.indices, v.shape[0])
                 if isinstance(gr, tf.IndexedSlices) else gr for gr, v in pairs]
        # the rows each sparse gradient holds (a dense one holds every row)
        held = [gr.indices if isinstance(gr, tf.IndexedSlices) else tf.constant([-1])
                for gr, _ in pairs]
        fed = [tf.placeholder(tf.float32, v.shape) for _, v in pairs]
        step = tf.train.get_or_create_global_step()
        apply = opt.apply_gradients(list(zip(fed, [v for _, v in pairs])), global_step=step)
        init = tf.global_variables_initializer()
        probe = [w.read_value(), tf.concat([p.read_value() for p in emb], 0), step.read_value()]
    with tf.Session(graph=g, compile_target="reference") as sess:
        sess.run(init)
        for _ in range(updates):
            runs = [sess.run([dense, held], {x: X[t], y: Y[t], ids: IDS[t]}) for t in range(N)]
            feeds = {}
            for k, p in enumerate(fed):
                total = runs[0][0][k] + runs[1][0][k]
                count = np.zeros(total.shape[0], np.float32)
                for _, rows in runs:
                    if rows[k].tolist() == [-1]:
                        count += 1
                    else:
                        count[np.unique(rows[k])] += 1
                shape = (-1,) + (1,) * (total.ndim - 1)
                feeds[p] = np.where(count.reshape(shape) > 0,
                                    total / np.maximum(count, 1).reshape(shape),
                                    np.float32(0)).astype(np.float32)
            sess.run(apply, feeds)
        return sess.run(probe)


def test_sync_replicas_apply_the_mean_of_the_replicas_gradients_like_one_process():
    with servers(ps=2, worker=N) as (spec, tasks):
        sessions, models = [], []
        for t in range(N):
            g = tf.Graph()
            with g.as_default(), tf.device(tf.train.replica_device_setter(
                    cluster=spec, worker_device=f"/job:worker/task:{t}")):
                loss, w, emb = model(tf.constant(X[t]), tf.constant(Y[t]), tf.constant(IDS[t]))
                step = tf.train.get_or_create_global_step()
                opt = tf.train.SyncReplicasOptimizer(tf.train.AdamOptimizer(0.05),
                                                     replicas_to_aggregate=N,
                                                     total_num_replicas=N)
                train = opt.minimize(loss, global_step=step)
                init = tf.global_variables_initializer()
                hook = opt.make_session_run_hook(is_chief=t == 0)
                probe = [w.read_value(), tf.concat([p.read_value() for p in emb], 0),
                         step.read_value()]
            sess = tf.Session(tasks[f"worker:{t}"].target, graph=g,
                              compile_target="reference")
            if t == 0:
                sess.run(init)
            hook.after_create_session(sess)
            sessions.append(sess)
            models.append((train, probe))
        try:
            for r in range(ROUNDS):
                threads = [threading.Thread(target=sessions[t].run, args=(models[t][0],))
                           for t in range(N)]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join(30)
                assert not any(th.is_alive() for th in threads), f"round {r} hangs"
                # the update of this round (none in round 1: its gradients were stale)
                deadline = time.monotonic() + 20
                while sessions[0].run(models[0][1][2]) < max(1, r) \
                        and time.monotonic() < deadline:
                    time.sleep(0.01)
            got = sessions[0].run(models[0][1])
        finally:
            for s in sessions:
                s.close()
    want = one_process(ROUNDS - 1)
    assert int(got[2]) == int(want[2]) == ROUNDS - 1
    for a, b in zip(want[:2], got[:2]):
        assert a.shape == b.shape and a.tobytes() == b.tobytes(), (a, b)
