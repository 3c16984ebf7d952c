"""The embed lane's runtime and batch shape, chosen by measurement on this CPU.

ONNX Runtime's int8 and float kernels differ between CPU generations (AVX2, AVX-512, VNNI), and
so does the cheapest way to feed them: one text per call or batches of texts of alike length, one
or two threads a call. No fixed rule holds on every CPU, so once the model is prepared
(minilm_runtimes.ensure_prepared) each candidate shape embeds CALIBRATION_TEXTS in turn and the
one that costs the least CPU per text is recorded in `choice.json` beside the model, with the CPU's
identity; a data folder met on another CPU is measured again (`ensure_measured`, what a first start
and `manage.py prepare_embedder` run). Only shapes whose vectors agree with the full model's, each
text alone, to the int8 copy's thresholds are candidates.
"""

from __future__ import annotations

import fcntl
import logging
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from retrieval.minilm_runtimes import (
    INT8_FILE,
    INT8_MEDIAN_COSINE,
    INT8_MIN_COSINE,
    MODEL_FILE,
    REFERENCE_TEXTS,
    OnnxMiniLM,
    cache_dir,
    ensure_prepared,
    is_prepared,
    read_choice,
    record_choice,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LaneShape:
    """How the embed lane runs the model: which file, how many texts per call (sorted by length,
    so that a batch pads little), how many threads each call."""

    filename: str
    batch: int
    threads: int

    @property
    def name(self) -> str:
        kind = "int8" if self.filename == INT8_FILE else "float"
        return f"{kind} batch {self.batch} threads {self.threads}"


# One text per call on one thread, the int8 copy: a text's vector is then the one it gets as a
# query, whatever is embedded with it. Another shape replaces it only when measured cheaper.
DEFAULT_SHAPE = LaneShape(INT8_FILE, 1, 1)
CANDIDATES = (
    DEFAULT_SHAPE,
    LaneShape(INT8_FILE, 4, 1),
    LaneShape(INT8_FILE, 16, 1),
    LaneShape(INT8_FILE, 1, 2),
    LaneShape(MODEL_FILE, 1, 1),
    LaneShape(MODEL_FILE, 8, 1),
)
# Another shape replaces the default only when it costs at least this much less CPU per text:
# between rounds on a shared 2-core VM one shape's best time moved by a few percent.
MARGIN = 0.05
ROUNDS = 3  # each candidate embeds the texts this many times, the candidates in turn: the best
# The flags that decide which int8 and float kernels ONNX Runtime runs.
KERNEL_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8", "amx_tile")


def cpu_identity() -> str:
    """Vendor, family, model, name and kernel flags of this machine's CPU (from /proc/cpuinfo;
    elsewhere what `platform` says), and its core count: what the lane's shape was measured on."""
    import os

    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                key = key.strip()
                if not key and fields:
                    break  # the first processor is enough
                fields.setdefault(key, value.strip())
    except OSError:
        pass
    flags = set(fields.get("flags", "").split())
    parts = [
        fields.get("vendor_id", platform.machine()),
        f"family {fields.get('cpu family', '?')}",
        f"model {fields.get('model', '?')}",
        fields.get("model name", platform.processor()),
        ",".join(flag for flag in KERNEL_FLAGS if flag in flags),
        f"{os.cpu_count()} cores",
    ]
    return " | ".join(parts)


def calibration_texts() -> list[str]:
    """What the lane embeds: short turns and sentences alone, and inputs of a chunk with its context
    (up to ~1,000 characters, retrieval.indexing.CONTEXT_FILL), of mixed lengths."""
    distinct = list(dict.fromkeys(REFERENCE_TEXTS))
    filled = []
    for start in range(len(distinct)):
        text, at = distinct[start], start
        while len(text) < 600:
            at = (at + 1) % len(distinct)
            text = f"{text}\n{distinct[at]}"
        filled.append(text[:1000])
    return distinct + filled + distinct  # 36 texts


def encode(model: OnnxMiniLM, shape: LaneShape, texts: list[str]) -> Any:
    """The texts as the lane embeds them with `shape`: calls in turn (CPU per text is measured)."""
    return model.encode(texts, batch_size=shape.batch)


def measure(
    directory: Path, shapes: tuple[LaneShape, ...], texts: list[str], rounds: int = ROUNDS
) -> dict[str, float]:
    """CPU milliseconds per text of each shape: the best of `rounds`, the shapes in turn in each
    round so that a burst of other work on the machine does not fall on one shape only."""
    models = {
        shape: OnnxMiniLM(directory, shape.threads, filename=shape.filename) for shape in shapes
    }
    best = {shape.name: float("inf") for shape in shapes}
    for shape in shapes:  # a warm-up call each: first calls allocate
        encode(models[shape], shape, texts[:4])
    for _ in range(rounds):
        for shape in shapes:
            started = time.process_time()
            encode(models[shape], shape, texts)
            spent = (time.process_time() - started) * 1000 / len(texts)
            best[shape.name] = min(best[shape.name], spent)
    return {name: round(ms, 3) for name, ms in best.items()}


def agreeing(directory: Path, shapes: tuple[LaneShape, ...], texts: list[str]) -> list[LaneShape]:
    """The shapes whose vectors agree with the full model's, each text alone, to the int8 copy's
    thresholds (median and lowest cosine): in a batch an int8 text's vector moves a little with its
    batch mates, as the activations are scaled per call."""
    import numpy as np

    reference = OnnxMiniLM(directory, 1).encode(texts, batch_size=1)
    out = []
    for shape in shapes:
        vectors = encode(OnnxMiniLM(directory, 1, filename=shape.filename), shape, texts)
        cosines = (vectors * reference).sum(axis=1)
        if np.median(cosines) >= INT8_MEDIAN_COSINE and cosines.min() >= INT8_MIN_COSINE:
            out.append(shape)
    return out


def choose(cpu_ms: dict[str, float], shapes: list[LaneShape]) -> LaneShape:
    """The shape with the least CPU per text; the default unless another is MARGIN cheaper."""
    measured = [shape for shape in shapes if shape.name in cpu_ms]
    if not measured:
        return DEFAULT_SHAPE
    fastest = min(measured, key=lambda shape: cpu_ms[shape.name])
    if (
        DEFAULT_SHAPE in measured
        and cpu_ms[fastest.name] > (1 - MARGIN) * cpu_ms[DEFAULT_SHAPE.name]
    ):
        return DEFAULT_SHAPE
    return fastest


def calibrate(directory: Path, int8_agrees: bool) -> dict[str, Any]:
    """Measure the candidates on this CPU and record the cheapest (the lane's record in
    choice.json). Without an agreeing int8 copy only the full model's shapes are candidates."""
    started = time.monotonic()
    texts = calibration_texts()
    shapes = tuple(s for s in CANDIDATES if int8_agrees or s.filename == MODEL_FILE)
    cpu_ms = measure(directory, shapes, texts)
    allowed = agreeing(directory, shapes, texts)
    picked = choose(cpu_ms, allowed)
    return {
        "cpu": cpu_identity(),
        "cpu_ms_per_text": cpu_ms,
        "agreeing": [shape.name for shape in allowed],
        "shape": asdict(picked),
        "chosen": picked.name,
        "seconds": round(time.monotonic() - started, 1),
    }


def measured_here(choice: dict[str, Any] | None) -> bool:
    """Whether the verdict holds a lane shape measured on this CPU."""
    return bool(choice) and (choice.get("lane") or {}).get("cpu") == cpu_identity()


def lane_shape(choice: dict[str, Any] | None) -> LaneShape:
    """The lane's shape: the one measured on this CPU; before that is measured (a data folder
    prepared before calibration, or on another CPU), one text per call, on the int8 copy where its
    verdict for batches allows."""
    if measured_here(choice):
        return LaneShape(**choice["lane"]["shape"])  # type: ignore[index]
    int8 = ((choice or {}).get("int8") or {}).get("batch") or {}
    return DEFAULT_SHAPE if int8.get("use") else LaneShape(MODEL_FILE, 1, 1)


def lacks_lane(choice: dict[str, Any]) -> bool:
    """A verified model whose lane shape was not measured on this CPU."""
    return bool(choice.get("agree")) and not measured_here(choice)


def ensure_measured() -> dict[str, Any] | None:
    """minilm_runtimes.ensure_prepared, then the lane's shape measured on this CPU where the
    verdict has none for it (a file lock keeps concurrent processes from measuring twice). A failed
    measurement is logged, never raised: the lane keeps its fallback shape, the next start
    measures."""
    choice = ensure_prepared()
    if choice is None or not lacks_lane(choice):
        return choice
    directory = cache_dir()
    with open(directory / ".lock", "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        choice = read_choice()  # another process may have measured meanwhile
        if choice is None or not lacks_lane(choice):
            return choice
        try:
            lane = calibrate(directory, bool((choice.get("int8") or {}).get("agree")))
        except Exception:
            logger.exception("measuring the embed lane's shape failed; it embeds one text per call")
            return choice
        return record_choice(directory, {**choice, "lane": lane})


def is_measured() -> bool:
    """Whether ensure_measured() has nothing left to do in this data folder on this CPU."""
    choice = read_choice()
    return is_prepared() and choice is not None and not lacks_lane(choice)
