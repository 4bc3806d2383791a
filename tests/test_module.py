"""tw.Module: variables and submodules found through attributes (and lists, tuples, dicts
in them), names and name scopes, and object-graph checkpoints that restore into a freshly
built module of the same structure (with the optimizer's state), with clear errors when
the structure differs."""

import numpy as np
import pytest

import tensorweave as tw
from tests.helpers import TARGETS


class Dense(tw.Module):
    def __init__(self, n_in, n_out, seed, name=None):
        super().__init__(name=name)
        rng = np.random.default_rng(seed)
        self.w = tw.Variable(rng.standard_normal((n_in, n_out)) * 0.5, name="w")
        self.b = tw.Variable(np.zeros(n_out), name="b")

    @tw.Module.with_name_scope
    def __call__(self, x):
        return x @ self.w + self.b


class MLP(tw.Module):
    def __init__(self, sizes, seed=0, name=None):
        super().__init__(name=name)
        self.layers = [Dense(a, b, seed + i) for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]
        self.scale = tw.Variable(1.0, trainable=False, name="scale")

    @tw.Module.with_name_scope
    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = tw.tanh(layer(x))
        return self.layers[-1](x) * tw.cast(self.scale, tw.float64)


def test_variables_and_submodules_are_found_through_attributes_and_containers():
    class Holder(tw.Module):
        def __init__(self):
            super().__init__()
            self.z_dense = Dense(2, 2, 0)
            self.by_name = {"b": Dense(1, 1, 1), "a": [Dense(1, 2, 2)]}
            self.pair = (tw.Variable(1.0, name="p0"), tw.Variable(2.0, trainable=False, name="p1"))
            self.alias = self.pair[0]        # the same variable twice: listed once
            self.note = "not state"
            self.numbers = [1, 2, 3]

    h = Holder()
    assert h.name == "holder"
    a_dense, b_dense = h.by_name["a"][0], h.by_name["b"]
    # own attributes in sorted order first (alias, pair), then submodules' in that order
    want = [h.pair[0], h.pair[1], a_dense.b, a_dense.w, b_dense.b, b_dense.w,
            h.z_dense.b, h.z_dense.w]
    assert [id(v) for v in h.variables] == [id(v) for v in want]
    assert [id(v) for v in h.trainable_variables] == [id(v) for v in want if v.trainable]
    assert [id(v) for v in h.non_trainable_variables] == [id(h.pair[1])]
    assert [id(m) for m in h.submodules] == [id(a_dense), id(b_dense), id(h.z_dense)]
    assert isinstance(h.variables, tuple) and isinstance(h.submodules, tuple)


def test_nested_submodules_and_cycles():
    outer = MLP([3, 4, 2], name="outer")
    outer.inner = MLP([2, 2], seed=5, name="inner")
    outer.inner.back = outer          # a cycle: walked once
    assert len(outer.submodules) == 4  # two layers, inner and its layer
    assert len(outer.variables) == 2 * 2 + 1 + 2 + 1
    assert len(outer.trainable_variables) == 6


def test_names_and_name_scopes():
    class MyDenseLayer(tw.Module):
        pass

    assert MyDenseLayer().name == "my_dense_layer"
    assert MLP([1, 1]).name == "mlp"
    assert Dense(1, 1, 0, name="d7").name == "d7"
    with pytest.raises(ValueError, match="not a valid module name"):
        tw.Module(name="has space")

    mlp = MLP([2, 3, 1], name="net")

    @tw.compile
    def f(x):
        with mlp.name_scope:  # re-entrant and reusable
            with mlp.name_scope:
                y = tw.identity(x, name="inside")
        return mlp(y)

    f(np.ones((1, 2)))
    names = [n.name for n in f.get_concrete_function(np.ones((1, 2))).graph.nodes]
    assert "net/net/inside" in names
    assert any(n.startswith("net/dense/") for n in names)  # with_name_scope, nested


def test_missing_super_init_is_a_clear_error():
    class Broken(tw.Module):
        def __init__(self):
            self.v = tw.Variable(1.0, name="broken_v")

    with pytest.raises(RuntimeError, match=r"Broken: call super\(\).__init__\(\)"):
        Broken().variables


def make_data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 3))
    return x, np.sin(x @ np.array([[1.0], [-2.0], [0.5]]))


