"""MiniLM on ONNX Runtime: exported from the shipped weights into the data folder, the same vectors
as torch on real texts, chosen when faster, and a query embedded without importing torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import override_settings

pytestmark = pytest.mark.minilm
pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

# Real conversation texts, none of them among the texts the export is judged on.
TEXTS = [
    "Hey Mel! Good to see you! How have you been?",
    (
        "I'm thinking of working with trans people, helping them accept themselves and supporting"
        " their mental health."
    ),
    "Yesterday I took the kids to the museum - it was so cool spending time with them.",
    "Can you recommend a good book about the history of the Roman Empire that is not too academic?",
    (
        "Sure! 'SPQR' by Mary Beard is a lively one-volume history; for the late empire, try Peter"
        " Heather's 'The Fall of the Roman Empire', which reads almost like a thriller while"
        " staying rigorous."
    ),
    (
        "The build is failing on CI with `ModuleNotFoundError: No module named 'pgvector'` after"
        " the upgrade."
    ),
    "Meeting moved to 14:30 CET, room 4.12 - bring the Q3 numbers.",
    "¿Dónde está la estación de tren más cercana?",
    "x" * 3000,  # longer than the model's 256 tokens: truncated alike by both
]


@pytest.fixture(scope="session")
def exported_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder with the model exported, judged and its lane measured once for the whole run
    (half a minute of CPU): the folder of the run's temporary root, which pytest-xdist's workers
    share; the first to ask makes it, and ensure_measured's file locks keep the other waiting."""
    from retrieval.embedder_calibration import ensure_measured

    base = tmp_path_factory.getbasetemp()
    data_dir = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "exported-minilm"
    data_dir.mkdir(exist_ok=True)
    with override_settings(DATA_DIR=data_dir):
        ensure_measured()
    return data_dir


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory, exported_once: Path) -> Any:
    """A module's own prepared data folder (its tests change it): a copy of exported_once's."""
    from retrieval.embedder_calibration import ensure_measured

    data_dir = tmp_path_factory.mktemp("data")
    shutil.copytree(exported_once, data_dir, dirs_exist_ok=True)
    with override_settings(DATA_DIR=data_dir):
        yield data_dir, ensure_measured()


