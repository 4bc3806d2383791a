"""TensorFlow 2's eager training loop: ``optimizer.apply_gradients`` and ``minimize``
outside any graph, for every optimizer (with schedules, clipping and sparse
``IndexedSlices`` gradients). An eager step must leave the same variables and optimizer
state as the same step inside ``@tw.compile`` (bitwise on the target the eager update
runs on, within float32 tolerance on the other), its state must be what a
``tw.train.Checkpoint`` saves and restores, and Keras' ``minimize(loss_fn, var_list)``
must work; plus the eager example program."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tensorweave.frontend import function as function_module
from tensorweave.frontend.function import DEFAULT_TARGET
from tests.helpers import TARGETS
from tests.test_examples import printed_losses, run_example

STEPS = 5
W0 = np.array([[0.5, -1.0], [2.0, 0.25], [-0.3, 0.8]], np.float32)
B0 = np.array([0.3, -0.7], np.float64)
X = np.array([[1.0, 0.5, -1.0], [0.2, -0.4, 2.0], [1.5, 1.0, 0.3], [-1.0, 0.7, 0.1]],
             np.float32)
Y = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -0.5]], np.float32)

# every optimizer of tw.optimizers, and each way of setting the learning rate and clipping
CONFIGS = {
    "sgd": lambda: tw.optimizers.SGD(0.1),
    "sgd_exponential_decay": lambda: tw.optimizers.SGD(
        tw.optimizers.schedules.ExponentialDecay(0.2, decay_steps=2, decay_rate=0.5)),
    "momentum_nesterov": lambda: tw.optimizers.Momentum(0.05, momentum=0.9, nesterov=True),
    "adagrad": lambda: tw.optimizers.Adagrad(0.1),
    "adadelta": lambda: tw.optimizers.Adadelta(1.0, rho=0.9),
    "rmsprop_centered": lambda: tw.optimizers.RMSProp(0.01, momentum=0.5, centered=True),
    "adam_amsgrad_clipnorm": lambda: tw.optimizers.Adam(0.05, amsgrad=True, clipnorm=0.5),
    "adamw_piecewise": lambda: tw.optimizers.AdamW(
        tw.optimizers.schedules.PiecewiseConstantDecay([2], [0.05, 0.01]), weight_decay=0.1),
    "nadam_clipvalue": lambda: tw.optimizers.Nadam(0.02, clipvalue=0.3),
    "ftrl_global_clipnorm": lambda: tw.optimizers.Ftrl(
        0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.1,
        global_clipnorm=1.0),
}


def gradient_sequence(seed: int = 0, steps: int = STEPS) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=W0.shape).astype(np.float32), rng.normal(size=B0.shape))
            for _ in range(steps)]


def state_of(opt, variables) -> dict[str, np.ndarray]:
    """The variables' values, every slot, the step counter and other optimizer state."""
    out = {f"var{i}": v.numpy() for i, v in enumerate(variables)}
    for i, v in enumerate(variables):
        for s in opt.get_slot_names():
            out[f"var{i}/{s}"] = opt.get_slot(v, s).numpy()
    for name, var in opt._non_slot.items():
        out[name] = var.numpy()
    out["iterations"] = opt.iterations.numpy()
    return out


def assert_states(got: dict, want: dict, bitwise: bool) -> None:
    assert got.keys() == want.keys()
    for k in want:
        g, w = np.asarray(got[k]), np.asarray(want[k])
        assert g.dtype == w.dtype and g.shape == w.shape, k
        if bitwise:
            assert g.tobytes() == w.tobytes(), f"{k}: {g} != {w}"
        else:
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6, err_msg=k)


def fresh_variables(tag: str):
    return [tw.Variable(W0.copy(), name=f"{tag}_w"), tw.Variable(B0.copy(), name=f"{tag}_b")]


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_eager_steps_match_compiled_steps(config, monkeypatch):
    grads = gradient_sequence()
    states = {}
    for target in TARGETS:
        # the eager update runs on the default target: each target in turn
        monkeypatch.setattr(function_module, "DEFAULT_TARGET", target)
        eager_opt, eager_vars = CONFIGS[config](), fresh_variables(f"eager_{target}")
        for g in grads:
            result = eager_opt.apply_gradients(zip(g, eager_vars))
            assert result is eager_opt.iterations
        eager = states[target] = state_of(eager_opt, eager_vars)
        assert eager["iterations"] == STEPS
        # one trace of the update served every eager step
        (fn,) = [f for f, _ in eager_opt._eager_updates.functions.values()]
        assert fn.tracing_count == 1 and fn.target == target

        opt, variables = CONFIGS[config](), fresh_variables(f"compiled_{target}")

        @tw.compile(target=target)
        def step(gw, gb):
            opt.apply_gradients(zip([gw, gb], variables))

        for g in grads:
            step(*g)
        assert step.tracing_count == 1
        # the eager update is the graph of the compiled step, on the same target
        assert_states(eager, state_of(opt, variables), bitwise=True)
    # and the targets agree with each other within rounding
    for target in TARGETS[1:]:
        assert_states(states[target], states[TARGETS[0]], bitwise=False)


