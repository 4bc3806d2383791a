"""ClusterSpec and TW_CONFIG parsing."""

import json

import pytest

import tensorweave.compat.v1 as tf
from tensorweave.distribute import ClusterSpec
from tensorweave.errors import InvalidArgumentError
from tensorweave.runtime.distributed.cluster import (
    TaskConfig,
    default_token,
    parse_task_config,
    task_config_from_env,
)

SPEC = {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}


def test_cluster_spec_lists_jobs_tasks_and_addresses():
    c = ClusterSpec(SPEC)
    assert tf.train.ClusterSpec is ClusterSpec
    assert c.jobs == ["ps", "worker"]
    assert c.num_tasks("worker") == 2
    assert c.job_tasks("worker") == SPEC["worker"]
    assert c.task_address("ps", 0) == "127.0.0.1:2222"
    assert c.find_task("127.0.0.1:2224") == ("worker", 1)
    assert c.as_dict() == SPEC
    assert ClusterSpec(json.loads(c.to_json())) == c
    assert list(c.tasks())[0] == ("ps", 0, "127.0.0.1:2222")


def test_sparse_jobs_keep_their_indices():
    c = ClusterSpec({"worker": {1: "127.0.0.1:3001", 3: "127.0.0.1:3003"}})
    assert c.task_indices("worker") == [1, 3]
    assert c.as_dict() == {"worker": {1: "127.0.0.1:3001", 3: "127.0.0.1:3003"}}
    with pytest.raises(InvalidArgumentError, match="no task 0"):
        c.task_address("worker", 0)


@pytest.mark.parametrize("bad, message", [
    ({"ps": "127.0.0.1:1"}, "list of addresses"),
    ({"ps": ["localhost"]}, "host:port"),
    ({"ps": ["127.0.0.1:70000"]}, "host:port"),
    ({"p s": ["127.0.0.1:1"]}, "bad job name"),
    ({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:1"]}, "given to both"),
])
def test_bad_cluster_specs_say_what_is_wrong(bad, message):
    with pytest.raises(InvalidArgumentError, match=message):
        ClusterSpec(bad)


def test_unknown_job_names_the_jobs():
    with pytest.raises(InvalidArgumentError, match="jobs: ps, worker"):
        ClusterSpec(SPEC).num_tasks("chief")


def test_tw_config_round_trips_and_wins_over_tf_config():
    config = TaskConfig(ClusterSpec(SPEC), "worker", 1, "secret")
    env = {"TW_CONFIG": config.to_json(), "TF_CONFIG": "not json"}
    assert task_config_from_env(env) == config
    assert task_config_from_env(env).address == "127.0.0.1:2224"
    tf_only = {"TF_CONFIG": json.dumps({"cluster": SPEC, "task": {"type": "ps", "index": 0}})}
    assert task_config_from_env(tf_only).job_name == "ps"
    assert task_config_from_env({}) is None


def test_default_token_comes_from_tw_config_then_tw_token(monkeypatch):
    monkeypatch.setenv("TW_CONFIG", TaskConfig(ClusterSpec(SPEC), "ps", 0, "abc").to_json())
    assert default_token() == "abc"
    monkeypatch.delenv("TW_CONFIG")
    monkeypatch.setenv("TW_TOKEN", "xyz")
    assert default_token() == "xyz"


@pytest.mark.parametrize("text, message", [
    ("{", "not valid JSON"),
    ('{"cluster": {}}', "'cluster' and 'task'"),
    (json.dumps({"cluster": SPEC, "task": {"type": "worker", "index": 5}}), "no task 5"),
])
def test_bad_tw_config_is_a_clear_error(text, message):
    with pytest.raises(InvalidArgumentError, match=message):
        parse_task_config(text)
