"""Typo-tolerant full text: a query word the scope never says matches the
scope's closest words, never another tenant's or user's; a correctly spelled query is unchanged."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection, transaction

from retrieval.search import SearchRequest, fuzzy, hybrid_search
from retrieval.search.sql import where_clause
from tests.retrieval.conftest import search

FLIGHT = "the Lisbon flight is at 9"


def texts(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [r["text"] for r in response.json()["results"]]


@pytest.fixture
def trip(alice, index) -> None:
    index(
        alice,
        "trip",
        {"role": "user", "content": FLIGHT},
        {"role": "user", "content": "Pack the blue suitcase and the camera."},
        {"role": "user", "content": "Dinner with Marta on Friday."},
    )


def test_similarity_is_pg_trgm_s() -> None:
    # "  lisbn " and "  lisbon " share 4 of their 9 distinct three-letter pieces.
    assert fuzzy.similarity("lisbn", "lisbon") == pytest.approx(4 / 9)
    assert fuzzy.similarity("walrus", "walrus") == 1.0
    assert fuzzy.similarity("walrus", "camera") == 0.0


@pytest.mark.parametrize("mode", ["text", "fuzzy"])
def test_a_misspelt_query_finds_the_memory(alice, trip, mode: str) -> None:
    # (The next messages match too, through their conversation context, at a discount.)
    assert texts(search(alice, query="Lisbn fligt", mode=mode))[0] == FLIGHT


@pytest.mark.parametrize("mode", ["text", "fuzzy"])
@pytest.mark.parametrize("query", ["Kisbon", "isbon"])
def test_a_typo_in_the_first_letter_finds_the_memory(alice, trip, mode: str, query: str) -> None:
    # A wrong first letter (pg_trgm similarity has no favourite letter): a wrong or missing
    # first letter still finds the scope's closest word.
    assert texts(search(alice, query=query, mode=mode))[0] == FLIGHT


def test_a_first_letter_typo_is_looked_up_in_one_statement(
    alice, trip, cast, django_assert_num_queries
) -> None:
    # statistics, the vocabulary near the word (every range in one statement), visibility, rows,
    # the rows' details, access counts
    with django_assert_num_queries(6):
        hits = hybrid_search(tenant_id=cast.alice_tenant.pk, query="Kisbon", mode="text")
    assert hits[0].chunk.text == FLIGHT


def test_hybrid_search_scores_the_misspelt_words_on_full_text(alice, trip) -> None:
    results = search(alice, query="Lisbn fligt", mode="hybrid").json()["results"]
    text_scores = {r["text"]: r["scores"]["text"] or 0.0 for r in results}
    assert max(text_scores, key=text_scores.get) == FLIGHT and text_scores[FLIGHT] > 0


def test_the_setting_turns_it_off_in_text_mode_but_not_in_fuzzy_mode(
    alice, trip, settings, monkeypatch
) -> None:
    monkeypatch.setattr("retrieval.search.weights.FUZZY", False)
    assert texts(search(alice, query="Lisbn fligt", mode="text")) == []
    assert texts(search(alice, query="Lisbn fligt", mode="fuzzy"))[0] == FLIGHT


def test_a_correctly_spelt_query_is_unchanged(
    alice, trip, cast, settings, django_assert_num_queries, monkeypatch
) -> None:
    def run() -> list[tuple[str, float]]:
        hits = hybrid_search(
            tenant_id=cast.alice_tenant.pk, query="Lisbon flight camera", mode="text"
        )
        return [(h.chunk.text, h.score) for h in hits]

    # statistics, candidates, rows, access counts: no vocabulary look-up
    with django_assert_num_queries(4):
        with_fuzzy = run()
    monkeypatch.setattr("retrieval.search.weights.FUZZY", False)
    assert run() == with_fuzzy and with_fuzzy[0][0] == FLIGHT


def test_a_guessed_word_weighs_less_than_a_word_the_query_says(alice, index) -> None:
    index(
        alice,
        "s",
        {"role": "user", "content": "The Lisbon office moved."},
        {"role": "user", "content": "The flight was late."},
    )
    # "flight" is said; "lisbn" is guessed as "lisbon": the chunk saying the query's own word first.
    assert texts(search(alice, query="Lisbn flight", mode="text")) == [
        "The flight was late.",
        "The Lisbon office moved.",
    ]


def test_fuzzy_mode_widens_words_the_scope_says(alice, index) -> None:
    index(alice, "s1", {"role": "user", "content": "We met in Lisbon."})
    index(alice, "s2", {"role": "user", "content": "Lisboa again!"})
    assert texts(search(alice, query="Lisbon", mode="text")) == ["We met in Lisbon."]
    assert sorted(texts(search(alice, query="Lisbon", mode="fuzzy"))) == [
        "Lisboa again!",
        "We met in Lisbon.",
    ]


def test_a_typo_never_surfaces_another_tenants_words(alice, bob, index) -> None:
    index(bob, "trip", {"role": "user", "content": FLIGHT})
    index(alice, "home", {"role": "user", "content": "The cat sleeps on the sofa."})
    for mode in ("text", "hybrid", "fuzzy"):
        assert FLIGHT not in texts(search(alice, query="Lisbn fligt", mode=mode))


def test_a_typo_never_surfaces_another_users_words(cast, index) -> None:
    client = cast.alice
    for sid, user in (("ann-chat", "ann"), ("bob-chat", "bob")):
        assert (
            client.post(
                "/api/v1/sessions/", {"id": sid, "user_id": user}, format="json"
            ).status_code
            == 201
        )
    index(client, "ann-chat", {"role": "user", "content": "Lisboa in spring"})
    index(client, "bob-chat", {"role": "user", "content": "bob's Lisbon flight"})
    req = SearchRequest(tenant_id=cast.alice_tenant.pk, query="Lisbn", mode="text", user_id="ann")
    where, params = where_clause(req)
    # The tenant's vocabulary knows both; ann's alternatives are only the words she may see.
    found = fuzzy.alternatives(req, {"lisbn": 0}, where, params, every_word=False, scope_size=2)
    assert [a.lexeme for a in found["lisbn"]] == ["lisboa"]
    assert texts(search(client, query="Lisbn", mode="text", user_id="ann")) == ["Lisboa in spring"]
    bobs = texts(search(client, query="Lisbn", mode="text", user_id="bob"))
    assert bobs[0] == "bob's Lisbon flight"  # the closer word, for the user who said it


def _index_names(sql: str, params: list[Any]) -> set[str]:
    """The indexes the plan of `sql` reads, with sequential scans off (a test table is tiny: the
    planner would read it whole)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN (FORMAT JSON, COSTS OFF) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    names: set[str] = set()

    def walk(node: dict[str, Any]) -> None:
        if "Index Name" in node:
            names.add(node["Index Name"])
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return names


