"""A multi-layer perceptron on MNIST, written in the TensorFlow 2 style.

Weights are `tw.Variable`s, the training step is one `@tw.compile`d function (traced once
for any batch size thanks to its input signature) that computes the loss and applies
Adam's updates in place, and ReLU hidden layers feed a sparse softmax cross entropy.

    python examples/mnist_mlp.py                     # bundled handwritten digits
    python examples/mnist_mlp.py --data MNIST_data   # MNIST IDX files, if you have them
    python examples/mnist_mlp.py --hidden 256 128    # two hidden layers
    python examples/mnist_mlp.py --plot loss.png     # and a PNG of the training curve
    python examples/mnist_mlp.py --logdir logs/mlp   # TensorBoard: tensorboard --logdir logs

On a terminal a progress bar shows the loss and the throughput as it trains.
"""

from __future__ import annotations

import argparse
import contextlib

import numpy as np

import tensorweave as tw
from tensorweave.datasets import mnist as input_data
from tensorweave.utils import MissingPlotDependency, Progress, require_matplotlib, save_training_curve


class MLP:
    """Fully connected layers, ReLU between them, logits out of the last one."""

    def __init__(self, sizes: list[int], seed: int = 0) -> None:
        self.layers = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            # Small random weights break the symmetry between units; the seed makes the
            # run reproducible.
            w = tw.Variable(tw.random.truncated_normal([n_in, n_out], stddev=0.1, seed=seed + i),
                            name=f"dense{i}/kernel")
            b = tw.Variable(tw.constant(np.full([n_out], 0.1, np.float32)), name=f"dense{i}/bias")
            self.layers.append((w, b))

    @property
    def variables(self) -> list[tw.Variable]:
        return [v for layer in self.layers for v in layer]

    def __call__(self, x: tw.Tensor) -> tw.Tensor:
        for i, (w, b) in enumerate(self.layers):
            x = tw.matmul(x, w) + b
            if i < len(self.layers) - 1:
                x = tw.nn.relu(x)
        return x


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="directory with the MNIST IDX files")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--hidden", type=int, nargs="+", default=[128],
                        help="hidden layer widths")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", metavar="PATH",
                        help="write a PNG of the training loss to PATH (needs matplotlib: "
                             "pip install 'tensorweave[plot]')")
    parser.add_argument("--logdir", metavar="DIR",
                        help="write TensorBoard summaries to DIR: loss and accuracy scalars, "
                             "weight histograms and the training step's graph (needs "
                             "pip install 'tensorweave[tensorboard]')")
    args = parser.parse_args()
    if args.logdir:
        try:  # now, not after training
            args.writer = tw.summary.create_file_writer(args.logdir)
        except ImportError as e:
            parser.error(str(e))
    if args.plot:
        try:  # now, not after training
            require_matplotlib("--plot")
        except MissingPlotDependency as e:
            parser.error(str(e))
    return args


def main() -> None:
    args = parse_args()
    mnist = input_data.read_data_sets(args.data, one_hot=False)  # labels are class ids
    print("data:", mnist.source)

    model = MLP([784, *args.hidden, 10], seed=args.seed)
    optimizer = tw.optimizers.Adam(args.learning_rate)
    images = tw.TensorSpec([None, 784], tw.float32)
    labels = tw.TensorSpec([None], tw.int64)

    @tw.compile(input_signature=[images, labels])
    def train_step(x, y):
        logits = model(x)
        loss = tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        if args.logdir:  # a Python condition: without --logdir the step has no summary ops
            # written from inside the step at the default step (set_step below)
            tw.summary.scalar("loss", loss)
            correct = tw.cast(tw.equal(tw.argmax(logits, axis=1), y), tw.float32)
            tw.summary.scalar("accuracy", tw.reduce_mean(correct))
        optimizer.minimize(loss, var_list=model.variables)
        return loss

    @tw.compile
    def log_weights():
        for i, (w, b) in enumerate(model.layers):
            tw.summary.histogram(f"dense{i}/kernel", w)
            tw.summary.histogram(f"dense{i}/bias", b)

    @tw.compile(input_signature=[images, labels])
    def accuracy(x, y):
        correct = tw.equal(tw.argmax(model(x), axis=1), y)
        return tw.reduce_mean(tw.cast(correct, tw.float32))

    summaries = args.writer.as_default() if args.logdir else contextlib.nullcontext()
    with summaries, Progress(total=args.steps, unit="examples") as progress:
        if args.logdir:
            tw.summary.graph(train_step)
        for i in range(args.steps):
            tw.summary.experimental.set_step(i)
            batch_xs, batch_ys = mnist.train.next_batch(args.batch)
            loss = train_step(batch_xs, batch_ys)
            progress.update(loss=float(loss), examples=len(batch_xs))
            if i % 100 == 0 or i == args.steps - 1:
                progress.write(f"step {i:4d}  loss {float(loss):.4f}")
                if args.logdir:
                    log_weights()
                    test_accuracy = accuracy(mnist.test.images, mnist.test.labels)
                    tw.summary.scalar("test_accuracy", test_accuracy)
    if args.logdir:
        args.writer.close()
        print("wrote TensorBoard summaries to", args.logdir)
    if args.plot:
        print("wrote", save_training_curve(args.plot, *progress.curve(),
                                           title="MLP on MNIST: training loss"))

    print("test accuracy:", float(accuracy(mnist.test.images, mnist.test.labels)))


if __name__ == "__main__":
    main()
