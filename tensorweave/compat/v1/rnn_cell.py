"""TensorFlow 1's recurrent cells (``tf.nn.rnn_cell`` / ``tf.compat.v1.nn.rnn_cell``).

A cell maps ``(inputs, state)`` of one time step to ``(output, new_state)``. Its variables
are made with `get_variable` on the first call, in a variable scope named after the cell
(``basic_lstm_cell``, ``lstm_cell``, ``gru_cell``, ``multi_rnn_cell/cell_0/...``, made
unique in the enclosing scope, or `name`), so a cell run by ``tf.nn.dynamic_rnn`` has
TensorFlow's names (``rnn/basic_lstm_cell/kernel``); later calls reuse them. Kernels
are laid out as TensorFlow's: ``concat([inputs, h], 1) @ kernel``, the LSTM gates in the
order i, j, f, o with `forget_bias` added to f, the GRU's r and u gates then its
candidate. So weights saved by TensorFlow (or assigned from its arrays) give the same
numbers here.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...compiler.dtypes import as_dtype, int32
from ...errors import UnimplementedError
from ...frontend import nest
from ...frontend.building import convert_to_tensor, user_location
from ...frontend.context import device as _device
from ...frontend.ops import activations as _activations
from ...frontend.ops import array as _array
from ...frontend.ops import math as _math
from ...frontend.ops import nn as _nn
from ...frontend.ops.dropout import dropout as _dropout
from ...frontend.tensor import EagerTensor, Tensor
from .graph import GraphKeys, get_default_graph, in_default_graph
from .initializers import constant_initializer, zeros_initializer
from .layer_classes import FirstScope, refuse_unknown_kwargs, snake_case
from .var_scope import AUTO_REUSE, get_variable, variable_scope

TensorLike = Any


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """The state of an LSTM cell: the memory `c` and the output `h` (TensorFlow's
    order: c first)."""

    __slots__ = ()

    @property
    def dtype(self) -> Any:
        """The dtype of `c` and `h` (a TypeError if they differ)."""
        c, h = self
        if c.dtype is not h.dtype:
            raise TypeError(f"LSTMStateTuple: c and h have different dtypes {c.dtype.name} "
                            f"and {h.dtype.name}")
        return c.dtype


def _where() -> str | None:
    loc = user_location()
    return str(loc) if loc else None


def _activation(activation: Any) -> Callable:
    """`activation` as a function: tanh by default, a callable, or a Keras name."""
    if activation is None:
        return _math.tanh
    if callable(activation):
        return activation
    if isinstance(activation, str):
        for module in (_activations, _math, _nn):
            fn = getattr(module, activation, None)
            if callable(fn):
                return fn
    raise ValueError(f"rnn_cell: unknown activation {activation!r}")


# -- zero states with a batch size known only at run time ------------------------------

def _static_batch(batch_size: Any) -> int | None:
    if isinstance(batch_size, (int, np.integer)) and not isinstance(batch_size, bool):
        return int(batch_size)
    if isinstance(batch_size, (np.ndarray, EagerTensor)) and np.ndim(batch_size) == 0:
        return int(batch_size)
    if isinstance(batch_size, Tensor) and batch_size.op is not None and \
            batch_size.op.op == "Const":
        return int(np.asarray(batch_size.op.attrs["value"]))
    return None


def _dim_source(batch_size: Tensor) -> tuple[Tensor, int] | None:
    """``(t, k)`` when `batch_size` is ``tf.shape(t)[k]``: how a TensorFlow 1 program
    names a batch size known only at run time."""
    node = batch_size.op
    if node is None or node.op != "StridedSlice" or not node.inputs:
        return None
    a = node.attrs
    if a.get("shrink_axis_mask") != 1 or len(a.get("begin", ())) != 1 or \
            a.get("strides") != (1,) or a.get("begin_mask") or a.get("ellipsis_mask") or \
            a.get("new_axis_mask"):
        return None
    shape_node = node.inputs[0].producer
    if shape_node is None or shape_node.op != "Shape":
        return None
    source = Tensor(shape_node.inputs[0], batch_size.builder)
    k = int(a["begin"][0])
    rank = len(source.shape)
    return (source, k + rank if k < 0 else k) if -rank <= k < rank else None


def batch_zeros(batch_size: Any, tail: Sequence[int], dtype: Any) -> Any:
    """Zeros of shape ``[batch_size, *tail]``. `batch_size` is an int or, when it is known
    only at run time, ``tf.shape(t)[k]`` of some tensor `t`: tensorweave builds a tensor of
    run-time size only from a tensor of that size, so the zeros follow dim k of `t`."""
    tail = [int(d) for d in tail]
    static = _static_batch(batch_size)
    if static is not None:
        return _array.zeros([static, *tail], dtype=dtype)
    source = _dim_source(batch_size) if isinstance(batch_size, Tensor) else None
    if source is None:
        raise UnimplementedError(
            f"zero_state: batch_size must be a Python int or tf.shape(t)[k] of a tensor t, "
            f"got {batch_size!r} (tensorweave sizes a tensor at run time only from another "
            f"tensor's dim)", location=_where())
    t, k = source
    others = [d for d in range(len(t.shape)) if d != k]
    index = _array.zeros_like(t, dtype=int32)
    if others:
        index = _math.reduce_sum(index, axis=others)       # [batch] zeros
    row = _array.zeros([1, *tail], dtype=dtype)
    return _array.gather(row, index)


def _zeros_of(state_size: Any, batch_size: Any, dtype: Any) -> Any:
    """A zero state of structure `state_size` (ints or shapes as leaves)."""
    if isinstance(state_size, (int, np.integer)):
        return batch_zeros(batch_size, [state_size], dtype)
    if _is_shape(state_size):
        return batch_zeros(batch_size, list(state_size), dtype)
    if isinstance(state_size, tuple) and hasattr(type(state_size), "_fields"):
        return type(state_size)(*[_zeros_of(s, batch_size, dtype) for s in state_size])
    if isinstance(state_size, (tuple, list)):
        return type(state_size)(_zeros_of(s, batch_size, dtype) for s in state_size)
    raise TypeError(f"zero_state: a state size must be an int or a nest of ints, got "
                    f"{state_size!r}")


def _is_shape(size: Any) -> bool:
    """A shape like ``[3, 4]`` (a list, or a tuple subclass such as a TensorShape), as
    opposed to a tuple of sizes."""
    return (isinstance(size, list) or (isinstance(size, tuple) and type(size) is not tuple
                                       and not hasattr(type(size), "_fields"))) and \
        all(isinstance(d, (int, np.integer)) for d in size)


# -- the base classes -------------------------------------------------------------------

class RNNCell:
    """A recurrent cell (TensorFlow 1's ``tf.nn.rnn_cell.RNNCell``). Subclasses give
    `state_size`, `output_size` and ``call(inputs, state) -> (output, new_state)``, and
    may make their variables in ``build(inputs_shape)``; ``__call__`` runs both inside
    the cell's variable scope (made on the first call and entered again by the later
    ones, which reuse the variables)."""

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 reuse: Any = None, **kwargs: Any) -> None:
        refuse_unknown_kwargs(type(self).__name__, kwargs)
        self.trainable = trainable
        self._reuse = reuse
        self._given_name = name
        self._base_name = name or snake_case(type(self).__name__)
        self._dtype = None if dtype is None else as_dtype(dtype)
        self._scope: Any = None
        self.built = False
        self._weights: list[Any] = []

    # -- what a subclass defines --------------------------------------------------------
    @property
    def state_size(self) -> Any:
        """The size of the state: an int, or a nest of ints (LSTMStateTuple(c, h))."""
        raise NotImplementedError(f"{type(self).__name__}.state_size")

    @property
    def output_size(self) -> Any:
        """The size of each step's output."""
        raise NotImplementedError(f"{type(self).__name__}.output_size")

    def build(self, inputs_shape: tuple) -> None:
        """Make the variables for inputs of `inputs_shape` (called once)."""
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        """One step: ``(output, new_state)``."""
        raise NotImplementedError(f"{type(self).__name__}.call")

    # -- TensorFlow 1's API -------------------------------------------------------------
    @property
    def name(self) -> str:
        """The cell's variable scope name once called (else the name it will be based on)."""
        return self._scope.name if self._scope is not None else self._base_name

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def variables(self) -> list[Any]:
        """The cell's variables, in the order they were made."""
        return list(self._weights)

    weights = variables

    @property
    def trainable_variables(self) -> list[Any]:
        trainable = {id(v) for v in get_default_graph().get_collection(
            GraphKeys.TRAINABLE_VARIABLES)}
        return [v for v in self._weights if id(v) in trainable]

    trainable_weights = trainable_variables

    @in_default_graph
    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """The all-zeros state for `batch_size` rows (an int, or ``tf.shape(x)[0]``), with
        the structure of `state_size`."""
        return _zeros_of(self.state_size, batch_size, as_dtype(dtype))

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None,
                          dtype: Any = None) -> Any:
        """`zero_state` for the batch and dtype of `inputs` (or those given)."""
        if inputs is not None:
            inputs = convert_to_tensor(inputs)
            batch_size = inputs.shape[0] if inputs.shape[0] is not None else \
                _array.shape(inputs)[0]
            dtype = dtype or inputs.dtype
        return self.zero_state(batch_size, dtype)

    def add_variable(self, name: str, shape: Any, dtype: Any = None, initializer: Any = None,
                     **kwargs: Any) -> Any:
        """`get_variable` in the cell's scope, remembered in `variables`."""
        var = get_variable(name, shape, dtype=dtype or self._dtype, initializer=initializer,
                           trainable=self.trainable, **kwargs)
        self._weights.append(var)
        return var

    add_weight = add_variable

    @in_default_graph
    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        """``(output, new_state)`` of one step, the variables made on the first call."""
        first_call = self._scope is None
        graph = get_default_graph()
        known = len(graph.get_collection(GraphKeys.GLOBAL_VARIABLES))
        with self._entered_scope(scope):
            if not self.built:
                flat, _ = nest.flatten(inputs)
                first = convert_to_tensor(flat[0])
                if self._dtype is None:
                    self._dtype = first.dtype
                self.build(tuple(first.shape))
                self.built = True
            result = self.call(inputs, state)
        if first_call:
            # variables a user cell made with get_variable in `call` are the cell's too
            # (TensorFlow tracks them with a custom getter)
            mine = {id(v) for v in self._weights}
            self._weights += [v for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)[known:]
                              if id(v) not in mine]
        return result

    def _entered_scope(self, scope: Any) -> Any:
        if self._scope is not None:
            return variable_scope(self._scope, reuse=AUTO_REUSE)
        return FirstScope(self, scope)


