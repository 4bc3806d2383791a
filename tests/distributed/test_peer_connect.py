"""A task's first pull from a peer waits for the connection instead of failing fast.

Pulls (``RecvTensor``) are fail-fast gRPC calls. Under load, a task's first call to a
peer met the connection still being set up (``UNAVAILABLE: tcp handshaker shutdown``)
and failed the step (seen in the sharded-PS LSTM example test). The first pull now waits
for the channel, at most ``PEER_CONNECT_S``, noticing the step's abort meanwhile."""

from __future__ import annotations

import threading
import time

import pytest

from tensorweave.distribute import Server
from tensorweave.errors import CancelledError, UnavailableError
from tensorweave.runtime.distributed import rpc, server

from .cluster_helpers import TOKEN, make_cluster


def test_a_client_connects_once_its_task_starts():
    spec = make_cluster(worker=1)
    address = spec.task_address("worker", 0)
    client = rpc.WorkerClient(address, TOKEN)
    try:
        assert not client.connect(0.3)  # nothing listens yet
        task = Server(spec, "worker", 0, token=TOKEN)
        try:
            assert client.connect(20.0)
            start = time.monotonic()
            assert client.connect(0.0)  # known connected: no wait
            assert time.monotonic() - start < 1.0
        finally:
            task.stop(grace=0.2)
    finally:
        client.close()


def _pull_key() -> str:
    return "/job:worker/replica:0/task:1/device:CPU:0;x;/job:worker/replica:0/task:0/device:CPU:0"


def test_a_pull_from_a_task_that_never_starts_is_unavailable_naming_it(monkeypatch):
    monkeypatch.setattr(server, "PEER_CONNECT_S", 0.5)
    spec = make_cluster(worker=2)
    task = Server(spec, "worker", 0, token=TOKEN)
    try:
        rendezvous = server.TaskRendezvous(task.service, step_id=1)
        with pytest.raises(UnavailableError, match=spec.task_address("worker", 1)):
            rendezvous.recv(_pull_key())
    finally:
        task.stop(grace=0.2)


def test_an_aborted_step_stops_waiting_for_the_connection(monkeypatch):
    monkeypatch.setattr(server, "PEER_CONNECT_S", 60.0)
    monkeypatch.setattr(server, "PULL_WAIT_S", 0.2)
    spec = make_cluster(worker=2)
    task = Server(spec, "worker", 0, token=TOKEN)
    try:
        rendezvous = server.TaskRendezvous(task.service, step_id=2)
        threading.Timer(0.5, rendezvous.abort, (RuntimeError("step aborted"),)).start()
        start = time.monotonic()
        with pytest.raises(CancelledError, match="step aborted"):
            rendezvous.recv(_pull_key())
        assert time.monotonic() - start < 30.0
    finally:
        task.stop(grace=0.2)
