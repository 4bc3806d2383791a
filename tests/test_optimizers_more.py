"""TensorFlow 1's ProximalGradientDescentOptimizer, ProximalAdagradOptimizer,
AdagradDAOptimizer and FtrlOptimizer's l2_shrinkage / beta / slot names, and Keras'
Adamax, Lion and Adafactor: each against a NumPy transcription of TensorFlow's kernel
(Keras' rule) over several steps in float64, dense and sparse (a Gather of the variable,
with a repeated row: the optimizer sums repeated slices before the sparse kernel).

The transcriptions were checked once against TensorFlow 2.21 (tf.compat.v1.train in graph
mode; tf_keras and Keras 3's Adamax, Lion and Adafactor) on the same problem: they agree
to 2e-13 (TensorFlow rounds Python-number hyperparameters to float32 first where its
optimizer converts them to tensors; with that rounding reproduced). Keras 3's Adamax
differs on a repeated row (it takes |g| of each repeated slice, tf_keras of their sum, as
here); its Adafactor differs on that sparse gradient too (tf_keras: the dense tensor, as
here)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import TARGETS

STEPS = 4
W0 = np.array([[0.5, -1.0, 0.2], [2.0, 0.25, -0.3], [0.1, 0.0, -2.0], [1.5, -0.5, 0.7]])
T = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, -1.0], [0.3, -0.2, 0.0], [1.0, 1.0, 1.0]])
C = np.array([[1.0, 2.0, 0.5], [3.0, 0.5, 1.0], [0.7, 1.5, 2.5], [1.0, 1.0, 4.0]])
IDX = np.array([2, 0, 2, 3])  # row 2 twice, row 1 never
TS = np.array([[1.0, -1.0, 0.5], [0.0, 0.5, 1.0], [0.2, 0.2, 0.2], [-1.0, 0.0, 2.0]])


# -- the NumPy transcriptions ---------------------------------------------------------------
def dense_grad(w):
    """The gradient of ``sum(C * (w - T)**2)``."""
    return 2 * C * (w - T)


def sparse_grad(w):
    """The gradient of ``sum(C * (w[IDX] - TS)**2)`` as the rows IDX, repeats summed:
    (unique rows, their summed slices)."""
    rows = np.unique(IDX)
    slices = 2 * C * (w[IDX] - TS)
    summed = np.zeros((len(rows), w.shape[1]))
    for i, r in enumerate(IDX):
        summed[np.searchsorted(rows, r)] += slices[i]
    return rows, summed


def prox(w, lr, l1, l2, g):
    """ApplyProximalGradientDescent's rule (lr may be per element)."""
    p = w - lr * g
    if l1 > 0:
        return np.sign(p) * np.maximum(np.abs(p) - lr * l1, 0.0) / (1 + lr * l2)
    return p / (1 + lr * l2)


def np_pgd(lr, l1, l2):
    return (lambda w, g, s, rows, t: prox(w, lr, l1, l2, g)), {}


def np_proximal_adagrad(lr, init, l1, l2):
    def upd(w, g, s, rows, t):
        s["accumulator"][rows] += g * g
        return prox(w, lr / np.sqrt(s["accumulator"][rows]), l1, l2, g)
    return upd, {"accumulator": init}


def np_adagrad_da(lr, init, l1, l2):
    """ApplyAdagradDA with T = t (the global step before the update, plus one)."""
    def upd(w, g, s, rows, t):
        s["gradient_accumulator"][rows] += g
        s["gradient_squared_accumulator"][rows] += g * g
        ga = s["gradient_accumulator"][rows]
        denom = l2 * t * lr + np.sqrt(s["gradient_squared_accumulator"][rows])
        if l1 > 0:
            return -lr * np.sign(ga) * np.maximum(np.abs(ga) - l1 * t, 0.0) / denom
        return -lr * ga / denom
    return upd, {"gradient_accumulator": 0.0, "gradient_squared_accumulator": init}


