"""Devices: TensorFlow-style device names and the per-process device registry.

A device name is a path of fields, ``/job:localhost/replica:0/task:0/device:CPU:1``; a
*partial* spec leaves some out (``/gpu:0``, ``/job:worker``, ``/device:CPU:*``) and means
"any device with these fields". `DeviceSpec` parses every spelling TensorFlow accepts
(``/cpu:0``, ``/device:GPU:1``, ``/job:ps/task:2/cpu:0``, upper or lower case types) and
prints the canonical one. `DeviceSpec.merge` lays one spec over another, which is how
nested ``tw.device`` scopes combine.

The `DeviceManager` of this process (`default_device_manager()`) holds the local
devices: ``CPU:0`` always, ``CPU:1..n-1`` after ``tw.config.set_logical_devices("CPU", n)``
(logical devices share the host's cores; they exist so multi-device placement and
Send/Recv run on any machine), and one ``GPU:i`` per CUDA GPU that numba finds (numba's
CUDA simulator counts as one GPU, so GPU placement is testable without a GPU).

`device_runtime(name)` gives the dataflow executor what runs a partition on a device
that is not the host: its node kernels and its host<->device copies (for GPUs,
`tensorweave.targets.gpu.runtime.GpuRuntime`).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InvalidArgumentError

LOCAL_JOB = "localhost"
"""The job name of the devices of this process (TensorFlow's default)."""

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_FIELDS = ("job", "replica", "task", "device_type", "device_index")


@dataclass(frozen=True)
class DeviceSpec:
    """A full or partial device name; a field left None matches any value.

    ``device_type`` is upper case (``CPU``, ``GPU``); ``device_index`` None with a type
    set is the wildcard ``/device:CPU:*``.
    """

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    # ---------------------------------------------------------------- parsing
    @classmethod
    def from_string(cls, spec: str | DeviceSpec | None) -> DeviceSpec:
        """Parse ``/job:J/replica:R/task:T/device:TYPE:I`` and its short and partial forms
        (``/cpu:0``, ``/GPU:1``, ``/device:CPU:*``, ``/job:ps``, ``""``). Raises
        `InvalidArgumentError` (a ValueError) naming the bad part."""
        if isinstance(spec, DeviceSpec):
            return spec
        if spec is None:
            return cls()
        if not isinstance(spec, str):
            raise InvalidArgumentError(f"a device name must be a string, got {spec!r}")
        fields: dict[str, object] = {}
        for part in spec.strip().split("/"):
            if part:
                for key, value in _parse_part(part, spec).items():
                    if key in fields and fields[key] != value:
                        raise InvalidArgumentError(
                            f"device name {spec!r} gives {_FIELD_LABEL[key]} twice")
                    fields[key] = value
        return cls(**fields)  # type: ignore[arg-type]

    # --------------------------------------------------------------- printing
    def to_string(self) -> str:
        """The canonical name: the fields that are set, in the order job, replica, task,
        device (``/job:localhost/replica:0/task:0/device:CPU:1`` for a full spec)."""
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            index = "*" if self.device_index is None else str(self.device_index)
            out += f"/device:{self.device_type}:{index}"
        elif self.device_index is not None:
            out += f"/device:*:{self.device_index}"
        return out

    def __str__(self) -> str:
        return self.to_string()

    # ------------------------------------------------------------- combining
    def merge(self, other: DeviceSpec | str | None) -> DeviceSpec:
        """This spec with every field that `other` sets replaced by `other`'s value (an
        inner ``tw.device`` scope over an outer one). Changing the device type without
        giving an index clears the index (``/cpu:1`` merged with ``/device:GPU:*``)."""
        other = DeviceSpec.from_string(other)
        fields = {k: getattr(other, k) if getattr(other, k) is not None else getattr(self, k)
                  for k in _FIELDS}
        if (other.device_type is not None and other.device_index is None
                and other.device_type != self.device_type):
            fields["device_index"] = None
        return DeviceSpec(**fields)

    def with_defaults(self, defaults: DeviceSpec) -> DeviceSpec:
        """Fill the fields this spec leaves open from `defaults`."""
        return defaults.merge(self)

    @property
    def is_full(self) -> bool:
        """True when every field is set (the name of one device)."""
        return all(getattr(self, k) is not None for k in _FIELDS)

    def matches(self, device: DeviceSpec | str) -> bool:
        """True when `device` has every field this spec sets (unset fields match any)."""
        device = DeviceSpec.from_string(device)
        return all(getattr(self, k) is None or getattr(self, k) == getattr(device, k)
                   for k in _FIELDS)

    def is_compatible_with(self, other: DeviceSpec | str) -> bool:
        """True when some device could match both specs (no field set to two values)."""
        other = DeviceSpec.from_string(other)
        return all(getattr(self, k) is None or getattr(other, k) is None
                   or getattr(self, k) == getattr(other, k) for k in _FIELDS)

    def sort_key(self) -> tuple:
        """Orders full names by job, replica, task, type (CPU first) and index."""
        kind = {"CPU": 0, "GPU": 1}.get(self.device_type or "", 2)
        return (self.job or "", self.replica or 0, self.task or 0, kind,
                self.device_type or "", self.device_index or 0)


_FIELD_LABEL = {"job": "the job", "replica": "the replica", "task": "the task",
                "device_type": "the device type", "device_index": "the device index"}


def _index(text: str, what: str, spec: str) -> int | None:
    if text == "*":
        return None
    if not text.isdigit():
        raise InvalidArgumentError(f"device name {spec!r}: {what} must be a non-negative "
                                   f"integer or '*', got {text!r}")
    return int(text)


def _device_type(text: str, spec: str) -> str:
    if not _TYPE.match(text):
        raise InvalidArgumentError(f"device name {spec!r}: bad device type {text!r}")
    return text.upper()


def _parse_part(part: str, spec: str) -> dict[str, object]:
    """One ``/``-separated part of a device name as DeviceSpec fields."""
    head, _, rest = part.partition(":")
    key = head.lower()
    if key == "job":
        if not _IDENT.match(rest):
            raise InvalidArgumentError(f"device name {spec!r}: bad job name {rest!r}")
        return {"job": rest}
    if key in ("replica", "task"):
        value = _index(rest, key, spec)
        return {} if value is None else {key: value}
    if key == "device":
        dtype, sep, index = rest.partition(":")
        if dtype == "*":
            return {} if not sep else _drop_none({"device_index": _index(index, "the index", spec)})
        fields: dict[str, object] = {"device_type": _device_type(dtype, spec)}
        if sep:
            fields.update(_drop_none({"device_index": _index(index, "the index", spec)}))
        return fields
    if rest and head and ":" not in rest and _TYPE.match(head):  # legacy "/cpu:0", "/GPU:*"
        return _drop_none({"device_type": head.upper(),
                           "device_index": _index(rest, "the index", spec)})
    if not rest and key in ("cpu", "gpu"):  # "/cpu" alone
        return {"device_type": key.upper()}
    raise InvalidArgumentError(
        f"cannot parse device name {spec!r}: unknown part {part!r} (expected job:NAME, "
        f"replica:N, task:N, device:TYPE:N or TYPE:N, e.g. '/job:localhost/replica:0/"
        f"task:0/device:CPU:0' or '/cpu:0')")


def _drop_none(d: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in d.items() if v is not None}


def canonical_name(spec: str | DeviceSpec, defaults: DeviceSpec | None = None) -> str:
    """The full canonical name of `spec`, with open fields taken from `defaults`
    (default: this process's job/replica/task and device index 0)."""
    if defaults is None:
        defaults = DeviceSpec(LOCAL_JOB, 0, 0, None, 0)
    full = DeviceSpec.from_string(spec).with_defaults(defaults)
    if full.device_index is None:
        full = replace(full, device_index=0)
    if not full.is_full:
        raise InvalidArgumentError(f"device name {str(spec)!r} does not name a device type")
    return full.to_string()


# ------------------------------------------------------------------------- devices

@dataclass(frozen=True)
class Device:
    """One device of this process: its spec (full) and its canonical name."""

    spec: DeviceSpec

    @property
    def name(self) -> str:
        return self.spec.to_string()

    @property
    def device_type(self) -> str:
        return self.spec.device_type or ""

    @property
    def index(self) -> int:
        return self.spec.device_index or 0

    @property
    def short_name(self) -> str:
        """``CPU:1``: type and index, for tables and node names."""
        return f"{self.device_type}:{self.index}"

    def __str__(self) -> str:
        return self.name


class DeviceManager:
    """The devices of one process (a task of a job): CPU:0 always, more logical CPUs on
    request, and the GPUs the cuda target can use. Thread-safe."""

    def __init__(self, job: str = LOCAL_JOB, replica: int = 0, task: int = 0, *,
                 detect_gpus: bool = True) -> None:
        self.local = DeviceSpec(job, replica, task)
        self._lock = threading.Lock()
        self._logical: dict[str, int] = {"CPU": 1}
        self._physical_gpus = physical_gpu_count() if detect_gpus else 0
        if self._physical_gpus:
            self._logical["GPU"] = self._physical_gpus

    def _make(self, device_type: str, index: int) -> Device:
        return Device(DeviceSpec(self.local.job, self.local.replica, self.local.task,
                                 device_type, index))

    @property
    def devices(self) -> list[Device]:
        """Every device, CPUs first, in a stable order."""
        with self._lock:
            counts = dict(self._logical)
        return [self._make(t, i) for t in sorted(counts, key=lambda t: (t != "CPU", t))
                for i in range(counts[t])]

    def list_devices(self, device_type: str | None = None) -> list[Device]:
        """The devices, optionally only those of `device_type` (``"CPU"``, ``"gpu"``)."""
        want = device_type.upper() if device_type else None
        return [d for d in self.devices if want is None or d.device_type == want]

    @property
    def default_device(self) -> Device:
        """Where ops without a placement constraint go by default: CPU:0."""
        return self._make("CPU", 0)

    def set_logical_devices(self, device_type: str, count: int) -> None:
        """Make `count` logical devices of `device_type`: ``("CPU", 4)`` gives CPU:0..3.

        Only CPUs can be split: GPUs are the ones numba finds. Graphs compiled before the
        change keep the placement they got."""
        device_type = device_type.upper()
        if device_type != "CPU":
            raise InvalidArgumentError(f"only CPU logical devices can be configured, got "
                                       f"{device_type!r} (GPUs come from the CUDA driver)")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise InvalidArgumentError(f"the number of logical CPU devices must be an int "
                                       f">= 1, got {count!r}")
        with self._lock:
            self._logical["CPU"] = count

    def find(self, spec: str | DeviceSpec) -> list[Device]:
        """The devices matching a (partial) spec, in device order."""
        s = DeviceSpec.from_string(spec)
        return [d for d in self.devices if s.matches(d.spec)]

    def lookup(self, name: str | DeviceSpec) -> Device:
        """The one device a full or short name denotes (``/cpu:1`` is CPU:1 of this
        task); raises `InvalidArgumentError` listing the devices when there is none."""
        found = []
        if DeviceSpec.from_string(name).device_type is not None:
            found = self.find(canonical_name(name, replace(self.local, device_index=0)))
        if len(found) != 1:
            raise InvalidArgumentError(f"no device {str(name)!r}; available: "
                                       f"{', '.join(d.name for d in self.devices)}")
        return found[0]


def physical_gpu_count() -> int:
    """How many CUDA GPUs numba can use here (0 without a GPU, a driver or numba.cuda).

    Importing numba.cuda costs a second, so machines without the NVIDIA driver are ruled
    out first by looking for its device files (Linux). A process started with numba's
    CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) has the simulator's one GPU: the gpu
    target runs its kernels there."""
    if os.environ.get("TW_DISABLE_GPU", "") not in ("", "0"):
        return 0
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0"):
        try:
            from numba import cuda
            return len(cuda.gpus)
        except Exception:  # noqa: BLE001 - numba-cuda missing: no simulator either
            return 0
    if os.path.isdir("/dev") and not any(os.path.exists(p) for p in
                                         ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg")):
        return 0
    try:
        from numba import cuda
        if not cuda.is_available():
            return 0
        return len(cuda.gpus)
    except Exception:  # noqa: BLE001 - any driver/toolkit failure means "no GPU"
        return 0


# device type -> "module:function" making its runtime (imported on first use)
_RUNTIMES: dict[str, str] = {"GPU": "tensorweave.targets.gpu.runtime:gpu_runtime"}


def register_device_runtime(device_type: str, factory: str) -> None:
    """Run partitions on devices of `device_type` with the runtime ``factory()`` makes
    (``"package.module:function"``): an object with ``prepare(node) -> kernel``,
    ``to_device(value)`` and ``to_host(value)`` (see `device_runtime`)."""
    _RUNTIMES[device_type.upper()] = factory


def device_runtime(device: str) -> Any:
    """The runtime of a partition on `device`, or None for the host's CPUs: its
    ``prepare(node)`` gives the node kernels, ``to_device`` moves what the partition
    receives (arguments, Recvs) onto the device, ``to_host`` what it gives back
    (results, Sends)."""
    kind = DeviceSpec.from_string(device).device_type if device else None
    target = _RUNTIMES.get(kind or "")
    if target is None:
        return None
    import importlib
    module, _, fn = target.partition(":")
    return getattr(importlib.import_module(module), fn)()


_default: DeviceManager | None = None
_default_lock = threading.Lock()


def default_device_manager() -> DeviceManager:
    """The device registry of this process (created on first use)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = DeviceManager()
    return _default


def device_names(devices: Iterable[Device]) -> str:
    """``"CPU:0, CPU:1"``-style list for error messages."""
    return ", ".join(d.name for d in devices)


def as_devices(devices: Sequence[Device | str | DeviceSpec] | None) -> list[Device]:
    """Normalise a list of devices or names (None: this process's devices)."""
    if devices is None:
        return default_device_manager().devices
    out: list[Device] = []
    for d in devices:
        if isinstance(d, Device):
            out.append(d)
        else:
            out.append(Device(DeviceSpec.from_string(canonical_name(d))))
    if not out:
        raise InvalidArgumentError("the list of devices to place on is empty")
    return out


__all__ = ["LOCAL_JOB", "Device", "DeviceManager", "DeviceSpec", "as_devices", "canonical_name",
           "default_device_manager", "device_names", "device_runtime", "physical_gpu_count",
           "register_device_runtime"]
