"""The rendezvous behind Send/Recv: where one partition leaves a tensor for another.

A `Send` kernel calls ``rendezvous.send(key, value)``, which never blocks; a `Recv`
kernel calls ``rendezvous.recv(key)``, which blocks until the value with that key has
been sent, then takes it. Keys name the transfer and the step
(``f"{attrs['key']};{step_id}"``, see `make_key`), so concurrent steps never collide.
`abort(error)` ends a step's transfers: every waiting and every later `recv` raises
`CancelledError`, which is how a failing op in one partition releases a partition
blocked in a Recv.

`Rendezvous` is the interface; `LocalRendezvous` is the in-process table. The GPU-copy
and the cross-process (gRPC) transports implement the same three methods.
"""

from __future__ import annotations

import abc
import threading
import time
from typing import Any

from ..errors import CancelledError, DeadlineExceededError, InternalError, TensorWeaveError


def make_key(transfer_key: str, step_id: int) -> str:
    """The run-time key of transfer `transfer_key` (a Send/Recv ``key`` attribute) in one
    step. Later issues add the loop frame and iteration."""
    return f"{transfer_key};{step_id}"


class Rendezvous(abc.ABC):
    """Where Send leaves tensors and Recv picks them up, one value per key."""

    @abc.abstractmethod
    def send(self, key: str, value: Any) -> None:
        """Make `value` available under `key`; never blocks. Raises `CancelledError`
        after `abort`, `InternalError` if `key` already holds an unreceived value."""

    @abc.abstractmethod
    def recv(self, key: str, timeout: float | None = None) -> Any:
        """Wait for the value sent under `key` and take it. Raises `CancelledError` when
        the rendezvous is (or gets) aborted, `DeadlineExceededError` after `timeout`
        seconds."""

    @abc.abstractmethod
    def abort(self, error: BaseException) -> None:
        """Fail every pending and future `recv`/`send` (the step is over)."""


class _Slot:
    """One key's state: a value waiting for its receiver, or a receiver waiting."""

    __slots__ = ("value", "full", "event")

    def __init__(self) -> None:
        self.value: Any = None
        self.full = False
        self.event: threading.Event | None = None


class LocalRendezvous(Rendezvous):
    """The in-process rendezvous: a table from key to value with blocking receive."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: dict[str, _Slot] = {}
        self._error: BaseException | None = None

    def __len__(self) -> int:
        """How many keys hold a value or a waiting receiver."""
        with self._lock:
            return len(self._table)

    @property
    def aborted(self) -> bool:
        return self._error is not None

    def _cancelled(self, key: str) -> CancelledError:
        cause = self._error
        detail = cause.message if isinstance(cause, TensorWeaveError) else str(cause)
        return CancelledError(f"rendezvous for '{key}' aborted: {type(cause).__name__}: {detail}")

    def send(self, key: str, value: Any) -> None:
        with self._lock:
            if self._error is not None:
                raise self._cancelled(key)
            slot = self._table.get(key)
            if slot is None:
                slot = self._table[key] = _Slot()
            elif slot.full:
                raise InternalError(f"rendezvous key '{key}' was sent twice (one value per key "
                                    f"per step)")
            slot.value = value
            slot.full = True
            if slot.event is not None:
                slot.event.set()

    def recv(self, key: str, timeout: float | None = None) -> Any:
        with self._lock:
            if self._error is not None:
                raise self._cancelled(key)
            slot = self._table.get(key)
            if slot is not None and slot.full:
                del self._table[key]
                return slot.value
            if slot is None:
                slot = self._table[key] = _Slot()
            if slot.event is not None:
                raise InternalError(f"rendezvous key '{key}' has two receivers")
            slot.event = event = threading.Event()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not event.wait(None if deadline is None else max(0.0, deadline - time.monotonic())):
            if deadline is not None and time.monotonic() >= deadline:
                return self._give_up(key, slot)
        return self._take(key, slot)

    def _take(self, key: str, slot: _Slot) -> Any:
        """After the waiter's event fired: the value, or the abort error."""
        with self._lock:
            if slot.full:
                if self._table.get(key) is slot:
                    del self._table[key]
                return slot.value
            raise self._cancelled(key)

    def _give_up(self, key: str, slot: _Slot) -> Any:
        """Timed out: unless the value arrived meanwhile, withdraw and raise."""
        with self._lock:
            if slot.full:
                if self._table.get(key) is slot:
                    del self._table[key]
                return slot.value
            if self._table.get(key) is slot:
                del self._table[key]
            if self._error is not None:
                raise self._cancelled(key)
        raise DeadlineExceededError(f"timed out waiting for rendezvous key '{key}'")

    def abort(self, error: BaseException) -> None:
        with self._lock:
            if self._error is not None:
                return
            self._error = error
            waiting = [s.event for s in self._table.values() if s.event is not None]
            # Values nobody will receive any more are dropped with the step.
            self._table.clear()
        for event in waiting:
            event.set()
