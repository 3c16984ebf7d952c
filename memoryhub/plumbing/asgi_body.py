"""The ASGI front of the app: request bodies are limited and timed while they arrive.

Django's ASGIHandler reads the whole body into a temporary file before any middleware runs, with
no limit and no deadline, so a 10 GB upload or a body sent one byte a minute would be taken in
whole. This wrapper, in front of it:

- answers 414 uri_too_long past MAX_URL_BYTES (whether or not the headers arrived in
  one piece: uvicorn's own limit applies only to headers still incomplete);
- answers 413 payload_too_large at once (Connection: close) when Content-Length is over the limit,
  and as soon as a body without one (chunked) grows past it;
- answers 408 request_timeout when the body has not arrived within MEMORYHUB_BODY_TIMEOUT_SECONDS;
- gives a chunked body its Content-Length once it is complete: DRF takes a request without one
  for a request without a body.

Each refusal is sent here and Django is then told the client went away, so it answers nothing.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from django.conf import settings

from memoryhub.plumbing.limits import body_limit, too_large_body

# The longest URL (path and query) answered (414 past it): 16 KiB, half the header limit
# (memoryhub.plumbing.webserver.MAX_HEADER_BYTES), more than any query string the API takes.
MAX_URL_BYTES = 16 * 1024

Scope = dict[str, Any]
Message = dict[str, Any]
DISCONNECT: Message = {"type": "http.disconnect"}


async def send_error(send: Any, status: int, body: dict[str, Any], *, close: bool = True) -> None:
    content = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(content)).encode()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


def declared_length(scope: Scope) -> int | None:
    """Content-Length as sent (None without one). The HTTP server has refused malformed ones."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            return int(value)
    return None


class BodyLimits:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        target = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        if target > MAX_URL_BYTES:
            await send_error(
                send,
                414,
                {
                    "error": {
                        "code": "uri_too_long",
                        "details": {"limit": MAX_URL_BYTES},
                        "message": f"The URL may be at most {MAX_URL_BYTES} bytes.",
                    }
                },
            )
            return
        limit = body_limit(scope["path"])
        declared = declared_length(scope)
        if declared is not None and declared > limit:
            await send_error(send, 413, too_large_body(limit, declared))
            return
        await self.app(scope, _LimitedReceive(scope, receive, send, limit), send)


class _LimitedReceive:
    """The app's `receive`: counts and times the body, then passes disconnects through."""

    def __init__(self, scope: Scope, receive: Any, send: Any, limit: int) -> None:
        self.scope, self.receive, self.send, self.limit = scope, receive, send, limit
        self.size = 0
        self.complete = False
        self.refused = False
        self.deadline = time.monotonic() + settings.MEMORYHUB_BODY_TIMEOUT_SECONDS

    async def __call__(self) -> Message:
        if self.refused:
            return DISCONNECT
        if self.complete:
            return await self.receive()  # after the body: Django listens for a disconnect
        try:
            message = await asyncio.wait_for(
                self.receive(), max(0.0, self.deadline - time.monotonic())
            )
        except TimeoutError:
            return await self._refuse(
                408,
                {
                    "error": {
                        "code": "request_timeout",
                        "details": {"timeout_seconds": settings.MEMORYHUB_BODY_TIMEOUT_SECONDS},
                        "message": "The request body did not arrive in time.",
                    }
                },
            )
        if message["type"] != "http.request":
            return message
        self.size += len(message.get("body", b""))
        if self.size > self.limit:
            return await self._refuse(413, too_large_body(self.limit))
        if not message.get("more_body", False):
            self.complete = True
            self._declare_length()
        return message

    async def _refuse(self, status: int, body: dict[str, Any]) -> Message:
        self.refused = True
        await send_error(self.send, status, body)
        return DISCONNECT

    def _declare_length(self) -> None:
        headers = self.scope.get("headers", [])
        if self.size and not any(name == b"content-length" for name, _ in headers):
            self.scope["headers"] = [*headers, (b"content-length", str(self.size).encode())]
