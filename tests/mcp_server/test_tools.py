"""Every MCP tool over streamable HTTP: what it does, that it answers what the REST endpoint it
mirrors answers (same validation, same domain function, same body), and its errors' REST codes."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from memoryhub.models import Session
from memoryhub.plumbing.counters import FLUSH_SECONDS
from tests.base import add_memories, make_client, make_key, make_tenant
from tests.mcp_server.conftest import Mcp

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice() -> dict[str, Any]:
    tenant = make_tenant("alice")
    raw = make_key(tenant)
    return {"tenant": tenant, "key": raw, "rest": make_client(raw)}


def test_search_and_context_answer_what_rest_answers(http_mcp: Mcp, alice: dict[str, Any]) -> None:
    http_mcp.call(
        alice["key"],
        "memory_remember",
        {
            "session": "chat",
            "user_id": "ann",
            "events": [
                {"role": "user", "content": "The wifi password at the cabin is moose-42."},
                {"role": "user", "content": "We take the ferry at 7:15 on Saturdays."},
            ],
        },
    )
    args = {"query": "cabin wifi password", "scope": "account", "top_k": 3, "mode": "hybrid"}
    search, context = http_mcp.calls(
        alice["key"],
        [
            ("memory_search", args),
            ("memory_context", {"session": "chat", "query": "ferry time", "budget": 300}),
        ],
    )
    rest_search = alice["rest"].post("/api/v1/search/", args, format="json")
    rest_context = alice["rest"].post(
        "/api/v1/context/", {"session": "chat", "query": "ferry time", "budget": 300}, format="json"
    )
    assert search.data["results"][0]["text"] == "The wifi password at the cabin is moose-42."
    assert search.data == rest_search.json()
    # The text a model reads is one line a result (date, who, text, score), the JSON stays
    # structured.
    lines = search.text.splitlines()
    assert len(lines) == len(search.data["results"])
    assert (
        lines[0].startswith("1. [")
        and "user · ann] The wifi password at the cabin is moose-42. (" in lines[0]
    )
    assert len(search.text) * 3 <= len(json.dumps(search.data)), (
        len(search.text),
        len(json.dumps(search.data)),
    )
    assert context.data == rest_context.json()
    assert "ferry at 7:15" in context.text and context.data["tokens"] <= 300
    # The context's text is its Markdown block, one line an item; the JSON stays structured.
    assert context.text == context.data["markdown"]
    items = [line for line in context.text.splitlines() if line.startswith("- ")]
    assert len(items) == len(context.data["items"]) > 0
    assert len(context.text) * 2 <= len(json.dumps(context.data)), (
        len(context.text),
        len(json.dumps(context.data)),
    )


def test_options_left_to_rest_are_refused_by_name(http_mcp: Mcp, alice: dict[str, Any]) -> None:
    """explain and group_by are REST's (/search/): the tool says so and stores nothing."""
    explain, grouped = http_mcp.calls(
        alice["key"],
        [
            ("memory_search", {"query": "cabin wifi", "explain": True}),
            ("memory_search", {"query": "cabin", "group_by": "session", "hits_per_session": 2}),
        ],
    )
    for result, name in ((explain, "explain"), (grouped, "group_by")):
        assert result.code == "unknown_field"
        assert "REST API only" in result.data["error"]["details"]["fields"][name][0]["message"]


def test_regex_search_answers_what_rest_answers(http_mcp: Mcp, alice: dict[str, Any]) -> None:
    http_mcp.call(
        alice["key"],
        "memory_remember",
        {
            "session": "chat",
            "events": [
                {"role": "user", "content": "Invoice INV-1042 went to ops@zetacorp.io."},
                {"role": "user", "content": "INV-7 is only a draft."},
            ],
        },
    )
    args = {"query": r"INV-\d{4}", "mode": "regex", "scope": "account"}
    found, bad = http_mcp.calls(
        alice["key"],
        [("memory_search", args), ("memory_search", {"query": "(unclosed", "mode": "regex"})],
    )
    assert [r["text"] for r in found.data["results"]] == [
        "Invoice INV-1042 went to ops@zetacorp.io."
    ]
    assert found.data == alice["rest"].post("/api/v1/search/", args, format="json").json()
    assert bad.code == "invalid_regex"


