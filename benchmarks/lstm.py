"""LSTM language-model training step time (issue 6's benchmark).

    python benchmarks/lstm.py [--steps N] [--target reference|cpu]

Prints one table: median and best step time, words per second, and the first-call
latency (trace + compile + first step), for the model of examples/lstm_lm.py at its
default size (batch 32, 20 words per sequence, hidden 128, vocabulary 2000).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import lstm_lm  # noqa: E402

import tensorweave as tw  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--target", default="reference")
    args = parser.parse_args()
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