def np_ftrl(lr, power, init, l1, l2, shrink=0.0, beta=0.0):
    """ApplyFtrlV2, beta folded into l2 as TensorFlow 1's FtrlOptimizer does."""
    l2 = l2 + beta / (2 * lr)

    def upd(w, g, s, rows, t):
        acc = s["accum"][rows]
        new_acc = acc + g * g
        lin = s["linear"][rows] + (g + 2 * shrink * w
                                   - (new_acc ** -power - acc ** -power) / lr * w)
        quad = new_acc ** -power / lr + 2 * l2
        s["accum"][rows], s["linear"][rows] = new_acc, lin
        return np.where(np.abs(lin) > l1, (np.sign(lin) * l1 - lin) / quad, 0.0)
    return upd, {"accum": init, "linear": 0.0}


def np_run(rule, sparse, counting=True):
    """STEPS updates of W0; `t` is the step number (1 at the first), or always 1 when the
    global step is not incremented (`counting=False`)."""
    upd, inits = rule
    w = W0.copy()
    slots = {k: np.full_like(W0, v) for k, v in inits.items()}
    for k in range(STEPS):
        t = k + 1 if counting else 1
        if sparse:
            rows, g = sparse_grad(w)
            w[rows] = upd(w[rows], g, slots, rows, t)
        else:
            w = upd(w, dense_grad(w), slots, slice(None), t)
    return w, slots


# -- tensorweave ----------------------------------------------------------------------------
def v1_run(make_opt, sparse, counting=True, dtype=np.float64):
    """STEPS runs of ``opt.minimize`` in a TensorFlow 1 graph; (w, {slot: value}, opt,
    slot variable names)."""
    g = tf.Graph()
    with g.as_default():
        w = tf.get_variable("w", initializer=W0.astype(dtype))
        gs = tf.train.get_or_create_global_step()
        c = C.astype(dtype)
        if sparse:
            loss = tf.reduce_sum(c * tf.square(tf.gather(w, IDX) - TS.astype(dtype)))
        else:
            loss = tf.reduce_sum(c * tf.square(w - T.astype(dtype)))
        opt = make_opt(gs)
        train = opt.minimize(loss, global_step=gs if counting else None)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            for _ in range(STEPS):
                s.run(train)
            slots = {n: s.run(opt.get_slot(w, n)) for n in opt.get_slot_names()}
            names = {n: opt.get_slot(w, n).shared_name for n in opt.get_slot_names()}
            return s.run(w), slots, opt, names


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


hyper = st.floats(0.0, 0.3)
SPARSE = pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])


@SPARSE
@settings(max_examples=4, deadline=None)
@given(lr=st.floats(0.01, 0.3), l1=hyper, l2=hyper)
def test_proximal_gradient_descent(sparse, lr, l1, l2):
    w, slots, opt, _ = v1_run(
        lambda gs: tf.train.ProximalGradientDescentOptimizer(lr, l1, l2), sparse)
    close(w, np_run(np_pgd(lr, l1, l2), sparse)[0])
    assert slots == {} and opt.variables() == []


@SPARSE
@settings(max_examples=4, deadline=None)
@given(lr=st.floats(0.01, 0.5), init=st.floats(0.01, 1.0), l1=hyper, l2=hyper)
def test_proximal_adagrad(sparse, lr, init, l1, l2):
    w, slots, _, names = v1_run(
        lambda gs: tf.train.ProximalAdagradOptimizer(lr, init, l1, l2), sparse)
    want, want_slots = np_run(np_proximal_adagrad(lr, init, l1, l2), sparse)
    close(w, want)
    close(slots["accumulator"], want_slots["accumulator"])
    assert names == {"accumulator": "w/ProximalAdagrad/accumulator"}
    if sparse:  # row 1 is never looked up: neither it nor its accumulator changes
        np.testing.assert_array_equal(w[1], W0[1])
        np.testing.assert_array_equal(slots["accumulator"][1], init)


