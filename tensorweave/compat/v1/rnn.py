"""TensorFlow 1's recurrent networks: ``tf.nn.dynamic_rnn``, ``static_rnn``,
``bidirectional_dynamic_rnn``, ``static_bidirectional_rnn`` and ``tf.reverse_sequence``.

`dynamic_rnn` runs the cell in a `tw.scan` over the time steps (one ``While`` loop; the
cell's variables are made on its first, traced, call, under ``rnn/``), so the number of
steps may be known only at run time and gradients flow back through the loop. With
`sequence_length`, a step at or past a row's length gives a zero output and leaves the
row's state as it was (TensorFlow's copy-through), so the final state is the state after
each row's own last step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...compiler.dtypes import as_dtype, int32
from ...errors import ShapeError
from ...frontend import nest
from ...frontend.building import constant, convert_to_tensor, user_location
from ...frontend.context import control_dependencies
from ...frontend.control_flow import cond, scan
from ...frontend.ops import array as _array
from ...frontend.ops import indexing as _indexing
from ...frontend.ops import math as _math
from ...frontend.ops.debugging import assert_equal, assert_less, assert_non_negative
from .graph import in_default_graph
from .rnn_cell import RNNCell, batch_zeros
from .var_scope import variable_scope

TensorLike = Any


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc else None


def _swap_batch_time(x: Any) -> Any:
    """[batch, time, ...] <-> [time, batch, ...]."""
    rank = len(x.shape)
    if rank < 2:
        raise ShapeError(f"rnn: inputs must have rank >= 2 ([batch, time, ...]), got shape "
                         f"{list(x.shape)}", location=_where())
    return _array.transpose(x, [1, 0, *range(2, rank)])


def _check_cell(cell: Any, api: str) -> None:
    if not (isinstance(cell, RNNCell) or (callable(cell) and hasattr(cell, "state_size"))):
        raise TypeError(f"{api}: cell must be an RNNCell (callable with state_size), got "
                        f"{type(cell).__name__}")


def _batch_size(flat_time_major: list[Any]) -> Any:
    """The batch size of time-major inputs: an int, or ``tf.shape(x)[1]``."""
    for x in flat_time_major:
        if x.shape[1] is not None:
            return int(x.shape[1])
    return _array.shape(flat_time_major[0])[1]


def _initial_state(cell: Any, initial_state: Any, dtype: Any, batch: Any, api: str) -> Any:
    if initial_state is not None:
        return nest.map_structure(convert_to_tensor, initial_state)
    if dtype is None:
        raise ValueError(f"{api}: if there is no initial_state, you must give a dtype")
    return cell.zero_state(batch, as_dtype(dtype))


def _lengths(sequence_length: Any, batch: Any, api: str) -> Any:
    """`sequence_length` as an int32 vector of the batch size (checked)."""
    lengths = _math.cast(convert_to_tensor(sequence_length), int32)
    if len(lengths.shape) != 1:
        raise ValueError(f"{api}: sequence_length must be a vector of length batch_size, got "
                         f"shape {list(lengths.shape)}")
    if isinstance(batch, int) and lengths.shape[0] is not None:
        if lengths.shape[0] != batch:
            raise ValueError(f"{api}: sequence_length has {lengths.shape[0]} entries but the "
                             f"batch size is {batch}")
        return lengths
    # a size known only at run time: checked when the graph runs
    check = assert_equal(_array.shape(lengths)[0], batch,
                         message=f"{api}: sequence_length must have batch_size entries")
    with control_dependencies([check] if check is not None else None):
        return _array.identity(lengths)


def _steps(time_major: Any) -> Any:
    """0, 1, ..., T-1 for time-major `time_major` (T may be known only at run time)."""
    if time_major.shape[0] is not None:
        return constant(np.arange(time_major.shape[0], dtype=np.int32))
    zeros = _array.zeros_like(time_major, dtype=int32)
    if len(time_major.shape) > 1:
        zeros = _math.reduce_sum(zeros, axis=list(range(1, len(time_major.shape))))
    return _math.cumsum(zeros + 1) - 1


def _select(keep_new: Any, new: Any, old: Any) -> Any:
    """`new` in the rows where `keep_new` (a [batch] bool) is true, else `old`."""
    new, old = convert_to_tensor(new), convert_to_tensor(old)
    mask = _array.reshape(keep_new, [-1] + [1] * (len(new.shape) - 1))
    return _math.where(mask, new, old)


def _call_cell(cell: Any, x: Any, state: Any, valid: Any) -> tuple[Any, Any]:
    """One step; with `valid` (a [batch] bool: the step is within the row's length) the
    output is zero and the state is kept where it is false."""
    output, new_state = cell(x, state)
    if valid is None:
        return output, new_state
    output = nest.map_structure(
        lambda o: _select(valid, o, _array.zeros_like(o)), output)
    o_leaves, _ = nest.flatten(new_state)
    s_leaves, s_tree = nest.flatten(state)
    if len(o_leaves) != len(s_leaves):
        raise ValueError(f"rnn: the cell returned a state with {len(o_leaves)} tensors, it "
                         f"was given {len(s_leaves)}")
    return output, nest.unflatten(s_tree, [_select(valid, n, o)
                                           for n, o in zip(o_leaves, s_leaves)])


@in_default_graph
def dynamic_rnn(cell: Any, inputs: Any, sequence_length: Any = None, initial_state: Any = None,
                dtype: Any = None, parallel_iterations: int | None = None,
                swap_memory: bool = False, time_major: bool = False,
                scope: Any = None) -> tuple[Any, Any]:
    """Run `cell` over the time steps of `inputs` (``[batch, time, ...]``, or ``[time,
    batch, ...]`` with ``time_major=True``; a nest of such tensors is handed to the cell
    as one): returns ``(outputs, final_state)`` with outputs in the inputs' layout.

    Without `initial_state` the state starts at ``cell.zero_state`` of `dtype`. With
    `sequence_length` (a [batch] vector) outputs at and past each row's length are zero
    and the final state is the one after the row's last step. The cell's variables are
    made under ``scope`` (default ``rnn``). `swap_memory` is accepted and ignored."""
    _check_cell(cell, "dynamic_rnn")
    flat, tree = nest.flatten(inputs)
    if not flat:
        raise ValueError("dynamic_rnn: inputs must hold at least one tensor")
    flat = [convert_to_tensor(x) for x in flat]
    for x in flat:
        if len(x.shape) < 3:
            raise ValueError(f"dynamic_rnn: inputs must have rank >= 3 ([batch, time, depth] "
                             f"or time-major), got shape {list(x.shape)}")
        if x.shape[-1] is None:
            raise ValueError(f"dynamic_rnn: the depth of the inputs (last dim) must be known, "
                             f"got shape {list(x.shape)}")
    with variable_scope(scope or "rnn"):
        steps_first = flat if time_major else [_swap_batch_time(x) for x in flat]
        batch = _batch_size(steps_first)
        state = _initial_state(cell, initial_state, dtype, batch, "dynamic_rnn")
        valid = None
        if sequence_length is not None:
            lengths = _lengths(sequence_length, batch, "dynamic_rnn")
            # valid[t, b]: step t is within row b's length
            valid = _math.less(_array.reshape(_steps(steps_first[0]), [-1, 1]),
                               _array.reshape(lengths, [1, -1]))
        output_zero = _first_output_like(cell, steps_first, tree, state, batch)
        outputs, states = _scan_cell(cell, steps_first, tree, state, output_zero, valid,
                                     parallel_iterations, swap_memory)
        final_state = _final_state(states, state)
        if not time_major:
            outputs = nest.map_structure(_swap_batch_time, outputs)
        return outputs, final_state


def _first_output_like(cell: Any, steps_first: list[Any], tree: Any, state: Any,
                       batch: Any) -> Any:
    """Zeros shaped as the cell's output (the scan's accumulator needs an initial one)."""
    dtype = nest.flatten(state)[0][0].dtype
    size = cell.output_size

    def zeros(n: Any) -> Any:
        return batch_zeros(batch, [n] if isinstance(n, (int, np.integer)) else list(n), dtype)

    if isinstance(size, (int, np.integer)):
        return zeros(size)
    leaves, s_tree = nest.flatten(size)
    return nest.unflatten(s_tree, [zeros(n) for n in leaves])


def _scan_cell(cell: Any, steps_first: list[Any], tree: Any, state: Any, output_zero: Any,
               valid: Any, parallel_iterations: int | None, swap_memory: bool) -> tuple[Any, Any]:
    """Every step's output and state, stacked along a new axis 0."""
    elems: tuple = (steps_first,) if valid is None else (steps_first, valid)

    def step(acc: Any, elem: Any) -> Any:
        prev_state, _ = acc
        x = nest.unflatten(tree, list(elem[0]))
        output, new_state = _call_cell(cell, x, prev_state, elem[1] if len(elem) > 1 else None)
        return new_state, output

    states, outputs = scan(step, elems, initializer=(state, output_zero),
                           parallel_iterations=parallel_iterations or 32,
                           swap_memory=swap_memory, name="while")
    return outputs, states


