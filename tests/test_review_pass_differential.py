"""The graph passes against the graph they rewrite: the fuzzer's random programs
(`tests/differential.py`), with some or all of their arguments turned into constants,
run as traced (no pass at all: `ReferenceExecutable` on the trace) and through the whole
pipeline on the reference and cpu targets.

A wrong rewrite in the ``optimized`` stage (constant folding, simplification, CSE,
gathers from variables, DCE) or in placement gives the same wrong numbers on every
target, so only a run of the un-rewritten graph catches it. Folding evaluates with the
reference kernels, and the other rewrites change no arithmetic, so the reference target
must give the traced graph's results bit for bit (NaN for NaN); the cpu target within
the program's own bounds. Programs with tw.cond / tw.while_loop also run with their
control flow lowered (Switch, Merge, Enter, Exit ...), and two tests spread the ops over
three logical CPUs (placement, Send/Recv pairs, fusion on each device).

``TW_FUZZ_EXAMPLES`` and ``TW_FUZZ_RANDOM`` work as in `tests/test_differential.py`.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.targets.reference import ReferenceExecutable
from tests import differential as D

_RANDOM = os.environ.get("TW_FUZZ_RANDOM", "") not in ("", "0")


def _examples(n: int):
    n = int(os.environ.get("TW_FUZZ_EXAMPLES", n))
    return settings(max_examples=n, deadline=None, derandomize=not _RANDOM, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def with_constants(prog: D.Program, keep: set[int]) -> D.Program:
    """`prog` with every argument whose index is not in `keep` turned into a constant of
    the same value (so the passes see constant subgraphs everywhere)."""
    index = {}
    instrs, args, specs = [], [], []
    for ins in prog.instrs:
        if ins.op == "arg" and ins.params["index"] not in keep:
            value = np.array(prog.args[ins.params["index"]], copy=True, order="C")
            instrs.append(D.Instr("const", (), {"value": value}))
            continue
        if ins.op == "arg":
            i = ins.params["index"]
            index[i] = len(args)
            args.append(prog.args[i])
            specs.append(prog.arg_specs[i])
            ins = D.Instr("arg", (), {"index": index[i]})
        instrs.append(ins)
    return dataclasses.replace(prog, instrs=instrs, args=args, arg_specs=specs)


def traced_results(prog: D.Program) -> list[np.ndarray]:
    """`prog` traced and run as traced, with no pass, on the reference kernels (fresh
    variables); its outputs, then its variables' values."""
    prog.make_vars()
    graph = tw.compile(prog).get_concrete_function(*prog.args).graph
    outs = [np.asarray(o) for o in ReferenceExecutable(graph)(*prog.args)]
    return outs + [v.numpy() for v in prog.variables]


def compiled_results(prog: D.Program, target: str, **compile_kw) -> list[np.ndarray]:
    """`prog` through the whole pipeline on `target` (fresh variables); its outputs,
    then its variables' values."""
    prog.make_vars()
    # (a deadlock is an error after the timeout, not a hung test)
    return D.run(prog, target, timeout=120, **compile_kw) + [v.numpy() for v in prog.variables]


def check(prog: D.Program, lowered: bool = False) -> None:
    """Both targets after the passes against the traced graph (`lowered`: also with
    tw.cond and tw.while_loop lowered to Switch / Merge / Enter / Exit ...)."""
    raw = traced_results(prog)
    exact = [0.0] * len(raw)
    tol = prog.tolerances() + exact[len(prog.outputs):]
    for kw in ({}, {"lower_control_flow": True}) if lowered else ({},):
        what = " (lowered control flow)" if kw else ""
        D.compare(compiled_results(prog, "reference", **kw), raw, exact,
                  "reference after the passes vs as traced" + what, prog)
        D.compare(compiled_results(prog, "cpu", **kw), raw, tol,
                  "cpu vs the traced graph" + what, prog)


@st.composite
def constant_programs(draw, **kw) -> D.Program:
    prog = draw(D.programs(**kw))
    keep = draw(st.sets(st.sampled_from(range(len(prog.args))), max_size=len(prog.args) - 1)
                ) if len(prog.args) > 1 else set()
    return with_constants(prog, keep)


def on_devices(prog: D.Program, devices: list[int]) -> D.Program:
    """`prog` with instruction k run under ``tw.device(f"/cpu:{devices[k]}")`` (the op
    names say where: ``add@cpu1``), so values cross devices, and come back, often."""
    instrs = []
    for ins, d in zip(prog.instrs, devices):
        if ins.op in D.OPS and ins.op not in ("cond", "while", "scan"):
            name = f"{ins.op}@cpu{d}"
            if name not in D.OPS:
                D.OPS[name] = _placed(D.OPS[ins.op], f"/cpu:{d}")
            ins = D.Instr(name, ins.args, ins.params)
        instrs.append(ins)
    return dataclasses.replace(prog, instrs=instrs)


