"""``tw.einsum`` and ``tw.tensordot``, built from existing ops (Transpose, Reshape,
ExpandDims, Squeeze, MatMul, Mul, Sum), so that their gradients, shape inference and the
cpu target's native code come from those ops.

An equation is parsed into one list of labels per operand (the dims under ``...`` get
labels of their own, aligned from the right, so they broadcast as in NumPy), and the
operands are contracted left to right. Each pairwise contraction sums out the labels no
later operand or the output needs, then becomes one batched MatMul: batch labels (in both
operands and still needed) lead, the free labels of each side are flattened into M and N,
the contracted ones into K. When flattening would need a dim unknown at trace time, it
multiplies the aligned operands with broadcasting and sums instead.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DTypeError, ShapeError
from ..building import convert_operands, user_location

TensorLike = Any
Labels = list[str]

_LETTERS = frozenset(string.ascii_letters)


def _math():
    from . import math
    return math


def _array():
    from . import array
    return array


def _error(fn: str, equation: str, message: str) -> ShapeError:
    """A ShapeError (a ValueError, which TF raises for bad equations) naming the function,
    the equation and the user's line."""
    loc = user_location()
    return ShapeError(f"equation {equation!r}: {message}", op=fn,
                      location=str(loc) if loc else None)


# ------------------------------------------------------------------------------ parsing

def _split_term(term: str, where: str, fail) -> tuple[list[str], bool]:
    """The letters of one term and whether it holds ``...``."""
    has_ellipsis = "..." in term
    if term.count("...") > 1:
        raise fail(f"{where} {term!r} has more than one '...'")
    rest = term.replace("...", "")
    for ch in rest:
        if ch == ".":
            raise fail(f"{where} {term!r}: '.' may only appear as the ellipsis '...'")
        if ch not in _LETTERS:
            raise fail(f"{where} {term!r}: invalid character {ch!r} (labels are the "
                       f"letters a-z and A-Z)")
    return list(term.split("...")[0]) + (["..."] if has_ellipsis else []) + \
        (list(term.split("...")[1]) if has_ellipsis else []), has_ellipsis


def _ellipsis_labels(count: int, total: int) -> list[str]:
    """Labels for the last `count` of `total` broadcast dims (``'.0'`` ...: never a
    letter)."""
    return [f".{total - count + j}" for j in range(count)]


def parse(equation: str, ranks: Sequence[int], fn: str = "einsum") -> tuple[list[Labels], Labels]:
    """The labels of each operand's dims and of the output's, for operands of `ranks`.

    Raises ShapeError naming the equation for a malformed one: wrong number of terms,
    bad characters, a term whose label count does not match its operand's rank, output
    labels that repeat or appear in no input, or ``...`` dims the output drops."""
    def fail(message: str) -> ShapeError:
        return _error(fn, equation, message)

    if not isinstance(equation, str):
        raise _misuse(fn, f"the equation must be a string, got {equation!r}")
    eq = "".join(equation.split())
    if eq.count("->") > 1:
        raise fail("more than one '->'")
    explicit = "->" in eq
    lhs, rhs = eq.split("->") if explicit else (eq, "")
    if "-" in lhs or ">" in lhs or "-" in rhs or ">" in rhs:
        raise fail("'-' and '>' may only appear together as '->'")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise fail(f"{len(terms)} input term{'s' if len(terms) != 1 else ''} but "
                   f"{len(ranks)} operand{'s' if len(ranks) != 1 else ''}")
    split = [_split_term(t, f"input {i}", fail) for i, t in enumerate(terms)]
    n_ellipsis = 0
    for i, ((labels, has_ellipsis), rank) in enumerate(zip(split, ranks)):
        named = len(labels) - has_ellipsis
        if (named != rank and not has_ellipsis) or named > rank:
            raise fail(f"input {i} {terms[i]!r} has {named} label{'s' if named != 1 else ''}"
                       f" but operand {i} has rank {rank}")
        if has_ellipsis:
            n_ellipsis = max(n_ellipsis, rank - named)
    inputs: list[Labels] = []
    for (labels, has_ellipsis), rank in zip(split, ranks):
        count = rank - (len(labels) - has_ellipsis)
        out: Labels = []
        for label in labels:
            out.extend(_ellipsis_labels(count, n_ellipsis) if label == "..." else [label])
        inputs.append(out)
    ellipsis_all = _ellipsis_labels(n_ellipsis, n_ellipsis)
    if explicit:
        out_labels, out_ellipsis = _split_term(rhs, "output", fail)
        letters = [x for x in out_labels if x != "..."]
        seen_in = {x for labels in inputs for x in labels}
        for x in letters:
            if letters.count(x) > 1:
                raise fail(f"output label {x!r} appears more than once")
            if x not in seen_in:
                raise fail(f"output label {x!r} appears in no input")
        if n_ellipsis and not out_ellipsis:
            raise fail(f"the inputs' '...' covers {n_ellipsis} dim"
                       f"{'s' if n_ellipsis != 1 else ''} but the output has no '...' to "
                       f"put {'them' if n_ellipsis != 1 else 'it'}")
        output: Labels = []
        for x in out_labels:
            output.extend(ellipsis_all if x == "..." else [x])
    else:
        # NumPy's and TF's implicit output: the broadcast dims, then the letters that
        # appear exactly once, in alphabetical (ASCII) order
        counts: dict[str, int] = {}
        for labels in inputs:
            for x in labels:
                counts[x] = counts.get(x, 0) + 1
        output = ellipsis_all + sorted(x for x, c in counts.items()
                                       if c == 1 and not x.startswith("."))
    return inputs, output