@SPARSE
@pytest.mark.parametrize("counting", [True, False], ids=["global_step", "no_increment"])
@settings(max_examples=3, deadline=None)
@given(lr=st.floats(0.01, 0.5), init=st.floats(0.01, 1.0), l1=st.floats(0.0, 2.0), l2=hyper)
def test_adagrad_da(sparse, counting, lr, init, l1, l2):
    w, slots, _, names = v1_run(
        lambda gs: tf.train.AdagradDAOptimizer(lr, gs, init, l1, l2), sparse, counting)
    want, want_slots = np_run(np_adagrad_da(lr, init, l1, l2), sparse, counting)
    close(w, want)
    for n in ("gradient_accumulator", "gradient_squared_accumulator"):
        close(slots[n], want_slots[n])
        assert names[n] == f"w/AdagradDA/{n}"


def test_adagrad_da_l1_zeroes_weights():
    # l1 * T above |gradient_accumulator| makes weights exactly 0 (the point of the rule):
    # the test problem must reach both branches
    w, _, _, _ = v1_run(lambda gs: tf.train.AdagradDAOptimizer(0.3, gs, 0.1, 0.5, 0.2), False)
    want, _ = np_run(np_adagrad_da(0.3, 0.1, 0.5, 0.2), False)
    close(w, want)
    assert 0 < np.sum(w == 0) < w.size


@SPARSE
@settings(max_examples=4, deadline=None)
@given(lr=st.floats(0.05, 0.5), power=st.sampled_from([-0.5, -0.3, -1.0]),
       init=st.floats(0.05, 1.0), l1=st.floats(0.0, 0.1), l2=hyper, shrink=hyper,
       beta=st.floats(0.0, 1.0))
def test_ftrl_shrinkage_and_beta(sparse, lr, power, init, l1, l2, shrink, beta):
    w, slots, _, _ = v1_run(lambda gs: tf.train.FtrlOptimizer(
        lr, power, init, l1, l2, l2_shrinkage_regularization_strength=shrink, beta=beta),
        sparse)
    want, want_slots = np_run(np_ftrl(lr, power, init, l1, l2, shrink, beta), sparse)
    close(w, want)
    close(slots["linear"], want_slots["linear"])
    close(slots["accum"], want_slots["accum"])


def test_keras_ftrl_takes_shrinkage_and_beta():
    w = tw.Variable(W0.copy(), name="kftrl_w")
    opt = tw.optimizers.Ftrl(0.2, -0.5, 0.1, 0.05, 0.1,
                             l2_shrinkage_regularization_strength=0.3, beta=0.4)
    for _ in range(STEPS):
        opt.minimize(lambda: tw.reduce_sum(C * tw.square(w - T)), [w])
    close(w.numpy(), np_run(np_ftrl(0.2, -0.5, 0.1, 0.05, 0.1, 0.3, 0.4), False)[0])
    assert opt.get_slot_names() == ["accumulator", "linear"]


def test_ftrl_slot_variable_names():
    _, _, opt, names = v1_run(lambda gs: tf.train.FtrlOptimizer(
        0.2, accum_name="acc_x", linear_name="lin_x"), False)
    assert names == {"accum": "w/acc_x", "linear": "w/lin_x"}  # TensorFlow 1's names
    _, _, _, names = v1_run(lambda gs: tf.train.FtrlOptimizer(0.2, linear_name="lin_x"), False)
    assert names == {"accum": "w/Ftrl/accum", "linear": "w/lin_x"}


def test_tensor_hyperparameters_match_numbers():
    # l1 / l2 / learning rate given as tensors (0 included: the kernel's `l1 > 0`
    # branch becomes a formula that gives the same values)
    for l1 in (0.0, 0.05):
        w, _, _, _ = v1_run(lambda gs: tf.train.ProximalAdagradOptimizer(
            tf.constant(0.3, tf.float64), 0.1, tf.constant(l1, tf.float64),
            tf.constant(0.2, tf.float32)), True)
        close(w, np_run(np_proximal_adagrad(0.3, 0.1, l1, np.float32(0.2)), True)[0])
        w, _, _, _ = v1_run(lambda gs: tf.train.AdagradDAOptimizer(
            tf.constant(0.3, tf.float64), gs, 0.1, tf.constant(l1, tf.float64), 0.2), False)
        close(w, np_run(np_adagrad_da(0.3, 0.1, l1, 0.2), False)[0])
        # learning_rate_power and l2_shrinkage in float32 for a float64 variable: cast
        w, _, _, _ = v1_run(lambda gs: tf.train.FtrlOptimizer(
            0.2, tf.constant(-0.5, tf.float32), 0.1, tf.constant(l1, tf.float64), 0.1,
            l2_shrinkage_regularization_strength=tf.constant(0.25, tf.float32)), True)
        close(w, np_run(np_ftrl(0.2, -0.5, 0.1, l1, 0.1, 0.25), True)[0])


