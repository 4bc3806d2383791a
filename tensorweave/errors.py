"""The exception hierarchy: one root, `TensorWeaveError`, and a class per kind of failure.

Errors raised while building or running a graph carry the op, the node name and the
user's source line, so that a message reads like
``MatMul 'matmul_1' (model.py:12): inner dimensions differ: a is f32[?,784], b is f32[10,10]``.
Runtime error classes mirror TensorFlow's canonical error codes so that code written
for TensorFlow (``except tf.errors.OutOfRangeError``) keeps working.
"""

from __future__ import annotations


class TensorWeaveError(Exception):
    """Root of every error tensorweave raises on purpose."""

    def __init__(self, message: str, *, op: str | None = None, node: str | None = None,
                 location: str | None = None) -> None:
        self.message = message
        self.op = op
        self.node = node
        self.location = location
        super().__init__(self._format())

    def _format(self) -> str:
        prefix = []
        if self.op:
            prefix.append(self.op)
        if self.node:
            prefix.append(f"'{self.node}'")
        if self.location:
            prefix.append(f"({self.location})")
        return (" ".join(prefix) + ": " + self.message) if prefix else self.message

    def with_context(self, *, op: str | None = None, node: str | None = None,
                     location: str | None = None) -> TensorWeaveError:
        """Return a copy of this error that also names the op, node and source line."""
        err = type(self).__new__(type(self))
        TensorWeaveError.__init__(err, self.message, op=self.op or op, node=self.node or node,
                                  location=self.location or location)
        for key, value in self.__dict__.items():
            if key not in ("message", "op", "node", "location", "args"):
                err.__dict__[key] = value
        return err


class ShapeError(TensorWeaveError, ValueError):
    """Shapes that cannot work together (found at trace time or by shape inference)."""


class DTypeError(TensorWeaveError, TypeError):
    """Element types that do not match what an op accepts."""


class TracingError(TensorWeaveError):
    """A Python construct that cannot be traced into a graph (e.g. ``if tensor:``)."""


class ParseError(TensorWeaveError):
    """Malformed IR text; carries the 1-based line and column."""

    def __init__(self, message: str, line: int, column: int, *, source_name: str = "<text>") -> None:
        self.line = line
        self.column = column
        self.source_name = source_name
        super().__init__(f"{message}", location=f"{source_name}:{line}:{column}")


class VerificationError(TensorWeaveError):
    """The IR broke one of its invariants (a bug in a pass or a hand-written graph)."""


class CompileError(TensorWeaveError):
    """A target could not compile a graph."""


class UnimplementedError(CompileError):
    """An op, dtype or feature that the chosen target does not support."""


class OpError(TensorWeaveError):
    """Base of errors raised while a graph runs (TensorFlow's ``tf.errors.OpError``)."""


class InvalidArgumentError(OpError, ValueError):
    """An op got an argument it cannot use (bad feed, out-of-range index, ...)."""


class NotFoundError(OpError):
    """A named thing (file, function, checkpoint key) does not exist."""


class UnknownNameError(NotFoundError, KeyError):
    """A name that nothing in the graph has (``sess.run("nope:0")``); also a KeyError, as
    TensorFlow raises for unknown tensor and operation names."""

    __str__ = Exception.__str__  # the message as is, not KeyError's quoted repr


class FailedPreconditionError(OpError):
    """The system is not in a state to run the op (e.g. an uninitialized variable)."""


class OutOfRangeError(OpError):
    """Iteration ended, e.g. dequeue from a closed, empty queue."""


class CancelledError(OpError):
    """The step was cancelled, usually because another op of it failed."""


class DeadlineExceededError(OpError):
    """A step ran past its timeout."""


class InternalError(OpError):
    """An invariant of the runtime itself broke."""


class UnavailableError(OpError):
    """A task of the cluster cannot be reached (dead, not started, or the network is down);
    retrying later may work."""


class UnauthenticatedError(OpError):
    """A request without the cluster's token (or with a wrong one) was refused."""


class UnknownError(OpError):
    """An error with no better category, e.g. an exception raised by the Python function
    of a ``tf.py_func`` (TensorFlow's ``tf.errors.UnknownError``)."""


class AbortedError(OpError):
    """The operation was aborted, typically by a concurrent action (e.g. a server shutting
    down while a step ran)."""


class DataLossError(OpError):
    """Stored data (checkpoint, cache entry) is truncated or corrupt."""


class AlreadyExistsError(OpError):
    """What an op would create exists already (``tw.io.gfile.rename`` onto a file)."""


class PermissionDeniedError(OpError):
    """The process may not do what the op asks (read a file it has no right to)."""


class RetracingWarning(UserWarning):
    """A `tw.compile` function keeps tracing (and compiling) again: the message names the
    argument that changed and how to avoid it."""


__all__ = [name for name, value in dict(globals()).items()
           if isinstance(value, type) and issubclass(value, TensorWeaveError)]
__all__.append("RetracingWarning")


def __dir__() -> list[str]:
    return sorted(__all__)
