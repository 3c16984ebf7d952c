"""GET /health/ and /ready/."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from drf_spectacular.utils import (
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api import examples as ex
from memoryhub.api.parameters import KnownQueryParameters
from memoryhub.plumbing.supervision import read_restarts

# What higher layers add to /health/'s details, by name, read at each request without a database
# query (retrieval adds "search": what embeds search queries in this web worker).
DETAIL_READERS: dict[str, Callable[[], Any]] = {}


class HealthView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny, KnownQueryParameters]

    @extend_schema(
        summary="Liveness",
        description=(
            "200 while the web server answers (no key needed). `details.restarts` counts the "
            "service's own processes (web server, its workers, task clusters, background lanes, "
            "the embedded PostgreSQL) restarted after they stopped unexpectedly since the service "
            "started; the rest kept serving."
        ),
        responses=inline_serializer(
            "Health",
            {
                "status": serializers.CharField(help_text="Always ok."),
                "details": inline_serializer(
                    "HealthDetails",
                    {
                        "restarts": serializers.IntegerField(
                            help_text="Restarts of the service's processes since it started."
                        ),
                        "restarted": serializers.DictField(
                            child=serializers.IntegerField(),
                            help_text="Per process that was restarted: how many times.",
                        ),
                        "search": serializers.CharField(
                            required=False,
                            help_text=(
                                "What embeds search queries in the worker that answered: the fast"
                                " ONNX model, or the torch model while the fast one is prepared on"
                                " a first start (searches are answered meanwhile, a little slower)."
                            ),
                        ),
                    },
                    help_text=(
                        "The service's own processes: how often they were restarted since it"
                        " started."
                    ),
                ),
            },
        ),
        examples=ex.HEALTH,
    )
    def get(self, request: Request) -> Response:
        counts = read_restarts()  # a small file `manage.py run` keeps: no database query
        restarted = {
            name: child.get("restarts", 0)
            for name, child in counts.get("children", {}).items()
            if child.get("restarts", 0)
        }
        details = {
            "restarts": counts.get("total", 0),
            "restarted": restarted,
            **{name: read() for name, read in DETAIL_READERS.items()},
        }
        return Response({"status": "ok", "details": details})


ReadyOutput = inline_serializer(
    "Ready",
    {
        "status": serializers.CharField(help_text="ready or not_ready."),
        "checks": serializers.DictField(
            child=serializers.CharField(),
            help_text="Each check's outcome: database, migrations (ok, or why not).",
        ),
    },
)


class ReadyView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny, KnownQueryParameters]

    @extend_schema(
        summary="Readiness",
        description=(
            "200 when the database answers and every migration is applied, else 503 (no key"
            " needed)."
        ),
        responses={200: ReadyOutput, 503: ReadyOutput},
        examples=ex.READY,
    )
    def get(self, request: Request) -> Response:
        checks: dict[str, str] = {}
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            checks["database"] = "ok"
            executor = MigrationExecutor(connection)
            pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
            checks["migrations"] = "ok" if not pending else f"{len(pending)} pending"
        except Exception as exc:  # readiness reports, it does not raise
            checks.setdefault("database", f"error: {exc.__class__.__name__}")
        ready = all(v == "ok" for v in checks.values()) and len(checks) == 2
        body = {"status": "ready" if ready else "not_ready", "checks": checks}
        return Response(
            body, status=status.HTTP_200_OK if ready else status.HTTP_503_SERVICE_UNAVAILABLE
        )
