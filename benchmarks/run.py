"""tensorweave benchmarks (first version): one table of median times, ratios against NumPy,
and the machine's ceilings measured in the same run.

    python benchmarks/run.py            # about 1-3 minutes
    python benchmarks/run.py --quick    # fewer repetitions

Workloads (issue 4):
- W1: softmax-regression training step, x[100,784], SGD (forward, gradients, update);
- W2: MLP 784-1024-1024-10 with ReLU, batch 256, SGD training step;
- W4: y = gelu_tanh(x * a + b) over 16M float32 values (forward only; GB/s counts one
  read of x and one write of y);
- W6: dispatch overhead: a compiled ``x + 1`` on a one-element array (microseconds);
- first call: trace + compile + first run of a fresh W1 / W2 function (in-memory caches
  only: the cpu target has no disk cache yet, but kernels compiled earlier in this
  process for the same layouts are reused).
Each runs on the ``reference`` and ``cpu`` targets, against NumPy written by hand, and
against JAX (``jax.jit``) and PyTorch when they are installed (skipped otherwise).
Ceilings: sgemm GFLOP/s through NumPy (2048^3), and copy bandwidth (GB/s, 64 MB
arrays); each workload's "share" is its rate over the matching ceiling. Every row runs
with the BLAS thread policy tensorweave applies (``TW_BLAS_THREADS``, default one BLAS
thread: the executor runs independent ops in parallel instead), NumPy's rows included,
so that all compare under the same setting; sgemm with all of BLAS's threads is printed
too. The machine is shared: expect run-to-run noise of tens of percent.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from timing import median_time  # noqa: E402

import tensorweave as tw  # noqa: E402
from tensorweave.runtime.threads import limit_blas_threads  # noqa: E402

TARGETS = ("reference", "cpu")
GELU_C = 0.7978845608028654  # sqrt(2 / pi)




@dataclass
class Row:
    workload: str
    impl: str
    seconds: float | None
    rate: str = ""       # GB/s or GFLOP/s of this run
    share: str = ""      # rate / ceiling
    note: str = ""


# ----------------------------------------------------------------------------- ceilings

def ceilings(repeats: int) -> tuple[float, float, float]:
    """(sgemm GFLOP/s through NumPy with BLAS's own threads, the same with the BLAS
    thread policy every workload runs under, copy bandwidth GB/s)."""
    n = 2048
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    t_all = median_time(lambda: a @ a, max(3, repeats // 2))
    limit_blas_threads()
    t = median_time(lambda: a @ a, max(3, repeats // 2))
    src = np.ones(16 << 20, np.float32)
    dst = np.empty_like(src)
    c = median_time(lambda: np.copyto(dst, src), repeats)
    return 2 * n ** 3 / t_all / 1e9, 2 * n ** 3 / t / 1e9, 2 * src.nbytes / c / 1e9


# --------------------------------------------------------------------------- W1 and W2

def _mlp_params(sizes: list[int], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((n_in, n_out)) * np.sqrt(2 / n_in)).astype(np.float32))
        params.append(np.zeros(n_out, np.float32))
    return params


def numpy_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray, lr: float) -> float:
    """One SGD step of a ReLU MLP with softmax cross-entropy, by hand in NumPy."""
    acts = [x]
    h = x
    n_layers = len(params) // 2
    for i in range(n_layers):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < n_layers - 1:
            h = np.maximum(h, 0)
        acts.append(h)
    z = h - h.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    loss = float(-(y * (z - np.log(e.sum(axis=1, keepdims=True)))).sum(axis=1).mean())
    g = (p - y) / x.shape[0]
    for i in reversed(range(n_layers)):
        w = params[2 * i]
        gw, gb = acts[i].T @ g, g.sum(axis=0)
        if i:
            g = (g @ w.T) * (acts[i] > 0)
        params[2 * i] -= lr * gw
        params[2 * i + 1] -= lr * gb
    return loss


def tw_step(sizes: list[int], lr: float, target: str, seed: int) -> Callable:
    """A compiled SGD step of the same model with tensorweave variables."""
    variables = [tw.Variable(p) for p in _mlp_params(sizes, seed)]
    opt = tw.optimizers.SGD(lr)

    @tw.compile(target=target)
    def step(x, y):
        h = x
        n_layers = len(variables) // 2
        for i in range(n_layers):
            h = tw.matmul(h, variables[2 * i]) + variables[2 * i + 1]
            if i < n_layers - 1:
                h = tw.nn.relu(h)
        loss = tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=h))
        opt.minimize(loss, var_list=variables)
        return loss

    return step


def torch_step(sizes: list[int], lr: float, seed: int) -> Callable | None:
    try:
        import torch
    except ImportError:
        return None
    params = [torch.tensor(p, requires_grad=True) for p in _mlp_params(sizes, seed)]
    opt = torch.optim.SGD(params, lr=lr)

    def step(x, y):
        h = torch.from_numpy(x)
        for i in range(len(params) // 2):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < len(params) // 2 - 1:
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def jax_step(sizes: list[int], lr: float, seed: int) -> Callable | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    state = {"params": [jnp.asarray(p) for p in _mlp_params(sizes, seed)]}

    def loss_fn(params, x, y):
        h = x
        for i in range(len(params) // 2):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < len(params) // 2 - 1:
                h = jax.nn.relu(h)
        return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(h), axis=1))

    @jax.jit
    def update(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return [p - lr * g for p, g in zip(params, grads)], loss

    def step(x, y):
        state["params"], loss = update(state["params"], x, y)
        return loss.block_until_ready()

    return step


def train_workload(name: str, sizes: list[int], batch: int, repeats: int) -> list[Row]:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    lr = 0.01
    rows = []
    params = _mlp_params(sizes, 0)
    rows.append(Row(name, "numpy", median_time(lambda: numpy_step(params, x, y, lr), repeats)))
    labels = y.argmax(1)
    for impl, make, data in (("jax", jax_step, (x, y)), ("torch", torch_step, (x, labels))):
        step = make(sizes, lr, 0)
        if step is None:
            rows.append(Row(name, impl, None, note="not installed"))
        else:
            rows.append(Row(name, impl, median_time(lambda s=step, d=data: s(*d), repeats,
                                                    warmup=2)))
    for target in TARGETS:
        step = tw_step(sizes, lr, target, 0)
        start = time.perf_counter()
        step(x, y)
        first = time.perf_counter() - start
        rows.append(Row(name, f"tw {target}", median_time(lambda s=step: s(x, y), repeats)))
        rows.append(Row(f"{name} first call", f"tw {target}", first))
    return rows


# -------------------------------------------------------------------------------- W4

def numpy_gelu(x: np.ndarray, a: np.float32, b: np.float32) -> np.ndarray:
    y = x * a + b
    return 0.5 * y * (1 + np.tanh(np.float32(GELU_C) * (y + np.float32(0.044715) * y * y * y)))


def tw_gelu(x, a, b):
    y = x * a + b
    return 0.5 * y * (1.0 + tw.tanh(GELU_C * (y + 0.044715 * y * y * y)))


def gelu_workload(n: int, repeats: int, copy_gbs: float) -> list[Row]:
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    a, b = np.float32(1.5), np.float32(0.25)
    nbytes = 2 * x.nbytes

    def row(impl: str, fn: Callable, note: str = "") -> Row:
        t = median_time(fn, repeats)
        gbs = nbytes / t / 1e9
        return Row("W4 gelu 16M", impl, t, f"{gbs:.1f} GB/s", f"{gbs / copy_gbs:.0%}", note)

    rows = [row("numpy", lambda: numpy_gelu(x, a, b))]
    try:
        import jax
        f = jax.jit(lambda x, a, b: 0.5 * (x * a + b) * (1 + jax.numpy.tanh(
            GELU_C * ((x * a + b) + 0.044715 * (x * a + b) ** 3))))
        rows.append(row("jax", lambda: f(x, a, b).block_until_ready()))
    except ImportError:
        rows.append(Row("W4 gelu 16M", "jax", None, note="not installed"))
    try:
        import torch
        tx = torch.from_numpy(x)
        rows.append(row("torch", lambda: torch.nn.functional.gelu(tx * 1.5 + 0.25,
                                                                   approximate="tanh")))
    except ImportError:
        rows.append(Row("W4 gelu 16M", "torch", None, note="not installed"))
    for target in TARGETS:
        f = tw.compile(tw_gelu, target=target)
        rows.append(row(f"tw {target}", lambda f=f: f(x, a, b)))
    return rows


# -------------------------------------------------------------------------------- W6

def dispatch_workload(repeats: int) -> list[Row]:
    x = np.ones(1, np.float32)
    inner = 2000

    def row(impl: str, fn: Callable, note: str = "") -> Row:
        t = median_time(fn, repeats, inner=inner, warmup=100)
        return Row("W6 dispatch x+1", impl, t, f"{t * 1e6:.1f} us", note=note)

    rows = [row("numpy", lambda: x + 1)]
    try:
        import torch
        tx = torch.from_numpy(x)
        rows.append(row("torch", lambda: tx + 1))
    except ImportError:
        rows.append(Row("W6 dispatch x+1", "torch", None, note="not installed"))
    try:
        import jax
        f = jax.jit(lambda x: x + 1)
        rows.append(row("jax", lambda: f(x).block_until_ready()))
    except ImportError:
        rows.append(Row("W6 dispatch x+1", "jax", None, note="not installed"))
    for target in TARGETS:
        f = tw.compile(lambda x: x + 1.0, target=target)
        rows.append(row(f"tw {target}", lambda f=f: f(x)))
    return rows


# ------------------------------------------------------------------------------ report

def _fmt_time(t: float | None) -> str:
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def print_table(rows: list[Row], gflops: float, copy_gbs: float) -> None:
    numpy_time = {r.workload: r.seconds for r in rows if r.impl == "numpy"}
    header = f"{'workload':<20} {'impl':<14} {'median':>10} {'vs numpy':>9} {'rate':>12} " \
             f"{'share':>6}  note"
    print(header)
    print("-" * len(header))
    for r in rows:
        base = numpy_time.get(r.workload.replace(" first call", ""))
        ratio = f"{r.seconds / base:.2f}x" if r.seconds and base and "first" not in r.workload \
            else ""
        print(f"{r.workload:<20} {r.impl:<14} {_fmt_time(r.seconds):>10} {ratio:>9} "
              f"{r.rate:>12} {r.share:>6}  {r.note}")
    print(f"\nceilings: sgemm through NumPy {gflops:.0f} GFLOP/s (BLAS threads: "
          f"TW_BLAS_THREADS, default 1, for every row, as tensorweave runs them), copy "
          f"{copy_gbs:.1f} GB/s; 'vs numpy' is time / NumPy's time (lower is better)")


def _flop_rows(rows: list[Row], name: str, flops: float, gflops: float) -> None:
    for r in rows:
        if r.workload == name and r.seconds:
            rate = flops / r.seconds / 1e9
            r.rate, r.share = f"{rate:.1f} GFLOP/s", f"{rate / gflops:.0%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeats = 5 if args.quick else 15
    start = time.perf_counter()
    gflops_all, gflops, copy_gbs = ceilings(repeats)
    rows: list[Row] = []
    w1 = train_workload("W1 softmax reg", [784, 10], 100, repeats * 4)
    _flop_rows(w1, "W1 softmax reg", 3 * 2 * 100 * 784 * 10, gflops)
    rows += w1
    w2 = train_workload("W2 mlp", [784, 1024, 1024, 10], 256, repeats)
    w2_flops = 3 * 2 * 256 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
    _flop_rows(w2, "W2 mlp", w2_flops, gflops)
    rows += w2
    rows += gelu_workload(16 << 20, max(3, repeats // 2), copy_gbs)
    rows += dispatch_workload(max(3, repeats // 3))
    print_table(rows, gflops, copy_gbs)
    print(f"sgemm through NumPy with all of BLAS's threads: {gflops_all:.0f} GFLOP/s")
    from tensorweave.targets.cpu import jit
    print(f"cpu target: {jit.STATS.misses} kernels compiled in {jit.STATS.compile_seconds:.2f} s "
          f"({jit.STATS.hits} cache hits); host {jit.host_info().cpu}, "
          f"{jit.host_info().vector_bits}-bit vectors; total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
