"""Ranking defaults: dates named in a query (retrieval.search.timehints; how they are read is
test_time_hints.py), MMR, summaries expanded to their messages."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from memoryhub.models import Session
from memoryhub.searchable import Searchable
from memoryhub.signals import memory_saved
from retrieval.search import Candidate, expand_summaries, mmr, weights, with_time_hints
from retrieval.search.timehints import time_hints
from tests.retrieval.conftest import search
from tests.retrieval.test_time_hints import _when


def _post(alice: Any, index: Any, session: str, content: str, when: str) -> None:
    index(alice, session, {"role": "user", "content": content, "created_at": when})


def test_search_prefers_memories_written_on_the_named_date(
    alice, index, settings, monkeypatch
) -> None:
    _post(alice, index, "june", "We went hiking in the hills.", "2022-06-12T10:00:00Z")
    _post(alice, index, "march", "We went hiking in the hills.", "2023-03-02T10:00:00Z")
    for mode in ("hybrid", "text", "vector"):
        found = search(alice, query="hiking in June", mode=mode, top_k=2).json()["results"]
        # Same words: without the hint the newer one wins the tie.
        assert [r["session"] for r in found][:1] == ["june"], mode
    monkeypatch.setattr(weights, "TIME_WEIGHT", 0.0)
    found = search(alice, query="hiking in June", top_k=2).json()["results"]
    assert [r["session"] for r in found][:1] == ["march"]


def test_a_date_is_a_preference_not_a_filter(alice, index) -> None:
    _post(alice, index, "only", "The invoice for the roof repair was paid.", "2023-03-02T10:00:00Z")
    found = search(alice, query="roof invoice in June", top_k=5).json()["results"]
    assert [r["session"] for r in found] == ["only"]


def test_memories_of_the_named_date_join_the_candidates(
    alice, index, settings, monkeypatch
) -> None:
    # Twelve better matches elsewhere fill the candidate list; the one written in June still comes
    # back.
    for i in range(12):
        _post(alice, index, f"other-{i}", f"Kayak {i}", "2023-03-02T10:00:00Z")
    _post(
        alice,
        index,
        "target",
        "The kayak got a long scratch on its side while we carried it down to the water.",
        "2022-06-20T10:00:00Z",
    )
    monkeypatch.setattr("retrieval.search.weights.CANDIDATES", 10)
    found = search(alice, query="kayak in June", mode="text", top_k=3).json()["results"]
    assert "target" in [r["session"] for r in found]
    monkeypatch.setattr(weights, "TIME_WEIGHT", 0.0)
    found = search(alice, query="kayak in June", mode="text", top_k=3).json()["results"]
    assert "target" not in [r["session"] for r in found]


def test_relative_dates_are_read_against_as_of(alice, index, settings, monkeypatch) -> None:
    # Wednesday 24 May 2023: "last week" is 15-21 May. Same words: without the hint the newer wins.
    _post(alice, index, "last-week", "We went hiking in the hills.", "2023-05-16T10:00:00Z")
    _post(alice, index, "this-week", "We went hiking in the hills.", "2023-05-23T10:00:00Z")
    for mode in ("hybrid", "text", "vector"):
        found = search(
            alice, query="hiking last week", mode=mode, top_k=2, as_of="2023-05-24T12:00:00Z"
        ).json()
        assert [r["session"] for r in found["results"]][:1] == ["last-week"], mode
    # Read against now (2026 and later), "last week" holds neither: the newer one first.
    found = search(alice, query="hiking last week", top_k=2).json()["results"]
    assert [r["session"] for r in found][:1] == ["this-week"]
    explained = search(
        alice, query="hiking last week", top_k=2, as_of="2023-05-24T12:00:00Z", explain=True
    ).json()
    steps = {s["step"]: s for s in explained["results"][0]["explain"]["steps"]}
    assert steps["date_hint"]["detail"] == (
        'written within 2023-05-15 to 2023-05-22 ("last week", as of 2023-05-24 12:00 UTC)'
    )
    monkeypatch.setattr(weights, "TIME_WEIGHT", 0.0)
    found = search(alice, query="hiking last week", top_k=2, as_of="2023-05-24T12:00:00Z").json()[
        "results"
    ]
    assert [r["session"] for r in found][:1] == ["this-week"]


def test_the_time_of_the_search_is_the_default_as_of(alice, index, settings) -> None:
    now = timezone.now()
    _post(
        alice,
        index,
        "then",
        "The dentist said to floss more.",
        (now - timedelta(days=21)).isoformat(),
    )
    _post(
        alice,
        index,
        "newer",
        "The dentist said to floss more.",
        (now - timedelta(days=2)).isoformat(),
    )
    found = search(
        alice, query="what did the dentist say three weeks ago", mode="text", top_k=2
    ).json()["results"]
    assert [r["session"] for r in found][:1] == ["then"]  # (the other is dropped as a duplicate)
    found = search(alice, query="what did the dentist say", mode="text", top_k=2).json()["results"]
    assert [r["session"] for r in found][:1] == ["newer"]


def test_context_reads_relative_dates_against_as_of(alice, index) -> None:
    _post(alice, index, "last-week", "We went hiking in the hills.", "2023-05-16T10:00:00Z")
    _post(alice, index, "this-week", "We went hiking in the hills.", "2023-05-23T10:00:00Z")
    body = {"query": "hiking last week", "top_k": 1, "as_of": "2023-05-24T12:00:00Z"}
    items = alice.post("/api/v1/context/", body, format="json").json()["items"]
    assert [i["session"] for i in items if i["source"] == "relevant"] == ["last-week"]


@pytest.mark.parametrize("as_of", ["last week", "2023-13-01T00:00:00Z", 5, ["2023-05-24"]])
def test_an_unreadable_as_of_is_a_400_and_changes_nothing(alice, index, as_of: Any) -> None:
    _post(alice, index, "kept", "We went hiking in the hills.", "2023-05-16T10:00:00Z")
    for path in ("/api/v1/search/", "/api/v1/context/"):
        response = alice.post(path, {"query": "hiking", "as_of": as_of}, format="json")
        assert response.status_code == 400, response.content
        assert response.json()["error"]["code"] == "validation_error"
        assert "as_of" in response.json()["error"]["details"]["fields"]
    assert [r["session"] for r in search(alice, query="hiking").json()["results"]] == ["kept"]


def test_as_of_at_the_ends_of_the_calendar_is_no_error(alice, index) -> None:
    _post(alice, index, "kept", "We went hiking in the hills.", "2023-05-16T10:00:00Z")
    # nothing was recorded yet
    for as_of, query, found in (
        ("0001-01-01T00:00:00Z", "hiking 2 years ago", []),
        ("9999-12-31T23:59:59Z", "hiking this year", ["kept"]),
    ):
        response = search(alice, query=query, as_of=as_of)
        assert response.status_code == 200, response.content
        assert [r["session"] for r in response.json()["results"]] == found


def test_relative_dates_never_reach_another_tenant(alice, bob, index) -> None:
    _post(alice, index, "last-week", "Secret hiking plans.", "2023-05-16T10:00:00Z")
    assert (
        search(bob, query="hiking last week", as_of="2023-05-24T12:00:00Z").json()["results"] == []
    )


def test_named_dates_never_reach_another_tenant(alice, bob, index) -> None:
    _post(alice, index, "june", "Secret hiking plans.", "2022-06-12T10:00:00Z")
    assert search(bob, query="hiking in June").json()["results"] == []


# --- maximal marginal relevance ------------------------------------------------------------------


def _candidate(pk: int) -> Candidate:
    return Candidate(
        pk=pk,
        session_id=1,
        text=str(pk),
        contextual=False,
        created_ts=0.0,
        sequence_end=pk,
        importance=0.5,
    )


def test_mmr_skips_a_result_that_repeats_one_already_listed() -> None:
    ranked = [_candidate(1), _candidate(2), _candidate(3)]
    scores = {1: 1.0, 2: 0.9, 3: 0.8}
    similar = {(1, 2): 0.95, (1, 3): 0.1, (2, 3): 0.1}
    assert [c.pk for c in mmr(ranked, scores, similar, 0.6, 3)] == [1, 3, 2]
    assert [c.pk for c in mmr(ranked, scores, similar, 1.0, 3)] == [1, 2, 3]  # off
    # Mostly relevance: the near copy still comes second when its score is far ahead.
    assert [c.pk for c in mmr(ranked, {1: 1.0, 2: 0.95, 3: 0.0}, similar, 0.6, 3)] == [1, 2, 3]


def test_mmr_reorders_only_the_head() -> None:
    ranked = [_candidate(i) for i in range(1, 6)]
    scores = {i: 1.0 - i / 10 for i in range(1, 6)}
    out = mmr(ranked, scores, {(1, 2): 0.99}, 0.5, 3)
    assert [c.pk for c in out] == [1, 3, 2, 4, 5]


def test_hybrid_search_spreads_over_distinct_memories(alice, index, settings, monkeypatch) -> None:
    for session in ("a", "b", "c"):
        index(
            alice, session, {"role": "user", "content": "The heron nests by the lake every spring."}
        )
    index(alice, "d", {"role": "user", "content": "A heron nests near the river bridge."})
    index(
        alice,
        "e",
        {
            "role": "user",
            "content": "The heron nests by the lake every spring, we saw it again today.",
        },
    )
    # MMR alone: coverage would give the second place by evidence
    monkeypatch.setattr("retrieval.search.weights.COVERAGE", 1.0)
    plain = [r["text"] for r in search(alice, query="heron nests lake", top_k=2).json()["results"]]
    monkeypatch.setattr(weights, "MMR", 0.3)
    spread = [r["text"] for r in search(alice, query="heron nests lake", top_k=2).json()["results"]]
    assert plain[1] == "The heron nests by the lake every spring, we saw it again today."
    assert spread[1] == "A heron nests near the river bridge."


# --- summaries give their place to the messages they summarise ----------------------------------


def test_expand_summaries_puts_the_best_source_message_in_the_summarys_place() -> None:
    summary = Candidate(
        pk=10,
        session_id=1,
        text="s",
        contextual=False,
        created_ts=0.0,
        sequence_end=8,
        importance=0.5,
        kind="summary",
        sequence_start=1,
    )
    elsewhere = Candidate(
        pk=11,
        session_id=2,
        text="x",
        contextual=False,
        created_ts=0.0,
        sequence_end=3,
        importance=0.5,
        sequence_start=3,
    )
    source = Candidate(
        pk=12,
        session_id=1,
        text="m",
        contextual=False,
        created_ts=0.0,
        sequence_end=5,
        importance=0.5,
        sequence_start=5,
    )
    outside = Candidate(
        pk=13,
        session_id=1,
        text="o",
        contextual=False,
        created_ts=0.0,
        sequence_end=9,
        importance=0.5,
        sequence_start=9,
    )
    assert [c.pk for c in expand_summaries([summary, elsewhere, outside, source])] == [12, 11, 13]
    # No source message among the candidates: the summary stays.
    assert [c.pk for c in expand_summaries([summary, elsewhere, outside])] == [10, 11, 13]


def _summarised_session(alice: Any, index: Any, cast: Any) -> None:
    index(
        alice,
        "house",
        {"role": "user", "content": "The plumber came on Tuesday."},
        {"role": "user", "content": "He fixed the boiler and replaced a valve."},
    )
    # Other memories, so that the plumber's words are not ones most of her memories say (the
    # relevance floor counts a word by how rare it is among them).
    index(
        alice,
        "garden",
        *[
            {"role": "user", "content": text}
            for text in (
                "The roses need pruning.",
                "Water the basil daily.",
                "The hedge is too tall.",
                "Buy compost on Friday.",
            )
        ],
    )
    session = Session.objects.get(tenant=cast.alice_tenant, external_id="house")
    memory_saved.send(
        sender=None,
        kind="summary",
        searchable=Searchable(
            kind="summary",
            source_id="900",
            tenant_id=cast.alice_tenant.pk,
            text="- user: plumber fixed boiler valve",
            created_at=timezone.now(),
            session_id=session.pk,
            workspace_id=session.workspace_id,
            channel_id=session.channel_id,
            tier="conversation",
            sequence_start=1,
            sequence_end=2,
        ),
    )


def test_a_summary_hit_returns_the_message_it_summarises(
    alice, index, cast, settings, monkeypatch
) -> None:
    _summarised_session(alice, index, cast)
    for mode in ("hybrid", "text", "vector"):
        found = search(alice, query="plumber boiler valve", top_k=5, mode=mode).json()["results"]
        house = [r["kind"] for r in found if r["session"] == "house"]
        assert house == ["event", "event"], mode
        assert found[0]["text"] == "He fixed the boiler and replaced a valve.", mode
    monkeypatch.setattr(weights, "EXPAND_SUMMARIES", False)
    found = search(alice, query="plumber boiler valve", top_k=5).json()["results"]
    assert "summary" in [r["kind"] for r in found]


def test_a_search_for_summaries_still_returns_summaries(alice, bob, index, cast) -> None:
    _summarised_session(alice, index, cast)
    found = search(alice, query="plumber boiler valve", kinds=["summary"]).json()["results"]
    assert [r["text"] for r in found] == ["- user: plumber fixed boiler valve"]
    assert search(bob, query="plumber boiler valve", kinds=["summary"]).json()["results"] == []


def test_date_hints_never_lower_a_score() -> None:
    june = _candidate(1)
    june.created_ts = _when(year=2023, month=6, day=3).timestamp()
    other = _candidate(2)
    hints = time_hints("in June")
    assert with_time_hints({1: -0.2, 2: -0.1}, {1: june, 2: other}, hints, 0.3) == {
        1: -0.2,
        2: -0.1,
    }
    assert with_time_hints({1: 0.5, 2: 1.0}, {1: june, 2: other}, hints, 0.3) == {1: 0.8, 2: 1.0}
