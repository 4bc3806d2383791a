"""Dataflow executor benchmarks: per-op overhead, and the speed-up of two independent
heavy branches on two logical CPU devices versus one.

    python benchmarks/executor.py [--quick]

Prints two tables. Overhead: a chain of N cheap ops (``Neg`` on a scalar) run by the
dataflow executor and by the in-order reference evaluation; the per-op cost is the
slope between the shortest and the longest chain, and "executor" subtracts the time
of calling the same prepared kernels in a plain loop. Branches: two chains of
1024x1024 MatMuls, the second under ``tw.device("/cpu:1")``, compiled with 1 and with 2
logical CPU devices, with the BLAS library's own threads on and limited to one.
Inter-op parallelism already runs the two branches at once on a single device, so
"2 devices vs 1" stays near 1 on one machine; "vs in order" compares with running
every op one after the other (the reference evaluation). Timings are medians of
repeated runs; on a shared machine they vary.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from timing import median_time  # noqa: E402

import tensorweave as tw  # noqa: E402
from tensorweave.compiler.ir import Graph  # noqa: E402
from tensorweave.compiler.pipeline import run_pipeline  # noqa: E402
from tensorweave.compiler.types import TensorType  # noqa: E402
from tensorweave.runtime.dataflow import DataflowExecutable  # noqa: E402
from tensorweave.runtime.kernel_context import StepContext  # noqa: E402
from tensorweave.runtime.resources import ResourceManager  # noqa: E402
from tensorweave.targets.reference import ReferenceExecutable  # noqa: E402

# ----------------------------------------------------------------------- overhead

def chain_graph(n: int) -> Graph:
    g = Graph(f"chain{n}")
    x = g.add_arg(TensorType("f32", ()))
    for _ in range(n):
        x = g.add_node("Neg", [x]).outputs[0]
    g.set_results([x])
    return g


def kernels_only(exe: DataflowExecutable, x: np.ndarray) -> Callable[[], object]:
    """The chain's prepared kernels called in a plain loop: no scheduling at all."""
    ex = exe.executors[0]
    step = StepContext()

    def run():
        with np.errstate(all="ignore"):
            v = x
            for k in ex.kernels:
                v = k([v], ex.resources, ex.counters, step)[0]
        return v

    return run


def overhead_table(quick: bool) -> list[tuple]:
    sizes = [1, 10, 100, 1000]
    repeats = 5 if quick else 15
    x = np.float32(1.5)
    rows = []
    for n in sizes:
        g = chain_graph(n)
        exe = DataflowExecutable(g, resources=ResourceManager())
        ref = ReferenceExecutable(g, ResourceManager())
        inner = max(1, 2000 // n)
        rows.append((n, median_time(lambda exe=exe: exe(x), repeats, inner),
                     median_time(lambda ref=ref: ref(x), repeats, inner),
                     median_time(kernels_only(exe, np.asarray(x)), repeats, inner)))
    return rows


def print_overhead(rows: list[tuple]) -> None:
    print("Executor overhead: a chain of N Neg ops on an f32 scalar (one partition)")
    print(f"{'N':>6} {'dataflow us/step':>17} {'reference us/step':>18} {'kernels us/step':>16}")
    for n, df, ref, k in rows:
        print(f"{n:>6} {df * 1e6:>17.1f} {ref * 1e6:>18.1f} {k * 1e6:>16.1f}")
    (n0, df0, ref0, k0), (n1, df1, ref1, k1) = rows[0], rows[-1]
    per = lambda a, b: (b - a) / (n1 - n0) * 1e6  # noqa: E731
    print(f"per op (slope N={n0}..{n1}): dataflow {per(df0, df1):.2f} us, reference "
          f"{per(ref0, ref1):.2f} us, kernel call alone {per(k0, k1):.2f} us")
    print(f"  => scheduling overhead of the dataflow executor: "
          f"{per(df0, df1) - per(k0, k1):.2f} us per op; fixed cost per step "
          f"{(df0 - k0) * 1e6:.1f} us")
    print()


# ----------------------------------------------------------------------- branches

def branches_fn(depth: int) -> Callable:
    def f(a, b):
        x, y = a, b
        with tw.device("/cpu:0"):
            for _ in range(depth):
                x = tw.matmul(x, a)
        with tw.device("/cpu:1"):
            for _ in range(depth):
                y = tw.matmul(y, b)
        return x, y
    return f


def compile_on(devices: int, depth: int, a: np.ndarray, b: np.ndarray):
    """The traced function and its executable, compiled with `devices` CPU devices."""
    tw.config.set_logical_devices("CPU", devices)
    try:
        cf = tw.compile(branches_fn(depth)).get_concrete_function(a, b)
        return cf, cf.executable  # compile (place) while the devices exist
    finally:
        tw.config.set_logical_devices("CPU", 1)


def branch_rows(size: int, depth: int, repeats: int) -> list[tuple]:
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)
    b = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)
    cf, one = compile_on(1, depth, a, b)
    _, two = compile_on(2, depth, a, b)
    assert len(one.partitions) == 1 and len(two.partitions) == 2
    sequential = ReferenceExecutable(run_pipeline(cf.graph), ResourceManager())
    results = [r.tobytes() for r in two(a, b)]
    assert results == [r.tobytes() for r in one(a, b)], "devices changed results"
    rows = []
    for name, run in (("reference, in order (1 thread)", lambda: sequential(a, b)),
                      ("dataflow, 1 device", lambda: one(a, b)),
                      ("dataflow, 2 devices", lambda: two(a, b))):
        rows.append((name, median_time(run, repeats)))
    return rows


def blas_limits(threads: int | None):
    """A context limiting BLAS's own threads to `threads` (None: leave them)."""
    if threads is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=threads, user_api="blas")


def print_branches(size: int, depth: int, quick: bool) -> None:
    repeats = 3 if quick else 7
    print(f"Two independent branches of {depth} MatMuls of {size}x{size} f32 "
          f"({os.cpu_count()} cores)")
    for blas in (None, 1):
        with blas_limits(blas):
            rows = branch_rows(size, depth, repeats)
        print(f"  BLAS threads: {'default' if blas is None else blas}")
        one = dict(rows)["dataflow, 1 device"]
        in_order = dict(rows)["reference, in order (1 thread)"]
        for name, t in rows:
            print(f"    {name:<32} {t * 1e3:9.1f} ms   x{in_order / t:4.2f} vs in order   "
                  f"x{one / t:4.2f} vs 1 device")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller matrices")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=4)
    args = parser.parse_args()
    print_overhead(overhead_table(args.quick))
    print_branches(256 if args.quick else args.size, args.depth, args.quick)


if __name__ == "__main__":
    main()
