"""On a first start the web server serves while the fast search model is made beside it: a hybrid
search then goes by its words, loading no model (loading torch took a web worker ~50 s on a busy
2-core machine, and the web server waited for the model), and /health/ says so."""

from __future__ import annotations

import pytest

from memoryhub.plumbing import gunicorn_conf
from retrieval import embedders, query_embedding
from tests.retrieval.conftest import search, texts


def test_a_search_goes_by_its_words_while_the_model_is_made(
    alice, index, anon, settings, monkeypatch
) -> None:
    index(
        alice,
        "garden",
        {"role": "user", "content": "I planted tomatoes and basil in the garden."},
        {"role": "user", "content": "The quarterly report is due on Friday."},
    )
    settings.MEMORYHUB_EMBEDDER = "minilm"
    monkeypatch.setattr(query_embedding, "onnx_pending", lambda: True)
    monkeypatch.setattr(query_embedding, "load_onnx_encoder", lambda: None)
    monkeypatch.setattr(
        embedders, "get_embedder", lambda name=None: pytest.fail("a model was loaded")
    )
    query_embedding.reset()
    try:
        gunicorn_conf.post_worker_init(worker=None)  # a web worker starts without loading a model
        found = texts(search(alice, query="tomatoes in the garden"))
        assert found and "tomatoes" in found[0]
        details = anon.get("/api/v1/health/").json()["details"]
        assert details["search"].startswith("words only: the fast search model is being prepared")
    finally:
        query_embedding.reset()


def test_once_the_model_is_made_searches_use_it(settings, monkeypatch) -> None:
    class Encoder:
        filename = "model-int8.onnx"

        def encode(self, texts: list[str]) -> list[list[float]]:
            return [[1.0] + [0.0] * (embedders.DIMENSIONS - 1) for _ in texts]

    settings.MEMORYHUB_EMBEDDER = "minilm"
    monkeypatch.setattr(query_embedding, "LOOK_AGAIN_SECONDS", 0.0)
    monkeypatch.setattr(query_embedding, "onnx_pending", lambda: True)
    monkeypatch.setattr(query_embedding, "load_onnx_encoder", lambda: None)
    query_embedding.reset()
    try:
        assert not query_embedding.query_model_ready()
        # the verdict is recorded
        monkeypatch.setattr(query_embedding, "onnx_pending", lambda: False)
        monkeypatch.setattr(query_embedding, "load_onnx_encoder", lambda: Encoder())
        query_embedding.query_model_ready()  # loads it in a thread of its own, by words meanwhile
        assert query_embedding._taking_up is not None
        query_embedding._taking_up.join()
        assert query_embedding.query_model_ready()
        assert query_embedding.describe() == "ONNX Runtime (model-int8.onnx)"
        assert query_embedding.embed_query("a question")[0] == 1.0  # the fast model embeds it
    finally:
        query_embedding.reset()


def test_without_a_model_being_made_a_search_does_not_fall_back_to_words(
    settings, tmp_path, monkeypatch
) -> None:
    """No verdict recorded is not "being prepared": a test run, a bench or the stdio MCP server,
    which never make the fast model, embed queries with the configured one instead of words
    alone."""
    import os
    import subprocess
    import sys

    from retrieval import minilm_runtimes

    settings.MEMORYHUB_EMBEDDER = "minilm"
    settings.MEMORYHUB_EMBED_BACKEND = "auto"
    monkeypatch.setattr(minilm_runtimes, "cache_dir", lambda: tmp_path)
    assert minilm_runtimes.read_choice() is None
    assert not query_embedding.onnx_pending()  # nothing is making it
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        minilm_runtimes.mark_preparing(child.pid)
        assert query_embedding.onnx_pending()  # `run` is making it: words meanwhile
    finally:
        child.kill()
        child.wait()
    # the process is gone without a verdict: the configured model
    assert not query_embedding.onnx_pending()
    minilm_runtimes.mark_preparing(os.getpid())
    (tmp_path / "choice.json").write_text("{}")
    assert not query_embedding.onnx_pending()  # a verdict is recorded