# --------------------------------------------------------------------------- contraction

def _check_sizes(equation: str, fn: str, operands: Sequence[Any],
                 inputs: Sequence[Labels]) -> dict[str, int | None]:
    """Each label's size in the result (None: unknown at trace time). A letter of two
    different known sizes is an error; broadcast (``...``) dims may also be 1 on one
    side, and then an unknown dim elsewhere leaves the size unknown."""
    known: dict[str, tuple[int, int, int]] = {}  # label: (size, operand, axis)
    unknown: set[str] = set()
    for i, (x, labels) in enumerate(zip(operands, inputs)):
        for axis, (label, dim) in enumerate(zip(labels, x.shape)):
            if dim is None:
                unknown.add(label)
                continue
            if label not in known:
                known[label] = (dim, i, axis)
                continue
            old, j, other_axis = known[label]
            if old == dim:
                continue
            if label.startswith(".") and 1 in (old, dim):
                if old == 1:
                    known[label] = (dim, i, axis)
                continue
            what = "broadcast dims of '...'" if label.startswith(".") else f"label {label!r}"
            raise _error(fn, equation,
                         f"{what} differ in size: {old} (operand {j} axis {other_axis}, "
                         f"shape {list(operands[j].shape)}) vs {dim} (operand {i} axis "
                         f"{axis}, shape {list(x.shape)})")
    sizes: dict[str, int | None] = {lb: None for lb in unknown}
    for label, (dim, _, _) in known.items():
        # a broadcast dim known only as 1 may be larger in an operand of unknown size
        sizes[label] = None if (label.startswith(".") and dim == 1 and label in unknown) \
            else dim
    return sizes


def _take_diagonals(x: Any, labels: Labels, equation: str, fn: str) -> tuple[Any, Labels]:
    """Replace each label repeated within one operand by the diagonal over those axes
    (``'ii->i'``): multiply by an identity matrix along the two axes and sum one away."""
    m = _math()
    labels = list(labels)
    while True:
        dup = next((lb for lb in labels if labels.count(lb) > 1), None)
        if dup is None:
            return x, labels
        p = labels.index(dup)
        q = labels.index(dup, p + 1)
        n = x.shape[p] if x.shape[p] is not None else x.shape[q]
        if n is None:
            raise _error(fn, equation, f"label {dup!r} repeats within one operand (a "
                                       f"diagonal), which needs its size known when the "
                                       f"graph is built; operand shape {list(x.shape)}")
        shape = [1] * len(labels)
        shape[p] = shape[q] = n
        eye = np.eye(n, dtype=x.dtype.np).reshape(shape)
        x = m.reduce_sum(x * eye, axis=q)
        del labels[q]


def _sum_out(x: Any, labels: Labels, drop: set[str]) -> tuple[Any, Labels]:
    """`x` summed over the axes whose labels are in `drop`."""
    axes = [i for i, lb in enumerate(labels) if lb in drop]
    if not axes:
        return x, labels
    return _math().reduce_sum(x, axis=axes), [lb for lb in labels if lb not in drop]


def _permute(x: Any, labels: Labels, order: Labels) -> Any:
    """`x` with its axes in `order` (a permutation of `labels`)."""
    perm = [labels.index(lb) for lb in order]
    return x if perm == list(range(len(perm))) else _array().transpose(x, perm)


def _flat(dims: Sequence[int | None]) -> int | None:
    """The product of `dims`; None if any is unknown."""
    if any(d is None for d in dims):
        return None
    return int(np.prod(dims, dtype=np.int64))


