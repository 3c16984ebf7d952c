"""One error envelope for every API error: {"error": {"code", "message", "details"}}.

The one place that knows which HTTP status each domain error becomes.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from memoryhub.errors import Conflict, DomainError, Forbidden, Invalid, NotFound, TooLarge
from memoryhub.plumbing.limits import too_large_body

logger = logging.getLogger(__name__)

# What a 503 database_unavailable asks the client to wait before retrying (Retry-After): about the
# time a restarted embedded PostgreSQL takes to answer again.
RETRY_AFTER_SECONDS = 5

DOMAIN_STATUS: dict[type[DomainError], int] = {
    Invalid: status.HTTP_400_BAD_REQUEST,
    Forbidden: status.HTTP_403_FORBIDDEN,
    NotFound: status.HTTP_404_NOT_FOUND,
    Conflict: status.HTTP_409_CONFLICT,
    TooLarge: status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
}


def status_of(exc: DomainError) -> int:
    return next(
        (code for cls, code in DOMAIN_STATUS.items() if isinstance(exc, cls)),
        status.HTTP_400_BAD_REQUEST,
    )


# DRF's generic field-level codes; anything else is one of ours and becomes the top-level code.
_GENERIC_CODES = {
    "invalid",
    "required",
    "null",
    "blank",
    "max_length",
    "min_length",
    "max_value",
    "min_value",
    "invalid_choice",
    "not_a_list",
    "empty",
    "not_a_dict",
    "max_digits",
    "max_decimal_places",
    "max_whole_digits",
    "date",
    "datetime",
    "make_aware",
    "overflow",
    "max_string_length",
    "does_not_exist",
    "incorrect_type",
    "unique",
    "parse_error",
}

_STATUS_CODES = {
    exceptions.ParseError: "malformed_json",
    exceptions.AuthenticationFailed: "invalid_api_key",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
}


def _flatten(detail: Any, path: str = "") -> list[tuple[str, str, str]]:
    """(field path, code, message) for every leaf of a DRF error detail."""
    if isinstance(detail, dict):
        out: list[tuple[str, str, str]] = []
        for key, value in detail.items():
            # DRF reports a list's bad items as {index: errors}: spell them events[1].role.
            if isinstance(key, int):
                out += _flatten(value, f"{path}[{key}]")
            else:
                out += _flatten(value, f"{path}.{key}" if path else str(key))
        return out
    if isinstance(detail, list):
        out = []
        for index, value in enumerate(detail):
            child = path if not isinstance(value, (dict, list)) else f"{path}[{index}]"
            out += _flatten(value, child)
        return out
    return [(path or "non_field_errors", getattr(detail, "code", "invalid"), str(detail))]


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def _validation_response(exc: exceptions.ValidationError) -> dict[str, Any]:
    leaves = _flatten(exc.detail)
    fields: dict[str, list[dict[str, str]]] = {}
    for field, code, message in leaves:
        fields.setdefault(field, []).append({"code": code, "message": message})
    specific = [code for _, code, _ in leaves if code not in _GENERIC_CODES]
    code = specific[0] if specific else "validation_error"
    first_field, _, first_message = leaves[0] if leaves else ("", "", "Invalid input.")
    message = (
        f"{first_field}: {first_message}"
        if first_field not in ("", "non_field_errors")
        else first_message
    )
    return error_body(code, message, {"fields": fields})


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, DomainError):
        set_rollback()
        return Response(error_body(exc.code, exc.message, exc.details), status=status_of(exc))
    if isinstance(exc, (OperationalError, InterfaceError)):
        # One line, not a 500's traceback per request while the database is away.
        logger.warning(
            "database unavailable", extra={"error": str(exc).splitlines()[0] if str(exc) else ""}
        )
        return Response(
            _unavailable_body(), status=status.HTTP_503_SERVICE_UNAVAILABLE, headers=_retry_after()
        )
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = _validation_response(exc)
    else:
        code = next((c for cls, c in _STATUS_CODES.items() if isinstance(exc, cls)), "error")
        # A PermissionDenied raised with its own code (insufficient_scope, …) keeps that code.
        specific = exc.get_codes()
        if (
            code == "permission_denied"
            and isinstance(specific, str)
            and specific != "permission_denied"
        ):
            code = specific
        response.data = error_body(code, str(exc.detail))
        if isinstance(exc, exceptions.MethodNotAllowed) and context.get("view") is not None:
            response.data = _method_not_allowed(context)
    return response


def _method_not_allowed(context: dict[str, Any]) -> dict[str, Any]:
    """405 says which method to use instead (GET /search/ → "use POST")."""
    allowed = [m for m in context["view"].allowed_methods if m not in ("OPTIONS", "HEAD")]
    request = context.get("request")
    method = request.method if request is not None else "This method"
    return error_body(
        "method_not_allowed",
        f"{method} is not allowed here: use {' or '.join(allowed)}.",
        {"allowed": allowed},
    )


def json_404(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body("not_found", f"No endpoint at {request.path}."), status=404)


def json_500(request: HttpRequest) -> JsonResponse:
    return JsonResponse(error_body("server_error", "Internal server error."), status=500)


def json_400(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    if isinstance(exception, RequestDataTooBig):
        response = JsonResponse(too_large_body(settings.DATA_UPLOAD_MAX_MEMORY_SIZE), status=413)
        response["Connection"] = "close"
        return response
    if isinstance(exception, DisallowedHost):
        return JsonResponse(
            error_body(
                "host_not_allowed",
                "This server does not answer for that Host header (see ALLOWED_HOSTS).",
            ),
            status=400,
        )
    return JsonResponse(error_body("bad_request", "Bad request."), status=400)


def handle_404(request: HttpRequest, exception: Exception | None = None):  # type: ignore[no-untyped-def]
    if request.path.startswith("/api/"):
        return json_404(request, exception)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def _unavailable_body() -> dict[str, Any]:
    return error_body(
        "database_unavailable",
        "The database is unavailable. Retry after a few seconds (an "
        "append resent with its idempotency_key is stored once).",
        {"retry_after": RETRY_AFTER_SECONDS},
    )


def _retry_after() -> dict[str, str]:
    return {"Retry-After": str(RETRY_AFTER_SECONDS)}


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: the database is down, restarting or refused the connection. Every
    write is one transaction, so a request answered this way is retried whole."""
    if request.path.startswith("/api/"):
        return JsonResponse(_unavailable_body(), status=503, headers=_retry_after())
    return HttpResponse(
        "The database is unavailable; retry shortly.",
        status=503,
        content_type="text/plain; charset=utf-8",
        headers=_retry_after(),
    )


def handle_500(request: HttpRequest):  # type: ignore[no-untyped-def]
    # Django calls this while handling the exception: a lost database is not a bug of ours.
    if isinstance(sys.exc_info()[1], (OperationalError, InterfaceError)):
        return database_unavailable(request)
    if request.path.startswith("/api/"):
        return json_500(request)
    from django.views.defaults import server_error

    return server_error(request)


def handle_400(request: HttpRequest, exception: Exception | None = None):  # type: ignore[no-untyped-def]
    if request.path.startswith("/api/"):
        return json_400(request, exception)
    from django.views.defaults import bad_request

    return bad_request(request, exception)
