"""The guard `manage.py run` leaves behind: whatever kills it, the embedded PostgreSQL and the
web and cluster process groups do not outlive it.

A supervisor stops a service with SIGTERM to its process group and SIGKILL a few seconds later.
`run` stops everything itself on SIGTERM, but if it is SIGKILLed first, nothing in the group is
left to stop the PostgreSQL server (which pg_ctl started in a session of its own) or the children
(which `run` starts in sessions of their own, so that a terminal's Ctrl-C reaches only `run`).

`run` starts this module in its own session with a pipe on stdin and writes one line per child
group ("group <pgid>"); "done" means `run` stopped everything itself. End of input without
"done" means `run` died: the guard kills the groups and stops the database, then exits.
Deliberately free of Django, so it starts in a blink and cannot fail on settings.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from memoryhub.plumbing.embedded_pg import stop_embedded_postgres


def guard(lines: list[str] | None = None, data_dir: Path | None = None) -> str:
    """Read `run`'s lines until it is done or gone; returns "done" or "cleaned up"."""
    groups: list[int] = []
    for line in lines if lines is not None else sys.stdin:
        word, _, value = line.strip().partition(" ")
        if word == "group" and value.isdigit():
            groups.append(int(value))
        elif word == "done":
            return "done"
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:  # already gone
            pass
    if data_dir is not None:
        stop_embedded_postgres(data_dir)
    return "cleaned up"


def main() -> None:
    # Ctrl-C in the terminal of `run` is for `run`; the guard waits for its pipe to close.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    data_dir = Path(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else None
    outcome = guard(data_dir=data_dir)
    if outcome != "done":
        print(
            "MemoryHub's guard: `run` ended without stopping; its processes and database are"
            " stopped.",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
