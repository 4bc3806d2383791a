"""Cancelling a step: one `CancellationManager` per step, shared by all its partitions.

The first error of a step (or its timeout) calls `cancel(error)`. That flips
`is_cancelled` and runs every registered callback once, which is how blocked kernels
(a Recv waiting for its tensor, a dequeue on an empty queue) wake up: they register a
callback that notifies whatever they wait on, then raise `CancelledError`.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from ..errors import CancelledError, TensorWeaveError

Callback = Callable[[BaseException], None]


class CancellationManager:
    """Cancellation state of one step, with callbacks run when it is cancelled.

    Callbacks receive the error that cancelled the step. A callback added after the
    step was cancelled runs at once, on the caller's thread, so nothing can miss the
    cancellation by registering late.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callback] = {}
        self._tokens = itertools.count()
        self._error: BaseException | None = None

    @property
    def is_cancelled(self) -> bool:
        """True once `cancel` was called."""
        return self._error is not None

    @property
    def error(self) -> BaseException | None:
        """The error the step was cancelled with (None while it is not cancelled)."""
        return self._error

    def cancelled_error(self) -> CancelledError:
        """A `CancelledError` for a kernel to raise because the step was cancelled."""
        cause = self._error
        if cause is None:
            return CancelledError("the step was cancelled")
        detail = cause.message if isinstance(cause, TensorWeaveError) else str(cause)
        return CancelledError(f"the step was cancelled: {type(cause).__name__}: {detail}")

    def add_callback(self, fn: Callback) -> int:
        """Run ``fn(error)`` when the step is cancelled; returns a token for
        `remove_callback`. Runs `fn` immediately if the step is already cancelled."""
        with self._lock:
            token = next(self._tokens)
            if self._error is None:
                self._callbacks[token] = fn
                return token
            error = self._error
        fn(error)
        return token

    def remove_callback(self, token: int) -> bool:
        """Forget a callback; True if it was still registered (had not run)."""
        with self._lock:
            return self._callbacks.pop(token, None) is not None

    def cancel(self, error: BaseException | None = None) -> bool:
        """Cancel the step with `error` (default: a plain `CancelledError`) and run the
        callbacks. Only the first call has an effect; returns whether this call did it."""
        with self._lock:
            if self._error is not None:
                return False
            self._error = error if error is not None else CancelledError("the step was cancelled")
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for fn in callbacks:
            # One failing callback must not stop the others from waking their waiters.
            try:
                fn(self._error)
            except Exception:  # noqa: BLE001
                pass
        return True

    def check(self) -> None:
        """Raise `CancelledError` if the step was cancelled (for long-running kernels)."""
        if self._error is not None:
            raise self.cancelled_error()