def _groupable(x: Any, lead: int, sizes: list[Sequence[int | None]]) -> bool:
    """Whether `_group` can flatten: no reshape needed, or one to dims all known."""
    return all(len(g) <= 1 for g in sizes) or \
        (None not in x.shape[:lead] and all(_flat(g) is not None for g in sizes))


def _group(x: Any, lead: int, sizes: list[Sequence[int | None]]) -> Any:
    """`x` (dims: `lead` batch dims, then the groups of `sizes`) with each group flattened
    to one dim (an empty group becomes a dim of size 1); see `_groupable`."""
    a = _array()
    if all(len(g) <= 1 for g in sizes):
        for i, g in enumerate(sizes):
            if not g:
                x = a.expand_dims(x, lead + i)
        return x
    return a.reshape(x, list(x.shape[:lead]) + [_flat(g) for g in sizes])


def _contract_pair(a: Any, la: Labels, b: Any, lb: Labels, keep: set[str],
                   sizes: dict[str, int | None]) -> tuple[Any, Labels]:
    """The contraction of two operands: labels in both and in `keep` are batch labels,
    labels in both but not in `keep` are summed over."""
    m = _math()
    a, la = _sum_out(a, la, {x for x in la if x not in keep and x not in lb})
    b, lb = _sum_out(b, lb, {x for x in lb if x not in keep and x not in la})
    batch = [x for x in la if x in lb and x in keep]
    contracted = [x for x in la if x in lb and x not in keep]
    a_free = [x for x in la if x not in lb]
    b_free = [x for x in lb if x not in la]
    out_labels = batch + a_free + b_free
    a_t = _permute(a, la, batch + a_free + contracted)
    b_t = _permute(b, lb, batch + contracted + b_free)
    nb = len(batch)
    a_dims = [list(a_t.shape[nb:nb + len(a_free)]), list(a_t.shape[nb + len(a_free):])]
    b_dims = [list(b_t.shape[nb:nb + len(contracted)]), list(b_t.shape[nb + len(contracted):])]
    out_dims = [sizes[x] for x in batch] + a_dims[0] + b_dims[1]
    squeeze_only = len(a_free) <= 1 and len(b_free) <= 1
    if _groupable(a_t, nb, a_dims) and _groupable(b_t, nb, b_dims) and \
            (squeeze_only or None not in out_dims):
        product = m.matmul(_group(a_t, nb, a_dims), _group(b_t, nb, b_dims))
        if len(a_free) == 1 and len(b_free) == 1:
            return product, out_labels
        if squeeze_only:
            # an empty side was a dim of size 1 (M or N) in the product
            squeeze = [nb + i for i, g in enumerate((a_free, b_free)) if not g]
            return _array().squeeze(product, axis=squeeze), out_labels
        return _array().reshape(product, out_dims), out_labels
    # some flattening needs a dim unknown at trace time: broadcast, multiply and sum
    order = batch + a_free + b_free + contracted
    product = _aligned(a, la, order) * _aligned(b, lb, order)
    if contracted:
        product = m.reduce_sum(product, axis=list(range(len(out_labels), len(order))))
    return product, out_labels


def _aligned(x: Any, labels: Labels, order: Labels) -> Any:
    """`x` transposed to the order of its labels within `order`, with size-1 dims where
    `order` has labels `x` lacks, so that it broadcasts against the other operand."""
    x = _permute(x, labels, [lb for lb in order if lb in labels])
    for i, lb in enumerate(order):
        if lb not in labels:
            x = _array().expand_dims(x, i)
    return x


def einsum(equation: str, *inputs: TensorLike, **kwargs: Any) -> Any:
    """Einstein summation, as ``tf.einsum``/``np.einsum``: ``'ij,jk->ik'`` is a matrix
    product, ``'bij,bjk->bik'`` a batched one, ``'ii->i'`` a diagonal, ``'ij->'`` a sum,
    ``'...ij->...ji'`` a transpose of the last two axes. Labels are letters; ``...``
    stands for broadcast dims (NumPy's rules); without ``->`` the output is the ``...``
    dims, then the letters used exactly once in alphabetical order. Any number of
    operands (contracted left to right); they must share one numeric dtype.

    Malformed equations raise ShapeError (a ValueError) naming the equation and what is
    wrong."""
    name = kwargs.pop("name", None)
    kwargs.pop("optimize", None)  # TF's contraction-order hint; the order is left to right
    if kwargs:
        raise _misuse("einsum", f"unexpected keyword arguments {sorted(kwargs)}")
    if not inputs:
        raise _error("einsum", equation, "no operands given")
    operands = list(convert_operands(*inputs))
    labels, output = parse(equation, [x.ndim for x in operands])
    sizes = _check_sizes(equation, "einsum", operands, labels)
    pairs = [_take_diagonals(x, lb, equation, "einsum") for x, lb in zip(operands, labels)]
    x, lx = pairs[0]
    for k in range(1, len(pairs)):
        keep = set(output).union(*(set(lb) for _, lb in pairs[k + 1:]))
        x, lx = _contract_pair(x, lx, *pairs[k], keep, sizes)
    x, lx = _sum_out(x, lx, {lb for lb in lx if lb not in output})
    result = _permute(x, lx, output)
    if name is not None or result is inputs[0]:
        result = _array().identity(result, name=name)
    return result


