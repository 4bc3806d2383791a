"""Random small programs for differential testing (`tests/test_differential.py`).

A program is a list of instructions over a growing list of values: the arguments first,
then one value per instruction. The generator knows every value's shape and dtype, so it
only builds programs that trace, and it carries, per value, a bound on its magnitude
(``mag``) and a bound on how far two *correct* implementations may be apart (``err``):

* arguments are exact: floats are multiples of 1/4 in [-4, 4], ints in [-8, 8];
* ops that round nothing (add, multiply, max, layout ops, sums of such values while every
  partial sum is representable: ``mag / gran`` below 2**(mantissa bits)) keep ``err == 0``,
  so their results must agree *bitwise* whatever order a target sums in;
* an op that rounds adds ``ulps * eps * mag`` (transcendentals 4 ulps: libm and the
  reference's NumPy differ by a few), propagated through later ops by their Lipschitz
  bounds (sum over n: n times, product: ``m1*e2 + m2*e1``, ...);
* ops whose result jumps with a tiny change of their input (comparisons, casts to int or
  bool, floor/ceil/round/sign, argmax, floordiv) only take values with ``err == 0``: a
  legitimate last-bit difference must never turn into a different branch of a ``where``.

So the tolerance of every comparison is derived, per dtype, from the program itself:
``atol = 4 * err`` (bounds are worst cases, the factor covers the few places they are
estimates), ``rtol = 0``; exact values and ints compare equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.frontend import nest

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
I32, I64, BOOL = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_)
FLOATS = (F32, F64)
INTS = (I32, I64)
EPS = {F32: 2.0 ** -23, F64: 2.0 ** -52}
MANT = {F32: 24, F64: 53}
MAX_MAG = 1e4            # keeps rounding errors (relative to mag) meaningful
MAX_INT = 2 ** 30        # int32 results never overflow
MAX_ELEMS = 1_100_000    # no op's result is larger than this (time)
VAR_BOUND = 1e6          # |a variable| after regions assigned it (exact: f64 or int32)


@dataclass(frozen=True)
class Val:
    """What the generator knows about one value of a program."""
    shape: tuple[int, ...]
    dtype: np.dtype
    mag: float = 0.0      # |x| <= mag
    err: float = 0.0      # |target - reference| <= err (0: exact, must be bitwise)
    gran: float = 1.0     # exact floats are multiples of gran

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def exact(self) -> bool:
        return self.err == 0.0


@dataclass
class Instr:
    """One instruction: ``values[k] = OPS[op](*values[args], **params)`` (``arg``: the
    program's argument ``params["index"]``)."""
    op: str
    args: tuple[int, ...]
    params: dict = field(default_factory=dict)

    def text(self, out: int) -> str:
        ps = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        a = ", ".join(f"v{i}" for i in self.args)
        return f"v{out} = {self.op}({a}{', ' if a and ps else ''}{ps})"


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        if v.size <= 12:
            return f"np.array({v.tolist()!r}, {v.dtype.name!r})"
        return f"<{v.dtype.name}{list(v.shape)}>"
    return repr(v)


@dataclass
class Program:
    """A random program: its arguments' values, its instructions and the outputs."""
    args: list[np.ndarray]
    vals: list[Val]
    instrs: list[Instr]
    outputs: list[int]
    var_inits: list[np.ndarray] = field(default_factory=list)
    arg_specs: list[tuple[dict, str]] = field(default_factory=list)  # value range, layout
    # what the function returns: "list", "tuple", "dict" or (one output) "single"
    structure: str = "list"
    # the tw.Variables the program reads and assigns (one set per target: `make_vars`)
    variables: list[Any] = field(default_factory=list, repr=False)

    def fresh_args(self, seed: int) -> list[np.ndarray]:
        """New values for the arguments: same shapes, dtypes, value ranges and layouts."""
        rng = np.random.default_rng(seed)
        return [_layout(_array(rng, a.shape, a.dtype, **kw)[0], layout)
                for a, (kw, layout) in zip(self.args, self.arg_specs)]

    def remapped(self, sizes: dict[int, int], seed: int) -> list[np.ndarray]:
        """New arguments whose dims of size d are sizes.get(d, d) (`sizes` injective, 0
        and 1 kept: broadcasting stays valid), for programs of GENERIC ops only."""
        rng = np.random.default_rng(seed)
        return [_layout(_array(rng, tuple(sizes.get(d, d) for d in a.shape), a.dtype,
                               **kw)[0], layout)
                for a, (kw, layout) in zip(self.args, self.arg_specs)]

    def make_vars(self, variable_class: Any = None) -> list[Any]:
        """Fresh variables at their initial values, used by the next trace
        (`variable_class`: tf.compat.v1.Variable in a v1 Graph; default tw.Variable)."""
        self.variables = [(variable_class or tw.Variable)(np.array(a))
                          for a in self.var_inits]
        return self.variables

    def __call__(self, *xs: Any) -> list[Any]:
        """Trace (or run) the program on `xs` (the arguments)."""
        env: list[Any] = []
        _TRACING_VARS[:] = self.variables
        for ins in self.instrs:
            if ins.op == "arg":
                env.append(xs[ins.params["index"]])
            elif ins.op.startswith("var_"):
                var = self.variables[ins.params["var"]]
                if ins.op == "var_read":
                    env.append(var.read_value())
                elif ins.op == "var_assign":
                    env.append(var.assign(env[ins.args[0]]))
                else:
                    env.append(var.assign_add(env[ins.args[0]]))
            else:
                env.append(OPS[ins.op](*[env[i] for i in ins.args], **ins.params))
        outs = [env[i] for i in self.outputs]
        if self.structure == "single" and len(outs) == 1:
            return outs[0]
        if self.structure == "tuple":
            return tuple(outs)
        if self.structure == "dict":  # (keys sort in output order: nest flattens sorted)
            return {f"o{k}": o for k, o in enumerate(outs)}
        return outs

    def text(self) -> str:
        """The program as readable pseudo-code, for a failure's report."""
        lines = []
        for k, ins in enumerate(self.instrs):
            if ins.op == "arg":
                a = self.args[ins.params["index"]]
                lines.append(f"v{k} = arg{ins.params['index']}: {a.dtype.name}{list(a.shape)}"
                             f" {'C' if a.flags.c_contiguous else 'non-contiguous'}")
            elif ins.op.startswith("var_") and ins.op != "var_read":
                lines.append(f"v{k} = var{ins.params['var']}.{ins.op[4:]}(v{ins.args[0]})")
            elif ins.op == "var_read":
                lines.append(f"v{k} = var{ins.params['var']}.read_value()")
            else:
                lines.append(ins.text(k))
        lines.append("return " + ", ".join(f"v{i}" for i in self.outputs))
        lines += [f"var{k} = tw.Variable({_short(a)})" for k, a in enumerate(self.var_inits)]
        return "\n".join(lines)

    def tolerances(self) -> list[float]:
        """The absolute tolerance of each output (0: must be bitwise equal)."""
        return [4.0 * self.vals[i].err for i in self.outputs]


# ------------------------------------------------------------------ op implementations

def _nz(y):
    """`y` with zeros replaced by ones (a divisor)."""
    return tw.where(tw.equal(y, tw.zeros_like(y)), tw.ones_like(y), y)


OPS: dict[str, Any] = {
    "add": tw.add, "subtract": tw.subtract, "multiply": tw.multiply,
    "maximum": tw.maximum, "minimum": tw.minimum,
    "squared_difference": tw.squared_difference,
    "div_safe": lambda x, y: tw.divide(x, tw.abs(y) + 1),
    "floordiv_nz": lambda x, y: tw.floordiv(x, _nz(y)),
    "floormod_nz": lambda x, y: tw.floormod(x, _nz(y)),
    "equal": tw.equal, "not_equal": tw.not_equal, "less": tw.less,
    "less_equal": tw.less_equal, "greater": tw.greater, "greater_equal": tw.greater_equal,
    "logical_and": tw.logical_and, "logical_or": tw.logical_or,
    "logical_not": tw.logical_not,
    "where": tw.where,
    "negative": tw.negative, "abs": tw.abs, "square": tw.square, "relu": tw.relu,
    "sign": tw.sign, "floor": tw.floor, "ceil": tw.ceil, "round": tw.round,
    "identity": tw.identity,
    "exp": tw.exp, "tanh": tw.tanh, "sigmoid": tw.sigmoid, "sin": tw.sin, "cos": tw.cos,
    "log1p_abs": lambda x: tw.log1p(tw.abs(x)),
    "sqrt_abs": lambda x: tw.sqrt(tw.abs(x)),
    "recip_safe": lambda x: tw.reciprocal(tw.abs(x) + 1),
    "cast": lambda x, dtype: tw.cast(x, dtype),
    "reduce_sum": tw.reduce_sum, "reduce_mean": tw.reduce_mean,
    "reduce_max": tw.reduce_max, "reduce_min": tw.reduce_min,
    "reduce_prod": tw.reduce_prod, "reduce_any": tw.reduce_any,
    "reduce_all": tw.reduce_all,
    "argmax": tw.argmax, "argmin": tw.argmin,
    "matmul": tw.matmul,
    "transpose": tw.transpose, "reshape": tw.reshape, "expand_dims": tw.expand_dims,
    "squeeze": tw.squeeze, "slice": tw.slice, "strided_slice": tw.strided_slice,
    "reverse": tw.reverse, "tile": tw.tile, "broadcast_to": tw.broadcast_to,
    "pad": tw.pad,
    "concat": lambda *xs, axis: tw.concat(list(xs), axis),
    "stack": lambda *xs, axis: tw.stack(list(xs), axis),
    "gather": tw.gather, "one_hot": tw.one_hot,
    "cumsum": tw.cumsum,
    "softmax": tw.nn.softmax, "log_softmax": tw.nn.log_softmax,
    "const": lambda value: tw.constant(value),
    "clip": lambda x, lo, hi: tw.clip_by_value(x, lo, hi),
    "roll": tw.roll,
    "split_part": lambda x, num, axis, part: tw.split(x, num, axis)[part],
    "reduce_logsumexp": tw.reduce_logsumexp,
    "cumprod": tw.math.cumprod,
    "sort": tw.sort,
    "top_k_values": lambda x, k: tw.math.top_k(x, k)[0],
    "top_k_indices": lambda x, k: tw.math.top_k(x, k)[1],
    "einsum": lambda *xs, equation: tw.einsum(equation, *xs),
    "unsorted_segment_sum": tw.math.unsorted_segment_sum,
    "scatter_nd_add": tw.tensor_scatter_nd_add,
    "conv2d": tw.nn.conv2d, "depthwise_conv2d": tw.nn.depthwise_conv2d,
    "max_pool2d": tw.nn.max_pool2d, "avg_pool2d": tw.nn.avg_pool2d,
}

UNARY_EXACT = ("negative", "abs", "square", "relu", "sign", "floor", "ceil", "round",
               "identity")
UNARY_INEXACT = ("exp", "tanh", "sigmoid", "sin", "cos", "log1p_abs", "sqrt_abs",
                 "recip_safe")
BINARY = ("add", "subtract", "multiply", "maximum", "minimum", "squared_difference",
          "div_safe", "floordiv_nz", "floormod_nz")
COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


# ------------------------------------------------------------------------- generation

def _rounded(dtype: np.dtype, mag: float, err: float, gran: float, ulps: float = 1.0,
             exact_op: bool = True) -> float:
    """The error bound of a result of `dtype` with magnitude `mag`, computed from
    operands whose errors give `err`: exact when nothing rounds (ints; floats from exact
    operands whose result is representable: mag/gran below 2**mantissa)."""
    if dtype not in FLOATS:
        return 0.0
    if err == 0.0 and exact_op and gran > 0 and mag / gran < 2.0 ** (MANT[dtype] - 1):
        return 0.0
    return err + ulps * EPS[dtype] * max(mag, 1e-30) * 2


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


SPECIALS = (np.nan, np.inf, -np.inf, -0.0)


def _array(rng, shape, dtype, nonneg=False, lo=None, hi=None, specials=False
           ) -> tuple[np.ndarray, Val]:
    """Random exact values of `dtype` (see the module docstring) and their bounds.
    `specials` (floats): about one element in six is NaN, +-inf or -0.0 instead; the
    bounds describe the finite elements (see `programs(specials=True)`)."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return rng.random(shape) < 0.5, Val(tuple(shape), BOOL, 1.0, 0.0, 1.0)
    if dtype in INTS:
        lo = -8 if lo is None else lo
        hi = 8 if hi is None else hi
        a = rng.integers(0 if nonneg else lo, hi + 1, size=shape).astype(dtype)
        return a, Val(tuple(shape), dtype, float(max(abs(lo), abs(hi))), 0.0, 1.0)
    a = (rng.integers(0 if nonneg else -16, 17, size=shape) / 4).astype(dtype)
    if specials:
        a = np.array(a)  # (a 0-d draw is a NumPy scalar)
        where = rng.random(shape) < 1 / 6
        a[where] = rng.choice(np.array(SPECIALS, dtype), size=int(np.sum(where)))
    return a, Val(tuple(shape), dtype, 4.0, 0.0, 0.25)


def _layout(a: np.ndarray, layout: str) -> np.ndarray:
    """`a` as a C-contiguous, Fortran-ordered or strided (every other element) array."""
    if layout == "F":
        return np.asfortranarray(a)
    if layout == "strided":
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., ::2] = a
        return wide[..., ::2]
    return a


class Builder:
    """Draws one program; `draw` is hypothesis's draw function."""

    def __init__(self, draw, *, max_ops: int, big: bool, allow_empty: bool = True,
                 dtypes: tuple[np.dtype, ...] = (F32, F64, I32, BOOL),
                 ops: list[str] | None = None, allowed: tuple[str, ...] | None = None,
                 generic: bool = False, exact_regions: bool = False,
                 specials: bool = False) -> None:
        self.draw = draw
        self.specials = specials
        self.var_inits: list[np.ndarray] = []
        self.arg_specs: list[tuple[dict, str]] = []
        self.var_vals: list[Val] = []
        self.args: list[np.ndarray] = []
        self.vals: list[Val] = []
        self.instrs: list[Instr] = []
        self.rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
        self.dtypes = dtypes
        self.ops = ops
        self.allowed = allowed
        self.generic = generic
        self.exact_regions = exact_regions
        if big:
            # past the thread-split thresholds (targets/cpu/parallel.py: 2**20 elements
            # of cheap ops, 2**21 work units) and 1 MiB results (allocator.py)
            self.base = draw(st.sampled_from([(2, 300, 130), (513, 520), (70000,),
                                              (4, 130, 129), (260, 1030), (1025, 1031),
                                              (3, 512, 683)]))
        elif draw(st.integers(0, 3)) == 0:  # vector widths and their remainders
            self.base = tuple(draw(st.lists(st.sampled_from([1, 7, 8, 9, 15, 16, 17, 31, 33]),
                                            min_size=1, max_size=3)))
        elif generic:  # distinct dims, so that `Program.remapped` can change them
            self.base = tuple(draw(st.permutations([2, 3, 4, 5])))[:draw(st.integers(1, 4))]
        else:
            rank = draw(st.integers(0, 4))
            side = st.integers(0 if allow_empty else 1, 5) if allow_empty else st.integers(1, 5)
            dims = [draw(st.integers(1, 5)) for _ in range(rank)]
            if allow_empty and rank and draw(st.integers(0, 9)) == 0:
                dims[draw(st.integers(0, rank - 1))] = 0
            del side
            self.base = tuple(dims)
        self.max_ops = max_ops

    # -- values
    def array(self, shape, dtype, **kw) -> tuple[np.ndarray, Val]:
        return _array(self.rng, shape, dtype, **kw)

    def new_arg(self, shape, dtype, **kw) -> int:
        """A new argument (occasionally given as a non-contiguous array) or constant."""
        if self.specials and np.dtype(dtype) in FLOATS:
            kw["specials"] = True
        a, v = self.array(shape, dtype, **kw)
        if not self.generic and self.draw(st.integers(0, 5)) == 0 and a.size <= 64:
            return self.emit(Instr("const", (), {"value": a}), v)
        layout = self.draw(st.sampled_from(["C", "C", "C", "F", "strided"])) \
            if a.ndim >= 1 and a.size else "C"
        a = _layout(a, layout)
        self.arg_specs.append((kw, layout))
        self.args.append(a)
        return self.emit(Instr("arg", (), {"index": len(self.args) - 1}), v)

    def emit(self, ins: Instr, v: Val) -> int | None:
        if (self.allowed is not None and ins.op not in self.allowed
                and ins.op not in ("arg", "const") and not ins.op.startswith("var_")):
            return None
        if not (math.isfinite(v.err) and math.isfinite(v.mag)):
            # an infinite bound (errors compounding through a loop) would make the
            # comparison of this value, and of everything computed from it, vacuous
            return None
        self.instrs.append(ins)
        self.vals.append(v)
        return len(self.vals) - 1

    def pick(self, pred) -> int | None:
        ok = [i for i, v in enumerate(self.vals) if pred(v)]
        if not ok:
            return None
        # prefer recent values: long dependency chains, not a flat bag of inputs
        weights = st.sampled_from(ok[-4:]) if self.draw(st.booleans()) else st.sampled_from(ok)
        return self.draw(weights)

    def partner_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape that broadcasts with `shape` (a suffix, some dims 1, maybe a new
        leading dim)."""
        k = self.draw(st.integers(0, len(shape))) if shape else 0
        out = list(shape[len(shape) - k:]) if k else []
        out = [1 if self.draw(st.integers(0, 3)) == 0 else d for d in out]
        if len(out) < 4 and self.draw(st.integers(0, 5)) == 0:
            out.insert(0, self.draw(st.integers(1, 3)))
        return tuple(out)

    def partner(self, v: Val, dtype, exact: bool = False, **kw) -> int:
        """A value of `dtype` whose shape broadcasts with `v`'s (existing or new)."""
        def ok(w: Val) -> bool:
            b = _broadcast(w.shape, v.shape)
            return (w.dtype == dtype and b is not None and (not exact or w.exact)
                    and int(np.prod(b)) <= MAX_ELEMS)
        if not kw and self.draw(st.booleans()):
            i = self.pick(ok)
            if i is not None:
                return i
        return self.new_arg(self.partner_shape(v.shape), dtype, **kw)

    # -- the program
    def build(self) -> Program:
        first = self.new_arg(self.base, self.draw(st.sampled_from(self.dtypes)))
        del first
        n = self.draw(st.integers(1, self.max_ops))
        tries = 0
        while sum(ins.op != "arg" for ins in self.instrs) < n and tries < 20 * n:
            tries += 1
            kind = self.draw(st.sampled_from(self.ops or GENERATORS_LIST))
            GENERATORS[kind](self)
        # every value nobody uses is an output (no dead code), plus a few more
        used = {a for ins in self.instrs for a in ins.args}
        outs = [k for k, ins in enumerate(self.instrs)
                if k not in used and ins.op not in ("arg", "const")][-6:] or [0]
        for i in self.draw(st.lists(st.sampled_from(range(len(self.vals))), max_size=2)):
            if i not in outs:
                outs.append(i)
        outs = outs[:8]
        structure = self.draw(st.sampled_from(["list", "tuple", "dict", "single"]))
        if structure == "single":
            outs = outs[:1]
        return Program(self.args, self.vals, self.instrs, outs, self.var_inits,
                       self.arg_specs, structure)


def _gen_unary(b: Builder) -> None:
    i = b.pick(lambda v: v.dtype != BOOL)
    if i is None:
        return
    v = b.vals[i]
    floaty = v.dtype in FLOATS
    ops = [o for o in UNARY_EXACT if floaty or o not in ("floor", "ceil", "round")]
    if floaty:
        ops += list(UNARY_INEXACT)
    if not v.exact:  # a jump in the output for a last-bit change of the input
        ops = [o for o in ops if o not in ("sign", "floor", "ceil", "round")]
    op = b.draw(st.sampled_from(ops + ["clip"]))
    m, e, g = v.mag, v.err, v.gran
    if op == "clip":
        lo = b.draw(st.integers(-8, 4)) / (1 if v.dtype not in FLOATS else 2)
        hi = lo + b.draw(st.integers(0, 8))
        if v.dtype not in FLOATS:
            lo, hi = int(lo), int(hi)
        b.emit(Instr(op, (i,), {"lo": lo, "hi": hi}),
               Val(v.shape, v.dtype, max(m, abs(lo), abs(hi)), e, min(g, 0.5)))
        return
    if op in ("negative", "abs", "relu", "identity"):
        out = Val(v.shape, v.dtype, m, e, g)
    elif op == "square":
        if m * m > (MAX_MAG if floaty else MAX_INT):
            return
        out = Val(v.shape, v.dtype, m * m, _rounded(v.dtype, m * m, 2 * m * e + e * e, g * g),
                  g * g)
    elif op == "sign":
        out = Val(v.shape, v.dtype, 1.0, 0.0, 1.0)
    elif op in ("floor", "ceil", "round"):
        out = Val(v.shape, v.dtype, m if math.isinf(m) else math.ceil(m), 0.0, 1.0)
    elif op == "exp":
        if m > 8:
            return
        mo = math.exp(m)
        out = Val(v.shape, v.dtype, mo, _rounded(v.dtype, mo, mo * e, 0, 4, False), 0)
    elif op == "sqrt_abs":
        mo = math.sqrt(m)
        out = Val(v.shape, v.dtype, mo, _rounded(v.dtype, mo, math.sqrt(e), 0, 4, False), 0)
    else:  # Lipschitz-1 (or less) functions bounded by max(1, log1p(m))
        mo = math.log1p(m) if op == "log1p_abs" else 1.0
        out = Val(v.shape, v.dtype, mo, _rounded(v.dtype, mo, e, 0, 4, False), 0)
    b.emit(Instr(op, (i,)), out)


def _gen_binary(b: Builder) -> None:
    i = b.pick(lambda v: v.dtype != BOOL)
    if i is None:
        return
    v = b.vals[i]
    floaty = v.dtype in FLOATS
    ops = [o for o in BINARY if (o != "div_safe" or floaty)
           and (o not in ("floordiv_nz", "floormod_nz") or not floaty)]
    op = b.draw(st.sampled_from(ops))
    j = b.partner(v, v.dtype)
    w = b.vals[j]
    if b.draw(st.booleans()):
        i, j, v, w = j, i, w, v
    shape = _broadcast(v.shape, w.shape)
    if shape is None or int(np.prod(shape)) > MAX_ELEMS:
        return
    m1, m2, e1, e2 = v.mag, w.mag, v.err, w.err
    g = min(v.gran, w.gran)
    if op in ("add", "subtract"):
        m, e = m1 + m2, e1 + e2
    elif op == "multiply":
        m, e, g = m1 * m2, m1 * e2 + m2 * e1 + e1 * e2, v.gran * w.gran
    elif op in ("maximum", "minimum"):
        m, e = max(m1, m2), max(e1, e2)
    elif op == "squared_difference":
        m, e, g = (m1 + m2) ** 2, 2 * (m1 + m2) * (e1 + e2) + (e1 + e2) ** 2, g * g
    elif op == "div_safe":
        m = m1
        e = _rounded(v.dtype, m, e1 + m1 * e2 + 1e-300, 0, 3, False)
        g = 0.0
    else:  # int floordiv / floormod by a non-zero divisor
        m, e = (m1 if op == "floordiv_nz" else m2), 0.0
    if m > (MAX_MAG if floaty else MAX_INT):
        return
    if op != "div_safe":
        e = _rounded(v.dtype, m, e, g)
    b.emit(Instr(op, (i, j)), Val(shape, v.dtype, m, e, g if e == 0 else 0.0))


def _gen_compare(b: Builder) -> None:
    i = b.pick(lambda v: v.exact and v.dtype != BOOL)
    if i is None:
        return
    v = b.vals[i]
    j = b.partner(v, v.dtype, exact=True)
    _emit_bool(b, b.draw(st.sampled_from(COMPARE)), i, j)


def _emit_bool(b: Builder, op: str, i: int, j: int) -> None:
    """``op(v_i, v_j)`` with a bool result, unless their broadcast is too big."""
    shape = _broadcast(b.vals[i].shape, b.vals[j].shape)
    if shape is not None and int(np.prod(shape)) <= MAX_ELEMS:
        b.emit(Instr(op, (i, j)), Val(shape, BOOL, 1.0, 0.0, 1.0))


def _gen_logical(b: Builder) -> None:
    i = b.pick(lambda v: v.dtype == BOOL)
    if i is None:
        return
    v = b.vals[i]
    op = b.draw(st.sampled_from(["logical_and", "logical_or", "logical_not"]))
    if op == "logical_not":
        b.emit(Instr(op, (i,)), v)
        return
    _emit_bool(b, op, i, b.partner(v, BOOL))


def _gen_where(b: Builder) -> None:
    c = b.pick(lambda v: v.dtype == BOOL)
    if c is None:
        return
    cv = b.vals[c]
    x = b.pick(lambda v: v.dtype != BOOL and _broadcast(v.shape, cv.shape) is not None)
    if x is None:
        x = b.partner(cv, b.draw(st.sampled_from([F32, F64, I32])))
    xv = b.vals[x]
    y = b.partner(xv, xv.dtype)
    yv = b.vals[y]
    shape = _broadcast(cv.shape, xv.shape, yv.shape)
    if shape is None or int(np.prod(shape)) > MAX_ELEMS:
        return
    e = max(xv.err, yv.err)
    b.emit(Instr("where", (c, x, y)),
           Val(shape, xv.dtype, max(xv.mag, yv.mag), e, min(xv.gran, yv.gran) if e == 0 else 0))


def _gen_cast(b: Builder) -> None:
    i = b.pick(lambda v: True)
    v = b.vals[i]
    to = np.dtype(b.draw(st.sampled_from([F32, F64, I32, BOOL])))
    if to == v.dtype:
        return
    if v.dtype in FLOATS and to in (I32, BOOL) and not v.exact:
        return
    if b.specials and v.dtype in FLOATS and to in INTS:
        # NaN and +-inf become INT_MIN (both targets: tests/test_review_cpu_specials.py),
        # far outside the magnitude bound later ops' error bounds rest on
        return
    m, e, g = v.mag, v.err, v.gran
    if to == BOOL:
        out = Val(v.shape, BOOL, 1.0, 0.0, 1.0)
    elif to in INTS:
        if m >= MAX_INT:
            return
        out = Val(v.shape, to, math.floor(m) if v.dtype in FLOATS else m, 0.0, 1.0)
    else:  # to a float
        e2 = _rounded(to, m, e, g)
        out = Val(v.shape, to, m, e2, g if e2 == 0 else 0.0)
    b.emit(Instr("cast", (i,), {"dtype": to.name}), out)


def _axes(b: Builder, rank: int) -> tuple[Any, list[int]]:
    if rank == 0 or b.draw(st.integers(0, 4)) == 0:
        return None, list(range(rank))
    axes = sorted(set(b.draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank))))
    neg = [a - rank if b.draw(st.booleans()) else a for a in axes]
    return (neg[0] if len(neg) == 1 and b.draw(st.booleans()) else neg), axes


