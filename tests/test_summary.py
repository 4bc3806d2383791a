"""Summaries (``tw.summary``, ``tf.summary`` of compat.v1): event files written by compiled
steps on every target and eagerly, read back with TensorBoard's own event reader."""

import io
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.errors import DTypeError, InvalidArgumentError, ShapeError

from .helpers import TARGETS

ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
PIL_Image = pytest.importorskip("PIL.Image")  # a dependency of tensorboard: decodes our PNGs

EVERYTHING = {"scalars": 0, "histograms": 0, "images": 0, "tensors": 0,
              "compressedHistograms": 0}


@pytest.fixture(autouse=True)
def _clean_summary_state():
    """No default writer, step or record condition leaks from one test into the next."""
    yield
    tw.summary.experimental.set_step(None)
    from tensorweave.runtime import summary_io
    summary_io.STATE.writers.clear()
    summary_io.STATE.conditions.clear()


def read(logdir):
    acc = ea.EventAccumulator(str(logdir), size_guidance=EVERYTHING)
    acc.Reload()
    return acc


def scalars(acc, tag):
    return [(e.step, e.value) for e in acc.Scalars(tag)]


# -- compiled steps and eager calls, on every target ----------------------------------------

arrays = st.integers(1, 3).flatmap(lambda rank: st.lists(st.integers(1, 5), min_size=rank,
                                                         max_size=rank))


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=8, deadline=None)
@given(shape=arrays, seed=st.integers(0, 2**16), steps=st.integers(1, 3))
def test_scalar_and_histogram_written_by_a_compiled_step(tmp_path_factory, target, shape, seed,
                                                         steps):
    rng = np.random.default_rng(seed)
    logdir = tmp_path_factory.mktemp("logs")
    writer = tw.summary.create_file_writer(str(logdir))
    counter = tw.Variable(np.int64(0))

    @tw.compile(target=target)
    def step(x):
        loss = tw.reduce_sum(x * x)
        with tw.name_scope("train"):
            tw.summary.scalar("loss", loss, step=counter)
            tw.summary.histogram("x", x, step=counter)
        counter.assign_add(1)
        return loss

    xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(steps)]
    with writer.as_default():
        losses = [step(x) for x in xs]
    writer.close()
    acc = read(logdir)
    # the values the step computed, not recomputed: bit for bit the returned loss
    assert scalars(acc, "train/loss") == [(i, float(np.float32(v))) for i, v in enumerate(losses)]
    histos = acc.Histograms("train/x")
    assert [h.step for h in histos] == list(range(steps))
    for h, x in zip(histos, xs):
        hv = h.histogram_value
        assert hv.num == x.size and hv.min == x.min() and hv.max == x.max()
        assert hv.sum == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-12, abs=1e-12)
        if x.min() < x.max():
            counts, edges = np.histogram(x.astype(np.float64), bins=30,
                                         range=(float(x.min()), float(x.max())))
            assert list(hv.bucket) == counts.tolist()
            np.testing.assert_array_equal(hv.bucket_limit, edges[1:])
        else:
            assert list(hv.bucket) == [x.size]


def test_the_cpu_target_writes_from_inside_its_native_step(tmp_path):
    """The summary op is a host callback of the one native step function, fed the buffers
    the step computed (no dataflow fallback, no Python recomputation)."""
    writer = tw.summary.create_file_writer(str(tmp_path))

    @tw.compile(target="cpu")
    def step(x):
        y = tw.nn.relu(x) * 3.0
        tw.summary.histogram("y", y, step=4)
        return tw.reduce_mean(y)

    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    with writer.as_default():
        step(x)
    native = step.get_concrete_function(x).executable.native_step([x])
    assert native is not None, step.get_concrete_function(x).executable.native_reason
    assert [n.op for n in native.plan.callback_nodes.values()] == ["WriteHistogramSummary"]
    writer.close()
    (h,) = read(tmp_path).Histograms("y")
    assert h.step == 4 and h.histogram_value.max == pytest.approx(3.0)
    assert h.histogram_value.num == 12


@settings(max_examples=10, deadline=None)
@given(value=st.floats(-1e6, 1e6, width=32), step=st.integers(-5, 2**40))
def test_eager_scalar(tmp_path_factory, value, step):
    logdir = tmp_path_factory.mktemp("eager")
    writer = tw.summary.create_file_writer(str(logdir))
    with writer.as_default():
        assert bool(tw.summary.scalar("v", tw.constant(value), step=step).numpy())
    writer.close()
    assert scalars(read(logdir), "v") == [(step, value)]


