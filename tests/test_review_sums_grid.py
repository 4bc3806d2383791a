"""Review: every cpu lowering that sums into memory, on a grid of tiny cases, at LLVM's
O1, O2 and O3 pipelines, against the reference target.

LLVM's InstCombine store merging (`mergeStoreIntoSuccessor`) can delete a live store when a
loop stores to an output element and then reloads and re-stores it on the way round
(docs/llvm_o2_miscompile.md): at O2 it dropped a filter row of 20 tiny depthwise
convolutions. The bug fires on small trip counts (loops of 1-2 trips folded into the CFG),
so the grid is tiny shapes: batch 2, H and W 1-3, filters 1-2 x 1-2, strides 1-2,
bottom/right padding 0-2, dilation 1-2 for the convolution families; windows 1-3 and
strides 1-2 (SAME and VALID) for pooling; small shapes for the reductions and scatters.
Inputs are small integers (and pooling inputs distinct), so every sum is exact whatever
its order: a dropped or repeated term shows as a wrong value.

Many cases share one LLVM module (one node function each): the pipeline optimizes each
function on its own (node functions never call each other), so a function is compiled as
it would be alone, and the per-module cost is paid once per family and level. The suite
runs a fixed sample of each family's grid (always including the 20 depthwise geometries
that were wrong); ``TW_SUMS_GRID=all`` runs the whole grid (minutes per family).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import random
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import llvmlite.ir as ir
import numpy as np
import pytest

from tensorweave.targets.cpu import jit
from tensorweave.targets.cpu.lowering import emit_node_function, find_lowering
from tensorweave.targets.cpu.lowerings import nn as cpu_nn
from tests.lowerings.helpers import reference_outputs, single_node
from tests.test_review_llvm_depthwise_o2_cases import WRONG_AT_O2

LEVELS = ("1", "2", "3")
SAMPLE = 8  # cases per family and level in the suite's run (plus the known-bad ones)
FULL = os.environ.get("TW_SUMS_GRID") == "all"


@dataclass(frozen=True)
class Case:
    """One node to compile: `op` on `arrays` with `attrs`; `direct` is the value of the
    nn lowerings' DIRECT switch while it is emitted (False: the im2col paths)."""

    label: str
    op: str
    arrays: tuple[np.ndarray, ...]
    attrs: dict[str, Any]
    direct: bool = True


# ------------------------------------------------------------------- case builders

def _ints(r: np.random.Generator, shape, dtype=np.float32) -> np.ndarray:
    """Small nonzero integers (a dropped term always changes the sum)."""
    return (r.integers(1, 5, shape) * r.choice([-1, 1], shape)).astype(dtype)


