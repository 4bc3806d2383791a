"""tf.compat.v1 recurrent networks: tf.nn.rnn_cell cells, dynamic_rnn, static_rnn,
bidirectional_dynamic_rnn, tf.reverse_sequence.

Checked against a NumPy reference of each cell (hypothesis: shapes, lengths, time-major),
against finite differences in float64, and against numbers TensorFlow 2.21 printed for
fixed weights (tf.compat.v1 with disable_eager_execution and TF_USE_LEGACY_KERAS=1; the
differential script that compares whole models, gradients included, is described in
docs/api.md)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave.compat.v1 as tf
from tensorweave.errors import InvalidArgumentError, UnimplementedError

R = tf.nn.rnn_cell


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def fixed(shape, k):
    """Deterministic weights and inputs (the TensorFlow runs used the same)."""
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + k) * 0.5).reshape(shape)


def session_run(fetches, feed=None, weights=None):
    """Run `fetches` after initializing, with `weights` (a list of arrays, one per
    trainable variable in order) assigned first."""
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v, w in zip(tf.trainable_variables(), weights or []):
            sess.run(tf.assign(v, w))
        return sess.run(fetches, feed)


# -- NumPy references -------------------------------------------------------------------

def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_basic_lstm(kernel, bias, x, state, forget_bias=1.0):
    c, h = state
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ kernel + bias, 4, axis=1)
    c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
    h = np.tanh(c) * sigmoid(o)
    return h, (c, h)


def np_gru(gk, gb, ck, cb, x, h):
    r, u = np.split(sigmoid(np.concatenate([x, h], 1) @ gk + gb), 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ ck + cb)
    h = u * h + (1 - u) * c
    return h, h


def np_dynamic_rnn(step, x, state, lengths):
    """x [batch, time, depth]; `step(x_t, state) -> (out, state)` with state a tuple of
    arrays; zero outputs and the state kept at and past each row's length."""
    outs = []
    for t in range(x.shape[1]):
        out, new = step(x[:, t], state)
        valid = (t < lengths)[:, None] if lengths is not None else np.ones((len(x), 1), bool)
        outs.append(np.where(valid, out, 0.0))
        state = tuple(np.where(valid, n, s) for n, s in zip(new, state))
    return np.stack(outs, 1), state


# -- numbers TensorFlow 2.21 printed ------------------------------------------------------

# dynamic_rnn(cell, x, sequence_length=[3, 1], dtype=float64), x = fixed((2, 3, 2), 0),
# trainable variable k = fixed(shape, k + 1); loss = sum(out**2) + sum(last state part);
# "dkernel0" is the first row of d loss / d (first variable).
TF_NUMBERS = {
    "basic_lstm": dict(
        out=[0.00886053143516375, -0.09156834091250583, 0.06550750417701176,
             -0.14021084436419987, 0.0031716434280555385, -0.24166564542684507,
             -0.15239978446961489, -0.1477325510453838, 0.0, 0.0, 0.0, 0.0],
        state=[[0.006505283070072546, -0.4383679565132359, -0.2611691273597909,
                -0.23416515983562805],
               [0.0031716434280555385, -0.24166564542684507, -0.15239978446961489,
                -0.1477325510453838]],
        dkernel0=[0.027651201164094866, 0.016550583040323273, 0.11359527691628563,
                  -0.01425513407808962, 0.0044029972567301645, -0.004679052498370749,
                  0.025788895382030726, 0.01251315834477966]),
    "lstm_peep_proj": dict(
        out=[-0.02017332549007841, -0.03712346557767282, -0.04724140439970817,
             -0.008235441453945096, 0.0, 0.0],
        state=[[0.0005417282172182208, -0.4, -0.2611691273597909, -0.23416515983562805],
               [-0.04724140439970817, -0.008235441453945096]],
        dkernel0=[-0.004823800090720714, 0.007386196944931645, -0.0017015190531821083,
                  -0.020570944913236477, -0.0005139760743691957, 0.00017590863644141436,
                  -0.0033541066201499756, 0.0022859546758615444]),
    "gru": dict(
        out=[-0.27598215420284533, -0.3513227294768861, -0.40930439747415326,
             -0.5846334995522717, -0.379623161108653, -0.5829073838156251,
             -0.08933893994282825, -0.09052424644289879, 0.0, 0.0, 0.0, 0.0],
        state=[[-0.379623161108653, -0.5829073838156251, -0.08933893994282825,
                -0.09052424644289879]],
        dkernel0=[-0.00037710016094236117, 0.0116002166654926, -0.0382255510075627,
                  -0.0698617228450685]),
}