@pytest.mark.parametrize("target", TARGETS)
def test_image_and_text(tmp_path, target):
    rng = np.random.default_rng(3)
    floats = rng.random((2, 5, 7, 3)).astype(np.float32)
    gray = rng.integers(0, 256, (1, 4, 6, 1), dtype=np.uint8)
    writer = tw.summary.create_file_writer(str(tmp_path))

    @tw.compile(target=target)
    def step(a, b):
        tw.summary.image("rgb", a, step=1, max_outputs=5)
        tw.summary.image("gray", b, step=1)
        tw.summary.text("note", "héllo **world**", step=2)
        return a

    with writer.as_default():
        step(floats, gray)
    writer.close()
    acc = read(tmp_path)
    assert sorted(acc.Tags()["images"]) == ["gray/image", "rgb/image/0", "rgb/image/1"]
    for i in range(2):
        (img,) = acc.Images(f"rgb/image/{i}")
        assert (img.width, img.height, img.step) == (7, 5, 1)
        pixels = np.asarray(PIL_Image.open(io.BytesIO(img.encoded_image_string)))
        np.testing.assert_array_equal(pixels, np.round(floats[i] * 255).astype(np.uint8))
    (g,) = acc.Images("gray/image")
    pixels = np.asarray(PIL_Image.open(io.BytesIO(g.encoded_image_string)))
    np.testing.assert_array_equal(pixels, gray[0, :, :, 0])
    (t,) = acc.Tensors("note")
    assert t.step == 2
    assert t.tensor_proto.string_val == ["héllo **world**".encode()]
    assert acc.SummaryMetadata("note").plugin_data.plugin_name == "text"


@pytest.mark.parametrize("target", TARGETS)
def test_summaries_inside_loops_and_branches(tmp_path, target):
    """A summary in a while_loop body writes once per iteration, in a cond branch only when
    that branch runs."""
    writer = tw.summary.create_file_writer(str(tmp_path))

    @tw.compile(target=target)
    def step(x):
        def body(i, acc):
            tw.summary.scalar("acc", acc, step=tw.cast(i, tw.int64))
            return i + 1, acc + x
        _, out = tw.while_loop(lambda i, a: i < 3, body, [tw.constant(0), x])
        tw.cond(out > 5.0, lambda: tw.summary.scalar("big", out, step=0),
                lambda: tw.summary.scalar("small", out, step=0))
        return out

    with writer.as_default():
        assert step(np.float32(2.0)) == 8.0
    writer.close()
    acc = read(tmp_path)
    assert scalars(acc, "acc") == [(0, 2.0), (1, 4.0), (2, 6.0)]
    assert scalars(acc, "big") == [(0, 8.0)]
    assert "small" not in acc.Tags()["scalars"]


# -- default step, writer and record condition ----------------------------------------------

def test_default_step_is_read_when_the_step_runs(tmp_path):
    """set_step(i) around a compiled step: the int is not frozen into the trace."""
    writer = tw.summary.create_file_writer(str(tmp_path))

    @tw.compile(target="cpu")
    def step(x):
        tw.summary.scalar("x", tw.reduce_sum(x))
        return x

    with writer.as_default():
        for i in (10, 20, 30):
            tw.summary.experimental.set_step(i)
            step(np.full(2, i, np.float32))
    assert step.experimental_get_tracing_count() == 1
    with writer.as_default(step=tw.Variable(np.int64(7))):
        step(np.ones(2, np.float32))  # a Variable default step is read inside the new trace
        tw.summary.scalar("eager", 1.0)
    writer.close()
    acc = read(tmp_path)
    assert scalars(acc, "x") == [(10, 20.0), (20, 40.0), (30, 60.0), (7, 2.0)]
    assert scalars(acc, "eager") == [(7, 1.0)]


def test_one_compiled_step_writes_to_the_writer_that_is_default_when_it_runs(tmp_path):
    train = tw.summary.create_file_writer(str(tmp_path / "train"))
    test = tw.summary.create_file_writer(str(tmp_path / "test"))

    @tw.compile
    def step(x):
        return tw.summary.scalar("x", x, step=0)

    assert not bool(step(np.float32(1.0)))  # no default writer: nothing written
    with train.as_default():
        assert bool(step(np.float32(2.0)))
    with test.as_default():
        assert bool(step(np.float32(3.0)))
    train.close()
    test.close()
    assert scalars(read(tmp_path / "train"), "x") == [(0, 2.0)]
    assert scalars(read(tmp_path / "test"), "x") == [(0, 3.0)]
    noop = tw.summary.create_noop_writer()
    with noop.as_default():
        assert tw.summary.should_record_summaries()
        step(np.float32(4.0))  # goes nowhere, and is no error


