"""The distributed runtime on local processes: the paper's null-step experiment and
tensor transfer throughput.

    python benchmarks/distributed.py                 # everything (~3 min on 2 cores)
    python benchmarks/distributed.py --quick         # fewer configurations (~1 min)

1. Transfers: a tensor on a PS task (a separate process) fetched by a worker task, 4 MB
   and 256 MB, against the floor of copying the same bytes over a raw loopback TCP
   socket between two processes.
2. Null steps (section 6 of the paper): every worker runs steps that read the model's
   variables from the PS tasks, do a trivial computation and send updates back; there
   is no real compute, so the step rate measures the runtime: steps per second summed
   over the workers, against the number of workers (1, 2, 4, 8) and PS tasks (1, 2, 4),
   for a scalar model (one scalar per PS task), a dense one (4 MB split across the PS
   tasks) and a sparse one (a 1M x 64 embedding sharded over the PS tasks, 32 rows
   looked up and updated per step). Next to each rate, the model of one step: gRPC
   calls and bytes.
3. Backup workers (the paper's figure 8, scaled down): synchronous steps aggregating 2
   gradients out of 2, 3 or 4 workers whose compute is mostly fast with injected
   stragglers; the median and 90th percentile of the time between global steps.

Every process is on this machine, bound to 127.0.0.1; with 2 cores, 8 workers and 4 PS
tasks share them, so rates beyond one or two workers are bound by the cores, not the
runtime. The table says how many cores there are.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TOKEN = "bench"
SPARSE_ROWS = 1_000_000  # the sparse model's embedding: 1M x 64 float32 (256 MB)


# ------------------------------------------------------------------ child processes

def _spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    from tensorweave.distribute.launch import child_command, child_env
    return subprocess.Popen(child_command([sys.executable, *args]), env=child_env(env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True)


def _env(config: str | None = None) -> dict[str, str]:
    env = dict(os.environ, TW_TOKEN=TOKEN, PYTHONUNBUFFERED="1")
    env.pop("TW_CONFIG", None)
    if config:
        env["TW_CONFIG"] = config
    return env


def _start_ps(spec) -> list[subprocess.Popen]:
    from tensorweave.runtime.distributed.cluster import TaskConfig
    return [_spawn(["-m", "tensorweave.cli", "server"],
                   _env(TaskConfig(spec, "ps", i, TOKEN).to_json()))
            for i in range(spec.num_tasks("ps"))]


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


# ------------------------------------------------------------------ transfers

def _raw_socket_seconds(nbytes: int) -> float:
    """Seconds to move `nbytes` over loopback TCP from a child process to this one."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    code = (f"import socket;s=socket.create_connection(('127.0.0.1',{port}));"
            f"b=bytearray({nbytes});s.recv(1);s.sendall(memoryview(b));s.close()")
    child = subprocess.Popen([sys.executable, "-c", code])
    conn, _ = server.accept()
    buf = bytearray(nbytes)
    view = memoryview(buf)
    start = time.perf_counter()
    conn.sendall(b"g")
    got = 0
    while got < nbytes:
        n = conn.recv_into(view[got:], min(nbytes - got, 1 << 22))
        if n == 0:
            break
        got += n
    elapsed = time.perf_counter() - start
    conn.close()
    server.close()
    child.wait()
    return elapsed


def bench_transfers(repeats: int) -> list[tuple[str, float, float]]:
    import tensorweave.compat.v1 as tf
    from tensorweave.distribute import ClusterSpec, Server
    from tensorweave.distribute.launch import free_ports
    ports = free_ports(2)
    spec = ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    ps = _start_ps(spec)
    rows = []
    try:
        os.environ["TW_TOKEN"] = TOKEN
        server = Server(spec, "worker", 0, token=TOKEN)
        for mb in (4, 256):
            n = mb * (1 << 20) // 4
            g = tf.Graph()
            with g.as_default():
                with tf.device("/job:ps/task:0"):
                    v = tf.Variable(tf.zeros([n]), name=f"big{mb}")
                with tf.device("/job:worker/task:0"):
                    first = v.read_value()[0]  # the whole tensor crosses, one float stays
            sess = tf.Session(server.target, graph=g)
            sess.run(v.initializer)
            sess.run(first)  # compile and register
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                sess.run(first)
                times.append(time.perf_counter() - t)
            raw = min(_raw_socket_seconds(n * 4) for _ in range(repeats))
            rows.append((f"{mb} MB PS -> worker", min(times), raw))
            sess.close()
        server.stop()
    finally:
        _stop(ps)
    return rows


# ------------------------------------------------------------------ null steps