def run_django(data_dir: Path, script: str, timeout: int = 120, **env: str) -> str:
    """`script` in a fresh Python process set up with Django on `data_dir`; its standard output."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        "MEMORYHUB_DATA_DIR": str(data_dir),
        "SECRET_KEY": "test",
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-c", "import sys, django; django.setup()\n" + script],
        env=env,
        cwd=django_settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_export_matches_torch_on_real_texts(prepared) -> None:  # type: ignore[no-untyped-def]
    from retrieval.minilm_runtimes import MIN_COSINE, OnnxMiniLM, cache_dir, load_torch_model

    data_dir, choice = prepared
    assert choice["agree"] and choice["min_cosine"] >= MIN_COSINE
    assert (cache_dir() / "model.onnx").exists() and str(cache_dir()).startswith(str(data_dir))
    onnx_vectors = OnnxMiniLM(cache_dir(), threads=2).encode(TEXTS)
    torch_vectors = load_torch_model().encode(
        TEXTS, normalize_embeddings=True, convert_to_numpy=True
    )
    cosines = (onnx_vectors * torch_vectors).sum(axis=1)
    assert cosines.min() >= MIN_COSINE, cosines


def test_the_faster_runtime_is_chosen_for_queries_and_for_batches(prepared) -> None:  # type: ignore[no-untyped-def]
    _, choice = prepared
    rates, query_ms = choice["batch_texts_per_second"], choice["query_ms"]
    assert choice["batch"] == ("onnx" if rates["onnx"] >= rates["torch"] else "torch")
    assert choice["query"] == ("onnx" if query_ms["onnx"] <= query_ms["torch"] else "torch")
    recorded = json.loads(
        (Path(prepared[0]) / "models").glob("*/choice.json").__next__().read_text()
    )
    assert recorded == choice  # what every process of this data folder reads
    from retrieval.embedder_calibration import MARGIN, cpu_identity

    lane = choice["lane"]  # the lane's shape measured here: the least CPU a text
    assert lane["cpu"] == cpu_identity() and len(lane["cpu_ms_per_text"]) > 1
    cheapest = min(lane["cpu_ms_per_text"][name] for name in lane["agreeing"])
    assert lane["cpu_ms_per_text"][lane["chosen"]] <= cheapest / (1 - MARGIN)


def test_a_web_process_embeds_a_query_without_importing_torch(prepared) -> None:  # type: ignore[no-untyped-def]
    data_dir, _ = prepared
    script = (
        "from retrieval.embedders import get_embedder\n"
        "embedder = get_embedder('minilm')\n"
        "[vector] = embedder.embed(['when does the flight leave?'])\n"
        "print(len(vector), embedder.backend(1), 'torch' in sys.modules)\n"
    )
    assert run_django(data_dir, script, MEMORYHUB_EMBED_BACKEND="onnx").split() == [
        "384",
        "onnx",
        "False",
    ]


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_the_lane_embeds_on_the_cores_the_machine_left_free(
    prepared, settings, monkeypatch, backend: str
) -> None:  # type: ignore[no-untyped-def]
    """A busy machine (requests being served) leaves the model one thread; a quiet one every thread
    MEMORYHUB_EMBED_THREADS allows (ONNX: as many one-thread batches at once). The vectors are the
    same either way."""
    import numpy as np
    import torch

    from memoryhub.plumbing import cpu
    from retrieval import embedders
    from retrieval.embedders import MiniLMEmbedder

    settings.MEMORYHUB_EMBED_BACKEND, settings.MEMORYHUB_EMBED_THREADS = backend, 2
    embedder = MiniLMEmbedder()
    free = iter([0.9, 1.9, 1.9])
    monkeypatch.setattr(cpu.headroom, "free", lambda: next(free))
    at_once: list[int] = []  # the batches each call ran side by side
    if backend == "onnx":
        from retrieval.minilm_runtimes import ONNX_BATCH, OnnxMiniLM

        encode = OnnxMiniLM.encode

        def counted(
            self: OnnxMiniLM, texts: list[str], batch_size: int = ONNX_BATCH, workers: int = 1
        ) -> Any:
            at_once.append(workers)
            return encode(self, texts, batch_size, workers)

        monkeypatch.setattr(OnnxMiniLM, "encode", counted)
    busy = np.array(embedder.embed(TEXTS[:4]))
    if backend == "onnx":
        assert list(embedder._models) == ["onnx:model.onnx"] and at_once == [1]
        assert (
            embedder._models["onnx:model.onnx"].session.get_session_options().intra_op_num_threads
            == 1
        )
    else:
        assert torch.get_num_threads() == 1
        embedder.embed(TEXTS[:1] * 2)  # torch remakes its thread pool on a change: held a while
        assert torch.get_num_threads() == 1
        monkeypatch.setattr(embedders, "TORCH_THREADS_HOLD_SECONDS", 0.0)
    quiet = np.array(embedder.embed(TEXTS[:4]))
    if backend == "onnx":
        # the same session
        assert list(embedder._models) == ["onnx:model.onnx"] and at_once == [1, 2]
    else:
        assert torch.get_num_threads() == 2
    assert np.allclose(busy, quiet, atol=1e-4)


def test_batches_run_side_by_side_give_the_vectors_of_batches_run_in_turn(prepared) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from retrieval.minilm_runtimes import OnnxMiniLM, cache_dir

    model = OnnxMiniLM(cache_dir(), 1)
    # 72 texts: three batches of 32, and a small call
    texts = [f"{t} ({i})" for i, t in enumerate(TEXTS * 8)]
    assert np.allclose(
        model.encode(texts, 32, workers=1), model.encode(texts, 32, workers=2), atol=1e-5
    )
    assert np.allclose(
        model.encode(texts[:5], 32, workers=1), model.encode(texts[:5], 32, workers=2), atol=1e-5
    )


def test_a_text_met_twice_in_one_call_is_embedded_once(prepared, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from retrieval.embedders import MiniLMEmbedder
    from retrieval.minilm_runtimes import OnnxMiniLM

    settings.MEMORYHUB_EMBED_BACKEND = "onnx"
    seen: list[list[str]] = []
    encode = OnnxMiniLM.encode
    monkeypatch.setattr(
        OnnxMiniLM,
        "encode",
        lambda self, texts, *a, **kw: seen.append(list(texts)) or encode(self, texts, *a, **kw),
    )
    vectors = MiniLMEmbedder().embed([TEXTS[0], TEXTS[1], TEXTS[0], TEXTS[2]])
    assert seen == [[TEXTS[0], TEXTS[1], TEXTS[2]]]
    assert len(vectors) == 4 and vectors[0] == vectors[2] and vectors[0] != vectors[1]


@pytest.mark.parametrize(
    ("backend", "use", "model"),
    [
        ("auto", True, "model-int8.onnx"),
        ("auto", False, "model.onnx"),
        ("onnx", True, "model.onnx"),
    ],
)
def test_the_lane_stores_int8_vectors_only_where_the_verdict_says(
    prepared, settings, backend: str, use: bool, model: str
) -> None:
    import numpy as np

    from retrieval.embedders import MiniLMEmbedder

    settings.MEMORYHUB_EMBED_BACKEND = backend
    embedder = MiniLMEmbedder()
    embedder._choice = {  # a folder whose lane was not measured on this CPU yet
        **{k: v for k, v in prepared[1].items() if k != "lane"},
        "batch": "onnx",
        "int8": {**prepared[1]["int8"], "batch": {**prepared[1]["int8"]["batch"], "use": use}},
    }
    vectors = np.array(embedder.embed(TEXTS))
    assert [m.filename for m in embedder._models.values()] == [model]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


def _measured_here(shape: Any) -> dict[str, Any]:
    """A lane record of `shape`, measured on this CPU."""
    from dataclasses import asdict

    from retrieval.embedder_calibration import cpu_identity

    return {"cpu": cpu_identity(), "shape": asdict(shape), "chosen": shape.name}


@pytest.mark.parametrize(
    ("filename", "batch", "threads"), [("model.onnx", 8, 2), ("model-int8.onnx", 4, 1)]
)
def test_the_lane_embeds_with_the_shape_measured_on_this_cpu(
    prepared, settings, monkeypatch, filename: str, batch: int, threads: int
) -> None:  # type: ignore[no-untyped-def]
    """The file, texts per call and threads per call of the measured shape; its vectors agree with
    the full model's, each text alone, as the measurement required."""
    import numpy as np

    from memoryhub.plumbing import cpu
    from retrieval.embedder_calibration import LaneShape
    from retrieval.embedders import MiniLMEmbedder
    from retrieval.minilm_runtimes import (
        INT8_MEDIAN_COSINE,
        INT8_MIN_COSINE,
        OnnxMiniLM,
        cache_dir,
    )

    settings.MEMORYHUB_EMBED_BACKEND, settings.MEMORYHUB_EMBED_THREADS = "auto", 2
    monkeypatch.setattr(cpu.headroom, "free", lambda: 2.0)  # a quiet machine: both threads
    embedder = MiniLMEmbedder()
    embedder._choice = {**prepared[1], "lane": _measured_here(LaneShape(filename, batch, threads))}
    calls: list[tuple[int, int]] = []
    encode = OnnxMiniLM.encode
    monkeypatch.setattr(
        OnnxMiniLM,
        "encode",
        lambda self, texts, batch_size=1, workers=1: (
            calls.append((batch_size, workers)) or encode(self, texts, batch_size, workers)
        ),
    )
    vectors = np.array(embedder.embed(TEXTS))
    [model] = embedder._models.values()
    assert model.filename == filename and calls == [(batch, 2 // threads)]
    assert model.session.get_session_options().intra_op_num_threads == threads
    alone = OnnxMiniLM(cache_dir(), 1).encode(TEXTS, batch_size=1)
    cosines = (vectors * alone).sum(axis=1)
    assert np.median(cosines) >= INT8_MEDIAN_COSINE and cosines.min() >= INT8_MIN_COSINE, cosines


def _judged(batch: str, torch_rate: float, int8_rate: float, use: bool) -> dict[str, Any]:
    return {
        "agree": True,
        "batch": batch,
        "query": "onnx",
        "threads": 2,
        "batch_texts_per_second": {"onnx": 79.0, "torch": torch_rate},
        "int8": {
            "agree": True,
            "batch": {"use": use, "texts_per_second": {"float": 45.9, "int8": int8_rate}},
        },
    }


@pytest.mark.parametrize(
    ("choice", "runtime"),
    [
        (_judged("onnx", 60.0, 85.3, True), "onnx"),
        (_judged("onnx", 60.0, 85.3, False), "onnx"),
        (
            _judged("torch", 105.6, 85.3, True),
            "onnx",
        ),  # two one-thread int8 batches: 170.6 a second
        (_judged("torch", 105.6, 50.0, True), "torch"),  # 100 a second: torch stays
        (_judged("torch", 105.6, 85.3, False), "torch"),  # int8 vectors not to be stored
    ],
)
def test_batches_run_where_they_are_fastest_int8_included(
    choice: dict[str, Any], runtime: str
) -> None:
    """Where torch beat the full ONNX model, the int8 copy may still beat torch: the lane's
    batches go to it then (on an AVX-512 VNNI Xeon the lane stored torch's vectors at half the
    int8 copy's speed before)."""
    from retrieval.minilm_runtimes import batch_runtime

    assert batch_runtime(choice) == runtime


def test_a_torch_judged_folder_stores_int8_vectors_where_they_are_faster(
    prepared, settings
) -> None:  # type: ignore[no-untyped-def]
    from retrieval.embedders import MiniLMEmbedder

    settings.MEMORYHUB_EMBED_BACKEND = "auto"
    embedder = MiniLMEmbedder()
    embedder._choice = {**prepared[1], **_judged("torch", 105.6, 85.3, True)}
    assert len(embedder.embed(TEXTS)) == len(TEXTS)
    assert [m.filename for m in embedder._models.values()] == ["model-int8.onnx"]


def test_a_stored_texts_int8_vector_is_its_own_whatever_is_embedded_with_it(
    prepared, settings
) -> None:  # type: ignore[no-untyped-def]
    """The lane embeds each text alone (ONNX_BATCH): the int8 copy scales its activations per call,
    so in a batch a text's vector moved with its batch mates; alone it is the vector the same text
    gets as a query, and the same in every claim."""
    import numpy as np

    from retrieval.embedder_calibration import DEFAULT_SHAPE
    from retrieval.embedders import MiniLMEmbedder

    settings.MEMORYHUB_EMBED_BACKEND = "auto"
    embedder = MiniLMEmbedder()
    embedder._choice = {**prepared[1], **_judged("onnx", 60.0, 85.3, True)}
    embedder._choice["lane"] = _measured_here(DEFAULT_SHAPE)
    together = np.array(embedder.embed(TEXTS))
    assert [m.filename for m in embedder._models.values()] == ["model-int8.onnx"]
    alone = np.array([embedder.embed([text])[0] for text in TEXTS])
    reversed_order = np.array(embedder.embed(TEXTS[::-1]))[::-1]
    assert np.allclose(together, alone, atol=1e-6) and np.allclose(
        together, reversed_order, atol=1e-6
    )


def test_an_int8_copy_is_made_and_judged_for_queries_and_for_stored_vectors(prepared) -> None:  # type: ignore[no-untyped-def]
    """Queries use it where it agrees with the full model, each text embedded alone; the lane
    stores its vectors only where they also agree when embedded as a claim is (mixed lengths in
    one call) and it is INT8_BATCH_GAIN times as fast on a batch."""
    import numpy as np

    from retrieval.minilm_runtimes import (
        INT8_BATCH_GAIN,
        INT8_FILE,
        INT8_MEDIAN_COSINE,
        INT8_MIN_COSINE,
        OnnxMiniLM,
        cache_dir,
    )

    _, choice = prepared
    int8 = choice["int8"]
    assert (
        int8["agree"]
        and int8["median_cosine"] >= INT8_MEDIAN_COSINE
        and int8["min_cosine"] >= INT8_MIN_COSINE
    )
    assert (cache_dir() / INT8_FILE).exists()
    # On texts it was not judged on, each embedded alone as a query is, and in one call: close to
    # the full model.
    full, small = OnnxMiniLM(cache_dir(), 1), OnnxMiniLM(cache_dir(), 1, filename=INT8_FILE)
    cosines = [float((full.encode([t]) * small.encode([t])).sum()) for t in TEXTS]
    assert np.median(cosines) >= INT8_MEDIAN_COSINE and min(cosines) >= INT8_MIN_COSINE, cosines
    batch, rates = int8["batch"], int8["batch"]["texts_per_second"]
    assert batch["use"] == (
        batch["median_cosine"] >= INT8_MEDIAN_COSINE
        and batch["min_cosine"] >= INT8_MIN_COSINE
        and rates["int8"] >= INT8_BATCH_GAIN * rates["float"]
    )
    together = (full.encode(TEXTS) * small.encode(TEXTS)).sum(axis=1)
    assert np.median(together) >= INT8_MEDIAN_COSINE and together.min() >= INT8_MIN_COSINE, together


@pytest.mark.parametrize("lacks", ["the int8 copy", "its verdict for batches"])
def test_a_folder_prepared_before_the_int8_copy_gets_it_without_a_new_export(
    prepared, lacks: str
) -> None:  # type: ignore[no-untyped-def]
    from retrieval.minilm_runtimes import (
        INT8_FILE,
        MODEL_FILE,
        cache_dir,
        ensure_prepared,
        read_choice,
    )

    directory = cache_dir()
    older = {k: v for k, v in read_choice().items() if k != "int8"}  # type: ignore[union-attr]
    if lacks == "the int8 copy":
        (directory / "choice.json").write_text(json.dumps(older))
        (directory / INT8_FILE).unlink()
    else:  # prepared before the copy was judged for the lane's batches
        int8 = {k: v for k, v in read_choice()["int8"].items() if k != "batch"}  # type: ignore[index]
        (directory / "choice.json").write_text(json.dumps({**older, "int8": int8}))
    exported = (directory / MODEL_FILE).stat().st_mtime_ns
    choice = ensure_prepared()
    assert choice is not None and choice["int8"]["agree"] and (directory / INT8_FILE).exists()
    assert "texts_per_second" in choice["int8"]["batch"]
    assert (directory / MODEL_FILE).stat().st_mtime_ns == exported  # not exported again
    assert {k: v for k, v in choice.items() if k != "int8"} == older
    assert read_choice() == choice


@pytest.mark.parametrize(("int8", "model"), [(True, "model-int8.onnx"), (False, "model.onnx")])
def test_a_web_process_embeds_queries_with_the_int8_copy_unless_turned_off(
    prepared, int8: bool, model: str
) -> None:  # type: ignore[no-untyped-def]
    data_dir, _ = prepared
    script = (
        "from retrieval import query_embedding\n"
        f"query_embedding.INT8 = {int8}\n"
        "vector = query_embedding.embed_query('when does the flight leave?')\n"
        "print(len(vector), query_embedding.query_encoder().filename, 'torch' in sys.modules)\n"
    )
    assert run_django(data_dir, script).split() == ["384", model, "False"]


def test_a_failed_int8_copy_leaves_queries_on_the_full_model_until_the_next_start(
    prepared, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from retrieval import minilm_runtimes, query_embedding
    from retrieval.minilm_runtimes import cache_dir, ensure_prepared, read_choice

    directory = cache_dir()
    older = {k: v for k, v in read_choice().items() if k != "int8"}  # type: ignore[union-attr]
    (directory / "choice.json").write_text(json.dumps(older))

    def broken(directory: Path) -> dict[str, Any]:
        raise RuntimeError("quantizer unavailable")

    monkeypatch.setattr(minilm_runtimes, "quantize_int8", broken)
    assert ensure_prepared() == older  # never raises: the start goes on, nothing recorded
    encoder = query_embedding.load_onnx_encoder()
    assert encoder is not None and encoder.filename == "model.onnx"  # type: ignore[attr-defined]
    monkeypatch.undo()
    assert ensure_prepared()["int8"]["agree"]  # type: ignore[index]  # the next start tries again


def test_making_the_int8_copy_logs_no_line_per_tensor(prepared, caplog) -> None:  # type: ignore[no-untyped-def]
    import logging

    from retrieval.minilm_runtimes import cache_dir, quantize_int8

    with caplog.at_level(logging.INFO):
        verdict = quantize_int8(cache_dir())
    assert verdict["agree"]
    # ONNX Runtime's quantizer says ~50 lines
    assert not [r for r in caplog.records if "onnxruntime" in r.pathname]
