"""The query embedder of web processes: one text at a time, without torch.

A web worker embeds one query per search. Loading sentence-transformers for that put torch in
every web worker (~590 MB resident each, most of it torch); ONNX Runtime runs the same MiniLM
(vectors agree to cosine ≥ 0.999) in a fraction of the memory and time. `embed_query` uses the
ONNX model the background branch's `retrieval.minilm_runtimes` prepares in the data folder
(`read_choice()`, `cache_dir()`, `OnnxMiniLM(directory, threads).encode(texts)`, none of which
imports torch); where there is none (not prepared, not installed, another embedder configured)
it falls back to the configured embedder, as before. With INT8 (the
default) it loads the model's int8 copy when the preparation judged it close enough: about 2.7x
faster per query, its vectors within cosine 0.99 of the full model's (bench/README.md, stop 26).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
import time
from concurrent.futures import Future
from typing import Any, Protocol

from django.conf import settings

from memoryhub.plumbing.threads import ProcessPool
from retrieval import embedders
from retrieval.vectors import halfvec_text

logger = logging.getLogger(__name__)
ONNX_MODULE = "retrieval.minilm_runtimes"


class QueryEncoder(Protocol):
    def encode(self, texts: list[str]) -> Any: ...  # a (len(texts), 384) array of unit vectors


# On a first start the web workers serve before the ONNX model is made (`manage.py run` makes it in
# the background): until it is recorded, queries go to the configured embedder and this process
# looks for the model again at most this often.
LOOK_AGAIN_SECONDS = 5.0
# Threads of the torch-free query encoder of each web process: one query each, and a web worker
# serves many requests at once on its own cores.
THREADS = 1
# Web processes embed queries with the int8 copy of the ONNX model (made beside it and judged
# against it when the data folder is prepared): ~2.7x faster and a quarter of the weights' memory;
# query vectors agree with the full model's to cosine >= 0.98 (bench/README.md, stop 26). False:
# the full model. Stored vectors follow MEMORYHUB_EMBED_BACKEND (retrieval.embedders).
INT8 = True

_encoder: QueryEncoder | None = None
_looked = False
_look_again_at: float | None = None  # when the model was not made yet: when to look again
_saw_pending = False  # this process started while the fast model was being made
_taking_up: threading.Thread | None = None  # loads it once it is recorded
_lock = threading.Lock()


def load_onnx_encoder() -> QueryEncoder | None:
    """The prepared ONNX MiniLM, or None (module missing, model not prepared or not verified)."""
    try:
        onnx = importlib.import_module(ONNX_MODULE)
    except ImportError:
        return None
    choice = onnx.read_choice()
    if not choice or not choice.get("agree"):
        return None
    return _open(onnx, choice)


def onnx_pending() -> bool:
    """Whether the ONNX model is still coming (`manage.py run` making it on a first start): MiniLM
    on an ONNX-capable backend, the runtimes installed, no verdict recorded yet, and a process
    making it now (minilm_runtimes.being_prepared)."""
    if (
        settings.MEMORYHUB_EMBEDDER != "minilm"
        or settings.MEMORYHUB_EMBED_BACKEND == "torch"
        or any(importlib.util.find_spec(name) is None for name in ("onnx", "onnxruntime"))
    ):
        return False
    try:
        onnx = importlib.import_module(ONNX_MODULE)
    except ImportError:
        return False
    return onnx.read_choice() is None and onnx.being_prepared()


def _open(onnx: Any, choice: dict[str, Any]) -> QueryEncoder:
    directory, threads = onnx.cache_dir(), THREADS
    if INT8 and (choice.get("int8") or {}).get("agree") and (directory / onnx.INT8_FILE).exists():
        return onnx.OnnxMiniLM(directory, threads, filename=onnx.INT8_FILE)
    return onnx.OnnxMiniLM(directory, threads)


def query_encoder() -> QueryEncoder | None:
    """This process's torch-free query encoder, loaded once; None when there is none (yet: while
    the model is being made, it is looked for again every LOOK_AGAIN_SECONDS)."""
    global _encoder, _looked, _look_again_at
    if settings.MEMORYHUB_EMBEDDER != "minilm":
        return None
    if _looked and _look_again_at is not None and time.monotonic() >= _look_again_at:
        with _lock:
            _looked = False
    with _lock:
        if not _looked:
            was_pending = _look_again_at is not None
            _encoder = load_onnx_encoder()
            _looked = True
            _look_again_at = (
                time.monotonic() + LOOK_AGAIN_SECONDS
                if _encoder is None and onnx_pending()
                else None
            )
            if _encoder is not None or not was_pending:  # once, not at every look while it is made
                logger.info(
                    "query embedder: %s",
                    (
                        f"ONNX Runtime ({getattr(_encoder, 'filename', '')})"
                        if _encoder
                        else "the configured embedder"
                    ),
                )
    return _encoder


def embed_query(text: str) -> list[float]:
    encoder = query_encoder()
    if encoder is None:
        return embedders.get_embedder().embed([text])[0]
    row = encoder.encode([text])[0]
    # An array's tolist(): the same Python floats as float() of each, in one call (the loop was ~4 %
    # of a web worker's Python time in hybrid search); any other sequence float by float.
    vector: list[float] = row.tolist() if hasattr(row, "tolist") else [float(v) for v in row]
    if len(vector) != embedders.DIMENSIONS:
        raise ValueError(
            f"the query encoder returned {len(vector)} dimensions; the index holds"
            f" {embedders.DIMENSIONS}"
        )
    return vector


def embed_queries(texts: list[str]) -> list[list[float]]:
    """Several queries at once, by the encoder embed_query uses (the benchmarks ask their
    questions with the vectors a server would compute for them)."""
    if query_encoder() is None:
        return embedders.get_embedder().embed(texts)
    # One at a time, as a search embeds its query: the int8 model's vector depends on its batch.
    return [embed_query(text) for text in texts]


_soon = ProcessPool(1, "query-embedding")


def embed_query_soon(text: str) -> Future[list[float]]:
    """embed_query in a worker thread, so that the caller's SQL runs meanwhile (ONNX Runtime and
    torch release the GIL while they compute)."""
    return _soon.get().submit(embed_query, text)


def query_model_ready() -> bool:
    """Whether a query can be embedded without loading a model first. Not while the fast model is
    being made beside the service (a first start): a web worker then answers hybrid searches by
    their words alone rather than load torch (~50 s and ~600 MB on a busy 2-core machine). Once
    the model is recorded (looked for at each search meanwhile), this process loads it in a thread
    of its own, by words until it is in: no search waits for the load (~1.5 s under load)."""
    global _taking_up, _saw_pending
    if settings.MEMORYHUB_EMBEDDER != "minilm" or _encoder is not None:
        return True
    if _saw_pending:
        if onnx_pending():
            return False
        with _lock:
            if _taking_up is None:
                _taking_up = threading.Thread(
                    target=_take_up, name="query-model-take-up", daemon=True
                )
                _taking_up.start()
        return not _taking_up.is_alive()  # loaded, or no fast model after all: the configured one
    if query_encoder() is not None:
        return True
    _saw_pending = onnx_pending()
    return not _saw_pending


def _take_up() -> None:
    """Load the fast model now that it is recorded (query_encoder looks again at once)."""
    global _looked
    with _lock:
        _looked = False
    query_encoder()


def warm_up() -> None:
    """Load the query path now (a web worker's first search must not wait for it): the encoder,
    and the table the query vector's literal is written from. While the fast model is being made
    (a first start) no model is loaded: searches go by their words until it is ready."""
    try:
        if query_model_ready():
            halfvec_text(embed_query("warm-up"))
        else:
            halfvec_text([0.0] * embedders.DIMENSIONS)
    except Exception:  # the first real request will report it; a web worker must still start
        logger.exception("query embedder warm-up failed")


def describe() -> str:
    """What embeds this process's search queries, for /health/: the fast (ONNX) model, or the
    configured embedder, and why. Loads nothing."""
    if settings.MEMORYHUB_EMBEDDER != "minilm":
        return f"{settings.MEMORYHUB_EMBEDDER} embedder"
    if _encoder is not None:
        return f"ONNX Runtime ({getattr(_encoder, 'filename', 'model.onnx')})"
    if onnx_pending():
        return (
            "words only: the fast search model is being prepared (first start); searches add"
            " meaning once it is ready"
        )
    try:
        choice = importlib.import_module(ONNX_MODULE).read_choice() or {}
    except ImportError:
        choice = {}
    return "ONNX Runtime (taken up at the next search)" if choice.get("agree") else "torch"


def reset() -> None:
    """Forget the loaded encoder (tests; a model prepared after this process started)."""
    global _encoder, _looked, _look_again_at, _saw_pending, _taking_up
    with _lock:
        _encoder, _looked, _look_again_at, _saw_pending, _taking_up = None, False, None, False, None
