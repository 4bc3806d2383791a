"""`tw.config`: the devices of this process and placement settings (like ``tf.config``).

    tw.config.set_logical_devices("CPU", 4)     # CPU:0..3 in this process
    tw.config.list_logical_devices("CPU")       # [LogicalDevice(name='/job:localhost/...
    tw.config.set_soft_device_placement(False)  # impossible requests raise instead
    tw.config.set_auto_gpu_placement(True)      # ops without a request may go to GPUs
    tw.config.set_lower_control_flow(True)      # cond/while_loop as Switch/Merge/...

Placement happens when a function is compiled, so change these before the first call of
the functions they should affect.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

from .runtime.devices import default_device_manager, physical_gpu_count


class LogicalDevice(NamedTuple):
    """A device ops can be placed on: its canonical name and type."""

    name: str
    device_type: str


class PhysicalDevice(NamedTuple):
    """A piece of hardware of this machine."""

    name: str
    device_type: str


def set_logical_devices(device_type: str, count: int) -> None:
    """Split the host into `count` logical devices of `device_type` (only ``"CPU"``):
    ``set_logical_devices("CPU", 2)`` makes ``/job:localhost/replica:0/task:0/device:CPU:0``
    and ``.../device:CPU:1``, so multi-device placement and Send/Recv work on one CPU."""
    default_device_manager().set_logical_devices(device_type, count)


def list_logical_devices(device_type: str | None = None) -> list[LogicalDevice]:
    """The devices placement may use, optionally only those of `device_type`."""
    return [LogicalDevice(d.name, d.device_type)
            for d in default_device_manager().list_devices(device_type)]


def list_physical_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The host CPU and the CUDA GPUs numba finds (``/physical_device:GPU:0``...)."""
    found = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    found += [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU")
              for i in range(physical_gpu_count())]
    want = device_type.upper() if device_type else None
    return [d for d in found if want is None or d.device_type == want]


_settings_lock = threading.Lock()
_soft_placement = True


def set_soft_device_placement(enabled: bool) -> None:
    """With soft placement (the default), an op whose requested device does not exist or
    has no kernel for it runs on CPU:0; without, placement raises
    `tw.errors.InvalidArgumentError`."""
    global _soft_placement
    with _settings_lock:
        _soft_placement = bool(enabled)


def get_soft_device_placement() -> bool:
    """Whether soft device placement is on (see `set_soft_device_placement`)."""
    return _soft_placement


def set_auto_gpu_placement(enabled: bool) -> None:
    """Whether the placement cost model may put ops without a device request on GPUs
    (kernels fast, host<->GPU copies slow: big matmuls and convolutions move, small ops
    stay next to their data). Off by default: such ops stay on the CPUs, and GPUs run
    the ops placed there with ``tw.device("/GPU:0")`` (and whole functions compiled
    with ``target="gpu"``)."""
    from .passes.placement import set_auto_gpu_placement as set_auto
    set_auto(enabled)


def get_auto_gpu_placement() -> bool:
    """Whether ops without a device request may be placed on GPUs."""
    from .passes.placement import auto_device_types
    return "GPU" in auto_device_types()


def set_lower_control_flow(enabled: bool | None) -> None:
    """Whether compiled functions run ``tw.cond``/``tw.while_loop`` lowered to the dataflow
    primitives (Switch, Merge, Enter, Exit, NextIteration) rather than as functional ops,
    unless ``tw.compile(..., lower_control_flow=...)`` says otherwise. Off by default;
    None goes back to the environment variable ``TW_LOWER_CONTROL_FLOW``. Like placement,
    it applies when a function is compiled (its first call for each signature)."""
    from .passes import lower_control_flow
    lower_control_flow.set_default(enabled)


def get_lower_control_flow() -> bool:
    """Whether compiled functions lower control flow by default."""
    from .passes import lower_control_flow
    return lower_control_flow.default_enabled()


def experimental_connect_to_cluster(cluster_spec_or_resolver: Any, job_name: str = "localhost",
                                    task_index: int = 0, protocol: str | None = None,
                                    token: str | None = None) -> Any:
    """Run `@tw.compile` functions on a cluster: ops under ``tw.device("/job:J/task:T")``
    run on that task, the rest on this process's task (see
    `tensorweave.distribute.connect`). Returns the `tw.distribute.Cluster`."""
    from .distribute.connect import experimental_connect_to_cluster as connect
    return connect(cluster_spec_or_resolver, job_name, task_index, protocol, token)


__all__ = ["LogicalDevice", "PhysicalDevice", "experimental_connect_to_cluster",
           "get_auto_gpu_placement", "get_lower_control_flow", "set_auto_gpu_placement",
           "get_soft_device_placement", "list_logical_devices", "list_physical_devices",
           "set_logical_devices", "set_lower_control_flow", "set_soft_device_placement"]


def __dir__() -> list[str]:
    return sorted(__all__)
