"""LSTM language-model training step time (issue 6's benchmark, and issue 13's W5).

    python benchmarks/lstm.py [--steps N] [--target reference|cpu]
    python benchmarks/lstm.py --w5 [--steps N] [--numpy] [--dataflow]

Without --w5: one table with median and best step time, words per second, and the
first-call latency (trace + compile + first step), for the model of examples/lstm_lm.py
at its default size (batch 32, 20 words per sequence, hidden 128, vocabulary 2000).

With --w5: issue 13's W5 on the cpu target (embedding gather, ``x @ W_ih + b`` for all
steps, an LSTM cell in ``tw.scan``, logits over 10k words, mean sparse softmax cross
entropy, SGD on all six parameters; V=10k, E=H=256, T=20, B=32; data and initial values
as the peers' harness, ../shared/peers/common.py), whether it ran as one native step,
its median and best step times, and with --numpy the hand-written NumPy step of the
peers' harness (bench_numpy.w5_grads, sparse embedding update) timed in the same loop,
interleaved, so both see the same machine load (but with tensorweave's BLAS setting, one
thread per call: `TW_BLAS_THREADS`; the peers' own process gives NumPy two); with
--dataflow also the same step on the dataflow executor (how W5 ran before its loops
compiled natively: a deadline keeps a step with loops there), on copies of the variables.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import lstm_lm  # noqa: E402

import tensorweave as tw  # noqa: E402

W5_V, W5_E, W5_H, W5_T, W5_B, W5_LR = 10_000, 256, 256, 20, 32, 0.1


def w5_data() -> dict:
    """W5's tokens, targets and initial parameters (as ../shared/peers/common.w5_data)."""
    r = np.random.default_rng(4)

    def u(shape: tuple, s: float) -> np.ndarray:
        return r.uniform(-s, s, shape).astype(np.float32)
    tok = r.integers(0, W5_V, (W5_B, W5_T)).astype(np.int32)
    tgt = r.integers(0, W5_V, (W5_B, W5_T)).astype(np.int32)
    params = [u((W5_V, W5_E), 0.1), u((W5_E, 4 * W5_H), 1 / 16), u((W5_H, 4 * W5_H), 1 / 16),
              np.zeros(4 * W5_H, np.float32), u((W5_H, W5_V), 1 / 16),
              np.zeros(W5_V, np.float32)]
    return {"tok": tok, "tgt": tgt, "params": params}


def w5_loss(p: list, tok: tw.Tensor, tgt: tw.Tensor) -> tw.Tensor:
    """W5's loss, written as every framework of the peers' harness writes it."""
    E, Wih, Whh, b, Wo, bo = p
    B, T, H = W5_B, W5_T, W5_H
    emb = tw.gather(E, tw.reshape(tw.transpose(tok, [1, 0]), [T * B]))
    xw = tw.reshape(tw.matmul(emb, Wih) + b, [T, B, 4 * H])

    def cell(carry, xw_t):
        h, c = carry
        g = xw_t + tw.matmul(h, Whh)
        i, f = tw.sigmoid(g[:, :H]), tw.sigmoid(g[:, H:2 * H])
        gg, o = tw.tanh(g[:, 2 * H:3 * H]), tw.sigmoid(g[:, 3 * H:])
        c = f * c + i * gg
        return o * tw.tanh(c), c

    z = tw.zeros([B, H], tw.float32)
    hs, _ = tw.scan(cell, xw, initializer=(z, z))
    logits = tw.matmul(tw.reshape(hs, [T * B, H]), Wo) + bo
    labels = tw.reshape(tw.transpose(tgt, [1, 0]), [T * B])
    return tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                           logits=logits))


def _w5_step(params: list[np.ndarray], **compile_args: object) -> object:
    """A compiled W5 training step on fresh variables holding `params`."""
    vs = [tw.Variable(a) for a in params]

    @tw.compile(target="cpu", **compile_args)
    def step(tok, tgt):
        loss = w5_loss(vs, tok, tgt)
        for v, g in zip(vs, tw.gradients(loss, vs)):
            v.assign_sub(W5_LR * g)
        return loss
    return step


