"""Conditional accumulators: where synchronous replicas meet (TensorFlow's
``ConditionalAccumulator``, the paper's section 4.4).

Workers `apply_grad` gradients computed at some `local_step`; a gradient from a step
older than the accumulator's `global_step` is stale and dropped. The chief's `take_grad(m)`
waits until `m` fresh gradients have arrived, returns their mean (or sum), resets, and
moves the accumulator's step on by one, so gradients still in flight for the step just
taken (the backup workers' m+1-th..n-th) are dropped when they arrive. Setting the step
to another value drops the gradients held (stale under the new step).
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from ..compiler.dtypes import DType, as_dtype
from ..compiler.types import format_shape
from ..errors import InvalidArgumentError
from .queues import Waiter

log = logging.getLogger("tensorweave.accumulators")


class ConditionalAccumulator:
    """Accumulates dense gradients of one dtype and shape (unknown dims: any)."""

    def __init__(self, name: str, dtype: DType | str, shape: tuple,
                 reduction_type: str = "MEAN") -> None:
        if reduction_type not in ("MEAN", "SUM"):
            raise InvalidArgumentError(f"reduction_type must be 'MEAN' or 'SUM', got "
                                       f"{reduction_type!r}")
        self.name = name
        self.dtype = as_dtype(dtype)
        self.shape = tuple(shape)
        self.reduction_type = reduction_type
        self._cond = threading.Condition()
        self._sum: np.ndarray | None = None
        self._count = 0
        self._global_step = 0
        self.dropped = 0  # stale gradients dropped so far (for tests and logs)

    @property
    def global_step(self) -> int:
        return self._global_step

    def num_accumulated(self) -> int:
        with self._cond:
            return self._count

    def _check(self, grad: np.ndarray) -> np.ndarray:
        grad = np.asarray(grad)
        if grad.dtype != self.dtype.np:
            raise InvalidArgumentError(f"accumulator '{self.name}' holds {self.dtype.ir_name}, got "
                                       f"a gradient of dtype {grad.dtype}")
        ok = len(grad.shape) == len(self.shape) and all(
            d is None or d == g for d, g in zip(self.shape, grad.shape))
        if not ok or (self._sum is not None and self._sum.shape != grad.shape):
            want = format_shape(self.shape if self._sum is None else self._sum.shape)
            raise InvalidArgumentError(f"accumulator '{self.name}' expects gradients of shape "
                                       f"{want}, got {format_shape(grad.shape)}")
        return grad

    def apply_grad(self, local_step: int, grad: np.ndarray) -> bool:
        """Add `grad`, computed at `local_step`; returns False (and drops it) when it is
        stale, i.e. older than the accumulator's global step."""
        with self._cond:
            if int(local_step) < self._global_step:
                self.dropped += 1
                return False
            grad = self._check(grad)
            if self._sum is None:
                self._sum = np.array(grad, copy=True)
            else:
                self._sum += grad
            self._count += 1
            self._cond.notify_all()
            return True

    def _take(self, num_required: int, waiter: Waiter | None) -> tuple[object, int]:
        """Wait for `num_required` gradients; (what was accumulated, how many). Resets
        the accumulation and advances the global step by one."""
        if num_required < 1:
            raise InvalidArgumentError(f"take_grad needs num_required >= 1, got {num_required}")
        waiter = waiter or Waiter()
        what = f"take_grad({num_required}) from accumulator '{self.name}'"
        with waiter.wake_on_cancel(self._wake) as poll, self._cond:
            while self._count < num_required:
                waiter.check(what)
                self._cond.wait(waiter.timeout(poll))
            taken, count = self._reset(), self._count
            self._count = 0
            self._global_step += 1
        return taken, count

    def _reset(self) -> object:
        total, self._sum = self._sum, None
        return total

    def take_grad(self, num_required: int, waiter: Waiter | None = None) -> np.ndarray:
        """Wait for `num_required` gradients; their mean (or sum). Resets the sum and
        advances the global step by one."""
        total, count = self._take(num_required, waiter)
        out = total / np.asarray(count, total.dtype) if self.reduction_type == "MEAN" else total
        return out.astype(self.dtype.np, copy=False)

    def set_global_step(self, step: int) -> None:
        """Make `step` the accumulator's step: gradients from earlier steps are stale.
        Moving to another step drops the gradients held: they were computed at the old
        step, so they are stale now (a sync-replicas chief that restarts and restores an
        older checkpoint must not average in gradients of parameters it no longer has;
        TensorFlow's kernel keeps them)."""
        with self._cond:
            if int(step) < self._global_step:
                log.warning("accumulator %s: global step goes back from %d to %d", self.name,
                            self._global_step, int(step))
            if int(step) != self._global_step and self._count:
                log.warning("accumulator %s: %d gradient(s) of step %d dropped (the step is "
                            "now %d)", self.name, self._count, self._global_step, int(step))
                self.dropped += self._count
                self._reset()
                self._count = 0
            self._global_step = int(step)

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def __repr__(self) -> str:
        return (f"<ConditionalAccumulator {self.name}: {self.dtype.ir_name}"
                f"{format_shape(self.shape)}, {self._count} at step {self._global_step}>")