LayerRNNCell = RNNCell


def _split_state(state: Any, sizes: Sequence[int], cell: str) -> list[Any]:
    """A concatenated (``state_is_tuple=False``) state split into its parts."""
    state = convert_to_tensor(state)
    total = tuple(state.shape)[-1]
    if total is not None and total != sum(sizes):
        raise ValueError(f"{cell}: a concatenated state must have {sum(sizes)} columns, "
                         f"got shape {list(state.shape)}")
    return list(_array.split(state, list(sizes), axis=1))


# -- the cells ----------------------------------------------------------------------------

class BasicRNNCell(RNNCell):
    """``output = new_state = activation(concat([inputs, state]) @ kernel + bias)``;
    variables ``basic_rnn_cell/kernel`` ``[in + units, units]`` and ``bias``."""

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None,
                 name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = int(num_units)
        self._activation = _activation(activation)

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: tuple) -> None:
        depth = _depth(inputs_shape, type(self).__name__)
        self._kernel = self.add_variable("kernel", [depth + self._num_units, self._num_units])
        self._bias = self.add_variable("bias", [self._num_units],
                                       initializer=zeros_initializer(dtype=self._dtype))
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        gates = _math.matmul(_array.concat([inputs, state], 1), self._kernel)
        output = self._activation(_nn.bias_add(gates, self._bias))
        return output, output


