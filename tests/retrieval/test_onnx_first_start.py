"""MiniLM's ONNX model on a first start: made in a child process beside the starting service, so
that the supervising process loads no runtime; searches go by torch or by their words meanwhile, and
a process takes the fast model up once it is recorded. The prepared folder (a copy of the run's one
export) and the child processes are test_onnx.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings

from tests.retrieval.test_onnx import exported_once, prepared, run_django  # noqa: F401 - fixtures

pytestmark = pytest.mark.minilm
pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")


def test_a_start_makes_what_the_folder_lacks_in_a_child_and_never_loads_a_runtime_itself(
    prepared,  # noqa: F811
) -> None:  # type: ignore[no-untyped-def]
    """`manage.py run` sends service_starting before any child starts: the work (here the int8 copy
    this folder lacks; on a fresh folder the export, which loads torch) runs in a process of its
    own, so the supervising process, alive as long as the service, holds neither runtime."""
    from retrieval.minilm_runtimes import INT8_FILE, cache_dir, read_choice

    data_dir, _ = prepared
    directory = cache_dir()
    older = {k: v for k, v in read_choice().items() if k != "int8"}  # type: ignore[union-attr]
    (directory / "choice.json").write_text(json.dumps(older))
    (directory / INT8_FILE).unlink()
    script = (
        "from memoryhub.signals import"
        " service_starting\nservice_starting.send(sender=None)\nprint('loaded:', *(m in sys.modules"
        " for m in ('torch', 'onnxruntime', 'sentence_transformers')))\n"
    )

    def start() -> list[str]:
        return run_django(
            data_dir, script, 300, MEMORYHUB_EMBEDDER="minilm", MEMORYHUB_EMBED_BACKEND="auto"
        ).splitlines()

    lines = start()
    assert lines[-1] == "loaded: False False False", lines
    # the child's verdict
    assert any("the int8 copy for queries agrees" in line for line in lines), lines
    choice = read_choice()
    assert choice is not None and choice["int8"]["agree"] and (directory / INT8_FILE).exists()
    assert {k: v for k, v in choice.items() if k != "int8"} == older  # not exported again
    # nothing left to do: no child, no verdict printed
    assert start() == ["loaded: False False False"]


def test_on_a_first_start_searches_are_served_by_torch_until_the_background_export_is_done(
    prepared,  # noqa: F811
) -> None:  # type: ignore[no-untyped-def]
    """`manage.py run` sends service_starting with background=True and serves at once: the export
    runs in a child; a query meanwhile is embedded by the configured (torch) embedder, and once the
    model is recorded the same process picks it up without a restart."""
    from retrieval.minilm_runtimes import cache_dir

    data_dir, _ = prepared
    choice = cache_dir() / "choice.json"
    kept = choice.read_text()
    choice.unlink()  # as on a first start: no verdict yet
    script = (
        "from memoryhub.signals import BackgroundStep, service_starting\nimport os\nfrom retrieval"
        " import minilm_runtimes, query_embedding\nminilm_runtimes.mark_preparing(os.getpid())  #"
        " as `run` marks the process making the model\nquery_embedding.LOOK_AGAIN_SECONDS ="
        " 0\nsteps = [s for _, s in service_starting.send(sender=None, background=True) if"
        " isinstance(s, BackgroundStep)]\nprint('steps:', len(steps), steps[0].process.poll() is"
        " None, 'torch' in sys.modules)\nvector = query_embedding.embed_query('when does the flight"
        " leave?')\nprint('while exporting:', len(vector), query_embedding.query_encoder(), 'torch'"
        " in sys.modules)\nprint('export exit:', steps[0].process.wait(300))\nvector ="
        " query_embedding.embed_query('when does the flight leave?')\nprint('after:', len(vector),"
        " query_embedding.query_encoder().filename)\n"
    )
    try:
        lines = run_django(
            data_dir, script, 400, MEMORYHUB_EMBEDDER="minilm", MEMORYHUB_EMBED_BACKEND="auto"
        ).splitlines()
    finally:
        if not choice.exists():
            choice.write_text(kept)
    assert lines == [
        "steps: 1 True False",
        "while exporting: 384 None True",
        "export exit: 0",
        "after: 384 model-int8.onnx",
    ], lines


def test_the_web_warm_up_loads_no_model_while_the_fast_one_is_made_and_health_says_so(
    prepared,  # noqa: F811
) -> None:  # type: ignore[no-untyped-def]
    """A first start serves while the ONNX model is made beside it: a web worker's warm-up does not
    wait for it (it waited up to 10 minutes, the web server with it), nor load torch (~50 s on a
    busy machine): searches go by their words meanwhile (query_model_ready), `describe()` (in
    /health/'s details) says so, and the process takes the fast model once it is recorded."""
    from retrieval.minilm_runtimes import cache_dir

    data_dir, _ = prepared
    script = (
        "import os\nfrom retrieval import minilm_runtimes,"
        " query_embedding\nminilm_runtimes.mark_preparing(os.getpid())  # as `run` marks the"
        " process making the model\nquery_embedding.LOOK_AGAIN_SECONDS ="
        " 0\nquery_embedding.warm_up()\nprint('warmed:', 'torch' in sys.modules,"
        " query_embedding.query_model_ready(),"
        f" query_embedding.describe())\nopen({str(cache_dir() / 'choice.json')!r},"
        " 'w').write(open(sys.argv[1]).read())\nquery_embedding.query_model_ready()\nquery_embedding._taking_up.join()\nprint('made:',"  # noqa: E501
        " query_embedding.query_model_ready(), query_embedding.describe(), 'torch' in"
        " sys.modules)\n"
    )
    choice = cache_dir() / "choice.json"
    aside = data_dir / "choice.json.aside"
    choice.rename(aside)
    try:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
            "MEMORYHUB_DATA_DIR": str(data_dir),
            "SECRET_KEY": "test",
            "MEMORYHUB_EMBEDDER": "minilm",
        }
        done = subprocess.run(
            [sys.executable, "-c", "import sys, django; django.setup()\n" + script, str(aside)],
            env=env,
            cwd=django_settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        if not choice.exists():
            aside.rename(choice)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        (
            "warmed: False False words only: the fast search model is being prepared (first start);"
            " searches add meaning once it is ready"
        ),
        "made: True ONNX Runtime (model-int8.onnx) False",
    ]
