"""The SQL search builds, checked as plain strings and parameters (no database): the shared WHERE
clause, tsquery quoting, BM25 term weights and the terms that select text candidates."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from retrieval.search import weights
from retrieval.search.fulltext import (
    MATCH_BUDGET,
    PAIR_ABOVE,
    TextQuery,
    pair_terms,
    select_match_terms,
    tsquery_literal,
    weigh_terms,
)
from retrieval.search.request import SearchRequest
from retrieval.search.sql import scope_clause, where_clause


def test_where_starts_with_the_tenant_and_adds_each_filter_given() -> None:
    # A fact's superseded versions are left out unless asked as of a moment they were true
    # (docs/memory-model.md#fact-history).
    assert where_clause(SearchRequest(tenant_id=7)) == (
        "c.tenant_id = %s AND c.valid_to IS NULL",
        [7],
    )
    since, until = datetime(2023, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC)
    req = SearchRequest(
        tenant_id=7,
        key_workspace_id=3,
        scope="workspace",
        workspace_ids=[3, 4],
        tags=["x"],
        roles=["user"],
        kinds=["event"],
        agent="bot",
        user_id="u1",
        since=since,
        until=until,
    )
    sql, params = where_clause(req)
    assert sql == " AND ".join(
        [
            "c.tenant_id = %s",
            "c.workspace_id = %s",
            "(c.workspace_id = ANY(%s) OR c.tier = 'account')",
            "c.tags @> %s::varchar[]",
            "c.role = ANY(%s)",
            "c.kind = ANY(%s)",
            "c.agent = %s",
            "(c.user_id = %s OR (c.user_id = '' AND NOT c.kind IN ('event', 'summary')))",
            "c.created_at >= %s",
            "c.created_at < %s",
            "c.valid_to IS NULL",
        ]
    )
    assert params == [7, 3, [3, 4], ["x"], ["user"], ["event"], "bot", "u1", since, until]
    as_of = datetime(2023, 6, 1, tzinfo=UTC)
    assert where_clause(SearchRequest(tenant_id=7, as_of=as_of)) == (
        "c.tenant_id = %s AND c.created_at <= %s AND (c.valid_to IS NULL OR c.valid_to > %s)",
        [7, as_of, as_of],
    )
    # A replay reading relative dates against as_of (the benchmarks) sees everything current.
    assert where_clause(SearchRequest(tenant_id=7, as_of=as_of, history=False))[0].endswith(
        "c.valid_to IS NULL"
    )
    # "" is a user too (a session without one): the tenant's unowned rows (that conversation, other
    # unowned ones, shared knowledge), never any user's.
    assert where_clause(SearchRequest(tenant_id=7, user_id="")) == (
        "c.tenant_id = %s AND c.user_id = '' AND c.valid_to IS NULL",
        [7],
    )


def test_scopes_widen_to_the_tiers_above() -> None:
    conversation = SearchRequest(
        tenant_id=1,
        scope="conversation",
        session_id=5,
        session_channel_id=6,
        session_workspace_id=7,
    )
    sql, params = scope_clause(conversation)
    assert (
        sql == "(c.session_id = %s OR (c.tier = 'channel' AND c.channel_id = %s)"
        " OR (c.tier = 'workspace' AND c.workspace_id = %s) OR c.tier = 'account')"
    )
    assert params == [5, 6, 7]
    channel = SearchRequest(tenant_id=1, scope="channel", channel_ids=[2])
    assert scope_clause(channel) == (
        (
            "(c.channel_id = ANY(%s) OR (c.tier = 'workspace' AND c.workspace_id = ANY(%s)) OR"
            " c.tier = 'account')"
        ),
        [[2], []],
    )
    # A scope without its ids, and the account scope, add nothing: the tenant clause is the scope.
    assert scope_clause(SearchRequest(tenant_id=1, scope="conversation")) == ("", [])
    assert scope_clause(SearchRequest(tenant_id=1, scope="account")) == ("", [])


def test_tsquery_literals_are_quoted_never_parsed() -> None:
    assert tsquery_literal("otter") == "'otter'"
    assert tsquery_literal("o'neil") == "'o''neil'"
    assert tsquery_literal("a\\b") == "'a\\\\b'"


def test_idf_weighs_rare_terms_higher_and_drops_unknown_ones() -> None:
    terms = weigh_terms(
        ["'rare'", "'unknown'", "'common'"], {"'rare'": 1, "'unknown'": 0, "'common'": 10}, 100
    )
    assert [t for t, _, _ in terms] == ["'rare'", "'common'"]
    assert terms[0][1] == pytest.approx(math.log(1 + 99.5 / 1.5))
    assert terms[1][1] == pytest.approx(math.log(1 + 90.5 / 10.5))
    assert [df for _, _, df in terms] == [1, 10]


def test_the_rarest_terms_select_candidates_within_the_budget() -> None:
    terms = [("'x'", 0.1, 300), ("'y'", 0.9, 100), ("'z'", 0.5, 150)]
    assert MATCH_BUDGET == 500
    assert select_match_terms(terms) == ["'y'", "'z'"]  # 100 + 150; adding 300 would pass 500
    assert select_match_terms([("'x'", 0.1, 900)]) == ["'x'"]  # the rarest always selects
    assert select_match_terms([]) == []


def test_a_hybrid_read_where_even_the_rarest_word_is_common_pairs_its_two_rarest() -> None:
    """Above PAIR_ABOVE chunks of the read for the rarest word, the two rarest select together,
    rarest first, when independence would have at least weights.CANDIDATES chunks say both."""
    assert (PAIR_ABOVE, weights.CANDIDATES) == (5_000, 100)
    common = [("'go'", 0.5, 400_000), ("'park'", 2.0, 18_000), ("'melani'", 1.5, 60_000)]
    assert pair_terms(common, 1_000_000) == ["'park'", "'melani'"]  # 18k x 60k / 1M = 1,080
    # the rarest at the threshold: it selects alone, as the budget has it
    assert pair_terms([("'a'", 1.0, 5_000), ("'b'", 1.0, 900_000)], 1_000_000) == []
    # two words too rare together to expect 100 chunks saying both (6k x 6k / 1M = 36)
    assert pair_terms([("'a'", 1.0, 6_000), ("'b'", 1.0, 6_000)], 1_000_000) == []
    assert pair_terms([("'a'", 1.0, 90_000)], 1_000_000) == []  # one word: nothing to pair
    assert pair_terms(common, 0) == []  # an unknown read
    # a read of 5,000 chunks or fewer never pairs, whatever its statistics' scope counts (a
    # session's channel may count a word more often than her own small read holds chunks)
    assert pair_terms([("'a'", 1.0, 40_000), ("'b'", 1.0, 60_000)], 1_100) == []


def test_paired_match_terms_are_anded() -> None:
    tq = TextQuery([("'a'", 1.0), ("'b'", 1.0)], False, ["'a'", "'b'"], match_all=True)
    assert tq.match_sql("a b") == ("c.search_vector @@ %s::tsquery", ["'a' & 'b'"])


VECTORS = {  # a chunk's tsvector: own words weigh A, conversation context D
    "a own, b context": "'a':1A 'b':2",
    "both own": "'a':1A 'b':2A",
    "neither": "'c':1A 'd':2",
}


def _bm25(terms: float, own_words: int) -> float:
    return terms * 2.2 / (1 + 1.2 * (1 - 0.5 + 0.5 * own_words / 12.0))


@pytest.mark.django_db
def test_bm25_score_sql_counts_context_words_at_a_discount(settings, monkeypatch) -> None:
    from django.db import connection

    monkeypatch.setattr(weights, "TEXT_CONTEXT_WEIGHT", 0.5)
    tq = TextQuery([("'a'", 2.0), ("'b'", 1.0)], False)
    sql, params = tq.score_sql()
    said, said_params = tq.said_sql()
    assert TextQuery([], False).score_sql() == ("0.0", [])
    assert TextQuery([], False).said_sql() == ("0", [])
    expected = {"a own, b context": _bm25(2.0 + 0.5, 1), "both own": _bm25(3.0, 2), "neither": 0.0}
    with connection.cursor() as cursor:
        for name, vector in VECTORS.items():
            cursor.execute(
                f"SELECT ({sql})::float8, {said} FROM (SELECT %s::tsvector AS search_vector) c",
                [*params, *said_params, vector],
            )
            score, terms = cursor.fetchone()
            assert abs(score - expected[name]) < 1e-9, name
            # Which terms the chunk's own words say: a context word is not said.
            assert terms == {"a own, b context": 0b01, "both own": 0b11, "neither": 0}[name]


@pytest.mark.django_db
def test_bm25_per_message_counts_what_the_messages_own_words_say(monkeypatch) -> None:
    from django.db import connection

    monkeypatch.setattr(weights, "TEXT_CONTEXT_WEIGHT", 0.5)
    tq = TextQuery([("'a'", 2.0), ("'b'", 1.0)], False)
    sql, params = tq.score_sql(per_message=True)
    # (chunk's tsvector, message says a, message says b, message's own words): the chunk scores on
    # its message's words and length (NULLs: a message of one chunk, its own), plus a thousandth of
    # its own score.
    cases = [
        ("a own, b context", False, True, 5, _bm25(3.0, 5) + 0.001 * _bm25(2.5, 1)),
        ("a own, b context", None, None, None, 1.001 * _bm25(2.5, 1)),
        ("neither", True, False, 3, _bm25(2.0, 3)),
        ("neither", None, None, None, 0.0),
    ]
    with connection.cursor() as cursor:
        for name, says_a, says_b, length, expected in cases:
            cursor.execute(
                f"SELECT ({sql})::float8 FROM (SELECT %s::tsvector AS search_vector) c,"
                " (SELECT %s::bool AS p0, %s::bool AS p1, %s::int AS len) m",
                [*params, VECTORS[name], says_a, says_b, length],
            )
            assert abs(cursor.fetchone()[0] - expected) < 1e-9, (name, says_a, says_b)


@pytest.mark.django_db
def test_terms_past_the_said_bits_still_score(settings) -> None:
    from django.db import connection

    from retrieval.search.textquery import SAID_BITS

    # More terms than bits (typo tolerance adds alternatives to a query's 32 lexemes): the first
    # and the last term, both said, both score; only the first has a bit.
    terms = [(f"'t{i}'", 1.0) for i in range(SAID_BITS + 8)]
    tq = TextQuery(terms, False)
    sql, params = tq.score_sql()
    said, said_params = tq.said_sql()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT ({sql})::float8, {said} FROM (SELECT %s::tsvector AS search_vector) c",
            [*params, *said_params, f"'t0':1A 't{SAID_BITS + 7}':2A"],
        )
        score, bits = cursor.fetchone()
    assert abs(score - _bm25(2.0, 2)) < 1e-9
    assert bits == 1


def test_match_sql_ors_the_selecting_terms(settings, monkeypatch) -> None:
    monkeypatch.setattr(weights, "TEXT_CONTEXT_WEIGHT", 0.3)
    tq = TextQuery([("'a'", 1.0), ("'b'", 1.0)], False, ["'a'", "'b'"])
    assert tq.match_sql("a b") == ("c.search_vector @@ %s::tsquery", ["'a' | 'b'"])
    # context words do not count: own words (A) only
    monkeypatch.setattr(weights, "TEXT_CONTEXT_WEIGHT", 0.0)
    assert tq.match_sql("a b") == ("c.search_vector @@ %s::tsquery", ["'a':A | 'b':A"])
    strict = TextQuery([("'a'", 1.0)], True, ["'a'"])
    sql, params = strict.match_sql('"a" -b')
    # Phrases and exclusions must hold in the chunk's own words.
    assert sql.endswith(
        "ts_filter(c.search_vector, '{a}') @@ websearch_to_tsquery('pg_catalog.english', %s)"
    )
    assert params == ["'a':A", '"a" -b']
