"""`manage.py work`: run background lanes (embed, summarise, dispatch) until SIGTERM or Ctrl-C.

Each lane is a thread with its own database connection; the tables are its queue, so any number
of `work` processes on any number of machines can run the same lanes against one PostgreSQL.
`manage.py run` starts two: the dispatch lane alone at normal priority (schedules start on
time), and embed + summarise at NICE (requests come first on a shared machine).
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.plumbing import background

# The niceness the lanes run at unless --nice says otherwise, so that requests come first on a
# shared machine (the dispatch lane is started with --nice 0: schedules are due to the second).
NICE = 10


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
            help=f"niceness increment for this process (default {NICE})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        names = [n.strip() for n in options["lanes"].split(",") if n.strip()]
        unknown = sorted(set(names) - set(background.lane_names()))
        if unknown or not names:
            raise CommandError(
                f"Unknown lanes {unknown}; known: {', '.join(background.lane_names())}"
            )
        nice = NICE if options["nice"] is None else options["nice"]
        if nice > 0:
            os.nice(nice)
        stop = threading.Event()

        def on_signal(signum: int, frame: Any) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        threads = [
            threading.Thread(
                target=background.run_lane,
                args=(background.make_lane(name), stop),
                name=f"lane-{name}",
                daemon=True,
            )
            for name in names
        ]
        for thread in threads:
            thread.start()
        self.stdout.write(f"Lanes running: {', '.join(names)} (pid {os.getpid()}, nice {nice}).")
        while not stop.is_set() and all(t.is_alive() for t in threads):
            stop.wait(1.0)
        stop.set()
        for thread in threads:  # a step in progress finishes (or its transaction is rolled back)
            thread.join(timeout=30)
        self.stdout.write("Lanes stopped.")
