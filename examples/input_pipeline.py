"""An input pipeline as in the paper: reader threads fill a queue with (image, label)
examples while the training step, a compiled graph, dequeues whole batches from it.

Each reader owns a shard of the handwritten-digits training set and enqueues small chunks
of examples through a compiled ``enqueue_many`` step; the bounded queue makes fast readers
wait for the trainer (back-pressure). The training step is softmax regression: it
dequeues a batch, computes the cross entropy and applies SGD, all in one graph.

    python examples/input_pipeline.py --steps 300 --readers 4
"""

import argparse
import time

import numpy as np

import tensorweave as tw
from tensorweave.datasets import mnist
from tensorweave.utils import MissingPlotDependency, Progress, require_matplotlib, save_training_curve

CHUNK = 25  # examples a reader enqueues per step


def make_reader(queue: tw.queue.FIFOQueue, shard: mnist.DataSet):
    """A function that reads the next chunk of `shard` and enqueues it (one reader)."""
    @tw.compile(input_signature=[tw.TensorSpec([None, 784], tw.float32),
                                 tw.TensorSpec([None, 10], tw.float32)])
    def enqueue(images, labels):
        queue.enqueue_many((images, labels))

    def read_and_enqueue() -> None:
        enqueue(*shard.next_batch(CHUNK))  # each reader has its own shard and cursor

    return read_and_enqueue


def build_model(queue: tw.queue.FIFOQueue, batch_size: int, learning_rate: float):
    """The training step (dequeue a batch, one SGD step; returns the loss) and the
    prediction function of a softmax-regression model."""
    w = tw.Variable(np.zeros((784, 10), np.float32), name="w")
    b = tw.Variable(np.zeros(10, np.float32), name="b")
    optimizer = tw.optimizers.SGD(learning_rate)

    @tw.compile
    def train_step():
        images, labels = queue.dequeue_many(batch_size)
        logits = images @ w + b
        loss = tw.reduce_mean(tw.nn.softmax_cross_entropy_with_logits(labels=labels,
                                                                      logits=logits))
        optimizer.minimize(loss, var_list=[w, b])
        return loss

    @tw.compile(input_signature=[tw.TensorSpec([None, 784], tw.float32)])
    def predict(images):
        return tw.argmax(images @ w + b, axis=1)

    return train_step, predict


def shards(data: mnist.DataSet, n: int) -> list[mnist.DataSet]:
    """`n` disjoint parts of a data set, each shuffled by its own generator."""
    parts = np.array_split(np.arange(data.num_examples), n)
    return [mnist.DataSet(data.images[p], data.labels[p], seed=i) for i, p in enumerate(parts)]


def main() -> None:
    parser = argparse.ArgumentParser(description="queue-fed softmax regression on digits")
    parser.add_argument("--data", default=None, help="directory with the MNIST IDX files")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--capacity", type=int, default=1000)
    parser.add_argument("--learning-rate", type=float, default=0.5)
    parser.add_argument("--plot", metavar="PATH",
                        help="write a PNG of the training loss to PATH (needs matplotlib)")
    args = parser.parse_args()
    if args.plot:
        try:
            require_matplotlib("--plot")
        except MissingPlotDependency as e:
            parser.error(str(e))

    data = mnist.read_data_sets(args.data, one_hot=True)
    print("data:", data.source)
    queue = tw.queue.FIFOQueue(args.capacity, [tw.float32, tw.float32],
                               shapes=[[784], [10]], name="examples")
    readers = [make_reader(queue, shard) for shard in shards(data.train, args.readers)]
    train_step, predict = build_model(queue, args.batch_size, args.learning_rate)

    coord = tw.queue.Coordinator()
    runner = tw.queue.QueueRunner(queue, readers)
    threads = runner.create_threads(coord=coord, daemon=True, start=True)
    start = time.perf_counter()
    progress = Progress(total=args.steps, unit="examples")
    try:
        for step in range(args.steps):
            if coord.should_stop():
                break
            loss = train_step()
            progress.update(loss=float(loss), examples=args.batch_size)
            if step % 100 == 0:
                progress.write(f"step {step:4d}  loss {float(loss):.4f}  "
                               f"queue size {int(queue.size())}")
    finally:
        progress.close()
        elapsed = time.perf_counter() - start
        coord.request_stop()  # also cancels readers blocked on the full queue
        coord.join(threads, stop_grace_period_secs=10)
    print(f"throughput: {args.steps * args.batch_size / elapsed:.0f} examples/s "
          f"({args.steps / elapsed:.1f} steps/s, {args.readers} readers)")
    if args.plot:
        print("wrote", save_training_curve(args.plot, *progress.curve()))
    predicted = predict(data.test.images)
    accuracy = float(np.mean(predicted == np.argmax(data.test.labels, axis=1)))
    print(f"test accuracy: {accuracy:.4f}")  # the last line (tests read it so)


if __name__ == "__main__":
    main()
