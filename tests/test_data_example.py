"""examples/mnist_dataset.py (a tw.data pipeline feeding a compiled training step), run as a
user would run it, on the bundled digits."""

from __future__ import annotations

import re

from tests.test_examples import printed_accuracy, printed_losses, run_example


def test_mnist_dataset_example_trains_with_one_trace():
    out = run_example("mnist_dataset", "--epochs", "2")
    losses = printed_losses(out)
    assert len(losses) >= 2 and losses[-1] < losses[0], out
    assert re.search(r"^training step traces: 1$", out, re.MULTILINE), out
    assert printed_accuracy(out) >= 0.9, out