# -- Keras: Adamax and Lion -----------------------------------------------------------------
def np_keras(name, lr, b1, b2, eps, sparse):
    w = W0.copy()
    m = np.zeros_like(w)
    u = np.zeros_like(w)
    for t in range(1, STEPS + 1):
        if sparse:  # the dense tensor of the slices (repeats summed)
            rows, s = sparse_grad(w)
            g = np.zeros_like(w)
            g[rows] = s
        else:
            g = dense_grad(w)
        if name == "adamax":
            m = m + (g - m) * (1 - b1)
            u = np.maximum(b2 * u, np.abs(g))
            w = w - lr * m / ((1 - b1 ** t) * (u + eps))
        else:
            w = w - lr * np.sign(m * b1 + g * (1 - b1))
            m = m * b2 + g * (1 - b2)
    return w, m, u


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["adamax", "lion"])
@SPARSE
@settings(max_examples=3, deadline=None)
@given(lr=st.floats(0.01, 0.3), b1=st.floats(0.5, 0.99), b2=st.floats(0.8, 0.999))
def test_adamax_and_lion_compiled(target, name, sparse, lr, b1, b2):
    opt = (tw.optimizers.Adamax(lr, b1, b2, epsilon=1e-6) if name == "adamax"
           else tw.optimizers.Lion(lr, b1, b2))
    w = tw.Variable(W0.copy(), name=f"{name}_w")

    @tw.compile(target=target)
    def step():
        if sparse:
            loss = tw.reduce_sum(C * tw.square(tw.gather(w, IDX) - TS))
        else:
            loss = tw.reduce_sum(C * tw.square(w - T))
        opt.minimize(loss, var_list=[w])

    for _ in range(STEPS):
        step()
    want, m, u = np_keras(name, lr, b1, b2, 1e-6, sparse)
    close(w.numpy(), want)
    close(opt.get_slot(w, "m").numpy(), m)
    if name == "adamax":
        close(opt.get_slot(w, "u").numpy(), u)
    assert opt.get_slot_names() == (["m", "u"] if name == "adamax" else ["m"])
    assert int(opt.iterations.numpy()) == STEPS


@pytest.mark.parametrize("target", TARGETS)
def test_lion_direction_weighs_momentum_by_beta_1(target):
    # fed gradients that change sign: after a large first gradient, a small opposite one
    # flips the direction of some elements only (which depends on beta_1 alone; a
    # smooth quadratic keeps every sign the same for any beta)
    grads = np.array([[1.0, 1.0, 1.0, -1.0], [-0.004, -0.02, -0.2, 0.006],
                      [0.3, -0.001, 0.0, -0.5]])
    opt = tw.optimizers.Lion(0.1, beta_1=0.5, beta_2=0.99)
    w = tw.Variable(np.zeros(4), name="lion_fed_w")

    @tw.compile(target=target)
    def step(x):
        opt.minimize(tw.reduce_sum(w * x), var_list=[w])

    want, m = np.zeros(4), np.zeros(4)
    for g in grads:
        step(g)
        want = want - 0.1 * np.sign(0.5 * m + 0.5 * g)
        m = 0.99 * m + 0.01 * g
    close(w.numpy(), want)
    close(opt.get_slot(w, "m").numpy(), m)


