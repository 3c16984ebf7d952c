"""A slow start-up step that says so: "still …" on the terminal at least every STILL_SECONDS, so
that a person watching `make run` never sees it silent for long (a silent terminal looks hung)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# A line every 10 s at most, with room for a busy machine's scheduling.
STILL_SECONDS = 8


@contextmanager
def saying_still(
    say: Callable[[str], object], doing: str, every: float = STILL_SECONDS
) -> Iterator[None]:
    """Say "  still {doing} (N s so far)…" every `every` seconds while the block runs."""
    done = threading.Event()
    started = time.monotonic()

    def tick() -> None:
        while not done.wait(every):
            say(f"  still {doing} ({time.monotonic() - started:.0f} s so far)…")

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