def _final_state(states: Any, initial: Any) -> Any:
    """The state after the last step: the last row of each stacked state, or `initial`
    when there are no steps (TensorFlow returns the initial state for zero steps)."""
    s_leaves, s_tree = nest.flatten(states)
    i_leaves, _ = nest.flatten(initial)
    steps = s_leaves[0].shape[0]
    if steps is not None:
        if steps == 0:
            return nest.unflatten(s_tree, [convert_to_tensor(x) for x in i_leaves])
        return nest.unflatten(s_tree, [_array.gather(x, steps - 1) for x in s_leaves])
    n = _array.shape(s_leaves[0])[0]
    last = cond(n > 0, lambda: [_array.gather(x, n - 1) for x in s_leaves],
                lambda: [_array.identity(x) for x in i_leaves])
    return nest.unflatten(s_tree, list(last))


@in_default_graph
def static_rnn(cell: Any, inputs: Sequence[Any], initial_state: Any = None, dtype: Any = None,
               sequence_length: Any = None, scope: Any = None) -> tuple[list[Any], Any]:
    """Run `cell` over a Python list of step inputs (each ``[batch, depth]``), unrolled
    in the graph: returns ``(outputs, final_state)``, outputs a list. `sequence_length`
    zeroes the outputs past each row's length and keeps its state, as in
    `dynamic_rnn`."""
    _check_cell(cell, "static_rnn")
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("static_rnn: inputs must be a sequence (a list of [batch, depth] "
                        "tensors)")
    if not inputs:
        raise ValueError("static_rnn: inputs must not be empty")
    with variable_scope(scope or "rnn"):
        first_flat = [convert_to_tensor(x) for x in nest.flatten(inputs[0])[0]]
        for x in first_flat:
            if len(x.shape) < 2 or x.shape[-1] is None:
                raise ValueError(f"static_rnn: each input must be [batch, depth] with a known "
                                 f"depth, got shape {list(x.shape)}")
        batch = first_flat[0].shape[0] if first_flat[0].shape[0] is not None else \
            _array.shape(first_flat[0])[0]
        state = _initial_state(cell, initial_state, dtype, batch, "static_rnn")
        lengths = None if sequence_length is None else \
            _lengths(sequence_length, batch, "static_rnn")
        outputs = []
        for t, x in enumerate(inputs):
            valid = None if lengths is None else _math.less(np.int32(t), lengths)
            output, state = _call_cell(cell, x, state, valid)
            outputs.append(output)
        return outputs, state