@pytest.mark.parametrize("name", ["adamax", "lion"])
def test_adamax_and_lion_eager_and_defaults(name):
    cls = tw.optimizers.Adamax if name == "adamax" else tw.optimizers.Lion
    opt = cls()  # Keras' defaults
    w = tw.Variable(W0.copy(), name=f"{name}_eager_w")
    for _ in range(STEPS):
        opt.minimize(lambda: tw.reduce_sum(C * tw.square(w - T)), [w])
    b2 = 0.999 if name == "adamax" else 0.99
    close(w.numpy(), np_keras(name, 0.001, 0.9, b2, 1e-7, False)[0])


def np_adafactor(lr, decay, eps1, eps2, clip, shapes_and_grads, steps=STEPS):
    """Keras 3's Adafactor on variables `w0s` with gradient functions `grads`."""
    w0s, grads = shapes_and_grads
    ws = [w.copy() for w in w0s]
    state = [{"r": 0.0, "c": 0.0, "v": np.zeros_like(w)} for w in ws]
    rms = lambda x: np.sqrt(np.mean(np.square(x)))  # noqa: E731
    for t in range(1, steps + 1):
        gs = [gf(*ws) for gf in grads]
        for i, (w, g) in enumerate(zip(ws, gs)):
            s = state[i]
            rho = min(lr, 1 / np.sqrt(t))
            alpha = max(eps2, rms(w)) * rho
            sq = g * g + eps1
            b2 = 1 - t ** decay
            if w.ndim >= 2:
                s["r"] = b2 * s["r"] + (1 - b2) * sq.mean(axis=-1)
                s["c"] = b2 * s["c"] + (1 - b2) * sq.mean(axis=-2)
                s["v"] = ((s["r"] / s["r"].mean(axis=-1, keepdims=True))[..., None]
                          * s["c"][..., None, :])
            else:
                s["v"] = b2 * s["v"] + (1 - b2) * sq
            u = g / np.sqrt(s["v"])
            u = u / max(1.0, rms(u) / clip)
            ws[i] = w - alpha * u
    return ws, state


W3 = np.arange(1.0, 13.0).reshape(2, 2, 3) / 7 - 0.8  # factored over its last two dims
B0 = np.array([0.3, -0.7, 1.5])  # not factored


@pytest.mark.parametrize("target", TARGETS)
@SPARSE
@settings(max_examples=3, deadline=None)
@given(lr=st.floats(0.01, 1.0), decay=st.floats(-1.0, -0.5), clip=st.floats(0.2, 2.0))
def test_adafactor(target, sparse, lr, decay, clip):
    opt = tw.optimizers.Adafactor(lr, beta_2_decay=decay, clip_threshold=clip)
    w = tw.Variable(W0.copy(), name="adafactor_w")
    w3 = tw.Variable(W3.copy(), name="adafactor_w3")
    b = tw.Variable(B0.copy(), name="adafactor_b")

    @tw.compile(target=target)
    def step():
        rows = tw.gather(w, IDX) - TS if sparse else w - T
        loss = (tw.reduce_sum(C * tw.square(rows)) + tw.reduce_sum(tw.square(w3) * W3)
                + tw.reduce_sum(tw.square(b) * np.array([1.0, 4.0, 9.0])))
        opt.minimize(loss, var_list=[w, w3, b])

    for _ in range(STEPS):
        step()

    def grad_w(w, w3, b):
        if not sparse:
            return dense_grad(w)
        rows, g = sparse_grad(w)
        out = np.zeros_like(w)
        out[rows] = g
        return out

    want, state = np_adafactor(lr, decay, 1e-30, 1e-3, clip, (
        [W0, W3, B0], [grad_w, lambda w, w3, b: 2 * w3 * W3,
                       lambda w, w3, b: 2 * b * np.array([1.0, 4.0, 9.0])]))
    for var, value, st_ in zip((w, w3, b), want, state):
        close(var.numpy(), value)
        close(opt.get_slot(var, "v").numpy(), st_["v"])
        if var is not b:
            close(opt.get_slot(var, "r").numpy(), st_["r"])
            close(opt.get_slot(var, "c").numpy(), st_["c"])
    assert opt.get_slot(b, "r").shape == ()  # Keras' placeholder for an unfactored variable
    assert opt.get_slot(w3, "r").shape == (2, 2) and opt.get_slot(w3, "c").shape == (2, 3)