@settings(max_examples=15)
@given(st.sampled_from(sorted(CONFIGS)), hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
       st.sampled_from([np.float32, np.float64]), st.integers(0, 2**32 - 1),
       st.integers(1, 4))
def test_eager_steps_match_compiled_steps_on_random_shapes(config, shape, dtype, seed, steps):
    rng = np.random.default_rng(seed)
    init = rng.normal(size=shape).astype(dtype)
    grads = [rng.normal(size=shape).astype(dtype) for _ in range(steps)]
    eager_opt, eager_var = CONFIGS[config](), tw.Variable(init.copy(), name="hyp_eager")
    opt, var = CONFIGS[config](), tw.Variable(init.copy(), name="hyp_compiled")

    @tw.compile(target=DEFAULT_TARGET)
    def step(g):
        opt.apply_gradients([(g, var)])

    for g in grads:
        eager_opt.apply_gradients([(tw.constant(g), eager_var)])
        step(g)
    assert_states(state_of(eager_opt, [eager_var]), state_of(opt, [var]), bitwise=True)


def model_loss(w, b):
    pred = tw.matmul(X, w) + tw.cast(b, tw.float32)
    return tw.reduce_mean(tw.square(pred - Y))


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_eager_tape_loop_matches_compiled_loop(config):
    # the loop users write: gradients from a GradientTape, eagerly and inside @tw.compile
    eager_opt, eager_vars = CONFIGS[config](), fresh_variables("tape")
    losses = []
    for _ in range(STEPS):
        with tw.GradientTape() as tape:
            loss = model_loss(*eager_vars)
        grads = tape.gradient(loss, eager_vars)
        eager_opt.apply_gradients(zip(grads, eager_vars))
        losses.append(float(loss))
    opt, variables = CONFIGS[config](), fresh_variables("tape_compiled")

    @tw.compile
    def step():
        with tw.GradientTape() as tape:
            loss = model_loss(*variables)
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    compiled_losses = [float(step()) for _ in range(STEPS)]
    np.testing.assert_allclose(losses, compiled_losses, rtol=1e-5)
    assert_states(state_of(eager_opt, eager_vars), state_of(opt, variables), bitwise=False)
    assert losses[-1] < losses[0]


# ------------------------------------------------------------------ sparse gradients

SPARSE_CONFIGS = ["sgd", "momentum_nesterov", "adagrad", "rmsprop_centered",
                  "adam_amsgrad_clipnorm", "ftrl_global_clipnorm"]
EMB0 = np.arange(15, dtype=np.float32).reshape(5, 3) / 10
# repeated rows, and a different number of rows from step to step
ID_STEPS = [np.array([1, 3, 1], np.int32), np.array([0, 4], np.int32),
            np.array([2, 2, 2, 0], np.int32), np.array([4], np.int32)]


def slice_values(ids: np.ndarray, step: int) -> np.ndarray:
    return (np.arange(ids.size * 3, dtype=np.float32).reshape(-1, 3) - step) / 7


@pytest.mark.parametrize("config", SPARSE_CONFIGS)
def test_eager_indexed_slices_match_compiled(config):
    eager_opt = CONFIGS[config]()
    eager_emb = tw.Variable(EMB0.copy(), name="eager_emb")
    for k, ids in enumerate(ID_STEPS):
        g = tw.IndexedSlices(tw.constant(slice_values(ids, k)), tw.constant(ids), EMB0.shape)
        eager_opt.apply_gradients([(g, eager_emb)])
    opt = CONFIGS[config]()
    emb = tw.Variable(EMB0.copy(), name="compiled_emb")

    @tw.compile(input_signature=[tw.TensorSpec([None, 3], tw.float32),
                                 tw.TensorSpec([None], tw.int32)])
    def step(values, ids):
        opt.apply_gradients([(tw.IndexedSlices(values, ids, EMB0.shape), emb)])

    for k, ids in enumerate(ID_STEPS):
        step(slice_values(ids, k), ids)
    got, want = state_of(eager_opt, [eager_emb]), state_of(opt, [emb])
    # the compiled step has an unknown number of rows from the start; the eager update
    # relaxes to that after its second shape: the same kernels, within rounding
    assert_states(got, want, bitwise=False)
    (fn,) = [f for f, _ in eager_opt._eager_updates.functions.values()]
    assert fn.tracing_count == 2  # the first shape, then one trace with unknown rows