@in_default_graph
def reverse_sequence(input: TensorLike, seq_lengths: TensorLike,  # noqa: A002
                     seq_axis: int | None = None, batch_axis: int | None = None,
                     name: str | None = None, seq_dim: int | None = None,
                     batch_dim: int | None = None) -> Any:
    """``tf.reverse_sequence``: in each row b (along `batch_axis`) the first
    ``seq_lengths[b]`` entries along `seq_axis` reversed, the rest unchanged. A length
    past the sequence's is an InvalidArgumentError at run time."""
    seq_axis = seq_dim if seq_axis is None else seq_axis
    batch_axis = batch_dim if batch_axis is None else batch_axis
    if seq_axis is None:
        raise ValueError("reverse_sequence: seq_axis must be given")
    batch_axis = 0 if batch_axis is None else batch_axis
    x = convert_to_tensor(input)
    rank = len(x.shape)
    seq_axis, batch_axis = seq_axis % rank, batch_axis % rank
    if seq_axis == batch_axis:
        raise ValueError(f"reverse_sequence: seq_axis and batch_axis must differ, both are "
                         f"{seq_axis}")
    lengths = convert_to_tensor(seq_lengths)
    if len(lengths.shape) != 1:
        raise ValueError(f"reverse_sequence: seq_lengths must be a vector, got shape "
                         f"{list(lengths.shape)}")
    # batch first, sequence second: then a gather per row
    order = [batch_axis, seq_axis] + [d for d in range(rank) if d not in (batch_axis,
                                                                            seq_axis)]
    inverse = list(np.argsort(order))
    xt = _array.transpose(x, order) if order != list(range(rank)) else x
    steps = _array.zeros_like(xt, dtype=int32)
    if rank > 2:
        steps = _math.reduce_sum(steps, axis=list(range(2, rank)))   # [batch, time] zeros
    steps = _math.cumsum(steps + 1, axis=1) - 1                       # t in each row
    n_steps = _array.shape(xt)[1]
    checks = [assert_equal(_array.shape(lengths)[0], _array.shape(xt)[0],
                           message="reverse_sequence: seq_lengths must have one entry per "
                                   "row along batch_axis"),
              # in the lengths' own dtype: an int64 length cast to int32 first could wrap
              # into range (2**32 + 2 -> 2)
              assert_less(lengths, _math.cast(n_steps + 1, lengths.dtype),
                          message="reverse_sequence: a seq_lengths entry is past the length "
                                  "of seq_axis"),
              assert_non_negative(lengths,
                                  message="reverse_sequence: a seq_lengths entry is negative")]
    with control_dependencies([c for c in checks if c is not None] or None):
        row_len = _array.reshape(_array.identity(_math.cast(lengths, int32)), [-1, 1])
    index = _math.where(_math.less(steps, row_len), row_len - 1 - steps, steps)
    out = _array.gather(xt, index, axis=1, batch_dims=1)
    out = _array.transpose(out, inverse) if order != list(range(rank)) else out
    return _array.identity(out, name=name) if name else out