MAKE_CELL = {
    "basic_lstm": lambda: R.BasicLSTMCell(2),
    "lstm_peep_proj": lambda: R.LSTMCell(2, use_peepholes=True, num_proj=1, cell_clip=0.4),
    "gru": lambda: R.GRUCell(2),
}


@pytest.mark.parametrize("name", sorted(TF_NUMBERS))
def test_dynamic_rnn_matches_tensorflow_numbers(name):
    x = tf.placeholder(tf.float64, [2, 3, 2])
    out, state = tf.nn.dynamic_rnn(MAKE_CELL[name](), x, sequence_length=[3, 1],
                                   dtype=tf.float64)
    variables = tf.trainable_variables()
    last = state.h if isinstance(state, R.LSTMStateTuple) else state
    grad = tf.gradients(tf.reduce_sum(out * out) + tf.reduce_sum(last), variables[0])[0]
    weights = [fixed(v.shape, k + 1) for k, v in enumerate(variables)]
    o, s, g = session_run([out, state, grad], {x: fixed((2, 3, 2), 0.0)}, weights)
    want = TF_NUMBERS[name]
    np.testing.assert_allclose(o.ravel(), want["out"], rtol=1e-12, atol=1e-14)
    parts = [s.c, s.h] if isinstance(s, R.LSTMStateTuple) else [s]
    for got, exp in zip(parts, want["state"]):
        np.testing.assert_allclose(np.ravel(got), exp, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g[0], want["dkernel0"], rtol=1e-10, atol=1e-13)


# -- variable names (TensorFlow 2.21's, printed by the same programs) ---------------------

def names():
    return [(v.name, list(v.shape)) for v in tf.global_variables()]


def test_variable_names_and_shapes_of_each_cell():
    x = tf.placeholder(tf.float32, [2, 5, 3])
    tf.nn.dynamic_rnn(R.BasicLSTMCell(4), x, dtype=tf.float32)
    assert names() == [("rnn/basic_lstm_cell/kernel:0", [7, 16]),
                       ("rnn/basic_lstm_cell/bias:0", [16])]
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [2, 5, 3])
    tf.nn.dynamic_rnn(R.LSTMCell(4, use_peepholes=True, num_proj=2), x, dtype=tf.float32)
    assert names() == [("rnn/lstm_cell/kernel:0", [5, 16]), ("rnn/lstm_cell/bias:0", [16]),
                       ("rnn/lstm_cell/w_f_diag:0", [4]), ("rnn/lstm_cell/w_i_diag:0", [4]),
                       ("rnn/lstm_cell/w_o_diag:0", [4]),
                       ("rnn/lstm_cell/projection/kernel:0", [4, 2])]
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [2, 5, 3])
    cell = R.MultiRNNCell([R.DropoutWrapper(R.BasicLSTMCell(4), output_keep_prob=0.5),
                           R.GRUCell(2)])
    tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    assert names() == [("rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel:0", [7, 16]),
                       ("rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias:0", [16]),
                       ("rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel:0", [6, 4]),
                       ("rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias:0", [4]),
                       ("rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel:0", [6, 2]),
                       ("rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias:0", [2])]
    assert [v.name for v in cell.trainable_variables] == [n for n, _ in names()]


