"""gunicorn settings for `manage.py run` (passed as `--config
python:memoryhub.plumbing.gunicorn_conf`)."""

from __future__ import annotations

import gc
from typing import Any

# The master imports Django and the app, and loads what each worker needs before its first request
# (when_ready), before it forks the workers: they share those pages instead of each holding its own
# copy (Django and the apps ~65 MB, the int8 query model ~75 MB a process; bench/memory.py). A
# worker it starts again later is forked from the same master, ready at once.
preload_app = True


def when_ready(server: Any) -> None:
    # In the master, once the app is imported and before the first worker is forked.
    from django.db import connections

    from memoryhub import signals

    signals.web_worker_starting.send(sender=None)
    # A connection, or a pool's threads, made here would be shared by every worker: none may be.
    connections.close_all()
    # What is loaded now lives as long as the workers: out of the collector's sight, a worker's
    # collections do not write to (and so copy) the pages it shares with the master.
    gc.collect()
    gc.freeze()


def post_worker_init(worker: Any) -> None:
    # Each worker makes ready what its first request would otherwise wait for, before it accepts
    # one: the apps connect to signals.web_worker_starting (retrieval loads its query embedder,
    # the API reads the query parameters each operation declares), so the first search is as fast
    # as the hundredth. Done by the master already (when_ready) unless the query model was still
    # being made then (a first start): then each worker takes it up once it is made.
    from memoryhub import signals

    signals.web_worker_starting.send(sender=None)


def child_exit(server: Any, worker: Any) -> None:
    # Called in the master for each worker that exited. While it still listens it starts another:
    # counted for /health/ (when it stops, it has closed its listeners before its workers exit).
    if server.LISTENERS:
        from memoryhub.plumbing.supervision import record_worker_respawn

        record_worker_respawn()