def test_eager_sparse_training_with_gather_matches_compiled_minimize():
    # TensorFlow's gradient of tw.gather on a variable: the slices of the gathered rows'
    # gradient at the ids; eagerly taken from the tape, in a graph from compute_gradients
    ids = np.array([3, 0, 3, 1], np.int32)
    target = np.ones((4, 3), np.float32)
    eager_opt = tw.optimizers.Momentum(0.1, momentum=0.8)
    eager_emb = tw.Variable(EMB0.copy(), name="gather_eager")
    for _ in range(STEPS):
        with tw.GradientTape() as tape:
            rows = tw.gather(eager_emb, ids)
            loss = tw.reduce_sum(tw.square(rows - target))
        g_rows = tape.gradient(loss, rows)
        eager_opt.apply_gradients([(tw.IndexedSlices(g_rows, tw.constant(ids), EMB0.shape),
                                    eager_emb)])
    opt = tw.optimizers.Momentum(0.1, momentum=0.8)
    emb = tw.Variable(EMB0.copy(), name="gather_compiled")

    @tw.compile
    def step():
        loss = tw.reduce_sum(tw.square(tw.gather(emb, ids) - target))
        (g, _), = opt.compute_gradients(loss, [emb])
        assert isinstance(g, tw.IndexedSlices)
        opt.apply_gradients([(g, emb)])

    for _ in range(STEPS):
        step()
    assert_states(state_of(eager_opt, [eager_emb]), state_of(opt, [emb]), bitwise=False)
    # sparse momentum: the accumulator of a row never looked up stays zero
    assert not opt.get_slot(emb, "momentum").numpy()[[2, 4]].any()
    assert not eager_opt.get_slot(eager_emb, "momentum").numpy()[[2, 4]].any()


# ------------------------------------------------------------------ minimize, Keras style

def test_minimize_with_a_callable_loss_eagerly():
    grads_opt, grads_vars = tw.optimizers.Adam(0.05), fresh_variables("manual")
    min_opt, min_vars = tw.optimizers.Adam(0.05), fresh_variables("minimize")
    for _ in range(STEPS):
        with tw.GradientTape() as tape:
            loss = model_loss(*grads_vars)
        grads_opt.apply_gradients(zip(tape.gradient(loss, grads_vars), grads_vars))
        assert min_opt.minimize(lambda: model_loss(*min_vars), min_vars) is min_opt.iterations
    assert_states(state_of(min_opt, min_vars), state_of(grads_opt, grads_vars), bitwise=True)


def test_minimize_var_list_callable_or_none_tape_and_global_step():
    w = tw.Variable(np.float32([1.0, -2.0]), name="mv_w")
    frozen = tw.Variable(np.float32(3.0), name="mv_frozen", trainable=False)

    def loss():
        return tw.reduce_sum(tw.square(w)) * frozen

    step = tw.Variable(np.int64(0), name="mv_step", trainable=False)
    opt = tw.optimizers.SGD(0.1)
    opt.minimize(loss, var_list=lambda: [w], global_step=step)
    np.testing.assert_allclose(w.numpy(), [1.0 - 0.1 * 6, -2.0 + 0.1 * 12], rtol=1e-6)
    assert step.numpy() == 1 and opt.iterations.numpy() == 1
    opt.minimize(loss)  # no var_list: the trainable variables the loss read
    np.testing.assert_allclose(w.numpy(), [0.4 * 0.4, -0.8 * 0.4], rtol=1e-6)
    assert frozen.numpy() == 3.0
    with tw.GradientTape() as tape:
        value = loss()
    opt.minimize(value, [w], tape=tape)  # a loss tensor with the tape that recorded it
    np.testing.assert_allclose(w.numpy(), [0.16 * 0.4, -0.32 * 0.4], rtol=1e-6)
    with pytest.raises(tw.errors.CompileError, match="callable"):
        opt.minimize(value, [w])
    grads = opt.compute_gradients(loss, [w])
    np.testing.assert_allclose(np.asarray(grads[0][0]), w.numpy() * 6, rtol=1e-6)
    assert grads[0][1] is w


# ------------------------------------------------------------------ learning rates