@pytest.mark.parametrize("walk", [True, False])
def test_the_visibility_check_walks_the_scope_or_reads_the_full_text_index(
    alice, trip, cast, walk: bool
) -> None:
    """A common word's full-text postings span every tenant's rows: a small scope is walked row
    by row instead, with the same answer."""
    # The tenant written so that no index serves it: only the full-text index could narrow the rows.
    where, params = "c.tenant_id + 0 = %s", [cast.alice_tenant.pk]
    captured: list[tuple[str, list[Any]]] = []

    def keep(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        captured.append((sql, list(params)))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        visible = fuzzy.visible_lexemes(["lisbon", "suitcas", "paris"], where, params, walk)
    assert visible == {"lisbon", "suitcas"}
    ((sql, sql_params),) = captured
    indexes = _index_names(sql, sql_params)
    if walk:
        assert "chunk_search_vector" not in indexes, indexes
    else:
        assert "chunk_search_vector" in indexes, indexes  # the plan check can fail


def test_only_a_small_scope_that_is_all_of_its_statistics_is_walked(
    cast, settings, monkeypatch
) -> None:
    """A word the statistics' buckets say but a user, a filter or a conversation hides would be
    walked to the end of the scope: those searches read the full-text index."""
    monkeypatch.setattr("retrieval.search.sql.TEXT_SCAN_BELOW", 100)
    tenant = cast.alice_tenant.pk
    assert fuzzy.walks_scope(SearchRequest(tenant_id=tenant), 99)
    assert not fuzzy.walks_scope(SearchRequest(tenant_id=tenant), 100)
    assert not fuzzy.walks_scope(SearchRequest(tenant_id=tenant), 0)  # no statistics yet
    for narrowed in (
        {"user_id": "ann"},
        {"user_id": ""},
        {"tags": ["x"]},
        {"roles": ["user"]},
        {"kinds": ["note"]},
        {"agent": "a"},
        {"since": datetime(2024, 1, 1, tzinfo=UTC)},
        {"until": datetime(2024, 1, 1, tzinfo=UTC)},
        {"scope": "conversation"},
    ):
        assert not fuzzy.walks_scope(SearchRequest(tenant_id=tenant, **narrowed), 99), narrowed
