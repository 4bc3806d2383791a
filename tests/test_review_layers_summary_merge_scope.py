"""Review of ``tf.summary.merge_all(scope=...)`` against TensorFlow 2.21's
``tf.compat.v1.summary.merge_all`` (graph mode).

TensorFlow filters the collection as ``get_collection(key, scope)`` does: `scope` is a
regular expression matched at the start of each summary op's *name*. tensorweave
compared the start of the *tag* literally, so a regular expression matched nothing
(``scope="tr.*"``: TensorFlow merges ``train/acc`` and ``train/train/loss``, we returned
None), and with a family, whose tag and name differ (a ``family="fam"`` summary ``x``
in name scope ``ns`` is op ``ns/fam/x`` with tag ``fam/ns/fam/x``), ``scope="ns"``
missed it and ``scope="fam"`` took it (TensorFlow: the other way round), so a
"train"-only merge could silently include or drop other summaries."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import tensorweave.compat.v1 as tf  # noqa: E402
from tensorweave.runtime import summary_io  # noqa: E402


@pytest.fixture(autouse=True)
def summaries_in_scopes(fresh_default_graph):
    """The summaries every test merges, in a fresh default graph (reset again after)."""
    with tf.name_scope("train"):
        tf.summary.scalar("acc", 1.0)
    tf.summary.scalar("lr", 0.5, family="opt")
    tf.summary.scalar("loss", 0.25, family="train")
    with tf.name_scope("ns"):
        tf.summary.scalar("x", 2.0, family="fam")


def _tags(scope: str) -> list[str] | None:
    merged = tf.summary.merge_all(scope=scope)
    if merged is None:
        return None
    with tf.Session() as sess:
        summary = summary_io.parse(sess.run(merged))
    return [v.tag for v in summary.value]


@pytest.mark.parametrize("scope, tags", [
    # what TensorFlow 2.21 merges for each scope
    ("tr.*", ["train/acc", "train/train/loss"]),
    ("train", ["train/acc", "train/train/loss"]),
    ("opt", ["opt/opt/lr"]),
    ("opt/opt", None),
    ("ns", ["fam/ns/fam/x"]),
    ("ns/fam", ["fam/ns/fam/x"]),
    ("fam", None),
])
def test_scope_filters_op_names_by_regular_expression(scope, tags):
    assert _tags(scope) == tags


def test_no_scope_merges_everything():
    assert _tags(None) == ["train/acc", "opt/opt/lr", "train/train/loss", "fam/ns/fam/x"]
    np.testing.assert_equal(len(tf.get_collection(tf.GraphKeys.SUMMARIES)), 4)
