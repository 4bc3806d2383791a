"""`Model.summary()`: tf_keras' table of a model's layers, output shapes and parameter
counts (and, for a graph that is not a simple chain, what each layer is connected to)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .input_layer import InputLayer

__all__ = ["print_summary", "count_params", "readable_memory_size"]


def count_params(weights: Sequence[Any]) -> int:
    """The number of scalars in `weights`."""
    return int(sum(math.prod(int(d) for d in w.shape) for w in weights))


def _memory_size(weights: Sequence[Any]) -> int:
    return int(sum(math.prod(int(d) for d in w.shape) * w.dtype.np.itemsize for w in weights))


def readable_memory_size(size: float) -> str:
    """``140.00 Byte``, ``1.50 KB``, ... (units of 1024)."""
    units = ["Byte", "KB", "MB", "GB", "TB", "PB"]
    scale = 1024
    for unit in units:
        if size / scale < 1:
            return f"{size:.2f} {unit}"
        size /= scale
    return f"{size:.2f} {units[-1]}"


def _sequential_like(model: Any) -> bool:
    nodes_by_depth = getattr(model, "_nodes_by_depth", None)
    if type(model).__name__ == "Sequential" or not nodes_by_depth:
        return True
    nodes = []
    for group in nodes_by_depth.values():
        if len(group) > 1 or (len(group) == 1 and len(group[0].keras_inputs) > 1):
            return False
        nodes += group
    for layer in model.layers:
        if sum(1 for node in layer._inbound_nodes if any(node is n for n in nodes)) > 1:
            return False
    return True


def _output_shape(layer: Any) -> Any:
    if isinstance(layer, InputLayer):
        return [tuple(layer._batch_input_shape)]
    try:
        return layer.output_shape
    except AttributeError:
        return "multiple"


def print_summary(model: Any, line_length: int | None = None, positions: Any = None,
                  print_fn: Callable[[str], Any] | None = None, expand_nested: bool = False,
                  show_trainable: bool = False) -> None:
    """Print `model`'s summary with `print_fn` (default: `print`)."""
    print_fn = print_fn or print
    sequential_like = _sequential_like(model)
    if sequential_like:
        line_length = line_length or 65
        positions = positions or [0.45, 0.85, 1.0]
        to_display = ["Layer (type)", "Output Shape", "Param #"]
    else:
        line_length = line_length or 98
        positions = positions or [0.3, 0.6, 0.70, 1.0]
        to_display = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    positions = list(positions)
    if show_trainable:
        line_length += 11
        positions.append(line_length)
        to_display.append("Trainable")
    network = {id(n) for group in (getattr(model, "_nodes_by_depth", None) or {}).values()
               for n in group}

    def print_row(fields: list[Any], nested: int = 0) -> None:
        left = [str(x) for x in fields]
        while any(left):
            line = ""
            for col in range(len(left)):
                start = positions[col - 1] if col > 0 else 0
                end = positions[col]
                space = 2 if col != len(positions) - 1 else 0
                cutoff = end - start - space - (1 if col != len(positions) - 1 else 0)
                if col == 0:
                    cutoff -= nested
                fit = left[col][:cutoff]
                breaks = [fit.find(x) + len(x) for x in ("),", "},", "],", "',")
                          if fit.find(x) >= 0]
                if breaks:
                    cutoff = min(breaks)
                    fit = fit[:cutoff]
                if col == 0:
                    line += "|" * nested + " "
                line += fit + " " * space
                left[col] = left[col][cutoff:]
                line += " " * (positions[col] - len(line) - (nested if nested and col == len(
                    positions) - 1 else 0))
            print_fn(line + "|" * nested)

    def print_layer(layer: Any, nested: int = 0, last: bool = False) -> None:
        name = f"{layer.name} ({type(layer).__name__})"
        params = layer.count_params() if layer.built else "0 (unused)"
        fields: list[Any] = [name, _output_shape(layer), params]
        if not sequential_like:
            connections = []
            for node in layer._inbound_nodes:
                if network and id(node) not in network:
                    continue
                for x in node.keras_inputs:
                    src, node_index, tensor_index = x._keras_history
                    connections.append(f"{src.name}[{node_index}][{tensor_index}]")
            fields.append(connections if connections else "[]")
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        print_row(fields, nested)
        inner = getattr(layer, "layers", None)
        if expand_nested and inner:
            print_fn("|" * (nested + 1) + "¯" * (line_length - 2 * nested - 2) + "|" * (nested + 1))
            for i, sub in enumerate(inner):
                print_layer(sub, nested + 1, i == len(inner) - 1)
            print_fn("|" * nested + "¯" * (line_length - 2 * nested) + "|" * nested)
        if not last:
            print_fn("|" * nested + " " * (line_length - 2 * nested) + "|" * nested)

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_row(to_display)
    print_fn("=" * line_length)
    for layer in model.layers:
        print_layer(layer)
    print_fn("=" * line_length)
    trainable = model.trainable_weights
    non_trainable = model.non_trainable_weights
    t_count, n_count = count_params(trainable), count_params(non_trainable)
    t_size, n_size = _memory_size(trainable), _memory_size(non_trainable)
    print_fn(f"Total params: {t_count + n_count} ({readable_memory_size(t_size + n_size)})")
    print_fn(f"Trainable params: {t_count} ({readable_memory_size(t_size)})")
    print_fn(f"Non-trainable params: {n_count} ({readable_memory_size(n_size)})")
    print_fn("_" * line_length)
