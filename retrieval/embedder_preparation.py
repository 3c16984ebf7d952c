"""Making MiniLM's ONNX model on a first start: in this process (an embed lane on a machine of its
own, the benches) or in a child process beside the starting service, so that the supervising
process never holds torch."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

from django.conf import settings

from memoryhub.signals import BackgroundStep

logger = logging.getLogger(__name__)

# How long the first start's ONNX export and checks take (prepare_embedder_apart says it): measured
# from a fresh data folder on a 2-core VM, beside the starting service: 50-60 s when the machine
# is otherwise idle, about 2 minutes under a load of 6-7.
PREPARE_MINUTES_HINT = "1-2 minutes"


def prepare_embedder(**kwargs: Any) -> None:
    """Make and judge the ONNX model of MiniLM if this data folder has none yet, and measure the
    lane's shape if not measured on this CPU (in this process: an embed lane on a machine of its
    own, the benches)."""
    if settings.MEMORYHUB_EMBEDDER == "minilm" and settings.MEMORYHUB_EMBED_BACKEND != "torch":
        from retrieval.embedder_calibration import ensure_measured

        try:
            ensure_measured()
        except Exception:  # torch remains: never stop a start for the faster runtime
            logger.exception("preparing the ONNX model failed; embedding with torch")


def prepare_embedder_apart(background: bool = False, **kwargs: Any) -> BackgroundStep | None:
    """prepare_embedder in a child process (`manage.py prepare_embedder`) when there is work to do:
    the receiver of memoryhub.signals.service_starting, so that web workers find the model made.
    The export loads torch, ~700 MB that `manage.py run`, which only supervises, would otherwise
    hold for as long as it serves. With background=True (`manage.py run`) the child is returned
    unfinished: the service answers meanwhile, hybrid searches by their words until the ONNX model
    is recorded (retrieval.query_embedding.query_model_ready looks again)."""
    if settings.MEMORYHUB_EMBEDDER != "minilm" or settings.MEMORYHUB_EMBED_BACKEND == "torch":
        return None
    from retrieval.embedder_calibration import is_measured

    if is_measured():
        return None
    # `python -m django`, not manage.py: the child needs no database, so it must not start one.
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "memoryhub.settings"),
        "MEMORYHUB_DATA_DIR": str(settings.DATA_DIR),
    }
    command = [sys.executable, "-m", "django", "prepare_embedder"]
    if background:
        # Its verdict line and logs are for operators who run the command by hand: `run` says
        # what matters (BackgroundStep) and the log keeps the verdict ("MiniLM runtime chosen").
        # Niced, as the embed lane is: requests come first.
        process = subprocess.Popen(
            ["nice", "-n", "10", *command],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        from retrieval.minilm_runtimes import mark_preparing

        mark_preparing(process.pid)
        return BackgroundStep(
            process=process,
            starting=(
                "Preparing the fast search model beside the service (first start only: exporting"
                f" all-MiniLM-L6-v2 to ONNX and checking it, about {PREPARE_MINUTES_HINT} on a"
                " 2-core machine; searches go by their words meanwhile)…"
            ),
            finished="The fast search model is ready.",
            failed=(
                "Preparing the fast search model failed (see the log above); searches keep using"
                " the torch model. The next start tries again."
            ),
        )
    done = subprocess.run(command, cwd=settings.BASE_DIR, env=env, check=False)
    if done.returncode != 0:  # torch remains: never stop a start for the faster runtime
        logger.error(
            "preparing the ONNX model failed (exit code %s); embedding with torch", done.returncode
        )
    return None
