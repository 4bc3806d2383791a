"""A word-level LSTM language model, its recurrence written with `tw.scan` (a functional
``While`` loop), trained with Adam on real text available offline: the Python standard
library's own source files, lowercased and split into words (identifiers, numbers and
single punctuation characters), restricted to the most frequent words (``<unk>`` for
the rest).

Each step feeds `--batch` random windows of `--seq-len` words and predicts every next
word; the gradient runs back through the loop (the forward loop saves each step's
values on a stack, the backward loop pops them). Prints training perplexity and words
per second as it goes, then the perplexity on held-out text.

    python examples/lstm_lm.py                                   # defaults below
    python examples/lstm_lm.py --steps 50 --hidden 32 --batch 8  # a quick run
    python examples/lstm_lm.py --sampled-softmax 64              # sampled softmax
    python examples/lstm_lm.py --plot loss.png                   # and the training curve

Distributed (between-graph replication, TensorFlow 1's API): the embedding and the
output layer are sharded by rows over the parameter servers (partitioned variables), so
a step moves only the rows of the words it touches; the LSTM weights live on one PS;
every worker trains asynchronously on its own batches::

    tensorweave launch --ps 2 --workers 2 examples/lstm_lm.py -- --distributed \
        --sampled-softmax 64
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tensorweave as tw
from tensorweave.utils import MissingPlotDependency, Progress, require_matplotlib, save_training_curve

TOKEN = re.compile(r"[a-z_][a-z0-9_]*|[0-9]+|[^\sa-z0-9_]")
UNK = "<unk>"


# --------------------------------------------------------------------------------- data

def stdlib_text(max_chars: int) -> str:
    """Source of the standard library's top-level modules, sorted by name, lowercased, up
    to `max_chars` characters."""
    root = Path(os.__file__).resolve().parent
    parts, total = [], 0
    for path in sorted(root.glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(text.lower())
        total += len(text)
        if total >= max_chars:
            break
    if not parts:
        raise SystemExit(f"no Python sources found under {root}")
    return "\n".join(parts)[:max_chars]


class Corpus:
    """Token ids of the training and held-out text, and the vocabulary."""

    def __init__(self, text: str, vocab_size: int, held_out: float = 0.1) -> None:
        words = TOKEN.findall(text)
        counts = collections.Counter(words)
        self.vocab = [UNK] + [w for w, _ in counts.most_common(vocab_size - 1)]
        index = {w: i for i, w in enumerate(self.vocab)}
        ids = np.array([index.get(w, 0) for w in words], dtype=np.int32)
        split = int(len(ids) * (1 - held_out))
        self.train, self.valid = ids[:split], ids[split:]

    def batch(self, rng: np.random.Generator, batch: int, seq_len: int,
              source: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`batch` random windows: inputs and the next words, both [batch, seq_len]."""
        data = self.train if source is None else source
        starts = rng.integers(0, len(data) - seq_len - 1, size=batch)
        windows = np.stack([data[s:s + seq_len + 1] for s in starts])
        return windows[:, :-1], windows[:, 1:]


# -------------------------------------------------------------------------------- model