def test_record_if_with_a_tensor_condition(tmp_path):
    writer = tw.summary.create_file_writer(str(tmp_path))
    counter = tw.Variable(np.int64(0))

    @tw.compile(target="cpu")
    def step():
        n = counter.read_value()
        with tw.summary.record_if(lambda: tw.equal(n % 3, 0)):
            tw.summary.scalar("n", tw.cast(n, tw.float32), step=n)
        with tw.summary.record_if(False):
            tw.summary.scalar("never", 1.0, step=n)
        counter.assign_add(1)
        return n

    with writer.as_default():
        for _ in range(7):
            step()
    writer.close()
    acc = read(tmp_path)
    assert scalars(acc, "n") == [(0, 0.0), (3, 3.0), (6, 6.0)]
    assert "never" not in acc.Tags()["scalars"]


def test_flush_makes_events_visible_before_close(tmp_path):
    writer = tw.summary.create_file_writer(str(tmp_path), flush_millis=10**9)
    writer.set_as_default()
    tw.summary.scalar("a", 1.0, step=1)
    tw.summary.flush()
    assert scalars(read(tmp_path), "a") == [(1, 1.0)]
    writer.close()


# -- errors ------------------------------------------------------------------------------------

def test_errors_name_the_op_the_line_and_what_was_expected(tmp_path):
    with pytest.raises(ShapeError) as e:
        tw.compile(lambda x: tw.summary.scalar("loss", x, step=0))(np.zeros(3, np.float32))
    assert "WriteScalarSummary" in str(e.value) and "test_summary.py" in str(e.value)
    assert "scalar" in str(e.value) and "f32[3]" in str(e.value)
    with pytest.raises(DTypeError, match="step must be an integer, got a f32 tensor") as e:
        tw.summary.scalar("loss", 1.0, step=tw.constant(1.5))
    assert "tw.summary.scalar" in str(e.value) and "test_summary.py" in str(e.value)
    with pytest.raises(DTypeError, match=r"images must be .*\[k, h, w, c\]|images must be"):
        tw.summary.image("im", np.zeros((2, 3, 4, 3), np.int32), step=0)
    writer = tw.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        with pytest.raises(InvalidArgumentError, match="summary 'loss' has no step") as e:
            tw.summary.scalar("loss", 1.0)
        assert "test_summary.py" in str(e.value)

        @tw.compile
        def f(x):
            return tw.summary.histogram("h", x, step=0)

        with pytest.raises(InvalidArgumentError, match="NaN in summary histogram for: h") as e:
            f(np.array([1.0, np.nan], np.float32))
        assert "test_summary.py" in str(e.value)


def test_without_tensorboard_the_error_names_the_extra(monkeypatch, tmp_path):
    for name in list(sys.modules):
        if name == "tensorboard" or name.startswith("tensorboard."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match=r"tensorweave\[tensorboard\]"):
        tw.summary.create_file_writer(str(tmp_path))
    with pytest.raises(ImportError, match=r"tw.summary.scalar .*tensorweave\[tensorboard\]"):
        tw.summary.scalar("x", 1.0, step=0)
    with pytest.raises(ImportError, match=r"tensorweave\[tensorboard\]"):
        tf.summary.FileWriter(str(tmp_path))


# -- TensorFlow 1: tf.summary, FileWriter, SummarySaverHook -------------------------------------

def _v1_model():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, name="w")
    with tf.name_scope("model"):
        y = tf.matmul(x, w)
    loss = tf.reduce_mean(y * y)
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
    return x, w, loss, train


