"""Every public module says what it offers: an ``__all__`` whose names all resolve and
have a docstring, and a ``dir()`` that lists those names and nothing the module merely
imports (``tw.nn.importlib``, ``tf.train.apply_op``)."""

from __future__ import annotations

import importlib
import types

import pytest

import tensorweave as tw

MODULES = ["tensorweave", "tensorweave.nn", "tensorweave.math", "tensorweave.train",
           "tensorweave.config", "tensorweave.errors", "tensorweave.optimizers",
           "tensorweave.random", "tensorweave.queue", "tensorweave.debugging",
           "tensorweave.compat", "tensorweave.compat.v1", "tensorweave.compat.v1.train",
           "tensorweave.compat.v1.nn", "tensorweave.compat.v1.random",
           "tensorweave.compat.v1.queue", "tensorweave.compat.v1.math",
           "tensorweave.compat.v1.layers",
           "tensorweave.datasets", "tensorweave.datasets.mnist", "tensorweave.linalg"]

# names that leaked before (issue 14) or that no public namespace should show
INTERNAL = {"importlib", "Any", "annotations", "apply_op", "apply_op1", "encode_path",
            "in_default_graph", "checkpoint_io", "threading", "NamedTuple", "Sequence",
            "Iterator", "contextlib", "types", "compiler", "frontend", "runtime", "passes",
            "targets", "default_device_manager", "placement_reasons"}


def _module(name: str) -> types.ModuleType:
    # compat.v1's nn, random, queue and math are built as attributes, not files
    head, _, tail = name.rpartition(".")
    if head == "tensorweave.compat.v1" and tail in ("nn", "random", "queue", "math"):
        return getattr(importlib.import_module(head), tail)
    return importlib.import_module(name)


@pytest.mark.parametrize("name", MODULES)
def test_every_name_in_all_resolves_and_has_a_docstring(name):
    mod = _module(name)
    assert mod.__doc__, f"{name} has no docstring"
    assert isinstance(mod.__all__, list | tuple) and mod.__all__, name
    assert len(set(mod.__all__)) == len(mod.__all__), f"{name}.__all__ repeats names"
    undocumented = []
    for attr in mod.__all__:
        obj = getattr(mod, attr)  # AttributeError here: a name that does not resolve
        if obj is None:  # tw.newaxis, documented with indexing
            continue
        if not (getattr(obj, "__doc__", None) or "").strip():
            undocumented.append(attr)
    assert not undocumented, f"{name}: no docstring for {undocumented}"


@pytest.mark.parametrize("name", MODULES)
def test_dir_shows_the_public_names_and_no_internals(name):
    mod = _module(name)
    shown = {n for n in dir(mod) if not (n.startswith("__") and n.endswith("__"))}
    assert shown == set(mod.__all__), (sorted(shown - set(mod.__all__)),
                                       sorted(set(mod.__all__) - shown))
    assert not shown & INTERNAL, sorted(shown & INTERNAL)
    for attr in mod.__all__:
        assert not attr.startswith("_"), attr
        obj = getattr(mod, attr)
        if isinstance(obj, types.ModuleType):
            assert obj.__name__.startswith("tensorweave"), (attr, obj)
        else:  # nothing re-exported from the standard library or typing
            origin = getattr(obj, "__module__", None) or "tensorweave"
            assert origin.startswith("tensorweave") or origin == "builtins" and obj is None, \
                (attr, origin)


def test_the_activations_tw_nn_lists_exist():
    for attr in ("elu", "gelu", "leaky_relu", "relu6", "selu", "sigmoid_cross_entropy_with_logits",
                 "silu", "softplus", "softsign", "swish", "relu", "sigmoid", "tanh"):
        assert callable(getattr(tw.nn, attr)) and attr in tw.nn.__all__


def test_lazily_imported_namespaces_resolve():
    assert tw.compat.v1.placeholder is not None and "compat" in dir(tw)
    assert tw.math.erf is tw.erf and tw.math.softplus is tw.nn.softplus
