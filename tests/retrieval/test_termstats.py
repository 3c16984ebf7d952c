"""Term statistics kept by triggers: a search reads document frequencies and scope
sizes instead of counting them, and they always equal a count of the chunks themselves."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from pgvector import HalfVector

from accounts.models import Channel
from retrieval import termstats
from retrieval.embedders import get_embedder
from retrieval.models import Chunk, ScopeSize, TermStat
from retrieval.search import SearchRequest
from retrieval.search.plan import plan_search
from retrieval.search.sql import vector_source, where_clause
from retrieval.search.statements import select_rows
from retrieval.search.statistics import scope_size_sql, term_statistics
from tests.base import rebuild_vector_index
from tests.retrieval.conftest import search

WORDS = ["otter", "river", "kayak", "unseen"]


def counted(req: SearchRequest, words: list[str]) -> tuple[dict[str, int], int]:
    """Document frequencies (own words) and size of the request's scope, counted the old way."""
    where, params = where_clause(req)
    with connection.cursor() as cursor:
        frequencies = {}
        for word in words:
            cursor.execute(
                f"SELECT count(*) FROM retrieval_chunk c WHERE {where} AND c.search_vector @@ "
                "(quote_literal(%s) || ':A')::tsquery",
                [*params, word],
            )
            frequencies[word] = cursor.fetchone()[0]
        cursor.execute(f"SELECT count(*) FROM retrieval_chunk c WHERE {where}", params)
        return frequencies, cursor.fetchone()[0]


def kept(req: SearchRequest, words: list[str]) -> tuple[dict[str, int], int]:
    asked = SearchRequest(**{**req.__dict__, "query": " ".join(words)})
    stats = term_statistics(asked, plan_search(asked))
    return {w: stats.counts.get(w, 0) for w in words}, stats.size


@pytest.fixture
def rivers(alice, index, cast) -> dict[str, Any]:
    index(
        alice,
        "north",
        {"role": "user", "content": "An otter swam down the river."},
        {"role": "user", "content": "We took the kayak out on the river."},
        {"role": "assistant", "content": "Otters like clean rivers."},
    )
    alice.post("/api/v1/sessions/", {"id": "south", "channel": "south"}, format="json")
    index(
        alice, "south", {"role": "user", "content": "The kayak club meets by the river on Sundays."}
    )
    tenant = cast.alice_tenant.pk
    north = Chunk.objects.get(text__startswith="An otter").channel
    south = Channel.objects.get(tenant_id=tenant, name="south")
    return {"tenant": tenant, "north": north, "south": south}


def scopes(r: dict[str, Any]) -> list[SearchRequest]:
    return [
        SearchRequest(tenant_id=r["tenant"]),
        SearchRequest(
            tenant_id=r["tenant"],
            scope="channel",
            channel_ids=[r["north"].pk],
            workspace_ids=[r["north"].workspace_id],
        ),
        SearchRequest(
            tenant_id=r["tenant"],
            scope="channel",
            channel_ids=[r["south"].pk],
            workspace_ids=[r["south"].workspace_id],
        ),
        SearchRequest(
            tenant_id=r["tenant"], scope="workspace", workspace_ids=[r["north"].workspace_id]
        ),
    ]


def assert_kept_equals_counted(r: dict[str, Any]) -> None:
    for req in scopes(r):
        assert kept(req, WORDS) == counted(req, WORDS), req.scope


def test_statistics_equal_a_count_in_every_scope(rivers) -> None:
    assert_kept_equals_counted(rivers)
    north = scopes(rivers)[1]
    assert kept(north, WORDS) == ({"otter": 2, "river": 3, "kayak": 1, "unseen": 0}, 3)


def test_statistics_follow_edits_moves_and_deletions(rivers) -> None:
    otter = Chunk.objects.get(text__startswith="An otter")
    otter.text = "A heron stood in the river."
    otter.save()  # the text changes: the search vector trigger recomputes the words
    assert_kept_equals_counted(rivers)
    Chunk.objects.filter(text__startswith="We took").update(channel=rivers["south"])
    assert_kept_equals_counted(rivers)
    Chunk.objects.filter(text__startswith="Otters").delete()
    assert_kept_equals_counted(rivers)


def test_updates_that_change_no_word_write_no_statistics(rivers) -> None:
    before = TermStat.objects.count()
    Chunk.objects.update(importance=0.9, embedding_attempts=3)
    assert TermStat.objects.count() == before


def test_compaction_folds_deltas_and_drops_words_no_chunk_says(rivers) -> None:
    Chunk.objects.filter(text__startswith="Otters").delete()
    Chunk.objects.filter(text__startswith="An otter").delete()
    before = {req.scope + str(req.channel_ids): kept(req, WORDS) for req in scopes(rivers)}
    assert termstats.compact() > 0
    assert not TermStat.objects.filter(delta=True).exists()
    assert {req.scope + str(req.channel_ids): kept(req, WORDS) for req in scopes(rivers)} == before
    assert not TermStat.objects.filter(lexeme="otter").exists()  # its deltas summed to zero
    keys = TermStat.objects.values_list("tenant_id", "workspace_id", "channel_id", "lexeme")
    assert len(keys) == len(set(keys))  # one row per key
    assert_kept_equals_counted(rivers)


def statistics() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    return (
        sorted(
            TermStat.objects.values_list("tenant_id", "workspace_id", "channel_id", "lexeme", "n")
        ),
        sorted(
            ScopeSize.objects.values_list("tenant_id", "workspace_id", "channel_id", "user_id", "n")
        ),
    )


