"""Query parameters the API knows: an unknown one is refused (400 `unknown_parameter`, with the
parameter meant when one is near), as StrictSerializer refuses an unknown body field.

What an operation knows is what its OpenAPI operation declares (the `parameters` each view gives
drf-spectacular): the document a client reads is the one the server enforces, with no second list
to keep in step. The schema is generated once per process, on the first request that needs it.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

from rest_framework import permissions, serializers
from rest_framework.request import Request

from memoryhub.api.common import unknown_field_message

# A parameter named like `meta.<key>` stands for every name with that prefix.
_PLACEHOLDER = re.compile(r"<[^>]*>")
# A Django route's converters, as drf-spectacular writes them in a path: <int:fact_id> -> {fact_id}.
_CONVERTER = re.compile(r"<(?:[^>:]+:)?([^>]+)>")

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_declared: dict[tuple[str, str], tuple[frozenset[str], tuple[str, ...]]] | None = None


def declared_query_parameters() -> dict[tuple[str, str], tuple[frozenset[str], tuple[str, ...]]]:
    """{(method, path): (names, prefixes)} of every operation in the API's OpenAPI document."""
    global _declared
    with _lock:
        if _declared is None:
            from drf_spectacular.generators import SchemaGenerator

            schema = SchemaGenerator().get_schema(request=None, public=True)
            declared = {}
            for path, operations in schema.get("paths", {}).items():
                for method, operation in operations.items():
                    if not isinstance(operation, dict):
                        continue
                    names = [
                        p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"
                    ]
                    exact = frozenset(n for n in names if not _PLACEHOLDER.search(n))
                    prefixes = tuple(
                        _PLACEHOLDER.split(n, 1)[0] for n in names if _PLACEHOLDER.search(n)
                    )
                    declared[(method.lower(), path)] = (exact, prefixes)
            _declared = declared
        return _declared


def warm_up() -> None:
    """Generate the declarations now (a web worker, before its first request); a failure is left
    for the first request to report."""
    try:
        declared_query_parameters()
    except Exception:
        logger.exception("query parameter declarations: warm-up failed")


def operation_path(request: Request) -> str | None:
    """The OpenAPI path of the route that matched ('/api/v1/facts/{fact_id}/')."""
    match = getattr(request, "resolver_match", None)
    route = getattr(match, "route", None)
    return "/" + _CONVERTER.sub(r"{\1}", route) if route else None


def unknown_query_parameters(request: Request) -> dict[str, str]:
    """{name: message} for each query parameter the operation does not declare."""
    if not request.query_params:
        return {}
    method = "get" if request.method == "HEAD" else (request.method or "").lower()
    path = operation_path(request)
    declared = declared_query_parameters().get((method, path)) if path else None
    if declared is None:
        # not an operation of the document (OPTIONS, a method the view lacks: 405 follows)
        return {}
    names, prefixes = declared
    known = sorted(names)
    return {
        name: unknown_field_message(name, known, what="query parameter")
        for name in request.query_params
        if name not in names
        and not any(p and name.startswith(p) and len(name) > len(p) for p in prefixes)
    }


class KnownQueryParameters(permissions.BasePermission):
    """Runs with every API view's permissions (settings: after the key and its scope are checked),
    so that a typo in a filter (`?usr_id=`) is a 400 and never a list of everything."""

    def has_permission(self, request: Request, view: Any) -> bool:
        unknown = unknown_query_parameters(request)
        if unknown:
            raise serializers.ValidationError(
                {
                    name: [serializers.ErrorDetail(message, code="unknown_parameter")]
                    for name, message in unknown.items()
                }
            )
        return True
