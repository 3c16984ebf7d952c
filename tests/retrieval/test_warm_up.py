"""Web workers load the embedding model when they start, not on their first search."""

from __future__ import annotations

import gc
import logging
import threading

import pytest
from django.db import connection

from memoryhub.plumbing import gunicorn_conf
from retrieval import embedders


class CountingEmbedder:
    name = "counting"
    dimensions = embedders.DIMENSIONS

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.done = threading.Event()

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(texts)
        self.done.set()
        return [[0.0] * self.dimensions for _ in texts]


def test_post_worker_init_loads_the_configured_embedder_before_the_first_request(
    monkeypatch,
) -> None:
    embedder = CountingEmbedder()
    monkeypatch.setattr(embedders, "get_embedder", lambda name=None: embedder)
    gunicorn_conf.post_worker_init(worker=None)
    assert embedder.done.is_set()  # loaded before the worker takes its first request, not after
    assert embedder.calls == [["warm-up"]]


@pytest.mark.django_db(transaction=True)
def test_the_web_master_loads_the_model_before_it_forks_its_workers(monkeypatch) -> None:
    """The workers share what the master loaded: the model, and no connection (a socket shared by
    two workers would mix their queries)."""
    embedder = CountingEmbedder()
    monkeypatch.setattr(embedders, "get_embedder", lambda name=None: embedder)
    connection.ensure_connection()
    assert gunicorn_conf.preload_app
    try:
        gunicorn_conf.when_ready(server=None)
        assert embedder.calls == [["warm-up"]]
        assert connection.connection is None
        assert gc.get_freeze_count() > 0  # a worker's collections leave the shared pages alone
    finally:
        gc.unfreeze()


def test_a_failing_warm_up_is_logged_not_raised(
    monkeypatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(name: str | None = None) -> embedders.Embedder:
        raise embedders.EmbedderUnavailable("model missing")

    monkeypatch.setattr(embedders, "get_embedder", broken)
    with caplog.at_level(logging.ERROR, logger="retrieval.embedders"):
        embedders.warm_up()
    assert "embedder warm-up failed" in caplog.text
