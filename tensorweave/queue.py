"""``tw.queue``: queues of tensors shared between steps, and the threads that feed them.

    q = tw.queue.FIFOQueue(capacity, dtypes, shapes)   # also RandomShuffleQueue, PaddingFIFOQueue
    runner = tw.queue.QueueRunner(q, [enqueue_fn] * 4)
    coord = tw.queue.Coordinator()
    threads = runner.create_threads(coord=coord, start=True)
"""

from .frontend.queue_runner import Coordinator, QueueRunner
from .frontend.queues import FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue

__all__ = ["QueueBase", "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue", "QueueRunner",
           "Coordinator"]


def __dir__() -> list[str]:
    return sorted(__all__)
