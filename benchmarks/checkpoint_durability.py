"""What durability costs: `CheckpointManager.save` of a 200 MB checkpoint with the fsyncs
of `runtime/atomic_files.py` (file before the rename, directory after) and without them.

    python benchmarks/checkpoint_durability.py [--mb 200] [--repeats 5] [--dir DIR]

Saves alternate between the two modes so both see the same machine load; the directory
defaults to a fresh one under the system's temporary directory (point --dir at the disk
you checkpoint to: the cost is the time that disk needs to write the data back).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import tensorweave as tw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="tw-ckpt-bench-", dir=args.dir)
    w = tw.Variable(np.arange(args.mb * (1 << 20) // 4, dtype=np.float32), name="w")
    manager = tw.train.CheckpointManager(tw.train.Checkpoint(w=w), directory, max_to_keep=2)
    manager.save()  # traces and compiles the save function: not part of either timing
    real_fsync = os.fsync
    in_fsync = [0.0]

    def timed_fsync(fd: int) -> None:
        start = time.perf_counter()
        real_fsync(fd)
        in_fsync[0] += time.perf_counter() - start

    times: dict[str, list[float]] = {"durable": [], "no fsync": []}
    for _ in range(args.repeats):
        for mode in times:
            os.fsync = timed_fsync if mode == "durable" else (lambda fd: None)
            os.sync()  # start each save with no dirty pages of the previous one
            start = time.perf_counter()
            manager.save()
            times[mode].append(time.perf_counter() - start)
    os.fsync = real_fsync
    for mode, ts in times.items():
        print(f"{mode:9s} median {statistics.median(ts) * 1000:7.1f} ms  "
              f"(min {min(ts) * 1000:.1f}, max {max(ts) * 1000:.1f}, n={len(ts)})")
    # The time inside fsync is the cost; the difference of the medians should agree,
    # but on a shared machine it is noise-dominated (both can differ by 100s of ms).
    print(f"fsync cost for {args.mb} MB: {in_fsync[0] / args.repeats * 1000:.1f} ms per save "
          f"inside fsync calls (difference of medians: "
          f"{(statistics.median(times['durable']) - statistics.median(times['no fsync'])) * 1000:.1f} ms)")
    for name in os.listdir(directory):
        os.unlink(os.path.join(directory, name))
    os.rmdir(directory)


if __name__ == "__main__":
    main()
