"""The terms that select full-text candidates are chosen by how many chunks of what the search
reads say them: a session's default read weighs its words by its channel's statistics but reads
its owner's every channel, where a word rare in the channel may be common."""

from __future__ import annotations

from typing import Any

import pytest

from memoryhub.models import Session
from retrieval.models import Chunk
from retrieval.scoping import read_as_session
from retrieval.search import SearchRequest
from retrieval.search.engine import owner_parts
from retrieval.search.fulltext import build_text_query, text_source
from retrieval.search.plan import plan_search
from retrieval.search.statements import select_rows
from tests.base import new_session


@pytest.fixture
def groups(cast, index) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """End user ann: in channel b two chunks say "lgbtq" and one "group"; in channel a eight more
    say "group". Her channel's statistics make "group" the rarer word, her memory "lgbtq"."""
    client = cast.alice
    new_session(client, "ann-b", channel="b", user_id="ann")
    index(
        client,
        "ann-b",
        {"role": "user", "content": "ann's lgbtq meeting"},
        {"role": "user", "content": "ann's lgbtq support"},
        {"role": "user", "content": "our group picnic"},
    )
    new_session(client, "ann-a", channel="a", user_id="ann")
    index(client, "ann-a", *[{"role": "user", "content": f"group chat {i}"} for i in range(8)])
    return {"tenant": cast.alice_tenant.pk}


def text_read(tenant_id: int) -> SearchRequest:
    """The request the API builds from {"query", "session"} in ann's channel-b session."""
    req = SearchRequest(tenant_id=tenant_id, query="lgbtq group", mode="text")
    read_as_session(req, Session.objects.get(tenant_id=tenant_id, external_id="ann-b"), "")
    return req


def test_a_word_common_in_the_read_does_not_select_candidates(groups, monkeypatch) -> None:
    """Her read (eleven chunks) goes through the full-text index: "lgbtq" (two chunks) selects
    the candidates; "group", one chunk of her channel but nine of her read, would pass a budget
    of four. It still scores the candidates."""
    monkeypatch.setattr("retrieval.search.sql.TEXT_SCAN_BELOW", 3)
    monkeypatch.setattr("retrieval.search.fulltext.MATCH_BUDGET", 4)
    req = text_read(groups["tenant"])
    plan = plan_search(req)
    tq = build_text_query(req, plan)
    assert (tq.scope_size, tq.read_size) == (3, 11)
    assert tq.match_terms == ["'lgbtq'"]
    assert {t for t, _ in tq.terms} == {"'lgbtq'", "'group'"}
    sql, params = text_source(req, tq, *plan.where, 10, owner_parts(plan))
    found = {pk for (pk,) in select_rows(sql, params)}
    # the chunks saying "lgbtq" and their conversation (whose context says it), none of channel a
    assert found == set(
        Chunk.objects.filter(session__external_id="ann-b").values_list("pk", flat=True)
    )


def test_a_read_tested_row_by_row_keeps_its_channels_choice(groups, monkeypatch) -> None:
    """Under TEXT_SCAN_BELOW each row of the read is tested anyway: the channel's frequencies
    choose, as before (one "group" and two "lgbtq" within the budget of four)."""
    monkeypatch.setattr("retrieval.search.sql.TEXT_SCAN_BELOW", 1_000)
    monkeypatch.setattr("retrieval.search.fulltext.MATCH_BUDGET", 4)
    req = text_read(groups["tenant"])
    tq = build_text_query(req, plan_search(req))
    assert tq.match_terms == ["'group'", "'lgbtq'"]


@pytest.fixture
def pairing(monkeypatch):  # type: ignore[no-untyped-def]
    """Ann's eleven-chunk read goes through the full-text index, a budget of four chunks, and any
    rarest word said by more than one chunk may pair."""
    monkeypatch.setattr("retrieval.search.sql.TEXT_SCAN_BELOW", 3)
    monkeypatch.setattr("retrieval.search.fulltext.MATCH_BUDGET", 4)
    monkeypatch.setattr("retrieval.search.fulltext.PAIR_ABOVE", 1)
    return monkeypatch


def test_hybrid_search_over_a_read_common_in_both_words_takes_chunks_saying_both(
    groups, pairing
) -> None:
    """With a vector side beside it (hybrid search), a read whose rarest word passes PAIR_ABOVE
    takes as text candidates only the chunks saying both rarest words: here the picnic, whose own
    words say "group" and whose conversation context says "lgbtq". A text search, with no vector
    side, still takes every chunk saying the rarest."""
    pairing.setattr("retrieval.search.weights.CANDIDATES", 1)  # 2 x 9 / 11 chunks expected
    req = text_read(groups["tenant"])
    plan = plan_search(req)
    assert build_text_query(req, plan).match_terms == ["'lgbtq'"]
    tq = build_text_query(req, plan, with_vectors=True)
    assert (tq.match_terms, tq.match_all) == (["'lgbtq'", "'group'"], True)
    sql, params = text_source(req, tq, *plan.where, 10, owner_parts(plan))
    found = {pk for (pk,) in select_rows(sql, params)}
    assert found == set(Chunk.objects.filter(text="our group picnic").values_list("pk", flat=True))


def test_a_typos_guessed_words_never_pair(groups, pairing) -> None:
    """A mistyped word ("groupp") is searched by its guesses ("group"): they stand for a word the
    query does not say, so they never become a word every candidate must say beside another."""
    pairing.setattr("retrieval.search.weights.CANDIDATES", 0)  # any two words would pair
    req = text_read(groups["tenant"])
    req.query = "lgbtq groupp"
    tq = build_text_query(req, plan_search(req), with_vectors=True)
    assert "'group'" in {t for t, _ in tq.terms}  # the guess scores
    assert (tq.match_terms, tq.match_all) == (["'lgbtq'"], False)


def test_a_query_with_operators_never_pairs(groups, pairing) -> None:
    """A query that says which words must be there or not ("-group") is matched as it says: a
    word it excludes must never become a word every candidate must say."""
    pairing.setattr("retrieval.search.weights.CANDIDATES", 0)  # any two words would pair
    req = text_read(groups["tenant"])
    req.query = "lgbtq -group"
    tq = build_text_query(req, plan_search(req), with_vectors=True)
    assert tq.strict and not tq.match_all
