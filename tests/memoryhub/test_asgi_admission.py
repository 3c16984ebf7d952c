"""The web workers take in no more requests at once than their connection pool has connections
(memoryhub.plumbing.asgi.Admitted): the rest wait their turn, holding no thread and no connection,
instead of waiting for a connection and answering 503 after the pool's timeout, as 50 agents at
once got (bench/load.py)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.urls import path

from memoryhub.api import health
from memoryhub.plumbing.asgi import django_app, pool_size

release = threading.Event()
inside = {"now": 0, "most": 0}
lock = threading.Lock()


def held(request: HttpRequest) -> HttpResponse:
    """A request that holds its turn until released (as a connection is held by a long query)."""
    with lock:
        inside["now"] += 1
        inside["most"] = max(inside["most"], inside["now"])
    try:
        release.wait(timeout=30)
    finally:
        with lock:
            inside["now"] -= 1
    return HttpResponse("done")


urlpatterns = [
    path("held/", held),
    path("api/v1/health/", health.HealthView.as_view(), name="health"),
]


@pytest.fixture
def pooled(settings) -> Any:  # type: ignore[no-untyped-def]
    """The app as a web worker whose pool holds two connections serves it."""
    settings.ROOT_URLCONF = __name__
    release.clear()
    inside.update(now=0, most=0)
    yield django_app({"OPTIONS": {"pool": {"min_size": 1, "max_size": 2, "timeout": 5.0}}})
    release.set()


def _scope(url: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": url,
        "raw_path": url.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
    }


async def get(app: Any, url: str, *, body_arrives: bool = True) -> int:
    sent: list[dict[str, Any]] = []
    incoming = [{"type": "http.request", "body": b"", "more_body": False}] if body_arrives else []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.sleep(3600)  # the client stays connected (or never finishes its body)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(_scope(url), receive, send)
    return sent[0]["status"]


async def until(condition: Any) -> None:
    """Poll the condition; a guard, not a measure: it fails only if it never becomes true."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


def test_requests_past_the_pool_wait_their_turn_and_are_all_answered(pooled) -> None:
    async def run() -> None:
        five = [asyncio.create_task(get(pooled, "/held/")) for _ in range(5)]
        await until(lambda: inside["now"] == 2)
        await asyncio.sleep(0.2)  # room for a third to get in, were it let in
        assert inside["most"] == 2
        release.set()
        assert await asyncio.gather(*five) == [200] * 5

    asyncio.run(run())
    assert inside["most"] == 2


def test_health_never_waits_for_a_turn(pooled) -> None:
    async def run() -> None:
        two = [asyncio.create_task(get(pooled, "/held/")) for _ in range(2)]
        await until(lambda: inside["now"] == 2)
        try:
            assert await asyncio.wait_for(get(pooled, "/api/v1/health/"), timeout=20) == 200
        finally:
            release.set()
        assert await asyncio.gather(*two) == [200] * 2

    asyncio.run(run())


def test_a_request_still_sending_its_body_takes_no_turn(pooled) -> None:
    async def run() -> None:
        stalled = [asyncio.create_task(get(pooled, "/held/", body_arrives=False)) for _ in range(2)]
        two = [asyncio.create_task(get(pooled, "/held/")) for _ in range(2)]
        await until(lambda: inside["now"] == 2)  # both turns taken by requests that arrived
        release.set()
        assert await asyncio.gather(*two) == [200] * 2
        for task in stalled:
            task.cancel()
        await asyncio.gather(*stalled, return_exceptions=True)

    asyncio.run(run())


def test_the_limit_is_the_pools_size_and_none_without_a_pool() -> None:
    assert pool_size({"OPTIONS": {"pool": {"min_size": 1, "max_size": 8}}}) == 8
    assert pool_size({"OPTIONS": {}}) is None
    assert pool_size({}) is None
