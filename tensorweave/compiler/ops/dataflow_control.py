"""TensorFlow's dataflow control-flow primitives: `Switch`, `Merge`, `Enter`, `Exit`,
`NextIteration` (with `NextIterationSource`) and `LoopCond`.

The lowering pass (`tensorweave.passes.lower_control_flow`) turns the functional `If` and
`While` ops into these; the dataflow executor (`tensorweave.runtime.executor`) gives them
their meaning, which no kernel can express on its own:

- *dead tensors*: `Switch` forwards its data to output 1 (`output_true`) when `pred` is
  true, else to output 0 (`output_false`); the other output is *dead*. A node with a dead
  input does not run and its outputs are dead, except `Merge`, which forwards the first
  live input it gets (and its index) and is dead only when all its inputs are.
- *frames*: `Enter` passes its input into the child frame `frame_name` (one instance per
  iteration of the enclosing frame), in iteration 0, or into every iteration when
  `is_constant` (a loop invariant); `Exit` passes a value back to the enclosing frame;
  `NextIteration` passes a value on to the next iteration of its frame; at most
  `parallel_iterations` iterations of one frame instance are in flight at once.
- `LoopCond` marks a loop's predicate (it forwards it unchanged).

The back edge of a loop
    TensorFlow's graphs have a cycle per loop variable (Merge <- NextIteration <- body
    <- Switch <- Merge). The IR keeps graphs acyclic, so the back edge is split as in
    MLIR's ``tf_executor`` dialect: ``NextIterationSource`` (no inputs; outputs the value
    and a token) feeds the `Merge`, and ``NextIteration(value, token)`` (no outputs) takes
    the value of iteration i; the executor hands it to the source paired with it by the
    token, in iteration i + 1. The token edge orders nothing: it only names the pair.

All of them are declared stateful so that no pass folds, merges or reorders them; the
`NextIteration` sink also has side effects (it has no outputs, and must not be removed).
Their reference kernels raise an error: only the dataflow executor can run them.
"""

from __future__ import annotations

from typing import Any

from ...errors import DTypeError, ShapeError, UnimplementedError, VerificationError
from ..dtypes import bool_, int32
from ..registry import attr, def_op
from ..types import TensorType, Type
from .control import merge_branch_types

TOKEN = TensorType(bool_, ())
"""The type of the token that pairs a `NextIterationSource` with its `NextIteration`."""

CONTROL_FLOW_OPS = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIteration",
                              "NextIterationSource", "LoopCond"})


def _is_bool_scalar(t: Type) -> bool:
    return isinstance(t, TensorType) and t.dtype is bool_ and t.rank == 0


def _executor_only(op: str) -> Any:
    """A reference kernel that explains why it cannot run outside the executor."""
    def kernel(*args: Any, **attrs: Any) -> Any:
        raise UnimplementedError(
            f"{op} is a dataflow control-flow primitive: only the dataflow executor runs it "
            f"(it needs dead tensors and loop frames), not the in-order evaluator; run the "
            f"lowered graph with tensorweave.runtime.dataflow.DataflowExecutable")
    kernel.__name__ = f"_{op.lower()}_kernel"
    return kernel


# ------------------------------------------------------------------------------- Switch

Switch = def_op("Switch", ["data", "pred"], stateful=True, side_effects=False,
                doc="Forwards `data` to output 1 (output_true) when the bool scalar `pred` "
                    "is true, else to output 0 (output_false); the other output is dead.")


@Switch.infer
def _switch_infer(data, pred):
    if not _is_bool_scalar(pred):
        raise DTypeError(f"pred must be a bool scalar, got {pred}")
    return [data, data]


Switch.kernel("reference")(_executor_only("Switch"))

# -------------------------------------------------------------------------------- Merge

Merge = def_op("Merge", ["*inputs"], stateful=True, side_effects=False,
               doc="Forwards the first live input (output 0) and its index (output 1, "
                   "i32); dead only when every input is dead.")


@Merge.infer
def _merge_infer(*inputs):
    if not inputs:
        raise VerificationError("Merge needs at least one input")
    out = inputs[0]
    for i, t in enumerate(inputs[1:], 1):
        try:
            out = merge_branch_types(out, t, 0)
        except (DTypeError, ShapeError):
            raise _merge_type_error(inputs, i) from None
    return [out, TensorType(int32, ())]


def _merge_type_error(inputs: tuple, i: int) -> DTypeError | ShapeError:
    """The error for a Merge whose input `i` does not match the ones before it."""
    a, b = inputs[0], inputs[i]
    msg = f"inputs must agree in dtype and rank: input 0 is {a}, input {i} is {b}"
    same_dtype = getattr(a, "dtype", a) == getattr(b, "dtype", b)
    return ShapeError(msg) if same_dtype else DTypeError(msg)


Merge.kernel("reference")(_executor_only("Merge"))

# -------------------------------------------------------------------------------- Enter

Enter = def_op("Enter", ["data"], {"frame_name": attr("str"), "is_constant": attr("bool", False),
                                   "parallel_iterations": attr("int", 10)},
               stateful=True, side_effects=False,
               doc="Passes `data` into the child frame `frame_name` (iteration 0, or every "
                   "iteration when `is_constant`).")


@Enter.infer
def _enter_infer(data, *, frame_name, is_constant, parallel_iterations):
    if not frame_name:
        raise VerificationError("frame_name must not be empty")
    if parallel_iterations < 1:
        raise VerificationError(f"parallel_iterations must be >= 1, got {parallel_iterations}")
    return data


Enter.kernel("reference")(_executor_only("Enter"))

# --------------------------------------------------------------------------------- Exit

Exit = def_op("Exit", ["data"], stateful=True, side_effects=False,
              doc="Passes `data` from a loop frame back to the enclosing frame.")


@Exit.infer
def _exit_infer(data):
    return data


Exit.kernel("reference")(_executor_only("Exit"))

# ------------------------------------------------------------------------ NextIteration

NextIterationSource = def_op(
    "NextIterationSource", [], {"value_type": attr("type")}, stateful=True,
    side_effects=False,
    doc="The value that the paired NextIteration passed on from the previous iteration "
        "(output 0, of type `value_type`), and the token that pairs them (output 1).")


@NextIterationSource.infer
def _source_infer(*, value_type):
    return [value_type, TOKEN]


NextIterationSource.kernel("reference")(_executor_only("NextIterationSource"))

NextIteration = def_op("NextIteration", ["data", "token"], stateful=True, side_effects=True,
                       doc="Passes `data` to the next iteration of its frame, as output 0 of "
                           "the NextIterationSource whose token it takes.")


@NextIteration.infer
def _next_infer(data, token):
    if token != TOKEN:
        raise DTypeError(f"token must be the i1 token of a NextIterationSource, got {token}")
    return []


NextIteration.kernel("reference")(_executor_only("NextIteration"))

# ----------------------------------------------------------------------------- LoopCond

LoopCond = def_op("LoopCond", ["pred"], stateful=True, side_effects=False,
                  doc="A loop's predicate (forwarded unchanged): the loop's Switches take it.")


@LoopCond.infer
def _loop_cond_infer(pred):
    if not _is_bool_scalar(pred):
        raise DTypeError(f"pred must be a bool scalar, got {pred}")
    return pred


LoopCond.kernel("reference")(_executor_only("LoopCond"))

__all__ = ["CONTROL_FLOW_OPS", "TOKEN", "Enter", "Exit", "LoopCond", "Merge", "NextIteration",
           "NextIterationSource", "Switch"]
