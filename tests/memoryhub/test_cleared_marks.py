"""Messages older Python clients only marked as cleared (session metadata "transcript") are deleted
by migration 0021 as DELETE /sessions/{id}/events/ deletes them, and the mark is removed; an
immutable transcript keeps both (docs/event-log.md#removing-messages)."""

from __future__ import annotations

import importlib
from typing import Any

from accounts.models import Tenant
from memoryhub.models import Event, Fact, RollingSummary, Session
from retrieval.models import Chunk
from tests.base import search_texts
from tests.memoryhub.test_events_delete_facts import extract

SESSION = "/api/v1/sessions/{}/"
MIGRATION = importlib.import_module("memoryhub.migrations.0021_honour_cleared_marks")


def old_client_chat(index: Any, client: Any, session: str, mark: Any) -> None:
    """A conversation whose messages an older client cleared: it wrote its mark into the session's
    metadata, beside the client's own metadata."""
    texts = ["Hi.", "I live in Lyon.", "Noted.", "My code is 4711.", "Bye for now."]
    roles = ["user", "assistant"]
    index(client, session, *[{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)])
    response = client.patch(
        SESSION.format(session),
        {"user_id": "ann", "metadata": {"topic": "home", "transcript": mark}},
        format="json",
    )
    assert response.status_code == 200, response.content


def migrate(captured: Any) -> None:
    with captured(execute=True):
        MIGRATION.honour_marks(None, None)


def contents(client: Any, session: str) -> list[str]:
    response = client.get(SESSION.format(session) + "events/")
    assert response.status_code == 200, response.content
    return [e["content"] for e in response.json()["results"]]


def test_marked_messages_are_deleted_with_what_was_drawn_from_them(
    alice, index, cast, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    old_client_chat(index, alice, "s1", {"cleared_through": 2, "retracted": [4]})
    session = Session.objects.get(external_id="s1")
    with django_capture_on_commit_callbacks(execute=True):
        extract(session, [2], "home_city")
        extract(session, [3], "ack")
    RollingSummary.objects.create(
        session=session, tenant=cast.alice_tenant, text="Ann lives in Lyon.", upper_sequence=5
    )
    assert "My code is 4711." in search_texts(alice, "code 4711")

    migrate(django_capture_on_commit_callbacks)

    assert contents(alice, "s1") == ["Noted.", "Bye for now."]
    assert search_texts(alice, "Lyon") == []
    assert search_texts(alice, "code 4711") == []
    # A later message that remains is found again (its chunk is made anew, without the deleted
    # messages as context).
    assert "Bye for now." in search_texts(alice, "Bye for now")
    assert [f["content"] for f in alice.get("/api/v1/facts/").json()["results"]] == [
        "Ann said: Noted."
    ]
    assert not RollingSummary.objects.filter(session=session).exists()
    session.refresh_from_db()
    assert session.metadata == {"topic": "home"}
    assert (session.event_count, session.last_sequence) == (2, 5)
    assert not Chunk.objects.filter(session=session, kind="event", sequence_start__in=[1, 2, 4])

    # Run again: nothing is left to do.
    migrate(django_capture_on_commit_callbacks)
    assert contents(alice, "s1") == ["Noted.", "Bye for now."]


def test_an_immutable_transcript_keeps_its_events_and_its_mark(
    alice, index, cast, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    mark = {"cleared_through": 5}
    old_client_chat(index, alice, "s1", mark)
    Tenant.objects.filter(pk=cast.alice_tenant.pk).update(immutable_transcript=True)
    migrate(django_capture_on_commit_callbacks)
    assert len(contents(alice, "s1")) == 5
    assert Session.objects.get(external_id="s1").metadata["transcript"] == mark


def test_a_transcript_value_of_another_shape_is_the_clients_own(
    alice, index, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    for session, value in (
        ("s1", {"language": "fr"}),
        ("s2", "cleared"),
        ("s3", {"cleared_through": "2"}),
    ):
        old_client_chat(index, alice, session, value)
    migrate(django_capture_on_commit_callbacks)
    for session, value in (
        ("s1", {"language": "fr"}),
        ("s2", "cleared"),
        ("s3", {"cleared_through": "2"}),
    ):
        assert len(contents(alice, session)) == 5
        assert Session.objects.get(external_id=session).metadata["transcript"] == value
    assert Event.objects.count() == 15 and Fact.objects.count() == 0