def train(model, opt, x, y, steps, target):
    @tw.compile(target=target)
    def step(x, y):
        def loss():
            return tw.reduce_mean(tw.square(model(x) - y))
        opt.minimize(loss, model.trainable_variables)
        return loss()

    losses = [float(step(x, y)) for _ in range(steps)]
    assert step.tracing_count == 1
    return losses


@pytest.mark.parametrize("target", TARGETS)
def test_train_save_restore_into_a_new_instance(tmp_path, target):
    x, y = make_data()
    model = MLP([3, 8, 1], seed=0)
    opt = tw.optimizers.Adam(0.05)
    losses = train(model, opt, x, y, 20, target)
    assert losses[-1] < losses[0] * 0.5
    model.scale.assign(0.75)
    prefix = tw.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "ckpt"))

    fresh = MLP([3, 8, 1], seed=123)  # other initial values
    fresh_opt = tw.optimizers.Adam(0.05)
    predict = tw.compile(lambda m, x: m(x), target=target)
    assert not np.array_equal(predict(fresh, x), predict(model, x))
    status = tw.train.Checkpoint(model=fresh, optimizer=fresh_opt).restore(prefix)
    status.assert_consumed()
    np.testing.assert_array_equal(predict(fresh, x), predict(model, x))
    assert fresh.scale.numpy() == 0.75

    # the optimizer's state (created by the first step, after the restore) came back too:
    # both continue identically
    train(model, opt, x, y, 3, target)
    train(fresh, fresh_opt, x, y, 3, target)
    for a, b in zip(model.variables, fresh.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert fresh_opt.iterations.numpy() == opt.iterations.numpy() == 23


def test_checkpoint_keys_are_object_paths(tmp_path):
    from tensorweave.runtime import checkpoint_io

    model = MLP([2, 2, 1])
    opt = tw.optimizers.Momentum(0.1)
    x, y = np.ones((2, 2)), np.ones((2, 1))
    train(model, opt, x, y, 1, "reference")
    prefix = tw.train.Checkpoint(model=model, opt=opt).write(str(tmp_path / "keys"))
    keys = set(checkpoint_io.read_tensors(prefix))
    assert {"model/layers/0/w", "model/layers/1/b", "model/scale",
            "opt/model/layers/0/w/momentum", "opt/iterations"} <= keys
    assert len(keys) == 5 + 4 + 1


def test_restore_errors_name_the_variable(tmp_path):
    small = MLP([3, 4, 1])
    prefix = tw.train.Checkpoint(model=small).write(str(tmp_path / "small"))
    before = [v.numpy() for v in MLP([3, 4, 2, 1], seed=9).variables]

    deeper = MLP([3, 4, 2, 1], seed=9)
    with pytest.raises(tw.errors.NotFoundError, match=r"lacks model/layers/2/b, model/layers/2/w"):
        tw.train.Checkpoint(model=deeper).restore(prefix)
    for v, b in zip(deeper.variables, before):  # nothing was assigned
        np.testing.assert_array_equal(v.numpy(), b)

    wider = MLP([3, 5, 1])
    with pytest.raises(ValueError, match=r"model/layers/0/b as f64\[4\].*is f64\[5\]"):
        tw.train.Checkpoint(model=wider).restore(prefix)

    shallower = MLP([3, 1])
    prefix2 = tw.train.Checkpoint(model=MLP([3, 1, 1])).write(str(tmp_path / "two"))
    status = tw.train.Checkpoint(model=shallower).restore(prefix2)
    with pytest.raises(AssertionError, match="model/layers/1/b, model/layers/1/w"):
        status.assert_consumed()
    status.expect_partial()


def test_checkpoint_rejects_untrackable_objects():
    with pytest.raises(TypeError, match="cannot checkpoint str at 'x'"):
        tw.train.Checkpoint(x="text").write("/nonexistent/never")


def test_a_random_generator_in_a_module_is_checkpointed(tmp_path):
    class Noisy(tw.Module):
        def __init__(self, seed):
            super().__init__()
            self.gen = tw.random.Generator.from_seed(seed)
            self.w = tw.Variable(np.ones(3), name="noisy_w")

    a = Noisy(1)
    a.gen.normal([2])
    prefix = tw.train.Checkpoint(model=a).write(str(tmp_path / "gen"))
    b = Noisy(2)
    tw.train.Checkpoint(model=b).restore(prefix).assert_consumed()
    assert b.gen.state.numpy().tolist() == [1, 1]
    assert b.gen.normal([4]).numpy().tobytes() == a.gen.normal([4]).numpy().tobytes()
