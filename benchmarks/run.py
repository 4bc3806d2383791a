"""tensorweave benchmarks: one table of median times, ratios against NumPy,
and the machine's ceilings measured in the same run.

    python benchmarks/run.py            # about 1-3 minutes (under 5 on 2 cores)
    python benchmarks/run.py --quick    # fewer repetitions

Workloads (issue 4):
- W1: softmax-regression training step, x[100,784], SGD (forward, gradients, update);
- W2: MLP 784-1024-1024-10 with ReLU, batch 256, SGD training step;
- W3: CNN training step, batch 64 of 28x28x1 (NHWC, SAME padding): conv 5x5x32 + ReLU +
  2x2 max pool (stride 2), conv 5x5x64 + ReLU + 2x2 max pool, dense 1024 + ReLU, dense 10,
  softmax cross-entropy, SGD; NumPy by hand uses im2col + matmul for the convolutions
  and their gradients (GFLOP/s counts the step's multiply-adds, including conv1's filter
  gradient but no gradient for the input images); a tensorweave target that fails on it
  gets a "failed: ..." row and the run goes on;
- W4: y = gelu_tanh(x * a + b) over 16M float32 values (forward only; GB/s counts one
  read of x and one write of y);
- W6: dispatch overhead: a compiled ``x + 1`` on a one-element array (microseconds);
- first call: trace + compile + first run of a fresh W1 / W2 / W3 function in this
  process (code compiled earlier in the process for the same layouts is reused; the cpu
  target's disk cache, ``TW_CACHE_DIR``, is pointed at a new empty directory for the run
  unless ``TW_CACHE_DIR`` is set);
- first call, cold / warm disk: the same for W1, W2 and W3 in a fresh Python process,
  run twice with one new, empty ``TW_CACHE_DIR``: the first run fills the disk cache,
  the second finds it warm. The note gives the import time of tensorweave (not in the
  time), the cpu JIT's non-zero counters and the cache directory's contents. The
  children run without ``PYTHONDONTWRITEBYTECODE`` (some sandboxes set it): with it,
  every module imported lazily during the call would be compiled from source again
  (~90 ms), which users with ``.pyc`` files never pay.
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
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from timing import median_time  # noqa: E402

_IMPORT_START = time.perf_counter()
import tensorweave as tw  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - _IMPORT_START  # reported by the fresh-process rows
from tensorweave.runtime.threads import limit_blas_threads  # noqa: E402

TARGETS = ("reference", "cpu")
GELU_C = 0.7978845608028654  # sqrt(2 / pi)
# the MLP workloads: table name, layer sizes, batch
MLPS = {"W1": ("W1 softmax reg", [784, 10], 100),
        "W2": ("W2 mlp", [784, 1024, 1024, 10], 256)}


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


def _mlp_data(sizes: list[int], batch: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    return x, y


def train_workload(name: str, sizes: list[int], batch: int, repeats: int) -> list[Row]:
    x, y = _mlp_data(sizes, batch)
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


# -------------------------------------------------------------------------------- W3

CNN_BATCH = 64
CNN_SHAPES = [(5, 5, 1, 32), (32,), (5, 5, 32, 64), (64,), (7 * 7 * 64, 1024), (1024,),
              (1024, 10), (10,)]
# multiply-adds of one step: forward, filter/weight gradients, and input gradients (none
# for conv1, whose input is the data) -- conv1 28*28*25*32, conv2 14*14*800*64 per image
CNN_FLOPS = 2 * CNN_BATCH * (2 * 28 * 28 * 25 * 32 + 3 * 14 * 14 * 800 * 64
                             + 3 * 3136 * 1024 + 3 * 1024 * 10)


def _cnn_params(seed: int) -> list[np.ndarray]:
    """He-initialised filters and weights (HWIO filters), zero biases, as float32."""
    rng = np.random.default_rng(seed)
    params = []
    for shape in CNN_SHAPES:
        if len(shape) == 1:
            params.append(np.zeros(shape, np.float32))
        else:
            fan_in = int(np.prod(shape[:-1]))
            params.append((rng.standard_normal(shape) * np.sqrt(2 / fan_in)).astype(np.float32))
    return params


def _cnn_data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.random((CNN_BATCH, 28, 28, 1), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, CNN_BATCH)]
    return x, y


def im2col(x: np.ndarray, k: int) -> np.ndarray:
    """(N*H*W, k*k*C) patches of NHWC `x` for a stride-1 SAME k x k convolution (k odd),
    columns ordered like a flattened HWIO filter: one strided copy per filter tap."""
    n, h, w, c = x.shape
    p = k // 2
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    cols = np.empty((n, h, w, k, k, c), x.dtype)
    for i in range(k):
        for j in range(k):
            cols[:, :, :, i, j, :] = xp[:, i:i + h, j:j + w, :]
    return cols.reshape(n * h * w, k * k * c)


def col2im(dcols: np.ndarray, shape: tuple[int, ...], k: int) -> np.ndarray:
    """The adjoint of `im2col`: sums each patch gradient back onto the NHWC input."""
    n, h, w, c = shape
    p = k // 2
    d = dcols.reshape(n, h, w, k, k, c)
    gp = np.zeros((n, h + 2 * p, w + 2 * p, c), dcols.dtype)
    for i in range(k):
        for j in range(k):
            gp[:, i:i + h, j:j + w, :] += d[:, :, :, i, j, :]
    return gp[:, p:p + h, p:p + w, :]


def max_pool_2x2(a: np.ndarray) -> np.ndarray:
    """2x2 max pooling, stride 2, of NHWC `a` with even H and W (SAME pads nothing)."""
    n, h, w, c = a.shape
    return a.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def max_pool_2x2_grad(a: np.ndarray, out: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Routes each window's gradient to its first maximum in row-major order (as
    TensorFlow and tensorweave do), so that ties send it to one element only."""
    n, h, w, c = a.shape
    r = a.reshape(n, h // 2, 2, w // 2, 2, c)
    taken = np.zeros(out.shape, bool)
    da = np.empty_like(r)
    for i in range(2):
        for j in range(2):
            first = (r[:, :, i, :, j, :] == out) & ~taken
            taken |= first
            da[:, :, i, :, j, :] = np.where(first, g, np.float32(0))
    return da.reshape(a.shape)


def numpy_cnn_grads(params: list[np.ndarray], x: np.ndarray,
                    y: np.ndarray) -> tuple[float, list[np.ndarray]]:
    """Loss and gradients (in `params`' order) of the W3 CNN, by hand: convolutions and
    their gradients are im2col + matmul."""
    w1, b1, w2, b2, w3, b3, w4, b4 = params
    n = x.shape[0]
    cols1 = im2col(x, 5)
    a1 = np.maximum(cols1 @ w1.reshape(-1, 32) + b1, 0).reshape(n, 28, 28, 32)
    p1 = max_pool_2x2(a1)
    cols2 = im2col(p1, 5)
    a2 = np.maximum(cols2 @ w2.reshape(-1, 64) + b2, 0).reshape(n, 14, 14, 64)
    p2 = max_pool_2x2(a2)
    f = p2.reshape(n, -1)
    h3 = np.maximum(f @ w3 + b3, 0)
    logits = h3 @ w4 + b4
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = float(-(y * (z - np.log(s))).sum(axis=1).mean())
    g = (e / s - y) / n
    gw4, gb4 = h3.T @ g, g.sum(axis=0)
    g3 = (g @ w4.T) * (h3 > 0)
    gw3, gb3 = f.T @ g3, g3.sum(axis=0)
    ga2 = max_pool_2x2_grad(a2, p2, (g3 @ w3.T).reshape(p2.shape))
    gc2 = (ga2 * (a2 > 0)).reshape(-1, 64)
    gw2, gb2 = (cols2.T @ gc2).reshape(w2.shape), gc2.sum(axis=0)
    gp1 = col2im(gc2 @ w2.reshape(-1, 64).T, p1.shape, 5)
    ga1 = max_pool_2x2_grad(a1, p1, gp1)
    gc1 = (ga1 * (a1 > 0)).reshape(-1, 32)
    gw1, gb1 = (cols1.T @ gc1).reshape(w1.shape), gc1.sum(axis=0)
    return loss, [gw1, gb1, gw2, gb2, gw3, gb3, gw4, gb4]


def numpy_cnn_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray, lr: float) -> float:
    """One SGD step of the W3 CNN in NumPy (updates `params` in place)."""
    loss, grads = numpy_cnn_grads(params, x, y)
    for p, g in zip(params, grads):
        p -= np.float32(lr) * g
    return loss


