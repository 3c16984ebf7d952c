"""gunicorn settings for `manage.py run` (passed as `--config python:memoryhub.gunicorn_conf`)."""

from __future__ import annotations

from typing import Any


def post_worker_init(worker: Any) -> None:
    # Each worker loads its query embedder before it accepts a request, so the first search is as
    # fast as the hundredth (`manage.py run` has made the ONNX model before it starts the web
    # server). Only the query path is loaded (ONNX Runtime where prepared: no torch in a web worker).
    from retrieval.query_embedding import warm_up

    warm_up()
    # And the query parameters each operation declares (memoryhub.api.parameters reads them from the
    # OpenAPI document, generated once per process: about 2 s, not on a worker's first request).
    from memoryhub.api.parameters import warm_up as know_parameters

    know_parameters()