class LSTMLanguageModel:
    """Embedding -> one LSTM layer (one fused gate matrix) -> softmax over the vocabulary."""

    def __init__(self, vocab: int, embed: int, hidden: int, seed: int = 0,
                 make_variable: Callable[[str, np.ndarray, bool], Any] | None = None) -> None:
        """`make_variable(name, initial_value, by_rows)` creates each variable (default: a
        `tw.Variable`); `by_rows` marks the tables indexed by word (the embedding and the
        output layer), which the distributed mode shards over the parameter servers."""
        rng = np.random.default_rng(seed)
        make = make_variable or (lambda name, value, by_rows: tw.Variable(value, name=name))

        def init(*shape: int, scale: float) -> np.ndarray:
            return rng.uniform(-scale, scale, size=shape).astype(np.float32)

        self.hidden = hidden
        self.embedding = make("embedding", init(vocab, embed, scale=0.1), True)
        self.kernel = make("kernel", init(embed + hidden, 4 * hidden,
                                          scale=1 / np.sqrt(embed + hidden)), False)
        bias = np.zeros(4 * hidden, np.float32)
        bias[hidden:2 * hidden] = 1.0  # forget gates start open: gradients flow early on
        self.bias = make("bias", bias, False)
        # one row per word ([vocab, hidden]): a sampled softmax reads only some rows
        self.out_weights = make("out_weights", init(vocab, hidden, scale=1 / np.sqrt(hidden)),
                                True)
        self.out_bias = make("out_bias", np.zeros(vocab, np.float32), True)
        self.vocab = vocab

    @property
    def variables(self) -> list[Any]:
        return [self.embedding, self.kernel, self.bias, self.out_weights, self.out_bias]

    @staticmethod
    def cell(kernel: Any, bias: Any, state: tuple, x: tw.Tensor) -> tuple:
        """One LSTM step: (h, c) and the input x [batch, embed] -> the next (h, c)."""
        h, c = state
        gates = tw.matmul(tw.concat([x, h], axis=1), kernel) + bias
        i, f, g, o = tw.split(gates, 4, axis=1)
        c = tw.sigmoid(f) * c + tw.sigmoid(i) * tw.tanh(g)
        h = tw.sigmoid(o) * tw.tanh(c)
        return h, c

    def loss(self, inputs: tw.Tensor, targets: tw.Tensor, num_sampled: int = 0) -> tw.Tensor:
        """Mean cross entropy of predicting targets [batch, time] from inputs [batch, time]:
        over the whole vocabulary, or (training with `num_sampled` > 0) a sampled softmax
        over the true word and `num_sampled` words drawn from a log-uniform distribution."""
        batch = inputs.shape[0]
        # Tables indexed by word may be sharded by rows ("div": contiguous blocks, the
        # layout of a partitioned variable), so they are read through embedding_lookup.
        embedded = tw.nn.embedding_lookup(self.embedding, inputs, partition_strategy="div")
        steps = tw.transpose(embedded, [1, 0, 2])                           # [time, batch, E]
        zeros = tw.zeros([batch, self.hidden])
        # the weights are read once, before the loop: loop-invariant inputs of its body
        cell = functools.partial(self.cell, tw.identity(self.kernel), tw.identity(self.bias))
        hs, _ = tw.scan(cell, steps, initializer=(zeros, zeros))           # [time, batch, H]
        hs = tw.reshape(hs, [-1, self.hidden])
        labels = tw.reshape(tw.transpose(targets, [1, 0]), [-1])
        if num_sampled:
            return tw.reduce_mean(tw.nn.sampled_softmax_loss(
                self.out_weights, self.out_bias, tw.reshape(labels, [-1, 1]), hs,
                num_sampled=num_sampled, num_classes=self.vocab, partition_strategy="div"))
        logits = (tw.matmul(hs, _whole(self.out_weights), transpose_b=True)
                  + _whole(self.out_bias))
        return tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))


def _whole(table: Any) -> Any:
    """A table sharded by rows (a partitioned variable) as one tensor."""
    shards = list(table) if hasattr(table, "__len__") and hasattr(table, "__iter__") else None
    return tw.concat(shards, axis=0) if shards else table


# --------------------------------------------------------------------------------- main

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seq-len", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--embed", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=2000, help="words kept (the rest: <unk>)")
    parser.add_argument("--chars", type=int, default=2_000_000,
                        help="characters of standard-library source to read")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--report-every", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sampled-softmax", type=int, default=0, metavar="N",
                        help="train with a sampled softmax over N sampled words (evaluation "
                             "stays exact)")
    parser.add_argument("--distributed", action="store_true",
                        help="run as one task of a cluster (started by `tensorweave launch`, "
                             "which sets TW_CONFIG)")
    parser.add_argument("--plot", metavar="PATH",
                        help="write a PNG of the training loss to PATH (needs matplotlib: "
                             "pip install 'tensorweave[plot]')")
    args = parser.parse_args(argv)
    if args.plot:
        try:  # now, not after training
            require_matplotlib("--plot")
        except MissingPlotDependency as e:
            parser.error(str(e))
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.distributed:
        return main_distributed(args)
    corpus = Corpus(stdlib_text(args.chars), args.vocab)
    print(f"corpus: {len(corpus.train)} training words, {len(corpus.valid)} held out, "
          f"vocabulary {len(corpus.vocab)}")
    model = LSTMLanguageModel(len(corpus.vocab), args.embed, args.hidden, args.seed)
    optimizer = tw.optimizers.Adam(args.learning_rate)
    words = tw.TensorSpec([args.batch, args.seq_len], tw.int32)

    @tw.compile(input_signature=[words, words])
    def train_step(inputs, targets):
        loss = model.loss(inputs, targets, num_sampled=args.sampled_softmax)
        optimizer.minimize(loss, var_list=model.variables)
        return loss

    @tw.compile(input_signature=[words, words])
    def evaluate(inputs, targets):
        return model.loss(inputs, targets)

    rng = np.random.default_rng(args.seed)
    losses: list[float] = []
    window_start, window_words = time.perf_counter(), 0
    with Progress(total=args.steps, unit="words") as progress:
        for step in range(1, args.steps + 1):
            inputs, targets = corpus.batch(rng, args.batch, args.seq_len)
            losses.append(float(train_step(inputs, targets)))
            window_words += inputs.size
            progress.update(loss=losses[-1], examples=inputs.size)
            if step % args.report_every == 0 or step == args.steps:
                elapsed = time.perf_counter() - window_start
                recent = losses[-min(len(losses), args.report_every):]
                progress.write(f"step {step:5d}  perplexity {np.exp(np.mean(recent)):9.2f}  "
                               f"words/s {window_words / elapsed:9.0f}")
                window_start, window_words = time.perf_counter(), 0
    if args.plot:
        print("wrote", save_training_curve(args.plot, *progress.curve(),
                                           title="LSTM language model: training loss",
                                           ylabel="cross entropy"), flush=True)

    eval_rng = np.random.default_rng(args.seed + 1)
    held_out = [float(evaluate(*corpus.batch(eval_rng, args.batch, args.seq_len, corpus.valid)))
                for _ in range(10)]
    print(f"held-out perplexity: {np.exp(np.mean(held_out)):.2f}")


