"""Thread pools made at first use in each process."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor


class ProcessPool:
    """A ThreadPoolExecutor made at first use in each process: one made before a fork (a server's
    master importing the app) would give the worker threads that do not exist there."""

    def __init__(self, workers: int, name: str) -> None:
        self.workers = workers
        self.name = name
        self._made: tuple[int, ThreadPoolExecutor] | None = None
        self._lock = threading.Lock()

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._made is None or self._made[0] != os.getpid():
                self._made = (
                    os.getpid(),
                    ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=self.name),
                )
            return self._made[1]
