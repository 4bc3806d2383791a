"""``tw.train``: checkpoints (`Checkpoint`, `CheckpointManager`, `latest_checkpoint`)."""

from .frontend.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint"]


def __dir__() -> list[str]:
    return sorted(__all__)
