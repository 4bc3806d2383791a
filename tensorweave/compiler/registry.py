"""The op registry: every op is declared exactly once.

A declaration (`OpDef`) names the op's inputs, its attributes with kinds and defaults,
whether it has state, and holds the functions that give it meaning: type inference
(whose list of output types also fixes the number of outputs), one kernel per target,
and the gradient.

    MatMul = def_op("MatMul", inputs=["a", "b"],
                    attrs={"transpose_a": attr("bool", False), "transpose_b": attr("bool", False)})

    @MatMul.infer
    def _(a, b, *, transpose_a, transpose_b): ...          # TensorTypes in, TensorType(s) out

    @MatMul.kernel("reference")
    def _(a, b, *, transpose_a, transpose_b): ...          # arrays in, array(s) out

    @MatMul.gradient                                        # (frontend/grads)
    def _(op, grad): ...                                    # Tensors in, one grad per input

Users register their own ops, kernels and gradients with the same calls.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import CompileError, TensorWeaveError, VerificationError
from .dtypes import as_dtype
from .types import Type, as_shape
from .unknown_rank import infer_unranked, is_unranked

_REQUIRED = object()

ATTR_KINDS = ("bool", "int", "float", "str", "dtype", "shape", "ints", "floats", "strs",
              "tensor", "type", "any")


@dataclass(frozen=True)
class AttrSpec:
    """An attribute's kind and default (`REQUIRED` when it has none)."""

    kind: str
    default: Any = _REQUIRED

    def __post_init__(self) -> None:
        if self.kind not in ATTR_KINDS:
            raise ValueError(f"unknown attribute kind {self.kind!r}")

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def coerce(self, value: Any, attr_name: str) -> Any:
        """Check `value` against the kind and return its canonical form."""
        kind = self.kind
        if value is None and not self.required and self.default is None:
            return None
        try:
            if kind == "bool":
                if isinstance(value, (bool, np.bool_)):
                    return bool(value)
            elif kind == "int":
                if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                    return int(value)
            elif kind == "float":
                if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
                    return float(value)
            elif kind == "str":
                if isinstance(value, str):
                    return value
            elif kind == "dtype":
                return as_dtype(value)
            elif kind == "shape":
                return as_shape(value)
            elif kind == "ints":
                seq = tuple(value)
                if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in seq):
                    return tuple(int(x) for x in seq)
            elif kind == "floats":
                return tuple(float(x) for x in value)
            elif kind == "strs":
                seq = tuple(value)
                if all(isinstance(x, str) for x in seq):
                    return seq
            elif kind == "tensor":
                if isinstance(value, np.ndarray):
                    return value
            elif kind == "type":
                if isinstance(value, Type):
                    return value
            elif kind == "any":
                return value
        except (TypeError, ValueError, TensorWeaveError):
            pass
        raise VerificationError(f"attribute '{attr_name}' expects {kind}, got {value!r}")


def attr(kind: str, default: Any = _REQUIRED) -> AttrSpec:
    """Declare an attribute of the given kind, optionally with a default."""
    return AttrSpec(kind, default)


@dataclass
class KernelDef:
    """A kernel for one target; `context=True` passes a `KernelContext` first."""

    fn: Callable
    context: bool = False


