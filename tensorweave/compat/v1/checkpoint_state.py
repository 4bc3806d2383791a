"""TensorFlow 1's ``tf.train.get_checkpoint_state``: the checkpoints a directory's index
records (tensorweave's ``checkpoint.json``, TensorFlow's ``checkpoint`` file)."""

from __future__ import annotations

import dataclasses
import os

from ...runtime import checkpoint_index


@dataclasses.dataclass
class CheckpointState:
    """The fields of TensorFlow's ``CheckpointState`` proto: the newest checkpoint's
    prefix, every kept one oldest first (paths joined to the directory, as TensorFlow
    gives relative ones), when each was saved and the last one preserved by
    ``keep_checkpoint_every_n_hours`` (seconds since the epoch)."""

    model_checkpoint_path: str
    all_model_checkpoint_paths: list[str]
    all_model_checkpoint_timestamps: list[float]
    last_preserved_timestamp: float


def get_checkpoint_state(checkpoint_dir: str,
                         latest_filename: str | None = None) -> CheckpointState | None:
    """The `CheckpointState` of `checkpoint_dir`, or None when it records no checkpoint
    (no index, or an empty one). `latest_filename` (another name for TensorFlow's
    ``checkpoint`` file) is not supported: tensorweave keeps one index per directory."""
    if latest_filename not in (None, "checkpoint", checkpoint_index.INDEX):
        raise ValueError(f"get_checkpoint_state: latest_filename={latest_filename!r} is not "
                         f"supported (tensorweave keeps one index, "
                         f"'{checkpoint_index.INDEX}', per directory)")
    index = checkpoint_index.read_index(checkpoint_dir)
    latest = index.get("latest")
    if not latest:
        return None
    stamps = index.get("timestamps", {})
    names = list(index["all"])
    return CheckpointState(
        model_checkpoint_path=os.path.join(checkpoint_dir, latest),
        all_model_checkpoint_paths=[os.path.join(checkpoint_dir, n) for n in names],
        all_model_checkpoint_timestamps=[float(stamps[n]) for n in names if n in stamps],
        last_preserved_timestamp=float(index.get("last_preserved_timestamp", 0.0)))


__all__ = ["CheckpointState", "get_checkpoint_state"]
