"""Counts that many requests add to, written together: one statement every few seconds instead of
a write per request. The request only adds in memory; a background thread of the process writes.

A process that dies loses at most one interval of counts: they are statistics and reinforcement,
not memory. An interval of 0 writes at once (tests, one-off tools).
"""

from __future__ import annotations

import atexit
import logging
import operator
import threading
from collections.abc import Callable, Hashable

logger = logging.getLogger(__name__)

# How often each process writes what its counters gathered (request counts for the dashboard, the
# last use of its API keys, the access counts of memories its searches returned): a dashboard at
# most this many seconds behind, one statement per interval instead of a write per request.
FLUSH_SECONDS = 10.0

Counts = dict[Hashable, list[float]]


class BatchedCounter:
    """Sums values per key (or keeps what `combine` makes of them: `max` keeps the latest of
    times); `write(counts)` stores a batch (one statement, its own transaction)."""

    def __init__(
        self,
        name: str,
        write: Callable[[Counts], None],
        combine: Callable[[float, float], float] = operator.add,
    ) -> None:
        self.name = name
        self.write = write
        self.combine = combine
        self.lock = threading.Lock()
        self.pending: Counts = {}
        self.thread: threading.Thread | None = None
        atexit.register(self.flush)

    def add(self, key: Hashable, *values: float) -> None:
        self.add_many([key], *values)

    def add_many(self, keys: list[Hashable], *values: float) -> None:
        """Add `values` to each key (one batch: written together)."""
        with self.lock:
            for key in keys:
                entry = self.pending.setdefault(key, [0.0] * len(values))
                for i, value in enumerate(values):
                    entry[i] = self.combine(entry[i], value)
        interval = FLUSH_SECONDS  # read at each call: tests set it to 0 (write at once)
        if interval <= 0:
            self.flush()
        elif self.thread is None or not self.thread.is_alive():
            self._start(interval)

    def flush(self) -> None:
        with self.lock:
            pending, self.pending = self.pending, {}
        if not pending:
            return
        try:
            self.write(pending)
        except Exception:  # counting must never fail a request that was answered
            logger.exception("could not write %s counts", self.name)

    def _start(self, interval: float) -> None:
        with self.lock:
            if self.thread is not None and self.thread.is_alive():
                return
            self.thread = threading.Thread(
                target=self._run, args=(interval,), daemon=True, name=f"{self.name}-counter"
            )
            self.thread.start()

    def _run(self, interval: float) -> None:
        from django.db import connection

        stop = threading.Event()
        while not stop.wait(interval):
            self.flush()
            connection.close()  # this thread's own connection: not held between flushes