def test_names_with_scopes_bidirectional_static_and_direct_calls():
    x = tf.placeholder(tf.float32, [2, 5, 3])
    tf.nn.dynamic_rnn(R.LSTMCell(4, name="enc"), x, dtype=tf.float32, scope="s")
    tf.nn.bidirectional_dynamic_rnn(R.LSTMCell(4), R.GRUCell(3), x, dtype=tf.float32)
    cell = R.BasicRNNCell(2)
    tf.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float32, scope="st")
    gru = R.GRUCell(4)
    gru(x[:, 0], gru.zero_state(2, tf.float32), scope="myscope")
    assert [n for n, _ in names()] == [
        "s/enc/kernel:0", "s/enc/bias:0",
        "bidirectional_rnn/fw/lstm_cell/kernel:0", "bidirectional_rnn/fw/lstm_cell/bias:0",
        "bidirectional_rnn/bw/gru_cell/gates/kernel:0",
        "bidirectional_rnn/bw/gru_cell/gates/bias:0",
        "bidirectional_rnn/bw/gru_cell/candidate/kernel:0",
        "bidirectional_rnn/bw/gru_cell/candidate/bias:0",
        "st/basic_rnn_cell/kernel:0", "st/basic_rnn_cell/bias:0",
        "myscope/gates/kernel:0", "myscope/gates/bias:0", "myscope/candidate/kernel:0",
        "myscope/candidate/bias:0"]
    # the same cell run again (another scope) reuses its variables, as TensorFlow's
    tf.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float32, scope="again")
    assert len(tf.global_variables()) == 14


def test_state_and_output_sizes():
    assert R.BasicLSTMCell(4).state_size == R.LSTMStateTuple(4, 4)
    assert R.BasicLSTMCell(4, state_is_tuple=False).state_size == 8
    assert R.LSTMCell(4, num_proj=2).state_size == (4, 2)
    assert R.LSTMCell(4, num_proj=2).output_size == 2
    multi = R.MultiRNNCell([R.GRUCell(2), R.BasicLSTMCell(3)])
    assert multi.state_size == (2, R.LSTMStateTuple(3, 3)) and multi.output_size == 3


# -- values against NumPy ------------------------------------------------------------------

@settings(max_examples=8)
@given(batch=st.integers(1, 3), time=st.integers(1, 4), depth=st.integers(1, 3),
       units=st.integers(1, 3), time_major=st.booleans(), use_lengths=st.booleans(),
       seed=st.integers(0, 2**16))
def test_basic_lstm_dynamic_rnn_against_numpy(batch, time, depth, units, time_major,
                                             use_lengths, seed):
    tf.reset_default_graph()
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=(batch, time, depth))
    lengths = rng.integers(0, time + 1, size=batch).astype(np.int32) if use_lengths else None
    c0, h0 = rng.normal(size=(2, batch, units))
    x = tf.placeholder(tf.float64, [None, None, depth])
    state0 = R.LSTMStateTuple(tf.constant(c0), tf.constant(h0))
    feed_x = xs.transpose(1, 0, 2) if time_major else xs
    out, state = tf.nn.dynamic_rnn(R.BasicLSTMCell(units, forget_bias=0.5), x,
                                   sequence_length=lengths, initial_state=state0,
                                   time_major=time_major)
    kernel = rng.normal(size=(depth + units, 4 * units))
    bias = rng.normal(size=4 * units)
    o, s = session_run([out, state], {x: feed_x}, [kernel, bias])
    want_o, want_s = np_dynamic_rnn(
        lambda xt, st_: np_basic_lstm(kernel, bias, xt, st_, 0.5), xs, (c0, h0), lengths)
    np.testing.assert_allclose(o, want_o.transpose(1, 0, 2) if time_major else want_o,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.c, want_s[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.h, want_s[1], rtol=1e-12, atol=1e-12)


@settings(max_examples=6)
@given(batch=st.integers(1, 3), time=st.integers(1, 4), units=st.integers(1, 3),
       seed=st.integers(0, 2**16))
def test_gru_static_and_dynamic_rnn_agree_with_numpy(batch, time, units, seed):
    tf.reset_default_graph()
    rng = np.random.default_rng(seed)
    depth = 2
    xs = rng.normal(size=(batch, time, depth))
    lengths = rng.integers(0, time + 1, size=batch).astype(np.int32)
    x = tf.placeholder(tf.float64, [batch, time, depth])
    cell = R.GRUCell(units)
    out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float64)
    outs, state2 = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), sequence_length=lengths,
                                    dtype=tf.float64)
    weights = [rng.normal(size=v.shape) for v in tf.trainable_variables()]
    assert len(weights) == 4  # one set: static_rnn reused the cell's variables
    o, s, o2, s2 = session_run([out, state, tf.stack(outs, 1), state2], {x: xs}, weights)
    want_o, (want_s,) = np_dynamic_rnn(
        lambda xt, st_: (lambda h: (h[0], (h[1],)))(np_gru(*weights, xt, st_[0])), xs,
        (np.zeros((batch, units)),), lengths)
    for got_o, got_s in ((o, s), (o2, s2)):
        np.testing.assert_allclose(got_o, want_o, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got_s, want_s, rtol=1e-12, atol=1e-12)