def test_browse_and_stats(http_mcp: Mcp, alice: dict[str, Any]) -> None:
    events = [{"role": "user", "content": f"message {i}"} for i in range(5)]
    http_mcp.call(alice["key"], "memory_remember", {"session": "chat", "events": events})
    first, rest, stats, bad, unknown = http_mcp.calls(
        alice["key"],
        [
            ("memory_browse", {"session": "chat", "limit": 3}),
            ("memory_browse", {"session": "chat", "limit": 3, "offset": 3}),
            ("memory_stats", {}),
            ("memory_browse", {"role": "robot"}),
            ("memory_stats", {"tenant": "bob"}),
        ],
    )
    assert [e["content"] for e in first.data["results"]] == ["message 0", "message 1", "message 2"]
    assert first.data["count"] == 5 and first.data["next_offset"] == 3
    assert [e["content"] for e in rest.data["results"]] == ["message 3", "message 4"]
    assert rest.data["next_offset"] is None and rest.data["results"][0]["session"] == "chat"
    assert stats.data == alice["rest"].get("/api/v1/stats/").json()
    assert stats.data["sessions"] == 1 and stats.data["events"] == 5
    assert bad.code == "invalid_parameter"  # as GET /browse/?role=robot answers
    # an argument a tool does not take is refused, not ignored
    assert unknown.code == "unknown_field"


def test_note_lifecycle(http_mcp: Mcp, alice: dict[str, Any]) -> None:
    created, got, updated, searched, deleted, gone = http_mcp.calls(
        alice["key"],
        [
            (
                "memory_note",
                {
                    "action": "create",
                    "note_id": "tea",
                    "content": "Ann drinks green tea.",
                    "tags": ["Drinks"],
                },
            ),
            ("memory_note", {"action": "get", "note_id": "tea"}),
            (
                "memory_note",
                {"action": "update", "note_id": "tea", "content": "Ann drinks oolong now."},
            ),
            ("memory_search", {"query": "oolong", "kinds": ["note"], "scope": "account"}),
            ("memory_note", {"action": "delete", "note_id": "tea"}),
            ("memory_note", {"action": "get", "note_id": "tea"}),
        ],
    )
    assert created.data["id"] == "tea" and created.data["tags"] == ["drinks"]
    assert {k: v for k, v in got.data.items()} == {k: v for k, v in created.data.items()}
    assert updated.data["content"] == "Ann drinks oolong now." and updated.data["created"] is False
    assert [r["text"] for r in searched.data["results"]] == ["Ann drinks oolong now."]
    assert deleted.data == {"id": "tea", "deleted": True}
    assert gone.code == "note_not_found"


def test_note_errors_carry_rest_codes(http_mcp: Mcp, alice: dict[str, Any]) -> None:
    results = http_mcp.calls(
        alice["key"],
        [
            ("memory_note", {"action": "create", "content": "   "}),
            ("memory_note", {"action": "create", "note_id": "x", "content": "a"}),
            ("memory_note", {"action": "create", "note_id": "x", "content": "b"}),
            ("memory_note", {"action": "update", "content": "no id"}),
            ("memory_note", {"action": "rename", "note_id": "x"}),
            ("memory_note", {"action": "delete", "note_id": "x", "content": "extra"}),
            ("memory_note", {"action": "create", "content": "a", "colour": "red"}),
        ],
    )
    blank, _, exists, no_id, bad_action, extra, unknown = results
    assert blank.code == "empty_content"
    assert exists.code == "note_exists"
    assert (
        no_id.code == "validation_error" and "note_id" in no_id.data["error"]["details"]["fields"]
    )
    assert (
        bad_action.code == "validation_error"
        and "action" in bad_action.data["error"]["details"]["fields"]
    )
    assert extra.code == "unknown_field" and unknown.code == "unknown_field"


