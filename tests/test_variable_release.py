"""An eager tw.Variable's state (and its value's memory) is released when the variable is
garbage-collected. The default resource manager kept every variable's state by name for
the life of the process, so a notebook or a sweep that built many models never freed any
of their weights. A released name is never given out again: a graph that still names it
finds no variable, never a newer variable of that name."""

import gc
import weakref

import numpy as np

import tensorweave as tw
from tensorweave.runtime.resources import default_resource_manager


def test_a_dropped_variable_frees_its_state():
    v = tw.Variable(np.zeros((64, 64)), name="released")
    name, state = v.shared_name, weakref.ref(v.state)
    assert name in default_resource_manager().variables()
    del v
    gc.collect()
    assert name not in default_resource_manager().variables()
    assert state() is None  # the value's memory is gone with it


def test_a_released_name_is_not_reused():
    v = tw.Variable(1.0, name="retired")
    first = v.shared_name
    del v
    gc.collect()
    w = tw.Variable(2.0, name="retired")
    assert w.shared_name != first


def test_a_compiled_function_keeps_its_variables_alive():
    def make():
        v = tw.Variable(np.float32(1.0), name="kept")
        return tw.compile(lambda x: v.assign_add(x))
    step = make()
    gc.collect()
    assert float(step(np.float32(2.0))) == 3.0
    gc.collect()
    assert float(step(np.float32(2.0))) == 5.0


def test_slots_go_with_their_optimizer_and_variable():
    v = tw.Variable(np.ones(3), name="with_slots")
    opt = tw.optimizers.Adam(0.1)
    opt.apply_gradients([(tw.constant(np.ones(3)), v)])
    names = [n for n in default_resource_manager().variables() if n.startswith(v.shared_name)]
    assert len(names) >= 3  # the variable, m and v (and the optimizer's own)
    del v, opt
    gc.collect()
    assert not [n for n in default_resource_manager().variables() if n in names]
