"""How tensors and calls travel between tasks: a JSON header, then raw bytes in chunks.

Every RPC body (request or response) is a stream of byte messages:

1. a header, UTF-8 JSON: the call's fields plus ``"tensors"``, one entry per tensor:
   ``{"dtype": "f32", "shape": [2, 3], "nbytes": 24}``, or ``{"dead": true}`` for a dead
   tensor of lowered control flow;
2. the tensors' bytes in order (C order), each tensor cut into chunks of at most
   `CHUNK_BYTES`, a chunk never spanning two tensors; an empty tensor has no chunk.

So no message approaches gRPC's 4 MiB default cap whatever the tensor's size, nothing
is pickled, and the receiver writes each chunk straight into the array it allocated
from the header (one copy, the one out of gRPC's buffer). The header names dtypes by
their IR names; anything that is not a known dtype, a valid shape or a byte count that
matches them is refused with `DataLossError` before memory is allocated for it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ...compiler.dtypes import as_dtype
from ...errors import DataLossError, DTypeError, TensorWeaveError
from ..frames import DEAD

CHUNK_BYTES = 2 << 20
"""Largest chunk of tensor bytes in one gRPC message (2 MiB)."""

MAX_HEADER_BYTES = 16 << 20
"""Largest header accepted (graphs travel as tensors, not in headers)."""

MAX_BODY_BYTES = int(os.environ.get("TW_MAX_MESSAGE_BYTES", 16 << 30))
"""Largest total of tensor bytes one body may declare (``TW_MAX_MESSAGE_BYTES``, default
16 GiB): a header cannot make a task allocate more than this."""


def tensor_meta(value: Any) -> dict[str, Any]:
    """The header entry describing `value` (an array, a NumPy scalar, or `DEAD`)."""
    if value is DEAD:
        return {"dead": True}
    arr = np.asarray(value)
    dtype = as_dtype(arr.dtype)
    return {"dtype": dtype.ir_name, "shape": list(arr.shape), "nbytes": int(arr.nbytes)}


def encode(header: dict[str, Any], tensors: Sequence[Any] = ()) -> Iterator[bytes]:
    """The messages of one body: `header` (with the tensors' descriptions added under
    ``"tensors"``) then every tensor's bytes in chunks."""
    arrays = [t if t is DEAD else _c_order(t) for t in tensors]
    header = dict(header, tensors=[tensor_meta(a) for a in arrays])
    yield json.dumps(header, separators=(",", ":")).encode()
    for arr in arrays:
        if arr is DEAD or arr.nbytes == 0:
            continue
        view = memoryview(arr.reshape(-1).view(np.uint8))
        for start in range(0, arr.nbytes, CHUNK_BYTES):
            yield bytes(view[start:start + CHUNK_BYTES])


INLINE_BYTES = 1 << 20
"""Bodies with at most this many tensor bytes travel as one message (`pack`): a unary
gRPC call costs ~0.2 ms in Python, a streaming one ~1.5 ms."""


def payload_bytes(tensors: Sequence[Any]) -> int:
    """The tensor bytes of a body."""
    return sum(0 if t is DEAD else np.asarray(t).nbytes for t in tensors)


def pack(header: dict[str, Any], tensors: Sequence[Any] = ()) -> bytes:
    """A whole body as one message: the header's length (4 bytes, little endian), the
    header, then the tensors' bytes back to back (for small bodies)."""
    arrays = [t if t is DEAD else _c_order(t) for t in tensors]
    head = json.dumps(dict(header, tensors=[tensor_meta(a) for a in arrays]),
                      separators=(",", ":")).encode()
    parts = [len(head).to_bytes(4, "little"), head]
    parts += [a.reshape(-1).view(np.uint8).data for a in arrays if a is not DEAD and a.nbytes]
    return b"".join(parts)


def unpack(message: bytes) -> tuple[dict[str, Any], list[Any]]:
    """The header and tensors of a `pack`ed body; `DataLossError` if malformed."""
    if not isinstance(message, bytes | bytearray) or len(message) < 4:
        raise DataLossError("malformed message: too short for a header")
    n = int.from_bytes(message[:4], "little")
    if 4 + n > len(message):
        raise DataLossError("malformed message: the header overruns the message")
    header = decode_header(bytes(message[4:4 + n]))
    metas = header.get("tensors", [])
    if not isinstance(metas, list):
        raise DataLossError("malformed header: 'tensors' is not a list")
    _check_sizes(metas, available=len(message) - 4 - n)
    reader = _ChunkReader(iter((memoryview(message)[4 + n:],)))
    tensors = [_read_tensor(meta, reader) for meta in metas]
    extra = len(message) - 4 - n - sum(0 if t is DEAD else t.nbytes for t in tensors)
    if extra:
        raise DataLossError(f"malformed message: {extra} bytes after the last tensor")
    return header, tensors


def _c_order(value: Any) -> np.ndarray:
    # np.ascontiguousarray would turn a 0-d array into a 1-d one.
    arr = np.asarray(value)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def decode(messages: Iterable[bytes]) -> tuple[dict[str, Any], list[Any]]:
    """Read one body written by `encode`: its header and its tensors (NumPy arrays, or
    `DEAD`). Raises `DataLossError` for a malformed or truncated body."""
    it = iter(messages)
    try:
        first = next(it)
    except StopIteration:
        raise DataLossError("empty message: expected a header") from None
    header = decode_header(first)
    metas = header.get("tensors", [])
    if not isinstance(metas, list):
        raise DataLossError("malformed header: 'tensors' is not a list")
    _check_sizes(metas, available=None)
    reader = _ChunkReader(it)
    tensors = [_read_tensor(meta, reader) for meta in metas]
    if reader.left():
        raise DataLossError("malformed message: a chunk overruns the last tensor")
    return header, tensors