def _depth(inputs_shape: tuple, cell: str) -> int:
    if not inputs_shape or inputs_shape[-1] is None:
        raise ValueError(f"{cell}: expected inputs with a known last dim, got shape "
                         f"{list(inputs_shape)}")
    return int(inputs_shape[-1])


class BasicLSTMCell(RNNCell):
    """The LSTM of Zaremba et al. without peepholes or projection: with
    ``[i, j, f, o] = concat([inputs, h]) @ kernel + bias`` (variables
    ``basic_lstm_cell/kernel`` ``[in + units, 4 units]`` and ``bias``),
    ``c' = c * sigmoid(f + forget_bias) + sigmoid(i) * activation(j)`` and
    ``h' = activation(c') * sigmoid(o)``. The state is ``LSTMStateTuple(c, h)`` (or
    ``concat([c, h], 1)`` with ``state_is_tuple=False``)."""

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Any = None, reuse: Any = None, name: str | None = None,
                 dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = int(num_units)
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self) -> Any:
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: tuple) -> None:
        depth = _depth(inputs_shape, type(self).__name__)
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth + n, 4 * n])
        self._bias = self.add_variable("bias", [4 * n],
                                       initializer=zeros_initializer(dtype=self._dtype))
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = _split_state(state, [self._num_units] * 2, type(self).__name__)
        gates = _nn.bias_add(_math.matmul(_array.concat([inputs, h], 1), self._kernel),
                             self._bias)
        i, j, f, o = _array.split(gates, 4, axis=1)
        forget = _math.sigmoid(f + _forget_bias(self._forget_bias, f.dtype))
        new_c = c * forget + _math.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * _math.sigmoid(o)
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple else \
            _array.concat([new_c, new_h], 1)
        return new_h, new_state


