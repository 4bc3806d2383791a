"""Regression tests for problems found reviewing the work landed since 8887adb: each test
failed before its fix (the fix's commit names what users saw)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.experimental import dlpack


class ReadOnlyDLPack:
    """A producer that exports its buffer read-only (as JAX, and NumPy for a read-only
    array, do) while its owner may still write to it."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs):
        view = self._array.view()
        view.flags.writeable = False
        return view.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@pytest.mark.parametrize("export", [
    pytest.param(lambda a: a.__dlpack__(), id="capsule"),
    pytest.param(lambda a: dlpack.to_dlpack(a), id="to_dlpack"),
    pytest.param(ReadOnlyDLPack, id="read-only producer"),
    pytest.param(lambda a: a, id="ndarray"),
])
def test_from_dlpack_owns_a_copy_whatever_the_producer(export):
    # from_dlpack promises a tensor that owns its values; a capsule (or a producer that
    # exports read-only) used to give a tensor sharing the producer's memory, so writing
    # to the producer afterwards changed the "immutable" tensor
    a = np.arange(4.0)
    t = dlpack.from_dlpack(export(a))
    a[0] = 100.0
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0, 3.0])
    assert t.dtype == tw.float64 and t.shape == (4,)


# ------------------------------------------------- tf.summary.image (TensorFlow 1) of floats

def _v1_image_pixels(images: np.ndarray) -> list[np.ndarray]:
    """The decoded PNGs of a compat.v1 ``tf.summary.image`` of `images`."""
    summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")
    pil = pytest.importorskip("PIL.Image")
    import io

    import tensorweave.compat.v1 as tf
    with tf.Graph().as_default():
        s = tf.summary.image("im", tf.constant(images), max_outputs=len(images))
        with tf.Session() as sess:
            data = bytes(sess.run(s))
    return [np.asarray(pil.open(io.BytesIO(v.image.encoded_image_string))).reshape(
        images.shape[1:]) for v in summary_pb2.Summary.FromString(data).value]


def tf1_normalized(image: np.ndarray) -> np.ndarray:
    """TensorFlow 1's ImageSummary kernel for one float image (summary_image_op.cc,
    NormalizeFloatImage): over its finite pixels, all >= 0 scale so the largest is 255;
    any negative: scale by 127 / max|x| and add 128; truncate to uint8; a pixel with a
    non-finite channel is the bad color (red: 255, 0, 0, 255 cut to the depth)."""
    x = image.astype(np.float32)
    finite = np.isfinite(x).all(axis=-1)
    vals = x[finite]
    lo, hi = (vals.min(), vals.max()) if vals.size else (np.inf, -np.inf)
    if lo < 0:
        m = max(abs(lo), abs(hi))
        scale, offset = np.float32(0 if m < 1e-6 else 127 / m), np.float32(128)
    else:
        scale, offset = np.float32(0 if hi < 1e-6 else 255 / hi), np.float32(0)
    out = np.where(finite[..., None], x, 0) * scale + offset
    out = out.astype(np.uint8)
    out[~finite] = np.array([255, 0, 0, 255], np.uint8)[:x.shape[-1]]
    return out


def test_v1_image_summary_normalizes_each_float_image_as_tensorflow_1():
    # TF1's tf.summary.image rescales float images (each on its own) instead of taking
    # them to be in [0, 1]: raw [0, 255] pixels used to come out all white, and
    # mean-subtracted ones lost every negative value to black
    rng = np.random.default_rng(0)
    images = np.stack([
        rng.uniform(0, 255, (2, 3, 3)),          # raw pixel values
        rng.standard_normal((2, 3, 3)),          # mean-subtracted: negatives
        rng.uniform(0, 0.5, (2, 3, 3)),          # small positives: stretched to 255
        np.zeros((2, 3, 3)),                     # all zero: scale 0
    ]).astype(np.float32)
    images[1, 0, 1, 2] = np.nan                  # a bad pixel: red
    images[2, 1, 2, 0] = np.inf
    for got, image in zip(_v1_image_pixels(images), images):
        np.testing.assert_array_equal(got, tf1_normalized(image))
    gray = rng.uniform(-3, 1, (1, 2, 2, 1)).astype(np.float32)
    np.testing.assert_array_equal(_v1_image_pixels(gray)[0], tf1_normalized(gray[0]))
    raw = np.array([[[[0.0], [127.5], [255.0]]]], np.float32)
    np.testing.assert_array_equal(_v1_image_pixels(raw)[0].ravel(), [0, 127, 255])