def decode_header(message: bytes) -> dict[str, Any]:
    """The JSON header of a body; `DataLossError` if it is not a JSON object."""
    if not isinstance(message, bytes | bytearray) or len(message) > MAX_HEADER_BYTES:
        raise DataLossError("malformed message: the header is not bytes or is too large")
    try:
        header = json.loads(message)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise DataLossError("malformed message: the header is not JSON") from None
    if not isinstance(header, dict):
        raise DataLossError("malformed message: the header is not a JSON object")
    return header


def _check_sizes(metas: list[Any], available: int | None) -> None:
    """Refuse a body whose declared tensor bytes exceed what it holds (a packed body) or
    `MAX_BODY_BYTES`, before anything is allocated for them."""
    total = 0
    for meta in metas:
        if isinstance(meta, dict) and not meta.get("dead"):
            try:
                total += max(0, int(meta.get("nbytes", 0)))
            except (TypeError, ValueError):
                raise DataLossError(f"malformed tensor description {meta!r}") from None
    if available is not None and total > available:
        raise DataLossError(f"malformed message: its header declares {total} tensor bytes, "
                            f"it holds {available}")
    if total > MAX_BODY_BYTES:
        raise DataLossError(f"message declares {total} tensor bytes, over the limit of "
                            f"{MAX_BODY_BYTES} (TW_MAX_MESSAGE_BYTES)")


class _ChunkReader:
    """Fills buffers from a sequence of byte chunks; a chunk may hold the end of one
    tensor and the start of the next (a packed body is one chunk)."""

    def __init__(self, chunks: Iterator[Any]) -> None:
        self._chunks = chunks
        self._rest: memoryview = memoryview(b"")

    def read_into(self, buf: np.ndarray, what: str) -> None:
        filled, nbytes = 0, buf.nbytes
        while filled < nbytes:
            if not len(self._rest):
                try:
                    self._rest = memoryview(next(self._chunks))
                except StopIteration:
                    raise DataLossError(f"truncated message: {what} got {filled} of {nbytes} "
                                        f"bytes") from None
            take = min(len(self._rest), nbytes - filled)
            buf[filled:filled + take] = np.frombuffer(self._rest[:take], np.uint8)
            self._rest = self._rest[take:]
            filled += take

    def left(self) -> int:
        """Bytes of the current chunk not read yet (non-zero: a malformed body)."""
        return len(self._rest)


def _read_tensor(meta: Any, reader: _ChunkReader) -> Any:
    if not isinstance(meta, dict):
        raise DataLossError(f"malformed tensor description {meta!r}")
    if meta.get("dead"):
        return DEAD
    try:
        dtype = as_dtype(str(meta["dtype"]))
        shape = tuple(int(d) for d in meta["shape"])
        nbytes = int(meta["nbytes"])
    except (KeyError, TypeError, ValueError, DTypeError):
        raise DataLossError(f"malformed tensor description {meta!r}") from None
    if any(d < 0 for d in shape) or nbytes != math.prod(shape) * dtype.itemsize:
        raise DataLossError(f"tensor description {meta!r}: {nbytes} bytes do not hold "
                            f"{dtype.ir_name}{list(shape)}")
    buf = np.empty(nbytes, np.uint8)
    reader.read_into(buf, f"{dtype.ir_name}{list(shape)}")
    return buf.view(dtype.np).reshape(shape)


# ------------------------------------------------------------------------- errors

def error_to_header(error: BaseException, task: str) -> dict[str, Any]:
    """An error as header fields, so the other side can raise the same class with the
    op, node and source line it names."""
    from ... import errors as errors_module
    cls = type(error)
    name = cls.__name__ if getattr(errors_module, cls.__name__, None) is cls else "InternalError"
    if isinstance(error, TensorWeaveError):
        return {"error": {"class": name, "message": error.message, "op": error.op,
                          "node": error.node, "location": error.location, "task": task}}
    return {"error": {"class": name, "message": f"{cls.__name__}: {error}", "task": task}}


def error_from_header(header: dict[str, Any]) -> TensorWeaveError | None:
    """The error an `error_to_header` header carries (None when there is none)."""
    from ... import errors as errors_module
    info = header.get("error")
    if not info:
        return None
    cls = getattr(errors_module, str(info.get("class")), None)
    if not (isinstance(cls, type) and issubclass(cls, TensorWeaveError)) or cls in (
            errors_module.ParseError,):
        cls = errors_module.InternalError
    message = str(info.get("message", ""))
    task = info.get("task")
    if task and "(on " not in message:
        message = f"{message} (on {task})"
    return cls(message, op=info.get("op"), node=info.get("node"),
               location=info.get("location"))


__all__ = ["CHUNK_BYTES", "INLINE_BYTES", "decode", "decode_header", "encode",
           "error_from_header", "error_to_header", "pack", "payload_bytes", "tensor_meta",
           "unpack"]
