"""MNIST through a tw.data input pipeline, the TensorFlow 2 way.

The training set becomes a `tw.data.Dataset` that normalizes each image in a traced
`map` (on a thread pool), shuffles with a buffer, batches with `drop_remainder=True`
(every batch has one shape, so the `@tw.compile` training step is traced once) and
prefetches on a background thread; a Python `for` over it yields eager tensors.

    python examples/mnist_dataset.py                     # bundled handwritten digits
    python examples/mnist_dataset.py --data MNIST_data   # MNIST IDX files, if you have them
    python examples/mnist_dataset.py --epochs 5
"""

from __future__ import annotations

import argparse

import numpy as np

import tensorweave as tw
from tensorweave.datasets import mnist as input_data


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="directory with the MNIST IDX files")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    tw.random.set_seed(args.seed)  # the shuffle order and the initial weights
    mnist = input_data.read_data_sets(args.data, one_hot=False)  # int64 class ids
    print("data:", mnist.source)

    def normalize(image, label):
        # per-image standardization, traced once for the element spec
        mean = tw.reduce_mean(image)
        std = tw.sqrt(tw.reduce_mean(tw.square(image - mean))) + 1e-6
        return (image - mean) / std, label

    train = (tw.data.Dataset.from_tensor_slices((mnist.train.images, mnist.train.labels))
             .map(normalize, num_parallel_calls=tw.data.AUTOTUNE)
             .cache()                       # normalized once, replayed every epoch
             .shuffle(1000)
             .batch(args.batch, drop_remainder=True)
             .prefetch(tw.data.AUTOTUNE))
    test = (tw.data.Dataset.from_tensor_slices((mnist.test.images, mnist.test.labels))
            .map(normalize).batch(1000))
    print("batches per epoch:", int(train.cardinality()))

    w1 = tw.Variable(tw.random.truncated_normal([784, args.hidden], stddev=0.05))
    b1 = tw.Variable(np.zeros(args.hidden, np.float32))
    w2 = tw.Variable(tw.random.truncated_normal([args.hidden, 10], stddev=0.05))
    b2 = tw.Variable(np.zeros(10, np.float32))
    variables = [w1, b1, w2, b2]
    optimizer = tw.optimizers.Adam(args.learning_rate)

    def logits_of(x):
        return tw.nn.relu(x @ w1 + b1) @ w2 + b2

    @tw.compile
    def train_step(x, y):
        loss = tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits_of(x)))
        optimizer.minimize(loss, var_list=variables)
        return loss

    def correct(x, y):
        return tw.reduce_sum(tw.cast(tw.equal(tw.argmax(logits_of(x), axis=1), y), tw.int32))

    step = 0
    for epoch in range(args.epochs):
        for x, y in train:
            loss = train_step(x, y)
            if step % 50 == 0:
                print(f"step {step:4d}  loss {float(loss):.4f}")
            step += 1
        print(f"epoch {epoch + 1} done")
    print(f"step {step - 1:4d}  loss {float(loss):.4f}")
    print("training step traces:", train_step.experimental_get_tracing_count())

    # a fold over the test batches, traced once (the batch dim is None: the last is short)
    hits = test.reduce(np.int32(0), lambda total, batch: total + correct(*batch))
    print("test accuracy:", int(hits) / len(mnist.test.labels))


if __name__ == "__main__":
    main()
