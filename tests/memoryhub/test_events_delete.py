"""DELETE /sessions/{id}/events/ and the `user_id` of a session's reads: deleting the newest events
takes what was derived from them (search chunks, summaries, the recent window) out of every read,
for every key; a read or a deletion on behalf of one user never touches another's conversation."""

from __future__ import annotations

from typing import Any

from accounts.models import Tenant
from memoryhub.models import RollingSummary, Session, SummaryNode
from memoryhub.summaries import build_tree
from retrieval.models import Chunk
from tests.base import error_code, make_client, make_key, search_texts

EVENTS = "/api/v1/sessions/{}/events/"


def chat(index: Any, client: Any, session: str, user: str, *texts: str) -> None:
    roles = ["user", "assistant"]
    index(
        client, session, *[{"role": roles[i % 2], "content": text} for i, text in enumerate(texts)]
    )
    if user:
        response = client.patch(f"/api/v1/sessions/{session}/", {"user_id": user}, format="json")
        assert response.status_code == 200, response.content


def context_text(client: Any, query: str, **body: Any) -> str:
    response = client.post(
        "/api/v1/context/", {"query": query, "scope": "account", **body}, format="json"
    )
    assert response.status_code == 200, response.content
    return str(response.json())


def test_delete_the_newest_event_returns_it_and_every_read_forgets_it(alice, index) -> None:
    chat(index, alice, "s1", "ann", "Where do I live?", "You live in Lyon.")
    assert "You live in Lyon." in search_texts(alice, "Lyon")
    alice.get(EVENTS.format("s1"), {"limit": 10})  # the recent window is cached

    response = alice.delete(EVENTS.format("s1") + "?limit=1&user_id=ann")
    assert response.status_code == 200, response.content
    body = response.json()
    assert [e["content"] for e in body["results"]] == ["You live in Lyon."]
    assert body["deleted"]["memoryhub.Event"] == 1 and body["deleted"]["retrieval.Chunk"] >= 1

    assert [
        e["content"] for e in alice.get(EVENTS.format("s1"), {"limit": 10}).json()["results"]
    ] == ["Where do I live?"]
    assert [e["content"] for e in alice.get(EVENTS.format("s1")).json()["results"]] == [
        "Where do I live?"
    ]
    assert "You live in Lyon." not in search_texts(alice, "Lyon")
    assert "Lyon" not in context_text(alice, "Where does ann live?", session="s1")
    assert "Lyon" not in context_text(alice, "Where does ann live?", user_id="ann")
    session = Session.objects.get(external_id="s1")
    assert (session.event_count, session.last_sequence) == (1, 2)
    # The next message continues after the deleted one.
    index(alice, "s1", {"role": "assistant", "content": "Tell me again?"})
    assert [
        e["sequence"] for e in alice.get(EVENTS.format("s1"), {"limit": 10}).json()["results"]
    ] == [1, 3]


def test_delete_every_event_takes_the_summaries_covering_them(alice, index, cast) -> None:
    chat(
        index,
        alice,
        "s1",
        "",
        "I moved to Lyon last spring.",
        "Lyon suits you.",
        "And I work in Villeurbanne.",
    )
    session = Session.objects.get(external_id="s1")
    build_tree(session, final=True)
    RollingSummary.objects.update_or_create(
        session=session,
        defaults={
            "tenant": cast.alice_tenant,
            "text": "Moved to Lyon.",
            "epoch": 1,
            "upper_sequence": 3,
        },
    )
    assert SummaryNode.objects.filter(session=session).exists()
    assert Chunk.objects.filter(session=session, kind="summary").exists()

    response = alice.delete(EVENTS.format("s1"))
    assert response.status_code == 200, response.content
    assert len(response.json()["results"]) == 3
    assert not SummaryNode.objects.filter(session=session).exists()
    assert not RollingSummary.objects.filter(session=session).exists()
    assert not Chunk.objects.filter(session=session).exists()
    assert search_texts(alice, "Lyon") == []
    assert "Lyon" not in context_text(alice, "Lyon", session="s1")
    export = alice.post("/api/v1/export/", {"session": "s1"}, format="json")
    assert export.status_code == 200 and "Lyon" not in export.content.decode()


