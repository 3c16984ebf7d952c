"""`manage.py work`: run background lanes (embed, summarise, dispatch) until SIGTERM or Ctrl-C.

Each lane is a thread with its own database connection; the tables are its queue, so any number
of `work` processes on any number of machines can run the same lanes against one PostgreSQL.
`manage.py run` starts one with every lane. Each lane thread runs at its own niceness (Linux keeps
a niceness per thread, and the threads a lane starts, the model's included, inherit it): dispatch
at normal priority (schedules start on time), embed and summarise at NICE (requests come first on
a shared machine). Elsewhere the lanes run at the process's niceness.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.plumbing import background

# The niceness the lanes run at unless --nice says otherwise, so that requests come first on a
# shared machine; the dispatch lane's is 0: schedules are due to the second. One process holds them
# all: a second one, for dispatch alone, cost 74 MB PSS (bench/memory.py).
NICE = 10
LANE_NICE = {"dispatch": 0}


def lane_nice(lane: str, asked: int | None) -> int:
    """The niceness a lane's thread runs at: --nice when given, else the lane's own."""
    return asked if asked is not None else LANE_NICE.get(lane, NICE)


def nice_this_thread(increment: int) -> None:
    """Lower the calling thread's priority by `increment` (Linux: each thread has its own niceness,
    and the threads it starts inherit it); elsewhere, nothing."""
    if increment > 0 and sys.platform.startswith("linux"):
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + increment)


def run_lane_niced(lane: background.Lane, increment: int, stop: threading.Event) -> None:
    nice_this_thread(increment)
    background.run_lane(lane, stop)


class Command(BaseCommand):
    help = "Run background lanes (embed, summarise, dispatch) until stopped."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--lanes",
            default=",".join(background.lane_names()),
            help=f"comma-separated, of: {', '.join(background.lane_names())} (default: all)",
        )
        parser.add_argument(
            "--nice",
            type=int,
            default=None,
            help=f"niceness increment for every lane (default {NICE}, the dispatch lane's 0)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        names = [n.strip() for n in options["lanes"].split(",") if n.strip()]
        unknown = sorted(set(names) - set(background.lane_names()))
        if unknown or not names:
            raise CommandError(
                f"Unknown lanes {unknown}; known: {', '.join(background.lane_names())}"
            )
        stop = threading.Event()

        def on_signal(signum: int, frame: Any) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        threads = [
            threading.Thread(
                target=run_lane_niced,
                args=(background.make_lane(name), lane_nice(name, options["nice"]), stop),
                name=f"lane-{name}",
                daemon=True,
            )
            for name in names
        ]
        for thread in threads:
            thread.start()
        niced = ", ".join(f"{name} (nice {lane_nice(name, options['nice'])})" for name in names)
        self.stdout.write(f"Lanes running: {niced}, pid {os.getpid()}.")
        while not stop.is_set() and all(t.is_alive() for t in threads):
            stop.wait(1.0)
        stop.set()
        for thread in threads:  # a step in progress finishes (or its transaction is rolled back)
            thread.join(timeout=30)
        self.stdout.write("Lanes stopped.")