def test_v2_image_summary_still_takes_floats_in_0_1(tmp_path):
    # TF2's tf.summary.image saturates floats in [0, 1]: unchanged by the v1 fix
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    pil = pytest.importorskip("PIL.Image")
    import io
    x = np.array([[[[0.0], [0.5], [2.0], [-1.0]]]], np.float32)
    with tw.summary.create_file_writer(str(tmp_path)).as_default(step=0):
        tw.summary.image("im", x)
    acc = ea.EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    (img,) = acc.Images("im/image")
    pixels = np.asarray(pil.open(io.BytesIO(img.encoded_image_string))).ravel()
    np.testing.assert_array_equal(pixels, [0, 128, 255, 0])


# ---------------------------------------- errors name the function the user called, and the line

def _raises_naming(fn_name: str, kind, call, line_text: str, *match: str):
    """`call()` raises `kind` naming `fn_name` and the line of this file holding
    `line_text`, and its message matches every `match`."""
    import inspect
    with pytest.raises(kind) as err:
        call()
    msg = str(err.value)
    source = inspect.getsource(inspect.getmodule(_raises_naming)).splitlines()
    lines = [i + 1 for i, text in enumerate(source) if line_text in text]
    assert fn_name in msg, msg
    assert any(f"test_review_fixes.py:{n})" in msg for n in lines), (lines, msg)
    for m in match:
        assert m in msg, msg


@pytest.mark.parametrize("fn", ["reduce_logsumexp", "reduce_variance", "reduce_std"])
@pytest.mark.parametrize("axis", [2, -3, [0, 5]])
def test_composite_reductions_name_themselves_for_an_axis_out_of_range(fn, axis):
    # these are built from Max/Mean/Sum: an axis out of range used to be an error of an op
    # the user never called ("Max 'max'", "Mean 'mean'")
    x = np.ones((2, 3), np.float32)
    _raises_naming(fn, tw.errors.ShapeError,
                   lambda: getattr(tw.math, fn)(x, axis=axis),  # the call
                   "# the call", "out of range", "rank 2")


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [0.5, [0, 1], "a"])
def test_scans_name_themselves_for_an_axis_that_is_not_one_int(fn, axis):
    # used to be a bare TypeError("axis must be a single int ...") without op or line
    _raises_naming(fn, TypeError,
                   lambda: getattr(tw.math, fn)(np.ones((2, 3)), axis=axis),  # scan
                   "# scan", "single int")


# ------------------------------------------------------------------------- checkpoints

class _Dense(tw.Module):
    def __init__(self):
        super().__init__()
        self.w = tw.Variable(np.ones((2, 2), np.float32), name="w")


class _Stack(tw.Module):
    def __init__(self, depth):
        super().__init__()
        self.layers = [_Dense() for _ in range(depth)]


def _train_once(model, opt):
    @tw.compile
    def step(x):
        with tw.GradientTape() as tape:
            y = x
            for layer in model.layers:
                y = tw.matmul(y, layer.w)
            loss = tw.reduce_sum(y)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    step(np.ones((1, 2), np.float32))


def test_optimizer_state_of_a_variable_the_restored_model_lacks_is_reported(tmp_path):
    # the Adam slots of model/layers/1/w went into a process-global table of slots to
    # restore "later" (by a name no slot ever has), so they leaked and assert_consumed
    # did not name them
    from tensorweave.frontend import checkpoint as ckpt_module
    big, opt = _Stack(2), tw.optimizers.Adam(0.1)
    _train_once(big, opt)
    path = tw.train.Checkpoint(model=big, optimizer=opt).save(str(tmp_path / "ckpt"))
    before = dict(ckpt_module._pending_slots)
    small, opt2 = _Stack(1), tw.optimizers.Adam(0.1)
    status = tw.train.Checkpoint(model=small, optimizer=opt2).restore(path)
    assert ckpt_module._pending_slots == before
    assert sorted(status.unused) == ["model/layers/1/w", "optimizer/model/layers/1/w/m",
                                     "optimizer/model/layers/1/w/v"]
    with pytest.raises(AssertionError, match="optimizer/model/layers/1/w/m"):
        status.expect_partial().assert_consumed()
    # what the small model has is restored, its slots when the optimizer makes them: one
    # step of Adam from the saved m (the gradient of sum(ones @ w) is all ones)
    from tensorweave.runtime import checkpoint_io
    saved_m = checkpoint_io.read_tensors(path)["optimizer/model/layers/0/w/m"]
    _train_once(small, opt2)
    np.testing.assert_allclose(opt2.get_slot(small.layers[0].w, "m").numpy(),
                               0.9 * saved_m + 0.1, rtol=1e-6)


