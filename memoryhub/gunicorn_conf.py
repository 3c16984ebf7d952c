"""gunicorn settings for `manage.py run` (passed as `--config python:memoryhub.gunicorn_conf`)."""

from __future__ import annotations

import threading
from typing import Any


def post_worker_init(worker: Any) -> None:
    # Each worker loads its query embedder in the background as soon as it starts: otherwise
    # the first search a worker serves waits for the import and the load. Requests are served
    # meanwhile; one that needs the model waits on the embedder's lock, never loads twice. Only
    # the query path is loaded (ONNX Runtime where prepared: no torch in a web worker).
    from retrieval.query_embedding import warm_up

    threading.Thread(target=warm_up, name="embedder-warm-up", daemon=True).start()
