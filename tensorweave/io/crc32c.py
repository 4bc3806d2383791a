"""CRC-32C (Castagnoli), the checksum of TFRecord files, in Python and NumPy.

No standard module computes it (``zlib.crc32`` is the other polynomial), and a
dependency for one checksum is not worth it. Short inputs (a record's 8-byte length
header) run a table-driven loop; longer ones one vectorized pass: the CRC is linear
over GF(2), so with a zero initial register it is the XOR over every byte of that
byte's contribution at its distance from the end, looked up in a table of 256
contributions per distance (`_contributions`, 4096 distances: 4 MiB, built on first
use). Longer inputs are cut into 4096-byte blocks, combined by shifting the running
register over a block (`_shift_block`, a 32x32 bit matrix as 32 precomputed columns).

The usual initial register 0xFFFFFFFF is the same as a zero register with the first
four bytes complemented, which is what `crc32c` does before the zero-register sum.
"""

from __future__ import annotations

import threading

import numpy as np

_POLY = 0x82F63B78  # the Castagnoli polynomial, bit-reversed
_BLOCK = 4096  # distances the contribution table covers
_SHORT = 64  # inputs up to this many bytes take the plain loop


def _byte_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _byte_table()
_TABLE_NP = np.array(_TABLE, np.uint32)
_lock = threading.Lock()
_tables: tuple[np.ndarray, list[int]] | None = None


def _shift_zeros(register: np.ndarray, count: int) -> np.ndarray:
    """Registers (uint32 array) after `count` zero bytes, one NumPy step per byte."""
    for _ in range(count):
        register = _TABLE_NP[register & 0xFF] ^ (register >> 8)
    return register


def _build_tables() -> tuple[np.ndarray, list[int]]:
    """(contributions, block shift columns): ``contributions[d, b]`` is the zero-register
    CRC of byte b followed by d zero bytes; ``columns[k]`` is register bit k after
    `_BLOCK` zero bytes."""
    rows = np.empty((_BLOCK, 256), np.uint32)
    rows[0] = _TABLE_NP
    for d in range(1, _BLOCK):
        prev = rows[d - 1]
        rows[d] = _TABLE_NP[prev & 0xFF] ^ (prev >> 8)
    columns = _shift_zeros(np.array([1 << k for k in range(32)], np.uint32), _BLOCK)
    return rows.reshape(-1), [int(c) for c in columns]


def _get_tables() -> tuple[np.ndarray, list[int]]:
    global _tables
    if _tables is None:
        with _lock:
            if _tables is None:
                _tables = _build_tables()
    return _tables


def _shift_block(register: int, columns: list[int]) -> int:
    """`register` after `_BLOCK` zero bytes (a matrix product over GF(2))."""
    out = 0
    k = 0
    while register:
        if register & 1:
            out ^= columns[k]
        register >>= 1
        k += 1
    return out


def _loop(data: bytes | memoryview, crc: int) -> int:
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """The CRC-32C of `data` (initial register and final XOR 0xFFFFFFFF, as iSCSI and
    TFRecord files use it): ``crc32c(b"123456789") == 0xE3069283``."""
    n = len(data)
    if n <= _SHORT:
        return _loop(data, 0xFFFFFFFF) ^ 0xFFFFFFFF
    arr = np.frombuffer(data, np.uint8).copy()
    arr[:4] ^= 0xFF  # the initial register 0xFFFFFFFF (module docstring)
    contributions, columns = _get_tables()
    register = 0
    head = n % _BLOCK
    starts = ([0] if head else []) + list(range(head, n, _BLOCK))
    for start in starts:
        end = head if start == 0 and head else start + _BLOCK
        block = arr[start:end].astype(np.intp)
        size = end - start
        # byte i of the block is size - 1 - i bytes from its end
        index = np.arange((size - 1) * 256, -1, -256, dtype=np.intp) + block
        if start:
            register = _shift_block(register, columns)
        register ^= int(np.bitwise_xor.reduce(contributions[index]))
    return register ^ 0xFFFFFFFF


_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """TFRecord's masked CRC: the CRC-32C rotated right by 15 bits plus 0xA282EAD8 (a
    CRC stored inside data that is itself checksummed would otherwise be hard to tell
    from a CRC of the data)."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF
