"""Review: the cpu target's ``noalias`` marks hold for every call that can share memory.

The fused kernels' bodies (`codegen.KernelBuilder._body`) and the generated GEMM
(`lowering._gemm_generated`) mark their buffer arguments ``noalias``: a promise to LLVM
that no two of them overlap while one is written. The step planner never overlaps them
(workspace first fit frees a value only for definitions *after* its last use; results
never share a root; variables are updated by functions without ``noalias``), but one
call does pass the same buffer twice: ``donate_argnums`` computes an elementwise result
into the argument it reads (`allocator.donation_pairs`), so the fused body gets the same
pointer as an input and as its output. Those two may therefore not be ``noalias``
(`test_an_input_the_output_may_be_computed_over_is_not_noalias` failed before: every
buffer argument was).

The other tests are guards: the cases where buffers could overlap (the same array as
two arguments, donated arguments, in-place variable updates reading the variable,
``x = x + x`` under workspace reuse, reshape / identity results, reused result buffers,
loop variables swapped) compared with the reference target.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compiler.dtypes import float32
from tensorweave.targets.cpu.codegen import Instr, Layout, Program, build_kernel


def _body_params(text: str) -> list[str]:
    """The parameter list of the kernel's body, one entry per parameter."""
    m = re.search(r'define internal i32 @"?[\w.]+\.body"?\(([^)]*)\)', text)
    assert m, text[:2000]
    return [p.strip() for p in m.group(1).split(",")]


def test_an_input_the_output_may_be_computed_over_is_not_noalias():
    # out = x * s + b over rows: x spans the loop (a donated x is computed over in
    # place), s is a broadcast scalar and b a broadcast row (never the output's memory)
    program = Program((float32, float32, float32), (
        Instr("Mul", (), (0, 1), (float32, float32), float32),
        Instr("Add", (), (3, 2), (float32, float32), float32)), (4,))
    layout = Layout(2, 0, ((True, True), (False, False), (False, True), (True, True)))
    params = _body_params(build_kernel(program, layout, width=8))
    x, s, b, out = params[:4]
    assert "noalias" not in x and "noalias" not in out, params
    # (broadcast operands are never written while the body runs: still noalias, so
    # their loads stay out of the inner loop)
    assert "noalias" in s and "noalias" in b, params


def _ref(fn, *args):
    return tw.compile(fn, target="reference")(*[np.array(a) for a in args])


def _close(got, want):
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
        return
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


SAME_ARRAY_TWICE = {
    "elementwise": lambda x, y: x * y + y,
    "product": lambda x, y: tw.matmul(x, y) + x,
    "reduction": lambda x, y: x - tw.reduce_sum(y, axis=1, keepdims=True),
    "transposed": lambda x, y: tw.transpose(x) * y,
}


@pytest.mark.parametrize("case", sorted(SAME_ARRAY_TWICE))
@pytest.mark.parametrize("donate", [False, True])
def test_the_same_array_as_two_arguments(case, donate):
    fn = SAME_ARRAY_TWICE[case]
    x = _data((16, 16))
    keep = x.copy()
    want = _ref(fn, keep, keep)
    f = tw.compile(fn, target="cpu", donate_argnums=0 if donate else ())
    _close(f(x, x), want)
    # (shared with the other argument: never donated, the caller's array is untouched)
    assert x.flags.writeable and np.array_equal(x, keep)


DONATED = {
    "read_twice": lambda x: x * x + x,
    "read_reversed": lambda x: x + tw.reverse(x, [0]),
    "read_transposed": lambda x: tw.transpose(x) + x,
    "product_of_itself": lambda x: tw.matmul(x, x) - x,
    "reshaped_back": lambda x: tw.reshape(tw.reshape(x, [-1]) * 2.0, [16, 16]) + x,
    "doubled_three_times": lambda x: ((x + x) + (x + x)) * x,
}


@pytest.mark.parametrize("case", sorted(DONATED))
def test_donated_arguments_read_more_than_once(case):
    fn = DONATED[case]
    f = tw.compile(fn, target="cpu", donate_argnums=0)
    x = _data((16, 16), seed=1) * 0.5
    for _ in range(3):  # x = f(x): each call may compute over its argument's memory
        want = _ref(fn, x)
        y = f(x)
        _close(y, want)
        if case in ("read_twice", "doubled_three_times"):  # (the overlap is exercised:
            assert np.may_share_memory(x, y)  # one elementwise body, input = output)
        x = y


def test_donated_results_that_are_reshapes_or_identities():
    def fn(x, y):
        z = x * y + 1.0
        return z, tw.reshape(z, [-1]), tw.identity(z), x, tw.reshape(x, [4, 64])

    f = tw.compile(fn, target="cpu", donate_argnums=0)
    x, y = _data((16, 16), 2), _data((16, 16), 3)
    want = _ref(fn, x, y)
    got = f(x, y)
    _close(got, want)
    # the five results are distinct arrays: writing one changes no other
    got[0][...] = 7.0
    _close(got[1:], want[1:])


def test_variables_updated_from_their_own_value():
    v0 = _data((8, 8), 4)
    v = tw.Variable(v0)

    def step():
        v.assign_add(v * 2.0)              # the update's source reads the variable
        v.assign_sub(0.25 * v)             # a scaled update of the variable by itself
        v.assign(tw.reverse(v, [1]) + v)   # read at other indices than written
        v.assign(tw.transpose(v))
        v.assign(tw.matmul(v, v) * 0.01)
        return v.read_value() + 0.0

    want = v0 * 3.0
    want = want - 0.25 * want
    want = want[:, ::-1] + want
    want = want.T
    want = (want.astype(np.float64) @ want.astype(np.float64)).astype(np.float32) * 0.01
    got = tw.compile(step, target="cpu")()
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(v.numpy(), want, rtol=1e-5, atol=1e-5)


def test_values_overwritten_as_they_die():
    def fn(x):
        for _ in range(4):  # each x dies where the next is defined: workspace reuse
            x = x + x
            x = tw.reverse(x, [1]) - x * 0.5
            x = tw.transpose(x) + tw.reduce_sum(x, axis=0, keepdims=True)
        return x

    x = _data((12, 12), 5)
    _close(tw.compile(fn, target="cpu")(x), _ref(fn, x))


def test_results_fed_back_while_reused_buffers_are_live():
    # 512 * 512 float32 is 1 MiB: results come from the caching allocator, and a result
    # buffer nobody holds is reused by the next call
    f = tw.compile(lambda x: x * 0.5 + tw.reverse(x, [1]), target="cpu")
    x = _data((512, 512), 6)
    want = x
    for _ in range(3):
        want = want * 0.5 + want[:, ::-1]
        x = f(x)  # the argument is the last call's result
        _close(x, want)
    want = want * 0.5 + want[:, ::-1]
    want = want * 0.5 + want[:, ::-1]
    _close(f(f(x)), want)


def test_loop_variables_swapped_and_read_reversed():
    def fn(a, b):
        def body(i, x, y):
            return i + 1, y + tw.reverse(x, [0]), x * 0.5

        return tw.while_loop(lambda i, x, y: i < 5, body, (tw.constant(0), a, b))[1:]

    a, b = _data((6, 4), 7), _data((6, 4), 8)
    _close(tw.compile(fn, target="cpu")(a, b), _ref(fn, a, b))
