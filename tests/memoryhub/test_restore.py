"""GET /sessions/{id}/restore/: the rolling summary plus the newest messages within a budget."""

from __future__ import annotations

from typing import Any

import pytest

from memoryhub.models import RollingSummary, Session, estimate_tokens
from memoryhub.restore import DEFAULT_BUDGET
from tests.base import error_code, make_client, make_key, post_events


def restore(client: Any, session: str = "s1", **params: Any) -> Any:
    return client.get(f"/api/v1/sessions/{session}/restore/", params)


def conversation(client: Any, n: int, size: int = 40, session: str = "s1") -> None:
    events = [
        {"role": "user" if i % 2 else "assistant", "content": f"{i:03d} " + "x" * (size - 4)}
        for i in range(1, n + 1)
    ]
    assert post_events(client, session, *events).status_code == 201


def message_cost(message: dict[str, Any]) -> int:
    return estimate_tokens(message["content"]) + 4  # plain messages: content and the overhead


def test_everything_fits_in_a_large_budget(alice) -> None:
    conversation(alice, 6)
    body = restore(alice, budget=10_000).json()
    assert [m["sequence"] for m in body["messages"]] == [1, 2, 3, 4, 5, 6]
    assert body["truncated"] is False and body["summary_epoch"] is None
    assert body["tokens"] == sum(message_cost(m) for m in body["messages"])
    assert body["messages"][0]["role"] == "user" and body["messages"][1]["role"] == "assistant"


def test_budget_keeps_the_newest_messages_in_chronological_order(alice) -> None:
    conversation(alice, 20, size=40)  # 10 tokens + 4 overhead each
    body = restore(alice, budget=50).json()
    assert [m["sequence"] for m in body["messages"]] == [18, 19, 20]
    assert body["tokens"] == 42 and body["tokens"] <= body["budget"] == 50
    assert body["truncated"] is True


@pytest.mark.parametrize("budget", [1, 13, 14, 100, 333])
def test_never_exceeds_the_budget(alice, budget: int) -> None:
    conversation(alice, 30, size=37)
    body = restore(alice, budget=budget).json()
    assert body["tokens"] <= budget
    assert sum(message_cost(m) for m in body["messages"]) == body["tokens"]
    sequences = [m["sequence"] for m in body["messages"]]
    assert sequences == sorted(sequences)
    assert not sequences or sequences[-1] == 30


def test_default_budget(alice, settings) -> None:
    conversation(alice, 3)
    assert restore(alice).json()["budget"] == DEFAULT_BUDGET


def test_a_summary_leads_only_when_the_budget_needs_it(alice) -> None:
    conversation(alice, 10)  # 14 tokens a message
    session = Session.objects.get(external_id="s1")
    RollingSummary.objects.create(
        session=session,
        tenant_id=session.tenant_id,
        text="They agreed on Tuesday.",
        epoch=3,
        upper_sequence=7,
    )
    whole = restore(alice, budget=100_000).json()
    assert [m["sequence"] for m in whole["messages"]] == list(range(1, 11))
    assert whole["summary_epoch"] is None and whole["truncated"] is False and whole["omitted"] == 0
    tight = restore(alice, budget=100).json()
    lead = tight["messages"][0]
    assert lead["role"] == "system" and "They agreed on Tuesday." in lead["content"]
    assert lead["summaries"] == [{"session": "s1", "epoch": 3, "upper_sequence": 7}]
    assert tight["summary_epoch"] == 3 and tight["truncated"] is True and tight["omitted"] == 7
    assert [m.get("sequence") for m in tight["messages"][1:]] == [8, 9, 10]
    assert tight["tokens"] == estimate_tokens(lead["content"]) + 3 * 14 <= 100


def test_summary_is_dropped_when_it_alone_exceeds_the_budget(alice) -> None:
    conversation(alice, 4)
    session = Session.objects.get(external_id="s1")
    RollingSummary.objects.create(
        session=session, tenant_id=session.tenant_id, text="s" * 4000, epoch=1, upper_sequence=2
    )
    body = restore(alice, budget=40).json()
    assert body["summary_epoch"] is None
    assert all(m["role"] != "system" for m in body["messages"])
    assert body["tokens"] <= 40 and body["truncated"] is True


