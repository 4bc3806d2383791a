"""gRPC plumbing shared by servers and clients: method names, options, credentials and
the mapping from gRPC status codes to tensorweave errors.

Every method exists twice, as a unary call carrying one `wire.pack`ed body each way
and as a bidirectional stream of `wire.encode`d chunks (for bodies over
`wire.INLINE_BYTES`), registered through a generic handler with identity serializers:
no protobuf code generation. Every call
carries the cluster token in its metadata (``tw-token``); a server refuses calls without
the right one (UNAUTHENTICATED). Channels ping idle connections (keepalive) so a peer
that dies or hangs is noticed within seconds, not at the next TCP timeout.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from ...errors import (
    CancelledError,
    DeadlineExceededError,
    InternalError,
    InvalidArgumentError,
    TensorWeaveError,
    UnauthenticatedError,
    UnavailableError,
)
from . import wire

SERVICE = "tensorweave.Worker"
METHODS = ("GetStatus", "RegisterGraph", "DeregisterGraph", "RunGraph", "RecvTensor",
           "AbortStep", "ResetContainers")
TOKEN_KEY = "tw-token"
STREAM_SUFFIX = "Stream"
FETCH = "Fetch"

MAX_MESSAGE_BYTES = 256 << 20  # headers hold graphs as IR text, which may hold constants

KEEPALIVE_MS = 2000
KEEPALIVE_TIMEOUT_MS = 3000

CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # Ping idle connections: a dead or hung peer surfaces as UNAVAILABLE in ~5 s.
    ("grpc.keepalive_time_ms", KEEPALIVE_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.http2.min_time_between_pings_ms", KEEPALIVE_MS),
    # Any unanswered ping (the flow-control probes too, which otherwise wait 60 s and
    # hold back the keepalive pings meanwhile) means the peer is gone.
    ("grpc.http2.ping_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    # Tasks start in any order: retry connecting quickly instead of backing off to 2 min.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    # Every client talks to a task over one connection per process (the cache below).
    ("grpc.use_local_subchannel_pool", 1),
]

SERVER_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.keepalive_time_ms", KEEPALIVE_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", KEEPALIVE_MS // 2),
    ("grpc.http2.max_ping_strikes", 0),
    # Without this a second server on the same port would bind too and steal calls.
    ("grpc.so_reuseport", 0),
]


@dataclass(frozen=True)
class TlsConfig:
    """PEM file paths for TLS: this task's key and certificate, and the CA that signed
    the cluster's certificates (servers then require client certificates too)."""

    key_file: str
    cert_file: str
    ca_file: str

    def _read(self) -> tuple[bytes, bytes, bytes]:
        out = []
        for path in (self.key_file, self.cert_file, self.ca_file):
            with open(path, "rb") as f:
                out.append(f.read())
        return out[0], out[1], out[2]

    def server_credentials(self) -> grpc.ServerCredentials:
        key, cert, ca = self._read()
        return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca,
                                           require_client_auth=True)

    def channel_credentials(self) -> grpc.ChannelCredentials:
        key, cert, ca = self._read()
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                            certificate_chain=cert)


def method_path(name: str) -> str:
    return f"/{SERVICE}/{name}"


def token_ok(context: grpc.ServicerContext, token: str | None) -> bool:
    """Whether the call carries `token` (any call is accepted when `token` is None)."""
    if token is None:
        return True
    given = dict(context.invocation_metadata()).get(TOKEN_KEY, "")
    return hmac.compare_digest(str(given).encode(), token.encode())


def error_from_rpc(error: grpc.RpcError, address: str, method: str) -> TensorWeaveError:
    """A gRPC failure as the tensorweave error a user can catch."""
    code = error.code() if hasattr(error, "code") else None
    detail = error.details() if hasattr(error, "details") else str(error)
    where = f"{method} on task at {address}"
    if code == grpc.StatusCode.UNAVAILABLE:
        return UnavailableError(f"{where}: the task is unreachable ({detail})")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return DeadlineExceededError(f"{where}: deadline exceeded ({detail})")
    if code == grpc.StatusCode.CANCELLED:
        return CancelledError(f"{where}: cancelled ({detail})")
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return UnauthenticatedError(f"{where}: refused: {detail}")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return InvalidArgumentError(f"{where}: message too large ({detail})")
    return InternalError(f"{where}: {code.name if code else 'error'}: {detail}")


