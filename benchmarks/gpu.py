"""GPU benchmarks: tensorweave's gpu target beside PyTorch (eager and, with --compile,
torch.compile) on the same card, in one run (issue 12).

    python benchmarks/gpu.py             # needs a CUDA GPU; PyTorch with CUDA for its rows
    python benchmarks/gpu.py --quick     # fewer repetitions, the small sizes only
    python benchmarks/gpu.py --compile   # add torch.compile rows (slow to compile)
    python benchmarks/gpu.py --quick --compile --only torch.compile   # those rows alone

With no GPU (or under numba's simulator, which is not a GPU to time) it prints one
"no GPU" line and exits 0, so CI can run it anywhere.

Workloads (the same models as benchmarks/run.py, on the device):
- W2: MLP 784-1024-1024-10, ReLU, softmax cross-entropy, SGD training step, batch 256
  and 4096;
- W3: the W3 CNN (conv 5x5x32, pool, conv 5x5x64, pool, dense 1024, dense 10) training
  step, batch 64 and 512;
- W4: y = gelu_tanh(x * a + b) over 16M and 256M float32 values, forward only, GB/s
  (one read, one write) against the card's device-to-device copy bandwidth measured in
  the same run;
- W5: the LSTM language model of ``benchmarks/lstm.py --w5`` (issue 13's W5: embedding
  gather, an LSTM cell in ``tw.scan``, logits over 10k words, sparse softmax cross entropy,
  SGD; V=10k, E=H=256, T=20, B=32), the model taken from that script so both measure the
  same thing; its gpu-target row says whether the step ran as one GPU step or on the
  dataflow executor (and why);
- W6: dispatch of a compiled ``x + 1`` on a one-element device array (microseconds).
Inputs live on the device for every framework (tensorweave takes them as numba device
arrays; gelu keeps its result there with ``keep_on_device=True``). Every timing ends
with a device synchronization. Each row prints the median time per step.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

GELU_C = float(np.sqrt(2.0 / np.pi))
MLP_SIZES = [784, 1024, 1024, 10]
CNN_SHAPES = [(5, 5, 1, 32), (32,), (5, 5, 32, 64), (64,), (7 * 7 * 64, 1024), (1024,),
              (1024, 10), (10,)]


def no_gpu_reason() -> str | None:
    """Why this run cannot time a GPU, or None when it can."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0"):
        return "numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM): nothing to time"
    try:
        from numba import cuda
    except ImportError:
        return "numba-cuda is not installed (pip install -e '.[gpu]')"
    try:
        if not cuda.is_available():
            return "numba finds no CUDA GPU or driver"
    except Exception as e:  # noqa: BLE001 - any driver failure
        return f"the CUDA driver failed: {e}"
    return None


def timed(fn: Callable[[], object], sync: Callable[[], None], repeats: int,
          warmup: int = 2) -> float:
    """Median seconds per call of `fn`, each call followed by `sync`."""
    for _ in range(warmup):
        fn()
        sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


# ------------------------------------------------------------------------ models

def _mlp_params(seed: int, sizes: list[int] = MLP_SIZES) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        out += [(rng.standard_normal((n_in, n_out)) * np.sqrt(2 / n_in)).astype(np.float32),
                np.zeros(n_out, np.float32)]
    return out


def _cnn_params(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.zeros(s, np.float32) if len(s) == 1 else
            (rng.standard_normal(s) * np.sqrt(2 / np.prod(s[:-1]))).astype(np.float32)
            for s in CNN_SHAPES]


