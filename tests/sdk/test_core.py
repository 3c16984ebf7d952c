"""The client's transport-agnostic core, without a server: retry decisions, flows, requests
built."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from memoryhub_client import AsyncMemoryHub, MemoryHub, ServerError
from memoryhub_client._agent import message_event
from memoryhub_client._core import (
    Call,
    RetryPolicy,
    Send,
    Sleep,
    as_is,
    exchange,
    next_page,
    page_of,
    path,
)
from memoryhub_client._ops_retrieval import recall
from memoryhub_client._ops_sessions import append_event, append_events
from memoryhub_client.client import _api_root

POLICY = RetryPolicy(max_retries=3, backoff=1.0, max_backoff=8.0, max_retry_after=60.0)
GET = Call("GET", "stats/", as_is, idempotent=True)
POST = Call("POST", "notes/", as_is, json={"content": "x"})
REQUEST = httpx.Request("GET", "http://test/")


def reply(status: int, headers: dict[str, str] | None = None, json: Any = None) -> httpx.Response:
    return httpx.Response(
        status, headers=headers, json=json if json is not None else {}, request=REQUEST
    )


@pytest.mark.parametrize(
    "call, outcome, retried",
    [
        (POST, reply(503), True),
        (POST, reply(429), True),
        (POST, httpx.ConnectError("refused"), True),  # never reached the server
        (POST, httpx.ReadError("reset"), False),  # may have been processed: not resent
        (GET, httpx.ReadError("reset"), True),
        (POST, reply(502), False),
        (GET, reply(504), True),
        (GET, reply(500), False),
        (GET, reply(400), False),
        (GET, reply(404), False),
        (Call("GET", "ready/", as_is, retry=False), reply(503), False),
    ],
)
def test_what_is_retried(call: Call[Any], outcome: Any, retried: bool) -> None:
    assert (POLICY.delay(0, call, outcome) is not None) is retried


def test_retry_after_seconds_and_dates_are_honoured_up_to_a_limit() -> None:
    assert POLICY.delay(0, POST, reply(503, {"Retry-After": "2.5"})) == 2.5
    soon = datetime.now(UTC) + timedelta(seconds=30)
    assert (
        25
        <= POLICY.delay(0, POST, reply(429, {"Retry-After": format_datetime(soon, usegmt=True)}))
        <= 30
    )
    # give up rather than hang
    assert POLICY.delay(0, POST, reply(429, {"Retry-After": "61"})) is None
    assert POLICY.delay(3, POST, reply(503, {"Retry-After": "1"})) is None  # out of attempts


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    for attempt, (low, high) in enumerate([(0.5, 1), (1, 2), (2, 4), (4, 8)]):
        delays = [RetryPolicy(max_retries=9).delay(attempt, GET, reply(503)) for _ in range(50)]
        assert all(low * 0.5 <= d <= high * 0.5 for d in delays), (attempt, delays)  # backoff 0.5 s
    assert all(POLICY.delay(2, GET, reply(503)) <= 4.0 for _ in range(50))
    assert all(
        4.0 <= RetryPolicy(max_retries=99).delay(20, GET, reply(503)) <= 8.0 for _ in range(50)
    )


def test_exchange_sends_the_same_request_again_after_sleeping() -> None:
    call = append_event("s1", "user", "hello")
    flow = exchange(call, POLICY)
    first = next(flow)
    assert isinstance(first, Send) and first.call is call
    assert flow.send(reply(503, {"Retry-After": "2"})) == Sleep(2.0)
    second = flow.send(None)
    assert isinstance(second, Send) and second.call.json == first.call.json  # same idempotency key
    with pytest.raises(StopIteration) as done:
        flow.send(reply(201, json={"sequence": 1}))
    assert done.value.value == {"sequence": 1}


def test_exchange_raises_the_envelope_or_a_readable_error() -> None:
    flow = exchange(GET, RetryPolicy(max_retries=0))
    next(flow)
    with pytest.raises(ServerError) as failed:
        flow.send(httpx.Response(502, text="<html>Bad gateway</html>", request=REQUEST))
    assert (failed.value.status, failed.value.code, failed.value.message) == (
        502,
        "http_502",
        "<html>Bad gateway</html>",
    )


def test_appends_carry_one_idempotency_key_per_event_unless_given() -> None:
    single = append_event("s1", "user", "hi")
    assert len(single.json["idempotency_key"]) == 32 and single.idempotent
    assert append_event("s1", "user", "hi", idempotency_key="k1").json["idempotency_key"] == "k1"
    bulk = append_events(
        "s1",
        [
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b", "idempotency_key": "mine"},
        ],
    )
    keys = [e["idempotency_key"] for e in bulk.json["events"]]
    assert keys[1] == "mine" and len(set(keys)) == 2


def test_messages_from_chat_apis_become_events() -> None:
    assert message_event("plain text")["role"] == "user"
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    ]
    tool_call = message_event({"role": "assistant", "content": None, "tool_calls": calls})
    # The service takes it as sent (and gives it back equal): nothing is converted.
    assert (
        tool_call["tool_calls"] == calls
        and tool_call["content"] is None
        and "tool_name" not in tool_call
    )
    anthropic = [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "t1", "name": "n", "input": {}},
    ]
    assert message_event({"role": "assistant", "content": anthropic})["content"] == anthropic
    # A tool call of another form is converted as before.
    legacy = message_event(
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "function": {"name": "get_weather"}, "index": 0}],
        }
    )
    assert legacy["tool_name"] == "get_weather" and legacy["tool_args"][0]["id"] == "c1"
    parts = message_event(
        {
            "role": "developer",
            "content": [
                {"type": "text", "text": "Be"},
                {"type": "image_url", "image_url": {}},
                {"type": "text", "text": "brief."},
            ],
        }
    )
    assert (parts["role"], parts["content"]) == ("system", "Be\nbrief.")
    tool = message_event(
        {
            "role": "tool",
            "content": "21C",
            "tool_call_id": "c1",
            "metadata": {"x": 1},
            "refusal": None,
            "annotations": [],
        }
    )
    assert tool["tool_call_id"] == "c1" and tool["metadata"] == {"annotations": [], "x": 1}


def test_recall_sends_user_id_only_when_given() -> None:
    assert recall("where?", session="s1").json == {"session": "s1", "query": "where?"}
    with_user = recall("where?", user_id="u1", budget=800)
    assert with_user.json == {"query": "where?", "user_id": "u1", "budget": 800}
    assert with_user.parse({"markdown": "## Relevant Memory"}) == "## Relevant Memory"


def test_paths_quote_ids_and_pages_follow_the_next_query() -> None:
    assert path("sessions", "a/b c", "events") == "sessions/a%2Fb%20c/events/"
    first = Call("GET", "notes/", page_of, params=(("tags", "x"),))
    page = page_of(
        {
            "count": 3,
            "next": "http://proxy.internal/api/v1/notes/?limit=1&offset=1&tags=x",
            "results": [{"id": "n1"}],
        }
    )
    following = next_page(first, page)
    assert following is not None and following.path == "notes/"
    assert dict(following.params) == {"limit": "1", "offset": "1", "tags": "x"}
    assert next_page(first, page_of({"next": None, "results": [{}]})) is None


def test_service_url_may_be_given_with_or_without_the_api_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert (
        _api_root("http://h:8000") == _api_root("http://h:8000/api/v1/") == "http://h:8000/api/v1/"
    )
    monkeypatch.setenv("MEMORYHUB_URL", "https://memory.example")
    assert _api_root(None) == "https://memory.example/api/v1/"


def test_both_clients_expose_the_same_methods_with_the_same_signatures() -> None:
    sync, asyn = MemoryHub("k"), AsyncMemoryHub("k")
    names = [n for n in dir(MemoryHub) if not n.startswith("_") and n not in {"close"}]
    assert (
        len(names) == 89
        and "remember" in names
        and "iter_events" in names
        and "fact_history" in names
    )
    for name in names:
        assert inspect.signature(getattr(sync, name)) == inspect.signature(getattr(asyn, name)), (
            name
        )
        assert inspect.iscoroutinefunction(getattr(asyn, name)) or inspect.isasyncgenfunction(
            getattr(asyn, name)
        )
    # The client's state, the flow's first argument, is not part of the public signature.
    assert list(inspect.signature(sync.remember).parameters)[:2] == ["session", "messages"]
    sync.close()