def _distinct(r: np.random.Generator, shape, dtype=np.float32) -> np.ndarray:
    n = int(np.prod(shape))
    return (r.permutation(n) - n // 2).reshape(shape).astype(dtype)


# (H, W, filter rows, filter cols, stride H, stride W, bottom pad, right pad, dilation)
CONV_GRID = [
    g for g in itertools.product((1, 2, 3), (1, 2, 3), (1, 2), (1, 2), (1, 2), (1, 2),
                                 (0, 1, 2), (0, 1, 2), (1, 2))
    if (g[2] - 1) * g[8] + 1 <= g[0] + g[6] and (g[3] - 1) * g[8] + 1 <= g[1] + g[7]]
KNOWN_BAD = [(*c, 1) for c in WRONG_AT_O2]


def _conv_attrs(g) -> dict[str, Any]:
    _, _, _, _, sh, sw, pb, pr, d = g
    return {"strides": (1, sh, sw, 1), "padding": "EXPLICIT",
            "explicit_paddings": (0, 0, 0, pb, 0, pr, 0, 0), "dilations": (1, d, d, 1)}


def _conv_family(op: str, depthwise: bool, direct: bool, c: int, o: int
                 ) -> Callable[[tuple], Case]:
    """Cases of one convolution op: `c` input channels, `o` output channels (depthwise:
    channel multiplier `o`)."""
    forward = "DepthwiseConv2dNative" if depthwise else "Conv2D"

    def build(g) -> Case:
        h, w, kh, kw = g[:4]
        r = np.random.default_rng(zlib.crc32(repr((op, g)).encode()))
        x, f = _ints(r, (2, h, w, c)), _ints(r, (kh, kw, c, o))
        attrs = _conv_attrs(g)
        label = f"{op}{'' if direct else '/im2col'} g={g} c={c} o={o}"
        if op == forward:
            return Case(label, op, (x, f), attrs, direct)
        y_shape = single_node(forward, [x, f], **attrs).outputs[0].type.shape
        dy = _ints(r, tuple(int(d) for d in y_shape))
        if op.endswith("BackpropInput"):
            return Case(label, op, (f, dy), {**attrs, "input_shape": x.shape}, direct)
        return Case(label, op, (x, dy), {**attrs, "filter_shape": f.shape}, direct)
    return build


# (H, W, window rows, window cols, stride H, stride W, SAME)
POOL_GRID = list(itertools.product((1, 2, 3), (1, 2, 3), (1, 2, 3), (1, 2, 3), (1, 2), (1, 2),
                                   (True, False)))
POOL_GRID = [g for g in POOL_GRID if g[6] or (g[2] <= g[0] and g[3] <= g[1])]


def _pool_family(op: str, c: int) -> Callable[[tuple], Case]:
    def build(g) -> Case:
        h, w, kh, kw, sh, sw, same = g
        r = np.random.default_rng(zlib.crc32(repr((op, g)).encode()))
        attrs = {"ksize": (1, kh, kw, 1), "strides": (1, sh, sw, 1),
                 "padding": "SAME" if same else "VALID"}
        x = _distinct(r, (2, h, w, c))
        label = f"{op} g={g} c={c}"
        if op in ("MaxPool", "AvgPool"):
            return Case(label, op, (x,), attrs)
        pool = op[:-4]
        fwd = single_node(pool, [x], **attrs)
        y = np.asarray(reference_outputs(fwd, [x])[0])
        dy = _ints(r, y.shape)
        if op == "MaxPoolGrad":
            return Case(label, op, (x, y, dy), attrs)
        return Case(label, op, (dy,), {**attrs, "orig_input_shape": x.shape})
    return build


# small shapes for the row reductions and scatters
SHAPE_GRID = list(itertools.product((1, 2, 3, 5), (1, 2, 3, 9, 17)))


def _bias_add_grad(g) -> Case:
    r = np.random.default_rng(g[0] * 31 + g[1])
    return Case(f"BiasAddGrad {g}", "BiasAddGrad", (_ints(r, (2, *g)),), {})


def _sum(axes: tuple[int, ...]) -> Callable[[tuple], Case]:
    def build(g) -> Case:
        r = np.random.default_rng(g[0] * 31 + g[1])
        return Case(f"Sum{axes} {g}", "Sum", (_ints(r, (g[0], 2, g[1])),),
                    {"axes": axes, "keepdims": False})
    return build


def _segment_sum(g) -> Case:
    r = np.random.default_rng(g[0] * 31 + g[1])
    rows, inner = g
    ids = r.integers(-1, 3, 2 * rows).astype(np.int32)
    return Case(f"UnsortedSegmentSum {g}", "UnsortedSegmentSum",
                (_ints(r, (2 * rows, inner)), ids), {"num_segments": 3})


def _pad_grad(mode: str) -> Callable[[tuple], Case]:
    def build(g) -> Case:
        r = np.random.default_rng(g[0] * 31 + g[1])
        h, w = g
        pads = (0, 0, min(1, h - 1), min(2, h - 1), min(2, w - 1), min(1, w - 1))
        if mode == "SYMMETRIC":
            pads = (0, 0, min(1, h), min(2, h), min(2, w), min(1, w))
        grad = _ints(r, (2, h + pads[2] + pads[3], w + pads[4] + pads[5]))
        return Case(f"PadGrad/{mode} {g}", "PadGrad", (grad,), {"paddings": pads,
                                                                  "mode": mode})
    return build


FAMILIES: dict[str, tuple[list, Callable[[tuple], Case], list]] = {}
for _op, _dw in (("Conv2D", False), ("Conv2DBackpropInput", False),
                 ("Conv2DBackpropFilter", False), ("DepthwiseConv2dNative", True),
                 ("DepthwiseConv2dNativeBackpropInput", True),
                 ("DepthwiseConv2dNativeBackpropFilter", True)):
    # (all 20 known-bad geometries for the depthwise ops, every fourth for the others)
    _bad = KNOWN_BAD if _dw else KNOWN_BAD[::4]
    FAMILIES[_op] = (CONV_GRID, _conv_family(_op, _dw, True, 1, 1), _bad)
    FAMILIES[f"{_op}/wide"] = (CONV_GRID, _conv_family(_op, _dw, True, 3, 2), _bad)
    if not _dw:
        FAMILIES[f"{_op}/im2col"] = (CONV_GRID, _conv_family(_op, _dw, False, 1, 1), _bad)
for _op in ("MaxPool", "AvgPool", "MaxPoolGrad", "AvgPoolGrad"):
    FAMILIES[_op] = (POOL_GRID, _pool_family(_op, 1), [])
    FAMILIES[f"{_op}/wide"] = (POOL_GRID, _pool_family(_op, 10), [])
FAMILIES["BiasAddGrad"] = (SHAPE_GRID, _bias_add_grad, [])
FAMILIES["Sum/rows"] = (SHAPE_GRID, _sum((0,)), [])
FAMILIES["Sum/outer"] = (SHAPE_GRID, _sum((0, 2)), [])
FAMILIES["UnsortedSegmentSum"] = (SHAPE_GRID, _segment_sum, [])
FAMILIES["PadGrad/REFLECT"] = (SHAPE_GRID, _pad_grad("REFLECT"), [])
FAMILIES["PadGrad/SYMMETRIC"] = (SHAPE_GRID, _pad_grad("SYMMETRIC"), [])


def family_cases(family: str, full: bool = FULL) -> list[Case]:
    """The family's cases: its whole grid, or a fixed sample and the known-bad ones."""
    grid, build, always = FAMILIES[family]
    chosen = list(grid) if full else sorted(
        set(random.Random(family).sample(grid, min(SAMPLE, len(grid)))) | set(always))
    return [build(g) for g in chosen]


# ------------------------------------------------------------------- compile and check

@contextlib.contextmanager
def opt_level(level: str) -> Iterator[None]:
    """Run the cpu pipeline at `level` (the JIT's cache keys name it)."""
    old = os.environ.get("TW_LLVM_OPT")
    os.environ["TW_LLVM_OPT"] = level
    try:
        yield
    finally:
        if old is None:
            del os.environ["TW_LLVM_OPT"]
        else:
            os.environ["TW_LLVM_OPT"] = old


@contextlib.contextmanager
def direct_paths(on: bool) -> Iterator[None]:
    old = cpu_nn.DIRECT
    cpu_nn.DIRECT = on
    try:
        yield
    finally:
        cpu_nn.DIRECT = old


def wrong_cases(cases: list[Case], level: str) -> list[str]:
    """Compile `cases` as the node functions of one module at `level` and return the
    labels (with the worst error) of those that differ from the reference target."""
    module = ir.Module(name="sums_grid")
    nodes = []
    for i, case in enumerate(cases):
        node = single_node(case.op, list(case.arrays), **case.attrs)
        assert find_lowering(node) is not None, f"no native lowering for {case.label}"
        with direct_paths(case.direct):
            emit_node_function(module, node, f"case{i}")
        nodes.append(node)
    from tensorweave.targets.cpu.blas import register_blas
    register_blas()
    names = [f"case{i}" for i in range(len(cases))]
    with opt_level(level):
        compiled = jit.compile_module(str(module), names, loop_vectorize=True)
    proto = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
    wrong = []
    for i, (case, node) in enumerate(zip(cases, nodes)):
        ins = [np.ascontiguousarray(a) for a in case.arrays]
        outs = [np.full(tuple(int(d) for d in v.type.shape), np.nan, v.type.dtype.np)
                for v in node.outputs]
        fn = proto(compiled.address(f"case{i}"))
        status = fn((ctypes.c_void_p * max(1, len(ins)))(*[a.ctypes.data for a in ins]),
                    (ctypes.c_void_p * max(1, len(outs)))(*[o.ctypes.data for o in outs]))
        if status:
            wrong.append(f"{case.label}: status {status}")
            continue
        for got, want in zip(outs, reference_outputs(node, ins)):
            want = np.asarray(want)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-6,
                                                          equal_nan=True):
                err = np.nanmax(np.abs(got.astype(np.float64) - want)) if got.size else 0
                wrong.append(f"{case.label}: max error {err}")
                break
    return wrong


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_tiny_cases_match_the_reference_at_every_level(family, level):
    wrong = wrong_cases(family_cases(family), level)
    assert not wrong, f"{len(wrong)} wrong at O{level}:\n" + "\n".join(wrong[:20])


