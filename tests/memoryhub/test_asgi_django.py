"""Django's ASGIHandler as memoryhub.plumbing.asgi serves it, its middleware chain loaded
synchronously (memoryhub.plumbing.asgi_handler): a request's sync work, middleware included, runs
off the event loop in one thread, a response in memory is finished before it is sent, a streamed
response is sent whole and closed after, a failing view is a 500 that still finishes, and slow
requests leave threads for the others."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.core.signals import request_finished, request_started
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from memoryhub.plumbing.asgi_handler import SyncChainASGIHandler

log: list[tuple[str, int]] = []


@csrf_exempt
def echo(request: HttpRequest) -> HttpResponse:
    log.append(("view", threading.get_ident()))
    return JsonResponse({"body": request.body.decode()})


def streamed(request: HttpRequest) -> HttpResponse:
    def parts() -> Any:
        yield b"one,"
        log.append(("second part", threading.get_ident()))
        yield b"two"

    return StreamingHttpResponse(parts())


def broken(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("boom")


release = threading.Event()


def slow(request: HttpRequest) -> HttpResponse:
    release.wait(timeout=30)
    return HttpResponse("slow")


urlpatterns = [
    path("echo/", echo),
    path("streamed/", streamed),
    path("broken/", broken),
    path("slow/", slow),
]


class AsyncCapable:
    """A middleware that can run either way, as django-axes's does (last in the chain): Django's
    own handler runs it in the event loop, between two thread crossings."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        log.append(("middleware", threading.get_ident()))
        if self.is_async:
            return self._acall(request)
        return self.get_response(request)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return await self.get_response(request)


@pytest.fixture
def app(settings) -> Any:  # type: ignore[no-untyped-def]
    settings.ROOT_URLCONF = __name__
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.AsyncCapable"]
    log.clear()

    def started(**_: Any) -> None:
        log.append(("request_started", threading.get_ident()))

    def finished(**_: Any) -> None:
        log.append(("request_finished", threading.get_ident()))

    request_started.connect(started)
    request_finished.connect(finished)
    yield SyncChainASGIHandler()
    request_started.disconnect(started)
    request_finished.disconnect(finished)


def _scope(method: str, url: str, body: bytes) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": url,
        "raw_path": url.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"content-length", str(len(body)).encode())],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
    }


def call(app: Any, method: str, url: str, body: bytes = b"") -> tuple[int, bytes, int]:
    """Status, body and the event loop's thread; each message sent is logged as it goes."""
    scope = _scope(method, url, body)
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        log.append((message["type"], threading.get_ident()))
        sent.append(message)

    async def run() -> int:
        await app(scope, receive, send)
        return threading.get_ident()

    loop_thread = asyncio.run(run())
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]), loop_thread


def test_a_requests_sync_work_runs_off_the_event_loop(app) -> None:
    status, body, loop_thread = call(app, "POST", "/echo/", b"hello")
    assert (status, body) == (200, b'{"body": "hello"}')
    names = [name for name, _ in log]
    assert names[:3] == ["request_started", "middleware", "view"] and "request_finished" in names
    assert names.index("http.response.start") < names.index("http.response.body")
    view = {thread for name, thread in log if name == "view"}
    assert loop_thread not in view  # the view ran in a worker thread, not the loop's
    # the whole chain in that one thread: no crossing back to the loop for a middleware that could
    # run there
    assert {thread for name, thread in log if name == "middleware"} == view
    assert {thread for name, thread in log if name.startswith("http.")} == {loop_thread}


def test_a_response_in_memory_is_finished_in_the_views_thread_before_it_is_sent(app) -> None:
    """request_started, the chain, the view and request_finished (which gives the database
    connection back) in one crossing into the request's thread, before the loop sends a byte."""
    call(app, "POST", "/echo/", b"hello")
    names = [name for name, _ in log]
    assert names == [
        "request_started",
        "middleware",
        "view",
        "request_finished",
        "http.response.start",
        "http.response.body",
    ]
    assert len({thread for name, thread in log if not name.startswith("http.")}) == 1


@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous iterators")
def test_a_streamed_response_is_sent_whole_and_closed_after(app) -> None:
    status, body, _ = call(app, "GET", "/streamed/")
    assert (status, body) == (200, b"one,two")
    names = [name for name, _ in log]
    assert names.index("second part") < names.index("request_finished")
    assert names[-1] == "request_finished"


def test_a_failing_view_is_a_500_and_the_request_still_finishes(app) -> None:
    status, _, _ = call(app, "GET", "/broken/")
    assert status == 500
    names = [name for name, _ in log]
    assert {"request_finished", "http.response.start", "http.response.body"} <= set(names)


def test_slow_requests_leave_threads_for_the_others(app) -> None:
    """Eight requests still running (an export, a long import) do not hold every request thread:
    /health/ does not wait behind them (each request's sync work has a thread of its own)."""

    async def get(url: str) -> int:
        sent: list[dict[str, Any]] = []
        incoming = [{"type": "http.request", "body": b"", "more_body": False}]

        async def receive() -> dict[str, Any]:
            if incoming:
                return incoming.pop(0)
            await asyncio.sleep(3600)  # the client stays connected
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app(_scope("GET", url, b""), receive, send)
        return sent[0]["status"]

    async def run() -> None:
        release.clear()
        slow_ones = [asyncio.create_task(get("/slow/")) for _ in range(8)]
        await asyncio.sleep(0.2)
        try:
            assert await asyncio.wait_for(get("/echo/"), timeout=10) == 200
        finally:
            release.set()
        assert await asyncio.gather(*slow_ones) == [200] * 8

    asyncio.run(run())
