"""Only what is about the query is listed, with the real all-MiniLM-L6-v2 model: the relevance floor
(search and context) keeps out memories that merely share a common word or sit a little closer in
meaning than unrelated sentences do, and a user's own name in the query does not outrank meaning."""

from __future__ import annotations

from typing import Any

import pytest

from tests.retrieval.conftest import search, texts

pytestmark = pytest.mark.minilm

SOURDOUGH = "My sourdough starter is called Bubbles."
LOCKER = "My gym locker is number 118."
PORTUGUESE = "Always answer Ann in Portuguese."
ANNIE = "First session: call me Annie."
GUESTHOUSE = "I booked the Casa Azul guesthouse in Porto."
PEANUTS = "I am allergic to peanuts."
HIKING = "Dave likes hiking."


@pytest.fixture
def minilm(settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_EMBEDDER = "minilm"


@pytest.fixture
def ann(alice, index, minilm, django_capture_on_commit_callbacks) -> Any:  # type: ignore[no-untyped-def]
    """ann's memory over several conversations, and a note she asked for."""
    for session, channel in (
        ("first", "general"),
        ("bake", "kitchen"),
        ("gym", "sport"),
        ("trip3", "travel"),
    ):
        response = alice.post(
            "/api/v1/sessions/",
            {"id": session, "channel": channel, "user_id": "ann"},
            format="json",
        )
        assert response.status_code == 201, response.content
    index(
        alice,
        "first",
        {"role": "user", "content": ANNIE},
        {"role": "assistant", "content": "Nice to meet you, Annie."},
    )
    index(
        alice,
        "bake",
        {"role": "user", "content": SOURDOUGH},
        {"role": "assistant", "content": "Bubbles is a lovely name."},
    )
    index(alice, "gym", {"role": "user", "content": LOCKER})
    index(alice, "trip3", {"role": "user", "content": GUESTHOUSE})
    with django_capture_on_commit_callbacks(execute=True):
        response = alice.post(
            "/api/v1/notes/",
            {"content": PORTUGUESE, "user_id": "ann", "scope": "account"},
            format="json",
        )
    assert response.status_code == 201, response.content
    return alice


def _context(client: Any, query: str, user: str) -> list[str]:
    response = client.post(
        "/api/v1/context/", {"query": query, "user_id": user, "scope": "account"}, format="json"
    )
    assert response.status_code == 200, response.content
    return [item["text"] for item in response.json()["items"]]


@pytest.mark.parametrize(
    ("query", "answer", "unrelated"),
    [
        ("what is my sourdough starter called", SOURDOUGH, {PORTUGUESE, ANNIE, LOCKER, GUESTHOUSE}),
        ("gym locker", LOCKER, {PORTUGUESE, ANNIE, SOURDOUGH, GUESTHOUSE}),
    ],
)
def test_only_what_is_about_the_query_is_listed_and_injected(ann, query, answer, unrelated) -> None:
    found = texts(search(ann, query=query, user_id="ann", scope="account"))
    assert found[0] == answer
    assert not unrelated & set(found), found
    injected = _context(ann, query, "ann")
    assert answer in injected and not unrelated & set(injected), injected


def test_a_query_about_nothing_she_said_lists_and_injects_nothing(ann) -> None:
    assert (
        texts(search(ann, query="what is the capital of Mongolia", user_id="ann", scope="account"))
        == []
    )
    assert _context(ann, "what is the capital of Mongolia", "ann") == []


def test_the_users_own_name_in_the_query_does_not_outrank_its_meaning(alice, index, minilm) -> None:
    response = alice.post("/api/v1/sessions/", {"id": "d1", "user_id": "dave"}, format="json")
    assert response.status_code == 201, response.content
    index(alice, "d1", {"role": "user", "content": PEANUTS}, {"role": "user", "content": HIKING})

    found = texts(
        search(alice, query="what food should dave avoid?", user_id="dave", scope="account")
    )

    assert found[0] == PEANUTS, found
    assert HIKING not in found
    # Asked about the name itself, the name still finds it.
    assert (
        texts(search(alice, query="what does Dave like?", user_id="dave", scope="account"))[0]
        == HIKING
    )
