"""TensorFlow 2's everyday training loop, eagerly: a `tw.Module` MLP on handwritten
digits, its loss recorded by a `tw.GradientTape` and its variables updated by
``optimizer.apply_gradients`` outside any compiled function.

    python examples/eager_regression.py
    python examples/eager_regression.py --steps 100 --optimizer sgd

Every op of the forward pass and of the gradient runs at once; the optimizer's update is
traced once into a compiled function and called on each step.
"""

import argparse

import numpy as np

import tensorweave as tw


class MLP(tw.Module):
    """784 -> hidden (ReLU) -> 10 logits."""

    def __init__(self, hidden: int = 64, seed: int = 0) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        # Glorot-style scaling keeps the first logits small, so the loss starts near log(10)
        self.w1 = tw.Variable(rng.normal(0, np.sqrt(2 / 784), (784, hidden)).astype(np.float32),
                              name="w1")
        self.b1 = tw.Variable(np.zeros(hidden, np.float32), name="b1")
        self.w2 = tw.Variable(rng.normal(0, np.sqrt(1 / hidden), (hidden, 10)).astype(np.float32),
                              name="w2")
        self.b2 = tw.Variable(np.zeros(10, np.float32), name="b2")

    def __call__(self, x):
        return tw.nn.relu(x @ self.w1 + self.b1) @ self.w2 + self.b2


def loss_fn(logits, labels):
    """Mean cross entropy of integer `labels` under `logits`."""
    return tw.reduce_mean(tw.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))


OPTIMIZERS = {"adam": lambda: tw.optimizers.Adam(3e-3),
              "sgd": lambda: tw.optimizers.SGD(0.1),
              "rmsprop": lambda: tw.optimizers.RMSProp(1e-3)}


def main() -> None:
    from tensorweave.datasets import mnist

    parser = argparse.ArgumentParser(description="an MLP trained eagerly with a GradientTape")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="adam")
    args = parser.parse_args()

    data = mnist.read_data_sets(None, one_hot=False)
    print("data:", data.source)
    model = MLP()
    opt = OPTIMIZERS[args.optimizer]()
    for step in range(args.steps):
        x, y = data.train.next_batch(args.batch)
        with tw.GradientTape() as tape:
            loss = loss_fn(model(x), y.astype(np.int32))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {float(loss):.4f}")
    predicted = np.argmax(model(data.test.images).numpy(), axis=1)
    print(f"test accuracy: {np.mean(predicted == data.test.labels):.4f}")
    print(f"optimizer steps: {int(opt.iterations.numpy())}")


if __name__ == "__main__":
    main()