class TransferStats:
    """Tensor bytes this process sent and received over gRPC, by method (what the tests
    and benchmarks count: e.g. that a sparse update moves only the touched rows)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent: dict[str, int] = {}
        self.received: dict[str, int] = {}

    def add(self, table: dict[str, int], method: str, tensors: Sequence[Any]) -> None:
        n = wire.payload_bytes(tensors)
        with self._lock:
            table[method] = table.get(method, 0) + n

    def total(self) -> int:
        """All tensor bytes sent and received so far."""
        with self._lock:
            return sum(self.sent.values()) + sum(self.received.values())

    def reset(self) -> None:
        with self._lock:
            self.sent.clear()
            self.received.clear()


STATS = TransferStats()


class PendingCall:
    """A call in flight (`WorkerClient.start`); `cancel` ends it early."""

    __slots__ = ("method", "kind", "call")

    def __init__(self, method: str, kind: str, call: Any) -> None:
        self.method, self.kind, self.call = method, kind, call

    def cancel(self) -> None:
        self.call.cancel()


class WorkerClient:
    """Calls one task's worker service. Thread-safe; one channel per (address, token,
    TLS) in this process (`client_for`).

    A call whose tensors fit in `wire.INLINE_BYTES` is one unary message each way (about
    0.2 ms in Python); a bigger request streams in chunks; a bigger response is parked by
    the server and fetched as a stream (``Fetch``)."""

    def __init__(self, address: str, token: str | None = None, tls: TlsConfig | None = None) -> None:
        self.address = address
        self.token = token
        if tls is None:
            self.channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        else:
            self.channel = grpc.secure_channel(address, tls.channel_credentials(),
                                               options=CHANNEL_OPTIONS)
        self._metadata = ((TOKEN_KEY, token),) if token else ()
        self._connected = False
        self._unary = {m: self.channel.unary_unary(method_path(m)) for m in METHODS}
        self._stream = {m: self.channel.stream_stream(method_path(m + STREAM_SUFFIX))
                        for m in METHODS}
        self._fetch = self.channel.unary_stream(method_path(FETCH))

    def wait_ready(self, timeout: float) -> None:
        """Block until the task accepts connections; `UnavailableError` after `timeout`."""
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise UnavailableError(f"the task at {self.address} did not answer within "
                                   f"{timeout:g} s (is it started, at that address?)") from None

    def connect(self, timeout: float) -> bool:
        """Whether the channel is connected, waiting at most `timeout` for it. Once it
        was, True at once: calls are fail-fast, and a task's first call to a peer could
        otherwise meet the connection still being set up (``UNAVAILABLE: tcp
        handshaker shutdown`` under load) and fail a step for nothing; after that, a
        peer that goes away is seen by the next call at once, as before."""
        if self._connected:
            return True
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            return False
        self._connected = True
        return True

    def start(self, method: str, header: dict[str, Any], tensors: Sequence[Any] = (),
              timeout: float | None = None, *, blocking: bool = False) -> PendingCall:
        """Begin a call; `finish` waits for its answer, `call` does both. A `blocking`
        start makes the whole unary call at once (a gRPC future costs ~0.3 ms more)."""
        STATS.add(STATS.sent, method, tensors)
        if wire.payload_bytes(tensors) <= wire.INLINE_BYTES:
            stub = self._unary[method]
            if blocking:
                try:
                    answer = stub(wire.pack(header, tensors), timeout=timeout,
                                  metadata=self._metadata)
                except grpc.RpcError as e:
                    raise error_from_rpc(e, self.address, method) from None
                return PendingCall(method, "done", answer)
            future = stub.future(wire.pack(header, tensors), timeout=timeout,
                                 metadata=self._metadata)
            return PendingCall(method, "unary", future)
        return PendingCall(method, "stream", self._stream[method](
            wire.encode(header, tensors), timeout=timeout, metadata=self._metadata))

    def finish(self, pending: PendingCall) -> tuple[dict[str, Any], list[Any]]:
        """The answer of a call begun with `start`; raises the error it carries."""
        try:
            if pending.kind != "stream":
                answer = pending.call if pending.kind == "done" else pending.call.result()
                header, tensors = wire.unpack(answer)
                parked = header.get("parked")
                if parked is not None:  # a big answer: fetch it in chunks
                    header, tensors = wire.decode(self._fetch(
                        wire.pack({"parked": parked}), metadata=self._metadata))
            else:
                header, tensors = wire.decode(pending.call)
        except grpc.RpcError as e:
            raise error_from_rpc(e, self.address, pending.method) from None
        except grpc.FutureCancelledError:
            raise CancelledError(f"{pending.method} on task at {self.address}: "
                                 f"cancelled") from None
        error = wire.error_from_header(header)
        if error is not None:
            raise error
        STATS.add(STATS.received, pending.method, tensors)
        return header, tensors

    def call(self, method: str, header: dict[str, Any], tensors: Sequence[Any] = (),
             timeout: float | None = None) -> tuple[dict[str, Any], list[Any]]:
        """One blocking call: (response header, response tensors)."""
        return self.finish(self.start(method, header, tensors, timeout, blocking=True))

    def close(self) -> None:
        self.channel.close()


_clients: dict[tuple[str, str | None, TlsConfig | None], WorkerClient] = {}
_clients_lock = threading.Lock()


def client_for(address: str, token: str | None = None, tls: TlsConfig | None = None) -> WorkerClient:
    """This process's client of the task at `address`."""
    key = (address, token, tls)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = WorkerClient(address, token, tls)
        return client


