"""memoryhub.plumbing.asgi.mount: a mounted app (the MCP endpoint) is imported at its first request,
its lifespan entered then by the server's lifespan task and left at shutdown (a web worker
that never serves /mcp/ does not hold the MCP SDK)."""

from __future__ import annotations

import asyncio
import sys
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from memoryhub.plumbing.asgi import mount

events: list[str] = []


@asynccontextmanager
async def _lifespan(app: Any) -> Any:
    events.append("entered")
    yield
    events.append("left")


async def _hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("mounted")


def _build() -> Starlette:
    events.append("imported")
    return Starlette(routes=[Route("/fake/hello", _hello)], lifespan=_lifespan)


def __getattr__(name: str) -> Any:  # the mounted app, built when it is imported by name
    if name in ("fake_app", "broken_app"):
        if name == "broken_app" and events.count("broken") == 0:
            events.append("broken")
            raise RuntimeError("first import fails")
        return _build()
    raise AttributeError(name)


async def _default(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"django"})


async def _get(app: Any, path: str) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
    }
    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def _run(name: str, scenario: Any) -> None:
    events.clear()
    sys.modules[__name__].__dict__.pop(name, None)

    async def main() -> None:
        app = mount(_default, {"/fake/": f"{__name__}.{name}"})
        incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        sent: list[str] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message["type"])

        await incoming.put({"type": "lifespan.startup"})
        lifespan = asyncio.create_task(app({"type": "lifespan"}, incoming.get, send))
        while "lifespan.startup.complete" not in sent:
            await asyncio.sleep(0.01)
        await scenario(app)
        await incoming.put({"type": "lifespan.shutdown"})
        await lifespan
        assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]

    asyncio.run(main())


def test_a_mounted_app_is_imported_at_its_first_request_and_its_lifespan_left_at_shutdown() -> None:
    async def scenario(app: Any) -> None:
        assert await _get(app, "/api/v1/health/") == (200, b"django")
        assert events == []  # started, and nothing of the mounted app loaded
        assert await _get(app, "/fake/hello") == (200, b"mounted")
        assert await _get(app, "/fake/hello") == (200, b"mounted")
        assert events == ["imported", "entered"]  # once

    _run("fake_app", scenario)
    assert events == ["imported", "entered", "left"]


def test_a_mounted_app_that_fails_to_load_is_tried_again() -> None:
    async def scenario(app: Any) -> None:
        try:
            await _get(app, "/fake/hello")
        except RuntimeError as exc:
            assert str(exc) == "first import fails"
        else:
            raise AssertionError("the failed load was not reported")
        assert await _get(app, "/fake/hello") == (200, b"mounted")

    _run("broken_app", scenario)
    assert events == ["broken", "imported", "entered", "left"]
