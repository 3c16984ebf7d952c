"""GET /sessions/{id}/restore/: the rolling summary plus the newest messages within a budget."""

from __future__ import annotations

from typing import Any

import pytest

from memoryhub.models import RollingSummary, Session, estimate_tokens
from tests.base import error_code, make_client, make_key, post_events


def restore(client: Any, session: str = "s1", **params: Any) -> Any:
    return client.get(f"/api/v1/sessions/{session}/restore/", params)


def conversation(client: Any, n: int, size: int = 40, session: str = "s1") -> None:
    events = [{"role": "user" if i % 2 else "assistant", "content": f"{i:03d} " + "x" * (size - 4)}
              for i in range(1, n + 1)]
    assert post_events(client, session, *events).status_code == 201


def message_cost(message: dict[str, Any]) -> int:
    return estimate_tokens(message["content"]) + 4


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
    assert restore(alice).json()["budget"] == settings.MEMORYHUB_RESTORE_BUDGET


def test_rolling_summary_leads_and_covered_messages_are_left_out(alice) -> None:
    conversation(alice, 10)
    session = Session.objects.get(external_id="s1")
    RollingSummary.objects.create(session=session, tenant_id=session.tenant_id,
                                  text="They agreed on Tuesday.", epoch=3, upper_sequence=7)
    body = restore(alice, budget=10_000).json()
    lead = body["messages"][0]
    assert lead["role"] == "system" and "They agreed on Tuesday." in lead["content"]
    assert body["summary_epoch"] == 3
    assert [m.get("sequence") for m in body["messages"][1:]] == [8, 9, 10]


def test_summary_is_dropped_when_it_alone_exceeds_the_budget(alice) -> None:
    conversation(alice, 4)
    session = Session.objects.get(external_id="s1")
    RollingSummary.objects.create(session=session, tenant_id=session.tenant_id, text="s" * 4000,
                                  epoch=1, upper_sequence=2)
    body = restore(alice, budget=40).json()
    assert body["summary_epoch"] is None
    assert all(m["role"] != "system" for m in body["messages"])
    assert body["tokens"] <= 40


def test_tool_call_without_content_is_spelled_out(alice) -> None:
    post_events(alice, "s1", {"role": "tool", "tool_name": "lookup", "tool_args": {"id": 7},
                              "tool_result": {"ok": True}})
    message = restore(alice).json()["messages"][0]
    assert message["content"] == 'Called lookup with {"id": 7}'
    assert message["tool_name"] == "lookup" and message["tool_result"] == {"ok": True}


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
