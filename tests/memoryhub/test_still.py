"""A slow start-up step says "still …" while it runs (migrating took 20 s without a line)."""

from __future__ import annotations

import time

from memoryhub.plumbing.still import saying_still


def test_a_slow_step_says_still_and_stops_saying_it_when_done() -> None:
    said: list[str] = []
    with saying_still(said.append, "applying migrations", every=0.05):
        time.sleep(0.3)
    count = len(said)
    time.sleep(0.15)
    assert count >= 2 and len(said) == count  # nothing after the step ended
    assert said[0].startswith("  still applying migrations (") and said[0].endswith(" s so far)…")