class OpDef:
    """The declaration of one op. Create with `def_op`."""

    def __init__(self, name: str, inputs: Sequence[str], attrs: Mapping[str, AttrSpec],
                 stateful: bool, side_effects: bool | None,
                 tags: Sequence[str], doc: str, num_regions: int) -> None:
        variadic = [i for i, s in enumerate(inputs) if s.startswith("*")]
        if len(variadic) > 1 or (variadic and variadic[0] != len(inputs) - 1):
            raise ValueError(f"{name}: only the last input may be variadic")
        self.name = name
        self.inputs = tuple(inputs)
        self.variadic = bool(variadic)
        self.attrs = dict(attrs)
        self.stateful = stateful
        self.side_effects = stateful if side_effects is None else side_effects
        self.tags = frozenset(tags)
        self.doc = doc
        self.num_regions = num_regions
        self.infer_fn: Callable | None = None
        self.kernels: dict[str, KernelDef] = {}
        self.grad_fn: Callable | None = None
        self.not_differentiable = False

    # decorators ------------------------------------------------------------
    def infer(self, fn: Callable) -> Callable:
        """Register the type-inference function: ``fn(*input_types, **attrs)``."""
        self.infer_fn = fn
        return fn

    def kernel(self, target: str = "reference", *, context: bool = False) -> Callable:
        """Register a kernel for `target`: ``fn(*arrays, **attrs)`` returning array(s)."""
        def deco(fn: Callable) -> Callable:
            self.kernels[target] = KernelDef(fn, context)
            return fn
        return deco

    def gradient(self, fn: Callable) -> Callable:
        """Register the gradient: ``fn(op, *output_grads)`` returning one per input."""
        self.grad_fn = fn
        return fn

    # queries ---------------------------------------------------------------
    @property
    def default_name(self) -> str:
        out = []
        for i, ch in enumerate(self.name):
            if ch.isupper() and i and not self.name[i - 1].isupper():
                out.append("_")
            out.append(ch.lower())
        return "".join(out)

    def check_arity(self, n: int) -> None:
        fixed = len(self.inputs) - (1 if self.variadic else 0)
        if (self.variadic and n < fixed) or (not self.variadic and n != fixed):
            want = f"at least {fixed}" if self.variadic else str(fixed)
            raise VerificationError(f"expects {want} inputs ({', '.join(self.inputs)}), got {n}")

    def complete_attrs(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Validate given attributes, fill defaults, reject unknown names."""
        out: dict[str, Any] = {}
        for key in given:
            if key not in self.attrs and not key.startswith("_"):
                raise VerificationError(
                    f"unknown attribute '{key}' (known: {', '.join(self.attrs) or 'none'})")
        for key, spec in self.attrs.items():
            if key in given:
                out[key] = spec.coerce(given[key], key)
            elif spec.required:
                raise VerificationError(f"missing required attribute '{key}'")
            else:
                out[key] = spec.default
        for key, value in given.items():
            if key.startswith("_"):
                out[key] = value
        return out

    def infer_types(self, input_types: Sequence[Type], attrs: Mapping[str, Any],
                    regions: Sequence[Any] = ()) -> list[Type]:
        """Run type inference and normalise its result to a list of output types."""
        if self.infer_fn is None:
            raise CompileError(f"op {self.name} has no type-inference function")
        kwargs = {k: v for k, v in attrs.items() if not k.startswith("_")}
        if self.num_regions:
            kwargs["regions"] = regions
        if any(is_unranked(t) for t in input_types):
            # a v1 graph's tensor of unknown rank: what every rank it may have gives
            return infer_unranked(self.name, self._infer_list, input_types, kwargs)
        return self._infer_list(input_types, kwargs)

    def _infer_list(self, input_types: Sequence[Type], kwargs: Mapping[str, Any]) -> list[Type]:
        result = self.infer_fn(*input_types, **kwargs)
        types = [result] if isinstance(result, Type) else list(result)
        for t in types:
            if not isinstance(t, Type):
                raise CompileError(f"type inference of {self.name} returned {t!r}")
        return types

    def __repr__(self) -> str:
        return f"<OpDef {self.name}>"


_REGISTRY: dict[str, OpDef] = {}


def def_op(name: str, inputs: Sequence[str] = (), attrs: Mapping[str, AttrSpec] | None = None, *,
           stateful: bool = False,
           side_effects: bool | None = None, tags: Sequence[str] = (), doc: str = "",
           num_regions: int = 0) -> OpDef:
    """Declare a new op and return its `OpDef`.

    `inputs` names the operands (prefix the last with ``*`` for a variadic list);
    `stateful` ops are never folded, merged or reordered past their control edges;
    `side_effects` (default: same as `stateful`) keeps an unused op alive.
    `tags` are hints for passes (``elementwise``, ``reduction``, ``commutative`` ...).
    """
    if name in _REGISTRY:
        raise ValueError(f"op {name!r} is already registered")
    op = OpDef(name, inputs, attrs or {}, stateful, side_effects, tags, doc,
               num_regions)
    _REGISTRY[name] = op
    return op


def get_op(name: str) -> OpDef:
    """The declaration of op `name`; raises a clear error for unknown ops."""
    try:
        return _REGISTRY[name]
    except KeyError:
        _ensure_loaded()
        if name not in _REGISTRY and name in _DECLARED_ELSEWHERE:
            importlib.import_module(_DECLARED_ELSEWHERE[name])
        if name in _REGISTRY:
            return _REGISTRY[name]
        raise VerificationError(f"unknown op '{name}'") from None


def all_ops() -> dict[str, OpDef]:
    """Every registered op, by name."""
    _ensure_loaded()
    return dict(_REGISTRY)


def register_gradient(op_name: str) -> Callable:
    """Decorator registering the gradient function of an existing op."""
    return get_op(op_name).gradient


def not_differentiable(*op_names: str) -> None:
    """Mark ops whose outputs carry no gradient (integers, comparisons, ...)."""
    for n in op_names:
        get_op(n).not_differentiable = True


_loaded = False

# Ops declared by modules that ``import tensorweave`` does not load (compat.v1 is imported
# on first use). IR text naming them must parse in any process, e.g. a task process
# (``tensorweave server``) sent a partition with a tf.Print placed on it.
_DECLARED_ELSEWHERE = {
    "Print": "tensorweave.compat.v1.logging_ops",
    "PyFunc": "tensorweave.compat.v1.script_ops",
    "CountUpTo": "tensorweave.compat.v1.input_epochs",
}


def _ensure_loaded() -> None:
    """Import the built-in op families (declarations register on import)."""
    global _loaded
    if not _loaded:
        _loaded = True
        from . import ops  # noqa: F401