def _gen_reduce(b: Builder) -> None:
    i = b.pick(lambda v: True)
    v = b.vals[i]
    axis, axes = _axes(b, len(v.shape))
    keep = b.draw(st.booleans())
    n = int(np.prod([v.shape[a] for a in axes], dtype=np.int64))
    shape = tuple((1 if keep else None) if a in axes else d for a, d in enumerate(v.shape))
    shape = tuple(d for d in shape if d is not None)
    if v.dtype == BOOL:
        op = b.draw(st.sampled_from(["reduce_any", "reduce_all"]))
        out = Val(shape, BOOL, 1.0, 0.0, 1.0)
    else:
        floaty = v.dtype in FLOATS
        op = b.draw(st.sampled_from(["reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                                     "reduce_prod"] + (["reduce_logsumexp"] if floaty else [])))
        m, e, g = v.mag, v.err, v.gran
        if op == "reduce_logsumexp":
            if n == 0 or m > 64:
                return
            mo = m + math.log(n)
            out = Val(shape, v.dtype, mo, _rounded(v.dtype, mo, e + 1e-300, 0, 4 + n, False),
                      0.0)
        elif op in ("reduce_max", "reduce_min"):
            if n == 0:
                return  # an error on every target ("no elements is undefined")
            out = Val(shape, v.dtype, m, e, g)
        elif op in ("reduce_sum", "reduce_mean"):
            ms = m * max(n, 1)
            if ms > (MAX_MAG * 10 if floaty else MAX_INT):
                return
            es = _rounded(v.dtype, ms, e * n, g, max(n, 1))
            if op == "reduce_sum":
                out = Val(shape, v.dtype, ms, es, g if es == 0 else 0.0)
            elif floaty:
                if n == 0:
                    return  # 0/0
                out = Val(shape, v.dtype, m, _rounded(v.dtype, m, es / n + 1e-300, 0, 2,
                                                      False), 0.0)
            else:
                if n == 0:
                    return
                out = Val(shape, v.dtype, m, 0.0, 1.0)
        else:  # prod
            if n > 24 or n * math.log(max(m, 1.0)) > math.log(MAX_MAG if floaty else MAX_INT):
                return
            mp = max(m, 1.0) ** n
            ep = e * n * max(m, 1.0) ** max(n - 1, 0)
            ep = _rounded(v.dtype, mp, ep, g ** n if g < 1 else g, n)
            out = Val(shape, v.dtype, mp, ep, (g ** n if g < 1 else g) if ep == 0 else 0.0)
    b.emit(Instr(op, (i,), {"axis": axis, "keepdims": keep}), out)


def _gen_arg(b: Builder) -> None:
    i = b.pick(lambda v: v.exact and v.dtype != BOOL and len(v.shape) >= 1
               and v.size > 0 and all(d > 0 for d in v.shape))
    if i is None:
        return
    v = b.vals[i]
    axis = b.draw(st.integers(-len(v.shape), len(v.shape) - 1))
    out_t = b.draw(st.sampled_from(["int32", "int64"]))
    shape = tuple(d for a, d in enumerate(v.shape) if a != axis % len(v.shape))
    op = b.draw(st.sampled_from(["argmax", "argmin"]))
    b.emit(Instr(op, (i,), {"axis": axis, "output_type": out_t}),
           Val(shape, np.dtype(out_t), float(v.shape[axis]), 0.0, 1.0))


def _gen_matmul(b: Builder) -> None:
    i = b.pick(lambda v: len(v.shape) >= 2 and v.dtype in (F32, F64, I32))
    if i is None:
        return
    v = b.vals[i]
    ta, tb = b.draw(st.booleans()), b.draw(st.booleans())
    m, k = (v.shape[-1], v.shape[-2]) if ta else (v.shape[-2], v.shape[-1])
    n = b.draw(st.integers(1, 6)) if v.size < 10000 else b.draw(st.sampled_from([1, 2, 17]))
    batch = v.shape[:-2]
    if batch and b.draw(st.booleans()):
        batch = tuple(1 if b.draw(st.booleans()) else d for d in batch)
    elif b.draw(st.booleans()):
        batch = ()
    bshape = batch + ((n, k) if tb else (k, n))
    want = lambda w: w.dtype == v.dtype and w.shape == bshape  # noqa: E731
    j = b.pick(want) if b.draw(st.booleans()) else None
    if j is None:
        j = b.new_arg(bshape, v.dtype)
    w = b.vals[j]
    shape = _broadcast(v.shape[:-2], w.shape[:-2])
    if shape is None:
        return
    shape = shape + (m, n)
    mo = v.mag * w.mag * max(k, 1)
    floaty = v.dtype in FLOATS
    if mo > (MAX_MAG * 10 if floaty else MAX_INT) or int(np.prod(shape)) > MAX_ELEMS:
        return
    e = k * (v.mag * w.err + w.mag * v.err + v.err * w.err)
    g = v.gran * w.gran
    e = _rounded(v.dtype, mo, e, g, max(k, 1))
    b.emit(Instr("matmul", (i, j), {"transpose_a": ta, "transpose_b": tb}),
           Val(shape, v.dtype, mo, e, g if e == 0 else 0.0))


def _same(v: Val, shape) -> Val:
    return Val(tuple(shape), v.dtype, v.mag, v.err, v.gran)


def _gen_layout(b: Builder) -> None:
    i = b.pick(lambda v: True)
    v = b.vals[i]
    r = len(v.shape)
    op = b.draw(st.sampled_from(["transpose", "reshape", "expand_dims", "squeeze", "slice",
                                 "strided_slice", "reverse", "tile", "broadcast_to", "pad",
                                 "roll", "split_part"]))
    d = b.draw
    if op == "transpose":
        if r < 2:
            return
        perm = d(st.permutations(range(r)))
        b.emit(Instr(op, (i,), {"perm": list(perm)}), _same(v, [v.shape[p] for p in perm]))
    elif op == "reshape":
        size = v.size
        dims = []
        rest = size
        for _ in range(d(st.integers(0, 3))):
            divs = [q for q in range(1, min(rest, 12) + 1) if rest % q == 0] or [1]
            q = d(st.sampled_from(divs))
            dims.append(q)
            rest //= max(q, 1)
        if size == 0:
            dims = [0] + dims
        elif rest != 1 or d(st.booleans()):
            dims.append(rest)
        if int(np.prod(dims, dtype=np.int64)) != size:
            return
        spec = list(dims)
        if spec and size and d(st.booleans()):
            spec[d(st.integers(0, len(spec) - 1))] = -1
        b.emit(Instr(op, (i,), {"shape": spec}), _same(v, dims))
    elif op == "expand_dims":
        if r >= 5:
            return
        ax = d(st.integers(-r - 1, r))
        shape = list(v.shape)
        shape.insert(ax % (r + 1), 1)
        b.emit(Instr(op, (i,), {"axis": ax}), _same(v, shape))
    elif op == "squeeze":
        ones = [a for a, n in enumerate(v.shape) if n == 1]
        if not ones:
            return
        ax = d(st.sampled_from(ones))
        b.emit(Instr(op, (i,), {"axis": ax}),
               _same(v, [n for a, n in enumerate(v.shape) if a != ax]))
    elif op == "slice":
        if r == 0:
            return
        begin = [d(st.integers(0, n)) for n in v.shape]
        size = [d(st.integers(0, n - s)) if d(st.integers(0, 3)) else -1
                for n, s in zip(v.shape, begin)]
        shape = [n - s if z == -1 else z for n, s, z in zip(v.shape, begin, size)]
        b.emit(Instr(op, (i,), {"begin": begin, "size": size}), _same(v, shape))
    elif op == "strided_slice":
        if r == 0:
            return
        begin, end, strides, shape = [], [], [], []
        for n in v.shape:
            s = d(st.sampled_from([1, 1, 2, 3, -1, -2]))
            lo, hi = d(st.integers(0, n)), d(st.integers(0, n))
            if s > 0:
                lo, hi = min(lo, hi), max(lo, hi)
                shape.append(len(range(lo, hi, s)))
            else:
                lo, hi = max(lo, hi), min(lo, hi)
                lo = min(lo, n - 1)
                hi = hi - 1 if hi > 0 else -n - 1  # "-n-1": through index 0
                shape.append(len(range(n)[slice(lo, hi if hi >= 0 else None, s)])
                             if n else 0)
            begin.append(lo)
            end.append(hi)
            strides.append(s)
        expect = np.empty(v.shape)[tuple(slice(a, (c if c >= 0 else None), s)
                                         for a, c, s in zip(begin, end, strides))].shape
        b.emit(Instr(op, (i,), {"begin": begin, "end": end, "strides": strides}),
               _same(v, expect))
    elif op == "roll":
        if r == 0:
            return
        ax = d(st.integers(-r, r - 1))
        b.emit(Instr(op, (i,), {"shift": d(st.integers(-7, 7)), "axis": ax}), v)
    elif op == "split_part":
        if r == 0:
            return
        ax = d(st.integers(-r, r - 1))
        n = v.shape[ax]
        # (generic programs are called with their dims remapped: a split into more
        # than one part would no longer divide them)
        num = 1 if b.generic else d(st.sampled_from([k for k in range(1, 5) if n % k == 0]
                                                    or [1]))
        if n % num:
            return
        shape = list(v.shape)
        shape[ax] = n // num
        b.emit(Instr(op, (i,), {"num": num, "axis": ax, "part": d(st.integers(0, num - 1))}),
               _same(v, shape))
    elif op == "reverse":
        if r == 0:
            return
        axes = sorted(set(d(st.lists(st.integers(0, r - 1), min_size=1, max_size=r))))
        b.emit(Instr(op, (i,), {"axis": axes}), v)
    elif op == "tile":
        mult = [d(st.integers(1, 3)) for _ in range(r)]
        shape = [n * k for n, k in zip(v.shape, mult)]
        if int(np.prod(shape)) > MAX_ELEMS:
            return
        b.emit(Instr(op, (i,), {"multiples": mult}), _same(v, shape))
    elif op == "broadcast_to":
        shape = [d(st.integers(1, 4)) if n == 1 else n for n in v.shape]
        shape = [d(st.integers(1, 3)) for _ in range(d(st.integers(0, max(0, 4 - r))))] + shape
        if int(np.prod(shape)) > MAX_ELEMS:
            return
        b.emit(Instr(op, (i,), {"shape": shape}), _same(v, shape))
    else:  # pad
        if r == 0:
            return
        pads = [[d(st.integers(0, 2)), d(st.integers(0, 2))] for _ in range(r)]
        shape = [n + p + q for n, (p, q) in zip(v.shape, pads)]
        if int(np.prod(shape)) > MAX_ELEMS:
            return
        b.emit(Instr(op, (i,), {"paddings": pads}), _same(v, shape))


def _gen_join(b: Builder) -> None:
    i = b.pick(lambda v: len(v.shape) >= 1 or True)
    v = b.vals[i]
    r = len(v.shape)
    op = "concat" if r and b.draw(st.booleans()) else "stack"
    ax = b.draw(st.integers(-r, r - 1)) if op == "concat" else b.draw(st.integers(-r - 1, r))
    parts = [i]
    total = v.shape[ax] if op == "concat" else 1
    for _ in range(b.draw(st.integers(1, 2))):
        shape = list(v.shape)
        if op == "concat":
            shape[ax] = b.draw(st.integers(0, 4))
            total += shape[ax]
        else:
            total += 1
        shape = tuple(shape)
        j = b.pick(lambda w: w.shape == shape and w.dtype == v.dtype) \
            if b.draw(st.booleans()) else None
        parts.append(j if j is not None else b.new_arg(shape, v.dtype))
    vs = [b.vals[p] for p in parts]
    if op == "concat":
        shape = list(v.shape)
        shape[ax] = total
    else:
        shape = list(v.shape)
        shape.insert(ax % (r + 1), len(parts))
    if int(np.prod(shape)) > MAX_ELEMS:
        return
    e = max(w.err for w in vs)
    b.emit(Instr(op, tuple(parts), {"axis": ax}),
           Val(tuple(shape), v.dtype, max(w.mag for w in vs), e,
               min(w.gran for w in vs) if e == 0 else 0.0))


def _gen_gather(b: Builder) -> None:
    i = b.pick(lambda v: len(v.shape) >= 1 and any(n > 0 for n in v.shape))
    if i is None:
        return
    v = b.vals[i]
    r = len(v.shape)
    axis = b.draw(st.sampled_from([a for a in range(r) if v.shape[a] > 0]))
    ishape = tuple(b.draw(st.lists(st.integers(0, 4), max_size=2)))
    j = b.new_arg(ishape, b.draw(st.sampled_from([I32, I64])), nonneg=True, lo=0,
                  hi=v.shape[axis] - 1)
    shape = v.shape[:axis] + ishape + v.shape[axis + 1:]
    if int(np.prod(shape)) > MAX_ELEMS:
        return
    b.emit(Instr("gather", (i, j), {"axis": axis - r if b.draw(st.booleans()) else axis}),
           _same(v, shape))


def _gen_one_hot(b: Builder) -> None:
    i = b.pick(lambda v: v.dtype in INTS and len(v.shape) <= 3)
    if i is None:
        return
    v = b.vals[i]
    depth = b.draw(st.integers(0, 6))
    axis = b.draw(st.integers(-1, len(v.shape)))
    shape = list(v.shape)
    shape.insert(axis % (len(v.shape) + 1), depth)
    if int(np.prod(shape)) > MAX_ELEMS:
        return
    dt = b.draw(st.sampled_from([F32, F64, I32]))
    on, off = b.draw(st.sampled_from([(1, 0), (2.5, -0.5), (-1, 3)]))
    if dt == I32:
        on, off = int(on), int(off)
    b.emit(Instr("one_hot", (i,), {"depth": depth, "on_value": on, "off_value": off,
                                   "axis": axis, "dtype": dt.name}),
           Val(tuple(shape), dt, 3.0, 0.0, 0.5 if dt != I32 else 1.0))


def _gen_cumsum(b: Builder) -> None:
    i = b.pick(lambda v: len(v.shape) >= 1 and v.dtype in (F32, F64, I32))
    if i is None:
        return
    v = b.vals[i]
    axis = b.draw(st.integers(-len(v.shape), len(v.shape) - 1))
    n = v.shape[axis]
    m = v.mag * max(n, 1)
    if m > (MAX_MAG * 10 if v.dtype in FLOATS else MAX_INT):
        return
    e = _rounded(v.dtype, m, v.err * n, v.gran, max(n, 1))
    b.emit(Instr("cumsum", (i,), {"axis": axis, "exclusive": b.draw(st.booleans()),
                                  "reverse": b.draw(st.booleans())}),
           Val(v.shape, v.dtype, m, e, v.gran if e == 0 else 0.0))


def _gen_softmax(b: Builder) -> None:
    i = b.pick(lambda v: v.dtype in FLOATS and len(v.shape) >= 1)
    if i is None:
        return
    v = b.vals[i]
    axis = b.draw(st.integers(-len(v.shape), len(v.shape) - 1))
    op = b.draw(st.sampled_from(["softmax", "log_softmax"]))
    n = max(v.shape[axis], 1)
    if op == "softmax":
        mo = 1.0
        e = _rounded(v.dtype, mo, 2 * v.err + 1e-300, 0, 4 + n, False)
    else:
        mo = 2 * v.mag + math.log(n)
        e = _rounded(v.dtype, mo, 2 * v.err + 1e-300, 0, 4 + n, False)
    b.emit(Instr(op, (i,), {"axis": axis}), Val(v.shape, v.dtype, mo, e, 0.0))


def _gen_cumprod(b: Builder) -> None:
    """Running products (exclusive/reverse): the first-order bound of `reduce_prod` over
    the scanned axis, one rounding per partial product."""
    i = b.pick(lambda v: len(v.shape) >= 1 and v.dtype in (F32, F64, I32))
    if i is None:
        return
    v = b.vals[i]
    axis = b.draw(st.integers(-len(v.shape), len(v.shape) - 1))
    n = v.shape[axis]
    floaty = v.dtype in FLOATS
    if n > 12 or n * math.log(max(v.mag, 1.0)) > math.log(MAX_MAG if floaty else MAX_INT):
        return
    mp = max(v.mag, 1.0) ** n
    g = min(1.0, v.gran ** n)  # (an exclusive product starts at 1)
    ep = _rounded(v.dtype, mp, v.err * n * max(v.mag, 1.0) ** max(n - 1, 0), g, max(n, 1))
    b.emit(Instr("cumprod", (i,), {"axis": axis, "exclusive": b.draw(st.booleans()),
                                   "reverse": b.draw(st.booleans())}),
           Val(v.shape, v.dtype, mp, ep, g if ep == 0 else 0.0))


def _gen_sort(b: Builder) -> None:
    """sort / top_k values: sorting is 1-Lipschitz in the max norm, so the bounds carry
    over; top_k's indices only of exact values (ties: the lower index first)."""
    i = b.pick(lambda v: len(v.shape) >= 1 and v.dtype in (F32, F64, I32))
    if i is None:
        return
    v = b.vals[i]
    r = len(v.shape)
    if b.draw(st.booleans()):
        b.emit(Instr("sort", (i,), {"axis": b.draw(st.integers(-r, r - 1)),
                                    "direction": b.draw(st.sampled_from(
                                        ["ASCENDING", "DESCENDING"]))}), v)
        return
    k = b.draw(st.integers(0, v.shape[-1]))
    shape = v.shape[:-1] + (k,)
    if v.exact and not b.specials and b.draw(st.booleans()):
        b.emit(Instr("top_k_indices", (i,), {"k": k}),
               Val(shape, I32, float(v.shape[-1]), 0.0, 1.0))
    else:
        b.emit(Instr("top_k_values", (i,), {"k": k}), _same(v, shape))


def _contraction(dtype, v: Val, w: Val, k: int, shape) -> Val | None:
    """The bounds of sums of `k` products of elements of `v` and `w` (matmul's rule)."""
    mo = v.mag * w.mag * max(k, 1)
    if mo > (MAX_MAG * 10 if dtype in FLOATS else MAX_INT) or int(np.prod(shape)) > MAX_ELEMS:
        return None
    e = k * (v.mag * w.err + w.mag * v.err + v.err * w.err)
    g = v.gran * w.gran
    e = _rounded(dtype, mo, e, g, max(k, 1))
    return Val(tuple(shape), dtype, mo, e, g if e == 0 else 0.0)


def _gen_einsum(b: Builder) -> None:
    """Two-operand einsums (contractions, outer and row-wise products, a batch matmul)
    and one-operand transposes/sums, bounded as matmul/reduce_sum are."""
    i = b.pick(lambda v: 1 <= len(v.shape) <= 3 and v.dtype in (F32, F64, I32)
               and v.size <= 20000)
    if i is None:
        return
    v = b.vals[i]
    d = b.draw
    if len(v.shape) == 1:
        (n,) = v.shape
        eq = d(st.sampled_from(["i,j->ij", "i,i->", "i->"]))
        other = {"i,j->ij": (d(st.integers(0, 5)),), "i,i->": (n,), "i->": None}[eq]
        k = {"i,j->ij": 1, "i,i->": n, "i->": n}[eq]
        shape = {"i,j->ij": (n, other[0] if other else 0), "i,i->": (), "i->": ()}[eq]
    elif len(v.shape) == 2:
        n, m = v.shape
        eq = d(st.sampled_from(["ij,jk->ik", "ij,kj->ik", "ij,ij->i", "ij->ji", "ij->j"]))
        c = d(st.integers(1, 5))
        other = {"ij,jk->ik": (m, c), "ij,kj->ik": (c, m), "ij,ij->i": (n, m),
                 "ij->ji": None, "ij->j": None}[eq]
        k = {"ij,jk->ik": m, "ij,kj->ik": m, "ij,ij->i": m, "ij->ji": 1, "ij->j": n}[eq]
        shape = {"ij,jk->ik": (n, c), "ij,kj->ik": (n, c), "ij,ij->i": (n,),
                 "ij->ji": (m, n), "ij->j": (m,)}[eq]
    else:
        bt, n, m = v.shape
        c = d(st.integers(1, 5))
        eq, other, k, shape = "bij,bjk->bik", (bt, m, c), m, (bt, n, c)
    if other is None:
        one = Val((), v.dtype, 1.0, 0.0, 1.0)  # (one operand: products with 1)
        out = _contraction(v.dtype, v, one, k, shape)
        if out is not None:
            b.emit(Instr("einsum", (i,), {"equation": eq}), out)
        return
    j = b.pick(lambda w: w.dtype == v.dtype and w.shape == other) \
        if d(st.booleans()) else None
    if j is None:
        j = b.new_arg(other, v.dtype)
    out = _contraction(v.dtype, v, b.vals[j], k, shape)
    if out is not None:
        b.emit(Instr("einsum", (i, j), {"equation": eq}), out)


def _gen_segment(b: Builder) -> None:
    """unsorted_segment_sum (ids -1 are dropped) and tensor_scatter_nd_add of rows
    (repeated indices add up): sums of at most n (or u + 1) terms, in any order."""
    i = b.pick(lambda v: len(v.shape) >= 1 and v.shape[0] > 0 and v.dtype in (F32, F64, I32)
               and v.size <= 50000)
    if i is None:
        return
    v = b.vals[i]
    n = v.shape[0]
    floaty = v.dtype in FLOATS
    if b.draw(st.booleans()):
        num = b.draw(st.integers(1, 5))
        ids = b.new_arg((n,), b.draw(st.sampled_from([I32, I64])), lo=-1, hi=num - 1)
        mo = v.mag * n
        if mo > (MAX_MAG * 10 if floaty else MAX_INT):
            return
        e = _rounded(v.dtype, mo, v.err * n, v.gran, n)
        b.emit(Instr("unsorted_segment_sum", (i, ids), {"num_segments": num}),
               Val((num,) + v.shape[1:], v.dtype, mo, e, v.gran if e == 0 else 0.0))
        return
    u = b.draw(st.integers(0, 4))
    idx = b.new_arg((u, 1), I32, nonneg=True, lo=0, hi=n - 1)
    ushape = (u,) + v.shape[1:]
    j = b.pick(lambda w: w.dtype == v.dtype and w.shape == ushape) \
        if b.draw(st.booleans()) else None
    if j is None:
        j = b.new_arg(ushape, v.dtype)
    w = b.vals[j]
    mo = v.mag + u * w.mag
    if mo > (MAX_MAG * 10 if floaty else MAX_INT):
        return
    g = min(v.gran, w.gran)
    e = _rounded(v.dtype, mo, v.err + u * w.err, g, u + 1)
    b.emit(Instr("scatter_nd_add", (i, idx, j)), Val(v.shape, v.dtype, mo, e,
                                                     g if e == 0 else 0.0))


def _gen_conv(b: Builder) -> None:
    """conv2d, depthwise_conv2d (sums of kh*kw*cin / kh*kw products: matmul's rule),
    max_pool2d (bounds carry over) and avg_pool2d (a mean of at most kh*kw terms) on
    small NHWC values, SAME or VALID, strides 1 or 2."""
    i = b.pick(lambda v: len(v.shape) == 4 and v.dtype in FLOATS and v.size <= 20000
               and v.shape[3] <= 8 and all(n > 0 for n in v.shape))
    if i is None:  # an NHWC image made of another float value: (1, h, w, c)
        i = b.pick(lambda v: v.dtype in FLOATS and 0 < v.size <= 4000)
        if i is None:
            return
        v = b.vals[i]
        c = b.draw(st.sampled_from([q for q in (1, 2, 3) if v.size % q == 0]))
        rest = v.size // c
        h = max(q for q in range(1, math.isqrt(rest) + 1) if rest % q == 0)
        i = b.emit(Instr("reshape", (i,), {"shape": [1, h, rest // h, c]}),
                   _same(v, (1, h, rest // h, c)))
        if i is None:
            return
    v = b.vals[i]
    d = b.draw
    nb, h, w_, c = v.shape
    op = d(st.sampled_from(["conv2d", "depthwise_conv2d", "max_pool2d", "avg_pool2d"]))
    kh, kw = d(st.integers(1, 3)), d(st.integers(1, 3))
    s = d(st.sampled_from([1, 1, 2]))
    pad = d(st.sampled_from(["SAME", "VALID"]))
    if pad == "VALID":
        if h < kh or w_ < kw:
            return
        oh, ow = (h - kh) // s + 1, (w_ - kw) // s + 1
    else:
        oh, ow = -(-h // s), -(-w_ // s)
    if op in ("max_pool2d", "avg_pool2d"):
        params = {"ksize": [kh, kw], "strides": s, "padding": pad}
        shape = (nb, oh, ow, c)
        if op == "max_pool2d":
            b.emit(Instr(op, (i,), params), _same(v, shape))
            return
        n = kh * kw
        es = _rounded(v.dtype, v.mag * n, v.err * n, v.gran, n)
        b.emit(Instr(op, (i,), params),
               Val(shape, v.dtype, v.mag, _rounded(v.dtype, v.mag, es + 1e-300, 0, 2, False),
                   0.0))
        return
    cout = d(st.integers(1, 4)) if op == "conv2d" else d(st.integers(1, 2))
    fshape = (kh, kw, c, cout)
    f = b.new_arg(fshape, v.dtype)
    k = kh * kw * (c if op == "conv2d" else 1)
    out = _contraction(v.dtype, v, b.vals[f], k,
                       (nb, oh, ow, cout if op == "conv2d" else c * cout))
    if out is not None:
        b.emit(Instr(op, (i, f), {"strides": s, "padding": pad}), out)


# --------------------------------------------------------- control flow and variables

# A region body is a short chain of elementwise steps on one value `x` (its shape and
# dtype are kept, so both branches of a cond and every loop iteration agree):
# ("un", op) x = op(x); ("bin", op, k) x = op(x, extra[k]), extra[k] broadcasting into x.
CHAIN_UNARY = ("negative", "abs", "tanh", "sin", "relu", "square")
CHAIN_BINARY = ("add", "subtract", "multiply", "maximum", "minimum")


# the variables of the program being traced (regions read and assign them)
_TRACING_VARS: list[Any] = []


def _run_chain(x, steps, extras):
    for st_ in steps:
        if st_[0] == "vread":
            x = x + _TRACING_VARS[st_[1]].read_value()
        elif st_[0] == "vadd":
            x = _TRACING_VARS[st_[1]].assign_add(x)
        elif st_[0] == "mm":  # x @ W (a row: as a 1-row matrix)
            w = extras[st_[1]]
            x = tw.matmul(x, w) if len(x.shape) >= 2 else tw.matmul(x[None], w)[0]
        else:
            x = OPS[st_[1]](x) if st_[0] == "un" else OPS[st_[1]](x, extras[st_[2]])
    return x


def _chain_val(v: Val, steps, extras: list[Val]) -> Val:
    """The bounds after `steps` on `v` (the same transfer rules as the straight code)."""
    m, e, g = v.mag, v.err, v.gran
    for st_ in steps:
        if st_[0] in ("vread", "vadd"):  # exact programs only: see _gen_var
            m = (m + VAR_BOUND) * 2
        elif st_[0] == "mm":
            w = extras[st_[1]]
            d = w.shape[0]
            m, e, g = m * w.mag * d, d * (m * w.err + w.mag * e + e * w.err), g * w.gran
            e = _rounded(v.dtype, m, e, g, d)
        elif st_[0] == "un":
            op = st_[1]
            if op in ("tanh", "sin"):
                m, e, g = 1.0, _rounded(v.dtype, 1.0, e, 0, 4, False), 0.0
            elif op == "square":
                m, e, g = m * m, 2 * m * e + e * e, g * g
                e = _rounded(v.dtype, m, e, g)
        else:
            w = extras[st_[2]]
            op = st_[1]
            if op in ("add", "subtract"):
                m, e, g = m + w.mag, e + w.err, min(g, w.gran)
            elif op == "multiply":
                m, e, g = m * w.mag, m * w.err + w.mag * e + e * w.err, g * w.gran
            else:
                m, e, g = max(m, w.mag), max(e, w.err), min(g, w.gran)
            e = _rounded(v.dtype, m, e, g)
        if e:
            g = 0.0
    return Val(v.shape, v.dtype, m, e, g)


def _draw_chain(b: Builder, v: Val, extras: list[int], squash: bool):
    fits = [k for k, j in enumerate(extras) if _broadcast(b.vals[j].shape, v.shape) == v.shape]
    if b.exact_regions:  # variable programs: exact ops, reads and assign_adds
        vs = [k for k, w in enumerate(b.var_vals) if w.shape == v.shape and w.dtype == v.dtype]
        steps = []
        for _ in range(b.draw(st.integers(1, 3))):
            kinds = ["un"] + (["bin"] if fits else []) + (["vread", "vadd"] if vs else [])
            kind = b.draw(st.sampled_from(kinds))
            if kind == "un":
                steps.append(("un", b.draw(st.sampled_from(["negative", "abs", "relu"]))))
            elif kind == "bin":
                steps.append(("bin", b.draw(st.sampled_from(["add", "maximum", "minimum"])),
                              b.draw(st.sampled_from(fits))))
            else:
                k = b.draw(st.sampled_from(vs))
                steps.append((kind, k))
                if kind == "vadd":
                    w = b.var_vals[k]
                    b.var_vals[k] = Val(w.shape, w.dtype, VAR_BOUND, 0.0, min(w.gran, v.gran))
        return steps
    square = [k for k, j in enumerate(extras) if v.shape and len(b.vals[j].shape) == 2
              and b.vals[j].shape == (v.shape[-1], v.shape[-1])]
    steps = []
    for _ in range(b.draw(st.integers(1, 3))):
        if square and b.draw(st.booleans()):
            steps.append(("mm", b.draw(st.sampled_from(square))))
        elif fits and b.draw(st.booleans()):
            steps.append(("bin", b.draw(st.sampled_from(CHAIN_BINARY)),
                          b.draw(st.sampled_from(fits))))
        else:
            steps.append(("un", b.draw(st.sampled_from(CHAIN_UNARY))))
    if squash:  # loop bodies: bounded whatever the trip count
        steps.append(("un", "tanh"))
    return steps


def _extras(b: Builder, v: Val) -> list[int]:
    """Outer values a region captures: same dtype, broadcasting into `v`'s shape."""
    out = []
    if v.shape and 0 < v.shape[-1] <= 64 and b.draw(st.booleans()):  # a weight: x @ W
        d = v.shape[-1]
        j = b.pick(lambda w: w.dtype == v.dtype and w.shape == (d, d) and w.mag <= 4)
        out.append(j if j is not None else b.new_arg((d, d), v.dtype))
    for _ in range(b.draw(st.integers(0, 2))):
        j = b.pick(lambda w: w.dtype == v.dtype and w.shape != () and
                   _broadcast(w.shape, v.shape) == v.shape and w.mag <= 4)
        if j is None or b.draw(st.booleans()):
            j = b.new_arg(b.partner_shape(v.shape)[-len(v.shape):] if v.shape else (),
                          v.dtype)
            if _broadcast(b.vals[j].shape, v.shape) != v.shape:
                continue
        out.append(j)
    return out


def _cond_fn(p, x, *extras, true=(), false=()):
    return tw.cond(p, lambda: _run_chain(x, true, extras), lambda: _run_chain(x, false, extras))


def _while_fn(n, x, *extras, body=(), maximum_iterations=None):
    # the last extra is a loop variable the body reads and passes through unchanged
    def cond(i, y, z):
        return i < n

    def step(i, y, z):
        return i + 1, _run_chain(y, body, extras[:-1] + (z,)), z
    return tw.while_loop(cond, step, (tw.constant(0, "int32"), x, extras[-1]),
                         maximum_iterations=maximum_iterations)[1]


def _scan_fn(xs, *rest, body=(), init=False):
    extras = rest[1:] if init else rest

    def fn(a, x):
        return _run_chain(a + x, body, extras)
    return tw.scan(fn, xs, initializer=rest[0] if init else None)


OPS.update({"cond": _cond_fn, "while": _while_fn, "scan": _scan_fn})


def _region_input(b: Builder) -> int | None:
    """The value a region starts from (in variable programs: preferably one shaped like
    a variable, so that the region reads and assigns it)."""
    if b.exact_regions and b.var_vals and b.draw(st.integers(0, 3)):
        i = b.pick(lambda v: v.dtype in FLOATS and any(
            w.shape == v.shape and w.dtype == v.dtype for w in b.var_vals))
        if i is not None:
            return i
    return b.pick(lambda v: v.dtype in FLOATS and v.mag <= 16)


def _gen_cond(b: Builder) -> None:
    v_i = _region_input(b)
    p_i = b.pick(lambda v: v.dtype == BOOL)
    if v_i is None:
        return
    if p_i is None or b.draw(st.booleans()):
        p_i = b.new_arg((), BOOL)
    elif b.vals[p_i].shape != ():
        p_i = b.emit(Instr("reduce_any", (p_i,), {"axis": None, "keepdims": False}),
                     Val((), BOOL, 1.0, 0.0, 1.0))
    v = b.vals[v_i]
    ex = _extras(b, v)
    exv = [b.vals[j] for j in ex]
    t, f = _draw_chain(b, v, ex, False), _draw_chain(b, v, ex, False)
    vt, vf = _chain_val(v, t, exv), _chain_val(v, f, exv)
    if max(vt.mag, vf.mag) > MAX_MAG:
        return
    e = max(vt.err, vf.err)
    b.emit(Instr("cond", (p_i, v_i, *ex), {"true": t, "false": f}),
           Val(v.shape, v.dtype, max(vt.mag, vf.mag), e, min(vt.gran, vf.gran) if e == 0
               else 0.0))


def _gen_while(b: Builder) -> None:
    v_i = _region_input(b)
    if v_i is None:
        return
    v = b.vals[v_i]
    n_i = b.new_arg((), I32, lo=0, hi=3, nonneg=True)
    ex = _extras(b, v) + [v_i]
    exv = [b.vals[j] for j in ex]
    body = _draw_chain(b, v, ex, True)
    out = v
    e = v.err
    for _ in range(3):  # at most 3 iterations: the bound after each, the worst kept
        out = _chain_val(out, body, exv)
        e = max(e, out.err)
    mi = b.draw(st.sampled_from([None, 1, 2, 5]))
    if b.exact_regions:
        out = Val(v.shape, v.dtype, max(v.mag, out.mag), 0.0, out.gran)
    else:
        out = Val(v.shape, v.dtype, max(v.mag, 1.0), e if e or v.err else
                  _rounded(v.dtype, 1.0, 0.0, 0, 4, False), 0.0 if e else v.gran)
    b.emit(Instr("while", (n_i, v_i, *ex), {"body": body, "maximum_iterations": mi}), out)


def _gen_scan(b: Builder) -> None:
    v_i = b.pick(lambda v: v.dtype in FLOATS and len(v.shape) >= 1 and v.shape[0] > 0
                 and v.mag <= 16 and v.size <= 5000)
    if v_i is None:
        return
    v = b.vals[v_i]
    row = Val(v.shape[1:], v.dtype, v.mag, v.err, v.gran)
    init = b.draw(st.booleans())
    rest = [b.new_arg(row.shape, v.dtype)] if init else []
    ex = _extras(b, row) if row.shape else []
    exv = [b.vals[j] for j in ex]
    body = _draw_chain(b, row, ex, True)
    start = Val(row.shape, row.dtype, row.mag * 2, row.err * 2, row.gran)
    out = _chain_val(start, body, exv)
    e = out.err
    for _ in range(min(v.shape[0], 6)):  # errors stop growing: tanh keeps |a| <= 1
        start = Val(row.shape, row.dtype, 1.0 + row.mag, out.err + row.err, 0.0)
        out = _chain_val(start, body, exv)
        e = max(e, out.err * v.shape[0])
    b.emit(Instr("scan", (v_i, *rest, *ex), {"body": body, "init": init}),
           Val(v.shape, v.dtype, max(1.0, v.mag), e, 0.0))


def _gen_var(b: Builder) -> None:
    """Variable reads and assignments (exact ops only around them: see `var_programs`)."""
    if not b.var_inits or b.draw(st.integers(0, 3)) == 0:
        i = b.pick(lambda v: v.dtype in (F64, I32) and v.size <= 4096)
        if i is None:
            return
        v = b.vals[i]
        a, _ = b.array(v.shape, v.dtype)
        b.var_inits.append(a)
        b.var_vals.append(Val(v.shape, v.dtype, 4.0 if v.dtype == F64 else 8.0, 0.0,
                              v.gran if v.dtype == F64 else 1.0))
    k = b.draw(st.integers(0, len(b.var_inits) - 1))
    vv = b.var_vals[k]
    op = b.draw(st.sampled_from(["var_read", "var_assign", "var_assign_add"]))
    if op == "var_read":
        b.emit(Instr(op, (), {"var": k}), vv)
        return
    j = b.pick(lambda w: w.shape == vv.shape and w.dtype == vv.dtype)
    if j is None:
        return
    w = b.vals[j]
    if op == "var_assign":
        new = Val(vv.shape, vv.dtype, max(vv.mag, w.mag), 0.0, min(vv.gran, w.gran))
    else:
        new = Val(vv.shape, vv.dtype, vv.mag + w.mag, 0.0, min(vv.gran, w.gran))
    if new.mag > 1e6:
        return
    b.var_vals[k] = new
    b.emit(Instr(op, (j,), {"var": k}), new)


GENERATORS = {
    "unary": _gen_unary, "binary": _gen_binary, "compare": _gen_compare,
    "logical": _gen_logical, "where": _gen_where, "cast": _gen_cast,
    "reduce": _gen_reduce, "arg": _gen_arg, "matmul": _gen_matmul, "layout": _gen_layout,
    "join": _gen_join, "gather": _gen_gather, "one_hot": _gen_one_hot,
    "cumsum": _gen_cumsum, "softmax": _gen_softmax,
    "cumprod": _gen_cumprod, "sort": _gen_sort, "einsum": _gen_einsum,
    "segment": _gen_segment, "conv": _gen_conv,
    "cond": _gen_cond, "while": _gen_while, "scan": _gen_scan, "var": _gen_var,
}
# elementwise kinds weigh more: fusion clusters are what the cpu target builds from them
GENERATORS_LIST = (["unary"] * 3 + ["binary"] * 4 + ["compare", "logical", "where", "cast"]
                   + ["reduce"] * 2 + ["arg", "matmul", "layout", "layout", "join", "gather",
                                       "one_hot", "cumsum", "softmax", "cumprod", "sort",
                                       "einsum", "segment", "conv"])
CONTROL_LIST = GENERATORS_LIST + ["cond", "cond", "while", "while", "scan", "scan"]
# around variables only exact ops on float64 and int32, so that a second call (which
# reads what the first assigned) is still bitwise comparable
VAR_LIST = ["var"] * 6 + ["binary", "unary", "layout", "where", "compare", "reduce", "join"]
VAR_OPS_OK = ("add", "subtract", "maximum", "minimum", "negative", "abs", "identity",
              "relu", "transpose", "reshape", "expand_dims", "squeeze", "reverse", "where",
              "equal", "less", "greater_equal", "reduce_max", "reduce_min", "concat",
              "stack", "slice", "pad", "tile", "broadcast_to", "strided_slice",
              "reduce_any", "reduce_all", "logical_and", "logical_or", "logical_not",
              "not_equal", "less_equal", "greater")


@st.composite
def programs(draw, max_ops: int = 12, big: bool | None = None, mode: str = "basic",
             **kw) -> Program:
    """A random program (see the module docstring); `big` forces (or forbids) a base
    shape of more than 64K elements. `mode`: "basic" (straight-line code), "control"
    (with tw.cond / tw.while_loop / tw.scan), "vars" (tw.Variable reads and
    assignments among exact ops). `specials`: float arguments and constants hold NaN,
    +-inf and -0.0 among their values (no float-to-int casts then); the error bounds
    still hold for the finite results, the others must match exactly."""
    if big is None:
        big = draw(st.integers(0, 11)) == 0
    if mode == "control":
        kw.setdefault("ops", CONTROL_LIST)
    elif mode == "vars":
        kw.setdefault("ops", VAR_LIST + ["cond", "while"])
        kw.setdefault("allowed", VAR_OPS_OK + ("cond", "while"))
        kw.setdefault("dtypes", (F64, I32))
        kw.setdefault("exact_regions", True)
    elif mode == "generic":
        big = False
        kw.setdefault("generic", True)
        kw.setdefault("ops", GENERIC_LIST)
        kw.setdefault("allowed", GENERIC_OPS_OK)
    elif mode == "grad":
        kw.setdefault("ops", CONTROL_LIST)
        kw.setdefault("allowed", GRAD_OPS_OK)
        kw.setdefault("dtypes", (F64,))
    return Builder(draw, max_ops=max_ops, big=big, **kw).build()


# ops whose parameters name no dimension's size: a program of them runs on arguments
# of other sizes (`Program.remapped`)
GENERIC_LIST = ["unary", "binary", "compare", "logical", "where", "cast", "reduce", "arg",
                "softmax", "cumsum", "layout", "cond", "scan"]
GENERIC_OPS_OK = tuple(o for o in OPS if o not in (
    "reshape", "slice", "strided_slice", "tile", "broadcast_to", "pad", "concat",
    "stack", "gather", "one_hot", "matmul", "squeeze", "const", "while"))
GRAD_OPS_OK = tuple(o for o in OPS if o not in ("sqrt_abs", "floordiv_nz", "floormod_nz"))


def weighted_loss(prog: Program, seed: int = 0):
    """A function of `prog`'s arguments (tensors, traced or eager) returning a random
    weighted sum of its floating-point outputs, in float64; and the indices of the
    floating-point arguments (what gradients are taken with respect to)."""
    rng = np.random.default_rng(seed)
    float_outs = [k for k, i in enumerate(prog.outputs) if prog.vals[i].dtype in FLOATS]
    weights = {k: rng.integers(-4, 5, size=prog.vals[prog.outputs[k]].shape) / 4
               for k in float_outs}

    def loss_fn(*xs):
        outs = nest.flatten(prog(*xs))[0]
        loss = tw.constant(0.0, "float64")
        for k in float_outs:
            loss = loss + tw.reduce_sum(tw.cast(outs[k], "float64") * weights[k])
        return loss
    return loss_fn, [i for i, a in enumerate(prog.args) if a.dtype in FLOATS]


def gradient_program(prog: Program, seed: int = 0):
    """A function of `prog`'s arguments returning the gradients, with respect to its
    floating-point arguments, of a random weighted sum of its floating-point outputs."""
    loss_fn, wrt = weighted_loss(prog, seed)

    def grads(*xs):
        return tw.gradients(loss_fn(*xs), [xs[i] for i in wrt], unconnected_gradients="zero")
    return grads


def eager_gradients(prog: Program, seed: int = 0) -> list[np.ndarray]:
    """`gradient_program`'s gradients computed eagerly: the program run op by op on
    EagerTensors under a tw.GradientTape."""
    loss_fn, wrt = weighted_loss(prog, seed)
    xs = [tw.constant(a) for a in prog.args]
    with tw.GradientTape() as tape:
        for i in wrt:
            tape.watch(xs[i])
        loss = loss_fn(*xs)
    grads = tape.gradient(loss, [xs[i] for i in wrt], unconnected_gradients="zero")
    return [np.asarray(g) for g in grads]


def run_eager(prog: Program, args: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """Run `prog` eagerly (no tw.compile: each op on EagerTensors as it is called)."""
    return leaves(prog(*[tw.constant(a) for a in (prog.args if args is None else args)]))


def run_session(prog: Program, args: list[np.ndarray] | None = None,
                unknown_dims: bool = False, calls: int = 1) -> tuple[list, list]:
    """Build `prog` in a tf.compat.v1 Graph on placeholders (`unknown_dims`: every dim
    of a float argument None; int arguments are indices, ids, trip counts: the index
    depth of a scatter must be known when the graph is built) with its variables,
    initialize them and run the outputs `calls` times in a Session with a feed_dict:
    each call's outputs and the variables' final values.
    (A v1 Graph orders nothing by itself: a program that reads a variable it assigns
    gets either value, as in TensorFlow 1.)"""
    import tensorweave.compat.v1 as tf1
    args = prog.args if args is None else args
    graph = tf1.Graph()
    with graph.as_default():
        phs = [tf1.placeholder(a.dtype.name, [None] * a.ndim
                               if unknown_dims and a.dtype in FLOATS else a.shape)
               for a in args]
        prog.make_vars(tf1.Variable)
        outs = nest.flatten(prog(*phs))[0]
        reads = [v.read_value() for v in prog.variables]
        init = tf1.global_variables_initializer()
    with tf1.Session(graph=graph) as session:
        session.run(init)
        got = [[np.asarray(o) for o in session.run(outs, dict(zip(phs, args)))]
               for _ in range(calls)]
        var_values = [np.asarray(v) for v in session.run(reads)] if reads else []
    return got, var_values


# ---------------------------------------------------------------------------- running

def leaves(result: Any) -> list[np.ndarray]:
    """The arrays of a program's result (a list, tuple, dict or one array), in output
    order."""
    return [np.asarray(o) for o in nest.flatten(result)[0]]


def run(prog: Program, target: str, args: list[np.ndarray] | None = None,
        **compile_kw) -> list[np.ndarray]:
    """Compile `prog` for `target` and run it once on `args` (default: its own)."""
    fn = tw.compile(prog, target=target, **compile_kw)
    return leaves(fn(*(prog.args if args is None else args)))


def compare(got: list[np.ndarray], want: list[np.ndarray], atols: list[float],
            what: str, prog: Program) -> None:
    """Outputs equal: exact dtype and shape, values within the program's own bounds."""
    assert len(got) == len(want), what
    for k, (g, w, atol) in enumerate(zip(got, want, atols)):
        g, w = np.asarray(g), np.asarray(w)
        name = f"v{prog.outputs[k]}" if k < len(prog.outputs) else "?"
        msg = f"{what}: output {k} ({name})\n{prog.text()}"
        assert g.dtype == w.dtype, f"dtype {g.dtype} != {w.dtype}; {msg}"
        assert g.shape == w.shape, f"shape {g.shape} != {w.shape}; {msg}"
        if atol == 0 or w.dtype.kind not in "fc":
            same = (g == w) | (np.isnan(g) & np.isnan(w)) if w.dtype.kind == "f" else g == w
            if not np.all(same):
                bad = np.argwhere(~np.asarray(same))[:5].tolist()
                raise AssertionError(f"not equal at {bad}: got "
                                     f"{[g[tuple(x)] for x in bad]}, want "
                                     f"{[w[tuple(x)] for x in bad]}; {msg}")
        else:
            np.testing.assert_allclose(g, w, rtol=0, atol=atol, equal_nan=True, err_msg=msg)
