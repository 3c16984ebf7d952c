"""Retries against the real server: faults are injected in the client's transport, in front of it.

A lost response ("drop") lets the request reach the server and then fails the client's read, as
a reset connection would: the retried append must find its idempotency key and store nothing new.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from memoryhub_client import APIConnectionError, RateLimitError, ServiceUnavailableError

pytestmark = pytest.mark.django_db(transaction=True)

# "drop", "refuse", a status, (status, Retry-After), or None: pass this request through untouched
Fault = str | int | tuple[int, str] | None


def _local(fault: Fault) -> httpx.Response:
    status, retry_after = fault if isinstance(fault, tuple) else (fault, None)
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    body = {
        "error": {
            "code": "maintenance",
            "message": "Back soon.",
            "details": {"attempt": "injected"},
        }
    }
    return httpx.Response(int(status), json=body, headers=headers)


class _Script:
    """One fault per request in order, then pass-through; records every request's body."""

    def __init__(self, faults: list[Fault]) -> None:
        self.faults = list(faults)
        self.bodies: list[bytes] = []

    def next(self, request: httpx.Request) -> Fault | None:
        self.bodies.append(request.content)
        return self.faults.pop(0) if self.faults else None


class FlakyTransport(httpx.BaseTransport):
    def __init__(self, script: _Script) -> None:
        self.script, self.inner = script, httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        fault = self.script.next(request)
        if fault == "refuse":
            raise httpx.ConnectError("connection refused (injected)", request=request)
        if fault not in (None, "drop"):
            return _local(fault)
        response = self.inner.handle_request(request)
        if fault == "drop":
            response.read()
            response.close()
            raise httpx.ReadError(
                "connection reset after the request was sent (injected)", request=request
            )
        return response

    def close(self) -> None:
        # Kept-alive connections hold a server thread, and that thread a database connection.
        self.inner.close()


class AsyncFlakyTransport(httpx.AsyncBaseTransport):
    def __init__(self, script: _Script) -> None:
        self.script, self.inner = script, httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        fault = self.script.next(request)
        if fault == "refuse":
            raise httpx.ConnectError("connection refused (injected)", request=request)
        if fault not in (None, "drop"):
            return _local(fault)
        response = await self.inner.handle_async_request(request)
        if fault == "drop":
            await response.aread()
            await response.aclose()
            raise httpx.ReadError(
                "connection reset after the request was sent (injected)", request=request
            )
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def flaky(hub: Any, key: str, faults: list[Fault], **options: Any) -> tuple[Any, _Script]:
    script = _Script(faults)
    transport = FlakyTransport(script) if hub.kind == "sync" else AsyncFlakyTransport(script)
    return hub(key, transport=transport, **options), script


def test_append_whose_response_was_lost_is_retried_and_stored_once(
    hub: Any, keys: dict[str, str]
) -> None:
    alice, script = flaky(hub, keys["alice"], ["drop", "drop"])
    event = alice.append_event("s1", "user", "Exactly once, please.")
    assert len(script.bodies) == 3 and script.bodies[0] == script.bodies[1] == script.bodies[2]
    # the third attempt found the first's event
    assert (event["sequence"], event["created"]) == (1, 0)
    events = list(alice.iter_events("s1"))
    assert [e["content"] for e in events] == ["Exactly once, please."]


def test_bulk_append_and_remember_are_retried_without_duplicates(
    hub: Any, keys: dict[str, str]
) -> None:
    alice, script = flaky(hub, keys["alice"], ["drop", 503, None, "drop", "refuse", None])
    bulk = alice.append_events(
        "s1", [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]
    )
    assert bulk["created"] == 0 and [e["sequence"] for e in bulk["events"]] == [1, 2]
    stored = alice.remember("s1", ["three", "four"])
    assert [e["sequence"] for e in stored["events"]] == [3, 4]
    assert len(script.bodies) == 6
    assert [e["content"] for e in alice.iter_events("s1")] == ["one", "two", "three", "four"]


def test_503_and_429_are_retried_honouring_retry_after(hub: Any, keys: dict[str, str]) -> None:
    alice, script = flaky(hub, keys["alice"], [(503, "0"), (429, "0.01"), 503])
    # not idempotent: refusals are safe to retry
    note = alice.create_note("Written after three refusals.")
    assert len(script.bodies) == 4
    assert (
        alice.list_notes().count == 1 and alice.get_note(note["id"])["content"] == note["content"]
    )


def test_exhausted_retries_raise_with_the_envelope(hub: Any, keys: dict[str, str]) -> None:
    alice, script = flaky(hub, keys["alice"], [503] * 5, max_retries=2)
    with pytest.raises(ServiceUnavailableError) as unavailable:
        alice.stats()
    error = unavailable.value
    assert (error.status, error.code, error.message, error.details) == (
        503,
        "maintenance",
        "Back soon.",
        {"attempt": "injected"},
    )
    assert len(script.bodies) == 3


def test_long_retry_after_is_not_waited_for(hub: Any, keys: dict[str, str]) -> None:
    alice, script = flaky(hub, keys["alice"], [(429, "3600")])
    with pytest.raises(RateLimitError) as limited:
        alice.stats()
    assert (limited.value.status, limited.value.retry_after, len(script.bodies)) == (429, 3600.0, 1)


def test_lost_response_of_a_plain_post_is_not_resent(hub: Any, keys: dict[str, str]) -> None:
    alice, script = flaky(hub, keys["alice"], ["drop"])
    with pytest.raises(APIConnectionError) as lost:
        alice.create_note("Maybe stored.")
    assert lost.value.status is None and lost.value.code == "connection_error"
    assert len(script.bodies) == 1
    assert [n["content"] for n in alice.list_notes()] == ["Maybe stored."]  # stored once, not twice


def test_refused_connection_is_retried_for_any_request(hub: Any, keys: dict[str, str]) -> None:
    alice, script = flaky(hub, keys["alice"], ["refuse", "refuse"])
    alice.create_note("Stored after two refused connections.")
    assert len(script.bodies) == 3 and alice.list_notes().count == 1