def _reverse_time(x: Any, lengths: Any, time_axis: int, batch_axis: int) -> Any:
    if lengths is None:
        return _indexing.reverse(x, [time_axis])
    return reverse_sequence(x, lengths, seq_axis=time_axis, batch_axis=batch_axis)


@in_default_graph
def bidirectional_dynamic_rnn(cell_fw: Any, cell_bw: Any, inputs: Any,
                              sequence_length: Any = None, initial_state_fw: Any = None,
                              initial_state_bw: Any = None, dtype: Any = None,
                              parallel_iterations: int | None = None, swap_memory: bool = False,
                              time_major: bool = False,
                              scope: Any = None) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """`cell_fw` over the inputs and `cell_bw` over each row reversed within its
    `sequence_length` (``tf.reverse_sequence``; the whole time axis without lengths), the
    backward outputs reversed back: returns ``((output_fw, output_bw), (state_fw,
    state_bw))``. Variables under ``bidirectional_rnn/fw/`` and ``.../bw/``."""
    _check_cell(cell_fw, "bidirectional_dynamic_rnn")
    _check_cell(cell_bw, "bidirectional_dynamic_rnn")
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length=sequence_length, initial_state=initial_state_fw,
                dtype=dtype, parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=fw_scope)
        lengths = None if sequence_length is None else \
            _math.cast(convert_to_tensor(sequence_length), int32)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = nest.map_structure(
                lambda x: _reverse_time(convert_to_tensor(x), lengths, time_axis, batch_axis),
                inputs)
            reversed_out, state_bw = dynamic_rnn(
                cell_bw, reversed_inputs, sequence_length=sequence_length,
                initial_state=initial_state_bw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=bw_scope)
    output_bw = nest.map_structure(
        lambda x: _reverse_time(x, lengths, time_axis, batch_axis), reversed_out)
    return (output_fw, output_bw), (state_fw, state_bw)


@in_default_graph
def static_bidirectional_rnn(cell_fw: Any, cell_bw: Any, inputs: Sequence[Any],
                             initial_state_fw: Any = None, initial_state_bw: Any = None,
                             dtype: Any = None, sequence_length: Any = None,
                             scope: Any = None) -> tuple[list[Any], Any, Any]:
    """`static_rnn` forward and over the inputs reversed within each row's length:
    returns ``(outputs, state_fw, state_bw)``, each output the forward and backward
    outputs concatenated along the last axis."""
    _check_cell(cell_fw, "static_bidirectional_rnn")
    _check_cell(cell_bw, "static_bidirectional_rnn")
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("static_bidirectional_rnn: inputs must be a non-empty list")
    lengths = None if sequence_length is None else \
        _math.cast(convert_to_tensor(sequence_length), int32)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                             sequence_length, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_list(inputs, lengths)
            tmp, state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype,
                                       sequence_length, scope=bw_scope)
    output_bw = _reverse_list(tmp, lengths)
    outputs = [_array.concat([fw, bw], 1) for fw, bw in zip(output_fw, output_bw)]
    return outputs, state_fw, state_bw


def _reverse_list(steps: Sequence[Any], lengths: Any) -> list[Any]:
    """A list of [batch, ...] steps reversed within each row's length."""
    if lengths is None:
        return list(reversed(steps))
    stacked = _array.stack([convert_to_tensor(s) for s in steps])    # [time, batch, ...]
    flipped = reverse_sequence(stacked, lengths, seq_axis=0, batch_axis=1)
    return list(_array.unstack(flipped, axis=0))


__all__ = ["bidirectional_dynamic_rnn", "dynamic_rnn", "reverse_sequence",
           "static_bidirectional_rnn", "static_rnn"]