def test_messages_are_the_stored_events_verbatim(alice) -> None:
    calls = [
        {"id": "call_1", "name": "weather", "arguments": '{"city": "Lisbon"}'},
        {"id": "call_2", "name": "clock", "arguments": {"tz": "UTC"}},
    ]
    stored = [
        {"role": "user", "content": "Weather and time?", "metadata": {"attachments": ["a.png"]}},
        {"role": "assistant", "content": "", "tool_calls": calls, "metadata": {"model": "m1"}},
        {"role": "tool", "content": "", "tool_call_id": "call_1", "tool_result": {"c": 21}},
        {
            "role": "tool",
            "tool_name": "lookup",
            "tool_args": {"id": 7},
            "tool_result": {"ok": True},
        },
    ]
    assert post_events(alice, "s1", *stored).status_code == 201
    messages = restore(alice, budget=100_000).json()["messages"]
    assert [m["content"] for m in messages] == ["Weather and time?", "", "", ""]  # never made up
    assert messages[0]["metadata"] == {"attachments": ["a.png"]}
    assert messages[1]["tool_calls"] == calls and messages[1]["metadata"] == {"model": "m1"}
    assert messages[2]["tool_call_id"] == "call_1" and messages[2]["tool_result"] == {"c": 21}
    assert messages[3]["tool_name"] == "lookup" and messages[3]["tool_args"] == {"id": 7}
    assert messages[3]["tool_result"] == {"ok": True} and messages[3]["tool_calls"] is None
    events = alice.get("/api/v1/sessions/s1/events/").json()["results"]
    for message, event in zip(messages, events, strict=True):
        assert {k: event[k] for k in message} == message  # the same fields as the event log


def test_tool_fields_count_towards_the_budget(alice) -> None:
    big = {"id": "c1", "name": "search", "arguments": {"q": "x" * 400}}
    post_events(
        alice,
        "s1",
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [big]},
    )
    body = restore(alice, budget=100).json()
    assert [m["sequence"] for m in body["messages"]] == []  # the call alone costs more than 100
    assert body["truncated"] is True and body["omitted"] == 2
    assert len(restore(alice, budget=1000).json()["messages"]) == 2


def test_long_sessions_are_read_in_batches(alice) -> None:
    conversation(alice, 450, size=8)  # more than one batch of 200
    body = restore(alice, budget=100_000).json()
    assert [m["sequence"] for m in body["messages"]] == list(range(1, 451))


def test_empty_session_restores_to_nothing(alice) -> None:
    alice.post("/api/v1/sessions/", {"id": "s1"}, format="json")
    body = restore(alice).json()
    assert body["messages"] == [] and body["tokens"] == 0 and body["truncated"] is False


@pytest.mark.parametrize("budget", ["0", "-5", "lots", "2000000"])
def test_bad_budget_is_400(alice, budget: str) -> None:
    conversation(alice, 1)
    response = restore(alice, budget=budget)
    assert response.status_code == 400
    assert error_code(response) == "invalid_parameter"


def test_unknown_session_is_404(alice) -> None:
    response = restore(alice, "ghost")
    assert response.status_code == 404
    assert error_code(response) == "session_not_found"
    assert not Session.objects.exists()


def test_restore_is_tenant_and_workspace_confined(alice, bob, cast) -> None:
    alice.post("/api/v1/sessions/", {"id": "s1", "workspace": "w2"}, format="json")
    conversation(alice, 2)
    assert restore(bob).status_code == 404
    limited = make_client(make_key(cast.alice_tenant, workspace="w1"))
    assert restore(limited).status_code == 404
    assert len(restore(alice).json()["messages"]) == 2


def test_restore_query_count_is_bounded(alice, django_assert_max_num_queries) -> None:
    conversation(alice, 100)
    restore(alice)
    with django_assert_max_num_queries(4):  # key, session, summary, events
        restore(alice, budget=100_000)
