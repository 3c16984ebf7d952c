"""`manage.py prepare_embedder`: export MiniLM to ONNX in the data folder and judge it against
torch, once, and measure the embed lane's shape on this CPU (`manage.py run` has it done in a child
process of its own on start; an image build can run it ahead). Prints the verdict that every
process of the data folder then follows."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Export MiniLM to ONNX in the data folder and choose each runtime (once; later calls read"
        " the verdict)."
    )
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.MEMORYHUB_EMBEDDER != "minilm":
            self.stdout.write(
                f"MEMORYHUB_EMBEDDER is {settings.MEMORYHUB_EMBEDDER!r}: nothing to prepare."
            )
            return
        from retrieval.embedder_calibration import ensure_measured, lane_shape
        from retrieval.minilm_runtimes import batch_runtime, cache_dir

        try:
            choice = ensure_measured()
        except Exception as exc:
            raise CommandError(f"Preparing the ONNX model failed: {exc}") from exc
        if choice is None:
            self.stdout.write("ONNX Runtime is not installed here: MiniLM embeds with torch.")
            return
        int8 = choice.get("int8")
        verdict = (
            "not made"
            if int8 is None
            else ("agrees" if int8.get("agree") else "does not agree: not used")
        )
        runtime = batch_runtime(choice)
        lane = choice.get("lane") or {}
        cost = (lane.get("cpu_ms_per_text") or {}).get(lane.get("chosen"))
        stored = (
            f"; the lane embeds with {lane_shape(choice).name}"
            + (
                f" ({cost} CPU ms a text, the least of {len(lane['cpu_ms_per_text'])})"
                if cost
                else ""
            )
            if runtime == "onnx"
            else ""
        )
        self.stdout.write(
            f"MiniLM in {cache_dir()}: queries on {choice.get('query')}, batches on "
            f"{runtime}; the int8 copy for queries {verdict}{stored}."
        )