def test_outputs_zero_and_state_copied_through_past_each_length():
    # the classic trap: a row of length 1 must keep the state after its first step
    x = tf.placeholder(tf.float64, [3, 4, 2])
    out, state = tf.nn.dynamic_rnn(R.BasicLSTMCell(3), x, sequence_length=[4, 1, 0],
                                   dtype=tf.float64)
    xs = fixed((3, 4, 2), 0.3)
    o, s = session_run([out, state], {x: xs})
    np.testing.assert_array_equal(o[1, 1:], 0)
    np.testing.assert_array_equal(o[2], 0)
    np.testing.assert_array_equal(s.h[1], o[1, 0])   # the state after step 0
    np.testing.assert_array_equal(s.h[2], 0)         # never stepped: the zero state
    np.testing.assert_array_equal(s.h[0], o[0, 3])
    assert np.all(o[1, 0] != 0)


def test_multi_cell_with_concatenated_states_against_numpy():
    x = tf.placeholder(tf.float64, [2, 3, 2])
    cell = R.MultiRNNCell([R.BasicLSTMCell(2, state_is_tuple=False), R.GRUCell(2)],
                          state_is_tuple=False)
    assert cell.state_size == 6
    out, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
    weights = [fixed(v.shape, k) for k, v in enumerate(tf.trainable_variables())]
    xs = fixed((2, 3, 2), 1.0)
    o, s = session_run([out, state], {x: xs}, weights)

    def step(xt, st_):
        h1, (c, h) = np_basic_lstm(weights[0], weights[1], xt, (st_[0], st_[1]))
        h2, _ = np_gru(*weights[2:], h1, st_[2])
        return h2, (c, h, h2)

    want_o, want_s = np_dynamic_rnn(step, xs, tuple(np.zeros((3, 2, 2))), None)
    np.testing.assert_allclose(o, want_o, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s, np.concatenate(want_s, 1), rtol=1e-12, atol=1e-12)


def test_unknown_batch_and_time_with_zero_state_from_tf_shape():
    x = tf.placeholder(tf.float32, [None, None, 2])
    cell = R.GRUCell(3)
    init = cell.zero_state(tf.shape(x)[0], tf.float32)
    assert tuple(init.shape) == (None, 3)
    out, state = tf.nn.dynamic_rnn(cell, x, initial_state=init)
    assert tuple(out.shape) == (None, None, 3)
    for b, t in ((2, 5), (4, 1)):
        o, s = session_run([out, state], {x: np.ones((b, t, 2), np.float32)})
        assert o.shape == (b, t, 3) and s.shape == (b, 3)
        np.testing.assert_array_equal(o[:, -1], s)


def test_bidirectional_reverses_within_each_length():
    # a cell that sums its inputs: the backward pass starts at each row's last valid step
    x = tf.placeholder(tf.float64, [2, 4, 1])
    (fw, bw), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(
        R.BasicRNNCell(1, activation=tf.identity), R.BasicRNNCell(1, activation=tf.identity),
        x, sequence_length=[4, 2], dtype=tf.float64)
    weights = [np.ones((2, 1)), np.zeros(1)] * 2
    xs = np.array([1.0, 2, 3, 4, 10, 20, 30, 40]).reshape(2, 4, 1)
    f, b, s1, s2 = session_run([fw, bw, sf, sb], {x: xs}, weights)
    np.testing.assert_array_equal(f[:, :, 0], [[1, 3, 6, 10], [10, 30, 0, 0]])
    np.testing.assert_array_equal(b[:, :, 0], [[10, 9, 7, 4], [30, 20, 0, 0]])
    np.testing.assert_array_equal(s1[:, 0], [10, 30])
    np.testing.assert_array_equal(s2[:, 0], [10, 30])


@settings(max_examples=10)
@given(shape=st.sampled_from([(3, 4), (2, 5, 2), (4, 3, 2)]), seed=st.integers(0, 2**16),
       axes=st.sampled_from([(1, 0), (0, 1), (2, 0), (1, 2)]))
