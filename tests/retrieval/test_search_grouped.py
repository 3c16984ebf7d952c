"""POST /search/ with group_by "session": which conversations are about the query, each with its
best matches; its bad input, and tenants and users kept apart."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval.search import Candidate
from retrieval.search.rerank import top_sessions
from tests.base import error_code, make_client, make_key, new_session
from tests.retrieval.conftest import search


def grouped(client: Any, **body: Any) -> dict[str, Any]:
    response = search(client, group_by="session", **body)
    assert response.status_code == 200, response.content
    out = response.json()
    assert out["group_by"] == "session"
    # The results come conversation by conversation, in the order and numbers `sessions` gives.
    assert [r["session"] for r in out["results"]] == [
        g["session"] for g in out["sessions"] for _ in range(g["hits"])
    ]
    assert [g["score"] for g in out["sessions"]] == sorted(
        (g["score"] for g in out["sessions"]), reverse=True
    )
    return out


@pytest.fixture
def trips(alice, index) -> None:
    index(
        alice,
        "lisbon-trip",
        {"role": "user", "content": "I fly to Lisbon on 3 May."},
        {"role": "assistant", "content": "Noted: Lisbon, 3 May."},
        {"role": "user", "content": "In Lisbon I want to see the Belem tower."},
        {"role": "user", "content": "Book a hotel in Lisbon near Alfama."},
        {"role": "user", "content": "The Lisbon tram 28 is a must."},
    )
    index(
        alice,
        "recipes",
        {"role": "user", "content": "Pasteis de nata, the custard tarts from Lisbon."},
        {"role": "user", "content": "Bake them at 250 degrees."},
    )
    index(alice, "work", {"role": "user", "content": "The quarterly report is due on Friday."})
    alice.post("/api/v1/notes/", {"content": "Lisbon is the capital of Portugal."}, format="json")


@pytest.mark.parametrize("mode", ["hybrid", "text", "exact"])
def test_the_conversation_with_most_evidence_comes_first_with_its_best_matches(
    alice, trips, mode: str
) -> None:
    out = grouped(alice, query="Lisbon", mode=mode, top_k=2)
    assert [g["session"] for g in out["sessions"]] == ["lisbon-trip", "recipes"]
    # Default hits_per_session 3. "Bake them at 250 degrees." says Lisbon only in its conversation
    # context: text search lists it, hybrid search's relevance floor does not (it is not about
    # Lisbon).
    assert [g["hits"] for g in out["sessions"]] == [3, 2 if mode == "text" else 1]
    assert all("Lisbon" in r["text"] for r in out["results"][:3])
    assert (
        out["sessions"][0]["channel"] == "general" and out["sessions"][0]["workspace"] == "default"
    )
    # the note has no conversation: left out
    assert all(r["session"] is not None for r in out["results"])


def test_top_k_counts_conversations_and_hits_per_session_the_matches_each_shows(
    alice, trips
) -> None:
    out = grouped(alice, query="Lisbon", mode="text", top_k=1, hits_per_session=5)
    assert [(g["session"], g["hits"]) for g in out["sessions"]] == [("lisbon-trip", 5)]
    out = grouped(alice, query="Lisbon", mode="text", top_k=10, hits_per_session=1)
    assert [(g["session"], g["hits"]) for g in out["sessions"]] == [
        ("lisbon-trip", 1),
        ("recipes", 1),
    ]
    assert len(out["results"]) == 2


def test_without_group_by_the_response_is_as_before(alice, trips) -> None:
    response = search(alice, query="Lisbon", mode="text")
    assert response.status_code == 200
    assert set(response.json()) == {"mode", "fusion", "scope", "profile", "results"}


def test_explain_works_grouped(alice, trips) -> None:
    out = grouped(alice, query="Lisbon", top_k=2, explain=True)
    assert [r["explain"]["rank"] for r in out["results"]] == list(range(1, len(out["results"]) + 1))


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"group_by": "user"}, "invalid_choice"),
        ({"group_by": ["session"]}, "invalid"),
        ({"hits_per_session": 2}, "group_by_required"),
        ({"group_by": "session", "hits_per_session": 0}, "min_value"),
        ({"group_by": "session", "hits_per_session": 11}, "max_value"),
        ({"group_by": "session", "hits_per_session": "3"}, "invalid"),
        ({"group_by": "session", "hits_per_session": True}, "invalid"),
        ({"group_by": "session", "top_k": 0}, "min_value"),
    ],
)
def test_bad_grouping_is_a_400_with_its_code(alice, trips, body: dict[str, Any], code: str) -> None:
    response = search(alice, query="Lisbon", **body)
    assert response.status_code == 400, response.content
    assert error_code(response) in (code, "validation_error")
    fields = response.json()["error"]["details"]["fields"]  # which field and why, machine-readable
    assert any(e["code"] == code for errors in fields.values() for e in errors), fields


def test_other_tenants_conversations_are_never_listed(alice, bob, trips, index) -> None:
    index(bob, "bobs-lisbon", {"role": "user", "content": "Lisbon Lisbon Lisbon, my Lisbon trip."})
    mine = grouped(alice, query="Lisbon", top_k=10)
    assert "bobs-lisbon" not in {g["session"] for g in mine["sessions"]}
    theirs = grouped(bob, query="Lisbon", top_k=10)
    assert [g["session"] for g in theirs["sessions"]] == ["bobs-lisbon"]
    assert {r["session"] for r in theirs["results"]} == {"bobs-lisbon"}


def test_a_user_sees_their_own_conversations_only(alice, trips, index, cast) -> None:
    new_session(alice, "ann-lisbon", user_id="ann")
    new_session(alice, "cid-lisbon", user_id="cid")
    index(alice, "ann-lisbon", {"role": "user", "content": "Ann loves Lisbon."})
    index(alice, "cid-lisbon", {"role": "user", "content": "Cid hates Lisbon."})
    listed = {
        g["session"] for g in grouped(alice, query="Lisbon", user_id="ann", top_k=10)["sessions"]
    }
    assert "ann-lisbon" in listed and "cid-lisbon" not in listed
    # Conversations nobody owns are the tenant's: in a tenant-wide read, not in a user's.
    assert not {"lisbon-trip", "recipes"} & listed
    assert {"lisbon-trip", "recipes"} <= {
        g["session"] for g in grouped(alice, query="Lisbon", top_k=10)["sessions"]
    }
    # A key bound to a user is that user, whatever the body asks.
    cids_key = make_client(make_key(cast.alice_tenant, user="cid"))
    listed = {g["session"] for g in grouped(cids_key, query="Lisbon", top_k=10)["sessions"]}
    assert "cid-lisbon" in listed and "ann-lisbon" not in listed


def _candidate(pk: int, session: int | None) -> Candidate:
    return Candidate(
        pk=pk,
        session_id=session,
        text=f"t{pk}",
        contextual=False,
        created_ts=0.0,
        sequence_end=pk,
        importance=0.5,
        sequence_start=pk,
    )


def test_top_sessions_orders_by_evidence_and_keeps_each_ones_best_results() -> None:
    ranked = [
        _candidate(1, 10),
        _candidate(2, None),
        _candidate(3, 20),
        _candidate(4, 20),
        _candidate(5, 20),
        _candidate(6, 30),
        _candidate(7, 10),
    ]
    scores = {1: 0.9, 2: 0.95, 3: 0.8, 4: 0.7, 5: 0.6, 6: 0.5, 7: 0.4}
    groups = top_sessions(ranked, scores, {10: 0.5, 20: 0.9, 30: 0.1}, top_k=2, per_session=2)
    assert [(s, score, [c.pk for c in members]) for s, score, members in groups] == [
        (20, 0.9, [3, 4]),
        (10, 0.5, [1, 7]),
    ]
    # Without evidence: by each conversation's best result; ties keep the rank order.
    groups = top_sessions(ranked, scores | {6: 0.9}, None, top_k=3, per_session=1)
    assert [(s, [c.pk for c in members]) for s, _, members in groups] == [
        (10, [1]),
        (30, [6]),
        (20, [3]),
    ]


def test_top_sessions_shows_a_repeated_text_once_per_conversation_but_in_each() -> None:
    ranked = [_candidate(1, 10), _candidate(2, 10), _candidate(3, 10), _candidate(4, 20)]
    ranked[1].text = ranked[2].text = ranked[3].text = "ok, sounds good"
    groups = top_sessions(ranked, {1: 0.9, 2: 0.8, 3: 0.7, 4: 0.6}, None, top_k=2, per_session=3)
    assert [(s, [c.pk for c in members]) for s, _, members in groups] == [(10, [1, 2]), (20, [4])]