def _data(shape: tuple[int, ...], batch: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.random((batch, *shape), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return x, y


def tw_mlp(tw, x, y, variables):
    h = x
    for i in range(len(variables) // 2):
        h = tw.matmul(h, variables[2 * i]) + variables[2 * i + 1]
        if i < len(variables) // 2 - 1:
            h = tw.nn.relu(h)
    return tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=h))


def tw_cnn(tw, x, y, variables):
    w1, b1, w2, b2, w3, b3, w4, b4 = variables
    h = tw.nn.relu(tw.nn.bias_add(tw.nn.conv2d(x, w1, strides=1, padding="SAME"), b1))
    h = tw.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    h = tw.nn.relu(tw.nn.bias_add(tw.nn.conv2d(h, w2, strides=1, padding="SAME"), b2))
    h = tw.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    h = tw.nn.relu(tw.matmul(tw.reshape(h, [-1, 7 * 7 * 64]), w3) + b3)
    logits = tw.matmul(h, w4) + b4
    return tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))


def torch_mlp(torch, x, y, params):
    h = x
    for i in range(len(params) // 2):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < len(params) // 2 - 1:
            h = torch.relu(h)
    return torch.nn.functional.cross_entropy(h, y)


def torch_cnn(torch, x, y, params):
    f = torch.nn.functional
    w1, b1, w2, b2, w3, b3, w4, b4 = params
    h = x.permute(0, 3, 1, 2)
    h = f.max_pool2d(f.relu(f.conv2d(h, w1.permute(3, 2, 0, 1), b1, padding=2)), 2)
    h = f.max_pool2d(f.relu(f.conv2d(h, w2.permute(3, 2, 0, 1), b2, padding=2)), 2)
    h = f.relu(h.permute(0, 2, 3, 1).reshape(x.shape[0], -1) @ w3 + b3)
    return f.cross_entropy(h @ w4 + b4, y)


@contextlib.contextmanager
def w5_sizes(**sizes: int) -> Iterator[object]:
    """benchmarks/lstm.py as a module, with its W5 sizes (``V``, ``E``, ``H``, ``T``,
    ``B``) replaced for the block: its `w5_data` and `w5_loss` read them at call time, so
    the smoke run's tiny model is the benchmark's model, not a copy of it."""
    import lstm
    saved = {k: getattr(lstm, f"W5_{k}") for k in sizes}
    for k, v in sizes.items():
        setattr(lstm, f"W5_{k}", v)
    try:
        yield lstm
    finally:
        for k, v in saved.items():
            setattr(lstm, f"W5_{k}", v)


def tw_w5_step(tw, lstm, target: str = "gpu") -> tuple[Callable[[object, object], object],
                                                      object]:
    """W5's SGD training step on fresh variables (as ``benchmarks/lstm.py --w5``) compiled
    for `target`, and its compiled function (for ``native_reason``)."""
    vs = [tw.Variable(a) for a in lstm.w5_data()["params"]]

    @tw.compile(target=target)
    def step(tok, tgt):
        loss = lstm.w5_loss(vs, tok, tgt)
        for v, g in zip(vs, tw.gradients(loss, vs)):
            v.assign_sub(lstm.W5_LR * g)
        return loss
    return step, step


def torch_w5_loss(torch, lstm, params, tok, tgt):
    """W5's loss in PyTorch, written as `lstm.w5_loss` (time-major, gates i, f, g, o)."""
    E, Wih, Whh, b, Wo, bo = params
    B, T, H = lstm.W5_B, lstm.W5_T, lstm.W5_H
    xw = (E[tok.t().reshape(T * B)] @ Wih + b).reshape(T, B, 4 * H)
    h = c = torch.zeros(B, H, device=tok.device)
    hs = []
    for t in range(T):
        g = xw[t] + h @ Whh
        i, f = torch.sigmoid(g[:, :H]), torch.sigmoid(g[:, H:2 * H])
        gg, o = torch.tanh(g[:, 2 * H:3 * H]), torch.sigmoid(g[:, 3 * H:])
        c = f * c + i * gg
        h = o * torch.tanh(c)
        hs.append(h)
    logits = torch.stack(hs).reshape(T * B, H) @ Wo + bo
    return torch.nn.functional.cross_entropy(logits, tgt.t().reshape(T * B).long())


def torch_w5_step(torch, lstm, compiled: bool) -> Callable[[], object]:
    """W5's SGD step in PyTorch on the same data and initial values."""
    d = lstm.w5_data()
    ps = [torch.tensor(p, device="cuda", requires_grad=True) for p in d["params"]]
    opt = torch.optim.SGD(ps, lr=lstm.W5_LR)
    tok = torch.tensor(d["tok"], device="cuda")
    tgt = torch.tensor(d["tgt"], device="cuda")

    def step():
        loss = torch_w5_loss(torch, lstm, ps, tok, tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return torch.compile(step) if compiled else step


# ---------------------------------------------------------------------- rows

def tw_train_step(tw, cuda, loss_fn, params, x, y) -> Callable[[], object]:
    variables = [tw.Variable(p) for p in params]
    opt = tw.optimizers.SGD(0.01)

    @tw.compile(target="gpu")
    def step(x, y):
        loss = loss_fn(tw, x, y, variables)
        opt.minimize(loss, var_list=variables)
        return loss

    dx, dy = cuda.to_device(x), cuda.to_device(y)
    return lambda: step(dx, dy)


def torch_train_step(torch, loss_fn, params, x, y, compiled: bool) -> Callable[[], object]:
    ps = [torch.tensor(p, device="cuda", requires_grad=True) for p in params]
    opt = torch.optim.SGD(ps, lr=0.01)
    tx, ty = torch.tensor(x, device="cuda"), torch.tensor(y, device="cuda")

    def step():
        loss = loss_fn(torch, tx, ty, ps)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return torch.compile(step) if compiled else step


def copy_bandwidth(cuda, nbytes: int, repeats: int) -> float:
    """Device-to-device copy GB/s (one read and one write per byte)."""
    src = cuda.device_array(nbytes, np.uint8)
    dst = cuda.device_array(nbytes, np.uint8)
    t = timed(lambda: dst.copy_to_device(src), cuda.synchronize, repeats)
    return 2 * nbytes / t / 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    parser.add_argument("--compile", action="store_true", help="add torch.compile rows")
    parser.add_argument("--only", choices=["tensorweave gpu", "torch eager", "torch.compile"],
                        help="measure the rows of this implementation only (e.g. the "
                             "torch.compile rows in a run of their own: slow to compile)")
    parser.add_argument("--smoke", action="store_true",
                        help="run each tensorweave row once on tiny shapes (works under "
                             "numba's simulator: checks the script, times nothing)")
    args = parser.parse_args()
    reason = no_gpu_reason()
    if args.smoke:
        return smoke()
    if reason is not None:
        print(f"no GPU: {reason}; benchmarks/gpu.py measures nothing here")
        return 0
    from numba import cuda

    import tensorweave as tw
    try:
        import torch
        if not torch.cuda.is_available():
            print(f"PyTorch {torch.__version__} has no CUDA here: tensorweave rows only")
            torch = None
    except ImportError:
        print("PyTorch is not installed: tensorweave rows only")
        torch = None

    repeats = 5 if args.quick else 20
    dev = cuda.get_current_device()
    driver = cuda.cudadrv.driver.driver.get_version()
    print(f"card: {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}, "
          f"compute capability {dev.compute_capability}, CUDA driver {driver}"
          + (f", PyTorch {torch.__version__}" if torch else ""))
    bandwidth = copy_bandwidth(cuda, 256 << 20, repeats)
    print(f"device-to-device copy: {bandwidth:.0f} GB/s")
    rows: list[tuple[str, str, float | None, str]] = []

    def add(name: str, impl: str, make: Callable[[], Callable[[], object]], sync, extra=None):
        if args.only and impl != args.only:
            return  # `make` builds the row lazily: nothing of it has run
        try:
            t = timed(make(), sync, repeats)
            row = (name, impl, t, extra(t) if extra else "")
        except Exception as e:  # noqa: BLE001 - a failing implementation is a row, not the end
            row = (name, impl, None, f"failed: {type(e).__name__}: {str(e)[:80]}")
        rows.append(row)
        # each row as soon as it is measured: a run stopped by a time limit keeps them
        print(f"  {row[0]} / {row[1]}: " + ("-" if row[2] is None else f"{row[2] * 1e3:.3f} ms")
              + f"  {row[3]}", flush=True)

    torch_sync = (lambda: torch.cuda.synchronize()) if torch else None
    impls = [("torch eager", False)] + ([("torch.compile", True)] if args.compile else [])
    workloads = [("W2 MLP", tw_mlp, torch_mlp, _mlp_params, (784,), b)
                 for b in ((256,) if args.quick else (256, 4096))]
    workloads += [("W3 CNN", tw_cnn, torch_cnn, _cnn_params, (28, 28, 1), b)
                  for b in ((64,) if args.quick else (64, 512))]
    for name, tw_loss, torch_loss, params_of, shape, batch in workloads:
        label = f"{name} b{batch}"
        x, y = _data(shape, batch, 0)
        if name.startswith("W2"):
            x = x.reshape(batch, -1)
        add(label, "tensorweave gpu",
            lambda f=tw_loss, p=params_of, x=x, y=y: tw_train_step(tw, cuda, f, p(0), x, y),
            cuda.synchronize)
        if torch:
            for impl, compiled in impls:
                add(label, impl, lambda f=torch_loss, p=params_of, x=x, y=y, c=compiled:
                    torch_train_step(torch, f, p(0), x, y, c), torch_sync)

    for n in ((16 << 20,) if args.quick else (16 << 20, 256 << 20)):
        label = f"W4 gelu {n >> 20}M"
        x = np.random.default_rng(0).random(n, dtype=np.float32)

        def gbs(t, n=n):
            rate = 2 * 4 * n / t / 1e9
            return f"{rate:.0f} GB/s ({rate / bandwidth:.0%} of copy)"

        def tw_gelu(x=x):
            f = tw.compile(lambda v: (lambda y: 0.5 * y * (1.0 + tw.tanh(
                GELU_C * (y + 0.044715 * y * y * y))))(v * 1.5 + 0.25),
                target="gpu", keep_on_device=True)
            dx = cuda.to_device(x)
            return lambda: f(dx)
        add(label, "tensorweave gpu", tw_gelu, cuda.synchronize, gbs)
        if torch:
            tx = torch.tensor(x, device="cuda")

            def torch_gelu(tx=tx):
                def g(v):
                    y = v * 1.5 + 0.25
                    return 0.5 * y * (1.0 + torch.tanh(GELU_C * (y + 0.044715 * y * y * y)))
                return lambda: g(tx)
            add(label, "torch eager", torch_gelu, torch_sync, gbs)
            if args.compile:
                add(label, "torch.compile", lambda: torch.compile(torch_gelu()), torch_sync, gbs)

    with w5_sizes() as lstm:
        d = lstm.w5_data()
        label = f"W5 LSTM LM b{lstm.W5_B}"
        how: list[str] = []

        def tw_w5():
            step, fn = tw_w5_step(tw, lstm)
            dtok, dtgt = cuda.to_device(d["tok"]), cuda.to_device(d["tgt"])
            step(dtok, dtgt)
            how.append(_how_it_ran(fn, d["tok"], d["tgt"]))
            return lambda: step(dtok, dtgt)
        add(label, "tensorweave gpu", tw_w5, cuda.synchronize, lambda t: how[0] if how else "")
        if torch:
            for impl, compiled in impls:
                add(label, impl, lambda c=compiled: torch_w5_step(torch, lstm, c), torch_sync)

    one = np.ones(1, np.float32)
    add("W6 dispatch x+1", "tensorweave gpu",
        lambda: (lambda f, d: (lambda: f(d)))(tw.compile(lambda v: v + 1.0, target="gpu",
                                                         keep_on_device=True),
                                              cuda.to_device(one)),
        cuda.synchronize, lambda t: f"{t * 1e6:.1f} us")
    if torch:
        t1 = torch.ones(1, device="cuda")
        add("W6 dispatch x+1", "torch eager", lambda: (lambda: t1 + 1), torch_sync,
            lambda t: f"{t * 1e6:.1f} us")

    print(f"\n{'workload':<18} {'implementation':<16} {'median':>10}  note")
    for name, impl, t, note in rows:
        shown = "-" if t is None else f"{t * 1e3:.3f} ms"
        print(f"{name:<18} {impl:<16} {shown:>10}  {note}")
    return 0


def _how_it_ran(fn, *arrays: np.ndarray) -> str:
    """Whether the gpu target ran `fn` for `arrays` as one GPU step (with its device
    loops' trip counts and kernels per iteration), and if not why."""
    from tensorweave.targets.gpu.step import Copy, Launch, Loop, walk_actions
    exe = fn.get_concrete_function(*arrays).executable
    reason = getattr(exe, "native_reason", None)
    host = getattr(exe, "fallbacks", {})
    if reason:
        return f"dataflow executor: {reason}"
    loops = [a for step in getattr(exe, "_steps", {}).values() if step is not None
             for a in walk_actions(step.plan.actions) if isinstance(a, Loop)]

    def body(lp: Loop) -> str:
        # a trip count known only at run time prints as "n" (one predicate download each)
        trips = "n" if lp.trips is None else lp.trips
        kinds = [(Launch, "kernels"), (Copy, "copies")]
        parts = [f"{sum(isinstance(b, k) for b in lp.body)} {name}" for k, name in kinds]
        other = sum(not isinstance(b, (Launch, Copy)) for b in lp.body)
        return f"{trips}x" + "+".join(parts) + (f"+{other} nested" if other else "")

    shown = ", ".join(body(lp) for lp in loops)
    return ("one GPU step" + (f", {len(host)} host calls" if host else "")
            + (f", device loops {shown}" if loops else ""))


def smoke() -> int:
    """Each tensorweave workload once on tiny shapes (the simulator runs a Python thread
    per GPU thread), results checked against a NumPy or reference evaluation."""
    from numba import cuda

    import tensorweave as tw
    x, y = _data((12,), 4, 0)  # the W2 model with 12-16-16-10 layers
    step = tw_train_step(tw, cuda, tw_mlp, _mlp_params(0, [12, 16, 16, 10]), x, y)
    losses = [float(step()) for _ in range(2)]
    assert np.isfinite(losses).all() and losses[1] < losses[0], losses
    v = np.linspace(-2, 2, 64, dtype=np.float32)
    f = tw.compile(lambda t: 0.5 * t * (1.0 + tw.tanh(GELU_C * (t + 0.044715 * t * t * t))),
                   target="gpu", keep_on_device=True)
    want = 0.5 * v * (1 + np.tanh(GELU_C * (v + 0.044715 * v ** 3)))
    np.testing.assert_allclose(f(cuda.to_device(v)).numpy(), want, rtol=1e-5, atol=1e-6)
    with w5_sizes(V=40, E=6, H=5, T=3, B=2) as lstm:  # the W5 model, tiny
        d = lstm.w5_data()
        gpu, fn = tw_w5_step(tw, lstm, "gpu")
        ref, _ = tw_w5_step(tw, lstm, "reference")
        w5 = [(float(gpu(cuda.to_device(d["tok"]), cuda.to_device(d["tgt"]))),
               float(ref(d["tok"], d["tgt"]))) for _ in range(2)]
        how = _how_it_ran(fn, d["tok"], d["tgt"])
    np.testing.assert_allclose(*zip(*w5), rtol=1e-5)
    assert w5[1][0] < w5[0][0], w5
    assert how.startswith("one GPU step, device loops"), how  # no host call, no fallback
    print(f"smoke: W2 MLP losses {losses[0]:.4f} -> {losses[1]:.4f}, W4 gelu matches, "
          f"W5 LSTM LM losses {w5[0][0]:.4f} -> {w5[1][0]:.4f} match the reference "
          f"({how}); nothing timed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
