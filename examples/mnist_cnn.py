"""A convolutional network on MNIST, written in the TensorFlow 2 style.

Two 5x5 convolutions with ReLU, each followed by 2x2 max pooling, then a ReLU dense layer
and the logits layer; the training step is one `@tw.compile`d function (traced once for
any batch size thanks to its input signature) that computes the sparse softmax cross
entropy and applies Adam's updates in place. On the cpu target the whole step, gradients
and updates included, runs as one native function.

    python examples/mnist_cnn.py                       # bundled handwritten digits
    python examples/mnist_cnn.py --data MNIST_data     # MNIST IDX files, if you have them
    python examples/mnist_cnn.py --filters 32 64 --hidden 1024   # the paper's sizes
    tensorweave profile examples/mnist_cnn.py:train_step --batch 64   # time every op

`train_step` and `accuracy` also exist at module level (the default sizes), so that
``tensorweave profile`` and ``tensorweave dump`` can load them. On a terminal a progress
bar shows the loss and the throughput as it trains.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence

import numpy as np

import tensorweave as tw
from tensorweave.datasets import mnist as input_data
from tensorweave.utils import Progress

SIDE = 28  # images are 28x28 grey levels, flattened to 784 values


class CNN:
    """conv5x5 -> ReLU -> max pool 2x2 -> conv5x5 -> ReLU -> max pool 2x2 -> dense -> ReLU
    -> dense (logits), NHWC with SAME padding."""

    def __init__(self, filters: Sequence[int] = (16, 32), hidden: int = 128,
                 seed: int = 0) -> None:
        f1, f2 = filters

        def weight(shape: list[int], fan_in: int, name: str, k: int) -> tw.Variable:
            # He initialization keeps the ReLU layers' activations at a steady scale, so
            # Adam gets going from the first steps; the seed makes runs reproducible.
            std = math.sqrt(2.0 / fan_in)
            return tw.Variable(tw.random.truncated_normal(shape, stddev=std, seed=seed + k),
                               name=name)

        def bias(n: int, name: str) -> tw.Variable:
            return tw.Variable(tw.constant(np.zeros([n], np.float32)), name=name)

        flat = (SIDE // 4) * (SIDE // 4) * f2  # two 2x2 poolings
        self.conv1 = (weight([5, 5, 1, f1], 25, "conv1/kernel", 0), bias(f1, "conv1/bias"))
        self.conv2 = (weight([5, 5, f1, f2], 25 * f1, "conv2/kernel", 1),
                      bias(f2, "conv2/bias"))
        self.dense = (weight([flat, hidden], flat, "dense/kernel", 2), bias(hidden, "dense/bias"))
        self.logits = (weight([hidden, 10], hidden, "logits/kernel", 3), bias(10, "logits/bias"))
        self.flat = flat

    @property
    def variables(self) -> list[tw.Variable]:
        """Every trainable variable, in layer order."""
        return [v for layer in (self.conv1, self.conv2, self.dense, self.logits) for v in layer]

    def __call__(self, x: tw.Tensor) -> tw.Tensor:
        """Logits [batch, 10] of flattened images `x` [batch, 784]."""
        h = tw.reshape(x, [-1, SIDE, SIDE, 1])
        for w, b in (self.conv1, self.conv2):
            h = tw.nn.relu(tw.nn.bias_add(tw.nn.conv2d(h, w, strides=1, padding="SAME"), b))
            h = tw.nn.max_pool2d(h, ksize=2, strides=2, padding="SAME")
        w, b = self.dense
        h = tw.nn.relu(tw.matmul(tw.reshape(h, [-1, self.flat]), w) + b)
        w, b = self.logits
        return tw.matmul(h, w) + b


def build(filters: Sequence[int] = (16, 32), hidden: int = 128, learning_rate: float = 1e-3,
          seed: int = 0) -> tuple[CNN, Callable, Callable]:
    """The model and its compiled training step and accuracy."""
    model = CNN(filters, hidden, seed)
    optimizer = tw.optimizers.Adam(learning_rate)
    images = tw.TensorSpec([None, SIDE * SIDE], tw.float32)
    labels = tw.TensorSpec([None], tw.int64)

    @tw.compile(input_signature=[images, labels])
    def train_step(x, y):
        """One Adam step on a batch; returns the batch's mean loss (before the update)."""
        loss = tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=model(x)))
        optimizer.minimize(loss, var_list=model.variables)
        return loss

    @tw.compile(input_signature=[images, labels])
    def accuracy(x, y):
        """The fraction of `x` classified as `y`."""
        correct = tw.equal(tw.argmax(model(x), axis=1), y)
        return tw.reduce_mean(tw.cast(correct, tw.float32))

    return model, train_step, accuracy


# at module level, for `tensorweave profile examples/mnist_cnn.py:train_step`
model, train_step, accuracy = build()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="directory with the MNIST IDX files")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--filters", type=int, nargs=2, default=[16, 32], metavar=("F1", "F2"),
                        help="filters of the two convolutions")
    parser.add_argument("--hidden", type=int, default=128, help="width of the dense layer")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    mnist = input_data.read_data_sets(args.data, one_hot=False)  # labels are class ids
    print("data:", mnist.source)
    default = (list(args.filters), args.hidden, args.learning_rate, args.seed) == \
        ([16, 32], 128, 1e-3, 0)
    # (the module's model when the sizes are the defaults: no second set of variables)
    step, acc = (train_step, accuracy) if default else build(
        args.filters, args.hidden, args.learning_rate, args.seed)[1:]
    with Progress(total=args.steps, unit="examples") as progress:
        for i in range(args.steps):
            batch_xs, batch_ys = mnist.train.next_batch(args.batch)
            loss = step(batch_xs, batch_ys)
            progress.update(loss=float(loss), examples=len(batch_xs))
            if i % 100 == 0 or i == args.steps - 1:
                progress.write(f"step {i:4d}  loss {float(loss):.4f}")
    print("test accuracy:", float(acc(mnist.test.images, mnist.test.labels)))


if __name__ == "__main__":
    main()