def test_the_known_bad_geometries_are_in_every_conv_sample():
    # (the cases that exposed the bug stay in the suite's sample of each conv family)
    for family, (_, _, always) in FAMILIES.items():
        if family.startswith(("Conv2D", "Depthwise")):
            labels = {c.label for c in family_cases(family, full=False)}
            assert len(always) == (20 if family.startswith("Depthwise") else 5)
            assert all(any(f"g={g} " in lab for lab in labels) for g in always)


if __name__ == "__main__":
    # the whole grid: python -m tests.test_review_sums_grid [FAMILY ...]
    # (TW_SUMS_LEVELS=2 for one level; TW_SUMS_DILATION=1 for dilation 1 only)
    import sys
    levels = tuple(os.environ.get("TW_SUMS_LEVELS", "".join(LEVELS)))
    for fam in sys.argv[1:] or list(FAMILIES):
        cases = family_cases(fam, full=True)
        if os.environ.get("TW_SUMS_DILATION") == "1":
            cases = [c for c in cases if c.attrs.get("dilations", (1, 1, 1, 1))[1] == 1]
        for lvl in levels:
            bad = wrong_cases(cases, lvl)
            print(f"{fam} O{lvl}: {len(bad)} wrong of {len(cases)}", flush=True)
            for line in bad[:40]:
                print("   ", line, flush=True)
