"""gRPC plumbing shared by servers and clients: method names, options, credentials and
the mapping from gRPC status codes to tensorweave errors.

Every method is a bidirectional byte stream carrying `wire` bodies, registered through
a generic handler with identity serializers: no protobuf code generation. Every call
carries the cluster token in its metadata (``tw-token``); a server refuses calls without
the right one (UNAUTHENTICATED). Channels ping idle connections (keepalive) so a peer
that dies or hangs is noticed within seconds, not at the next TCP timeout.
"""

from __future__ import annotations

import hmac
import threading
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
           "AbortStep")
TOKEN_KEY = "tw-token"

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


class WorkerClient:
    """Calls one task's worker service. Thread-safe; one channel per (address, token,
    TLS) in this process (`client_for`)."""

    def __init__(self, address: str, token: str | None = None, tls: TlsConfig | None = None) -> None:
        self.address = address
        self.token = token
        if tls is None:
            self.channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        else:
            self.channel = grpc.secure_channel(address, tls.channel_credentials(),
                                               options=CHANNEL_OPTIONS)
        self._metadata = ((TOKEN_KEY, token),) if token else ()
        self._stubs = {m: self.channel.stream_stream(method_path(m)) for m in METHODS}

    def wait_ready(self, timeout: float) -> None:
        """Block until the task accepts connections; `UnavailableError` after `timeout`."""
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise UnavailableError(f"the task at {self.address} did not answer within "
                                   f"{timeout:g} s (is it started, at that address?)") from None

    def start(self, method: str, header: dict[str, Any], tensors: Sequence[Any] = (),
              timeout: float | None = None) -> Any:
        """Begin a call; returns the gRPC call object (an iterator of response messages
        with ``cancel()``). `call` is the blocking form."""
        return self._stubs[method](wire.encode(header, tensors), timeout=timeout,
                                   metadata=self._metadata)

    def finish(self, method: str, call: Any) -> tuple[dict[str, Any], list[Any]]:
        """Read the response of a call begun with `start`; raises the error it carries."""
        try:
            header, tensors = wire.decode(call)
        except grpc.RpcError as e:
            raise error_from_rpc(e, self.address, method) from None
        error = wire.error_from_header(header)
        if error is not None:
            raise error
        return header, tensors

    def call(self, method: str, header: dict[str, Any], tensors: Sequence[Any] = (),
             timeout: float | None = None) -> tuple[dict[str, Any], list[Any]]:
        """One blocking call: (response header, response tensors)."""
        return self.finish(method, self.start(method, header, tensors, timeout))

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


def generic_handler(handlers: dict[str, Handler], token: str | None,
                    task: str) -> grpc.GenericRpcHandler:
    """A gRPC handler serving `handlers` (method name -> function of (header, tensors,
    context) returning (header, tensors)); checks the token, decodes and encodes the
    bodies, and turns exceptions into error headers (never a crash of the server)."""

    def wrap(fn: Handler) -> Callable[[Iterator[bytes], grpc.ServicerContext], Iterator[bytes]]:
        def serve(request: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
            if not token_ok(context, token):
                context.abort(grpc.StatusCode.UNAUTHENTICATED,
                              f"{task} requires the cluster token (TW_CONFIG 'token' or "
                              f"--token) and the call carried none or a wrong one")
            try:
                header, tensors = wire.decode(request)
                out_header, out_tensors = fn(header, tensors, context)
            except Exception as e:  # noqa: BLE001 - every failure goes back to the caller
                out_header, out_tensors = wire.error_to_header(e, task), ()
            yield from wire.encode(out_header, out_tensors)
        return serve

    return grpc.method_handlers_generic_handler(
        SERVICE, {name: grpc.stream_stream_rpc_method_handler(wrap(fn))
                  for name, fn in handlers.items()})


__all__ = ["CHANNEL_OPTIONS", "METHODS", "SERVER_OPTIONS", "SERVICE", "TlsConfig",
           "WorkerClient", "client_for", "error_from_rpc", "generic_handler", "method_path"]
