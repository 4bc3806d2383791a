"""TFRecord files: `TFRecordWriter`, `tf_record_iterator`, and the record reader that
``tw.data.TFRecordDataset`` runs.

A file is a sequence of records, each::

    uint64 length (little-endian) | uint32 masked CRC-32C of the length bytes
    data (length bytes)           | uint32 masked CRC-32C of the data

optionally inside one GZIP or ZLIB stream (``TFRecordOptions``). Reading checks both
CRCs: a mismatch is `DataLossError` "corrupted record at OFFSET", a record cut inside
its data or data CRC is "truncated record at OFFSET" (offsets as TensorFlow gives
them: the record's, or its data's for a bad data CRC). A file that ends inside a
header ends the records without error, as TensorFlow's reader does (a file still being
written may be read up to its last whole record).
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterator
from typing import Any

from ..errors import DataLossError, InvalidArgumentError, UnimplementedError
from .crc32c import masked_crc32c
from .gfile import local_path, os_error

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")

_COMPRESSION = {None: "", "": "", "NONE": "", "GZIP": "GZIP", "ZLIB": "ZLIB", 0: "", 1: "ZLIB",
                2: "GZIP"}


class TFRecordCompressionType:
    """The compression of a TFRecord file (TensorFlow 1's enum)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """How a TFRecord file is compressed: `compression_type` None/"" (none), "ZLIB" or
    "GZIP", with zlib's `compression_level` (default 6). TensorFlow's buffer sizes and
    flush mode are accepted and change nothing here; its other zlib settings are not
    supported."""

    compression_type_map = {TFRecordCompressionType.NONE: "",
                            TFRecordCompressionType.ZLIB: "ZLIB",
                            TFRecordCompressionType.GZIP: "GZIP"}

    def __init__(self, compression_type: Any = None, flush_mode: Any = None,
                 input_buffer_size: Any = None, output_buffer_size: Any = None,
                 window_bits: Any = None, compression_level: int | None = None,
                 compression_method: Any = None, mem_level: Any = None,
                 compression_strategy: Any = None) -> None:
        self.compression_type = compression_kind(compression_type, "tw.io.TFRecordOptions")
        unsupported = {"window_bits": window_bits, "compression_method": compression_method,
                       "mem_level": mem_level, "compression_strategy": compression_strategy}
        given = [k for k, v in unsupported.items() if v is not None]
        if given:
            raise UnimplementedError(f"tw.io.TFRecordOptions: {', '.join(given)} not "
                                     f"supported (compression_type and compression_level are)")
        level = 6 if compression_level is None else int(compression_level)
        if not -1 <= level <= 9:
            raise InvalidArgumentError(f"tw.io.TFRecordOptions: compression_level must be in "
                                       f"[-1, 9], got {level}")
        self.compression_level = level

    @classmethod
    def get_compression_type_string(cls, options: Any) -> str:
        """The compression name of `options` (TFRecordOptions, a name or the enum)."""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return compression_kind(options, "tw.io.TFRecordOptions")


def compression_kind(value: Any, api: str) -> str:
    """"", "GZIP" or "ZLIB" for a compression given as a name, the enum, options or None."""
    if isinstance(value, TFRecordOptions):
        return value.compression_type
    key = value.upper() if isinstance(value, str) else value
    if key not in _COMPRESSION:
        raise InvalidArgumentError(f"{api}: compression_type must be '', 'ZLIB' or 'GZIP', "
                                   f"got {value!r}")
    return _COMPRESSION[key]


def _options(options: Any, api: str) -> tuple[str, int]:
    if isinstance(options, TFRecordOptions):
        return options.compression_type, options.compression_level
    return compression_kind(options, api), 6


# ------------------------------------------------------------------------- writing

class _ZlibWriter:
    """A file object that writes one zlib stream (TensorFlow's ZLIB files)."""

    def __init__(self, raw: Any, level: int) -> None:
        self._raw = raw
        self._z = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS)

    def write(self, data: bytes) -> None:
        self._raw.write(self._z.compress(data))

    def flush(self) -> None:
        self._raw.write(self._z.flush(zlib.Z_SYNC_FLUSH))
        self._raw.flush()

    def close(self) -> None:
        self._raw.write(self._z.flush(zlib.Z_FINISH))
        self._raw.close()


def encode_record(data: bytes) -> bytes:
    """One record as the file holds it (module docstring)."""
    length = struct.pack("<Q", len(data))
    return b"".join((length, _FOOTER.pack(masked_crc32c(length)), data,
                     _FOOTER.pack(masked_crc32c(data))))


class TFRecordWriter:
    """Writes records (bytes) to a TFRecord file, as ``tf.io.TFRecordWriter``: `options`
    a `TFRecordOptions` or compression name. A context manager; `close` finishes the
    file (a compressed stream is incomplete until then)."""

    def __init__(self, path: Any, options: Any = None) -> None:
        api = "tw.io.TFRecordWriter"
        self._path = local_path(path, api)
        kind, level = _options(options, api)
        try:
            if kind == "GZIP":  # (zlib's level -1 is its default, 6)
                self._file: Any = gzip.open(self._path, "wb",
                                            compresslevel=level if level >= 0 else 6)
            elif kind == "ZLIB":
                self._file = _ZlibWriter(open(self._path, "wb"), level)
            else:
                self._file = open(self._path, "wb")
        except OSError as e:
            raise os_error(e, self._path, api) from None

    def write(self, record: Any) -> None:
        """Append one record (bytes; a str is written as UTF-8)."""
        if self._file is None:
            raise InvalidArgumentError("tw.io.TFRecordWriter: write after close")
        if isinstance(record, str):
            record = record.encode("utf-8")
        self._file.write(encode_record(bytes(record)))

    def flush(self) -> None:
        """Push what was written to the file (a compressed stream: up to a sync point)."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        """Finish and close the file."""
        if self._file is not None:
            f, self._file = self._file, None
            f.close()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass


# ------------------------------------------------------------------------- reading

class _ZlibReader:
    """``read(n)`` over a file holding one zlib stream."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._z = zlib.decompressobj(zlib.MAX_WBITS)
        self._buffer = b""
        self._done = False

    def read(self, n: int) -> bytes:
        while len(self._buffer) < n and not self._done:
            chunk = self._raw.read(1 << 16)
            if not chunk:
                self._buffer += self._z.flush()
                self._done = True
                if not self._z.eof:
                    raise EOFError("the zlib stream ends before its end marker")
                break
            self._buffer += self._z.decompress(chunk)
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def close(self) -> None:
        self._raw.close()


def _open_for_reading(path: str, kind: str, api: str) -> Any:
    try:
        raw = open(path, "rb")
    except OSError as e:
        raise os_error(e, path, api) from None
    if kind == "GZIP":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "ZLIB":
        return _ZlibReader(raw)
    return raw


def read_records(path: Any, compression: Any = "", api: str = "tw.io.tf_record_iterator"
                 ) -> Iterator[bytes]:
    """Every record of the TFRecord file at `path`, CRCs checked (module docstring)."""
    for _, data in records_with_offsets(path, compression, api):
        yield data


def records_with_offsets(path: Any, compression: Any = "",
                         api: str = "tw.io.tf_record_iterator") -> Iterator[tuple[int, bytes]]:
    """(offset, data) of every record of the TFRecord file at `path` (`read_records`)."""
    p = local_path(path, api)
    kind = compression_kind(compression, api)
    f = _open_for_reading(p, kind, api)
    offset = 0
    try:
        while True:
            try:
                header = f.read(12)
                if len(header) < 12:
                    return  # (at the end, or inside a header: TensorFlow's reader stops)
                length, length_crc = _HEADER.unpack(header)
                if masked_crc32c(header[:8]) != length_crc:
                    hint = " (Is this even a TFRecord file?)" if offset == 0 else ""
                    raise DataLossError(f"corrupted record at {offset}{hint}", op=api)
                body = f.read(length + 4)
            except (EOFError, zlib.error, gzip.BadGzipFile) as e:
                raise DataLossError(f"{p}: the {kind} stream is corrupt or cut short near "
                                    f"record offset {offset} ({e})", op=api) from None
            if len(body) < length + 4:
                raise DataLossError(f"truncated record at {offset}", op=api)
            data = body[:length]
            if masked_crc32c(data) != _FOOTER.unpack(body[length:])[0]:
                # (TensorFlow names the data's offset here, the header's above)
                raise DataLossError(f"corrupted record at {offset + 12}", op=api)
            yield offset, data
            offset += 16 + length
    finally:
        f.close()


def tf_record_iterator(path: Any, options: Any = None) -> Iterator[bytes]:
    """The records of a TFRecord file, one bytes object each (TensorFlow 1's
    ``tf.compat.v1.io.tf_record_iterator``); `options` a `TFRecordOptions` or
    compression name. A corrupt or truncated record is `DataLossError`."""
    kind, _ = _options(options, "tw.io.tf_record_iterator")
    return read_records(path, kind)


__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "encode_record",
           "read_records", "tf_record_iterator"]
