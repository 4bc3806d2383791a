"""Send and Recv: how a tensor crosses from one device's partition to another's.

The partition pass puts a ``Send`` on the device that computes a tensor and a ``Recv``
on each device that reads it (one pair per tensor and destination device). At run time
both sides meet in the step's rendezvous under ``f"{key};{step_id}"``: Send deposits the
tensor without waiting, Recv blocks until it is there (or the step is cancelled).
"""

from __future__ import annotations

import numpy as np

from ...errors import InternalError
from ..registry import attr, def_op
from ..types import TensorType
from .common import expect_tensor

_ENDPOINTS = {"key": attr("str"), "send_device": attr("str"), "recv_device": attr("str")}

Send = def_op("Send", ["tensor"], dict(_ENDPOINTS), stateful=True,
              doc="Hand `tensor` to the Recv with the same `key` on `recv_device` (this "
                  "step's rendezvous key is f'{key};{step_id}').")

Recv = def_op("Recv", [], {**_ENDPOINTS, "dtype": attr("dtype"), "shape": attr("shape")},
              stateful=True,
              doc="The tensor the Send with the same `key` on `send_device` sends in this "
                  "step; blocks until it arrives or the step is cancelled.")


def rendezvous_key(key: str, step_id: int) -> str:
    """The key both sides of one transfer use in one step."""
    return f"{key};{step_id}"


def _rendezvous(ctx, op: str):
    rendezvous = getattr(ctx, "rendezvous", None)
    if rendezvous is None:
        raise InternalError(f"{op} needs the multi-device executor (a kernel context with a "
                            f"rendezvous); run the partitioned graph with DataflowExecutable")
    return rendezvous


@Send.infer
def _send_infer(tensor, *, key, send_device, recv_device):
    expect_tensor(tensor, "tensor")
    return []


@Send.kernel("reference", context=True)
def _send_kernel(ctx, tensor, *, key, send_device, recv_device):
    _rendezvous(ctx, "Send").send(rendezvous_key(key, ctx.step_id), tensor)
    return ()


@Recv.infer
def _recv_infer(*, key, send_device, recv_device, dtype, shape):
    return TensorType(dtype, shape)


@Recv.kernel("reference", context=True)
def _recv_kernel(ctx, *, key, send_device, recv_device, dtype, shape):
    value = _rendezvous(ctx, "Recv").recv(rendezvous_key(key, ctx.step_id))
    return np.asarray(value)