def build_null_model(tf, spec, task: int, model: str):
    """Variables on the PS tasks; a step reads them all, adds one, sends updates back."""
    num_ps = spec.num_tasks("ps")
    with tf.device(tf.train.replica_device_setter(
            cluster=spec, worker_device=f"/job:worker/task:{task}")):
        if model == "sparse":  # an embedding sharded over the PS tasks, 32 rows a step
            shards = [tf.Variable(np.zeros((SPARSE_ROWS // num_ps, 64), np.float32),
                                  name=f"emb{i}") for i in range(num_ps)]
            ids = tf.constant(np.random.default_rng(task).integers(0, SPARSE_ROWS, 32))
            loss = tf.reduce_sum(tf.nn.embedding_lookup(shards, ids))
            step = tf.train.GradientDescentOptimizer(0.01).minimize(loss)  # sparse updates
            init = tf.global_variables_initializer()
            return step, init, [tf.is_variable_initialized(v) for v in shards]
        if model == "scalar":
            variables = [tf.Variable(np.zeros((), np.float32), name=f"s{i}")
                         for i in range(num_ps)]
        else:  # dense: 4 MB in all, one shard per PS task
            n = (1 << 20) // num_ps
            variables = [tf.Variable(np.zeros((n,), np.float32), name=f"d{i}")
                         for i in range(num_ps)]
        updates = [v.assign_add(v.read_value() * 0.0 + 1.0) for v in variables]
        step = tf.group(*updates)
        init = tf.global_variables_initializer()
        ready = [tf.is_variable_initialized(v) for v in variables]
    return step, init, ready


def worker_main(config: str, model: str, start_at: float, seconds: float) -> None:
    """One worker of the null-step experiment (a child process): prints its step count."""
    import tensorweave.compat.v1 as tf
    from tensorweave.runtime.distributed.cluster import parse_task_config
    cfg = parse_task_config(config)
    server = tf.train.Server(cfg.cluster, "worker", cfg.task_index)
    step, init, ready = build_null_model(tf, cfg.cluster, cfg.task_index, model)
    sess = tf.Session(server.target)
    if cfg.task_index == 0:
        sess.run(init)
    while not all(sess.run(ready)):
        time.sleep(0.05)
    sess.run(step)  # compile and register before the clock starts
    late = time.time() > start_at
    while time.time() < start_at:
        time.sleep(0.001)
    count, end = 0, start_at + seconds
    while time.time() < end:
        sess.run(step)
        count += 1
    print(json.dumps({"steps": count, "late": late}), flush=True)
    sess.close()
    server.stop()


def sync_worker_main(config: str, m: int, start_at: float, seconds: float, seed: int) -> None:
    """One worker of the backup-workers experiment: synchronous steps with an injected
    compute time (mostly 10 ms, 1 in 10 steps 150 ms: stragglers); prints the wall time
    at which it saw each global step."""
    import tensorweave.compat.v1 as tf
    from tensorweave.runtime.distributed.cluster import parse_task_config
    cfg = parse_task_config(config)
    n = cfg.cluster.num_tasks("worker")
    server = tf.train.Server(cfg.cluster, "worker", cfg.task_index)
    with tf.device(tf.train.replica_device_setter(
            cluster=cfg.cluster, worker_device=f"/job:worker/task:{cfg.task_index}")):
        step = tf.Variable(0, name="global_step", trainable=False)
        w = tf.Variable(np.zeros((1000,), np.float32), name="w")
        loss = tf.reduce_sum(w * w)
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                             replicas_to_aggregate=m, total_num_replicas=n)
        train = opt.minimize(loss, global_step=step)
        init = tf.global_variables_initializer()
        ready = [tf.is_variable_initialized(v) for v in (step, w)]
        hook = opt.make_session_run_hook(cfg.task_index == 0)
    sess = tf.Session(server.target)
    if cfg.task_index == 0:
        sess.run(init)
    while not all(sess.run(ready)):
        time.sleep(0.05)
    hook.after_create_session(sess)
    rng = np.random.default_rng(seed + cfg.task_index)
    while time.time() < start_at:
        time.sleep(0.001)
    seen = []
    while time.time() < start_at + seconds:
        time.sleep(0.15 if rng.random() < 0.1 else 0.01)  # the "compute" of this step
        sess.run(train)
        seen.append((time.time(), int(sess.run(step))))
    print(json.dumps({"seen": seen}), flush=True)
    if cfg.task_index == 0:
        sess.run(opt.get_init_tokens_op(n))  # release the others
    os._exit(0)  # the chief's queue runner may be blocked in a step: do not wait


def bench_backup_workers(m: int, backups: int, seconds: float) -> dict:
    """Median and p90 time between global steps with `m` gradients aggregated out of
    `m + backups` workers."""
    from tensorweave.distribute.launch import local_cluster
    from tensorweave.runtime.distributed.cluster import TaskConfig
    n = m + backups
    spec = local_cluster(1, n)
    ps = _start_ps(spec)
    start_at = time.time() + 6.0 + 1.0 * n
    workers = [_spawn([os.path.abspath(__file__), "--role", "sync", "--config",
                       TaskConfig(spec, "worker", i, TOKEN).to_json(), "--m", str(m),
                       "--start-at", str(start_at), "--seconds", str(seconds)], _env())
               for i in range(n)]
    try:
        first: dict[int, float] = {}
        for w in workers:
            out, _ = w.communicate(timeout=120)
            line = [ln for ln in out.splitlines() if ln.startswith("{")]
            if not line:
                raise RuntimeError(f"worker failed:\n{out}")
            for t, g in json.loads(line[-1])["seen"]:
                first[g] = min(t, first.get(g, t))
    finally:
        _stop(workers + ps)
    times = [first[g] for g in sorted(first)]
    gaps = np.diff(times) * 1e3
    return {"median": float(np.median(gaps)), "p90": float(np.percentile(gaps, 90)),
            "steps": len(times)}


def bench_null_steps(num_ps: int, num_workers: int, model: str, seconds: float) -> dict:
    from tensorweave.distribute.launch import local_cluster
    from tensorweave.runtime.distributed.cluster import TaskConfig
    spec = local_cluster(num_ps, num_workers)
    ps = _start_ps(spec)
    start_at = time.time() + 6.0 + 1.0 * num_workers  # every worker up and compiled
    workers = [_spawn([os.path.abspath(__file__), "--role", "worker", "--config",
                       TaskConfig(spec, "worker", i, TOKEN).to_json(), "--model", model,
                       "--start-at", str(start_at), "--seconds", str(seconds)], _env())
               for i in range(num_workers)]
    try:
        counts, late = [], False
        for w in workers:
            out, _ = w.communicate(timeout=120)
            line = [ln for ln in out.splitlines() if ln.startswith("{")]
            if not line:
                raise RuntimeError(f"worker failed:\n{out}")
            result = json.loads(line[-1])
            counts.append(result["steps"])
            late |= result["late"]
    finally:
        _stop(workers + ps)
    nbytes = {"scalar": 4 * num_ps, "dense": 4 * ((1 << 20) // num_ps * num_ps),
              "sparse": 32 * 64 * 4}[model]
    return {"rate": sum(counts) / seconds, "per_worker": [c / seconds for c in counts],
            "late": late, "rpcs": 3 * num_ps, "bytes": 2 * nbytes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--role", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--model", default="scalar", help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--m", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "worker":
        worker_main(args.config, args.model, args.start_at, args.seconds)
        return
    if args.role == "sync":
        sync_worker_main(args.config, args.m, args.start_at, args.seconds, 7)
        return
    print(f"# distributed runtime on local processes ({os.cpu_count()} cores, 127.0.0.1)")
    print("\n## transfers (best of 3)\n")
    print("| transfer | tensorweave | raw TCP socket (floor) | GB/s tensorweave | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for name, t, raw in bench_transfers(3):
        nbytes = int(name.split()[0]) * (1 << 20)
        print(f"| {name} | {t * 1e3:.1f} ms | {raw * 1e3:.1f} ms | {nbytes / t / 1e9:.2f} | "
              f"{t / raw:.1f}x |", flush=True)
    print(f"\n## null steps ({args.seconds:g} s per configuration; steps/s summed over "
          f"workers)\n")
    print("| model | PS tasks | workers | steps/s | per worker | gRPC calls/step | "
          "bytes/step |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    grid = [("scalar", p, w) for p in (1, 2, 4) for w in (1, 2, 4, 8)]
    grid += [("dense", 1, w) for w in (1, 2, 4)] + [("dense", 4, w) for w in (1, 4)]
    grid += [("sparse", 1, w) for w in (1, 2, 4)] + [("sparse", 2, w) for w in (1, 2)]
    if args.quick:
        grid = [("scalar", 1, 1), ("scalar", 1, 2), ("scalar", 2, 4), ("dense", 1, 1),
                ("sparse", 2, 2)]
    for model, p, w in grid:
        r = bench_null_steps(p, w, model, args.seconds)
        per = ", ".join(f"{x:.0f}" for x in r["per_worker"])
        note = " (a worker started late)" if r["late"] else ""
        print(f"| {model} | {p} | {w} | {r['rate']:.0f}{note} | {per} | {r['rpcs']} | "
              f"{r['bytes']:,} |", flush=True)
    print("\n## synchronous steps with backup workers (m = 2 aggregated; each step's compute "
          "10 ms, 150 ms one time in ten)\n")
    print("| backup workers | workers | median step | p90 step | steps |")
    print("| --- | --- | --- | --- | --- |")
    for backups in (0, 1) if args.quick else (0, 1, 2):
        r = bench_backup_workers(2, backups, 2 * args.seconds)
        print(f"| {backups} | {2 + backups} | {r['median']:.1f} ms | {r['p90']:.1f} ms | "
              f"{r['steps']} |", flush=True)


if __name__ == "__main__":
    main()
