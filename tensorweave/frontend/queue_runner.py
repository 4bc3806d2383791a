"""Producer threads for queues: `Coordinator` and `QueueRunner` (TensorFlow's
``tf.train.Coordinator`` and ``tf.train.QueueRunner``).

A `QueueRunner` holds the enqueue steps of one queue. Each of its threads runs one of them
over and over until the coordinator asks to stop or the queue closes; a thread that sees
the queue closed (OutOfRangeError, CancelledError) ends quietly, and if it is the last
one to end, closes the queue so that consumers drain it and then get OutOfRangeError. Any
other error is handed to the coordinator, which stops every thread (its cancel op closes
the queue) and re-raises it from ``join``; without a coordinator the error is kept in
``exceptions_raised`` and the queue stays open, as in TensorFlow (consumers block rather
than see the input end early).

An enqueue step is either a callable (TensorFlow 2 style: a ``@tw.compile`` function or a
Python function that enqueues eagerly) or, with a v1 Session, an op or tensor of its graph
that ``sess.run`` runs.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..compiler.ir import Node
from ..errors import CancelledError, OutOfRangeError
from .tensor import Tensor

QUEUE_RUNNERS = "queue_runners"  # the v1 graph collection start_queue_runners reads


class Coordinator:
    """Coordinates the termination of a set of threads.

        coord = Coordinator()
        threads = runner.create_threads(sess, coord=coord, start=True)
        while not coord.should_stop(): ...      # consume
        coord.request_stop()
        coord.join(threads)                     # re-raises a thread's error
    """

    def __init__(self, clean_stop_exception_types: Sequence[type] | None = None) -> None:
        self._clean_stop = tuple(clean_stop_exception_types
                                 if clean_stop_exception_types is not None else (OutOfRangeError,))
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info: tuple | None = None
        self._registered: set[threading.Thread] = set()
        self._joined = False

    def should_stop(self) -> bool:
        """True once a stop was requested."""
        return self._stop_event.is_set()

    def request_stop(self, ex: BaseException | tuple | None = None) -> None:
        """Ask every thread to stop. An exception (or ``sys.exc_info()`` tuple) other than
        the clean-stop types (OutOfRangeError by default) is kept and re-raised by
        `join`; the first one wins."""
        with self._lock:
            if ex is not None and self._exc_info is None:
                info = ex if isinstance(ex, tuple) else (type(ex), ex, ex.__traceback__)
                if not issubclass(info[0], self._clean_stop):
                    self._exc_info = info
            self._stop_event.set()

    def clear_stop(self) -> None:
        """Forget a stop request (and its exception) so the threads may run again."""
        with self._lock:
            self._joined = False
            self._exc_info = None
            self._stop_event.clear()

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Block until a stop is requested (or `timeout` seconds pass); True if stopped."""
        return self._stop_event.wait(timeout)

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """Report an exception raised in the block to the coordinator (the thread ends)."""
        try:
            yield
        except Exception as e:  # noqa: BLE001 - every error goes to the coordinator
            self.request_stop(e)

    def register_thread(self, thread: threading.Thread) -> None:
        """Have `join` wait for `thread` too."""
        with self._lock:
            self._registered.add(thread)

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Re-raise the exception passed to `request_stop`, if any."""
        with self._lock:
            info = self._exc_info
        if info is not None:
            raise info[1].with_traceback(info[2])

    def join(self, threads: Sequence[threading.Thread] | None = None,
             stop_grace_period_secs: float = 120, ignore_live_threads: bool = False) -> None:
        """Wait until the threads finish or a stop is requested; then give them
        `stop_grace_period_secs` to end. Re-raises the first exception a thread reported;
        raises RuntimeError if threads are still running after the grace period (unless
        `ignore_live_threads`)."""
        with self._lock:
            threads = list(set(threads or ()) | self._registered)
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(0.1):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._joined = True
        self.raise_requested_exception()
        stragglers = [t.name for t in threads if t.is_alive()]
        if stragglers and not ignore_live_threads:
            raise RuntimeError(f"coordinator stopped with threads still running: "
                               f"{', '.join(stragglers)}")


def _runner_of(sess: Any) -> Callable[[Any], Any]:
    """How to run one enqueue/close step: call it, or run it in `sess`."""
    def run(op: Any) -> Any:
        if not isinstance(op, (Node, Tensor)):
            return op()
        if sess is None:
            raise ValueError(f"{op!r} is a graph op: pass the Session that runs it "
                             f"(create_threads(sess, ...))")
        return sess.run(op)
    run.session_closed = lambda: bool(getattr(sess, "_closed", False))  # type: ignore[attr-defined]
    return run


class QueueRunner:
    """Holds the enqueue steps of a queue and runs each on its own thread.

    `enqueue_ops` is a callable or op, or a list of them (one thread each; repeat one to
    run it on several threads). For a queue of a v1 graph, `close_op` and `cancel_op`
    default to the queue's ``close()`` and ``close(cancel_pending_enqueues=True)`` ops;
    for an eager queue, to functions that close it.
    """

    def __init__(self, queue: Any = None, enqueue_ops: Any = None, close_op: Any = None,
                 cancel_op: Any = None,
                 queue_closed_exception_types: Sequence[type] | None = None) -> None:
        if queue is None or enqueue_ops is None:
            raise ValueError("QueueRunner needs a queue and its enqueue ops")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops) if isinstance(enqueue_ops, (list, tuple)) else [
            enqueue_ops]
        in_graph = getattr(queue, "graph", None) is not None
        if close_op is None:
            close_op = queue.close() if in_graph else (lambda: queue.close())
        if cancel_op is None:
            cancel_op = (queue.close(cancel_pending_enqueues=True) if in_graph
                         else (lambda: queue.close(cancel_pending_enqueues=True)))
        self._close_op = close_op
        self._cancel_op = cancel_op
        self._closed_types = tuple(queue_closed_exception_types or (OutOfRangeError,
                                                                   CancelledError))
        self._lock = threading.Lock()
        self._live: dict[Any, int] = {}  # session (or None) -> enqueue threads running
        self._exceptions: list[BaseException] = []

    @property
    def queue(self) -> Any:
        return self._queue

    @property
    def enqueue_ops(self) -> list[Any]:
        return list(self._enqueue_ops)

    @property
    def close_op(self) -> Any:
        return self._close_op

    @property
    def cancel_op(self) -> Any:
        return self._cancel_op

    @property
    def exceptions_raised(self) -> list[BaseException]:
        """Errors the threads hit when there was no coordinator to report them to."""
        return list(self._exceptions)

    @property
    def name(self) -> str:
        return getattr(self._queue, "name", "queue")

    def create_threads(self, sess: Any = None, coord: Coordinator | None = None,
                       daemon: bool = False, start: bool = False) -> list[threading.Thread]:
        """One thread per enqueue op (plus, with a coordinator, one that cancels pending
        enqueues when a stop is requested). Started if `start`; registered with `coord`."""
        key = id(sess)
        with self._lock:
            if self._live.get(key, 0) > 0:
                return []  # already running for this session, as in TensorFlow
            self._live[key] = len(self._enqueue_ops)
        run = _runner_of(sess)
        threads = [threading.Thread(target=self._run, args=(run, op, coord, key),
                                    name=f"QueueRunner-{self.name}-{i}", daemon=daemon)
                   for i, op in enumerate(self._enqueue_ops)]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(run, coord),
                                            name=f"QueueRunner-{self.name}-closer",
                                            daemon=daemon))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads

    def _run(self, run: Callable[[Any], Any], op: Any, coord: Coordinator | None,
             key: Any) -> None:
        """Run `op` until a stop is requested or the queue closes."""
        input_ended = False
        try:
            while coord is None or not coord.should_stop():
                try:
                    run(op)
                except self._closed_types:
                    if getattr(run, "session_closed", lambda: False)():
                        raise  # closing the session closed its queues: not the input's end
                    input_ended = True
                    return  # the queue was closed: this producer is done
        except Exception as e:  # noqa: BLE001 - handed to the coordinator
            if getattr(run, "session_closed", lambda: False)():
                # the Session closed under us: a normal way to end, but a coordinator
                # not yet stopped must learn it (its join would wait forever for a stop;
                # TensorFlow's runner hands it this error too)
                if coord is not None and not coord.should_stop():
                    coord.request_stop(e)
                return
            if coord is not None:
                coord.request_stop(e)
            else:
                with self._lock:
                    self._exceptions.append(e)
                print(f"QueueRunner '{self.name}': enqueue thread failed: {e!r}",
                      file=sys.stderr)
        finally:
            self._thread_done(run, key, input_ended)

    def _thread_done(self, run: Callable[[Any], Any], key: Any, input_ended: bool) -> None:
        """The last producer to end closes the queue, so consumers drain it and stop, if
        it ended because its input did (as TensorFlow's): closing after a failure would
        show consumers a clean end of the input after part of it (OutOfRangeError, which
        a training loop takes for "done"). With a coordinator the failure stops it, and
        the cancel op closes the queue."""
        with self._lock:
            self._live[key] -= 1
            last = self._live[key] == 0
        if last and input_ended:
            with contextlib.suppress(Exception):
                run(self._close_op)

    def _close_on_stop(self, run: Callable[[Any], Any], coord: Coordinator) -> None:
        coord.wait_for_stop()
        with contextlib.suppress(Exception):
            run(self._cancel_op)


def add_queue_runner(qr: QueueRunner, collection: str = QUEUE_RUNNERS) -> None:
    """Record `qr` in the default v1 graph, for `start_queue_runners`."""
    from ..compat.v1.graph import get_default_graph
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess: Any = None, coord: Coordinator | None = None, daemon: bool = True,
                        start: bool = True,
                        collection: str = QUEUE_RUNNERS) -> list[threading.Thread]:
    """Start the threads of every QueueRunner collected in the session's graph; returns
    them all (pass them to ``coord.join``)."""
    if sess is None:
        from ..compat.v1.session import get_default_session
        sess = get_default_session()
    threads: list[threading.Thread] = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


__all__ = ["Coordinator", "QueueRunner", "add_queue_runner", "start_queue_runners",
           "QUEUE_RUNNERS"]