def test_after_deletes_above_a_sequence_and_a_repeated_text_stays_findable(alice, index) -> None:
    chat(index, alice, "s1", "", "ok", "The code is 4711.", "ok", "Bye.")
    response = alice.delete(EVENTS.format("s1") + "?after=2")
    assert [e["sequence"] for e in response.json()["results"]] == [3, 4]
    assert "The code is 4711." in search_texts(alice, "code 4711")
    assert "ok" in search_texts(alice, "ok")  # said at 1 too: its chunk ends at 2 again
    assert search_texts(alice, "Bye") == []
    assert Chunk.objects.filter(kind="event", sequence_end__gt=2).count() == 0


def test_after_and_limit_together_delete_the_newest_above_after(alice, index) -> None:
    chat(index, alice, "s1", "", "one", "two", "three", "four")
    assert [
        e["sequence"]
        for e in alice.delete(EVENTS.format("s1") + "?after=1&limit=2").json()["results"]
    ] == [3, 4]
    assert [
        e["sequence"]
        for e in alice.delete(EVENTS.format("s1") + "?after=1&limit=5").json()["results"]
    ] == [2]
    assert [e["content"] for e in alice.get(EVENTS.format("s1")).json()["results"]] == ["one"]


def test_another_users_conversation_is_refused_and_untouched(alice, index, cast) -> None:
    chat(index, alice, "bob-chat", "bob", "You live in Lyon.")
    for url in (
        EVENTS.format("bob-chat") + "?user_id=ann",
        EVENTS.format("bob-chat") + "?limit=1&user_id=ann",
    ):
        response = alice.delete(url)
        assert (response.status_code, error_code(response)) == (409, "owner_mismatch")
    read = alice.get(EVENTS.format("bob-chat"), {"user_id": "ann"})
    assert (read.status_code, error_code(read)) == (409, "owner_mismatch")
    detail = alice.get("/api/v1/sessions/bob-chat/", {"user_id": "ann"})
    assert (detail.status_code, error_code(detail)) == (409, "owner_mismatch")
    assert alice.get("/api/v1/sessions/bob-chat/", {"user_id": "bob"}).status_code == 200
    assert [
        e["content"]
        for e in alice.get(EVENTS.format("bob-chat"), {"user_id": "bob"}).json()["results"]
    ] == ["You live in Lyon."]
    # A key limited to ann does not find bob's conversation at all, and cannot act as bob.
    ann = make_client(make_key(cast.alice_tenant, user="ann"))
    assert error_code(ann.delete(EVENTS.format("bob-chat"))) == "session_not_found"
    assert error_code(ann.get(EVENTS.format("bob-chat"), {"user_id": "bob"})) == "user_forbidden"
    assert "You live in Lyon." in search_texts(alice, "Lyon", user_id="bob")
    # Another tenant's key finds nothing.
    assert error_code(cast.bob.delete(EVENTS.format("bob-chat"))) == "session_not_found"
    assert Session.objects.get(external_id="bob-chat").event_count == 1


def test_an_immutable_transcript_keeps_its_events(alice, index, cast) -> None:
    chat(index, alice, "s1", "", "You live in Lyon.")
    Tenant.objects.filter(pk=cast.alice_tenant.pk).update(immutable_transcript=True)
    response = alice.delete(EVENTS.format("s1"))
    assert (response.status_code, error_code(response)) == (409, "immutable_transcript")
    assert "You live in Lyon." in search_texts(alice, "Lyon")


def test_bad_ranges_and_scopes_are_refused(alice, index, cast) -> None:
    chat(index, alice, "s1", "", "Hello.")
    assert alice.delete(EVENTS.format("s1") + "?limit=0").status_code == 400
    assert error_code(alice.delete(EVENTS.format("s1") + "?newest=1")) == "unknown_parameter"
    reader = make_client(make_key(cast.alice_tenant, scopes=("read",)))
    assert error_code(reader.delete(EVENTS.format("s1"))) == "insufficient_scope"
    assert error_code(alice.delete(EVENTS.format("missing"))) == "session_not_found"
    assert alice.delete(EVENTS.format("s1") + "?after=5").json()["results"] == []
    assert Session.objects.get(external_id="s1").event_count == 1