def test_learning_rates_callable_variable_and_changing_numbers():
    # plain SGD, so the expected values are a NumPy one-liner per step
    g = np.float32([0.5, -1.0])
    current = {"lr": 0.1}
    cases = {
        "callable": lambda: current["lr"],
        "variable": tw.Variable(np.float32(0.1), name="lr_var", trainable=False),
        "number": 0.1,
    }
    for kind, lr in cases.items():
        w = tw.Variable(np.float32([0.0, 0.0]), name=f"lr_{kind}")
        opt = tw.optimizers.SGD(lr)
        want = np.zeros(2, np.float32)
        for r in [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]:
            current["lr"] = r
            if kind == "variable":
                lr.assign(np.float32(r))
            elif kind == "number":
                opt.learning_rate = r
            opt.apply_gradients([(g, w)])
            want = want - np.float32(r) * g
        np.testing.assert_allclose(w.numpy(), want, rtol=1e-6, err_msg=kind)
        traces = sum(f.tracing_count for f, _ in opt._eager_updates.functions.values())
        # a variable is read in the update: one trace; numbers and a callable's results
        # are constants for the first few values, then one argument for all the others
        assert traces == (1 if kind == "variable" else 5), (kind, traces)


def test_hyperparameter_changes_take_effect():
    w = tw.Variable(np.float32([1.0]), name="hyper_w")
    opt = tw.optimizers.Momentum(0.1, momentum=0.5)
    g = np.float32([1.0])
    opt.apply_gradients([(g, w)])  # acc = 1, w = 0.9
    opt.momentum = 0.0
    opt.apply_gradients([(g, w)])  # acc = 1, w = 0.8
    np.testing.assert_allclose(w.numpy(), [0.8], rtol=1e-6)
    np.testing.assert_allclose(opt.get_slot(w, "momentum").numpy(), [1.0])


# ------------------------------------------------------------------ checkpoints

def test_eager_state_is_what_a_checkpoint_saves_and_restores(tmp_path):
    def model():
        return fresh_variables("ckpt")

    def train(opt, variables, steps):
        for _ in range(steps):
            with tw.GradientTape() as tape:
                loss = model_loss(*variables)
            opt.apply_gradients(zip(tape.gradient(loss, variables), variables))

    opt, variables = tw.optimizers.Nadam(0.05), model()
    train(opt, variables, 3)
    ckpt = tw.train.Checkpoint(optimizer=opt, model=variables)
    saved, _ = ckpt._tracked()
    from tensorweave.frontend.checkpoint import _optimizer_state
    paths = {id(v): k for k, v in saved.items()}
    state = _optimizer_state("optimizer", opt, paths)
    # the very objects the eager steps update
    assert state["optimizer/iterations"] is opt.iterations
    assert state["optimizer/model/0/m"] is opt.get_slot(variables[0], "m")
    assert state["optimizer/u_product"] is opt._non_slot["u_product"]
    path = ckpt.save(str(tmp_path / "eager"))
    train(opt, variables, 2)
    # restored into new objects before their state exists, then trained on eagerly
    opt2, variables2 = tw.optimizers.Nadam(0.05), model()
    tw.train.Checkpoint(optimizer=opt2, model=variables2).restore(path)
    train(opt2, variables2, 2)
    assert_states(state_of(opt2, variables2), state_of(opt, variables), bitwise=True)


# ------------------------------------------------------------------ errors

def test_eager_errors_name_the_variable_and_the_users_line():
    w = tw.Variable(np.float32([1.0, 2.0]), name="err_w")
    opt = tw.optimizers.Adam(0.1)
    with pytest.raises(tw.errors.TensorWeaveError) as err:
        opt.apply_gradients([(np.float32([1.0, 2.0, 3.0]), w)])
    msg = str(err.value)
    assert "test_eager_training.py" in msg and "[2]" in msg and "[3]" in msg, msg
    with pytest.raises(tw.errors.DTypeError) as err:
        opt.apply_gradients([(np.float64([1.0, 2.0]), w)])
    assert "err_w" in str(err.value) and "test_eager_training.py" in str(err.value)
    with pytest.raises(tw.errors.CompileError, match="no gradients provided"):
        opt.apply_gradients([(None, w)])
    g = tw.compat.v1.Graph()
    with g.as_default():
        symbolic = tw.compat.v1.placeholder(tw.float32, [2])
    with pytest.raises(tw.errors.TracingError, match="gradients of a graph"):
        opt.apply_gradients([(symbolic, w)])
    assert w.numpy().tolist() == [1.0, 2.0]  # nothing was applied


# ------------------------------------------------------------------ the example

def test_eager_regression_example_trains():
    out = run_example("eager_regression", "--steps", "60")
    losses = printed_losses(out)
    assert len(losses) >= 2 and losses[-1] < 0.5 * losses[0], out
    assert "optimizer steps: 60" in out, out