def _misuse(fn: str, message: str) -> DTypeError:
    """A DTypeError (a TypeError) for a misuse of ``tw.<fn>`` found in Python, naming the
    function and the user's line."""
    loc = user_location()
    return DTypeError(message, op=f"tw.{fn}", location=str(loc) if loc else None)


def _axes_list(value: Any, rank: int, role: str) -> list[int]:
    """An int or a list of ints as a list of non-negative axes of a tensor of `rank`."""
    arr = np.asarray(value)
    if (arr.size and arr.dtype.kind not in "iu") or arr.ndim > 1:
        raise _misuse("tensordot", f"{role} must be an int or a list of ints, got {value!r}")
    axes = [int(v) for v in arr.reshape(-1)]
    for ax in axes:
        if not -rank <= ax < rank:
            loc = user_location()
            raise ShapeError(f"{role} holds axis {ax}, out of range for a tensor of rank "
                             f"{rank}", op="tensordot", location=str(loc) if loc else None)
    axes = [ax % rank for ax in axes]
    if len(set(axes)) != len(axes):
        loc = user_location()
        raise ShapeError(f"{role} repeats an axis: {value!r}", op="tensordot",
                         location=str(loc) if loc else None)
    return axes


def tensordot(a: TensorLike, b: TensorLike, axes: Any, name: str | None = None) -> Any:
    """Sum of products over the given axes of `a` and `b`, as ``tf.tensordot``: `axes` is
    an int N (the last N axes of `a` with the first N of `b`; 0 is the outer product), or
    a pair ``[a_axes, b_axes]`` of ints or equally long lists of ints. The result's axes
    are `a`'s free axes in order, then `b`'s."""
    a, b = convert_operands(a, b)
    ra, rb = a.ndim, b.ndim
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if n < 0 or n > min(ra, rb):
            loc = user_location()
            raise ShapeError(f"axes={n} must be between 0 and the smaller rank "
                             f"({min(ra, rb)}): a is {a.dtype.ir_name}{list(a.shape)}, b is "
                             f"{b.dtype.ir_name}{list(b.shape)}", op="tensordot",
                             location=str(loc) if loc else None)
        a_axes, b_axes = list(range(ra - n, ra)), list(range(n))
    else:
        if isinstance(axes, (str, bytes)) or not isinstance(axes, (Sequence, np.ndarray)) \
                or len(axes) != 2:
            raise _misuse("tensordot", f"axes must be an int or a pair [a_axes, b_axes], "
                                       f"got {axes!r}")
        a_axes = _axes_list(axes[0], ra, "axes[0]")
        b_axes = _axes_list(axes[1], rb, "axes[1]")
        if len(a_axes) != len(b_axes):
            loc = user_location()
            raise ShapeError(f"axes[0] and axes[1] must have the same length, got "
                             f"{list(axes[0]) if np.ndim(axes[0]) else axes[0]} and "
                             f"{list(axes[1]) if np.ndim(axes[1]) else axes[1]}",
                             op="tensordot", location=str(loc) if loc else None)
    if ra + rb > len(string.ascii_letters):
        raise ShapeError(f"tensordot of ranks {ra} and {rb}: at most "
                         f"{len(string.ascii_letters)} axes in all", op="tensordot")
    letters = iter(string.ascii_letters)
    la = [next(letters) for _ in range(ra)]
    lb = [next(letters) for _ in range(rb)]
    for i, j in zip(a_axes, b_axes):
        lb[j] = la[i]
    out = [x for i, x in enumerate(la) if i not in a_axes] + \
        [x for j, x in enumerate(lb) if j not in b_axes]
    equation = f"{''.join(la)},{''.join(lb)}->{''.join(out)}"
    return einsum(equation, a, b, name=name)


__all__ = ["einsum", "tensordot"]