def test_fact_upsert_get_delete(http_mcp: Mcp, alice: dict[str, Any]) -> None:
    fact = {
        "action": "upsert",
        "content": "Ann prefers aisle seats.",
        "category": "travel",
        "key": "seat",
    }
    first, second = http_mcp.calls(
        alice["key"],
        [("memory_fact", fact), ("memory_fact", {**fact, "content": "Ann prefers window seats."})],
    )
    assert first.data["created"] is True and second.data["created"] is False
    assert second.data["id"] == first.data["id"]
    fact_id = first.data["id"]
    got, history, deleted, gone, bad = http_mcp.calls(
        alice["key"],
        [
            ("memory_fact", {"action": "get", "fact_id": fact_id}),
            ("memory_fact", {"action": "history", "fact_id": fact_id}),
            ("memory_fact", {"action": "delete", "fact_id": fact_id}),
            ("memory_fact", {"action": "get", "fact_id": fact_id}),
            ("memory_fact", {"action": "upsert", "content": "x", "lifetime": "forever"}),
        ],
    )
    (no_action,) = http_mcp.calls(alice["key"], [("memory_fact", {"content": "Ann prefers tea."})])
    # The error says what to send instead, not "may not be null".
    assert no_action.code == "validation_error"
    assert no_action.data["error"]["details"]["fields"]["action"] == [
        {
            "code": "required",
            "message": "This field is required: one of upsert, get, history, delete.",
        }
    ]
    assert no_action.data["error"]["hint"].startswith(
        "action: send one of upsert, get, history, delete"
    )
    assert "lifetime: send one of long_term, short_term, conversation" in bad.data["error"]["hint"]
    assert [v["content"] for v in history.data["versions"]] == [
        "Ann prefers aisle seats.",
        "Ann prefers window seats.",
    ]
    rest = alice["rest"].get(f"/api/v1/facts/{fact_id}/")
    assert rest.status_code == 404  # deleted through MCP, gone for REST too
    assert got.data["content"] == "Ann prefers window seats." and got.data["key"] == "seat"
    assert deleted.data == {"id": str(fact_id), "deleted": True}
    assert gone.code == "fact_not_found" and bad.code == "validation_error"


def test_scratchpad_and_summary_expand(http_mcp: Mcp, alice: dict[str, Any]) -> None:
    http_mcp.call(
        alice["key"],
        "memory_remember",
        {"session": "chat", "events": [{"role": "user", "content": "hi"}]},
    )
    memories = add_memories(alice["tenant"], "chat")
    items = [{"key": "plan", "value": "book the ferry"}, {"key": "open", "value": "which day?"}]
    written, read, too_long, expanded, missing = http_mcp.calls(
        alice["key"],
        [
            ("scratchpad_write", {"session": "chat", "items": items}),
            ("scratchpad_read", {"session": "chat"}),
            (
                "scratchpad_write",
                {"session": "chat", "items": [{"key": "k", "value": "v" * 10_000}]},
            ),
            ("summary_expand", {"summary_id": memories["root"].pk, "events_limit": 5}),
            ("summary_expand", {"summary_id": 10**9}),
        ],
    )
    assert (
        written.data["items"] == items
        and read.data == alice["rest"].get("/api/v1/sessions/chat/scratchpad/").json()
    )
    assert too_long.code == "item_too_long"
    assert read.data["items"] == items  # the refused write changed nothing
    assert (
        expanded.data
        == alice["rest"].get(f"/api/v1/summaries/{memories['root'].pk}/?events_limit=5").json()
    )
    assert [c["text"] for c in expanded.data["children"]] == [
        "Leaf 1: quince talk",
        "Leaf 2: quince talk",
    ]
    assert missing.code == "summary_not_found"


