"""The paper's softmax-regression model in tensorweave's native style: variables, a
compiled training step (forward pass, gradients and SGD updates in one graph), and a
compiled prediction function.

    python examples/softmax_regression.py
    python examples/softmax_regression.py --plot loss.png   # and the training curve
    tensorweave dump examples/softmax_regression.py:train_step --stage traced
"""

import argparse

import numpy as np

import tensorweave as tw
from tensorweave.utils import MissingPlotDependency, Progress, require_matplotlib, save_training_curve

w = tw.Variable(np.zeros((784, 10), np.float32), name="w")
b = tw.Variable(np.zeros(10, np.float32), name="b")
optimizer = tw.optimizers.SGD(0.5)


@tw.compile(input_signature=[tw.TensorSpec([None, 784], tw.float32)])
def predict(x):
    """Class probabilities for a batch of flattened 28x28 images."""
    return tw.nn.softmax(x @ w + b)


@tw.compile(input_signature=[tw.TensorSpec([None, 784], tw.float32),
                             tw.TensorSpec([None, 10], tw.float32)])
def train_step(x, y_):
    """One step of gradient descent on the cross entropy; returns the loss."""
    y = predict(x)
    cross_entropy = tw.reduce_mean(-tw.reduce_sum(y_ * tw.log(y), axis=1))
    optimizer.minimize(cross_entropy, var_list=[w, b])
    return cross_entropy


def main() -> None:
    from tensorweave.datasets import mnist

    parser = argparse.ArgumentParser(description="softmax regression on handwritten digits")
    parser.add_argument("--data", default=None, help="directory with the MNIST IDX files")
    parser.add_argument("--steps", type=int, default=1000)
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
    with Progress(total=args.steps, unit="examples") as progress:
        for i in range(args.steps):
            loss = train_step(*data.train.next_batch(100))
            progress.update(loss=float(loss), examples=100)
            if i % 200 == 0:
                progress.write(f"step {i:4d}  loss {float(loss):.4f}")
    if args.plot:
        print("wrote", save_training_curve(args.plot, *progress.curve()))
    predicted = np.argmax(predict(data.test.images), axis=1)
    accuracy = np.mean(predicted == np.argmax(data.test.labels, axis=1))
    print(f"test accuracy: {accuracy:.4f}")


if __name__ == "__main__":
    main()