def test_v1_summaries_merge_all_and_file_writer(tmp_path):
    rng = np.random.default_rng(0)
    with tf.Graph().as_default():
        x, w, loss, train = _v1_model()
        with tf.name_scope("train"):
            tf.summary.scalar("loss", loss)
        tf.summary.histogram("w", w)
        tf.summary.text("note", "hi")
        tf.summary.image("input", tf.reshape(x, [-1, 1, 3, 1]), max_outputs=2)
        only_loss = tf.summary.merge([tf.get_default_graph().get_collection("summaries")[0]])
        merged = tf.summary.merge_all()
        xs = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            writer = tf.summary.FileWriter(str(tmp_path), sess.graph)
            expected, weights = [], []
            for i, xv in enumerate(xs):
                weights.append(sess.run(w))
                # (in one run with `train`, w's read would race with its update, as in TF1)
                s, lv = sess.run([merged, loss], {x: xv})
                sess.run(train, {x: xv})
                assert s.dtype == np.uint8  # the serialized Summary's bytes
                writer.add_summary(s, i)
                expected.append((i, float(lv)))
            one = sess.run(only_loss, {x: xs[0]})
            writer.close()
    from tensorboard.compat.proto import summary_pb2
    assert [v.tag for v in summary_pb2.Summary.FromString(bytes(one)).value] == ["train/loss"]
    acc = read(tmp_path)
    assert scalars(acc, "train/loss") == expected
    # the variable's op is named "w", so TF1's unique name scope tags the histogram "w_1"
    for h, wv in zip(acc.Histograms("w_1"), weights):
        counts, _ = np.histogram(wv.astype(np.float64), bins=30,
                                 range=(float(wv.min()), float(wv.max())))
        assert list(h.histogram_value.bucket) == counts.tolist()
    assert acc.Tensors("note")[0].tensor_proto.string_val == [b"hi"]
    assert sorted(acc.Tags()["images"]) == ["input/image/0", "input/image/1"]
    first = acc.Images("input/image/0")[0]
    assert (first.width, first.height) == (3, 1)
    pixels = np.asarray(PIL_Image.open(io.BytesIO(first.encoded_image_string)))
    # TensorFlow 1 rescales a float image: with negatives, 0 -> 128 and max|x| -> 127 away
    v = xs[0][0]
    scale, offset = (127 / np.abs(v).max(), 128) if v.min() < 0 else (255 / v.max(), 0)
    want = (v * np.float32(scale) + np.float32(offset)).astype(np.uint8)
    np.testing.assert_array_equal(pixels, want.reshape(1, 3))
    assert acc.Tags()["graph"]
    assert {"x", "w", "model/MatMul"} <= {n.name for n in acc.Graph().node}


def test_v1_merge_rejects_duplicate_tags():
    with tf.Graph().as_default():
        # two summaries named alike get distinct tags ("same", "same_1") as in TF1; the
        # same summary merged twice is a duplicate
        a = tf.summary.scalar("same", tf.constant(1.0))
        with tf.Session() as sess, pytest.raises(InvalidArgumentError, match="duplicate tag"):
            sess.run(tf.summary.merge([a, a]))


def test_summary_saver_hook_in_monitored_training_session(tmp_path):
    with tf.Graph().as_default():
        x, _, loss, train = _v1_model()
        tf.summary.scalar("loss", loss)
        feed = {x: np.ones((4, 3), np.float32)}
        losses = []
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               save_summaries_steps=2,
                                               save_checkpoint_secs=None) as sess:
            for _ in range(5):
                losses.append(float(sess.run([loss, train], feed)[0]))
    # written at global steps 0, 2, 4, each with the loss of that step
    assert scalars(read(tmp_path), "loss") == [(0, losses[0]), (2, losses[2]), (4, losses[4])]


def test_summary_saver_hook_with_its_own_writer(tmp_path):
    with tf.Graph().as_default():
        x, _, loss, train = _v1_model()
        summary = tf.summary.scalar("loss", loss)
        writer = tf.summary.FileWriter(str(tmp_path))
        hook = tf.train.SummarySaverHook(save_steps=3, summary_writer=writer, summary_op=summary)
        with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            for _ in range(7):
                sess.run(train, {x: np.ones((4, 3), np.float32)})
        writer.close()
    assert [s for s, _ in scalars(read(tmp_path), "loss")] == [0, 3, 6]
    with pytest.raises(InvalidArgumentError, match="exactly one of output_dir and summary_writer"):
        tf.train.SummarySaverHook(save_steps=1)


# -- the MLP example with --logdir -------------------------------------------------------------

def test_mlp_example_writes_scalars_histograms_and_its_graph(tmp_path):
    from .test_examples import printed_accuracy, printed_losses, run_example
    out = run_example("mnist_mlp", "--steps", "101", "--logdir", str(tmp_path))
    acc = read(tmp_path)
    losses = acc.Scalars("loss")
    assert [e.step for e in losses] == list(range(101))
    # the printed losses (steps 0 and 100) are the ones the step wrote
    assert printed_losses(out) == pytest.approx([losses[0].value, losses[100].value], abs=5e-5)
    assert all(0 <= e.value <= 1 for e in acc.Scalars("accuracy"))
    test_accuracy = acc.Scalars("test_accuracy")
    assert [e.step for e in test_accuracy] == [0, 100]
    assert test_accuracy[-1].value == pytest.approx(printed_accuracy(out), abs=1e-6)
    kernels = acc.Histograms("dense0/kernel")
    assert [h.step for h in kernels] == [0, 100]
    assert all(h.histogram_value.num == 784 * 128 for h in kernels)
    ops = {n.op for n in acc.Graph().node}
    assert {"MatMul", "WriteScalarSummary", "Placeholder"} <= ops
