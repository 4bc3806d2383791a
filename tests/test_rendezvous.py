"""The in-process rendezvous and the cancellation manager."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.runtime.cancellation import CancellationManager
from tensorweave.runtime.rendezvous import LocalRendezvous, Rendezvous, make_key

JOIN_S = 10.0


def start(fn, *args) -> tuple[threading.Thread, dict]:
    """Run `fn(*args)` on a thread; the dict gets its 'value' or 'error'."""
    out: dict = {}

    def body():
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, out


def finish(t: threading.Thread) -> None:
    t.join(JOIN_S)
    assert not t.is_alive(), "thread still blocked"


# --------------------------------------------------------------------------- rendezvous

def test_local_rendezvous_implements_the_interface():
    assert isinstance(LocalRendezvous(), Rendezvous)
    with pytest.raises(TypeError):
        Rendezvous()  # abstract


def test_send_before_recv():
    r = LocalRendezvous()
    value = np.arange(3)
    r.send("a;1", value)
    assert r.recv("a;1") is value
    assert len(r) == 0  # taken values leave the table


def test_recv_before_send_blocks_until_the_value_arrives():
    r = LocalRendezvous()
    t, out = start(r.recv, "a;1")
    time.sleep(0.05)
    assert t.is_alive() and "value" not in out
    r.send("a;1", 42)
    finish(t)
    assert out == {"value": 42}


def test_one_value_per_key():
    r = LocalRendezvous()
    r.send("k;1", 1)
    with pytest.raises(tw.errors.InternalError, match="sent twice"):
        r.send("k;1", 2)
    assert r.recv("k;1") == 1


def test_abort_wakes_every_waiter_and_fails_later_calls():
    r = LocalRendezvous()
    waiters = [start(r.recv, f"k{i};7") for i in range(3)]
    time.sleep(0.05)
    r.abort(tw.errors.InvalidArgumentError("index 9 out of range"))
    for t, out in waiters:
        finish(t)
        assert isinstance(out["error"], tw.errors.CancelledError)
        assert "index 9 out of range" in str(out["error"])
    with pytest.raises(tw.errors.CancelledError):
        r.recv("other;7")
    with pytest.raises(tw.errors.CancelledError):
        r.send("other;7", 1)


def test_recv_timeout():
    r = LocalRendezvous()
    with pytest.raises(tw.errors.DeadlineExceededError, match="x;3"):
        r.recv("x;3", timeout=0.05)
    # The withdrawn receiver does not keep the key: a later exchange works.
    r.send("x;3", 5)
    assert r.recv("x;3", timeout=1) == 5


def test_keys_with_step_ids_do_not_collide_across_concurrent_steps():
    r = LocalRendezvous()
    steps = range(1, 21)
    receivers = {s: start(r.recv, make_key("dev0;t:0;dev1", s)) for s in steps}
    senders = [start(r.send, make_key("dev0;t:0;dev1", s), s * 10) for s in reversed(steps)]
    for t, _ in senders:
        finish(t)
    for s, (t, out) in receivers.items():
        finish(t)
        assert out == {"value": s * 10}
    assert len(r) == 0


def test_make_key_appends_the_step_id():
    assert make_key("a;b:0;c", 12) == "a;b:0;c;12"


# ------------------------------------------------------------------------ cancellation

def test_cancel_runs_callbacks_once_with_the_error():
    cm = CancellationManager()
    seen = []
    cm.add_callback(seen.append)
    removed = cm.add_callback(lambda e: seen.append("removed"))
    assert cm.remove_callback(removed)
    assert not cm.is_cancelled
    err = tw.errors.InvalidArgumentError("boom")
    assert cm.cancel(err)
    assert not cm.cancel(tw.errors.InternalError("second"))
    assert cm.is_cancelled and cm.error is err
    assert seen == [err]
    with pytest.raises(tw.errors.CancelledError, match="boom"):
        cm.check()


def test_callback_added_after_cancel_runs_at_once():
    cm = CancellationManager()
    cm.cancel()
    seen = []
    cm.add_callback(seen.append)
    assert len(seen) == 1 and isinstance(seen[0], tw.errors.CancelledError)


def test_a_failing_callback_does_not_stop_the_others():
    cm = CancellationManager()
    seen = []

    def bad(e):
        raise RuntimeError("callback bug")

    cm.add_callback(bad)
    cm.add_callback(seen.append)
    cm.cancel(tw.errors.CancelledError("stop"))
    assert len(seen) == 1


def test_cancellation_aborts_a_rendezvous_through_a_callback():
    cm = CancellationManager()
    r = LocalRendezvous()
    cm.add_callback(r.abort)
    t, out = start(r.recv, "k;1")
    time.sleep(0.05)
    cm.cancel(tw.errors.OutOfRangeError("queue closed"))
    finish(t)
    assert isinstance(out["error"], tw.errors.CancelledError)
    assert "queue closed" in str(out["error"])
