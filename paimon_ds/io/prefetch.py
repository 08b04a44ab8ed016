"""Ordered read-ahead: independent reads (data files, splits) decoded in threads, their items given in order.

A Spark-free scan reads its files one after another in the caller's thread unless it reads ahead: pyarrow's
decoding releases the GIL, so files decoded in threads use every core. `read_ahead` keeps the order a
sequential read gives (unit after unit, each unit's items in its order), so a limit and `to_batches()` see the
same rows, and bounds memory: at most ``workers`` units are open at once, each at most ``depth`` items ahead
of the consumer.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# threads reading ahead: every core, at most 8 (each also decodes its file's columns on pyarrow's own pool)
READ_AHEAD_WORKERS = max(1, min(8, os.cpu_count() or 1))
# items (record batches) a unit's thread may hold ahead of the consumer
READ_AHEAD_DEPTH = 8

_END = object()
_POLL_SECONDS = 0.05


def read_ahead(units: Sequence[tuple[int, Callable[[], Iterator[T]]]], workers: int = READ_AHEAD_WORKERS,
               depth: int = READ_AHEAD_DEPTH, row_budget: int | None = None) -> Iterator[T]:
    """The items of each unit's iterator, unit after unit, as reading them in turn gives them.

    ``units``: (its row count as metadata tells it, a function opening its iterator). Up to ``workers`` units are
    read at once in threads. ``row_budget`` (a limit): no further unit is started ahead once the units started
    hold that many rows, so a limit opens only the files it needs (more are opened if a filter drops rows).
    An error of a unit is raised where its items would have come; closing the iterator stops the threads.
    """
    if workers <= 1 or len(units) <= 1:
        for _, open_unit in units:
            yield from open_unit()
        return
    stop = threading.Event()
    pending: deque[queue.Queue] = deque()
    started, started_rows = 0, 0
    with ThreadPoolExecutor(workers, thread_name_prefix="paimon-ds-read") as pool:
        try:
            while pending or started < len(units):
                while (started < len(units) and len(pending) < workers
                       and (not pending or row_budget is None or started_rows < row_budget)):
                    rows, open_unit = units[started]
                    out: queue.Queue = queue.Queue(depth)
                    pool.submit(_produce, open_unit, out, stop)
                    pending.append(out)
                    started, started_rows = started + 1, started_rows + rows
                out = pending.popleft()
                while True:
                    item, error = out.get()
                    if item is _END:
                        if error is not None:
                            raise error
                        break
                    yield item
        finally:
            stop.set()  # the threads leave at their next item; the pool's exit waits for them


def _produce(open_unit: Callable[[], Iterator[Any]], out: queue.Queue, stop: threading.Event) -> None:
    end: tuple[Any, BaseException | None] = (_END, None)
    try:
        items = open_unit()
        try:
            for item in items:
                if not _put(out, (item, None), stop):
                    return
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()
    except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised in its thread
        end = (_END, e)
    _put(out, end, stop)


def _put(out: queue.Queue, entry: tuple[Any, BaseException | None], stop: threading.Event) -> bool:
    """Put ``entry`` once there is room; False if the consumer stopped first."""
    while not stop.is_set():
        try:
            out.put(entry, timeout=_POLL_SECONDS)
            return True
        except queue.Full:
            continue
    return False
