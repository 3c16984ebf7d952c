"""Web processes embed queries without torch: on the prepared ONNX model when there is
one, on the configured embedder otherwise."""

from __future__ import annotations

import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from retrieval import embedders, query_embedding

ROOT = Path(__file__).resolve().parents[2]


class FakeOnnx:
    """Stands in for retrieval.minilm_runtimes's OnnxMiniLM: records what it embeds."""

    def __init__(self, directory: Path, threads: int) -> None:
        self.directory, self.threads, self.texts = directory, threads, []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return np.full((len(texts), embedders.DIMENSIONS), 0.05, dtype=np.float32)


def fake_module(agree: bool = True) -> types.ModuleType:
    module = types.ModuleType(query_embedding.ONNX_MODULE)
    module.read_choice = lambda: {"agree": agree, "query": "onnx", "batch": "torch"}  # type: ignore[attr-defined]
    module.cache_dir = lambda: Path("/nowhere")  # type: ignore[attr-defined]
    module.OnnxMiniLM = FakeOnnx  # type: ignore[attr-defined]
    module.being_prepared = lambda: True  # type: ignore[attr-defined]  # `run` is making it (no verdict yet)
    return module


@pytest.fixture
def fresh(settings) -> Iterator[None]:
    settings.MEMORYHUB_EMBEDDER = "minilm"
    query_embedding.reset()
    yield
    query_embedding.reset()


def refuse_the_embedder(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def refused(name: str | None = None) -> embedders.Embedder:
        raise AssertionError("the configured embedder (torch) was loaded for a query")

    monkeypatch.setattr(embedders, "get_embedder", refused)


def test_queries_go_to_the_onnx_model_when_one_is_prepared(fresh, monkeypatch, settings) -> None:
    monkeypatch.setitem(sys.modules, query_embedding.ONNX_MODULE, fake_module())
    refuse_the_embedder(monkeypatch)
    monkeypatch.setattr("retrieval.query_embedding.THREADS", 1)
    assert query_embedding.embed_query("where is the otter?") == pytest.approx(
        [0.05] * embedders.DIMENSIONS
    )
    encoder = query_embedding.query_encoder()
    assert (
        isinstance(encoder, FakeOnnx)
        and encoder.texts == ["where is the otter?"]
        and encoder.threads == 1
    )


@pytest.mark.parametrize("module", [None, "disagreeing"])
def test_without_a_verified_onnx_model_the_configured_embedder_embeds(
    fresh, monkeypatch, module
) -> None:
    monkeypatch.setitem(
        sys.modules, query_embedding.ONNX_MODULE, fake_module(agree=False) if module else None
    )
    calls: list[list[str]] = []

    class Configured:
        name, dimensions = "configured", embedders.DIMENSIONS

        def embed(self, texts: list[str]) -> list[list[float]]:
            calls.append(texts)
            return [[0.1] * embedders.DIMENSIONS for _ in texts]

    monkeypatch.setattr(embedders, "get_embedder", lambda name=None: Configured())
    assert query_embedding.embed_query("otter") == [0.1] * embedders.DIMENSIONS
    assert calls == [["otter"]]


def test_the_hash_embedder_is_never_replaced(monkeypatch, settings) -> None:
    settings.MEMORYHUB_EMBEDDER = "hash"
    query_embedding.reset()
    monkeypatch.setitem(sys.modules, query_embedding.ONNX_MODULE, fake_module())
    assert query_embedding.embed_query("otter") == embedders.HashEmbedder().embed(["otter"])[0]


def test_a_web_process_searching_never_imports_torch() -> None:
    """In a fresh process: Django, the API's modules and a query embedded (on an ONNX stand-in)."""
    script = """
import os, sys, types
import numpy as np
os.environ["DJANGO_SETTINGS_MODULE"] = "memoryhub.settings"
os.environ["MEMORYHUB_EMBEDDER"] = "minilm"
import django
django.setup()
import memoryhub.urls, retrieval.views, retrieval.search
from retrieval import query_embedding
fake = types.ModuleType(query_embedding.ONNX_MODULE)
fake.read_choice = lambda: {"agree": True}
fake.cache_dir = lambda: None
class Onnx:
    def __init__(self, directory, threads): pass
    def encode(self, texts): return np.ones((len(texts), 384), dtype=np.float32)
fake.OnnxMiniLM = Onnx
sys.modules[query_embedding.ONNX_MODULE] = fake
query_embedding.warm_up()
assert len(query_embedding.embed_query("otter")) == 384
heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules)
print("heavy:", heavy)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "heavy: []" in out.stdout


def test_while_the_model_is_being_made_queries_use_the_configured_embedder_then_the_model(
    fresh, monkeypatch, settings
) -> None:  # type: ignore[no-untyped-def]
    """A first start serves before its ONNX model is recorded: the configured embedder answers
    until then, and the process looks again (LOOK_AGAIN_SECONDS) rather than settle on it."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    settings.MEMORYHUB_EMBED_BACKEND = "auto"
    module = fake_module()
    verdict: list[dict[str, object] | None] = [None]  # nothing recorded yet
    module.read_choice = lambda: verdict[0]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, query_embedding.ONNX_MODULE, module)

    class Configured:
        name, dimensions = "configured", embedders.DIMENSIONS

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[0.1] * embedders.DIMENSIONS for _ in texts]

    monkeypatch.setattr(embedders, "get_embedder", lambda name=None: Configured())
    monkeypatch.setattr(query_embedding, "LOOK_AGAIN_SECONDS", 3600.0)
    assert query_embedding.embed_query("otter") == [0.1] * embedders.DIMENSIONS
    assert query_embedding.onnx_pending()
    verdict[0] = {"agree": True, "query": "onnx", "batch": "onnx"}
    assert query_embedding.query_encoder() is None  # not looked at again before its time
    monkeypatch.setattr(query_embedding, "_look_again_at", 0.0)  # its time has come
    assert query_embedding.embed_query("otter") == pytest.approx([0.05] * embedders.DIMENSIONS)
    assert (
        isinstance(query_embedding.query_encoder(), FakeOnnx) and not query_embedding.onnx_pending()
    )


def test_a_model_judged_unfit_is_not_waited_for(fresh, monkeypatch, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_EMBED_BACKEND = "auto"
    monkeypatch.setitem(sys.modules, query_embedding.ONNX_MODULE, fake_module(agree=False))
    assert not query_embedding.onnx_pending()
    settings.MEMORYHUB_EMBED_BACKEND = "torch"
    module = fake_module()
    module.read_choice = lambda: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, query_embedding.ONNX_MODULE, module)
    assert not query_embedding.onnx_pending()  # torch chosen: no ONNX model will come