Handler = Callable[[dict[str, Any], list[Any], grpc.ServicerContext],
                   tuple[dict[str, Any], Sequence[Any]]]


PARKED_TTL_S = 120.0
"""How long a parked big answer waits for its ``Fetch``."""


class _Parked:
    """Big answers waiting for the caller's ``Fetch``, by id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, tuple[dict[str, Any], Sequence[Any], float]] = {}

    def put(self, header: dict[str, Any], tensors: Sequence[Any]) -> str:
        now = time.monotonic()
        key = secrets.token_hex(12)
        with self._lock:
            for k in [k for k, (_, _, t) in self._items.items() if now - t > PARKED_TTL_S]:
                del self._items[k]
            self._items[key] = (header, tensors, now)
        return key

    def take(self, key: str) -> tuple[dict[str, Any], Sequence[Any]]:
        now = time.monotonic()
        with self._lock:
            item = self._items.pop(key, None)
            for k in [k for k, (_, _, t) in self._items.items() if now - t > PARKED_TTL_S]:
                del self._items[k]
        if item is None:
            raise InvalidArgumentError(f"no parked answer {key!r} (it expired after "
                                       f"{PARKED_TTL_S:g} s, or was fetched already)")
        return item[0], item[1]


def generic_handler(handlers: dict[str, Handler], token: str | None,
                    task: str) -> grpc.GenericRpcHandler:
    """A gRPC handler serving `handlers` (method name -> function of (header, tensors,
    context) returning (header, tensors)), each as a unary method (one message each way)
    and as a stream method (for big requests), plus ``Fetch`` for big answers. Checks
    the token, decodes and encodes the bodies, and turns exceptions into error headers
    (never a crash of the server)."""
    parked = _Parked()

    def check(context: grpc.ServicerContext) -> None:
        if not token_ok(context, token):
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          f"{task} requires the cluster token (TW_CONFIG 'token' or --token) "
                          f"and the call carried none or a wrong one")

    def answer(fn: Handler, read: Callable[[], tuple[dict[str, Any], list[Any]]],
               context: grpc.ServicerContext) -> tuple[dict[str, Any], Sequence[Any]]:
        try:
            header, tensors = read()
            return fn(header, tensors, context)
        except Exception as e:  # noqa: BLE001 - every failure goes back to the caller
            return wire.error_to_header(e, task), ()

    def unary(fn: Handler) -> Callable[[bytes, grpc.ServicerContext], bytes]:
        def serve(request: bytes, context: grpc.ServicerContext) -> bytes:
            check(context)
            header, tensors = answer(fn, lambda: wire.unpack(request), context)
            if wire.payload_bytes(tensors) > wire.INLINE_BYTES:
                return wire.pack({"parked": parked.put(header, tensors)})
            return wire.pack(header, tensors)
        return serve

    def stream(fn: Handler) -> Callable[[Iterator[bytes], grpc.ServicerContext], Iterator[bytes]]:
        def serve(request: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
            check(context)
            yield from wire.encode(*answer(fn, lambda: wire.decode(request), context))
        return serve

    def fetch(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        check(context)
        try:
            header, tensors = parked.take(str(wire.unpack(request)[0].get("parked")))
        except Exception as e:  # noqa: BLE001
            header, tensors = wire.error_to_header(e, task), ()
        yield from wire.encode(header, tensors)

    table: dict[str, grpc.RpcMethodHandler] = {FETCH: grpc.unary_stream_rpc_method_handler(fetch)}
    for name, fn in handlers.items():
        table[name] = grpc.unary_unary_rpc_method_handler(unary(fn))
        table[name + STREAM_SUFFIX] = grpc.stream_stream_rpc_method_handler(stream(fn))
    return grpc.method_handlers_generic_handler(SERVICE, table)


__all__ = ["CHANNEL_OPTIONS", "METHODS", "SERVER_OPTIONS", "SERVICE", "STATS", "TlsConfig",
           "TransferStats",
           "PendingCall", "WorkerClient", "client_for", "error_from_rpc", "generic_handler", "method_path"]