def test_rebuild_recounts_the_same_statistics(rivers) -> None:
    Chunk.objects.filter(text__startswith="Otters").update(user_id="u1")
    termstats.compact()
    incremental = statistics()
    termstats.rebuild()
    assert statistics() == incremental


def owned_size(req: SearchRequest) -> int:
    sql, params = scope_size_sql(req, owner=True)
    return select_rows(sql, params)[0][0]


def test_scope_sizes_know_the_owner(rivers) -> None:
    Chunk.objects.filter(text__startswith="Otters").update(user_id="u1")
    Chunk.objects.filter(text__startswith="An otter").update(user_id="u2")
    for req in scopes(rivers):
        for user in (None, "", "u1", "u2", "nobody"):
            owned = SearchRequest(**{**req.__dict__, "user_id": user})
            if user:
                # A user's read leaves out conversations nobody owns, which the kept sizes (by
                # owner, not by kind) still count: for a user the size is an upper bound, exact
                # once the unowned conversations are set aside.
                assert owned_size(owned) >= counted(owned, [])[1], (req.scope, user)
                unowned = counted(
                    SearchRequest(**{**req.__dict__, "user_id": "", "kinds": ["event", "summary"]}),
                    [],
                )[1]
                assert owned_size(owned) - unowned == counted(owned, [])[1], (req.scope, user)
            else:
                assert owned_size(owned) == counted(owned, [])[1], (req.scope, user)


@pytest.mark.parametrize(("threshold", "runs"), [(3, "hnsw"), (100, "exact"), (0, "hnsw")])
def test_a_small_scope_is_searched_exactly(
    rivers, settings, threshold: int, runs: str, monkeypatch
) -> None:
    """Both vector strategies are in the statement; the scope's kept size picks one, and only that
    one runs (the other is never executed)."""
    monkeypatch.setattr("retrieval.search.sql.EXACT_BELOW", threshold)
    rebuild_vector_index()
    req = scopes(rivers)[1]  # the north channel: 3 chunks
    where, params = where_clause(req)
    vector = HalfVector(get_embedder().embed(["otter"])[0]).to_text()
    sql, params = vector_source(
        vector, get_embedder().name, where, params, 2, scope_size_sql(req, owner=True)
    )
    plan = "\n".join(
        row[0] for row in select_rows("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, params)
    )
    if threshold == 0:
        assert "never executed" not in plan and "UNION" not in sql
        return
    exact_branch = plan.index('"*SELECT* 2"')
    never = plan.index("never executed")
    assert (never > exact_branch) == (runs == "hnsw")
    assert len(select_rows(sql, params)) == 2


def test_a_search_counts_nothing_and_finds_a_word_written_a_moment_ago(
    alice, index, rivers, django_assert_max_num_queries
) -> None:
    req = SearchRequest(tenant_id=rivers["tenant"], query="otter river", mode="text")
    # statistics, candidates, the hits' rows (+1: the access counts, written at once in tests)
    with django_assert_max_num_queries(4) as captured:
        from retrieval.search import run_search

        assert run_search(req)
    assert not any("count(" in q["sql"].lower() for q in captured.captured_queries)
    index(alice, "north", {"role": "user", "content": "A platypus!"})
    assert [r["text"] for r in search(alice, query="platypus", mode="text").json()["results"]] == [
        "A platypus!"
    ]


def test_the_embedding_cadence_and_the_embed_lane_fold_the_deltas(
    rivers, alice, index, monkeypatch
) -> None:
    from retrieval.embedding import EmbedLane
    from scheduling import tasks as cluster

    assert (
        TermStat.objects.filter(delta=True).exists()
        and ScopeSize.objects.filter(delta=True).exists()
    )
    assert cluster.embed_backfill()["term_stats_compacted"] > 0
    assert (
        not TermStat.objects.filter(delta=True).exists()
        and not ScopeSize.objects.filter(delta=True).exists()
    )
    # the append writes the chunk: deltas
    index(alice, "north", {"role": "user", "content": "A platypus!"})
    assert TermStat.objects.filter(delta=True, lexeme="platypus").exists()
    monkeypatch.setattr(termstats, "_last_compacted", 0.0)  # the last compaction was long ago
    EmbedLane().step()  # the always-running lane folds them
    assert not TermStat.objects.filter(delta=True).exists()
    assert Chunk.objects.filter(text="A platypus!").exists()
    assert_kept_equals_counted(rivers)


def test_forgetting_a_user_takes_her_words_out_of_the_statistics_at_once(
    alice, index, cast
) -> None:
    alice.post("/api/v1/sessions/", {"id": "ann-chat", "user_id": "ann"}, format="json")
    index(alice, "ann-chat", {"role": "user", "content": "My axolotl is called Quetzal."})
    alice.post("/api/v1/sessions/", {"id": "bob-chat", "user_id": "bob"}, format="json")
    index(alice, "bob-chat", {"role": "user", "content": "My axolotl eats worms."})
    termstats.compact()
    response = alice.delete("/api/v1/users/ann/")
    assert response.status_code == 200, response.content
    # No compaction ran since: her words, and her id, are gone from every statistics row.
    assert not TermStat.objects.filter(lexeme="quetzal").exists()
    assert not ScopeSize.objects.filter(user_id="ann").exists()
    assert (
        sum(
            TermStat.objects.filter(lexeme="axolotl", workspace_id=termstats.ALL).values_list(
                "n", flat=True
            )
        )
        == 1
    )
    assert not TermStat.objects.filter(tenant_id=cast.alice_tenant.pk, delta=True).exists()
