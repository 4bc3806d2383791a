"""An eager tw.Variable's state (and its value's memory) is released once the variable is
garbage-collected, without ever waiting on the resource manager's lock.

The default resource manager kept every variable's state by name for the life of the
process, so a loop that made variables (a notebook, a sweep) leaked all of them. A first
fix (5ccc7f6, reverted) released the state from a finalizer that took the manager's
non-reentrant lock: a garbage collection inside `create_variable` (which holds it) ran the
finalizer on the same thread and hung forever. Now the finalizer only queues the release
and the manager drains the queue the next time it takes its lock. Tests that could hang
run in a thread joined with a timeout, so a regression fails instead of hanging."""

import gc
import threading
import weakref

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.runtime import resources as resources_module
from tensorweave.runtime.resources import ResourceManager, default_resource_manager

_JOIN_TIMEOUT_S = 20


def _run_in_thread(fn):
    """Run `fn` in a daemon thread; fail (not hang) if it has not finished in time, and
    re-raise what it raised."""
    outcome = {}

    def target():
        try:
            outcome["value"] = fn()
        except BaseException as e:  # re-raised in the test's thread
            outcome["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(_JOIN_TIMEOUT_S)
    assert not t.is_alive(), f"{fn.__name__} did not finish in {_JOIN_TIMEOUT_S} s (deadlock)"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _live_names(prefix):
    return [n for n in default_resource_manager().variables() if n.startswith(prefix)]


def test_a_thousand_dropped_variables_leave_a_bounded_number_of_states():
    prefix = "release_loop"
    before = len(default_resource_manager().variables())
    for i in range(1000):
        v = tw.Variable(np.full((4,), float(i), np.float32), name=prefix)
        v.assign_add(np.ones(4, np.float32))
        assert float(v.numpy()[0]) == i + 1
    del v
    gc.collect()
    assert _live_names(prefix) == []
    assert len(default_resource_manager().variables()) <= before


def test_a_dropped_variable_frees_its_state_and_value():
    v = tw.Variable(np.zeros((64, 64)), name="release_one")
    name, state = v.shared_name, weakref.ref(v.state)
    assert name in default_resource_manager().variables()
    del v
    gc.collect()
    assert name not in default_resource_manager().variables()
    assert state() is None  # the value's memory is gone with it
    with pytest.raises(tw.errors.NotFoundError, match=name):
        default_resource_manager().variable(name)


def test_a_released_name_is_never_given_out_again():
    v = tw.Variable(1.0, name="release_retired")
    first = v.shared_name
    del v
    gc.collect()
    w = tw.Variable(2.0, name="release_retired")
    assert w.shared_name != first
    assert first not in default_resource_manager().variables()
    assert float(w.numpy()) == 2.0


def test_a_live_variable_keeps_its_state():
    v = tw.Variable(np.arange(3.0), name="release_live")
    gc.collect()
    tw.Variable(0.0, name="release_other")  # the manager drains its queue here
    assert default_resource_manager().variable(v.shared_name) is v.state
    np.testing.assert_array_equal(v.numpy(), np.arange(3.0))


def test_a_gc_inside_create_variable_does_not_deadlock(monkeypatch):
    """The reverted fix's hang: a collection inside `create_variable` (under the manager's
    lock) finalizes a dropped variable on the same thread."""
    real_state = resources_module.VariableState
    collected = []
    # a manager of its own: were it to hang, its lock stays taken, not the default one's
    manager = ResourceManager()

    def state_that_collects(*args, **kwargs):
        collected.append(gc.collect())  # runs pending finalizers right here, lock held
        return real_state(*args, **kwargs)

    def make_garbage_then_create():
        # a variable only a reference cycle keeps alive: freed by the next gc.collect(),
        # not by reference counting, so its finalizer runs inside create_variable
        v = tw.Variable(np.ones(2), name="release_cycle", resources=manager)
        holder = {"v": v}
        holder["self"] = holder
        name = v.shared_name
        del v, holder
        monkeypatch.setattr(resources_module, "VariableState", state_that_collects)
        try:
            w = tw.Variable(np.zeros(2), name="release_after_cycle", resources=manager)
        finally:
            monkeypatch.setattr(resources_module, "VariableState", real_state)
        return name, w

    name, w = _run_in_thread(make_garbage_then_create)
    assert collected and collected[0] > 0  # the collection did find the cycle
    np.testing.assert_array_equal(w.numpy(), np.zeros(2))
    assert name not in manager.variables()


def test_a_release_from_another_thread_while_the_lock_is_held():
    """A variable dropped on one thread while another holds the manager's lock: the
    release neither waits for the lock nor is lost (the next locked call frees it)."""
    manager = ResourceManager()
    box = [tw.Variable(np.ones(3), name="release_threaded", resources=manager)]
    name = box[0].shared_name

    def drop():
        box.clear()
        gc.collect()

    with manager._lock:  # this thread is busy in the manager
        _run_in_thread(drop)  # the finalizer runs on the other thread: it must not wait
        assert name in manager._variables  # queued, not dropped yet
    assert name not in manager.variables()


def test_a_compiled_function_keeps_a_variable_whose_name_was_deleted():
    v = tw.Variable(np.float32(1.0), name="release_captured")
    name, box = v.shared_name, [v]  # the function reaches it through `box` alone

    @tw.compile
    def step(x):
        return box[0].assign_add(x)

    assert float(step(np.float32(2.0))) == 3.0
    box.clear()  # (a new trace would fail here: the calls below reuse the first)
    del v
    gc.collect()
    tw.Variable(0.0, name="release_drain")  # a locked call: drains anything queued
    assert name in default_resource_manager().variables()
    assert float(step(np.float32(2.0))) == 5.0
    gc.collect()
    assert float(step(np.float32(-1.0))) == 4.0


def test_a_compiled_function_frees_its_variables_when_it_goes():
    def make():
        v = tw.Variable(np.float32(1.0), name="release_with_function")
        return v.shared_name, tw.compile(lambda x: v.assign_add(x))

    name, step = make()
    assert float(step(np.float32(1.0))) == 2.0
    del step
    gc.collect()
    assert name not in default_resource_manager().variables()


def test_optimizer_slots_live_with_their_optimizer_and_go_with_it():
    v = tw.Variable(np.ones(3), name="release_with_slots")
    opt = tw.optimizers.Adam(0.1)
    opt.apply_gradients([(tw.constant(np.ones(3)), v)])
    names = _live_names(v.shared_name)
    assert len(names) >= 3  # the variable, its m and v slots (and the step counter)
    gc.collect()
    assert _live_names(v.shared_name) == names  # all alive while the optimizer is
    before = v.numpy().copy()
    opt.apply_gradients([(tw.constant(np.ones(3)), v)])
    assert not np.array_equal(v.numpy(), before)
    del v, opt
    gc.collect()
    assert not [n for n in default_resource_manager().variables() if n in names]


def test_a_checkpoint_of_a_live_variable_still_restores(tmp_path):
    v = tw.Variable(np.arange(4.0), name="release_ckpt")
    ckpt = tw.train.Checkpoint(v=v)
    path = ckpt.save(str(tmp_path / "ckpt"))
    for _ in range(5):  # garbage variables released around it
        tw.Variable(np.zeros(4), name="release_ckpt_garbage")
    gc.collect()
    v.assign(np.zeros(4))
    ckpt.restore(path)
    np.testing.assert_array_equal(v.numpy(), np.arange(4.0))
