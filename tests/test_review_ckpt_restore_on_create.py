"""Variables a `tw.Module` creates on first use (as its docstring invites) after
`Checkpoint.restore` get the checkpoint's values when they are created, as TensorFlow's
deferred restoration does. Before, restore left them out without a word (only
`assert_consumed` told), and the first call built them from their initializers: the
trained weights were lost."""

import os

import numpy as np
import pytest

import tensorweave as tw


class Lazy(tw.Module):
    """A dense layer that makes its kernel on the first call."""

    def __init__(self, units, name=None):
        super().__init__(name=name)
        self.units = units
        self.kernel = None

    def __call__(self, x):
        if self.kernel is None:
            self.kernel = tw.Variable(np.zeros((x.shape[-1], self.units)), name="kernel")
        return x @ self.kernel


class Net(tw.Module):
    def __init__(self):
        super().__init__()
        self.first = Lazy(3)
        self.blocks = None  # made on the first call too, with their own lazy layers

    def __call__(self, x):
        if self.blocks is None:
            self.blocks = [Lazy(2), Lazy(1)]
        h = self.first(x)
        for block in self.blocks:
            h = block(h)
        return h


X = np.arange(8.0).reshape(2, 4)


def _trained():
    net = Net()
    net(X)
    rng = np.random.default_rng(0)
    for v in net.variables:
        v.assign(rng.normal(size=v.shape))
    return net


def test_variables_made_on_first_use_after_restore_get_the_saved_values(tmp_path):
    trained = _trained()
    path = tw.train.Checkpoint(model=trained).save(str(tmp_path / "c"))
    fresh = Net()
    status = tw.train.Checkpoint(model=fresh).restore(path)
    with pytest.raises(AssertionError, match="model/first/kernel"):
        status.assert_consumed()  # not made yet
    np.testing.assert_array_equal(fresh(X), trained(X))
    for got, want in zip(fresh.variables, trained.variables):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    status.assert_consumed()  # every value found its variable once they exist


def test_a_later_restore_replaces_the_pending_values(tmp_path):
    trained = _trained()
    first = tw.train.Checkpoint(model=trained).save(str(tmp_path / "first"))
    for v in trained.variables:
        v.assign(v.numpy() * 2)
    second = tw.train.Checkpoint(model=trained).save(str(tmp_path / "second"))
    fresh = Net()
    ckpt = tw.train.Checkpoint(model=fresh)
    ckpt.restore(first)
    ckpt.restore(second)
    np.testing.assert_array_equal(fresh(X), trained(X))


def test_a_variable_made_with_another_shape_is_an_error_naming_it(tmp_path):
    trained = _trained()
    path = tw.train.Checkpoint(model=trained).save(str(tmp_path / "c"))
    fresh = Net()
    fresh.first.units = 5  # the kernel it makes is [4, 5], the checkpoint's [4, 3]
    tw.train.Checkpoint(model=fresh).restore(path)
    with pytest.raises(ValueError, match="model/first/kernel"):
        fresh(X)


def _train(net, opt, steps):
    for _ in range(steps):
        opt.minimize(lambda: tw.reduce_sum(tw.square(net(X) - 1.0)),
                     var_list=lambda: list(net.trainable_variables) or None)


def test_training_resumed_into_lazy_modules_continues_identically(tmp_path):
    """The optimizer's slots of a variable made after the restore land too: train 10
    steps == train 5, save, restore into new objects, train 5 (Adam's m, v and step)."""
    def fresh():
        net = Net()
        net(X)  # (the reference run makes its variables before the optimizer needs them)
        return net
    straight, opt = fresh(), tw.optimizers.Adam(0.05)
    _train(straight, opt, 10)

    first, opt1 = fresh(), tw.optimizers.Adam(0.05)
    _train(first, opt1, 5)
    path = tw.train.Checkpoint(model=first, opt=opt1).save(str(tmp_path / "c"))

    resumed, opt2 = Net(), tw.optimizers.Adam(0.05)  # no variables yet
    status = tw.train.Checkpoint(model=resumed, opt=opt2).restore(path)
    _train(resumed, opt2, 5)
    status.assert_consumed()
    for got, want in zip(resumed.variables, straight.variables):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for got, want in zip(resumed.variables, straight.variables):
        for slot in ("m", "v"):
            np.testing.assert_array_equal(opt2.get_slot(got, slot).numpy(),
                                          opt.get_slot(want, slot).numpy())
    assert int(opt2.iterations.numpy()) == 10


class Stack(tw.Module):
    """Layers made in __init__ and kept in a list; each makes its kernel on first use."""

    def __init__(self):
        super().__init__()
        self.layers = []
        for units in (3, 2):
            self.layers.append(Lazy(units))

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_lazy_layers_kept_in_a_list_get_the_saved_values(tmp_path):
    trained = Stack()
    trained(X)
    for k, v in enumerate(trained.variables):
        v.assign(v.numpy() + k + 1.5)
    path = tw.train.Checkpoint(model=trained).save(str(tmp_path / "c"))
    fresh = Stack()
    status = tw.train.Checkpoint(model=fresh).restore(path)
    np.testing.assert_array_equal(fresh(X), trained(X))
    status.assert_consumed()


def test_a_checkpoint_deleted_before_the_variable_is_made_is_an_error(tmp_path):
    """Values wait by name (a bigger model's checkpoint restored into part of it must not
    hold its unused values in memory): read when the variable is made."""
    trained = _trained()
    path = tw.train.Checkpoint(model=trained).save(str(tmp_path / "c"))
    fresh = Net()
    tw.train.Checkpoint(model=fresh).restore(path)
    os.unlink(path + ".safetensors")
    with pytest.raises(tw.errors.NotFoundError, match="does not exist"):
        fresh(X)
