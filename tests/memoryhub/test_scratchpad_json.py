"""Scratchpad items are keyed JSON values (each at most 240 characters serialised, 32 items)."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from django.db import connection

from memoryhub.models import Scratchpad, ScratchpadItem, Session
from tests.base import error_code, make_client, make_key, post_events


def url(session: str = "s1") -> str:
    return f"/api/v1/sessions/{session}/scratchpad/"


@pytest.fixture
def session(alice: Any) -> str:
    post_events(alice, "s1", {"role": "user", "content": "hi"})
    return "s1"


VALUES = [
    {"key": "plan", "value": {"steps": ["search", "compare", "book"], "done": 1}},
    {"key": "budget", "value": 1250.5},
    {"key": "confirmed", "value": False},
    {"key": "open_question", "value": None},
    {"key": "sources", "value": ["https://a.example", "https://b.example"]},
    {"key": "note", "value": "plain strings still work"},
]


def test_values_are_json_and_come_back_as_written(alice, session) -> None:
    response = alice.put(url(), {"items": VALUES}, format="json")
    assert response.status_code == 200, response.content
    assert alice.get(url()).json()["items"] == VALUES
    assert ScratchpadItem.objects.get(key="plan").value == {
        "steps": ["search", "compare", "book"],
        "done": 1,
    }
    # the object form
    response = alice.put(url(), {"items": {"count": 3, "flags": {"a": True}}}, format="json")
    assert response.json()["items"] == [
        {"key": "count", "value": 3},
        {"key": "flags", "value": {"a": True}},
    ]


def test_the_limit_counts_compact_json_and_a_string_by_its_length(alice, session) -> None:
    exactly = {"k": "v" * 232}  # {"k":"vvv…"} is 240 characters
    assert len(json.dumps(exactly, separators=(",", ":"))) == 240
    full = [{"key": f"k{i}", "value": exactly if i % 2 else "s" * 240} for i in range(32)]
    assert alice.put(url(), {"items": full}, format="json").status_code == 200
    response = alice.put(url(), {"items": [{"key": "k", "value": {"k": "v" * 233}}]}, format="json")
    assert response.status_code == 400 and error_code(response) == "item_too_long"
    assert response.json()["error"]["details"] == {"index": 0, "max_chars": 240}
    response = alice.put(
        url(), {"items": [{"key": f"k{i}", "value": i} for i in range(33)]}, format="json"
    )
    assert response.status_code == 400 and error_code(response) == "too_many_items"
    assert len(alice.get(url()).json()["items"]) == 32  # nothing changed by the refused writes


def test_json_values_are_confined_to_the_tenant(alice, bob, session) -> None:
    alice.put(url(), {"items": VALUES}, format="json")
    assert bob.get(url()).status_code == 404
    assert bob.put(url(), {"items": {"plan": {"stolen": True}}}, format="json").status_code == 404
    assert alice.get(url()).json()["items"] == VALUES


def test_a_user_limited_key_writes_only_its_users_pad(alice, cast) -> None:
    alice.post("/api/v1/sessions/", {"id": "mine", "user_id": "u1"}, format="json")
    alice.post("/api/v1/sessions/", {"id": "theirs", "user_id": "u2"}, format="json")
    u1 = make_client(make_key(cast.alice_tenant, user="u1"))
    assert u1.put(url("mine"), {"items": {"n": 1}}, format="json").status_code == 200
    assert u1.put(url("theirs"), {"items": {"n": 1}}, format="json").status_code == 404


def test_json_values_round_trip_through_export(
    alice, session, django_capture_on_commit_callbacks
) -> None:
    from tests.base import make_tenant

    alice.put(url(), {"items": VALUES}, format="json")
    exported = alice.post("/api/v1/export/", {}, format="json").json()
    carol = make_client(make_key(make_tenant("carol")))
    with django_capture_on_commit_callbacks(execute=True):
        response = carol.post(
            "/api/v1/import/", json.dumps(exported), content_type="application/json"
        )
    assert response.status_code == 201, response.content
    assert carol.get(url()).json()["items"] == VALUES


def test_the_migration_keeps_stored_strings_as_strings(cast) -> None:
    # The migration that made values JSON lives inside memoryhub's squashed first migration (it
    # was 0009): run its SQL back to the text column, store plain text there, then forward again.
    migration = importlib.import_module("memoryhub.migrations.0001_squashed_0011")
    post_events(cast.alice, "s1", {"role": "user", "content": "hi"})
    pad = Scratchpad.objects.create(session=Session.objects.get(), tenant_id=cast.alice_tenant.pk)
    with connection.cursor() as cursor:
        # no deferred check pending: ALTER TABLE refuses those
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(migration.SCRATCHPAD_VALUES_AS_TEXT)
        cursor.execute(
            "INSERT INTO memoryhub_scratchpaditem (tenant_id, scratchpad_id, position, key, value) "
            "VALUES (%s, %s, 0, 'goal', 'not {json} at all')",
            [cast.alice_tenant.pk, pad.pk],
        )
        cursor.execute(migration.SCRATCHPAD_VALUES_AS_JSON)
    assert ScratchpadItem.objects.get().value == "not {json} at all"
    assert cast.alice.get(url()).json()["items"] == [{"key": "goal", "value": "not {json} at all"}]
