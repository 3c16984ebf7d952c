"""API request handling around the views: a log line per request, a size limit, optional trailing
slash."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve

from memoryhub.api.errors import error_body
from memoryhub.plumbing.counters import BatchedCounter, Counts
from memoryhub.plumbing.limits import body_limit, too_large_body

logger = logging.getLogger("memoryhub.request")


def _too_large(request: HttpRequest) -> JsonResponse | None:
    raw = request.META.get("CONTENT_LENGTH") or "0"
    try:
        length = int(raw)
    except ValueError:
        return JsonResponse(error_body("bad_request", "Invalid Content-Length header."), status=400)
    limit = body_limit(request.path_info)
    if length <= limit:
        return None
    response = JsonResponse(too_large_body(limit, length), status=413)
    # The body stays unread: the connection cannot carry another request after this answer.
    response["Connection"] = "close"
    return response


def _add_missing_slash(request: HttpRequest) -> None:
    """Serve /api/v1/sessions like /api/v1/sessions/ instead of redirecting.

    APPEND_SLASH answers a 301, and a client that follows it turns a POST into a GET: its write
    would be lost while it gets a 200. The API resolves the slashed path directly instead.
    """
    path = request.path_info
    if path.endswith("/"):
        return
    try:
        resolve(path)
        return
    except Resolver404:
        pass
    try:
        resolve(path + "/")
    except Resolver404:
        return
    request.path_info = path + "/"
    request.path = request.path + "/"


def _has_nul(request: HttpRequest) -> JsonResponse | None:
    """PostgreSQL cannot compare text with U+0000: refuse it in the path or query, not fail
    later."""
    in_query = any(
        "\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists()
    )
    if "\x00" in request.path_info or in_query:
        return JsonResponse(
            error_body(
                "null_characters_not_allowed",
                "Null characters are not allowed in the path or query.",
            ),
            status=400,
        )
    return None


# (URL name, method) -> the usage counter a request adds to (ApiUsage, the dashboard's charts).
# Appends are not counted: stored events already say how many arrived when.
USAGE_NAMES = {
    ("search", "POST"): "search",
    ("context", "POST"): "context",
}


def _write_usage(counts: Counts) -> None:
    from memoryhub.models import ApiUsage

    ApiUsage.add(counts)  # type: ignore[arg-type]


# Requests per tenant, day and name: [requests, errors, total_ms] (ApiUsage, the dashboard's
# charts).
usage = BatchedCounter("usage", _write_usage)


def _write_key_uses(uses: Counts) -> None:
    """The last use of each API key of a batch (epoch seconds), one statement; a time already
    written later (by another process) is kept."""
    from django.db import connection

    from accounts.models import ApiKey

    ids = [int(pk) for pk in uses]  # type: ignore[call-overload]
    times = [datetime.fromtimestamp(latest, UTC) for (latest,) in uses.values()]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {ApiKey._meta.db_table} k SET last_used_at = u.t "
            "FROM unnest(%s::bigint[], %s::timestamptz[]) AS u(id, t) "
            "WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.t)",
            [ids, times],
        )


# Each API key's last use (accounts.signals.key_used), the latest per key, written in batches.
key_uses = BatchedCounter("key-use", _write_key_uses, combine=max)


def note_key_use(sender: Any, key_id: int, at: datetime, **kwargs: Any) -> None:
    key_uses.add(key_id, at.timestamp())


def _record_usage(request: HttpRequest, status: int, duration_ms: float) -> None:
    match = getattr(request, "resolver_match", None)
    tenant_id = getattr(getattr(request, "auth", None), "tenant_id", None)
    name = USAGE_NAMES.get((getattr(match, "url_name", None), request.method or ""))
    if name is not None and tenant_id is not None:
        count_usage(tenant_id, name, failed=status >= 400, duration_ms=duration_ms)


def count_usage(tenant_id: int, name: str, *, failed: bool, duration_ms: float) -> None:
    """One request of a tenant to a counted path (REST or MCP), for the dashboard's charts."""
    from django.utils import timezone

    usage.add((tenant_id, timezone.localdate(), name), 1, int(failed), duration_ms)


# The REST API, and mem0's routes (retrieval/mem0_compat) at the root as mem0 has them.
API_PREFIXES = ("/api/", "/v1/", "/v2/", "/v3/")


class RequestLogMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        is_api = request.path.startswith(API_PREFIXES)
        if is_api:
            _add_missing_slash(request)
        refused = (_too_large(request) or _has_nul(request)) if is_api else None
        response = refused or self.get_response(request)
        if is_api:
            duration_ms = round((time.perf_counter() - started) * 1000, 2)
            if refused is None:
                _record_usage(request, response.status_code, duration_ms)
            logger.info(
                "request",
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": duration_ms,
                    "tenant": getattr(getattr(request, "auth", None), "tenant_id", None),
                },
            )
        return response
