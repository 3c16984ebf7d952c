"""Exceptions: every failure carries the service's error envelope {"code", "message", "details"}."""

from __future__ import annotations

from typing import Any

import httpx


class MemoryHubError(Exception):
    """Base of every error this client raises.

    `code` is the service's machine-readable code (e.g. `session_not_found`, `stale_epoch`),
    `status` the HTTP status (None when no response came back at all).
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        status: int | None = None,
        response: httpx.Response | None = None,
    ) -> None:
        super().__init__(f"[{status or '-'} {code}] {message}")
        self.code = code
        self.message = message
        self.details: dict[str, Any] = details or {}
        self.status = status
        self.response = response


class BadRequestError(MemoryHubError):
    """400: the request was refused (validation_error, unknown_field, query_required, …)."""


class AuthenticationError(MemoryHubError):
    """401: no API key, or one that is invalid or revoked."""


class PermissionDeniedError(MemoryHubError):
    """403: the key lacks a scope (insufficient_scope) or is limited to a workspace."""


class NotFoundError(MemoryHubError):
    """404: the thing does not exist in the key's tenant (another tenant's data is also 404)."""


class ConflictError(MemoryHubError):
    """409: session_exists, note_exists, stale_epoch, sequence_conflict, session_archived, …"""


class RateLimitError(MemoryHubError):
    """429 after the retries: `retry_after` holds the server's Retry-After in seconds, if given."""

    retry_after: float | None = None


class ServiceUnavailableError(MemoryHubError):
    """503 after the retries."""


class ServerError(MemoryHubError):
    """Any other 5xx."""


class APIConnectionError(MemoryHubError):
    """No response at all (connection refused, reset, timed out) after the retries."""


_BY_STATUS: dict[int, type[MemoryHubError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


def error_from_response(
    response: httpx.Response, retry_after: float | None = None
) -> MemoryHubError:
    """The exception for a non-2xx response, read from the envelope when there is one."""
    status = response.status_code
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else MemoryHubError)
    code, message, details = _envelope(response)
    error = cls(code, message, details=details, status=status, response=response)
    if isinstance(error, RateLimitError):
        error.retry_after = retry_after
    return error


def _envelope(response: httpx.Response) -> tuple[str, str, dict[str, Any]]:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        details = error.get("details")
        return (
            error["code"],
            str(error.get("message", "")),
            details if isinstance(details, dict) else {},
        )
    # Not the service's envelope: a proxy's HTML page, an empty body. Keep a readable excerpt.
    text = response.text.strip()[:300]
    return f"http_{response.status_code}", text or response.reason_phrase, {}


def connection_error(exc: httpx.TransportError) -> APIConnectionError:
    name = type(exc).__name__
    return APIConnectionError("connection_error", f"{name}: {exc}" if str(exc) else name)
