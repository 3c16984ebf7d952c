"""gunicorn settings for `manage.py run` (passed as `--config
python:memoryhub.plumbing.gunicorn_conf`)."""

from __future__ import annotations

from typing import Any


def post_worker_init(worker: Any) -> None:
    # Each worker makes ready what its first request would otherwise wait for, before it accepts
    # one: the apps connect to signals.web_worker_starting (retrieval loads its query embedder,
    # the API reads the query parameters each operation declares), so the first search is as fast
    # as the hundredth.
    from memoryhub import signals

    signals.web_worker_starting.send(sender=None)


def child_exit(server: Any, worker: Any) -> None:
    # Called in the master for each worker that exited. While it still listens it starts another:
    # counted for /health/ (when it stops, it has closed its listeners before its workers exit).
    if server.LISTENERS:
        from memoryhub.plumbing.supervision import record_worker_respawn

        record_worker_respawn()