def test_adafactor_eager_defaults():
    opt = tw.optimizers.Adafactor()
    w = tw.Variable(W0.copy(), name="adafactor_eager_w")
    for _ in range(STEPS):
        opt.minimize(lambda: tw.reduce_sum(C * tw.square(w - T)), [w])
    want, _ = np_adafactor(0.001, -0.8, 1e-30, 1e-3, 1.0, ([W0], [dense_grad]))
    close(w.numpy(), want[0])


# -- half precision, checkpoints, errors ----------------------------------------------------
V1_MAKERS = {
    "pgd": lambda gs: tf.train.ProximalGradientDescentOptimizer(0.1, 0.05, 0.2),
    "proximal_adagrad": lambda gs: tf.train.ProximalAdagradOptimizer(0.3, 0.1, 0.05, 0.2),
    "adagrad_da": lambda gs: tf.train.AdagradDAOptimizer(0.3, gs, 0.1, 0.05, 0.2),
    "ftrl": lambda gs: tf.train.FtrlOptimizer(0.2, -0.5, 0.1, 0.05, 0.1,
                                              l2_shrinkage_regularization_strength=0.1,
                                              beta=0.1),
}


@pytest.mark.parametrize("dtype", [np.float16, tw.bfloat16.np], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(V1_MAKERS))
def test_half_precision_variables_update_in_their_dtype(dtype, name):
    # computed in the variable's dtype, as TensorFlow's Ftrl kernel does (TensorFlow 2.21
    # has no half-precision CPU kernel for the proximal and AdagradDA updates): the
    # result keeps the dtype and is near the float64 result
    w, slots, _, _ = v1_run(V1_MAKERS[name], True, dtype=dtype)
    want, _, _, _ = v1_run(V1_MAKERS[name], True)
    assert w.dtype == dtype and all(v.dtype == dtype for v in slots.values())
    np.testing.assert_allclose(w.astype(np.float64), want, rtol=5e-2, atol=5e-2)


def test_ftrl_half_precision_matches_tensorflow():
    """TensorFlow 2.21's float16 and bfloat16 Ftrl (the three other optimizers here have
    no half-precision CPU kernel there: TF refuses those variables). The numbers came
    from (graph mode, resource variables)::

        w = tf1.get_variable("w", initializer=tf.cast([[0.5, -1.0], [2.0, 0.25]], dt))
        gs = tf1.train.get_or_create_global_step()
        loss = tf.reduce_sum(tf.square(tf.gather(w, [0, 1, 1])))
        train = tf1.train.FtrlOptimizer(0.2, l2_shrinkage_regularization_strength=0.1,
                                        beta=0.1).minimize(loss, global_step=gs)
        # 3 runs of train, then w cast to float32

    tensorweave gave the same bits; allowed here: one unit in the last place."""
    tf_results = {
        np.dtype(np.float16): [[0.050323486328125, -0.408447265625],
                               [1.44921875, -0.0017271041870117188]],
        np.dtype(tw.bfloat16.np): [[0.049560546875, -0.408203125],
                                   [1.4453125, -0.001708984375]]}
    for dtype, want in tf_results.items():
        g = tf.Graph()
        with g.as_default():
            w = tf.get_variable("w", initializer=np.array([[0.5, -1.0], [2.0, 0.25]], dtype))
            gs = tf.train.get_or_create_global_step()
            loss = tf.reduce_sum(tf.square(tf.gather(w, [0, 1, 1])))
            train = tf.train.FtrlOptimizer(0.2, l2_shrinkage_regularization_strength=0.1,
                                           beta=0.1).minimize(loss, global_step=gs)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for _ in range(3):
                    s.run(train)
                got = s.run(w)
        assert got.dtype == dtype
        ulp = 2.0 ** -10 if dtype == np.float16 else 2.0 ** -7
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=ulp, atol=0)


