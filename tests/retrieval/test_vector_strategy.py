"""Exact or HNSW vector search, and full text through its index or row by row, as the statement
builders choose them for a session's default read (its owner's whole memory): the choice counts
the owner's rows in every channel, not only in the session's own, and never another user's."""

from __future__ import annotations

from typing import Any

import pytest
from pgvector import HalfVector

from memoryhub.models import Session
from retrieval.embedders import get_embedder
from retrieval.models import Chunk
from retrieval.scoping import read_as_session
from retrieval.search import SearchRequest
from retrieval.search.engine import owner_parts
from retrieval.search.plan import plan_search
from retrieval.search.sql import vector_source
from retrieval.search.statements import select_rows
from tests.base import new_session, rebuild_vector_index


@pytest.fixture
def spread(cast, index) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """End user ann: two messages in each of three channels (six in all); bob: four in ann's first
    channel."""
    client = cast.alice
    for channel in ("a", "b", "c"):
        new_session(client, f"ann-{channel}", channel=channel, user_id="ann")
        index(
            client,
            f"ann-{channel}",
            {"role": "user", "content": f"ann's otter note in {channel}"},
            {"role": "user", "content": f"ann's kayak plan in {channel}"},
        )
    new_session(client, "bob-a", channel="a", user_id="bob")
    index(client, "bob-a", *[{"role": "user", "content": f"bob's river {i}"} for i in range(4)])
    return {"tenant": cast.alice_tenant.pk}


def default_read(tenant_id: int, session: str) -> SearchRequest:
    """The request the API builds from {"query", "session"}: no scope, no user."""
    req = SearchRequest(tenant_id=tenant_id, query="otter", mode="vector")
    read_as_session(req, Session.objects.get(tenant_id=tenant_id, external_id=session), "")
    return req


def strategy(req: SearchRequest) -> str:
    """Which branch of the vector-candidate statement ran: "exact" or "hnsw"."""
    rebuild_vector_index()
    plan = plan_search(req)
    where, params = plan.where
    vector = HalfVector(get_embedder().embed(["otter"])[0]).to_text()
    sql, params = vector_source(
        vector, get_embedder().name, where, params, 2, plan.scope_size, owner_parts(plan)
    )
    explained = "\n".join(
        row[0] for row in select_rows("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, params)
    )
    assert len(select_rows(sql, params)) == 2
    # the HNSW branch comes first in the statement; the one that did not run is never executed
    return (
        "hnsw" if explained.index("never executed") > explained.index('"*SELECT* 2"') else "exact"
    )


def test_a_default_read_is_sized_by_the_owner_in_every_channel(spread) -> None:
    req = default_read(spread["tenant"], "ann-a")
    assert req.nearest_first and req.user_id == "ann"
    # ann's six chunks in three channels; bob's four in her session's channel are not hers
    assert select_rows(*plan_search(req).scope_size) == [(6,)]


@pytest.mark.parametrize(("threshold", "runs"), [(7, "exact"), (5, "hnsw"), (3, "hnsw")])
def test_a_user_spread_over_channels_is_searched_by_her_whole_size(
    spread, threshold: int, runs: str, monkeypatch
) -> None:
    """Six chunks, two per channel: under a threshold of 7 the read is exact; under 5 (or 3) her
    memory is too big for an exact scan though each channel alone holds fewer."""
    monkeypatch.setattr("retrieval.search.sql.EXACT_BELOW", threshold)
    assert strategy(default_read(spread["tenant"], "ann-a")) == runs


def test_a_scoped_read_is_sized_by_its_channel(spread, monkeypatch) -> None:
    """A session's read narrowed to its channel counts that channel's rows only: two of ann's."""
    monkeypatch.setattr("retrieval.search.sql.EXACT_BELOW", 3)
    req = SearchRequest(tenant_id=spread["tenant"], query="otter", mode="vector")
    session = Session.objects.get(tenant_id=spread["tenant"], external_id="ann-a")
    read_as_session(req, session, "channel")
    assert select_rows(*plan_search(req).scope_size) == [(2,)]
    assert strategy(req) == "exact"


@pytest.mark.parametrize(("threshold", "tested"), [(5, False), (7, True)])
def test_full_text_tests_each_row_only_when_the_whole_read_is_small(
    spread, threshold: int, tested: bool, monkeypatch
) -> None:
    """ann's session in channel b: its channel's statistics count two chunks, her read six. Full
    text reads the table's full-text index once the read reaches the threshold, however small the
    channel whose statistics weigh the words."""
    from retrieval.search.fulltext import build_text_query, text_source

    monkeypatch.setattr("retrieval.search.sql.TEXT_SCAN_BELOW", threshold)
    req = default_read(spread["tenant"], "ann-b")
    req.mode = "text"
    plan = plan_search(req)
    tq = build_text_query(req, plan)
    assert (tq.scope_size, tq.read_size) == (2, 6)
    sql, params = text_source(req, tq, *plan.where, 10, owner_parts(plan))
    assert ("IS TRUE" in sql) == tested
    found = {pk for (pk,) in select_rows(sql, params)}
    # the same rows either way: her chunks saying "otter" (in their words or their context)
    assert found and found <= set(Chunk.objects.filter(user_id="ann").values_list("pk", flat=True))
    monkeypatch.setattr("retrieval.search.sql.TEXT_SCAN_BELOW", 0 if tested else 1_000)
    other = text_source(req, tq, *plan.where, 10, owner_parts(plan))
    assert ("IS TRUE" in other[0]) != tested and {pk for (pk,) in select_rows(*other)} == found


@pytest.mark.parametrize(("table_rows", "runs"), [(0, "hnsw"), (1_000_000, "exact")])
def test_a_big_table_keeps_a_larger_range_exact(
    spread, table_rows: int, runs: str, monkeypatch
) -> None:
    """ann's six chunks are over a threshold of 3; in a table of a million rows the threshold
    rises to the square root of EXACT_ROWS_FACTOR million (38,729) and her read is exact."""
    from retrieval.search import sql

    monkeypatch.setattr(sql, "EXACT_BELOW", 3)
    monkeypatch.setattr(sql, "table_rows", lambda: table_rows)
    assert sql.exact_below() == (3 if table_rows == 0 else 38_729)
    assert strategy(default_read(spread["tenant"], "ann-a")) == runs