# ----------------------------------------------------------------------------- GradientTape

@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
def test_gradient_tape_of_an_integer_target_is_a_clear_error(traced):
    # TensorFlow: "The dtype of the target tensor must be floating"; this used to be a
    # CompileError from inside the autodiff pass ("cannot differentiate 'cast'") without
    # the user's line
    def fn():
        x = tw.constant([1.0, 2.0])
        with tw.GradientTape() as tape:
            tape.watch(x)
            y = tw.cast(x * 2.0, tw.int32)
        return tape.gradient(y, x)  # the integer target
    call = tw.compile(fn) if traced else fn
    _raises_naming("GradientTape.gradient", tw.errors.DTypeError, call,
                   "# the integer target", "floating", "i32[2]")


def test_gradients_of_an_integer_target_is_a_clear_error():
    # tw.gradients gave the autodiff pass's CompileError ("cannot differentiate 'cast'"),
    # without the user's line, where GradientTape.gradient names the line
    def fn(x):
        y = tw.cast(x * 2.0, tw.int32)
        return tw.gradients(y, x)  # gradients of ints
    _raises_naming("tw.gradients", tw.errors.DTypeError,
                   lambda: tw.compile(fn, target="reference")(np.ones(2, np.float32)),
                   "# gradients of ints", "floating", "i32[2]")


# ------------------------------------ misuse found in Python names the function and the line

_A = np.ones((2, 3), np.float32)
_MISUSES = [  # (what the error names, the exception class users catch, the call)
    ("tw.tensordot", TypeError, lambda: tw.tensordot(_A, _A, [[1], [1], [0]])),  # bad:0
    ("tw.tensordot", TypeError, lambda: tw.tensordot(_A, _A.T, [[0.5], [0]])),  # bad:1
    ("tw.einsum", TypeError, lambda: tw.einsum(3, _A)),  # bad:2
    ("tw.einsum", TypeError, lambda: tw.einsum("ij->i", _A, foo=True)),  # bad:3
    ("tw.roll", TypeError, lambda: tw.roll(_A, 1.5, 0)),  # bad:4
    ("tw.reverse", TypeError, lambda: tw.reverse(_A, [0.5])),  # bad:5
    ("tw.argsort", TypeError, lambda: tw.argsort(_A, axis=[0, 1])),  # bad:6
    ("tw.linalg.band_part", TypeError, lambda: tw.linalg.band_part(_A, 1.5, 0)),  # bad:7
    ("tw.linalg.diag_part", ValueError,
     lambda: tw.linalg.diag_part(_A, align="UP")),  # bad:8
    ("tw.map_fn", TypeError, lambda: tw.map_fn(3, _A)),  # bad:9
    ("tw.vectorized_map", TypeError, lambda: tw.vectorized_map(3, _A)),  # bad:10
    ("tw.vmap", TypeError, lambda: tw.vmap(3)),  # bad:11
    ("tw.vmap", ValueError, lambda: tw.vmap(lambda a: a, in_axes=None)(_A)),  # bad:12
    ("tw.clip_by_global_norm", TypeError,
     lambda: tw.clip_by_global_norm(tw.constant(_A), 1.0)),  # bad:13
    ("tw.print", ValueError, lambda: tw.print(_A, output_stream="nowhere")),  # bad:14
    ("tw.print", TypeError, lambda: tw.print(_A, summarize=1.5)),  # bad:15
    ("from_dlpack", TypeError, lambda: dlpack.from_dlpack(3)),  # bad:16
]


