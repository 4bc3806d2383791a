"""The sync-replicas watchdog in a cluster with a 'chief' job (TF_CONFIG's layout for
TensorFlow's estimators: {"chief": [...], "worker": [...], "ps": [...]}): the replicas
are the chief's task and the workers', and the chief is /job:chief/task:0.

It took the replicas to be the tasks of the session's own job, and the chief to be
that job's task 0: on worker 1, a dead worker 0 was "the chief" and "only 1 of the 2
worker tasks answer" stopped training that the chief and worker 1 could go on with
(replicas_to_aggregate=2), while a dead chief was never seen (the workers waited for a
token forever); on the chief, no worker was ever watched."""

import tensorweave.compat.v1 as tf
from tensorweave.compat.v1.replica_watchdog import ReplicaWatchdog

CHIEF = "/job:chief/replica:0/task:0"
W0, W1 = "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"


class _Cluster:
    """What the watchdog reads of a session's cluster: the spec and the client's task."""

    def __init__(self, me):
        self.spec = tf.train.ClusterSpec({"chief": ["h:1"], "worker": ["h:2", "h:3"],
                                          "ps": ["h:4"]})
        self.task = me


def _dog(me, up, m, is_chief):
    return ReplicaWatchdog(_Cluster(me), replicas_to_aggregate=m, is_chief=is_chief,
                           on_failure=None, timeout_secs=1.0,
                           probe=lambda cluster, task: up[task])


def test_the_replicas_are_the_chief_and_the_workers():
    dog = _dog(W1, {}, 2, False)
    assert dog.workers == [CHIEF, W0, W1]
    assert dog.chief == CHIEF


def test_a_dead_worker_0_is_not_the_chief_and_two_replicas_go_on():
    up = {CHIEF: True, W0: False}
    dog = _dog(W1, up, 2, False)
    assert dog.check(now=0.0) is None
    assert dog.check(now=2.0) is None  # the chief and worker 1: 2 of m=2


def test_a_worker_sees_the_dead_chief():
    up = {CHIEF: False, W0: True}
    dog = _dog(W1, up, 2, False)
    assert dog.check(now=0.0) is None
    message = dog.check(now=2.0)
    assert message is not None and f"the chief {CHIEF}" in message


def test_the_chief_watches_the_workers():
    up = {W0: True, W1: False}
    dog = _dog(CHIEF, up, 3, True)
    assert dog.check(now=0.0) is None
    message = dog.check(now=2.0)
    assert message is not None and "only 2 of the 3" in message and W1 in message
