"""Running a planned step on the device: `GpuStep` binds a `StepPlan` to memory once and
then runs it per call as one host-side launch sequence.

Binding allocates every temporary from the caching allocator in plan order, giving a
block back to the pool after its last use, so temporaries with disjoint live ranges
share blocks (the step keeps the blocks it ends up with, and returns them to the pool
when it is dropped). Constants are uploaded once. Every kernel is loaded and configured
(grid, block, flattened argument views) at bind time, so a call is: upload arguments,
bring variables up to date, run the prepared launches (host calls for nodes without a
GPU kernel download their inputs and upload their outputs), check the status array
once, download results, write assigned variables back.

Device loops run their body's prepared launches (one closure per iteration pattern of a
double buffer's or a stack's entries). A loop whose trip count is known only at run time
also runs its cond's launches and downloads one flag per iteration. Stack entries whose
cursor depends on such counts (or in a stack that grows) are found when the action runs:
one closure per distinct set of entries, made at first use, and made again after a stack
grew into a new block.

Kernels that can fail (integer division by zero, a label or index out of range) write a
code into their own entry of the step's status array (GatherNd also the bad index's
coordinates, in the entries after it); the step reads it once at its
end, or before a host call that could consume a failed kernel's output. A failed step
writes no variable back, and forgets the device copies of the variables it updates (the
next step uploads them again from their unchanged host values).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import FailedPreconditionError, InvalidArgumentError
from ...runtime.kernel_context import CallCounters
from ...runtime.resources import ResourceManager
from . import transfer
from .allocator import Block, CachingAllocator, round_size
from .compile import configured
from .step import Branch, Copy, HostCall, Launch, Loop, Offset, Slot, StepPlan, walk_actions
from .variables import Mirror, mirror


def _period(slot: Slot) -> int:
    """After how many iterations the entry `slot` names repeats."""
    if slot.row is None or not slot.row[1] % slot.rows:
        return 1
    return slot.rows // math.gcd(slot.row[1] % slot.rows, slot.rows)


def _slots(action: Any) -> list[Slot]:
    """The slots a launch, copy or host call reads and writes (none for a loop)."""
    if isinstance(action, Launch):
        return list(action.args)
    if isinstance(action, Copy):
        return [action.src, action.dst]
    if isinstance(action, HostCall):
        return [*action.inputs, *action.outputs]
    return []


def _lcm(a: int, b: int) -> int:
    return a * b // math.gcd(a, b)


class Mismatch(Exception):
    """The call does not fit the bound step (dtype or shape of an argument)."""


def _flat(a: Any) -> Any:
    return a if a.ndim == 1 else a.reshape(a.size)


class GpuStep:
    """A `StepPlan` bound to device memory (see the module docstring)."""

    def __init__(self, plan: StepPlan, resources: ResourceManager, counters: CallCounters,
                 cuda: Any, allocator: CachingAllocator) -> None:
        self.plan = plan
        self.resources = resources
        self.counters = counters
        self.cuda = cuda
        self.allocator = allocator
        self._lock = threading.Lock()
        self._blocks: list[Block] = []
        self._bind_temps()
        self._arg_blocks = [self._own(s.size * s.dtype.np.itemsize) for s in plan.args]
        self._args = [self._array(s) for s in plan.args]
        self._consts = [self._upload_const(c) for c in plan.consts]
        self._states = [resources.variable(n) for n in plan.var_names]
        self._mirrors: list[Mirror] = [mirror(st, allocator) for st in self._states]
        self._by_name = dict(zip(plan.var_names, self._mirrors))
        self._locks = [st.lock for st in sorted(self._states, key=lambda st: st.name)]
        # the trip count of each device loop's last run (the ones known only at run time),
        # by node name (the last loop of that name to run: names repeat across regions),
        # and by `Loop.key` for the stack cursors that depend on them
        self.trips: dict[str, int] = {}
        self._counts: dict[str, int] = {}
        self._status = cuda.device_array(max(1, plan.n_status), np.int32)
        self._zeros = np.zeros(max(1, plan.n_status), np.int32)
        everything = walk_actions(plan.actions)
        self._failing: list[Launch] = [a for a in everything
                                       if isinstance(a, Launch) and a.status_index is not None]
        # entries of growable stack buffers now; their blocks' generation (a grown buffer
        # has new views: closures made before are dropped)
        self._rows: dict[int, int] = {}
        self._generation = 0
        self._calls: list[Callable[[], None]] = [self._top_level(a) for a in plan.actions]
        self._results = [self._array(s) for s in plan.results]
        # kernels in the plan (a loop body's once, however often it runs)
        self.launches = sum(1 for a in everything if isinstance(a, Launch))
        self.has_loops = any(isinstance(a, Loop) or (isinstance(a, HostCall) and
                                                     a.node.op == "While")
                             for a in everything)

    # ------------------------------------------------------------------ binding
    def _bind_temps(self) -> None:
        """One block per temporary; a temporary whose live range starts after another's
        ended takes that one's block when their rounded sizes match."""
        plan = self.plan
        self._tmp: list[Block] = [None] * len(plan.temps)  # type: ignore[list-item]
        free: dict[int, list[Block]] = {}
        live: list[tuple[int, Block]] = []  # (last use, block)
        for i in sorted(range(len(plan.temps)), key=lambda i: plan.live[i][0]):
            start, end = plan.live[i]
            still = []
            for e, blk in live:
                if e < start:
                    free.setdefault(blk.nbytes, []).append(blk)
                else:
                    still.append((e, blk))
            live = still
            if i in plan.stack_buffers and plan.stack_buffers[i][1]:
                self._tmp[i] = self._own(plan.temps[i])  # grown: a block of its own
                continue
            pool = free.get(round_size(plan.temps[i]))
            if pool:
                blk = pool.pop()
            else:
                blk = self.allocator.allocate(plan.temps[i])
                self._blocks.append(blk)
            self._tmp[i] = blk
            live.append((end, blk))

    def _own(self, nbytes: int) -> Block:
        blk = self.allocator.allocate(max(1, nbytes))
        self._blocks.append(blk)
        return blk

    def _upload_const(self, value: np.ndarray) -> Any:
        blk = self._own(value.nbytes)
        arr = blk.view(value.dtype, value.shape)
        if value.size:
            transfer.to_device(arr, value)
        return arr

    def _array(self, slot: Slot, t: int = 0) -> Any:
        """The device array of `slot` (its storage, shaped as the value) in iteration `t`
        of the loop whose body uses it (a row buffer's entry for that iteration)."""
        kind, key = slot.storage.kind, slot.storage.key
        if kind == "tmp":
            if slot.row is not None:
                return self._tmp[key].view_at(slot.dtype.np, slot.shape,
                                              self._entry(slot, t) * slot.row_stride)
            return self._tmp[key].view(slot.dtype.np, slot.shape)
        if kind == "const":
            return self._consts[key].reshape(slot.shape)
        if kind == "var":
            return self._by_name[key].array.reshape(slot.shape)
        if kind == "arg":
            return self._arg_blocks[key].view(slot.dtype.np, slot.shape)
        raise AssertionError(kind)

    def _entry(self, slot: Slot, t: int, node: Any = None) -> int:
        """Which entry of its row buffer `slot` names in iteration `t`. A stack entry
        whose cursor depends on run-time trip counts (or of a growable stack) is checked
        against the stack's size as the reference stack does; a growable stack grows."""
        base, step = slot.row  # type: ignore[misc]
        key = slot.storage.key
        if slot.storage.kind != "tmp" or key not in self.plan.stack_buffers:
            return (base + step * t) % slot.rows  # a double buffer's entry
        entry = (base.value(self._counts) if isinstance(base, Offset) else base) + step * t
        rows = self._rows.get(key, slot.rows)
        if 0 <= entry < rows:
            return entry
        name, growable = self.plan.stack_buffers[key]
        context = node.error_context() if node is not None else {}
        if entry < 0:
            raise InvalidArgumentError(f"pop from the empty stack '{name}': it was popped "
                                       f"more often than pushed", **context)
        limit = self.plan.stack_limits.get(key, -1)  # (a large max_size: grown up to it)
        if not growable or 0 <= limit <= entry:
            raise InvalidArgumentError(f"stack '{name}' is full "
                                       f"({rows if limit < 0 else limit} entries)", **context)
        more = max(2 * rows, entry + 1)
        self._grow(slot, more if limit < 0 else min(more, limit))
        return entry

    def _grow(self, slot: Slot, rows: int) -> None:
        """Give the growable stack buffer of `slot` `rows` entries: a new block, the old
        entries copied into it (device to device), the old block freed; the closures
        holding views of the old one are dropped (`_generation`)."""
        key = slot.storage.key
        old = self._tmp[key]
        used = self._rows.get(key, slot.rows) * slot.row_stride
        new = self.allocator.allocate(rows * slot.row_stride)
        new.view_at(np.uint8, (used,), 0).copy_to_device(old.view_at(np.uint8, (used,), 0))
        self._blocks[self._blocks.index(old)] = new
        self.allocator.free(old)
        self._tmp[key] = new
        self._rows[key] = rows
        self._generation += 1

    def _run_time(self, slot: Slot, dynamic: bool) -> bool:
        """Whether `slot`'s entry must be found when the action runs: a stack entry whose
        cursor depends on run-time trip counts, moves with the iterations of a loop whose
        count is known only then, or is in a stack that grows."""
        if slot.row is None or slot.storage.kind != "tmp" or \
                slot.storage.key not in self.plan.stack_buffers:
            return False
        return isinstance(slot.row[0], Offset) or bool(dynamic and slot.row[1]) or \
            self.plan.stack_buffers[slot.storage.key][1]

    def _top_level(self, action: Any) -> Callable[[], None]:
        """The closure of an action outside loops."""
        if isinstance(action, Branch):
            branch = self._branch(action, 1)
            return lambda: branch(0)
        if not isinstance(action, Loop) and any(self._run_time(s, False)
                                                for s in _slots(action)):
            item = self._resolving(action)
            return lambda: item(0)
        return self._prepare(action)

    def _resolving(self, action: Any) -> Callable[[int], None]:
        """`action` in iteration t, its stack entries found when it runs: one closure per
        distinct set of entries, made at first use (and again after a stack grew)."""
        rows = [s for s in _slots(action) if s.row is not None]
        cache: dict[tuple, Callable[[], None]] = {}
        node = action.node

        def run(t: int) -> None:
            entries = tuple(self._entry(s, t, node) for s in rows)  # (may grow a stack)
            key = (self._generation, entries)
            fn = cache.get(key)
            if fn is None:
                if len(cache) >= 4096:  # a long loop's entries: keep memory bounded
                    cache.clear()
                fn = cache[key] = self._prepare(action, t)
            fn()
        return run

    def _item(self, action: Any, trips: int | None) -> Callable[[int], None]:
        """`action` in a loop body or cond, as a function of the iteration t: its
        prepared variants (`_variants`), or found at run time (`_resolving`)."""
        if isinstance(action, Branch):
            return self._branch(action, trips)
        if any(self._run_time(s, trips is None) for s in _slots(action)):
            return self._resolving(action)
        variants = self._variants(action, trips)
        if len(variants) == 1:
            only = variants[0]
            return lambda t: only()
        return lambda t: variants[t % len(variants)]()

    def _branch(self, branch: Branch, trips: int | None) -> Callable[[int], None]:
        """An If on the device, in iteration t of the loop it is in (if any): download
        its predicate into a pinned one-element buffer, run one branch's actions."""
        then = [self._item(a, trips) for a in branch.then]
        orelse = [self._item(a, trips) for a in branch.orelse]
        slot = branch.predicate
        flag = self.cuda.pinned_array(1, slot.dtype.np)
        if self._run_time(slot, trips is None):  # a popped entry (a gradient's If)
            def predicate(t: int) -> Any:
                return _flat(self._array(slot, t))
        else:
            arrays = [_flat(self._array(slot, t)) for t in range(_period(slot))]

            def predicate(t: int) -> Any:
                return arrays[t % len(arrays)]

        def run(t: int) -> None:
            predicate(t).copy_to_host(flag)
            for item in (then if flag[0] else orelse):
                item(t)
        return run

    def _prepare(self, action: Any, t: int = 0) -> Callable[[], None]:
        """The closure running `action` (in iteration `t` of its loop, if any)."""
        if isinstance(action, Loop):
            return self._loop(action)
        if isinstance(action, Launch):
            fn = configured(action.kernel)
            args = [_flat(self._array(s, t)) for s in action.args]
            if action.status_index is not None:
                k = action.status_index
                args.append(self._status[k:k + action.kernel.status_width])
            if action.call_index:
                return self._with_call_index(action, fn, args)
            return lambda: fn(*args)
        if isinstance(action, Copy):
            src, dst = self._array(action.src, t), self._array(action.dst, t)
            if not src.size:
                return lambda: None
            return lambda: dst.copy_to_device(src)
        if isinstance(action, HostCall):
            return self._host_call(action)
        raise AssertionError(action)

    def _variants(self, action: Any, trips: int | None) -> list[Callable[[], None]]:
        """`action`'s closures, one per distinct iteration pattern of its entries (its
        period: 2 for a double buffer, the trip count for a stack's), all made here."""
        period = 1
        for s in _slots(action):
            period = _lcm(period, _period(s))
        if trips is not None:
            period = min(period, trips)
        return [self._prepare(action, t) for t in range(period)]

    def _loop(self, loop: Loop) -> Callable[[], None]:
        """Run the body's prepared actions `loop.trips` times, or while the cond says so
        when the trip count is known only at run time (`_dynamic_loop`)."""
        if loop.trips is None:
            return self._dynamic_loop(loop)
        trips = loop.trips
        body = [self._item(action, trips) for action in loop.body]

        def run() -> None:
            for t in range(trips):
                for item in body:
                    item(t)
        return run

    def _dynamic_loop(self, loop: Loop) -> Callable[[], None]:
        """A loop whose trip count is known only at run time: each iteration runs the
        cond's launches and downloads its one-element predicate (into a pinned host
        buffer), then runs the body while it is true, at most `loop.limit` times, as the
        reference While does. The status array is read after iterations 1, 2, 4, 8 ...
        when the step has kernels that can fail: a failed kernel's garbage could keep the
        cond true, and the loop then stops within twice the iterations it failed in."""
        cond = [self._item(action, None) for action in loop.cond]
        body = [self._item(action, None) for action in loop.body]
        assert loop.predicate is not None
        predicate = [_flat(self._array(loop.predicate, t))
                     for t in range(_period(loop.predicate))]
        flag = self.cuda.pinned_array(1, loop.predicate.dtype.np)
        finals = [(self._array(src), self._array(dst)) for src, dst in loop.finals
                  if src.size]
        limit, name, key, check = loop.limit, loop.node.name, loop.key, bool(self._failing)

        def run() -> None:
            t, next_check = 0, 1
            try:
                while limit < 0 or t < limit:
                    for item in cond:
                        item(t)
                    predicate[t % len(predicate)].copy_to_host(flag)
                    if not flag[0]:
                        break
                    for item in body:
                        item(t)
                    t += 1
                    if check and t == next_check:
                        self._check_status()
                        next_check *= 2
            finally:
                self.trips[name] = self._counts[key] = t  # (also a failed run's count)
            if t % 2:  # the double buffers' last values are in entry 1
                for src, dst in finals:
                    dst.copy_to_device(src)
        return run

    def _with_call_index(self, action: Launch, fn: Any, args: list[Any]) -> Callable[[], None]:
        """A stateful random op's launch: its call index comes from the executable's
        counters, which its host calls and the dataflow executor also advance, so a
        function draws one stream whichever way each call runs (4 bytes up per launch)."""
        index = self.cuda.device_array(1, np.uint32)
        host = np.zeros(1, np.uint32)
        key = action.node.name

        def run() -> None:
            host[0] = self.counters.next(key) % 2**32
            index.copy_to_device(host)
            fn(index, *args)
        return run

    def _host_call(self, action: HostCall) -> Callable[[], None]:
        from ..reference.executor import PreparedKernel
        kernel = PreparedKernel(action.node)
        ins = [self._array(s) for s in action.inputs]
        outs = [self._array(s) for s in action.outputs]
        node = action.node
        check_first = bool(self._failing)

        def run() -> None:
            if check_first:
                self._check_status()
            host_ins = [transfer.to_host(a) for a in ins]
            with np.errstate(all="ignore"):
                results = kernel(host_ins, self.resources, self.counters)
            for out, r, v in zip(outs, results, node.outputs):
                r = np.asarray(r)
                if r.shape != out.shape or r.dtype != out.dtype:
                    raise InvalidArgumentError(
                        f"produced {r.dtype}{list(r.shape)}, the GPU step expects {v.type}",
                        **node.error_context())
                if r.size:
                    transfer.to_device(out, r)
        return run

    # ------------------------------------------------------------------ running
    def _check_status(self) -> None:
        status = self._status.copy_to_host()
        for launch in self._failing:
            k = launch.status_index
            code = int(status[k])
            if code:
                self._status.copy_to_device(self._zeros)
                details = [int(v) for v in status[k + 1:k + launch.kernel.status_width]]
                message, node = launch.errors(code, *details)
                raise InvalidArgumentError(message, **node.error_context())

    def __call__(self, arrays: Sequence[Any], keep_on_device: bool = False) -> list[Any]:
        """Run the step on one array per graph argument: host arrays, or C-contiguous
        numba device arrays (copied device-to-device into the step's argument buffers,
        never through the host). Returns host results, or with `keep_on_device` fresh
        `interop.DeviceTensor`s (one device-to-device copy each: the step's own result
        buffers are reused by the next call)."""
        plan = self.plan
        for a, s in zip(arrays, plan.args):
            if a.dtype != s.dtype.np or tuple(a.shape) != s.shape:
                raise Mismatch
        with self._lock:
            for lock in self._locks:
                lock.acquire()
            try:
                return self._run(arrays, keep_on_device)
            finally:
                for lock in self._locks:
                    lock.release()

    def _run(self, arrays: Sequence[Any], keep_on_device: bool = False) -> list[Any]:
        plan = self.plan
        for k, m in enumerate(self._mirrors):
            if not m.to_device() and plan.var_first_access[k] == "read":
                raise FailedPreconditionError(
                    f"attempting to use uninitialized variable '{m.state.name}'")
        for dev, a in zip(self._args, arrays):
            if a.size:
                if isinstance(a, np.ndarray):
                    transfer.to_device(dev, a)
                else:  # a device array: a device-to-device copy
                    dev.copy_to_device(a)
        if self._failing:
            self._status.copy_to_device(self._zeros)
        try:
            for call in self._calls:
                call()
            if self._failing:
                self._check_status()
        except BaseException:
            # the step raises before writing back: the host values stay as they were,
            # and a device buffer the failed step may have changed is uploaded again
            for name in plan.assigned:
                self._by_name[name].snapshot = None
            raise
        if keep_on_device:
            results = [self._fresh_device_copy(r) for r in self._results]
        else:
            results = [transfer.to_host(r) if r.size else np.empty(r.shape, r.dtype)
                       for r in self._results]
        for name in plan.assigned:
            self._by_name[name].to_host()
        return results

    def _fresh_device_copy(self, array: Any) -> Any:
        """A `DeviceTensor` in a block of its own holding a copy of device `array`."""
        from .interop import DeviceTensor
        dtype, shape = np.dtype(array.dtype), tuple(array.shape)
        blk = self.allocator.allocate(max(1, array.size * dtype.itemsize))
        out = blk.view(dtype, shape)
        if array.size:
            out.copy_to_device(array)
        return DeviceTensor(out, blk, self.allocator)

    def release(self) -> None:
        """Give the step's blocks back to the allocator's pool."""
        blocks, self._blocks = self._blocks, []
        for blk in blocks:
            self.allocator.free(blk)

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    @property
    def device_bytes(self) -> int:
        """Device memory the step holds (temporaries, arguments, constants)."""
        return sum(b.nbytes for b in self._blocks)


__all__ = ["GpuStep", "Mismatch"]