@pytest.mark.parametrize("case", range(len(_MISUSES)))
def test_misuse_of_new_functions_names_the_function_and_the_line(case):
    # these were bare TypeError/ValueError("tw.roll: ...") without the user's line; they
    # are tensorweave errors now (DTypeError is a TypeError, InvalidArgumentError a
    # ValueError), so code catching the builtin classes still works
    fn, kind, call = _MISUSES[case]
    _raises_naming(fn, kind, call, f"# bad:{case}")
    with pytest.raises(tw.errors.TensorWeaveError):
        call()


# ------------------------------------------------------------- tf.train.Supervisor (v1)

def test_supervisor_explicit_none_turns_an_op_off_as_in_tensorflow_1():
    # TF1's Supervisor: ready_op=None skips the readiness check and init_op=None runs no
    # initializer (USE_DEFAULT, the default, builds them). An explicit None used to get
    # the defaults: ready_op=None still raised for a variable left uninitialized on
    # purpose, and init_op=None still initialized every variable
    import tensorweave.compat.v1 as tf
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        w = tf.Variable(2.0, name="w")
        init_v = tf.variables_initializer([v])
        sv = tf.train.Supervisor(init_op=init_v, ready_op=None)
        sess = sv.prepare_or_wait_for_session()
        assert sess.run(v) == 1.0
        assert list(sess.run(tf.report_uninitialized_variables())) == [b"w"]
        sv.stop()
        sess.close()
        sv = tf.train.Supervisor(init_op=None, ready_op=None)
        sess = sv.prepare_or_wait_for_session()
        assert sorted(sess.run(tf.report_uninitialized_variables())) == [b"v", b"w"]
        sv.stop()
        sess.close()
        # the defaults are unchanged: everything initialized, and checked
        sv = tf.train.Supervisor()
        sess = sv.prepare_or_wait_for_session()
        assert sess.run(w) == 2.0
        sv.stop()
        sess.close()
        with pytest.raises(RuntimeError, match="w"):
            tf.train.Supervisor(init_op=init_v).prepare_or_wait_for_session()


# ------------------------------------------------------------------------ random integers

def test_full_range_random_integers_with_tensorflows_spelling():
    # TensorFlow asks for full-range integers with minval=None and maxval=None; that was
    # an error here ("maxval must be given ... (or neither bound)"), so code written for
    # TF could not ask for them
    full = tw.random.stateless_uniform([64], [3, 4], minval=None, maxval=None, dtype=tw.int64)
    assert full.numpy().min() < 0 < full.numpy().max()
    g1 = tw.random.Generator.from_seed(5)
    wide = g1.uniform([64], minval=None, maxval=None, dtype=tw.int32).numpy()
    assert wide.min() < 0 < wide.max()
    # one bound without the other stays an error naming the function and the line
    _raises_naming("stateless_uniform", ValueError,
                   lambda: tw.random.stateless_uniform(  # one bound
                       [2], [1, 2], minval=None, maxval=5, dtype=tw.int32),
                   "# one bound", "minval must be given")
    # minval's default 0 alone does not ask for the full range (it gave negative numbers
    # for an explicit minval=0): an error, as in TensorFlow
    _raises_naming("stateless_uniform", ValueError,
                   lambda: tw.random.stateless_uniform(  # default minval
                       [2], [1, 2], minval=0, dtype=tw.int32),
                   "# default minval", "maxval must be given")
    with pytest.raises(ValueError, match="maxval must be given"):
        tw.random.Generator.from_seed(5).uniform([8], dtype=tw.int32)


# ------------------------------------------------------------------ tw.debugging.assert_near

