"""Datasets read from files: ``TFRecordDataset`` (one string scalar per record) and
``TextLineDataset`` (one per line), as TensorFlow's.

Files are read on the consumer's thread (``prefetch`` moves that to a background one),
one after the other, or with ``num_parallel_reads=n`` interleaved one element at a time
from n open files, in the order TensorFlow's deterministic interleave gives
(`InterleaveDataset`). `filenames` is a path, a list of paths, a string tensor or a
dataset of string scalars; in an ``interleave``/``flat_map`` function it may be the
function's symbolic string argument (the usual ``files.interleave(TFRecordDataset)``).
Records are checked as `tensorweave.io.tfrecord` describes (`DataLossError` for a
corrupt one); a missing file is `NotFoundError` when its turn comes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..compiler.dtypes import string
from ..errors import DTypeError, InvalidArgumentError
from ..frontend.function import TensorSpec
from ..frontend.tensor import EagerTensor, Tensor
from ..io.tfrecord import _open_for_reading, compression_kind, read_records
from .dataset import UNKNOWN_CARDINALITY, Dataset, check_count
from .interleave import InterleaveDataset, SpecOnlyDataset, spec_only
from .structure import Element, Structure

_STRING_SCALAR = Structure(("leaf",), (TensorSpec((), string),))


def string_scalar(value: bytes) -> np.ndarray:
    """A 0-d string array holding `value` (an element of these datasets)."""
    out = np.empty((), object)
    out[()] = value
    out.flags.writeable = False
    return out


class _FilesDataset(Dataset):
    """The elements of each file of a fixed list, file after file (`_read` per kind)."""

    def __init__(self, files: list[str] | Dataset, compression: str, op: str) -> None:
        super().__init__(_STRING_SCALAR, op)
        self._files = files
        self._compression = compression

    def _paths(self) -> Iterator[str]:
        if isinstance(self._files, Dataset):
            for (name,) in self._files._iterate():
                yield name[()].decode("utf-8")
        else:
            yield from self._files

    def _read(self, path: str) -> Iterator[bytes]:
        raise NotImplementedError

    def _iterate(self) -> Iterator[Element]:
        for path in self._paths():
            for value in self._read(path):
                yield (string_scalar(value),)

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY


class _RecordFiles(_FilesDataset):
    def _read(self, path: str) -> Iterator[bytes]:
        return read_records(path, self._compression, api=self._op)


class _LineFiles(_FilesDataset):
    def _read(self, path: str) -> Iterator[bytes]:
        return read_lines(path, self._compression, api=self._op)


def read_lines(path: str, compression: str, api: str) -> Iterator[bytes]:
    """The lines of a text file, without their newline and with every carriage return
    dropped (TensorFlow's line reader); a last line without a newline counts, an empty
    file has none."""
    f = _open_for_reading(path, compression, api)
    pending = b""
    try:
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                yield line.replace(b"\r", b"")
        if pending:
            yield pending.replace(b"\r", b"")
    finally:
        f.close()


def _file_list(filenames: Any, op: str, location: str | None) -> list[str] | Dataset:
    """The paths of `filenames` (module docstring), checked."""
    if isinstance(filenames, Dataset):
        specs = filenames._structure.specs
        if filenames._structure.tree != ("leaf",) or specs[0].dtype is not string or \
                specs[0].shape != ():
            raise InvalidArgumentError(f"a dataset of file names must have string scalar "
                                       f"elements, got {filenames._structure.describe()}",
                                       op=op, location=location)
        return filenames
    if isinstance(filenames, Tensor):
        raise InvalidArgumentError(f"got the symbolic tensor {filenames}; file names are host "
                                   f"values (str, a list, a string array, an eager tensor) "
                                   f"or, inside an interleave/flat_map function, its "
                                   f"argument", op=op, location=location)
    if isinstance(filenames, (str, bytes, os.PathLike)):
        items: list[Any] = [filenames]
    elif isinstance(filenames, (EagerTensor, np.ndarray)):
        arr = np.asarray(filenames)
        if arr.dtype.kind not in "OSU" or arr.ndim > 1:
            raise DTypeError(f"filenames must be a string scalar or vector, got "
                             f"{arr.dtype}{list(arr.shape)}", op=op, location=location)
        items = list(arr.reshape(-1))
    elif isinstance(filenames, (list, tuple)):
        items = list(filenames)
    else:
        raise DTypeError(f"filenames must be a path, a list of paths, a string tensor or a "
                         f"dataset of them, got {type(filenames).__name__}", op=op,
                         location=location)
    out = []
    for f in items:
        if isinstance(f, (bytes, np.bytes_)):
            f = bytes(f).decode("utf-8")
        if isinstance(f, os.PathLike):
            f = os.fspath(f)
        if not isinstance(f, str):
            raise DTypeError(f"a file name must be str or bytes, got {f!r}", op=op,
                             location=location)
        out.append(f)
    return out


def _make(kind: type, filenames: Any, compression_type: Any, num_parallel_reads: Any,
          op: str) -> Dataset:
    from ..frontend.call_site import user_location
    loc = user_location()
    location = None if loc is None else str(loc)
    if spec_only() and isinstance(filenames, Tensor):
        return SpecOnlyDataset(_STRING_SCALAR, op)
    compression = compression_kind(compression_type, op)
    files = _file_list(filenames, op, location)
    reads = None if num_parallel_reads is None else num_parallel_reads
    if reads is not None and reads != -1:  # (-1: AUTOTUNE)
        reads = check_count(reads, f"{op}: num_parallel_reads", location, minimum=1)
    if reads in (None, 1):
        return kind(files, compression, op)
    names = files if isinstance(files, Dataset) else _names_dataset(files, op)

    def one_file(name: Any) -> Dataset:  # (symbolic while the interleave traces it)
        if isinstance(name, Tensor):
            return SpecOnlyDataset(_STRING_SCALAR, op)
        return kind(_file_list(name, op, location), compression, op)

    return InterleaveDataset(names, one_file, reads, 1, op)


def _names_dataset(files: list[str], op: str) -> Dataset:
    from .sources import TensorSlicesDataset
    if not files:
        return _RecordFiles([], "", op)  # (no files: no names)
    arr = np.empty(len(files), object)
    arr[:] = [f.encode("utf-8") for f in files]
    return TensorSlicesDataset(arr)


class TFRecordDataset(Dataset):
    """The records of TFRecord files as string scalars (``tf.data.TFRecordDataset``):
    `compression_type` '' (default), 'ZLIB' or 'GZIP'; `num_parallel_reads` interleaves
    that many files; `buffer_size` is accepted (the reads are buffered anyway)."""

    def __new__(cls, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                num_parallel_reads: Any = None, name: str | None = None) -> Dataset:
        return _make(_RecordFiles, filenames, compression_type,
                     num_parallel_reads, "tw.data.TFRecordDataset")


class TextLineDataset(Dataset):
    """The lines of text files as string scalars (``tf.data.TextLineDataset``): without
    the newline, carriage returns dropped; `compression_type` as `TFRecordDataset`."""

    def __new__(cls, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                num_parallel_reads: Any = None, name: str | None = None) -> Dataset:
        return _make(_LineFiles, filenames, compression_type,
                     num_parallel_reads, "tw.data.TextLineDataset")


__all__ = ["TFRecordDataset", "TextLineDataset"]