def test_remember_is_idempotent_and_places_the_session(
    http_mcp: Mcp, alice: dict[str, Any]
) -> None:
    events = [{"role": "user", "content": "hello", "idempotency_key": "m-1"}]
    args = {
        "session": "chat",
        "user_id": "ann",
        "agent": "concierge",
        "title": "Trip",
        "events": events,
    }
    first, again, empty, archived = http_mcp.calls(
        alice["key"],
        [
            ("memory_remember", args),
            ("memory_remember", args),
            ("memory_remember", {"session": "chat", "events": []}),
            ("memory_remember", {"session": "bad id!", "events": events}),
        ],
    )
    assert first.data["created"] == 1 and again.data["created"] == 0
    assert again.data["events"][0]["id"] == first.data["events"][0]["id"]
    session = Session.objects.get(external_id="chat")
    assert (session.user_id, session.agent, session.title, session.event_count) == (
        "ann",
        "concierge",
        "Trip",
        1,
    )
    assert empty.is_error and archived.is_error


def test_scopes_of_the_key_apply(http_mcp: Mcp, alice: dict[str, Any]) -> None:
    read_only = make_key(alice["tenant"], scopes=("read",))
    stats, remember, note_get, note_create = http_mcp.calls(
        read_only,
        [
            ("memory_stats", {}),
            ("memory_remember", {"session": "chat", "events": [{"role": "user", "content": "hi"}]}),
            ("memory_note", {"action": "get", "note_id": "nope"}),
            ("memory_note", {"action": "create", "content": "hi"}),
        ],
    )
    assert not stats.is_error
    assert remember.code == "insufficient_scope" and note_create.code == "insufficient_scope"
    assert note_get.code == "note_not_found"  # reading is allowed
    assert not Session.objects.filter(external_id="chat").exists()


def test_search_and_context_calls_are_counted_like_requests(
    http_mcp: Mcp, alice: dict[str, Any]
) -> None:
    from memoryhub.models import ApiUsage

    http_mcp.calls(
        alice["key"],
        [
            ("memory_search", {"query": "x"}),
            ("memory_context", {"query": "x"}),
            ("memory_search", {"query": ""}),
        ],
    )
    expected = {"search": (2, 1), "context": (1, 0)}
    # The server writes its counts every counters.FLUSH_SECONDS (a thread of its own).
    deadline = time.monotonic() + FLUSH_SECONDS + 30
    while True:
        counts = {
            row.name: (row.requests, row.errors)
            for row in ApiUsage.objects.filter(tenant=alice["tenant"])
        }
        if counts == expected or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert counts == expected


def test_an_unknown_argument_names_the_one_meant(http_mcp: Mcp, alice: dict[str, Any]) -> None:
    """A model that sends OpenAI's `messages` is told to send `events`."""
    wrong = http_mcp.call(
        alice["key"],
        "memory_remember",
        {"session": "chat", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert wrong.code == "unknown_field" and "Did you mean 'events'?" in wrong.text


def test_search_text_leads_with_the_synthesised_answer() -> None:
    from retrieval.mcp_server.server import search_text

    result = {
        "text": "The wifi password is moose-42.",
        "role": "user",
        "created_at": "2026-05-01T10:00:00Z",
        "score": 0.9,
        "kind": "event",
        "metadata": {},
    }
    answered = {
        "results": [result],
        "synthesis": {
            "answer": "It is moose-42.",
            "citations": [{"index": 0, "chunk_id": 5}],
            "model": "m",
        },
    }
    assert search_text(answered).splitlines() == [
        "Answer: It is moose-42. (from [1])",
        "1. [2026-05-01 user] The wifi password is moose-42. (0.90)",
    ]
    failed = {
        "results": [],
        "synthesis": {"error": {"code": "llm_timeout", "message": "Too slow."}, "model": "m"},
    }
    assert search_text(failed).splitlines() == [
        "No synthesised answer: Too slow.",
        "No stored memory matches this.",
    ]