def test_assert_near_default_tolerance_of_bfloat16_is_its_own_epsilon():
    # TensorFlow's default is 10 epsilons of the dtype; bfloat16 used float32's epsilon,
    # so two bfloat16 values one ulp apart (1 and 1 + 2**-7) failed the assertion
    import ml_dtypes
    bf16 = ml_dtypes.bfloat16
    x = np.array([1.0, 2.0], bf16)
    y = np.array([1.0078125, 2.0], bf16)  # one bfloat16 ulp above 1
    tw.debugging.assert_near(tw.constant(x), tw.constant(y))
    # 10 epsilons (0.078) is the limit: 1.25 vs 1 is outside it
    with pytest.raises(tw.errors.InvalidArgumentError, match="rtol = 0.078125"):
        tw.debugging.assert_near(tw.constant(np.array([1.25], bf16)),
                                 tw.constant(np.array([1.0], bf16)))
    # float16 and float32 keep theirs
    with pytest.raises(tw.errors.InvalidArgumentError):
        tw.debugging.assert_near(tw.constant(np.float32(1.0)), tw.constant(np.float32(1.00001)))
    tw.debugging.assert_near(tw.constant(np.float16(1.0)), tw.constant(np.float16(1.00098)))


# -------------------------------------------------------------------- tf.multinomial (v1)

def test_v1_multinomial_takes_tensorflow_1s_arguments():
    # tf.multinomial(logits, num_samples, seed=None, name=None, output_dtype=None) was
    # categorical's (logits, num_samples, dtype, seed, name): a positional seed was read
    # as the dtype, and output_dtype= was an unexpected keyword
    import tensorweave.compat.v1 as tf
    logits = np.log(np.array([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]], np.float32))
    with tf.Graph().as_default():
        a = tf.multinomial(tf.constant(logits), 40, 7, "draw", tf.int32)
        b = tf.multinomial(tf.constant(logits), 40, seed=7, output_dtype=tf.int32)
        c = tf.random.categorical(tf.constant(logits), 40, tf.int32, seed=7)
        with tf.Session() as sess:
            va, vb, vc = sess.run([a, b, c])
    assert va.dtype == np.int32 and va.shape == (2, 40)
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_array_equal(va, vc)
    assert "draw" in a.name


def test_v1_summary_tags_are_unique_names_as_in_tensorflow_1():
    # TF1 tags a summary with its name scope made unique: a second "loss" in the graph is
    # "loss_1" (so merge_all works), and a family prefixes the scope once more. A second
    # "loss" used to get the same tag, and merge_all failed at run time
    summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")
    import tensorweave.compat.v1 as tf
    with tf.Graph().as_default():
        tf.summary.scalar("loss", tf.constant(1.0))
        tf.summary.scalar("loss", tf.constant(2.0))
        tf.summary.scalar("lr", tf.constant(3.0), family="train")
        with tf.name_scope("outer"):
            tf.summary.scalar("acc", tf.constant(4.0))
            tf.summary.histogram("acc", tf.constant([1.0, 2.0]), family="fam")
        merged = tf.summary.merge_all()
        with tf.Session() as sess:
            values = summary_pb2.Summary.FromString(bytes(sess.run(merged))).value
    assert [v.tag for v in values] == ["loss", "loss_1", "train/train/lr", "outer/acc",
                                       "fam/outer/fam/acc"]
    assert [v.simple_value for v in values[:4]] == [1.0, 2.0, 3.0, 4.0]


# ------------------------------------------------------------- TF1 collections with a scope

def test_v1_variable_lists_and_collections_filter_by_scope_as_tensorflow_1():
    # tf.trainable_variables(scope=...) (TF1's way to pick a GAN's generator variables)
    # was a TypeError; get_collection(key, scope) returned items without a name, which
    # TF1 leaves out whenever a scope is given
    import tensorweave.compat.v1 as tf
    with tf.Graph().as_default():
        with tf.variable_scope("gen"):
            g = tf.get_variable("w", [2])
        with tf.variable_scope("disc"):
            d = tf.get_variable("w", [2])
            s = tf.get_variable("steps", [], trainable=False)
        tf.add_to_collection("misc", 3)
        def names(vs):
            return [v.name for v in vs]
        assert names(tf.trainable_variables(scope="gen")) == [g.name] == ["gen/w:0"]
        assert names(tf.trainable_variables("disc")) == [d.name]
        assert names(tf.global_variables(scope="disc")) == [d.name, s.name]
        assert names(tf.global_variables()) == [g.name, d.name, s.name]
        assert tf.local_variables(scope="gen") == []
        assert tf.get_collection("misc") == [3]
        assert tf.get_collection("misc", scope=".*") == []