def _forget_bias(value: Any, dtype: Any) -> Any:
    """`forget_bias` as a tensor of the gates' dtype (TensorFlow adds a constant)."""
    return convert_to_tensor(value, dtype=dtype)


class LSTMCell(RNNCell):
    """The LSTM with optional peepholes (``use_peepholes``: variables ``w_f_diag``,
    ``w_i_diag``, ``w_o_diag``), memory clipping (``cell_clip``) and an output projection
    (``num_proj``: ``projection/kernel`` ``[units, num_proj]``, clipped to ``proj_clip``).
    Kernel ``lstm_cell/kernel`` ``[in + (num_proj or units), 4 units]`` with gates i, j,
    f, o; the state is ``LSTMStateTuple(c, h)`` with h of size num_proj (or units)."""

    def __init__(self, num_units: int, use_peepholes: bool = False, cell_clip: Any = None,
                 initializer: Any = None, num_proj: int | None = None, proj_clip: Any = None,
                 num_unit_shards: Any = None, num_proj_shards: Any = None,
                 forget_bias: float = 1.0, state_is_tuple: bool = True, activation: Any = None,
                 reuse: Any = None, name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        for arg, value in (("num_unit_shards", num_unit_shards),
                           ("num_proj_shards", num_proj_shards)):
            if value is not None:  # (deprecated in TensorFlow 1 for partitioners)
                raise NotImplementedError(f"LSTMCell({arg}=...) is not supported: use a "
                                          f"variable_scope partitioner")
        self._num_units = int(num_units)
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = None if num_proj is None else int(num_proj)
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self) -> Any:
        h = self._num_proj or self._num_units
        return LSTMStateTuple(self._num_units, h) if self._state_is_tuple else \
            self._num_units + h

    @property
    def output_size(self) -> int:
        return self._num_proj or self._num_units

    def build(self, inputs_shape: tuple) -> None:
        depth = _depth(inputs_shape, type(self).__name__)
        n, h = self._num_units, self._num_proj or self._num_units
        self._kernel = self.add_variable("kernel", [depth + h, 4 * n],
                                         initializer=self._initializer)
        self._bias = self.add_variable("bias", [4 * n],
                                       initializer=zeros_initializer(dtype=self._dtype))
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", [n], initializer=self._initializer)
            self._w_i_diag = self.add_variable("w_i_diag", [n], initializer=self._initializer)
            self._w_o_diag = self.add_variable("w_o_diag", [n], initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable("projection/kernel", [n, self._num_proj],
                                                  initializer=self._initializer)
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        n = self._num_units
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev, m_prev = _split_state(state, [n, self._num_proj or n], type(self).__name__)
        gates = _nn.bias_add(_math.matmul(_array.concat([inputs, m_prev], 1), self._kernel),
                             self._bias)
        i, j, f, o = _array.split(gates, 4, axis=1)
        forget_bias = _forget_bias(self._forget_bias, f.dtype)
        if self._use_peepholes:
            c = (_math.sigmoid(f + forget_bias + self._w_f_diag * c_prev) * c_prev +
                 _math.sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = _math.sigmoid(f + forget_bias) * c_prev + _math.sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = _math.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = _math.sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = _math.sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = _math.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = _math.clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else _array.concat([c, m], 1)
        return m, new_state


class GRUCell(RNNCell):
    """The gated recurrent unit (Cho et al.): ``[r, u] = sigmoid(concat([inputs, h]) @
    gates/kernel + gates/bias)`` (the gate bias starts at 1), ``c = activation(concat(
    [inputs, r * h]) @ candidate/kernel + candidate/bias)``, ``h' = u * h + (1 - u) * c``."""

    def __init__(self, num_units: int, activation: Any = None, reuse: Any = None,
                 kernel_initializer: Any = None, bias_initializer: Any = None,
                 name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = int(num_units)
        self._activation = _activation(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: tuple) -> None:
        depth = _depth(inputs_shape, type(self).__name__)
        n = self._num_units
        self._gate_kernel = self.add_variable("gates/kernel", [depth + n, 2 * n],
                                              initializer=self._kernel_initializer)
        self._gate_bias = self.add_variable(
            "gates/bias", [2 * n], initializer=self._bias_initializer or
            constant_initializer(1.0, dtype=self._dtype))
        self._candidate_kernel = self.add_variable("candidate/kernel", [depth + n, n],
                                                   initializer=self._kernel_initializer)
        self._candidate_bias = self.add_variable(
            "candidate/bias", [n], initializer=self._bias_initializer or
            zeros_initializer(dtype=self._dtype))
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        gates = _nn.bias_add(_math.matmul(_array.concat([inputs, state], 1), self._gate_kernel),
                             self._gate_bias)
        r, u = _array.split(_math.sigmoid(gates), 2, axis=1)
        candidate = _nn.bias_add(
            _math.matmul(_array.concat([inputs, r * state], 1), self._candidate_kernel),
            self._candidate_bias)
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class MultiRNNCell(RNNCell):
    """Cells stacked: each one's output is the next one's input; cell k's variables are
    under ``multi_rnn_cell/cell_k/``. The state is the tuple of the cells' states (or
    their concatenation with ``state_is_tuple=False``)."""

    def __init__(self, cells: Sequence[RNNCell], state_is_tuple: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not cells:
            raise ValueError("MultiRNNCell: must specify at least one cell")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(not isinstance(c.state_size, (int, np.integer))
                                      for c in self._cells):
            raise ValueError(f"MultiRNNCell(state_is_tuple=False): every cell's state must be "
                             f"one tensor, got state sizes "
                             f"{[c.state_size for c in self._cells]}")

    @property
    def state_size(self) -> Any:
        sizes = tuple(c.state_size for c in self._cells)
        return sizes if self._state_is_tuple else sum(sizes)

    @property
    def output_size(self) -> Any:
        return self._cells[-1].output_size

    @property
    def variables(self) -> list[Any]:
        return [v for c in self._cells for v in c.variables]

    weights = variables

    @property
    def trainable_variables(self) -> list[Any]:
        return [v for c in self._cells for v in c.trainable_variables]

    trainable_weights = trainable_variables

    @in_default_graph
    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        if self._state_is_tuple:
            return tuple(c.zero_state(batch_size, dtype) for c in self._cells)
        return super().zero_state(batch_size, dtype)

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        if self._state_is_tuple:
            if not isinstance(state, (tuple, list)) or len(state) != len(self._cells):
                raise ValueError(f"MultiRNNCell: expected a state of {len(self._cells)} "
                                 f"parts (one per cell), got {state!r}")
            states = list(state)
        else:
            states = _split_state(state, [c.state_size for c in self._cells], "MultiRNNCell")
        x, new_states = inputs, []
        for k, (cell, s) in enumerate(zip(self._cells, states)):
            with variable_scope(f"cell_{k}"):
                x, s = cell(x, s)
            new_states.append(s)
        new_state = tuple(new_states) if self._state_is_tuple else \
            _array.concat(new_states, 1)
        return x, new_state


# -- wrappers: no scope of their own (the wrapped cell's variables keep their names) ------

class RNNCellWrapper(RNNCell):
    """A cell around another cell (its state and variables)."""

    def __init__(self, cell: RNNCell, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cell = cell

    @property
    def state_size(self) -> Any:
        return self.cell.state_size

    @property
    def output_size(self) -> Any:
        return self.cell.output_size

    @property
    def variables(self) -> list[Any]:
        return self.cell.variables

    weights = variables

    @property
    def trainable_variables(self) -> list[Any]:
        return self.cell.trainable_variables

    trainable_weights = trainable_variables

    @in_default_graph
    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        return self.cell.zero_state(batch_size, dtype)

    @in_default_graph
    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        return self._wrapped_call(inputs, state, scope)

    def _wrapped_call(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        raise NotImplementedError


def _keep(value: Any) -> Any:
    """A keep probability as a float or a scalar tensor (a placeholder fed at run time)."""
    if isinstance(value, (int, float, np.floating, np.integer)):
        value = float(value)
        if not 0.0 < value <= 1.0:
            raise ValueError(f"DropoutWrapper: a keep probability must be in (0, 1], got "
                             f"{value}")
    return value


class DropoutWrapper(RNNCellWrapper):
    """Dropout on the cell's inputs, outputs and state with keep probabilities
    `input_keep_prob`, `output_keep_prob`, `state_keep_prob` (floats or scalar tensors):
    a new mask each step, or with ``variational_recurrent=True`` one mask per run of the
    graph, shared by every step and every row (TensorFlow's ``[1, size]`` noise; then
    `dtype`, and `input_size` when inputs are dropped, must be given). Which state
    tensors are dropped is `dropout_state_filter_visitor`'s choice, TensorFlow's
    traversal: by default every one but an ``LSTMStateTuple``'s ``c``."""

    def __init__(self, cell: RNNCell, input_keep_prob: Any = 1.0, output_keep_prob: Any = 1.0,
                 state_keep_prob: Any = 1.0, variational_recurrent: bool = False,
                 input_size: Any = None, dtype: Any = None, seed: int | None = None,
                 dropout_state_filter_visitor: Any = None, **kwargs: Any) -> None:
        super().__init__(cell, **kwargs)
        self._input_keep = _keep(input_keep_prob)
        self._output_keep = _keep(output_keep_prob)
        self._state_keep = _keep(state_keep_prob)
        self._seed = seed
        self._state_filter = dropout_state_filter_visitor or _default_state_filter
        self._noise: dict[str, list[Any]] | None = None
        if variational_recurrent:
            if dtype is None:
                raise ValueError("DropoutWrapper(variational_recurrent=True) needs dtype")
            if not _keeps_all(self._input_keep) and input_size is None:
                raise ValueError("DropoutWrapper(variational_recurrent=True) with "
                                 "input_keep_prob < 1 needs input_size")
            # drawn once here, outside any loop, so every step reads the same masks
            sizes = {"input": input_size, "state": cell.state_size,
                     "output": cell.output_size}
            self._noise = {what: _variational_noise(size, as_dtype(dtype), seed, k)
                           for k, (what, size) in enumerate(sizes.items())
                           if size is not None}

    def _drop(self, x: Any, keep: Any, what: str, index: int) -> Any:
        if _keeps_all(keep):
            return x
        x = convert_to_tensor(x)
        if not isinstance(keep, float):
            keep = _math.cast(convert_to_tensor(keep), x.dtype)
        if self._noise is not None:
            # TensorFlow's variational dropout: x / keep * floor(keep + noise)
            return x / keep * _math.floor(keep + self._noise[what][index])
        seed = None if self._seed is None else self._seed + ("input", "state",
                                                             "output").index(what)
        return _dropout(x, rate=1 - keep, seed=seed)

    def _drop_all(self, structure: Any, keep: Any, what: str,
                  flags: list[bool] | None = None) -> Any:
        leaves, tree = nest.flatten(structure)
        flags = flags or [True] * len(leaves)
        return nest.unflatten(tree, [self._drop(x, keep, what, i) if f else x
                                     for i, (x, f) in enumerate(zip(leaves, flags))])

    def _wrapped_call(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        inputs = self._drop_all(inputs, self._input_keep, "input")
        output, new_state = self.cell(inputs, state, scope=scope)
        if not _keeps_all(self._state_keep):
            new_state = self._drop_all(new_state, self._state_keep, "state",
                                       _drop_flags(new_state, self._state_filter))
        output = self._drop_all(output, self._output_keep, "output")
        return output, new_state


def _keeps_all(keep: Any) -> bool:
    return isinstance(keep, float) and keep == 1.0


def _variational_noise(size: Any, dtype: Any, seed: int | None, salt: int) -> list[Any]:
    """Uniform noise of shape ``[1, s]`` for each size `s` of the nest `size`, in
    `nest.flatten` order, made in the default graph."""
    from ...frontend.ops import random as _random
    sizes = [size] if isinstance(size, (int, np.integer)) else nest.flatten(size)[0]
    with get_default_graph().as_default():
        return [_random.uniform([1, int(s)], dtype=dtype,
                                seed=None if seed is None else seed + 7 * salt + k)
                for k, s in enumerate(sizes)]


def _default_state_filter(substate: Any) -> Any:
    """TensorFlow's default: drop every state tensor but an LSTMStateTuple's c."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _drop_flags(structure: Any, visitor: Callable) -> list[bool]:
    """Which leaves of `structure` (in `nest.flatten` order) to drop, as TensorFlow's
    ``get_traverse_shallow_structure`` decides: `visitor` answers True (go into this
    part: for a tensor, drop it), False (leave it), or a one-level structure of such
    answers for the part's children (each child answered True is visited in turn)."""
    leaves, _ = nest.flatten(structure)
    decision = visitor(structure)
    if decision is False:
        return [False] * len(leaves)
    children = list(structure.values()) if isinstance(structure, dict) else \
        list(structure) if isinstance(structure, (tuple, list)) else None
    if children is None:  # a tensor
        return [bool(decision)]
    if decision is True:
        return [f for c in children for f in _drop_flags(c, visitor)]
    answers = list(decision.values()) if isinstance(decision, dict) else list(decision)
    if len(answers) != len(children):
        raise ValueError(f"DropoutWrapper: dropout_state_filter_visitor returned {decision!r} "
                         f"for a state part of {len(children)} entries")
    return [f for c, a in zip(children, answers)
            for f in (_drop_flags(c, visitor) if a else [False] * len(nest.flatten(c)[0]))]


class ResidualWrapper(RNNCellWrapper):
    """The cell's output plus its input (``residual_fn(inputs, output)``)."""

    def __init__(self, cell: RNNCell, residual_fn: Callable | None = None,
                 **kwargs: Any) -> None:
        super().__init__(cell, **kwargs)
        self._residual_fn = residual_fn

    def _wrapped_call(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        output, new_state = self.cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        return _add_nests(inputs, output), new_state


def _add_nests(a: Any, b: Any) -> Any:
    la, ta = nest.flatten(a)
    lb, _ = nest.flatten(b)
    if len(la) != len(lb):
        raise ValueError("ResidualWrapper: the inputs and outputs must have the same structure")
    return nest.unflatten(ta, [x + y for x, y in zip(la, lb)])


class DeviceWrapper(RNNCellWrapper):
    """The cell run on `device`."""

    def __init__(self, cell: RNNCell, device: str, **kwargs: Any) -> None:
        super().__init__(cell, **kwargs)
        self._device = device

    def _wrapped_call(self, inputs: Any, state: Any, scope: Any) -> tuple[Any, Any]:
        with _device(self._device):
            return self.cell(inputs, state, scope=scope)


__all__ = ["BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
           "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper"]
