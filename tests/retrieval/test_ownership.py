"""Ownership within one tenant: an end user sees their own memories and shared ones, never another
user's, on every endpoint that returns memory, with and without a session, and with user-limited
keys."""

from __future__ import annotations

from typing import Any

import pytest

from tests.base import error_code, make_client, make_key

BOB_WORDS = "bob secret kumquat recipe"


@pytest.fixture
def people(cast, index) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """In alice's tenant: a conversation of end user 'ann' and one of 'bob', a note and a fact each,
    and a shared note (no owner)."""
    client = cast.alice
    for sid, user in (("ann-chat", "ann"), ("bob-chat", "bob")):
        assert (
            client.post(
                "/api/v1/sessions/", {"id": sid, "user_id": user}, format="json"
            ).status_code
            == 201
        )
    index(client, "ann-chat", {"role": "user", "content": "ann likes kumquat tea in the morning"})
    index(client, "bob-chat", {"role": "user", "content": f"{BOB_WORDS} event"})
    for user, text in (("ann", "ann kumquat note"), ("bob", f"{BOB_WORDS} note")):
        assert (
            client.post(
                "/api/v1/notes/",
                {"content": text, "user_id": user, "importance": 0.95},
                format="json",
            ).status_code
            == 201
        )
        assert (
            client.post(
                "/api/v1/facts/",
                {
                    "content": f"{text} fact",
                    "user_id": user,
                    "key": user,
                    "category": "preference",
                    "importance": 0.95,
                },
                format="json",
            ).status_code
            == 201
        )
    assert (
        client.post(
            "/api/v1/notes/", {"content": "shared kumquat handbook"}, format="json"
        ).status_code
        == 201
    )
    return {"client": client, "tenant": cast.alice_tenant}


def texts(items: list[dict[str, Any]]) -> str:
    return " | ".join(i["text"] for i in items)