def _placed(fn, device: str):
    def placed(*args, **kwargs):
        with tw.device(device):
            return fn(*args, **kwargs)
    return placed


@st.composite
def placed_programs(draw, **kw) -> D.Program:
    # (few constants: a subgraph of constants folds into one, wherever it was placed)
    prog = draw(D.programs(**kw))
    # runs of `period` instructions alternate between CPU:0 and CPU:1 (a value read
    # by the next run and by the one after it goes and comes back), now and then CPU:2
    period = draw(st.integers(1, 3))
    devices = [2 if draw(st.integers(0, 5)) == 0 else (k // period) % 2
               for k in range(len(prog.instrs))]
    return on_devices(prog, devices)


@st.composite
def duplicated_programs(draw, **kw) -> D.Program:
    """A program (some arguments constant) followed by copies of some of its
    instructions, each copy an output too: CSE merges each copy with its original (and
    fusion then computes one value for two outputs)."""
    prog = draw(constant_programs(**kw))
    ks = [k for k, ins in enumerate(prog.instrs)
          if ins.op not in ("arg", "const") and not ins.op.startswith("var_")]
    picked = draw(st.lists(st.sampled_from(ks), max_size=4)) if ks else []
    instrs, vals = list(prog.instrs), list(prog.vals)
    for k in picked:
        instrs.append(D.Instr(prog.instrs[k].op, prog.instrs[k].args,
                              dict(prog.instrs[k].params)))
        vals.append(prog.vals[k])
    outputs = prog.outputs + list(range(len(prog.instrs), len(instrs)))
    return dataclasses.replace(prog, instrs=instrs, vals=vals, outputs=outputs,
                               structure="list")


@_examples(30)
@given(prog=constant_programs(max_ops=12, big=False))
def test_folded_programs_match_the_traced_graph(prog: D.Program) -> None:
    """Most arguments constant: whole subgraphs fold, the rest simplifies around them."""
    check(prog)


@_examples(20)
@given(prog=duplicated_programs(max_ops=12, big=False))
def test_duplicated_instructions_match_the_traced_graph(prog: D.Program) -> None:
    """Repeated computations (merged by CSE) returned next to their originals."""
    check(prog)


@_examples(20)
@given(prog=constant_programs(max_ops=12, big=False, specials=True))
def test_folded_programs_with_nan_inf_and_signed_zeros(prog: D.Program) -> None:
    """Constants holding NaN, +-inf and -0.0: folding and the ``x + 0`` / ``x * 1``
    rules keep every special value where the traced graph has it."""
    check(prog)


@_examples(15)
@given(prog=constant_programs(max_ops=10, mode="control", big=False))
def test_folded_control_flow_programs(prog: D.Program) -> None:
    """Constants captured by tw.cond branches, tw.while_loop and tw.scan bodies (folded
    inside the regions from the outer graph's constants), also lowered to dataflow
    control flow."""
    check(prog, lowered=True)


@_examples(15)
@given(prog=D.programs(max_ops=12, mode="vars", big=False))
def test_variable_programs_match_the_traced_graph(prog: D.Program) -> None:
    """Reads and assignments of variables: nothing folds or merges across them (also
    with the regions lowered to dataflow control flow)."""
    check(prog, lowered=True)


# mostly the elementwise ops and reductions that the fusion pass clusters
FUSIBLE_KINDS = ["unary", "binary", "binary", "where", "cast", "compare", "reduce", "layout"]


@_examples(15)
@given(prog=placed_programs(max_ops=12, big=False, ops=FUSIBLE_KINDS))
def test_programs_spread_over_three_cpus(prog: D.Program) -> None:
    """Every op on one of three logical CPUs at random: placement, Send/Recv pairs at
    each crossing (values that go and come back), fusion of what stays on a device."""
    before = len(tw.config.list_logical_devices("CPU"))
    tw.config.set_logical_devices("CPU", 3)
    try:
        check(prog)
    finally:
        tw.config.set_logical_devices("CPU", before)


@_examples(10)
@given(prog=st.one_of(placed_programs(max_ops=10, big=False, mode="control"),
                      placed_programs(max_ops=10, big=False, mode="vars")))
def test_control_flow_and_variables_spread_over_three_cpus(prog: D.Program) -> None:
    """tw.cond / tw.while_loop / tw.scan and variable reads and assignments whose ops
    sit on three logical CPUs (regions capture values from other devices; variables
    are read and assigned from several), functional and lowered."""
    before = len(tw.config.list_logical_devices("CPU"))
    tw.config.set_logical_devices("CPU", 3)
    try:
        check(prog, lowered=True)
    finally:
        tw.config.set_logical_devices("CPU", before)