def test_reverse_sequence_against_numpy(shape, seed, axes):
    seq_axis, batch_axis = axes
    if max(axes) >= len(shape):
        return
    tf.reset_default_graph()
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=shape)
    lengths = rng.integers(0, shape[seq_axis] + 1, size=shape[batch_axis])
    y = tf.reverse_sequence(tf.constant(xs), lengths, seq_axis=seq_axis, batch_axis=batch_axis)
    want = xs.copy()
    for b, n in enumerate(lengths):
        src = np.take(xs, b, axis=batch_axis)
        s_axis = seq_axis - (seq_axis > batch_axis)
        part = np.flip(np.take(src, np.arange(n), axis=s_axis), axis=s_axis)
        idx = [slice(None)] * len(shape)
        idx[batch_axis] = b
        idx[seq_axis] = slice(0, n)
        want[tuple(idx)] = part
    np.testing.assert_array_equal(session_run(y), want)


def test_reverse_sequence_length_past_the_sequence_is_an_error():
    # TensorFlow: InvalidArgumentError "seq_lens(0) > input.dims(1)"
    y = tf.reverse_sequence(tf.ones([2, 3]), [4, 1], seq_axis=1, batch_axis=0)
    with pytest.raises(InvalidArgumentError, match="past the length"):
        session_run(y)


# -- gradients against finite differences --------------------------------------------------

def test_lstm_dynamic_rnn_gradients_against_finite_differences():
    x = tf.placeholder(tf.float64, [2, 3, 2])
    cell = R.LSTMCell(2, use_peepholes=True, num_proj=2)
    out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=[3, 2], dtype=tf.float64)
    loss = tf.reduce_sum(tf.sin(out * 1.7)) + tf.reduce_sum(state.c * state.c)
    kernel = tf.trainable_variables()[0]
    w_in = tf.placeholder(tf.float64, kernel.shape)
    load = tf.assign(kernel, w_in)
    gx, gk = tf.gradients(loss, [x, kernel])
    xs, ks = fixed((2, 3, 2), 0.1), fixed(tuple(kernel.shape), 0.2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(load, {w_in: ks})
        got_x, got_k = sess.run([gx, gk], {x: xs})

        def f(xv, kv):
            sess.run(load, {w_in: kv})
            return sess.run(loss, {x: xv})

        eps = 1e-6
        for got, base, which in ((got_x, xs, 0), (got_k, ks, 1)):
            num = np.zeros_like(base)
            for idx in np.ndindex(base.shape):
                plus, minus = base.copy(), base.copy()
                plus[idx] += eps
                minus[idx] -= eps
                args_p = (plus, ks) if which == 0 else (xs, plus)
                args_m = (minus, ks) if which == 0 else (xs, minus)
                num[idx] = (f(*args_p) - f(*args_m)) / (2 * eps)
            np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)
    assert np.all(got_x[1, 2] == 0)  # past row 1's length: no gradient reaches its input


# -- wrappers ---------------------------------------------------------------------------------

def test_dropout_wrapper_keeps_or_scales_each_output():
    x = tf.placeholder(tf.float32, [4, 3, 2])
    keep = tf.placeholder(tf.float32, [])
    inner = R.BasicLSTMCell(5)
    out_drop, _ = tf.nn.dynamic_rnn(R.DropoutWrapper(inner, output_keep_prob=keep), x,
                                    dtype=tf.float32, scope="a")
    out_plain, _ = tf.nn.dynamic_rnn(inner, x, dtype=tf.float32, scope="a")
    xs = fixed((4, 3, 2), 0.5).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        plain = sess.run(out_plain, {x: xs})
        same = sess.run(out_drop, {x: xs, keep: 1.0})
        dropped = sess.run(out_drop, {x: xs, keep: 0.5})
    np.testing.assert_allclose(same, plain, rtol=1e-6)
    kept = dropped != 0
    np.testing.assert_allclose(dropped[kept], plain[kept] / 0.5, rtol=1e-5)
    assert 0 < kept.mean() < 1   # 60 elements: both kinds occur


