"""The native lowerings, one module per op family; importing this package registers them
with `tensorweave.targets.cpu.lowering.LOWERINGS`."""

from . import array, core, depthwise, nn, reduce  # noqa: F401