def main_distributed(args: argparse.Namespace) -> None:
    """This task's part of between-graph replicated training (module docstring)."""
    import tensorweave.compat.v1 as tf
    if "TW_CONFIG" not in os.environ:
        raise SystemExit("--distributed runs as a task of a cluster: start it with "
                         "`tensorweave launch --ps 2 --workers 2 examples/lstm_lm.py -- "
                         "--distributed` (or set TW_CONFIG)")
    config = json.loads(os.environ["TW_CONFIG"])
    job, index = config["task"]["type"], config["task"]["index"]
    cluster = tf.train.ClusterSpec(config["cluster"])
    server = tf.train.Server(cluster, job_name=job, task_index=index)
    if job == "ps":
        server.join()
        return
    num_ps = len(config["cluster"].get("ps", [])) or 1
    corpus = Corpus(stdlib_text(args.chars), args.vocab)

    def make_variable(name: str, value: np.ndarray, by_rows: bool) -> Any:
        partitioner = tf.fixed_size_partitioner(num_ps) if by_rows and num_ps > 1 else None
        return tf.get_variable(name, initializer=value, partitioner=partitioner)

    graph = tf.Graph()
    with graph.as_default(), tf.device(tf.train.replica_device_setter(
            cluster=cluster, worker_device=f"/job:worker/task:{index}")):
        global_step = tf.train.get_or_create_global_step()
        model = LSTMLanguageModel(len(corpus.vocab), args.embed, args.hidden, args.seed,
                                  make_variable=make_variable)
        inputs = tf.placeholder(tf.int32, [args.batch, args.seq_len], name="inputs")
        targets = tf.placeholder(tf.int32, [args.batch, args.seq_len], name="targets")
        loss = model.loss(inputs, targets, num_sampled=args.sampled_softmax)
        # the single-process run's optimizer (Keras' Adam), so both runs train alike
        train_op = tw.optimizers.Adam(args.learning_rate).minimize(
            loss, var_list=tf.trainable_variables(), global_step=global_step)
        with tf.control_dependencies([train_op]):  # the global step after this update
            step_after = global_step.read_value()
        eval_loss = model.loss(inputs, targets)
        init = tf.global_variables_initializer()
        ready = [tf.is_variable_initialized(v) for v in tf.global_variables()]
    # a worker sees the PS tasks and itself: it neither waits for nor depends on the others
    sess = tf.Session(server.target, graph=graph, config=tf.ConfigProto(
        device_filters=["/job:ps", f"/job:worker/task:{index}"]))
    if index == 0:
        sess.run(init)
    while not all(sess.run(ready)):
        time.sleep(0.1)
    rng = np.random.default_rng(args.seed + 1000 * index)  # each worker its own batches
    losses: list[float] = []
    window_start, window_words, local_step, step = time.perf_counter(), 0, 0, 0
    while step < args.steps:
        x, y = corpus.batch(rng, args.batch, args.seq_len)
        value, step = sess.run([loss, step_after],
                                  feed_dict={inputs: x, targets: y})
        losses.append(float(value))
        local_step += 1
        window_words += x.size
        if local_step % args.report_every == 0:
            elapsed = time.perf_counter() - window_start
            print(f"worker {index}: global step {step:5d}  perplexity "
                  f"{np.exp(np.mean(losses[-args.report_every:])):9.2f}  words/s "
                  f"{window_words / elapsed:9.0f}", flush=True)
            window_start, window_words = time.perf_counter(), 0
    eval_rng = np.random.default_rng(args.seed + 1)
    held_out = []
    for _ in range(10):
        x, y = corpus.batch(eval_rng, args.batch, args.seq_len, corpus.valid)
        held_out.append(float(sess.run(eval_loss, feed_dict={inputs: x, targets: y})))
    print(f"worker {index}: {local_step} local steps; held-out perplexity "
          f"{np.exp(np.mean(held_out)):.2f}", flush=True)
    sess.close()


if __name__ == "__main__":
    main()