def tw_cnn_loss(variables: list, x, y):
    """The W3 CNN's mean softmax cross-entropy in tensorweave (NHWC, SAME padding)."""
    w1, b1, w2, b2, w3, b3, w4, b4 = variables
    h = tw.nn.relu(tw.nn.bias_add(tw.nn.conv2d(x, w1, strides=1, padding="SAME"), b1))
    h = tw.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    h = tw.nn.relu(tw.nn.bias_add(tw.nn.conv2d(h, w2, strides=1, padding="SAME"), b2))
    h = tw.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    h = tw.nn.relu(tw.matmul(tw.reshape(h, [-1, 7 * 7 * 64]), w3) + b3)
    logits = tw.matmul(h, w4) + b4
    return tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))


def tw_cnn_step(lr: float, target: str, seed: int) -> Callable:
    """A compiled SGD step of the W3 CNN with tensorweave variables."""
    variables = [tw.Variable(p) for p in _cnn_params(seed)]
    opt = tw.optimizers.SGD(lr)

    @tw.compile(target=target)
    def step(x, y):
        loss = tw_cnn_loss(variables, x, y)
        opt.minimize(loss, var_list=variables)
        return loss

    return step


def torch_cnn_step(lr: float, seed: int) -> Callable | None:
    try:
        import torch
    except ImportError:
        return None
    params = [torch.tensor(p, requires_grad=True) for p in _cnn_params(seed)]
    opt = torch.optim.SGD(params, lr=lr)
    f = torch.nn.functional

    def step(x, labels):
        w1, b1, w2, b2, w3, b3, w4, b4 = params
        # NCHW inside torch (its native layout), OIHW filters from the HWIO arrays
        h = torch.from_numpy(x).permute(0, 3, 1, 2)
        h = f.max_pool2d(f.relu(f.conv2d(h, w1.permute(3, 2, 0, 1), b1, padding=2)), 2)
        h = f.max_pool2d(f.relu(f.conv2d(h, w2.permute(3, 2, 0, 1), b2, padding=2)), 2)
        h = f.relu(h.permute(0, 2, 3, 1).reshape(x.shape[0], -1) @ w3 + b3)
        loss = f.cross_entropy(h @ w4 + b4, torch.from_numpy(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def jax_cnn_step(lr: float, seed: int) -> Callable | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    state = {"params": [jnp.asarray(p) for p in _cnn_params(seed)]}
    dims = ("NHWC", "HWIO", "NHWC")

    def pool(h):
        return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                     "SAME")

    def loss_fn(params, x, y):
        w1, b1, w2, b2, w3, b3, w4, b4 = params
        h = pool(jax.nn.relu(jax.lax.conv_general_dilated(
            x, w1, (1, 1), "SAME", dimension_numbers=dims) + b1))
        h = pool(jax.nn.relu(jax.lax.conv_general_dilated(
            h, w2, (1, 1), "SAME", dimension_numbers=dims) + b2))
        h = jax.nn.relu(h.reshape(x.shape[0], -1) @ w3 + b3)
        return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(h @ w4 + b4), axis=1))

    @jax.jit
    def update(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return [p - lr * g for p, g in zip(params, grads)], loss

    def step(x, y):
        state["params"], loss = update(state["params"], x, y)
        return loss.block_until_ready()

    return step


class ChildError(RuntimeError):
    """A fresh benchmark process failed; the message is the last line of its stderr."""


def _short_error(e: BaseException) -> str:
    """'failed: Type: first line of the message', cut to fit a table row."""
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    text = first if isinstance(e, ChildError) else f"{type(e).__name__}: {first}"
    text = text.removeprefix("tensorweave.errors.")
    return "failed: " + (text if len(text) <= 160 else text[:157] + "...")


def cnn_workload(repeats: int, reference_repeats: int) -> list[Row]:
    """W3 rows: NumPy, JAX, PyTorch, and each tensorweave target (step and first call); a
    target that raises gets a 'failed' row instead of ending the run."""
    name = "W3 cnn"
    x, y = _cnn_data(3)
    lr = 0.01
    params = _cnn_params(0)
    rows = [Row(name, "numpy", median_time(lambda: numpy_cnn_step(params, x, y, lr), repeats))]
    labels = y.argmax(1)
    for impl, make, data in (("jax", jax_cnn_step, (x, y)), ("torch", torch_cnn_step,
                                                            (x, labels))):
        step = make(lr, 0)
        if step is None:
            rows.append(Row(name, impl, None, note="not installed"))
        else:
            rows.append(Row(name, impl, median_time(lambda s=step, d=data: s(*d), repeats,
                                                    warmup=2)))
    for target in TARGETS:
        n = reference_repeats if target == "reference" else repeats
        try:
            step = tw_cnn_step(lr, target, 0)
            start = time.perf_counter()
            step(x, y)
            first = time.perf_counter() - start
            t = median_time(lambda s=step: s(x, y), n, warmup=0)
        except Exception as e:  # noqa: BLE001 -- report any failure as a row, keep going
            rows.append(Row(name, f"tw {target}", None, note=_short_error(e)))
            rows.append(Row(f"{name} first call", f"tw {target}", None, note="-"))
            continue
        rows.append(Row(name, f"tw {target}", t, note=f"{n} runs" if n != repeats else ""))
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


# ------------------------------------------------- first call in a fresh process

FRESH_WORKLOADS = {**{k: name for k, (name, _, _) in MLPS.items()}, "W3": "W3 cnn"}


def first_call_child(key: str, target: str) -> None:
    """Run in a fresh process (``--first-call-child``): time the first call of a new W1 /
    W2 / W3 step and print one JSON line with it, the tensorweave import time and the
    cpu target's JIT counters."""
    if key == "W3":
        x, y = _cnn_data(3)
        step = tw_cnn_step(0.01, target, 0)
    else:
        _, sizes, batch = MLPS[key]
        x, y = _mlp_data(sizes, batch)
        step = tw_step(sizes, 0.01, target, 0)
    start, cpu = time.perf_counter(), time.process_time()
    step(x, y)
    first, first_cpu = time.perf_counter() - start, time.process_time() - cpu
    from tensorweave.targets.cpu import jit
    stats = {k: v for k, v in vars(jit.STATS).items() if isinstance(v, (int, float))}
    # (first_cpu: the process's CPU time for the call, all threads: steadier than the
    # wall time on a shared machine)
    print(json.dumps({"first": first, "first_cpu": first_cpu, "import": IMPORT_SECONDS,
                      "jit": stats}))


def _dir_size(path: str) -> tuple[int, int]:
    """(files, bytes) under `path`."""
    files = size = 0
    for root, _, names in os.walk(path):
        for n in names:
            files += 1
            size += os.path.getsize(os.path.join(root, n))
    return files, size


def _run_child(key: str, target: str, cache_dir: str) -> dict:
    env = dict(os.environ, TW_CACHE_DIR=cache_dir)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (see the module docstring)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--first-call-child",
                           key, "--target", target], env=env, capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        raise ChildError(lines[-1])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _child_note(result: dict, cache_dir: str) -> str:
    """Import time, the non-zero cpu JIT counters (whatever ``jit.STATS`` holds: the disk
    cache is new and its counters may change) and what the cache directory holds."""
    jit = " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                   for k, v in result["jit"].items() if v)
    files, size = _dir_size(cache_dir)
    return (f"import {result['import'] * 1e3:.0f} ms; jit: {jit or 'nothing'}; "
            f"dir: {files} files, {size / 1024:.0f} KB")


