"""The error a failed distributed step raises is its cause, whatever order the tasks'
answers arrive in: a step that ran out of its `timeout_in_ms` is a
`DeadlineExceededError` even when another task's Recv, woken by the timed-out task's
abort, answered first with a `CancelledError` (seen under load in
test_run_options_timeout_bounds_a_distributed_step)."""

import pytest

from tensorweave.distribute.master import _root_cause
from tensorweave.errors import (
    CancelledError,
    DeadlineExceededError,
    InvalidArgumentError,
    UnavailableError,
)

DEADLINE = DeadlineExceededError("step 7 did not finish within its timeout of 0.3 s "
                                 "(on /job:ps/replica:0/task:0)")
WOKEN = CancelledError("Recv 'dequeue/recv': rendezvous aborted: DeadlineExceededError: "
                       "step 7 did not finish within its timeout (on /job:ps/replica:0/task:0)")


@pytest.mark.parametrize("order", [0, 1])
def test_a_timed_out_step_raises_the_deadline_whichever_task_answers_first(order):
    errors = [WOKEN, DEADLINE] if order == 0 else [DEADLINE, WOKEN]
    assert _root_cause(errors) is DEADLINE


def test_an_ops_own_error_and_a_lost_task_still_come_first():
    bad = InvalidArgumentError("Gather: indices[0] = 7 is not in [0, 4)")
    lost = UnavailableError("RunGraph on task at 127.0.0.1:1: the task is unreachable")
    assert _root_cause([WOKEN, DEADLINE, bad]) is bad
    assert _root_cause([WOKEN, DEADLINE, bad, lost]) is lost
    assert _root_cause([WOKEN]) is WOKEN
