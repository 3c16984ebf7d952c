"""How many cores the rest of the machine left idle lately: the CPU budget of background work.

The embed lane's model runs on up to MEMORYHUB_EMBED_THREADS threads. Niceness alone does not keep
it out of the requests' way: on two cores, a lane on two threads while single appends streamed in
made them p50 5.0–5.3 / p95 ~11 ms, against 4.4–4.7 / 7.6–8.0 ms with the lane on one thread
(bench/README.md, stop 32). So the lane takes the cores other processes (web workers, PostgreSQL,
the clusters) left idle since its last look, and always one: a backlog still drains at full speed
on a quiet machine, and on a busy one the requests keep their cores.

Linux only (/proc/stat); elsewhere every core counts as free.
"""

from __future__ import annotations

import math
import os
import threading
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
MIN_INTERVAL = 0.25  # seconds: a shorter interval reuses the last figure (too few ticks to tell)


def _machine_busy_seconds() -> float | None:
    """CPU time the whole machine spent busy since boot (all cores), or None without /proc/stat."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / CLOCK_TICKS  # guest time is already in user


def _own_seconds() -> float:
    times = os.times()
    return times.user + times.system


def _clock() -> float:
    return time.monotonic()


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Headroom:
    """free(): cores the other processes left idle over the interval since the previous call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: tuple[float, float, float] | None = None  # (wall, machine busy, own)
        self._free: float | None = None

    def _sample(self) -> tuple[float, float, float] | None:
        busy = _machine_busy_seconds()
        return None if busy is None else (_clock(), busy, _own_seconds())

    def free(self) -> float:
        """Every core on the first call (nothing measured yet) and without /proc/stat. After a
        long pause the interval is long too: sporadic appends find a mostly idle machine."""
        with self._lock:
            now = self._sample()
            if now is None:
                return float(cores())
            if self._last is None:
                self._last = now
                return float(cores())
            wall = now[0] - self._last[0]
            if wall < MIN_INTERVAL and self._free is not None:
                return self._free
            others = max(0.0, (now[1] - self._last[1]) - (now[2] - self._last[2])) / max(wall, 1e-6)
            self._free = max(0.0, cores() - others)
            self._last = now
            return self._free

    def threads(self, wanted: int) -> int:
        """Threads for the next piece of work: the free cores (a core 70 % free counts), at least
        one and at most `wanted`."""
        if wanted <= 1:
            return 1
        return max(1, min(wanted, math.floor(self.free() + 0.3)))


headroom = Headroom()