def fresh_first_call_rows() -> list[Row]:
    """The first call of W1 / W2 / W3 in a fresh process, twice with the same new, empty
    ``TW_CACHE_DIR``: the first run finds the disk cache cold, the second warm. Times the
    call only (trace + compile + run); the import is in the note."""
    rows = []
    for key, name in FRESH_WORKLOADS.items():
        for target in TARGETS:
            with tempfile.TemporaryDirectory(prefix="tw-cache-") as cache_dir:
                for state in ("cold", "warm"):
                    label = f"{name} first call, {state} disk"
                    try:
                        result = _run_child(key, target, cache_dir)
                    except Exception as e:  # noqa: BLE001 -- a failed child is a row
                        rows.append(Row(label, f"tw {target}", None, note=_short_error(e)))
                        continue
                    rows.append(Row(label, f"tw {target}", result["first"],
                                    note=_child_note(result, cache_dir)))
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
    header = f"{'workload':<37} {'impl':<14} {'median':>10} {'vs numpy':>9} {'rate':>12} " \
             f"{'share':>6}  note"
    print(header)
    print("-" * len(header))
    for r in rows:
        base = numpy_time.get(r.workload.replace(" first call", ""))
        ratio = f"{r.seconds / base:.2f}x" if r.seconds and base and "first" not in r.workload \
            else ""
        print(f"{r.workload:<37} {r.impl:<14} {_fmt_time(r.seconds):>10} {ratio:>9} "
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
    parser.add_argument("--first-call-child", choices=sorted(FRESH_WORKLOADS),
                        help=argparse.SUPPRESS)
    parser.add_argument("--target", choices=TARGETS, default="cpu", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_call_child:
        first_call_child(args.first_call_child, args.target)
        return
    if os.environ.get("TW_CACHE_DIR"):
        run_all(args.quick)
        return
    # a fresh disk cache, so that "first call" does not depend on earlier runs
    with tempfile.TemporaryDirectory(prefix="tw-cache-") as cache_dir:
        os.environ["TW_CACHE_DIR"] = cache_dir
        try:
            run_all(args.quick)
        finally:
            del os.environ["TW_CACHE_DIR"]


def run_all(quick: bool) -> None:
    """Every workload, then the table."""
    repeats = 5 if quick else 15
    start = time.perf_counter()
    gflops_all, gflops, copy_gbs = ceilings(repeats)
    rows: list[Row] = []
    w1 = train_workload(*MLPS["W1"], repeats * 4)
    _flop_rows(w1, "W1 softmax reg", 3 * 2 * 100 * 784 * 10, gflops)
    rows += w1
    w2 = train_workload(*MLPS["W2"], repeats)
    w2_flops = 3 * 2 * 256 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
    _flop_rows(w2, "W2 mlp", w2_flops, gflops)
    rows += w2
    rows += fresh_first_call_rows()
    w3 = cnn_workload(repeats, max(3, repeats // 3))
    _flop_rows(w3, "W3 cnn", CNN_FLOPS, gflops)
    rows += w3
    rows += gelu_workload(16 << 20, max(3, repeats // 2), copy_gbs)
    rows += dispatch_workload(max(3, repeats // 3))
    print_table(rows, gflops, copy_gbs)
    print(f"sgemm through NumPy with all of BLAS's threads: {gflops_all:.0f} GFLOP/s")
    from tensorweave.targets.cpu import jit
    st = jit.STATS
    print(f"cpu target: {st.misses} modules built in {st.compile_seconds:.2f} s "
          f"({getattr(st, 'llvm_compiles', '?')} by LLVM, {getattr(st, 'disk_hits', 0)} from "
          f"disk; {st.hits} in-memory hits); host {jit.host_info().cpu}, "
          f"{jit.host_info().vector_bits}-bit vectors; total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
