"""Events with several tool calls (`tool_calls: [{id, name, arguments}]`) and `tool_call_id` on a
tool result, as chat APIs send them (docs/event-log.md#chat-messages); the single
tool_name/tool_args call keeps working."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryhub.models import Event
from retrieval.models import Chunk
from tests.base import make_client, make_key, make_tenant, post_events, search_texts

CALLS = [
    {"id": "call_a", "name": "get_weather", "arguments": '{"city": "Reykjavik"}'},
    {"id": "call_b", "name": "book_table", "arguments": {"restaurant": "Dill", "people": 4}},
]


def test_several_tool_calls_and_a_result_naming_its_call(alice) -> None:
    response = post_events(
        alice,
        "s1",
        {"role": "assistant", "content": "", "tool_calls": CALLS},
        {"role": "tool", "content": "8°C, rain", "tool_call_id": "call_a"},
    )
    assert response.status_code == 201, response.content
    calls, result = response.json()["events"]
    assert calls["tool_calls"] == CALLS and calls["tool_call_id"] is None and calls["content"] == ""
    assert result["tool_call_id"] == "call_a" and result["tool_calls"] is None
    stored = Event.objects.order_by("sequence")
    assert stored[0].tool_calls == CALLS and stored[1].tool_call_id == "call_a"
    listed = alice.get("/api/v1/sessions/s1/events/").json()["results"]
    assert listed[0]["tool_calls"] == CALLS and listed[1]["tool_call_id"] == "call_a"


def test_the_chat_api_form_is_stored_as_id_name_arguments(alice) -> None:
    openai_call = {
        "id": "call_x",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"order": "A-77"}'},
    }
    response = post_events(alice, "s1", {"role": "assistant", "tool_calls": [openai_call]})
    assert response.status_code == 201, response.content
    assert response.json()["tool_calls"] == [
        {"id": "call_x", "name": "lookup", "arguments": '{"order": "A-77"}'}
    ]


def test_an_empty_tool_result_with_its_call_id_is_kept_empty(alice) -> None:
    response = post_events(alice, "s1", {"role": "tool", "content": "", "tool_call_id": "call_a"})
    assert response.status_code == 201, response.content
    assert response.json()["content"] == "" and response.json()["tool_call_id"] == "call_a"


def test_the_single_tool_call_still_works(alice) -> None:
    response = post_events(
        alice, "s1", {"role": "assistant", "tool_name": "lookup", "tool_args": {"id": 7}}
    )
    assert response.status_code == 201
    body = response.json()
    assert (
        body["tool_name"] == "lookup"
        and body["tool_args"] == {"id": 7}
        and body["tool_calls"] is None
    )


def test_tool_calls_are_searchable(alice, index) -> None:
    index(
        alice,
        "s1",
        {"role": "assistant", "content": "", "tool_calls": CALLS},
        {
            "role": "tool",
            "content": "",
            "tool_call_id": "call_b",
            "tool_result": {"confirmed": "Dill 19:30"},
        },
    )
    texts = [c.text for c in Chunk.objects.filter(kind="event").order_by("sequence_start")]
    assert texts[0] == (
        'Called get_weather with {"city": "Reykjavik"}\n'
        'Called book_table with {"people": 4, "restaurant": "Dill"}'
    )
    assert texts[1] == 'Tool call call_b returned {"confirmed": "Dill 19:30"}'
    assert any("Reykjavik" in t for t in search_texts(alice, "Reykjavik", mode="text"))
    assert any("book_table" in t for t in search_texts(alice, "book_table restaurant", mode="text"))


@pytest.mark.parametrize(
    ("event", "code"),
    [
        ({"role": "assistant", "tool_calls": "get_weather"}, "not_a_list"),
        (
            {"role": "assistant", "tool_calls": [{"id": "c1", "arguments": {}}]},
            "tool_call_name_required",
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "name": "a"}, {"id": "c1", "name": "b"}],
            },
            "duplicate_tool_call_id",
        ),
        (
            {"role": "assistant", "tool_calls": [{"name": "a", "function": {"name": "a"}}]},
            "ambiguous_tool_call",
        ),
        ({"role": "assistant", "tool_calls": [{"name": "a", "colour": "red"}]}, "unknown_field"),
        ({"role": "assistant", "tool_calls": [{"name": 5}]}, "invalid"),
        ({"role": "assistant", "tool_calls": [{"name": "a"}] * 129}, "max_length"),
        ({"role": "tool", "tool_call_id": 12}, "invalid"),
        ({"role": "assistant", "content": "", "tool_calls": []}, "empty_event"),
    ],
)
def test_bad_tool_calls_are_400_and_nothing_is_stored(
    alice, event: dict[str, Any], code: str
) -> None:
    response = post_events(alice, "s1", {"role": "user", "content": "fine"}, event)
    assert response.status_code == 400, response.content
    body = response.json()["error"]
    assert code in {
        body["code"],
        *(p["code"] for v in body["details"].get("fields", {}).values() for p in v),
    }, body
    assert not Event.objects.exists()


def test_tool_calls_round_trip_through_export_and_import(
    alice, django_capture_on_commit_callbacks
) -> None:
    post_events(
        alice,
        "s1",
        {"role": "assistant", "tool_calls": CALLS},
        {"role": "tool", "content": "ok", "tool_call_id": "call_b"},
    )
    exported = alice.post("/api/v1/export/", {}, format="json").json()
    carol = make_client(make_key(make_tenant("carol")))
    with django_capture_on_commit_callbacks(execute=True):
        response = carol.post(
            "/api/v1/import/", json.dumps(exported), content_type="application/json"
        )
    assert response.status_code == 201, response.content
    events = carol.get("/api/v1/sessions/s1/events/").json()["results"]
    assert events[0]["tool_calls"] == CALLS and events[1]["tool_call_id"] == "call_b"


def test_tool_calls_are_confined_to_the_tenant(alice, bob) -> None:
    post_events(alice, "s1", {"role": "assistant", "tool_calls": CALLS})
    assert bob.get("/api/v1/sessions/s1/events/").status_code == 404
    assert search_texts(bob, "Reykjavik", mode="text") == []
