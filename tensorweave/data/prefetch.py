"""``Dataset.prefetch``: the input runs ahead on a background thread.

The producer thread owns the input's generator (a generator can only be resumed, and
closed, by one thread at a time) and hands elements over through a bounded queue. An
exception in the producer travels through the queue and is raised in the consumer, at
the place of the element that failed, never swallowed. Stopping the consumer (closing
its iterator, or dropping it) sets a stop flag; the producer notices within a poll
interval, closes the input (so nested prefetches and map pools stop too) and exits, and
the consumer joins it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

from .dataset import AUTOTUNE, Dataset, check_count
from .structure import Element

_AUTOTUNE_BUFFER = 4  # what AUTOTUNE means here: a few elements ahead
_POLL_S = 0.05  # how often a blocked producer checks whether it should stop


class _End:
    """The producer finished: normally (error None) or with `error`."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


class PrefetchDataset(Dataset):
    """The input's elements, produced up to `buffer_size` ahead by a background thread."""

    def __init__(self, source: Dataset, buffer_size: int) -> None:
        super().__init__(source._structure, "Dataset.prefetch")
        self._source = source
        n = check_count(buffer_size, "Dataset.prefetch: buffer_size", self._location,
                        minimum=-1)
        self._buffer_size = _AUTOTUNE_BUFFER if n == AUTOTUNE else max(n, 1)

    def _cardinality(self) -> int:
        return self._source._cardinality()

    def _iterate(self) -> Iterator[Element]:
        buffer: queue.Queue = queue.Queue(self._buffer_size)
        stop = threading.Event()
        thread = threading.Thread(target=_produce, args=(self._source._iterate(), buffer, stop),
                                  name="tw.data.prefetch", daemon=True)
        thread.start()
        try:
            while True:
                item = buffer.get()
                if isinstance(item, _End):
                    if item.error is not None:
                        raise item.error
                    return
                yield item
        finally:
            stop.set()
            # unblock a producer waiting on a full queue, then wait for it to close its input
            while thread.is_alive():
                try:
                    buffer.get(timeout=_POLL_S)
                except queue.Empty:
                    pass
            thread.join()


def _put(buffer: queue.Queue, item: object, stop: threading.Event) -> bool:
    """Put `item`, waiting while the buffer is full; False if told to stop meanwhile."""
    while not stop.is_set():
        try:
            buffer.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _produce(source: Iterator[Element], buffer: queue.Queue, stop: threading.Event) -> None:
    error: BaseException | None = None
    try:
        for element in source:
            if not _put(buffer, element, stop):
                return
    except BaseException as e:  # noqa: BLE001  (handed to the consumer, which raises it)
        error = e
    finally:
        source.close()
    _put(buffer, _End(error), stop)
