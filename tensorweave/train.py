"""``tw.train``: checkpoints (`Checkpoint`, `CheckpointManager`, `latest_checkpoint`)."""

from .frontend.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint"]