def w5_main(steps: int, with_numpy: bool, with_dataflow: bool) -> None:
    """Time W5 on the cpu target (and NumPy by hand, the dataflow executor: interleaved)."""
    d = w5_data()
    step = _w5_step(d["params"])

    tok, tgt = d["tok"], d["tgt"]
    start = time.perf_counter()
    loss0 = float(step(tok, tgt))
    first = time.perf_counter() - start
    exe = step.get_concrete_function(tok, tgt).executable
    native = exe.native_step([tok, tgt]) is not None
    runs: dict[str, list[float]] = {"tw cpu": []}
    cpu: dict[str, list[float]] = {}  # process CPU time (all threads): steadier under load
    calls = {"tw cpu": lambda: step(tok, tgt)}
    if with_dataflow:
        slow = _w5_step(d["params"], timeout=3600.0)
        runs["tw cpu, dataflow executor"] = []
        calls["tw cpu, dataflow executor"] = lambda: slow(tok, tgt)
    if with_numpy:
        sys.path.insert(0, str(ROOT.parent / "shared" / "peers"))
        import bench_numpy  # the peers' hand-written step (sets 2 BLAS threads on import)
        params = [p.copy() for p in d["params"]]

        def numpy_step() -> None:
            _, grads = bench_numpy.w5_grads(tok, tgt, params)
            bench_numpy.sgd(params, grads, W5_LR)
        runs["NumPy by hand"] = []
        calls["NumPy by hand"] = numpy_step
    for _ in range(3):  # warm-up
        for fn in calls.values():
            fn()
    for _ in range(steps):
        for name, fn in calls.items():
            t, c = time.perf_counter(), time.process_time()
            fn()
            runs[name].append(time.perf_counter() - t)
            cpu.setdefault(name, []).append(time.process_time() - c)
    print(f"W5 on the cpu target: {'one native step' if native else 'dataflow executor'}"
          + ("" if native else f" ({exe.native_reason})")
          + f"; first call {first * 1e3:.0f} ms, first loss {loss0:.4f}")
    print(f"{'W5 LSTM LM step (V=10k, E=H=256, T=20, B=32)':46s} {'median ms':>10s} "
          f"{'best ms':>9s} {'CPU median ms':>14s}")
    for name, ts in runs.items():
        print(f"  {name:44s} {statistics.median(ts) * 1e3:10.1f} {min(ts) * 1e3:9.1f} "
              f"{statistics.median(cpu[name]) * 1e3:14.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--target", default="reference")
    parser.add_argument("--w5", action="store_true", help="issue 13's W5 on the cpu target")
    parser.add_argument("--numpy", action="store_true",
                        help="with --w5: NumPy by hand (../shared/peers) in the same loop")
    parser.add_argument("--dataflow", action="store_true",
                        help="with --w5: the step on the dataflow executor in the same loop")
    args = parser.parse_args()
    if args.w5:
        w5_main(args.steps, args.numpy, args.dataflow)
        return
    cfg = lstm_lm.parse_args([])
    corpus = lstm_lm.Corpus(lstm_lm.stdlib_text(300_000), cfg.vocab)
    model = lstm_lm.LSTMLanguageModel(len(corpus.vocab), cfg.embed, cfg.hidden, cfg.seed)
    optimizer = tw.optimizers.Adam(cfg.learning_rate)
    words = tw.TensorSpec([cfg.batch, cfg.seq_len], tw.int32)

    @tw.compile(input_signature=[words, words], target=args.target)
    def train_step(inputs, targets):
        loss = model.loss(inputs, targets)
        optimizer.minimize(loss, var_list=model.variables)
        return loss

    rng = np.random.default_rng(0)
    batches = [corpus.batch(rng, cfg.batch, cfg.seq_len) for _ in range(args.steps + 1)]
    start = time.perf_counter()
    train_step(*batches[0])
    first = time.perf_counter() - start
    times = []
    for b in batches[1:]:
        start = time.perf_counter()
        train_step(*b)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"{'workload':38s} {'target':10s} {'median ms':>10s} {'best ms':>9s} "
          f"{'words/s':>9s} {'first call ms':>14s}")
    print(f"{'LSTM LM train step (32x20, H=128)':38s} {args.target:10s} {median * 1e3:10.1f} "
          f"{min(times) * 1e3:9.1f} {cfg.batch * cfg.seq_len / median:9.0f} {first * 1e3:14.0f}")


if __name__ == "__main__":
    main()
