"""API request handling around the views: a log line per request, a size limit, optional trailing slash."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve

from memoryhub.api.errors import error_body
from memoryhub.counters import BatchedCounter, Counts
from memoryhub.limits import body_limit, too_large_body

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
    """PostgreSQL cannot compare text with U+0000: refuse it in the path or query, not fail later."""
    in_query = any("\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists())
    if "\x00" in request.path_info or in_query:
        return JsonResponse(
            error_body("null_characters_not_allowed", "Null characters are not allowed in the path or query."),
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


# Requests per tenant, day and name: [requests, errors, total_ms] (ApiUsage, the dashboard's charts).
usage = BatchedCounter("usage", _write_usage, "MEMORYHUB_USAGE_FLUSH_SECONDS")


def _record_usage(request: HttpRequest, status: int, duration_ms: float) -> None:
    match = getattr(request, "resolver_match", None)
    tenant_id = getattr(getattr(request, "auth", None), "tenant_id", None)
    name = USAGE_NAMES.get((getattr(match, "url_name", None), request.method or ""))
    if name is not None and tenant_id is not None:
        from django.utils import timezone

        usage.add((tenant_id, timezone.localdate(), name), 1, int(status >= 400), duration_ms)


class RequestLogMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        is_api = request.path.startswith("/api/")
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
