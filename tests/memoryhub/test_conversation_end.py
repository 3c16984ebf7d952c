"""What the end of a conversation does (docs/event-log.md#conversation-lifecycle): its
conversation-tier memories are cleared at once, and the summarise lane runs the fact extractor over
its events not extracted yet (woken by the end, to the last event in one visit); the facts extracted
then outlive the clearing. Each message then says when it was consolidated (its consolidated_at)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DatabaseError, transaction

from memoryhub import session_work
from memoryhub.models import Event, Fact, Note, Session
from memoryhub.session_work import work_on_session
from tests.base import new_session, post_events
from tests.memoryhub.test_summarisers import completion, fake_llm

# The fake model server listens on 127.0.0.1, refused unless allowed.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_local_llm")]

MOVE = "We are moving the lab to Porto in March."


@pytest.fixture
def extractor(settings, monkeypatch):  # type: ignore[no-untyped-def]
    # nothing inline: the test works the session as the lane would
    settings.MEMORYHUB_TASKS_EAGER = False
    settings.MEMORYHUB_FACT_EXTRACTOR = "http"
    settings.MEMORYHUB_FACT_EXTRACTOR_MODEL = "m"
    settings.MEMORYHUB_FACT_EXTRACTOR_FORMAT = "lines"
    monkeypatch.setattr("memoryhub.extractors.WINDOW_EVENTS", 0)
    return settings


def model(body: dict[str, Any]) -> tuple[int, Any]:
    text = body["messages"][1]["content"]
    return 200, completion("- The lab moves to Porto in March" if MOVE in text else "NONE")


def lane_work(session: str) -> dict[str, Any]:
    """What the summarise lane does with each due session."""
    pk = Session.objects.get(external_id=session).pk
    assert pk in set(session_work.due_sessions().values_list("pk", flat=True))
    return work_on_session(pk)  # type: ignore[return-value]


def events(client: Any, session: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/api/v1/sessions/{session}/events/", params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_a_fact_extracted_when_the_conversation_ends_survives_its_clearing(
    alice, extractor
) -> None:  # type: ignore[no-untyped-def]
    with fake_llm(model) as llm:
        extractor.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        new_session(alice, "s1")
        post_events(
            alice, "s1", {"role": "user", "content": "Hello"}, {"role": "user", "content": MOVE}
        )
        note = alice.post(
            "/api/v1/notes/",
            {"content": "drafting the move memo", "session": "s1", "scope": "conversation"},
            format="json",
        ).json()
        # nothing extracted yet
        assert Session.objects.get(external_id="s1").facts_extracted_to == 0
        assert (
            alice.patch("/api/v1/sessions/s1/", {"status": "idle"}, format="json").status_code
            == 200
        )
        assert not Note.objects.filter(note_id=note["note_id"]).exists()  # cleared at the end

        assert lane_work("s1")["facts"] == 1  # the end's extraction, in the background lane
        [fact] = Fact.objects.filter(source="extraction")
        assert fact.content == "The lab moves to Porto in March" and fact.tier != "conversation"
        assert fact.source_session.external_id == "s1"
        # Archiving (the end made final) clears again: the extracted fact stays.
        assert (
            alice.patch("/api/v1/sessions/s1/", {"status": "archived"}, format="json").status_code
            == 200
        )
        assert Fact.objects.filter(pk=fact.pk).exists()
        assert alice.get(f"/api/v1/facts/{fact.pk}/").status_code == 200


def test_an_ended_conversation_is_extracted_to_its_end_in_one_visit(
    alice, extractor, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    # batches of two: five events need three calls
    monkeypatch.setattr(session_work, "FACT_EVENTS", 2)
    with fake_llm(model) as llm:
        extractor.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        for name in ("talking", "ended"):
            post_events(
                alice,
                name,
                *[{"role": "user", "content": f"message {i}"} for i in range(4)],
                {"role": "user", "content": MOVE},
            )
        alice.patch("/api/v1/sessions/ended/", {"status": "idle"}, format="json")
        assert lane_work("ended")["facts"] == 1
        assert lane_work("talking")["facts"] == 0  # an active conversation: one batch a visit
    assert Session.objects.get(external_id="ended").facts_extracted_to == 5
    assert Session.objects.get(external_id="talking").facts_extracted_to == 2


def test_each_message_says_when_extraction_covered_it(alice, bob, extractor, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(session_work, "FACT_EVENTS", 2)
    with fake_llm(model) as llm:
        extractor.MEMORYHUB_FACT_EXTRACTOR_URL = llm.url
        post_events(alice, "s1", *[{"role": "user", "content": f"message {i}"} for i in range(3)])
        post_events(bob, "s1", {"role": "user", "content": "bob's own"})
        # read once before: the recent window is cached with every marker null
        assert [e["consolidated_at"] for e in events(alice, "s1", limit=3)] == [None, None, None]
        # the lane, once: one batch of two
        work_on_session(Session.objects.get(tenant__name="alice").pk)
    listed = events(alice, "s1")
    assert [e["consolidated_at"] is not None for e in listed] == [True, True, False]
    # the recent window (a cached read) says the same: marking moves its key
    assert [e["consolidated_at"] is not None for e in events(alice, "s1", limit=3)] == [
        True,
        True,
        False,
    ]
    assert listed[0]["consolidated_at"] == listed[1]["consolidated_at"]  # one UPDATE for the batch
    assert events(bob, "s1")[0]["consolidated_at"] is None  # bob's session is another's
    # The log stays append-only: the marker is the one column an update may change.
    event = Event.objects.filter(session__tenant__name="alice").first()
    with pytest.raises(DatabaseError), transaction.atomic():
        Event.objects.filter(pk=event.pk).update(content="rewritten")
    assert Event.objects.get(pk=event.pk).content == "message 0"