@pytest.mark.parametrize("name", sorted(V1_MAKERS))
def test_slots_restore_from_a_saver_checkpoint(name, tmp_path):
    """Two steps, save, restore into a fresh graph, two more steps: the four
    uninterrupted steps' result (the slots and global step are in the checkpoint)."""
    def session(restore_from=None, save_to=None):
        g = tf.Graph()
        with g.as_default():
            w = tf.get_variable("w", initializer=W0.copy())
            gs = tf.train.get_or_create_global_step()
            loss = tf.reduce_sum(C * tf.square(tf.gather(w, IDX) - TS))
            opt = V1_MAKERS[name](gs)
            train = opt.minimize(loss, global_step=gs)
            saver = tf.train.Saver()
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                if restore_from:
                    saver.restore(s, restore_from)
                for _ in range(2):
                    s.run(train)
                path = saver.save(s, str(save_to)) if save_to else None
                return s.run(w), path, [v.shared_name for v in opt.variables()]

    _, path, slot_names = session(save_to=tmp_path / "ckpt")
    got, _, _ = session(restore_from=path)
    want, _, _, _ = v1_run(V1_MAKERS[name], True)
    close(got, want)
    stored = {n for n, _ in tf.train.list_variables(path)}
    assert set(slot_names) <= stored and "global_step" in stored


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="global_step is required"):
        tf.train.AdagradDAOptimizer(0.1, None)
    with pytest.raises(ValueError, match="initial_gradient_squared_accumulator_value must be "
                                         "greater than 0"):
        tf.train.AdagradDAOptimizer(0.1, 0, initial_gradient_squared_accumulator_value=0.0)
    with pytest.raises(ValueError, match="initial_accumulator_value must be greater than 0"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="l1_regularization_strength must be greater than "
                                         "or equal to 0"):
        tf.train.ProximalGradientDescentOptimizer(0.1, l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match="l2_shrinkage_regularization_strength"):
        tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=-0.1)
    with pytest.raises(ValueError, match="learning_rate_power must be less than"):
        tw.optimizers.Ftrl(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match=r"Lion: beta_1 must be in \(0, 1\]"):
        tw.optimizers.Lion(beta_1=0.0)
    g = tf.Graph()
    with g.as_default():
        w = tf.get_variable("w", initializer=W0.copy())
        step = tf.Variable(0.0, name="float_step")
        opt = tf.train.AdagradDAOptimizer(0.1, step)
        with pytest.raises(tw.errors.DTypeError, match="global_step of AdagradDAOptimizer "
                                                       "must be an integer scalar"):
            opt.minimize(tf.reduce_sum(w))


@pytest.mark.parametrize("name", ["Adamax", "Lion", "Adafactor"])
def test_keras_optimizers_resume_from_a_checkpoint(name, tmp_path):
    """Two eager steps, tw.train.Checkpoint, a fresh variable and optimizer restored from
    it (their slots created at the next step take the stored values: Adafactor's r and c
    have their own shapes), two more steps: the four uninterrupted steps' result."""
    def train(steps, restore_from=None, save_to=None):
        w = tw.Variable(W0.copy(), name=f"ckpt_{name}_w")
        b = tw.Variable(B0.copy(), name=f"ckpt_{name}_b")
        opt = getattr(tw.optimizers, name)(0.05)
        ckpt = tw.train.Checkpoint(w=w, b=b, opt=opt)
        if restore_from:
            ckpt.restore(restore_from)  # the slots take their values when created
        for _ in range(steps):
            opt.minimize(lambda: tw.reduce_sum(C * tw.square(w - T))
                         + tw.reduce_sum(tw.square(b) * np.array([1.0, 4.0, 9.0])), [w, b])
        path = ckpt.save(str(save_to)) if save_to else None
        values = [w.numpy(), b.numpy()] + [opt.get_slot(v, s).numpy() for v in (w, b)
                                             for s in opt.get_slot_names()]
        return values, int(opt.iterations.numpy()), path

    *_, path = train(2, save_to=tmp_path / "ck")
    got, iterations, _ = train(2, restore_from=path)
    want, _, _ = train(4)
    for g, w in zip(got, want):  # Lion's weights alone could miss a lost momentum
        close(g, w)
    assert iterations == 4
