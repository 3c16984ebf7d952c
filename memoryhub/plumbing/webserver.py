"""The HTTP server `manage.py run` starts: gunicorn managing uvicorn workers (ASGI), adjusted so
that a slow, idle or malformed client costs no worker and always gets the JSON error envelope.

- An asyncio worker holds a connection that is still sending its headers as a few bytes in the
  event loop, not as a thread: 40 clients that never finish their headers leave /health/ answering.
- A connection gets MEMORYHUB_HEADER_TIMEOUT_SECONDS to send its request line and headers (408,
  or a silent close when it sent nothing) from its opening, and from the first byte of each
  further request; between requests it may stay idle KEEPALIVE_SECONDS.
  memoryhub.plumbing.asgi_body times the body, and limits its size.
- A request line plus headers over MAX_HEADER_BYTES (a URL over the limit) is a 431,
  and any request h11 cannot parse (`Content-Length: abc`) a 400, both in the envelope instead
  of uvicorn's plain text. h11 measures only a head that is still incomplete, so a head that
  arrives whole is measured here.
- X-Forwarded-For and X-Forwarded-Proto are believed only from MEMORYHUB_TRUSTED_PROXIES (uvicorn
  trusts 127.0.0.1 by default, so any local client could claim another address or https).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE, H11Protocol
from uvicorn_worker import UvicornWorker

# Request line plus headers may take at most this many bytes (431 past it): 32 KiB, room for long
# cookies and bearer tokens, far below what would let a client hold a worker's memory.
MAX_HEADER_BYTES = 32 * 1024
# An idle keep-alive connection is closed after this many seconds: longer than clients keep an
# idle connection for reuse (httpx 5 s, Node's undici 4 s, aiohttp 15 s), so that the client always
# drops it first. At uvicorn's own 5 s, equal to httpx's, a request sent on a connection the server
# was closing at that moment failed with a read error: 3 and 7 appends in ten minutes of 50 and 200
# agents (bench/load.py). An idle connection costs the event loop a socket, no thread.
KEEPALIVE_SECONDS = 20


class _Connection(h11.Connection):
    """h11's connection, keeping the last parse error (uvicorn keeps only a fixed message)."""

    last_error: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.last_error = exc
            raise


class JsonH11Protocol(H11Protocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _Connection(
            h11.SERVER,
            self.config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE,
        )
        self._header_timer: asyncio.TimerHandle | None = None
        self._started = False  # bytes of the next request have arrived
        self._head = b""  # the next request's head as far as it has arrived (to measure it)

    # -- header deadline -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self._started and self._header_timer is None:  # a further request's first bytes
            self._arm_header_timer()
        self._started = True
        if self.conn.their_state is h11.IDLE and self._head_too_large(data):
            self._send_headers_too_large()
            return
        super().data_received(data)

    def _head_too_large(self, data: bytes) -> bool:
        limit = self.config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
        head = self._head + data
        end = head.find(b"\r\n\r\n")
        if (end + 4 if end >= 0 else len(head)) > limit:
            return True
        self._head = b"" if end >= 0 else head
        return False

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # the request's headers are in
            self._cancel_header_timer()

    def on_response_complete(self) -> None:
        # Idle from here until the next request's first byte: uvicorn's keep-alive timer closes
        # the connection after KEEPALIVE_SECONDS, and that byte starts the header deadline.
        self._started = False
        self._head = b""
        self._cancel_header_timer()
        super().on_response_complete()

    def _arm_header_timer(self) -> None:
        from django.conf import settings

        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(
            settings.MEMORYHUB_HEADER_TIMEOUT_SECONDS, self._headers_late
        )

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self._started and self.conn.our_state is h11.IDLE:
            from django.conf import settings

            self._send_error(
                408,
                "request_timeout",
                "The request headers did not arrive in time.",
                {"timeout_seconds": settings.MEMORYHUB_HEADER_TIMEOUT_SECONDS},
            )
        else:
            self.transport.close()

    # -- malformed requests ----------------------------------------------------------------------

    def send_400_response(self, msg: str) -> None:
        error = self.conn.last_error
        if error is not None and error.error_status_hint == 431:
            self._send_headers_too_large()
            return
        status = (
            error.error_status_hint
            if error is not None and 400 <= error.error_status_hint < 600
            else 400
        )
        self._send_error(status, "bad_request", f"Malformed HTTP request: {error or msg}.", {})

    def _send_headers_too_large(self) -> None:
        limit = self.config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
        self._send_error(
            431,
            "headers_too_large",
            f"The request line and headers may be at most {limit} "
            "bytes together (is the URL that long?).",
            {"limit": limit},
        )

    def _send_error(self, status: int, code: str, message: str, details: dict[str, Any]) -> None:
        body = json.dumps(
            {"error": {"code": code, "message": message, "details": details}}
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        try:
            for event in (
                h11.Response(status_code=status, headers=headers),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event))
        except h11.LocalProtocolError:  # a response had already begun: nothing more can be said
            pass
        self.transport.close()


class Worker(UvicornWorker):
    """gunicorn's worker class for `manage.py run` (--worker-class
    memoryhub.plumbing.webserver.Worker)."""

    # lifespan "on": memoryhub.plumbing.asgi starts the mounted apps' lifespans (the MCP endpoint's
    # session manager refuses every request until its lifespan has run); Django itself has none.
    CONFIG_KWARGS: dict[str, Any] = {"loop": "asyncio", "http": JsonH11Protocol, "lifespan": "on"}

    def load_wsgi(self) -> None:
        super().load_wsgi()  # imports memoryhub.plumbing.asgi: settings are ready from here on
        from django.conf import settings

        self.config.timeout_keep_alive = KEEPALIVE_SECONDS
        self.config.h11_max_incomplete_event_size = MAX_HEADER_BYTES
        self.config.proxy_headers, self.config.forwarded_allow_ips = proxy_config(
            settings.MEMORYHUB_TRUSTED_PROXIES
        )


def proxy_config(trusted: tuple[str, ...]) -> tuple[bool, list[str]]:
    """uvicorn's proxy_headers and forwarded_allow_ips for these trusted proxies: none, no headers
    believed (gunicorn's own default, read by the worker, trusts 127.0.0.1)."""
    return bool(trusted), list(trusted)
