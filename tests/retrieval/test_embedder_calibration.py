"""The embed lane's shape (model file, texts per call, threads per call) is chosen by measurement on
this CPU when the model is prepared, recorded with the CPU's identity, and measured again where the
data folder meets another CPU. The measurement itself is replaced here by given timings: what is
tested is which shape they make the lane use, and when the lane measures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from retrieval import embedder_calibration
from retrieval.embedder_calibration import (
    CANDIDATES,
    DEFAULT_SHAPE,
    MARGIN,
    LaneShape,
    choose,
    cpu_identity,
    lane_shape,
)
from retrieval.minilm_runtimes import INT8_FILE, MODEL_FILE

INT8_BATCH_4 = LaneShape(INT8_FILE, 4, 1)
FLOAT_BATCH_8 = LaneShape(MODEL_FILE, 8, 1)


def timings(**cpu_ms: float) -> dict[str, float]:
    """CPU ms per text by shape (`default=…`, `int8_batch_4=…`, `float_batch_8=…`)."""
    names = {"default": DEFAULT_SHAPE, "int8_batch_4": INT8_BATCH_4, "float_batch_8": FLOAT_BATCH_8}
    return {names[key].name: value for key, value in cpu_ms.items()}


def test_the_candidates_include_each_kind_the_lane_can_run() -> None:
    kinds = {(s.filename, s.batch > 1, s.threads) for s in CANDIDATES}
    assert {(INT8_FILE, False, 1), (INT8_FILE, True, 1), (INT8_FILE, False, 2)} <= kinds
    assert {(MODEL_FILE, True, 1)} <= kinds and DEFAULT_SHAPE in CANDIDATES


@pytest.mark.parametrize(
    ("cpu_ms", "agreeing", "picked"),
    [
        # int8 one text per call is the cheapest (an AVX-512 VNNI EPYC)
        (timings(default=8.1, int8_batch_4=9.0, float_batch_8=19.6), None, DEFAULT_SHAPE),
        # float batches the cheapest (a CPU without fast int8 kernels)
        (timings(default=20.0, int8_batch_4=18.0, float_batch_8=12.0), None, FLOAT_BATCH_8),
        (timings(default=10.0, int8_batch_4=8.0, float_batch_8=12.0), None, INT8_BATCH_4),
        # cheaper by less than MARGIN: the default stays
        (timings(default=10.0, int8_batch_4=10.0 * (1 - MARGIN / 2)), None, DEFAULT_SHAPE),
        # the cheapest shape's vectors do not agree: the next one
        (
            timings(default=10.0, int8_batch_4=5.0, float_batch_8=8.0),
            [DEFAULT_SHAPE, FLOAT_BATCH_8],
            FLOAT_BATCH_8,
        ),
    ],
)
def test_the_shape_of_least_cpu_per_text_is_chosen(
    cpu_ms: dict[str, float], agreeing: list[LaneShape] | None, picked: LaneShape
) -> None:
    allowed = agreeing or [DEFAULT_SHAPE, INT8_BATCH_4, FLOAT_BATCH_8]
    assert choose(cpu_ms, allowed) == picked


@pytest.fixture
def verified_folder(tmp_path: Path) -> Path:
    """A data folder whose model was verified and whose int8 copy was judged, as
    minilm_runtimes.ensure_prepared leaves it, before its lane was measured (the model files
    themselves are not needed: the measurement is given)."""
    from retrieval.minilm_runtimes import cache_dir

    previous = django_settings.DATA_DIR
    django_settings.DATA_DIR = tmp_path
    directory = cache_dir()
    directory.mkdir(parents=True)
    (directory / "choice.json").write_text(
        json.dumps(
            {
                "agree": True,
                "batch": "onnx",
                "query": "onnx",
                "threads": 2,
                "batch_texts_per_second": {"onnx": 99.0, "torch": 11.0},
                "int8": {"agree": True, "batch": {"use": True, "texts_per_second": {}}},
            }
        )
    )
    yield directory
    django_settings.DATA_DIR = previous


def given_measurement(monkeypatch: pytest.MonkeyPatch, cpu_ms: dict[str, float]) -> list[str]:
    """The lane's measurement answers `cpu_ms`, every shape agreeing; returns the CPUs it ran
    on."""
    measured: list[str] = []

    def measure(directory: Path, shapes: Any, texts: list[str], rounds: int = 3) -> Any:
        measured.append(cpu_identity())
        return {shape.name: cpu_ms.get(shape.name, 50.0) for shape in shapes}

    monkeypatch.setattr(embedder_calibration, "measure", measure)
    monkeypatch.setattr(embedder_calibration, "agreeing", lambda d, shapes, t: list(shapes))
    return measured


def test_the_measured_shape_is_recorded_with_the_cpu_and_used_by_the_lane(
    verified_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval.embedder_calibration import ensure_measured, is_measured
    from retrieval.minilm_runtimes import read_choice

    measured = given_measurement(monkeypatch, timings(default=10.0, float_batch_8=6.0))
    assert not is_measured()  # `manage.py run` prepares it on start
    choice = ensure_measured()
    assert measured == [cpu_identity()]
    assert choice is not None and choice == read_choice()  # what every process reads
    assert choice["lane"]["cpu"] == cpu_identity() and choice["lane"]["chosen"] == (
        FLOAT_BATCH_8.name
    )
    assert lane_shape(choice) == FLOAT_BATCH_8 and is_measured()
    assert ensure_measured() == choice and len(measured) == 1  # measured once on this CPU


def test_a_folder_measured_on_another_cpu_is_measured_again(
    verified_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval.embedder_calibration import ensure_measured, is_measured
    from retrieval.minilm_runtimes import read_choice

    elsewhere = {
        "cpu": "AuthenticAMD | family 25 | model 17 | AMD EPYC | avx2,avx512f | 2 cores",
        "cpu_ms_per_text": timings(default=20.0, float_batch_8=12.0),
        "shape": {"filename": MODEL_FILE, "batch": 8, "threads": 1},
        "chosen": FLOAT_BATCH_8.name,
    }
    choice = {**read_choice(), "lane": elsewhere}  # type: ignore[dict-item]
    (verified_folder / "choice.json").write_text(json.dumps(choice))
    # Until measured here, the lane runs the shape that holds without a measurement.
    assert lane_shape(choice) == DEFAULT_SHAPE and not is_measured()
    measured = given_measurement(monkeypatch, timings(default=8.0, int8_batch_4=9.0))
    again = ensure_measured()
    assert measured == [cpu_identity()]
    assert again is not None and again["lane"]["cpu"] == cpu_identity()
    assert lane_shape(again) == DEFAULT_SHAPE and is_measured()


def test_a_failed_measurement_leaves_the_lane_on_its_fallback_and_is_tried_again(
    verified_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval.embedder_calibration import ensure_measured, is_measured

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no model file")

    monkeypatch.setattr(embedder_calibration, "measure", broken)
    choice = ensure_measured()  # never raises: the start goes on
    assert choice is not None and "lane" not in choice and lane_shape(choice) == DEFAULT_SHAPE
    assert not is_measured()  # the next start measures


def test_without_an_agreeing_int8_copy_only_the_full_model_is_measured(
    verified_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval.embedder_calibration import ensure_measured
    from retrieval.minilm_runtimes import read_choice

    choice = read_choice()
    choice["int8"]["agree"] = False  # type: ignore[index]
    (verified_folder / "choice.json").write_text(json.dumps(choice))
    given_measurement(monkeypatch, timings(default=1.0))
    lane = ensure_measured()["lane"]  # type: ignore[index]
    assert lane["cpu_ms_per_text"] and all(n.startswith("float") for n in lane["cpu_ms_per_text"])
    assert lane["shape"]["filename"] == MODEL_FILE


def test_the_identity_names_the_cpu_and_its_int8_kernels() -> None:
    identity = cpu_identity()
    assert identity == cpu_identity() and identity.endswith("cores")
    flags = Path("/proc/cpuinfo").read_text().split("flags", 1)[-1].split("\n", 1)[0].split()
    if "avx512_vnni" in flags:
        assert "avx512_vnni" in identity
