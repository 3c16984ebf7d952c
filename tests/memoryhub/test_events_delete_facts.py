"""Deleting messages takes the facts an extractor drew only from them: a fact records the span of
messages it was drawn from, and DELETE /sessions/{id}/events/ retires a fact none of whose
messages remains (docs/event-log.md#removing-messages)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryhub.extractors import ExtractedFact, extract_and_store
from memoryhub.models import Event, Fact, FactVersion, Session
from memoryhub.summarisers import Turn
from tests.base import search_texts

EVENTS = "/api/v1/sessions/{}/events/"


class EchoExtractor:
    """Draws one fact from the new messages: their text, keyed by `key`."""

    name = "echo"

    def __init__(self, key: str) -> None:
        self.key = key

    def extract(self, turns: list[Turn], earlier: Sequence[Turn] = ()) -> list[ExtractedFact]:
        text = " ".join(t.text for t in turns)
        return [ExtractedFact(content=f"Ann said: {text}", category="profile", key=self.key)]


def extract(session: Session, sequences: list[int], key: str) -> Fact:
    ids = list(
        Event.objects.filter(session=session, sequence__in=sequences).values_list("pk", flat=True)
    )
    [fact] = extract_and_store(session, ids, EchoExtractor(key))
    return fact


def fact_contents(client: Any) -> list[str]:
    response = client.get("/api/v1/facts/")
    assert response.status_code == 200, response.content
    return sorted(f["content"] for f in response.json()["results"])


def test_a_fact_drawn_only_from_deleted_messages_goes_with_them(
    alice, index, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    index(
        alice,
        "s1",
        {"role": "user", "content": "Where do I live?"},
        {"role": "assistant", "content": "You live in Lyon."},
    )
    assert alice.patch("/api/v1/sessions/s1/", {"user_id": "ann"}, format="json").status_code == 200
    session = Session.objects.get(external_id="s1")
    with django_capture_on_commit_callbacks(execute=True):
        lyon = extract(session, [2], "home_city")
        both = extract(session, [1, 2], "asked")
    stated = alice.post(
        "/api/v1/facts/", {"content": "Ann likes Lyon's parks.", "user_id": "ann"}, format="json"
    )
    assert stated.status_code == 201, stated.content
    assert "Ann said: You live in Lyon." in search_texts(alice, "Ann said you live in Lyon")

    with django_capture_on_commit_callbacks(execute=True):
        response = alice.delete(EVENTS.format("s1") + "?limit=1&user_id=ann")
    assert response.status_code == 200, response.content
    assert response.json()["deleted"]["memoryhub.Fact"] == 1

    # The fact drawn from the deleted message alone is gone from the list, a read and search; the
    # one drawn with a remaining message stays, and so does a fact nobody extracted.
    assert fact_contents(alice) == sorted(
        ["Ann likes Lyon's parks.", "Ann said: Where do I live? You live in Lyon."]
    )
    assert alice.get(f"/api/v1/facts/{lyon.pk}/").status_code == 404
    assert "Ann said: You live in Lyon." not in search_texts(alice, "Ann said you live in Lyon")
    assert Fact.objects.filter(pk=both.pk).exists()
    # Deleted as DELETE /facts/{id}/ deletes: its history is kept, the last version closed.
    assert list(
        FactVersion.objects.filter(fact_id=lyon.pk).values_list("closed_by", flat=True)
    ) == ["deleted"]

    # Deleting the remaining message takes the fact drawn from both.
    with django_capture_on_commit_callbacks(execute=True):
        alice.delete(EVENTS.format("s1") + "?user_id=ann")
    assert fact_contents(alice) == ["Ann likes Lyon's parks."]
