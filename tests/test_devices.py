"""Device names (parsing, printing, merging), the device registry, `tw.config` and the
frontend's device scopes."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tensorweave.runtime.devices import (
    DeviceManager,
    DeviceSpec,
    as_devices,
    canonical_name,
    physical_gpu_count,
)

LOCAL = "/job:localhost/replica:0/task:0"


# ------------------------------------------------------------------------ parsing

@pytest.mark.parametrize("text, fields", [
    (f"{LOCAL}/device:CPU:0", ("localhost", 0, 0, "CPU", 0)),
    ("/cpu:0", (None, None, None, "CPU", 0)),
    ("/gpu:1", (None, None, None, "GPU", 1)),
    ("/GPU:1", (None, None, None, "GPU", 1)),
    ("/device:CPU:1", (None, None, None, "CPU", 1)),
    ("/device:gpu:*", (None, None, None, "GPU", None)),
    ("/device:CPU", (None, None, None, "CPU", None)),
    ("/cpu", (None, None, None, "CPU", None)),
    ("/job:worker/task:3", ("worker", None, 3, None, None)),
    ("/job:ps/cpu:0", ("ps", None, None, "CPU", 0)),
    ("/job:ps/replica:*/task:1", ("ps", None, 1, None, None)),
    ("job:worker/replica:2", ("worker", 2, None, None, None)),
    ("", (None, None, None, None, None)),
])
def test_parse_full_short_and_partial_names(text, fields):
    spec = DeviceSpec.from_string(text)
    assert (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index) == fields


@pytest.mark.parametrize("text, canonical", [
    ("/cpu:0", "/device:CPU:0"),
    ("/gpu:1", "/device:GPU:1"),
    ("/device:GPU:*", "/device:GPU:*"),
    ("/task:0/job:a", "/job:a/task:0"),
    (f"{LOCAL}/cpu:2", f"{LOCAL}/device:CPU:2"),
    ("", ""),
])
def test_to_string_is_canonical(text, canonical):
    assert DeviceSpec.from_string(text).to_string() == canonical
    assert str(DeviceSpec.from_string(text)) == canonical


@pytest.mark.parametrize("bad", ["/job:", "/job:a b", "/task:x", "/cpu:-1", "/replica:1.5",
                                 "/foo:bar:baz", "/job:a/job:b", "/cpu:0/gpu:0", "/device:9x:0",
                                 "/banana"])
def test_bad_names_raise_invalid_argument(bad):
    with pytest.raises(InvalidArgumentError) as err:
        DeviceSpec.from_string(bad)
    assert repr(bad) in str(err.value)
    assert isinstance(err.value, ValueError)  # TensorFlow raises ValueError here too


def test_non_string_names_raise():
    with pytest.raises(InvalidArgumentError, match="must be a string"):
        DeviceSpec.from_string(3)


JOBS = st.none() | st.sampled_from(["localhost", "worker", "ps", "my-job_2"])
INDICES = st.none() | st.integers(0, 99)
TYPES = st.none() | st.sampled_from(["CPU", "GPU", "TPU"])
SPECS = st.builds(DeviceSpec, JOBS, INDICES, INDICES, TYPES, INDICES).filter(
    lambda s: s.device_type is not None or s.device_index is None)


@given(SPECS)
def test_round_trip_through_text(spec):
    assert DeviceSpec.from_string(spec.to_string()) == spec
    assert DeviceSpec.from_string(spec.to_string()).to_string() == spec.to_string()


@given(SPECS, SPECS)
def test_merge_takes_the_inner_fields(outer, inner):
    merged = outer.merge(inner)
    for name in ("job", "replica", "task", "device_type"):
        expected = getattr(inner, name) if getattr(inner, name) is not None else getattr(outer, name)
        assert getattr(merged, name) == expected
    if inner.device_index is not None:
        assert merged.device_index == inner.device_index
    elif inner.device_type is None or inner.device_type == outer.device_type:
        assert merged.device_index == outer.device_index
    else:  # a new type without an index: any device of that type
        assert merged.device_index is None
    assert outer.merge(DeviceSpec()) == outer
    assert outer.merge(merged.to_string()) == merged.merge(DeviceSpec())


@given(SPECS, SPECS)
def test_a_full_spec_matches_what_it_merges_over(a, b):
    full = DeviceSpec("localhost", 0, 0, "CPU", 0).merge(a).merge(b)
    if full.is_full:
        assert b.matches(full)
        assert DeviceSpec().matches(full)
        assert b.is_compatible_with(full)


def test_merge_changing_the_type_clears_the_index():
    assert DeviceSpec.from_string("/cpu:1").merge("/device:GPU:*").to_string() == "/device:GPU:*"
    assert DeviceSpec.from_string("/cpu:1").merge("/device:CPU").to_string() == "/device:CPU:1"
    assert DeviceSpec.from_string("/job:w/cpu:1").merge("/gpu:0").to_string() == "/job:w/device:GPU:0"


def test_canonical_name_fills_in_the_local_task():
    assert canonical_name("/cpu:1") == f"{LOCAL}/device:CPU:1"
    assert canonical_name("/device:GPU") == f"{LOCAL}/device:GPU:0"
    assert canonical_name("/job:worker/task:2/cpu:0") == "/job:worker/replica:0/task:2/device:CPU:0"
    with pytest.raises(InvalidArgumentError, match="does not name a device type"):
        canonical_name("/job:worker")


# ----------------------------------------------------------------------- registry

def test_a_manager_has_cpu0_and_logical_cpus_on_request():
    m = DeviceManager(detect_gpus=False)
    assert [d.name for d in m.devices] == [f"{LOCAL}/device:CPU:0"]
    assert m.default_device.name == f"{LOCAL}/device:CPU:0"
    m.set_logical_devices("cpu", 3)
    assert [d.short_name for d in m.devices] == ["CPU:0", "CPU:1", "CPU:2"]
    assert [d.short_name for d in m.find("/device:CPU:*")] == ["CPU:0", "CPU:1", "CPU:2"]
    assert [d.short_name for d in m.find("/job:ps")] == []
    assert m.lookup("/cpu:2").name == f"{LOCAL}/device:CPU:2"
    assert m.lookup(f"{LOCAL}/device:CPU:1").index == 1
    assert m.list_devices("GPU") == []
    with pytest.raises(InvalidArgumentError, match="no device '/cpu:7'; available: .*CPU:2"):
        m.lookup("/cpu:7")


@pytest.mark.parametrize("args, message", [
    (("GPU", 2), "only CPU logical devices"),
    (("CPU", 0), ">= 1"),
    (("CPU", 1.5), ">= 1"),
    (("CPU", True), ">= 1"),
])
def test_set_logical_devices_rejects_bad_requests(args, message):
    with pytest.raises(InvalidArgumentError, match=message):
        DeviceManager(detect_gpus=False).set_logical_devices(*args)


def test_a_task_manager_names_its_devices_after_its_task():
    m = DeviceManager("worker", 0, 3, detect_gpus=False)
    assert m.devices[0].name == "/job:worker/replica:0/task:3/device:CPU:0"
    assert m.lookup("/cpu:0").name == "/job:worker/replica:0/task:3/device:CPU:0"


def test_gpu_detection_never_fails(monkeypatch):
    assert physical_gpu_count() >= 0
    monkeypatch.setenv("TW_DISABLE_GPU", "1")
    assert physical_gpu_count() == 0


def test_as_devices_accepts_names_and_rejects_an_empty_list():
    assert [d.name for d in as_devices(["/cpu:1", "/gpu:0"])] == [f"{LOCAL}/device:CPU:1",
                                                                  f"{LOCAL}/device:GPU:0"]
    with pytest.raises(InvalidArgumentError, match="empty"):
        as_devices([])


@pytest.fixture
def restore_devices():
    before = len(tw.config.list_logical_devices("CPU"))
    yield
    tw.config.set_logical_devices("CPU", before)


def test_config_lists_and_sets_logical_devices(restore_devices):
    tw.config.set_logical_devices("CPU", 2)
    cpus = tw.config.list_logical_devices("CPU")
    assert [d.name for d in cpus] == [f"{LOCAL}/device:CPU:0", f"{LOCAL}/device:CPU:1"]
    assert all(d.device_type == "CPU" for d in cpus)
    assert tw.config.list_logical_devices()[:2] == cpus
    assert tw.config.list_physical_devices("CPU")[0].device_type == "CPU"
    assert len(tw.config.list_physical_devices("GPU")) == len(tw.config.list_logical_devices("GPU"))


def test_soft_placement_setting_round_trips():
    assert tw.config.get_soft_device_placement() is True
    tw.config.set_soft_device_placement(False)
    try:
        assert tw.config.get_soft_device_placement() is False
    finally:
        tw.config.set_soft_device_placement(True)


# ------------------------------------------------------------------ device scopes

def _devices_of(fn):
    graph = tw.compile(fn).get_concrete_function(tw.TensorSpec([2])).graph
    return {n.name: n.device for n in graph.nodes}


def test_nested_and_partial_scopes_merge_inner_over_outer():
    def f(x):
        with tw.device("/job:localhost/replica:0/task:0"):
            a = tw.negative(x, name="a")
            with tw.device("/gpu:1"):
                b = tw.negative(a, name="b")
                with tw.device("/device:CPU:*"):
                    c = tw.negative(b, name="c")
            with tw.device(None):
                d = tw.negative(c, name="d")
        with tw.device("/cpu:1"):
            e = tw.negative(d, name="e")
        return tw.negative(e, name="f")

    devices = _devices_of(f)
    assert devices["a"] == LOCAL
    assert devices["b"] == f"{LOCAL}/device:GPU:1"
    assert devices["c"] == f"{LOCAL}/device:CPU:*"
    assert devices["d"] is None
    assert devices["e"] == "/cpu:1"  # a single scope keeps the user's spelling
    assert devices["f"] is None


def test_a_bad_device_scope_fails_at_the_with_line():
    def f(x):
        with tw.device("/cpu:zero"):
            return x + 1.0

    with pytest.raises(InvalidArgumentError, match="cpu:zero"):
        tw.compile(f)(np.zeros(2, np.float32))


def test_device_scopes_do_nothing_eagerly():
    with tw.device("/gpu:7"):
        assert tw.negative(tw.constant(1.0)).numpy() == -1.0
