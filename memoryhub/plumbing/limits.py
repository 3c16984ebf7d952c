"""Request limits, in one place: how large a body may be, and the 413 that says so.

The ASGI front (memoryhub.plumbing.asgi_body) applies them while the body arrives, before Django
buffers it; RequestLogMiddleware applies them again by Content-Length for any other server (the test
client, a WSGI server). Django's DATA_UPLOAD_MAX_MEMORY_SIZE is set to the same number.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

# Imports carry a whole tenant's export: these paths have their own, larger limit.
IMPORT_PATHS = ("/api/v1/import/", "/admin/transfer/")


def body_limit(path: str) -> int:
    limit = int(settings.MEMORYHUB_MAX_REQUEST_BYTES)
    if path.rstrip("/") + "/" in IMPORT_PATHS:
        limit = max(limit, int(settings.MEMORYHUB_IMPORT_MAX_BYTES))
    return limit


def too_large_body(limit: int, size: int | None = None) -> dict[str, Any]:
    """The 413 envelope; `size` when the client declared it."""
    said = (
        f"The request body is {size} bytes; "
        if size is not None
        else "The request body is too large; "
    )
    details: dict[str, Any] = {"limit": limit}
    if size is not None:
        details["size"] = size
    return {
        "error": {
            "code": "payload_too_large",
            "message": f"{said}the limit is {limit} bytes.",
            "details": details,
        }
    }