def test_residual_wrapper_adds_the_input():
    x = tf.placeholder(tf.float64, [2, 3, 2])
    out, _ = tf.nn.dynamic_rnn(R.ResidualWrapper(R.GRUCell(2)), x, dtype=tf.float64,
                               scope="r")
    plain, _ = tf.nn.dynamic_rnn(R.GRUCell(2, reuse=True, name="gru_cell"), x,
                                 dtype=tf.float64, scope="r")
    xs = fixed((2, 3, 2), 0.0)
    o, p = session_run([out, plain], {x: xs})
    np.testing.assert_allclose(o, p + xs, rtol=1e-12)


# -- errors ------------------------------------------------------------------------------------

def test_errors_name_the_problem():
    x = tf.placeholder(tf.float32, [2, 3, 2])
    with pytest.raises(ValueError, match="must give a dtype"):
        tf.nn.dynamic_rnn(R.GRUCell(2), x)
    with pytest.raises(ValueError, match="sequence_length has 3 entries but the batch size is 2"):
        tf.nn.dynamic_rnn(R.GRUCell(2), x, sequence_length=[1, 2, 3], dtype=tf.float32)
    with pytest.raises(ValueError, match="depth of the inputs"):
        tf.nn.dynamic_rnn(R.GRUCell(2), tf.placeholder(tf.float32, [2, 3, None]),
                          dtype=tf.float32)
    with pytest.raises(NotImplementedError, match="num_unit_shards"):
        R.LSTMCell(3, num_unit_shards=2)
    with pytest.raises(ValueError, match="variational_recurrent=True.* needs dtype"):
        R.DropoutWrapper(R.GRUCell(2), variational_recurrent=True)
    with pytest.raises(ValueError, match="needs input_size"):
        R.DropoutWrapper(R.GRUCell(2), input_keep_prob=0.5, variational_recurrent=True,
                         dtype=tf.float32)
    with pytest.raises(TypeError, match="state_is_tupel"):   # a typo is not ignored
        R.BasicLSTMCell(3, state_is_tupel=False)
    with pytest.raises(UnimplementedError, match="batch_size must be a Python int"):
        R.GRUCell(2).zero_state(tf.placeholder(tf.int32, []), tf.float32)


def test_sequence_length_checked_at_run_time_when_the_batch_is_unknown():
    x = tf.placeholder(tf.float32, [None, 3, 2])
    lengths = tf.placeholder(tf.int32, [None])
    out, _ = tf.nn.dynamic_rnn(R.GRUCell(2), x, sequence_length=lengths, dtype=tf.float32)
    session_run(out, {x: np.ones((2, 3, 2)), lengths: [1, 3]})
    with pytest.raises(InvalidArgumentError, match="sequence_length must have batch_size"):
        session_run(out, {x: np.ones((2, 3, 2)), lengths: [1, 3, 2]})


class RunningSum(R.RNNCell):
    """A TensorFlow 1 user cell: nested inputs, a variable made with get_variable in
    `call` (the old style), a state of two tensors."""

    @property
    def state_size(self):
        return (2, 1)

    @property
    def output_size(self):
        return 2

    def call(self, inputs, state):
        a, b = inputs
        w = tf.get_variable("w", [2], dtype=a.dtype, initializer=tf.ones_initializer())
        total = state[0] + a * w + b
        return total, (total, state[1] + 1)


