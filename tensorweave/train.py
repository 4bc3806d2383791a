"""``tw.train``: checkpoints (`Checkpoint`, `CheckpointManager`, `latest_checkpoint`), and
``tf.train.Example`` and its parts (protobuf classes: `tensorweave.io.example_protos`)."""

from typing import Any

from .frontend.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint
from .io.example_protos import NAMES as _EXAMPLE_NAMES

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint", *_EXAMPLE_NAMES]


def __getattr__(name: str) -> Any:
    # (made on first use: the classes need the protobuf package)
    if name in _EXAMPLE_NAMES:
        from .io.example_protos import message_class
        return message_class(name)
    raise AttributeError(f"module 'tensorweave.train' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
