"""A second `Checkpoint.restore` replaces what the first one left pending: optimizer state
that a restore handed to an optimizer (its slots do not exist before the first training
step) must not survive a later restore of a checkpoint without that state, or training
continues from the second checkpoint's weights with the first one's Adam moments and
step count."""

import numpy as np

import tensorweave as tw


def _objects():
    w = tw.Variable(np.array([1.0, 2.0]), name="w")
    opt = tw.optimizers.Adam(0.1)
    return w, opt, tw.train.Checkpoint(w=w, opt=opt)


def _step(w, opt):
    opt.minimize(lambda: tw.reduce_sum(w * w), var_list=[w])


def _state(w, opt):
    return [w.numpy(), opt.iterations.numpy(), opt.get_slot(w, "m").numpy(),
            opt.get_slot(w, "v").numpy()]


def test_restoring_a_checkpoint_without_optimizer_state_drops_the_pending_state(tmp_path):
    w, opt, ckpt = _objects()
    untrained = ckpt.save(str(tmp_path / "untrained"))  # no slots, no step count yet
    for _ in range(3):
        _step(w, opt)
    trained = ckpt.save(str(tmp_path / "trained"))

    w_twice, opt_twice, ckpt_twice = _objects()
    ckpt_twice.restore(trained)    # hands m, v and the step count to the optimizer
    ckpt_twice.restore(untrained)  # ...which the untrained checkpoint does not have
    _step(w_twice, opt_twice)

    w_once, opt_once, ckpt_once = _objects()
    ckpt_once.restore(untrained)
    _step(w_once, opt_once)
    for got, want in zip(_state(w_twice, opt_twice), _state(w_once, opt_once)):
        np.testing.assert_array_equal(got, want)
    assert int(opt_twice.iterations.numpy()) == 1


def test_a_later_restore_with_optimizer_state_wins(tmp_path):
    w, opt, ckpt = _objects()
    _step(w, opt)
    one_step = ckpt.save(str(tmp_path / "one"))
    for _ in range(2):
        _step(w, opt)
    three_steps = ckpt.save(str(tmp_path / "three"))
    _step(w, opt)
    expected = _state(w, opt)  # the fourth step, from the three-step checkpoint

    w2, opt2, ckpt2 = _objects()
    ckpt2.restore(one_step)
    ckpt2.restore(three_steps).assert_consumed()
    _step(w2, opt2)
    for got, want in zip(_state(w2, opt2), expected):
        np.testing.assert_array_equal(got, want)
