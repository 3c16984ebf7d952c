"""A fake webhook receiver on 127.0.0.1: records what arrives, checks its signature the way a
receiver would (written out here, not with the code under test), answers as scripted."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Received:
    path: str
    headers: dict[str, str]  # names in lower case: HTTP header names are case-insensitive
    raw: bytes

    @property
    def body(self) -> Any:
        return json.loads(self.raw)

    def signed_by(self, secret: str) -> bool:
        timestamp = self.headers.get("x-memoryhub-timestamp", "")
        expected = (
            "sha256="
            + hmac.new(
                secret.encode(), timestamp.encode() + b"." + self.raw, hashlib.sha256
            ).hexdigest()
        )
        return bool(timestamp) and hmac.compare_digest(
            expected, self.headers.get("x-memoryhub-signature", "")
        )


@dataclass
class HookServer:
    url: str
    received: list[Received] = field(default_factory=list)
    # (status, JSON reply, extra headers) popped per request; 200 {"ok": true} when empty
    replies: list[tuple[int, Any, dict[str, str]]] = field(default_factory=list)

    def reply(self, status: int, body: Any = None, **headers: str) -> None:
        self.replies.append((status, {"ok": status < 300} if body is None else body, headers))


def _handler(server: HookServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            server.received.append(
                Received(self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
            )
            status, reply, headers = (
                server.replies.pop(0) if server.replies else (200, {"ok": True}, {})
            )
            data = json.dumps(reply).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def hook_server(settings) -> Iterator[Callable[[], HookServer]]:  # type: ignore[no-untyped-def]
    """Start as many receivers as a test needs (alice's, bob's); all stop after the test. Webhooks
    on this machine are refused unless the operator allows them: these tests allow it."""
    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)
    started: list[ThreadingHTTPServer] = []

    def start() -> HookServer:
        server = HookServer(url="")
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
        server.url = f"http://127.0.0.1:{httpd.server_port}/hook"
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        return server

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()