def search(client: Any, **body: Any) -> list[dict[str, Any]]:
    response = client.post("/api/v1/search/", {"top_k": 50, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["results"]


@pytest.mark.parametrize("mode", ["hybrid", "text", "vector"])
def test_search_as_a_user_never_returns_another_users_memory(people, mode) -> None:
    client = people["client"]
    for body in (
        {"user_id": "ann"},
        {"session": "ann-chat"},
        {"session": "ann-chat", "scope": "account"},
    ):
        found = texts(search(client, query="kumquat", mode=mode, **body))
        assert "bob" not in found, (body, found)
        if mode != "vector":  # the hash embedder has no semantics; text finds every kumquat
            assert "ann likes kumquat" in found and "shared kumquat handbook" in found, (
                body,
                found,
            )
    # No user named, no session: the tenant-wide view (an operator's or a single-user agent's).
    assert "bob secret" in texts(search(client, query="kumquat", mode="text"))


def test_a_session_without_a_user_sees_only_shared_memories(people, index) -> None:
    client = people["client"]
    index(client, "anon-chat", {"role": "user", "content": "hello kumquat"})
    found = texts(
        search(client, query="kumquat", mode="text", session="anon-chat", scope="account")
    )
    assert "shared kumquat handbook" in found and "hello kumquat" in found
    assert "ann" not in found and "bob" not in found


def test_context_of_a_users_session_never_contains_another_users_memory(people) -> None:
    client = people["client"]
    for body in (
        {"session": "ann-chat", "query": "kumquat"},
        {"user_id": "ann", "query": "kumquat"},
        {"session": "ann-chat", "query": "kumquat", "scope": "account"},
    ):
        response = client.post("/api/v1/context/", body, format="json")
        assert response.status_code == 200, response.content
        result = response.json()
        assert "bob" not in texts(result["items"]) and "bob" not in result["markdown"], body
        assert "ann kumquat note" in texts(result["items"]), body  # salient, her own


def test_a_user_named_beside_another_users_session_is_refused(people) -> None:
    response = people["client"].post(
        "/api/v1/search/",
        {"query": "kumquat", "session": "ann-chat", "user_id": "bob"},
        format="json",
    )
    assert response.status_code == 400 and error_code(response) == "scope_mismatch"


def test_browse_by_user(people) -> None:
    client = people["client"]
    results = client.get("/api/v1/browse/?user_id=ann").json()["results"]
    assert results and all(r["session"] == "ann-chat" for r in results)


def test_a_user_limited_key_sees_only_its_user_and_shared(people) -> None:
    ann = make_client(make_key(people["tenant"], user="ann"))
    assert "bob" not in texts(search(ann, query="kumquat", mode="text"))
    assert "ann likes kumquat" in texts(search(ann, query="kumquat", mode="text"))
    context = ann.post("/api/v1/context/", {"query": "kumquat"}, format="json").json()
    assert "bob" not in texts(context["items"]) and "ann kumquat" in texts(context["items"])
    listings = {
        "notes": ann.get("/api/v1/notes/").json()["results"],
        "facts": ann.get("/api/v1/facts/").json()["results"],
        "sessions": ann.get("/api/v1/sessions/").json()["results"],
        "browse": ann.get("/api/v1/browse/").json()["results"],
        "summaries": ann.get("/api/v1/summaries/").json()["results"],
    }
    for name, rows in listings.items():
        assert "bob" not in str(rows), name
    assert {n["content"] for n in listings["notes"]} == {
        "ann kumquat note",
        "shared kumquat handbook",
    }
    assert [s["id"] for s in listings["sessions"]] == ["ann-chat"]
    # Bob's conversation does not exist for ann's key; naming bob is refused.
    assert error_code(ann.get("/api/v1/sessions/bob-chat/")) == "session_not_found"
    assert error_code(ann.get("/api/v1/sessions/bob-chat/events/")) == "session_not_found"
    assert (
        ann.post("/api/v1/search/", {"query": "x", "user_id": "bob"}, format="json").status_code
        == 403
    )
    for path, body in (
        ("/api/v1/notes/", {"content": "x", "user_id": "bob"}),
        ("/api/v1/facts/", {"content": "x", "user_id": "bob"}),
        ("/api/v1/sessions/", {"id": "x", "user_id": "bob"}),
    ):
        response = ann.post(path, body, format="json")
        assert response.status_code == 403 and error_code(response) == "user_forbidden", path
    # What a user-limited key writes belongs to its user.
    created = ann.post("/api/v1/notes/", {"content": "ann's own"}, format="json").json()
    assert created["user_id"] == "ann"
    assert ann.post("/api/v1/sessions/", {"id": "ann-2"}, format="json").json()["user_id"] == "ann"


def test_claiming_an_unowned_session_moves_its_chunks(people, index) -> None:
    client = people["client"]
    index(client, "anon-chat", {"role": "user", "content": "anonymous kumquat jam event"})
    # Unowned, the conversation is the tenant's: in no user's reads.
    assert "anonymous kumquat jam" not in texts(
        search(client, query="kumquat", mode="text", user_id="bob")
    )
    assert "anonymous kumquat jam" in texts(search(client, query="kumquat", mode="text"))
    assert (
        client.patch("/api/v1/sessions/anon-chat/", {"user_id": "ann"}, format="json").status_code
        == 200
    )
    assert "anonymous kumquat jam" in texts(
        search(client, query="kumquat", mode="text", user_id="ann")
    )
    assert "anonymous kumquat jam" not in texts(
        search(client, query="kumquat", mode="text", user_id="bob")
    )


def test_an_owned_session_never_changes_hands(people) -> None:
    client = people["client"]
    response = client.patch("/api/v1/sessions/bob-chat/", {"user_id": "ann"}, format="json")
    assert response.status_code == 409 and error_code(response) == "owner_mismatch"
    assert "bob secret" not in texts(search(client, query="kumquat", mode="text", user_id="ann"))


def test_a_user_limited_key_cannot_export_the_tenant_or_forget(people) -> None:
    ann = make_client(make_key(people["tenant"], user="ann"))
    for response in (
        ann.post("/api/v1/export/", {}, format="json"),
        ann.delete("/api/v1/users/bob/"),
    ):
        assert response.status_code == 403 and error_code(response) == "user_limited_key"


# the exact search of a small view; the HNSW walk
@pytest.mark.parametrize("exact_below", [100_000, 0])
def test_vector_search_as_a_user_returns_exactly_their_view(
    people, settings, exact_below, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The exact vector search reads a user's view as two statements (theirs, shared): together they
    hold every memory the user may see and nothing else, whatever their distance to the query."""
    from retrieval.embedding import backfill_embeddings

    backfill_embeddings(tenant_id=people["tenant"].pk, limit=100)  # the notes and facts too
    monkeypatch.setattr("retrieval.search.sql.EXACT_BELOW", exact_below)
    found = {
        r["text"]
        for r in search(people["client"], query="anything at all", mode="vector", user_id="ann")
    }
    assert found == {
        "ann likes kumquat tea in the morning",
        "ann kumquat note",
        "ann kumquat note fact",
        "shared kumquat handbook",
    }


def test_a_user_view_without_shared_memories_is_their_own(people) -> None:
    from retrieval.embedding import backfill_embeddings
    from retrieval.models import Chunk

    backfill_embeddings(tenant_id=people["tenant"].pk, limit=100)
    # the shared note's chunk: the view's shared half is empty
    Chunk.objects.filter(user_id="").delete()
    found = {
        r["text"]
        for r in search(people["client"], query="anything at all", mode="vector", user_id="ann")
    }
    assert found == {
        "ann likes kumquat tea in the morning",
        "ann kumquat note",
        "ann kumquat note fact",
    }


@pytest.mark.parametrize("scan_below", [100_000, 0])  # the scope's rows tested; the full-text index
def test_text_search_as_a_user_returns_exactly_their_view(
    people, settings, scan_below, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Full text reads a user's view as two halves too (theirs, shared); together they find every
    memory of the view that says the word, and nothing else."""
    monkeypatch.setattr("retrieval.search.sql.TEXT_SCAN_BELOW", scan_below)
    found = {
        r["text"] for r in search(people["client"], query="kumquat", mode="text", user_id="ann")
    }
    assert found == {
        "ann likes kumquat tea in the morning",
        "ann kumquat note",
        "ann kumquat note fact",
        "shared kumquat handbook",
    }


def test_the_halves_of_a_users_view_keep_the_best_text_matches_of_their_or(people) -> None:
    """At every limit, the best of both halves are the rows, in the order, that one search over
    the OR of the two would return."""
    from retrieval.search import SearchRequest
    from retrieval.search.engine import owner_parts
    from retrieval.search.fulltext import build_text_query, text_source
    from retrieval.search.plan import plan_search
    from retrieval.search.sql import where_clause
    from retrieval.search.statements import select_rows

    req = SearchRequest(
        tenant_id=people["tenant"].pk, query="kumquat handbook note tea", mode="text", user_id="ann"
    )
    where, params = where_clause(req)
    tq = build_text_query(req, plan_search(req))
    orders = []
    for limit in range(1, 6):
        halves = select_rows(
            *text_source(req, tq, where, params, limit, owner_parts(plan_search(req)))
        )
        assert halves == select_rows(*text_source(req, tq, where, params, limit)), limit
        orders.append(halves)
    assert len(orders[-1]) == 4  # ann's three and the shared one, never bob's


def test_two_users_facts_with_the_same_key_are_two_facts(people) -> None:
    """Users collide on keys: ann's and bob's home_city are two facts, and an upsert by one never
    touches the other's."""
    client = people["client"]
    for user, city in (("ann", "Lisbon"), ("bob", "Oslo"), ("ann", "Porto")):
        response = client.post(
            "/api/v1/facts/",
            {
                "content": f"{user} lives in {city}",
                "user_id": user,
                "category": "profile",
                "key": "home_city",
            },
            format="json",
        )
        assert response.status_code in (200, 201), response.content
    by_user = {
        u: [
            f["content"]
            for f in client.get(f"/api/v1/facts/?key=home_city&user_id={u}").json()["results"]
        ]
        for u in ("ann", "bob")
    }
    assert by_user == {"ann": ["ann lives in Porto"], "bob": ["bob lives in Oslo"]}
