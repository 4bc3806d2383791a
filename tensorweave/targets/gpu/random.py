"""Random-number kernels: the counter-based Philox4x32-10 recipe of
`compiler/ops/random.py`, one GPU thread per Philox block, so the gpu target draws the
numbers the reference and cpu targets draw.

Every element of an op's output is a pure function of (seed, seed2, call index, element
index): thread ``j`` computes ``philox((j, n, lo(seed2), hi(seed2)), (lo(seed), hi(seed)))``
and turns its four words into the elements they make (four for types of up to 32 bits,
two when a value takes two words: float64, int64, and Box-Muller pairs of float64), with
the recipe's exact integer steps and its float math in float64 rounded once. Uniform and
integer results are bitwise those of the reference; normal and truncated normal ones use
the device's ``log``/``cos``/``sin`` (libdevice), so they may differ in the last place of
the float64 intermediate, which rounding to float32 almost always hides (float64 results
may differ by an ulp).

Stateful ops (RandomUniform, RandomNormal, TruncatedNormal, RandomUniformInt,
RandomUniformLike) take their call index ``n`` from a one-element uint32 array that the
step writes before the launch from the executable's call counters, the counters the
reference kernels (host calls, the dataflow executor) use: a function draws one stream
whichever way a call runs. Stateless ops read ``seed`` from their seed tensor on the device
(call index 0). float16/bfloat16 outputs have no GPU code and run on the host;
Multinomial and RandomShuffle have no kernel yet.
"""

from __future__ import annotations

import math

import numpy as np

from ...compiler.ir import Node
from ...compiler.ops.random import ERF_SQRT2, GILES_CENTRAL, PHILOX_M, PHILOX_ROUNDS, PHILOX_W
from .source import Kernel, Unsupported, Writer, launch_1d, module, numba_type

STATEFUL = frozenset({"RandomUniform", "RandomNormal", "TruncatedNormal", "RandomUniformInt",
                      "RandomUniformLike"})
STATELESS = frozenset({"StatelessRandomUniform", "StatelessRandomNormal",
                       "StatelessTruncatedNormal", "StatelessRandomUniformInt",
                       "StatelessRandomUniformFullInt"})
_KIND = {"RandomUniform": "uniform", "RandomUniformLike": "uniform",
         "StatelessRandomUniform": "uniform", "RandomNormal": "normal",
         "StatelessRandomNormal": "normal", "TruncatedNormal": "truncated",
         "StatelessTruncatedNormal": "truncated", "RandomUniformInt": "int",
         "StatelessRandomUniformInt": "int", "StatelessRandomUniformFullInt": "fullint"}
_MASK = "uint64(0xFFFFFFFF)"
_TWO_PI = 2.0 * math.pi  # the reference's ``2.0 * np.pi * u2`` groups the same way


def needs_call_index(node: Node) -> bool:
    """Whether `node`'s kernel takes the step's call index array (stateful random ops)."""
    return node.op in STATEFUL


def _u64(value: int) -> str:
    return f"uint64({int(value) % 2**64})"


def _float(value: float) -> str:
    return repr(float(value))


def _values_per_block(kind: str, out_np: np.dtype) -> int:
    """Elements one Philox block (four words) makes: one word per value up to 32 bits,
    two words per value for float64 and 64-bit integers."""
    wide = out_np.itemsize == 8
    return 2 if wide else 4


def _philox(w: Writer) -> None:
    """Emit Philox4x32-10 on c0..c3 under k0, k1 (uint64 locals holding 32-bit words)."""
    m0, m1 = (_u64(m) for m in PHILOX_M)
    w0, w1 = (_u64(x) for x in PHILOX_W)
    w(f"for _ in range({PHILOX_ROUNDS}):")
    with w.indent():
        w(f"p0 = {m0} * c0")  # both factors < 2**32: the 64-bit product is exact
        w(f"p1 = {m1} * c2")
        w(f"c0, c1, c2, c3 = ((p1 >> uint64(32)) ^ c1 ^ k0, p1 & {_MASK}, "
          f"(p0 >> uint64(32)) ^ c3 ^ k1, p0 & {_MASK})")
        w(f"k0 = (k0 + {w0}) & {_MASK}")
        w(f"k1 = (k1 + {w1}) & {_MASK}")


