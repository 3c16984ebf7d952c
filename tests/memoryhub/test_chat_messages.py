"""Chat-API messages as sent (docs/event-log.md#chat-messages): OpenAI- and Anthropic-shaped
messages are appended as they are, searched by their text, and given back equal with
?format=openai|anthropic (memoryhub.chat)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryhub.event_log import MAX_CONTENT_CHARS
from memoryhub.models import Event
from retrieval.models import Chunk
from tests.base import make_client, make_key, make_tenant, post_events, search_texts

OPENAI = [
    {"role": "system", "content": "You are a travel agent."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Weather in Reykjavik?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/map.png"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Reykjavik"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "8°C and rain"},
    {"role": "user", "name": "dana", "content": "Thanks"},
    {"role": "assistant", "content": "Bring a raincoat."},
]

ANTHROPIC = [
    {"role": "user", "content": "What is the status of order A-77?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look it up."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "lookup_order",
                "input": {"order": "A-77"},
            },
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "shipped on 3 May"}],
            },
        ],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "It shipped on 3 May."}]},
]


def listed(client: Any, session: str, fmt: str, **params: Any) -> Any:
    return client.get(f"/api/v1/sessions/{session}/events/", {"format": fmt, **params})


def restored(client: Any, session: str, fmt: str, **params: Any) -> Any:
    return client.get(f"/api/v1/sessions/{session}/restore/", {"format": fmt, **params})


def test_openai_messages_come_back_equal(alice) -> None:
    response = post_events(alice, "s1", *OPENAI)
    assert response.status_code == 201, response.content
    assert listed(alice, "s1", "openai").json()["results"] == OPENAI
    assert listed(alice, "s1", "openai", limit=2).json()["results"] == OPENAI[-2:]
    body = restored(alice, "s1", "openai").json()
    assert body["messages"] == OPENAI and "system" not in body


def test_anthropic_messages_come_back_equal(alice) -> None:
    response = post_events(alice, "s1", *ANTHROPIC)
    assert response.status_code == 201, response.content
    assert listed(alice, "s1", "anthropic").json()["results"] == ANTHROPIC
    body = restored(alice, "s1", "anthropic").json()
    assert body["messages"] == ANTHROPIC and body["system"] is None


def test_the_native_shape_is_unchanged_and_holds_the_text(alice) -> None:
    post_events(alice, "s1", *ANTHROPIC)
    native = alice.get("/api/v1/sessions/s1/events/").json()["results"]
    assert [e["role"] for e in native] == ["user", "assistant", "tool", "assistant"]
    assert native[1]["content"] == "Let me look it up."
    assert native[1]["tool_calls"] == [
        {"id": "toolu_1", "name": "lookup_order", "arguments": {"order": "A-77"}}
    ]
    assert native[2]["content"] == "shipped on 3 May" and native[2]["tool_call_id"] == "toolu_1"
    assert "message" not in native[0]
    assert listed(alice, "s1", "native").json()["results"] == native
    restored_native = alice.get("/api/v1/sessions/s1/restore/").json()
    assert (
        "system" not in restored_native
        and restored_native["messages"][1]["content"] == "Let me look it up."
    )


def test_null_content_with_tool_calls_is_accepted_and_described(alice, index) -> None:
    """The case that used to be `400 may not be null` for the whole batch."""
    index(alice, "s1", {"role": "user", "content": "Weather in Reykjavik?"}, OPENAI[2])
    event = Event.objects.get(sequence=2)
    assert event.content == "" and event.tool_calls == [
        {"id": "call_1", "name": "get_weather", "arguments": '{"city": "Reykjavik"}'}
    ]
    texts = [c.text for c in Chunk.objects.filter(kind="event").order_by("sequence_start")]
    assert 'Called get_weather with {"city": "Reykjavik"}' in texts
    assert any(
        "get_weather" in t for t in search_texts(alice, "get_weather Reykjavik", mode="text")
    )


def test_text_parts_are_what_is_searched(alice, index) -> None:
    index(alice, "s1", *ANTHROPIC)
    hits = search_texts(alice, "shipped", mode="text")
    assert any("shipped on 3 May" in t for t in hits)
    assert all('"type"' not in t for t in hits)  # the blocks' JSON is not the searchable text


def test_a_mixed_batch_of_both_shapes_and_native_events(alice) -> None:
    native = {"role": "user", "content": "plain", "metadata": {"k": 1}, "idempotency_key": "n1"}
    response = post_events(alice, "s1", OPENAI[2], OPENAI[3], native, *ANTHROPIC[1:3])
    assert response.status_code == 201, response.content
    openai = listed(alice, "s1", "openai").json()["results"]
    assert openai[:2] == OPENAI[2:4] and openai[2] == {"role": "user", "content": "plain"}
    anthropic = listed(alice, "s1", "anthropic").json()["results"]
    assert anthropic[3:] == ANTHROPIC[1:3] and anthropic[2] == {"role": "user", "content": "plain"}
    # Each shape rendered in the other: one message per event.
    assert anthropic[0] == {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "call_1",
                "name": "get_weather",
                "input": {"city": "Reykjavik"},
            }
        ],
    }
    assert anthropic[1] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "8°C and rain"}],
    }
    assert openai[3] == {
        "role": "assistant",
        "content": "Let me look it up.",
        "tool_calls": [
            {
                "id": "toolu_1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"order": "A-77"}'},
            }
        ],
    }
    assert openai[4] == {"role": "tool", "content": "shipped on 3 May", "tool_call_id": "toolu_1"}


def test_a_retry_of_a_chat_message_is_idempotent(alice) -> None:
    message = {**OPENAI[2], "idempotency_key": "k1"}
    assert post_events(alice, "s1", message).status_code == 201
    assert post_events(alice, "s1", message).status_code == 200
    other = {
        **message,
        "tool_calls": [
            {
                **OPENAI[2]["tool_calls"][0],
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    response = post_events(alice, "s1", other)
    assert (
        response.status_code == 409 and response.json()["error"]["code"] == "idempotency_mismatch"
    )
    assert Event.objects.count() == 1


def test_system_messages_lead_anthropic_restore_as_system(alice) -> None:
    post_events(alice, "s1", {"role": "system", "content": "Be brief."}, *ANTHROPIC[:2])
    body = restored(alice, "s1", "anthropic").json()
    assert body["system"] == "Be brief." and body["messages"] == ANTHROPIC[:2]
    assert listed(alice, "s1", "anthropic").json()["results"][0] == {
        "role": "system",
        "content": "Be brief.",
    }


def test_chat_messages_survive_export_and_import(alice, django_capture_on_commit_callbacks) -> None:
    post_events(alice, "s1", *OPENAI)
    exported = alice.post("/api/v1/export/", {}, format="json").json()
    carol = make_client(make_key(make_tenant("carol")))
    with django_capture_on_commit_callbacks(execute=True):
        response = carol.post(
            "/api/v1/import/", json.dumps(exported), content_type="application/json"
        )
    assert response.status_code == 201, response.content
    assert listed(carol, "s1", "openai").json()["results"] == OPENAI


@pytest.mark.parametrize(
    ("event", "code"),
    [
        ({"role": "user", "content": 5}, "invalid"),
        ({"role": "user", "content": {"type": "text", "text": "x"}}, "invalid"),
        ({"role": "user", "content": ["hello"]}, "invalid_content_part"),
        ({"role": "user", "content": [{"text": "no type"}]}, "invalid_content_part"),
        ({"role": "user", "content": [{"type": "text", "text": 5}]}, "invalid_content_part"),
        ({"role": "user", "content": [{"type": "video", "url": "x"}]}, "unknown_content_part"),
        (
            {
                "role": "user",
                "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}],
            },
            "invalid_content_part",
        ),
        (
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "n", "input": "x"}],
            },
            "invalid_content_part",
        ),
        (
            {
                "role": "assistant",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}],
            },
            "invalid_content_part",
        ),
        (
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": 7}],
            },
            "invalid_content_part",
        ),
        (
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {}},
                    {"type": "image", "source": {}},
                ],
            },
            "mixed_message_shape",
        ),
        (
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}],
                "tool_calls": [{"id": "u", "name": "m"}],
            },
            "ambiguous_tool_call",
        ),
        (
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t", "name": "n", "input": {}},
                    {"type": "tool_use", "id": "t", "name": "m", "input": {}},
                ],
            },
            "duplicate_tool_call_id",
        ),
        ({"role": "assistant", "content": None}, "empty_event"),
        ({"role": "user", "content": []}, "empty_event"),
        ({"role": "user", "content": "x", "name": 3}, "invalid"),
        ({"role": "developer", "content": "x"}, "invalid_choice"),
    ],
)
def test_malformed_messages_are_400_and_the_batch_commits_nothing(
    alice, event: dict[str, Any], code: str
) -> None:
    response = post_events(alice, "s1", OPENAI[0], ANTHROPIC[1], event)
    assert response.status_code == 400, response.content
    body = response.json()["error"]
    codes = {
        body["code"],
        *(p["code"] for v in body["details"].get("fields", {}).values() for p in v),
    }
    assert code in codes, body
    assert not Event.objects.exists()


def test_an_oversize_text_in_parts_is_refused(alice, settings) -> None:
    limit = MAX_CONTENT_CHARS
    parts = [{"type": "text", "text": "x" * (limit // 2 + 1)}] * 2
    response = post_events(alice, "s1", {"role": "user", "content": parts})
    assert response.status_code == 400 and not Event.objects.exists()


def test_a_bad_format_is_400(alice) -> None:
    post_events(alice, "s1", *OPENAI)
    for path in ("events", "restore"):
        response = alice.get(f"/api/v1/sessions/s1/{path}/", {"format": "gemini"})
        assert response.status_code == 400, response.content


def test_other_tenants_and_users_cannot_read_them_in_any_format(alice, bob, cast) -> None:
    alice.post("/api/v1/sessions/", {"id": "s1", "user_id": "u1"}, format="json")
    assert post_events(alice, "s1", *OPENAI).status_code == 201
    u2 = make_client(make_key(cast.alice_tenant, user="u2"))
    for fmt in ("openai", "anthropic"):
        for client in (bob, u2):
            assert listed(client, "s1", fmt).status_code == 404
            assert restored(client, "s1", fmt).status_code == 404
    # Bob's own session under the same id holds only his messages.
    post_events(bob, "s1", {"role": "user", "content": "bob's words"})
    assert listed(bob, "s1", "openai").json()["results"] == [
        {"role": "user", "content": "bob's words"}
    ]
    u1 = make_client(make_key(cast.alice_tenant, user="u1"))
    assert listed(u1, "s1", "openai").json()["results"] == OPENAI


def test_a_restore_that_does_not_fit_leads_with_the_summary_in_either_shape(alice, cast) -> None:
    from memoryhub.models import RollingSummary, Session

    post_events(alice, "s1", *OPENAI)
    session = Session.objects.get(tenant=cast.alice_tenant, external_id="s1")
    RollingSummary.objects.create(
        session=session,
        tenant=cast.alice_tenant,
        text="Asked about Reykjavik.",
        epoch=1,
        upper_sequence=4,
    )
    openai = restored(alice, "s1", "openai", budget=40).json()
    assert openai["truncated"] is True
    assert openai["messages"][0] == {"role": "system", "content": openai["messages"][0]["content"]}
    assert "Asked about Reykjavik." in openai["messages"][0]["content"]
    assert openai["messages"][1:] == OPENAI[4:]
    anthropic = restored(alice, "s1", "anthropic", budget=40).json()
    assert "Asked about Reykjavik." in anthropic["system"]
    assert anthropic["messages"] == [
        {"role": "user", "content": "Thanks"},
        {"role": "assistant", "content": "Bring a raincoat."},
    ]


def test_the_mcp_remember_tool_keeps_them_as_sent(alice, cast) -> None:
    from accounts.models import ApiKey
    from retrieval.mcp_server.tools import run_remember

    key = ApiKey.objects.get(tenant=cast.alice_tenant)
    stored = run_remember(key, {"session": "s1", "events": ANTHROPIC})
    assert stored["created"] == 4
    assert listed(alice, "s1", "anthropic").json()["results"] == ANTHROPIC