class SparseConditionalAccumulator(ConditionalAccumulator):
    """Accumulates sparse gradients (rows `indices` of a tensor of shape `shape` hold
    `values`): the same stale-gradient and step rules; `take_indexed_slices` returns the
    rows touched by any gradient, each the sum of its slices divided (MEAN) by the
    number of gradients that held that row — TensorFlow's element-wise average, so a
    row one worker of n looked up moves by that worker's gradient, not 1/n of it. Only
    those rows move and get updated."""

    def __init__(self, name: str, dtype: DType | str, shape: tuple,
                 reduction_type: str = "MEAN") -> None:
        super().__init__(name, dtype, shape, reduction_type)
        self._parts: list[tuple[np.ndarray, np.ndarray]] = []

    def apply_indexed_slices(self, local_step: int, indices: np.ndarray,
                             values: np.ndarray) -> bool:
        """Add a sparse gradient computed at `local_step` (False: stale, dropped)."""
        indices = np.asarray(indices).astype(np.int64).reshape(-1)
        values = np.asarray(values)
        if values.dtype != self.dtype.np:
            raise InvalidArgumentError(f"accumulator '{self.name}' holds {self.dtype.ir_name}, "
                                       f"got values of dtype {values.dtype}")
        rows = tuple(self.shape[1:])
        if values.shape[:1] != indices.shape or (
                len(values.shape) - 1 != len(rows) or
                any(d is not None and d != v for d, v in zip(rows, values.shape[1:]))):
            want = format_shape((indices.shape[0], *rows))
            raise InvalidArgumentError(f"accumulator '{self.name}': {indices.shape[0]} indices "
                                       f"need values of shape {want}, got "
                                       f"{format_shape(values.shape)}")
        n = self.shape[0]
        if indices.size and (indices.min() < 0 or (n is not None and indices.max() >= n)):
            raise InvalidArgumentError(f"accumulator '{self.name}': an index is out of "
                                       f"range [0, {n})")
        with self._cond:
            if int(local_step) < self._global_step:
                self.dropped += 1
                return False
            self._parts.append((indices, np.array(values, copy=True)))
            self._count += 1
            self._cond.notify_all()
            return True

    def take_indexed_slices(self, num_required: int,
                            waiter: Waiter | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Wait for `num_required` gradients; (unique sorted indices, their averaged rows:
        each row over the gradients that held it). Resets and advances the global step."""
        parts, _ = self._take(num_required, waiter)
        indices = np.concatenate([i for i, _ in parts])
        values = np.concatenate([v for _, v in parts])
        unique, where = np.unique(indices, return_inverse=True)
        summed = np.zeros((len(unique), *values.shape[1:]), values.dtype)
        np.add.at(summed, where, values)
        if self.reduction_type == "MEAN":
            held = np.zeros(len(unique), np.int64)  # gradients holding each row
            start = 0
            for part_indices, _ in parts:
                held[np.unique(where[start:start + len(part_indices)])] += 1
                start += len(part_indices)
            summed /= held.astype(summed.dtype).reshape(-1, *[1] * (summed.ndim - 1))
        return unique, summed

    def _reset(self) -> object:
        parts, self._parts = self._parts, []
        return parts

    def apply_grad(self, local_step: int, grad: np.ndarray) -> bool:
        raise InvalidArgumentError(f"accumulator '{self.name}' is sparse: apply IndexedSlices")

    def take_grad(self, num_required: int, waiter: Waiter | None = None) -> np.ndarray:
        raise InvalidArgumentError(f"accumulator '{self.name}' is sparse: take IndexedSlices")


def check_same_accumulator(acc: object, dtype: DType | str, shape: tuple) -> ConditionalAccumulator:
    """`acc` if it is an accumulator of `dtype` and `shape` (a shared name reused for
    something else is an error)."""
    if not isinstance(acc, ConditionalAccumulator):
        raise InvalidArgumentError(f"resource {getattr(acc, 'name', acc)!r} is not an accumulator")
    if acc.dtype != as_dtype(dtype) or acc.shape != tuple(shape):
        raise InvalidArgumentError(
            f"accumulator '{acc.name}' exists as {acc.dtype.ir_name}{format_shape(acc.shape)}, "
            f"not {as_dtype(dtype).ir_name}{format_shape(tuple(shape))}")
    return acc


__all__ = ["ConditionalAccumulator", "SparseConditionalAccumulator", "check_same_accumulator"]
