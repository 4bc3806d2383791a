"""``tw.io.parse_example`` / ``parse_single_example``: serialized ``tf.train.Example``
protos to tensors, by a feature spec of `FixedLenFeature` and `VarLenFeature`.

One host op, ``ParseExample``: its input is a string tensor (one serialized Example, or
a vector of them) and its outputs are numeric or string tensors, so the graph goes on
in compiled code after it. It has a reference kernel only (it reads bytes on the host;
the cpu step planner and the gpu target refuse string values), as TensorFlow's
``ParseExampleV2`` runs on the CPU. The wire format is read by `example_wire`.

Outputs, in order: one tensor per dense (FixedLen) key, ``[batch] + shape`` when
batched; then for each VarLen key its SparseTensor's indices (int64 ``[n, rank]``),
values and dense shape (int64 ``[rank]``), rank 1 for one Example, 2 for a batch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ..compiler.dtypes import DType, as_dtype, float32, int64, string
from ..compiler.registry import attr, def_op, not_differentiable
from ..compiler.types import TensorType, format_shape
from ..errors import DTypeError, InvalidArgumentError, ShapeError, UnimplementedError
from ..frontend.building import apply_op, constant, convert_to_tensor, python_array
from ..frontend.call_site import user_location
from ..frontend.tensor import EagerTensor
from . import example_wire as wire

_KINDS = {string: wire._BYTES, float32: wire._FLOAT, int64: wire._INT64}
_TYPE_NAME = {wire._BYTES: "string", wire._FLOAT: "float", wire._INT64: "int64"}
_ALLOWED = "float32, int64 or string (the three kinds of lists an Example holds)"


class FixedLenFeature(NamedTuple):
    """A feature of `shape` (fully known) and `dtype` (float32, int64 or string) in
    every Example; `default_value` (any value with as many elements as `shape`)
    stands in where an Example lacks it, else a missing feature is an error."""

    shape: Any
    dtype: Any
    default_value: Any = None


class VarLenFeature(NamedTuple):
    """A feature with any number of values per Example: parsed as a `tw.SparseTensor`."""

    dtype: Any


# -------------------------------------------------------------------------- the op

ParseExample = def_op(
    "ParseExample", ["serialized", "*dense_defaults"],
    {"dense_keys": attr("strs", ()), "dense_types": attr("strs", ()),
     "dense_ranks": attr("ints", ()), "dense_dims": attr("ints", ()),
     "has_default": attr("ints", ()), "sparse_keys": attr("strs", ()),
     "sparse_types": attr("strs", ())},
    doc="Parse serialized tf.train.Example protos (a string scalar, or a vector: a batch). "
        "Dense key i has dtype dense_types[i] and the shape given by the next "
        "dense_ranks[i] entries of dense_dims; its default is dense_defaults[i] when "
        "has_default[i]. Outputs: the dense tensors, then indices, values and dense shape "
        "of each sparse key.")
not_differentiable("ParseExample")


def _dense_shapes(dense_ranks: tuple, dense_dims: tuple) -> list[tuple[int, ...]]:
    shapes, pos = [], 0
    for r in dense_ranks:
        shapes.append(tuple(dense_dims[pos:pos + r]))
        pos += r
    return shapes


@ParseExample.infer
def _parse_infer(serialized: TensorType, *defaults: TensorType, dense_keys: tuple,
                 dense_types: tuple, dense_ranks: tuple, dense_dims: tuple,
                 has_default: tuple, sparse_keys: tuple, sparse_types: tuple) -> list:
    if not isinstance(serialized, TensorType) or not serialized.dtype.is_string \
            or serialized.rank > 1:
        raise DTypeError(f"serialized must be a string scalar or vector, got {serialized}")
    shapes = _dense_shapes(dense_ranks, dense_dims)
    if not (len(dense_keys) == len(dense_types) == len(shapes) == len(has_default)
            == len(defaults)) or len(sparse_keys) != len(sparse_types):
        raise ShapeError("the dense and sparse attributes disagree in length")
    batch = serialized.shape[:1]
    out: list = []
    for key, name, shape, d in zip(dense_keys, dense_types, shapes, defaults):
        dtype = as_dtype(name)
        if d.dtype is not dtype:
            raise DTypeError(f"the default of feature '{key}' is {d}, expected {dtype.name}")
        out.append(TensorType(dtype, batch + shape))
    rank = 1 + len(batch)
    for name in sparse_types:
        out += [TensorType(int64, (None, rank)), TensorType(as_dtype(name), (None,)),
                TensorType(int64, (rank,))]
    return out


def _values(buf: bytes, kind: int, parts: list) -> Any:
    if kind == wire._FLOAT:
        return wire.float_values(buf, parts)
    if kind == wire._INT64:
        return wire.int64_values(buf, parts)
    out = np.empty(len(parts), object)
    out[:] = parts
    return out


def _where(key: str, index: int | None) -> str:
    return f"Key: {key}" if index is None else f"Name: <unknown>, Key: {key}, Index: {index}"


@ParseExample.kernel("reference")
def _parse_kernel(serialized: np.ndarray, *defaults: np.ndarray, dense_keys: tuple,
                  dense_types: tuple, dense_ranks: tuple, dense_dims: tuple,
                  has_default: tuple, sparse_keys: tuple, sparse_types: tuple) -> list:
    batched = serialized.ndim == 1
    records = list(serialized.reshape(-1))
    shapes = _dense_shapes(dense_ranks, dense_dims)
    dense_dtypes = [as_dtype(t) for t in dense_types]
    sparse_dtypes = [as_dtype(t) for t in sparse_types]
    dense_out = [np.empty((len(records),) + s, d.np) for s, d in zip(shapes, dense_dtypes)]
    sparse_rows: list[list[Any]] = [[] for _ in sparse_keys]
    for i, buf in enumerate(records):
        index = i if batched else None
        try:
            features = wire.feature_map(buf)
            decoded = {}
            for key in (*dense_keys, *sparse_keys):
                span = features.get(key.encode("utf-8"))
                decoded[key] = None if span is None else wire.decode_feature(buf, span)
        except wire.WireError as e:
            shown = buf[:64] + (b"..." if len(buf) > 64 else b"")
            raise InvalidArgumentError(f"Could not parse example input, value: {shown!r} "
                                       f"({e})") from None
        for j, (key, dtype, shape) in enumerate(zip(dense_keys, dense_dtypes, shapes)):
            found = decoded[key]
            if found is None or found[0] is None:  # (a Feature with no list: missing)
                if not has_default[j]:
                    prefix = "" if index is None else "Name: <unknown>, "
                    raise InvalidArgumentError(
                        f"{prefix}Feature: {key} (data type: {_TYPE_NAME[_KINDS[dtype]]}) is "
                        f"required but could not be found.")
                dense_out[j][i, ...] = defaults[j].reshape(shape)
                continue
            kind, parts = found
            if kind != _KINDS[dtype]:
                raise InvalidArgumentError(f"{_where(key, index)}.  Data types don't match. "
                                           f"Data type: {_TYPE_NAME[kind]} but expected type: "
                                           f"{_TYPE_NAME[_KINDS[dtype]]}")
            values = _values(buf, kind, parts)
            if values.size != math.prod(shape):
                raise InvalidArgumentError(
                    f"{_where(key, index)}.  Number of {_TYPE_NAME[kind]} values != expected. "
                    f"Values size: {values.size} but output shape: {list(shape)}")
            # ([i, ...]: out[i] = a 0-d object array would store the array, not its bytes)
            dense_out[j][i, ...] = values.reshape(shape)
        for j, (key, dtype) in enumerate(zip(sparse_keys, sparse_dtypes)):
            found = decoded[key]
            if found is None or found[0] is None:
                sparse_rows[j].append(np.zeros(0, dtype.np))
                continue
            kind, parts = found
            if kind != _KINDS[dtype]:
                raise InvalidArgumentError(f"{_where(key, index)}.  Data types don't match. "
                                           f"Expected type: {_TYPE_NAME[_KINDS[dtype]]}, "
                                           f"Actual type: {_TYPE_NAME[kind]}")
            sparse_rows[j].append(_values(buf, kind, parts))
    out: list[Any] = []
    for arr in dense_out:
        out.append(arr if batched else arr[0, ...])  # (a 0-d array, never a bare bytes)
    for rows, dtype in zip(sparse_rows, sparse_dtypes):
        out += _sparse_components(rows, dtype, batched)
    return out


def _sparse_components(rows: list[np.ndarray], dtype: DType, batched: bool) -> list:
    counts = np.array([r.size for r in rows], np.int64)
    width = int(counts.max()) if counts.size else 0
    total = int(counts.sum())
    values = np.empty(total, dtype.np)
    if total:
        values[:] = np.concatenate(rows) if dtype is not string else \
            [v for r in rows for v in r]
    within = np.concatenate([np.arange(c, dtype=np.int64) for c in counts]) if total else \
        np.zeros(0, np.int64)
    if batched:
        example = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
        indices = np.stack([example, within], axis=1)
        shape = np.array([len(rows), width], np.int64)
    else:
        indices = within.reshape(-1, 1)
        shape = np.array([width], np.int64)
    return [indices.reshape(-1, 2 if batched else 1), values, shape]


# --------------------------------------------------------------------- the API

def _spec_error(api: str, message: str, cls: type = InvalidArgumentError) -> Exception:
    loc = user_location()
    return cls(message, op=api, location=None if loc is None else str(loc))


def _feature_dtype(api: str, key: str, dtype: Any) -> DType:
    try:
        d = as_dtype(dtype)
    except DTypeError:
        d = None
    if d not in _KINDS:
        raise _spec_error(api, f"feature '{key}' has dtype {dtype!r}; an Example feature is "
                               f"{_ALLOWED}", DTypeError)
    return d


def _dense_default(api: str, key: str, spec: FixedLenFeature, dtype: DType,
                   shape: tuple[int, ...]) -> np.ndarray | None:
    if spec.default_value is None:
        return None
    value = spec.default_value
    if isinstance(value, (EagerTensor, np.ndarray, np.generic)):
        value = np.asarray(value).tolist()  # (checked as a Python value: exact conversion)
    try:
        arr = python_array(value, dtype)
    except DTypeError as e:
        raise _spec_error(api, f"default_value of feature '{key}': {e.message}",
                          DTypeError) from None
    if arr.size != math.prod(shape):
        raise _spec_error(api, f"default_value of feature '{key}' has {arr.size} values, "
                               f"its shape {list(shape)} needs {math.prod(shape)}", ShapeError)
    return arr


def _check_features(api: str, features: Any) -> list[tuple[str, Any]]:
    if not isinstance(features, Mapping) or not features:
        raise _spec_error(api, f"features must be a non-empty dict of FixedLenFeature / "
                               f"VarLenFeature, got {features!r}", TypeError)
    items = []
    for key, spec in features.items():
        if not isinstance(key, str):
            raise _spec_error(api, f"feature names are str, got {key!r}", TypeError)
        if not isinstance(spec, (FixedLenFeature, VarLenFeature)):
            kind = type(spec).__name__
            if kind in ("SparseFeature", "RaggedFeature", "FixedLenSequenceFeature"):
                raise _spec_error(api, f"feature '{key}' is a {kind}, which tensorweave does "
                                       f"not parse: use FixedLenFeature or VarLenFeature",
                                  UnimplementedError)
            raise _spec_error(api, f"feature '{key}' must be a FixedLenFeature or "
                                   f"VarLenFeature, got {spec!r}", TypeError)
        items.append((key, spec))
    return items


def _parse(api: str, serialized: Any, features: Any, rank: int | None) -> dict[str, Any]:
    from ..sparse.sparse_tensor import SparseTensor
    items = _check_features(api, features)
    serialized = convert_to_tensor(serialized, dtype_hint=string)
    if not serialized.dtype.is_string:
        raise _spec_error(api, f"serialized must be a string tensor, got "
                               f"{serialized.dtype.name}", DTypeError)
    ser_rank = len(serialized.shape)
    if (rank is not None and ser_rank != rank) or ser_rank > 1:
        want = "a scalar" if rank == 0 else "a scalar or a vector"
        raise _spec_error(api, f"serialized must be {want} (one serialized Example per "
                               f"element), got shape {format_shape(serialized.shape)}",
                          ShapeError)
    dense, sparse = [], []
    for key, spec in items:
        if isinstance(spec, VarLenFeature):
            sparse.append((key, _feature_dtype(api, key, spec.dtype)))
            continue
        dtype = _feature_dtype(api, key, spec.dtype)
        shape = tuple(spec.shape) if isinstance(spec.shape, (list, tuple)) else \
            ((spec.shape,) if isinstance(spec.shape, int) else tuple(spec.shape))
        if any(d is None or int(d) < 0 for d in shape):
            raise _spec_error(api, f"feature '{key}' has shape {list(shape)}: a "
                                   f"FixedLenFeature needs every dim", ShapeError)
        shape = tuple(int(d) for d in shape)
        dense.append((key, dtype, shape, _dense_default(api, key, spec, dtype, shape)))
    defaults = [constant(d if d is not None else np.zeros(0, dt.np)) for _, dt, _, d in dense]
    attrs = {"dense_keys": tuple(k for k, *_ in dense),
             "dense_types": tuple(dt.name for _, dt, _, _ in dense),
             "dense_ranks": tuple(len(s) for _, _, s, _ in dense),
             "dense_dims": tuple(d for _, _, s, _ in dense for d in s),
             "has_default": tuple(int(d is not None) for *_, d in dense),
             "sparse_keys": tuple(k for k, _ in sparse),
             "sparse_types": tuple(dt.name for _, dt in sparse)}
    outs = apply_op("ParseExample", [serialized, *defaults], attrs, default_name="ParseExample")
    result: dict[str, Any] = {}
    for (key, *_), t in zip(dense, outs):
        result[key] = t
    rest = outs[len(dense):]
    for j, (key, _) in enumerate(sparse):
        result[key] = SparseTensor(*rest[3 * j:3 * j + 3])
    return {key: result[key] for key, _ in items}


def parse_single_example(serialized: Any, features: Any, name: str | None = None,
                         example_names: Any = None) -> dict[str, Any]:
    """Parse one serialized ``tf.train.Example`` (a string scalar) into a dict: each
    `FixedLenFeature` key a tensor of its shape, each `VarLenFeature` key a
    `tw.SparseTensor` of rank 1. Errors (a missing feature without default, a dtype or
    count that does not match) name the key."""
    return _parse("tw.io.parse_single_example", serialized, features, 0)


def parse_example(serialized: Any, features: Any, name: str | None = None,
                  example_names: Any = None) -> dict[str, Any]:
    """Parse a batch of serialized ``tf.train.Example`` protos (a string vector; a scalar
    parses as `parse_single_example`): each `FixedLenFeature` key a tensor
    ``[batch] + shape``, each `VarLenFeature` key a `tw.SparseTensor` ``[batch, longest]``
    whose row i holds example i's values."""
    return _parse("tw.io.parse_example", serialized, features, None)


__all__ = ["FixedLenFeature", "VarLenFeature", "parse_example", "parse_single_example"]