def _bits(words: list[str], l_: int, wide: bool, bits: int) -> str:
    """The `bits`-bit integer of value `l_` of the block (uint64 expression)."""
    if wide:
        return f"(((({words[2 * l_]}) << uint64(32)) | {words[2 * l_ + 1]}) >> uint64({64 - bits}))"
    return f"({words[l_]} >> uint64({32 - bits}))"


def _emit_values(w: Writer, node: Node, kind: str, out_t: str, out_np: np.dtype, per: int,
                 total: int) -> None:
    """Emit the stores of block ``j``'s `per` elements (``e = j * per + l``)."""
    words = ["c0", "c1", "c2", "c3"]
    wide = out_np.itemsize == 8
    bits = 52 if wide else 23
    scale = _float(2.0 ** -bits)

    def store(l_: int, expr: str) -> None:
        w(f"e = j * {per} + {l_}")
        if total % per:
            w(f"if e < {total}:")
            w(f"    out[e] = {expr}")
        else:
            w(f"out[e] = {expr}")

    if kind == "uniform":
        for l_ in range(per):
            store(l_, f"{out_t}(float64({_bits(words, l_, wide, bits)}) * {scale})")
    elif kind == "normal":
        for pair in range(per // 2):
            a = _bits(words, 2 * pair, wide, bits)
            c = _bits(words, 2 * pair + 1, wide, bits)
            w(f"u1 = (float64({a}) + 1.0) * {scale}")
            w(f"u2 = float64({c}) * {scale}")
            w("r = math.sqrt(-2.0 * math.log(u1))")
            store(2 * pair, f"{out_t}(r * math.cos({_float(_TWO_PI)} * u2))")
            store(2 * pair + 1, f"{out_t}(r * math.sin({_float(_TWO_PI)} * u2))")
    elif kind == "truncated":
        for l_ in range(per):
            w(f"x = (2.0 * (float64({_bits(words, l_, wide, bits)}) * {scale}) - 1.0) * "
              f"{_float(ERF_SQRT2)}")
            w("v = -math.log((1.0 - x) * (1.0 + x)) - 2.5")
            w("p = 0.0")
            for coef in GILES_CENTRAL:
                w(f"p = p * v + {_float(coef)}")
            w(f"z = {_float(math.sqrt(2.0))} * (p * x)")
            w("z = min(max(z, -2.0), 2.0)")
            store(l_, f"{out_t}(z)")
    elif kind == "int":
        _emit_ints(w, node, words, out_t, wide, per, store)
    else:
        _emit_full_ints(w, out_np, words, out_t, wide, per, store)


def _emit_ints(w: Writer, node: Node, words: list[str], out_t: str, wide: bool, per: int,
               store) -> None:
    """RandomUniformInt: ``minval + word mod (maxval - minval)``, computed without
    overflow: the result lies in [minval, maxval), so only the 64-bit sum needs care."""
    minval, maxval = int(node.attrs["minval"]), int(node.attrs["maxval"])
    span = maxval - minval
    for l_ in range(per):
        word = _bits(words, l_, wide, 64 if wide else 32)
        w(f"off = {word}" if span >= 2**64 else f"off = {word} % {_u64(span)}")
        if not wide:  # off < 2**32: the sum is exact in int64
            store(l_, f"{out_t}(int64({minval}) + int64(off))")
            continue
        # off >= 2**63 only when minval < 0, and then minval + off >= 0: shift by 2**63
        # so that no intermediate leaves int64
        w("if off >= uint64(9223372036854775808):")
        w(f"    val = (int64(off - uint64(9223372036854775808)) + int64({minval})) "
          f"+ int64(4611686018427387904) + int64(4611686018427387904)")
        w("else:")
        w(f"    val = int64(off) + int64({minval})")
        store(l_, f"{out_t}(val)")


def _emit_full_ints(w: Writer, out_np: np.dtype, words: list[str], out_t: str, wide: bool,
                    per: int, store) -> None:
    """StatelessRandomUniformFullInt: the word's bits as the dtype's (64-bit types two
    words, narrower ones the low bits of one), made signed without leaving int64."""
    bits = 8 * out_np.itemsize
    signed = out_np.kind == "i"
    for l_ in range(per):
        w(f"word = {_bits(words, l_, wide, 64 if wide else 32)}")
        if wide:
            w("if word >= uint64(9223372036854775808):")
            w("    val = int64(word - uint64(9223372036854775808)) - "
              "int64(4611686018427387904) - int64(4611686018427387904)")
            w("else:")
            w("    val = int64(word)")
        else:
            w(f"val = int64(word & {_u64(2**bits - 1)})")
            if signed:
                w(f"if val >= {2 ** (bits - 1)}:")
                w(f"    val -= {2 ** bits}")
        store(l_, f"{out_t}(val)")


def random_kernel(node: Node, name: str) -> Kernel:
    """The kernel of random op `node` (static shape). Raises `Unsupported`."""
    op = node.op
    kind = _KIND.get(op)
    if kind is None:
        raise Unsupported(f"no GPU kernel for {op}")
    out = node.outputs[0].type
    out_t = numba_type(out.dtype)  # float16/bfloat16: Unsupported, a host call
    out_np = out.dtype.np
    if kind in ("int", "fullint") and out_np.itemsize == 8 and out_np.kind != "i":
        raise Unsupported(f"no GPU code for {out.dtype.ir_name}")
    total = int(np.prod([int(s) for s in out.shape], dtype=np.int64))
    if total == 0:
        raise Unsupported("empty result")
    per = _values_per_block(kind, out_np)
    blocks = -(-total // per)
    if blocks > 2**32:
        raise Unsupported(f"more than 2**32 Philox blocks ({blocks})")
    w = Writer()
    w("from numba import uint64")  # not in the prelude: only these kernels use it
    w("")
    w("")
    w("@cuda.jit")
    params: list[str] = []
    if op in STATEFUL:
        params.append("uint32")
        names = ["ctr"] + (["like"] if op == "RandomUniformLike" else []) + ["out"]
        if op == "RandomUniformLike":
            params.append(numba_type(node.inputs[0].type.dtype))
    else:
        params.append(numba_type(node.inputs[0].type.dtype))
        names = ["seed", "out"]
    params.append(out_t)
    w(f"def {name}({', '.join(names)}):")
    with w.indent():
        if op in STATEFUL:
            seed, seed2 = int(node.attrs["seed"]) % 2**64, int(node.attrs["seed2"]) % 2**64
            w("n = uint64(ctr[0])")
            w(f"s0, s1 = {_u64(seed & 0xFFFFFFFF)}, {_u64(seed >> 32)}")
            w(f"t2, t3 = {_u64(seed2 & 0xFFFFFFFF)}, {_u64(seed2 >> 32)}")
        else:  # seed values modulo 2**64: a negative int64 as its two's complement
            w("n = uint64(0)")
            for i, (lo, hi) in enumerate((("s0", "s1"), ("t2", "t3"))):
                w(f"a{i} = int64(seed[{i}])")
                w(f"if a{i} < 0:")
                w(f"    u{i} = uint64(a{i} + int64(9223372036854775807) + int64(1)) + "
                  f"uint64(9223372036854775808)")
                w("else:")
                w(f"    u{i} = uint64(a{i})")
                w(f"{lo}, {hi} = u{i} & {_MASK}, u{i} >> uint64(32)")
        w(f"for j in range(cuda.grid(1), {blocks}, cuda.gridsize(1)):")
        with w.indent():
            w("c0, c1, c2, c3 = uint64(j), n, t2, t3")
            w("k0, k1 = s0, s1")
            _philox(w)
            _emit_values(w, node, kind, out_t, out_np, per, total)
    grid, block = launch_1d(blocks)
    return Kernel(name, module(w), params, grid, block)


__all__ = ["STATEFUL", "STATELESS", "needs_call_index", "random_kernel"]