def test_user_cell_with_nested_inputs_and_its_own_get_variable():
    a = tf.placeholder(tf.float64, [None, 3, 2])
    b = tf.placeholder(tf.float64, [None, 3, 2])
    cell = RunningSum()
    out, (total, count) = tf.nn.dynamic_rnn(cell, (a, b), sequence_length=[3, 2],
                                            dtype=tf.float64)
    assert [v.name for v in tf.global_variables()] == ["rnn/running_sum/w:0"]
    assert cell.variables == cell.trainable_variables == tf.global_variables()
    av, bv = fixed((2, 3, 2), 0.0), fixed((2, 3, 2), 1.0)
    o, t, c = session_run([out, total, count], {a: av, b: bv})
    want = np.cumsum(av + bv, axis=1)
    np.testing.assert_allclose(o[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(o[1, :2], want[1, :2], rtol=1e-12)
    np.testing.assert_array_equal(o[1, 2], 0)
    np.testing.assert_allclose(t, [want[0, 2], want[1, 1]], rtol=1e-12)
    np.testing.assert_array_equal(c[:, 0], [3, 2])   # steps taken by each row


def test_multi_cell_zero_state_from_tf_shape_and_state_dropout():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    cell = R.MultiRNNCell([R.DropoutWrapper(R.BasicLSTMCell(4), state_keep_prob=0.5, seed=1),
                           R.GRUCell(2)])
    init = cell.zero_state(tf.shape(x)[0], tf.float32)
    out, state = tf.nn.dynamic_rnn(cell, x, initial_state=init)
    xs = fixed((3, 2, 3), 0.0).astype(np.float32)
    o, s = session_run([out, state], {x: xs})
    assert o.shape == (3, 2, 2) and s[0].c.shape == (3, 4) and s[1].shape == (3, 2)
    # h is dropped (each element 0 or scaled), c never is (TensorFlow's default filter)
    assert np.all(s[0].c != 0) and np.any(s[0].h == 0)


def test_state_dropout_around_a_multi_cell_spares_every_c():
    # TF (same program, state_keep_prob=0.05): c zeros 0.0 in both layers, h zeros 0.95
    x = tf.placeholder(tf.float32, [4, 2, 3])
    cell = R.DropoutWrapper(R.MultiRNNCell([R.BasicLSTMCell(5), R.BasicLSTMCell(5)]),
                            state_keep_prob=0.05, seed=1)
    _, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    s = session_run(state, {x: np.ones((4, 2, 3), np.float32)})
    for layer in s:
        assert np.all(layer.c != 0)
        assert (layer.h == 0).mean() > 0.5


def test_variational_dropout_one_mask_for_every_step_and_row():
    x = tf.placeholder(tf.float32, [3, 4, 2])
    keep = tf.placeholder(tf.float32, [])
    inner = R.GRUCell(8)
    wrapped = R.DropoutWrapper(inner, output_keep_prob=keep, variational_recurrent=True,
                               dtype=tf.float32, seed=5)
    dropped, _ = tf.nn.dynamic_rnn(wrapped, x, dtype=tf.float32, scope="g")
    plain, _ = tf.nn.dynamic_rnn(inner, x, dtype=tf.float32, scope="g")
    xs = fixed((3, 4, 2), 0.2).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        p = sess.run(plain, {x: xs})
        np.testing.assert_allclose(sess.run(dropped, {x: xs, keep: 1.0}), p, rtol=1e-6)
        masks = []
        for _ in range(3):
            d = sess.run(dropped, {x: xs, keep: 0.5})
            kept = d != 0
            # one [units] mask shared by every row and step; kept values scaled by 2
            assert np.all(kept == kept[0, 0])
            np.testing.assert_allclose(d[kept], 2 * p[kept], rtol=1e-5)
            masks.append(kept[0, 0])
    assert len({m.tobytes() for m in masks}) > 1   # a new mask each run (8 units, 3 runs)


def test_static_rnn_with_an_unknown_batch_size():
    x = tf.placeholder(tf.float64, [None, 3, 2])
    cell = R.BasicLSTMCell(2)
    outs, state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float64,
                                   sequence_length=tf.constant([3, 1, 2]))
    weights = [fixed(v.shape, k) for k, v in enumerate(tf.trainable_variables())]
    xs = fixed((3, 3, 2), 0.4)
    o, s = session_run([tf.stack(outs, 1), state], {x: xs}, weights)
    want_o, want_s = np_dynamic_rnn(
        lambda xt, st_: np_basic_lstm(weights[0], weights[1], xt, st_), xs,
        (np.zeros((3, 2)), np.zeros((3, 2))), np.array([3, 1, 2]))
    np.testing.assert_allclose(o, want_o, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(s.c, want_s[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(s.h, want_s[1], rtol=1e-12, atol=1e-14)


def test_zero_time_steps_give_the_initial_state():
    # TF: outputs of shape (2, 0, 4) and the initial state
    x = tf.placeholder(tf.float64, [2, None, 3])
    h0 = tf.constant(np.ones((2, 4)))
    out, state = tf.nn.dynamic_rnn(R.GRUCell(4), x, initial_state=h0)
    grad = tf.gradients(tf.reduce_sum(state), h0)[0]
    o, s, g = session_run([out, state, grad], {x: np.ones((2, 0, 3))})
    assert o.shape == (2, 0, 4)
    np.testing.assert_array_equal(s, 1)
    np.testing.assert_array_equal(g, 1)
