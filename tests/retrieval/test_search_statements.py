"""What one POST /search/ asks of the database: statements that do not grow with the results, at
most three, text candidates fetched while the query is embedded (the vector side's beside them on
a pooled connection, outside a transaction), a small scope read directly, and HNSW's ef_search
(growing with the table, set once per connection)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from retrieval.models import Chunk
from retrieval.search import hybrid_search, weights
from tests.retrieval.conftest import search, texts


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid", "exact"])
def test_search_query_count_does_not_grow_with_results(
    alice, index, mode: str, django_assert_max_num_queries
) -> None:
    index(alice, "s", *[{"role": "user", "content": f"walrus fact {i}"} for i in range(30)])
    # (+1: the access counts, which tests write at once and a server in batches.)
    with django_assert_max_num_queries(13):
        assert len(texts(search(alice, query="walrus", mode=mode, top_k=25))) == 25


@pytest.mark.parametrize(
    ("mode", "statements", "alongside"),
    [
        ("text", 3, True),
        ("hybrid", 4, True),
        ("hybrid", 3, False),
        ("vector", 2, True),
        ("exact", 2, True),
    ],
)
def test_a_search_is_three_statements_at_most(
    alice,
    index,
    cast,
    settings,
    mode: str,
    statements: int,
    alongside: bool,
    django_assert_num_queries,
    monkeypatch,
) -> None:
    """The term statistics (text and hybrid), one statement for the candidates, their
    scores and vectors (feedback, MMR and dedup run on those in Python), one for the hits' rows.
    Hybrid search splits the candidates in two while the query is being embedded (text side
    first, vector side once the vector is in), unless weights.EMBED_ALONGSIDE is off.
    (+1: the access counts, which tests write at once and a server in batches, off the request.)"""
    monkeypatch.setattr(weights, "EMBED_ALONGSIDE", alongside)
    index(alice, "s", *[{"role": "user", "content": f"walrus fact {i}"} for i in range(30)])
    with django_assert_num_queries(statements + 1):
        hits = hybrid_search(tenant_id=cast.alice_tenant.pk, query="walrus", mode=mode, top_k=25)
    assert len(hits) == 25 and hits[0].chunk.session.external_id == "s"
    # The rows are the chunks' own values (created_at to the microsecond, in UTC), without a model
    # instance.
    stored = {c.pk: c for c in Chunk.objects.filter(pk__in=[h.chunk.pk for h in hits])}
    for hit in hits:
        chunk = stored[hit.chunk.pk]
        assert (hit.chunk.text, hit.chunk.created_at, hit.chunk.metadata, hit.chunk.tags) == (
            chunk.text,
            chunk.created_at,
            chunk.metadata,
            chunk.tags,
        )
        assert hit.chunk.created_at.utcoffset().total_seconds() == 0


def test_hybrid_search_fetches_text_candidates_while_the_query_is_embedded(
    alice, garden, cast, settings, monkeypatch
) -> None:
    """The query vector is computed in a thread while the text side's candidate statement runs:
    here the embedder waits for that statement to have run (it would wait in vain, and say so, if
    the two ran one after the other), and the results are those of the serial path."""
    import threading

    from django.db import connection

    from retrieval import query_embedding

    text_fetched = threading.Event()
    waited: list[bool] = []
    real = query_embedding.embed_query

    def embed_after_the_text_statement(text: str) -> list[float]:
        waited.append(text_fetched.wait(timeout=5))
        return real(text)

    def watch(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        result = execute(sql, params, many, context)
        if "ANY(ARRAY(" in sql and "halfvec_send" in sql:  # a candidate statement
            text_fetched.set()
        return result

    def run() -> list[tuple[str, float]]:
        hits = hybrid_search(tenant_id=cast.alice_tenant.pk, query="tomatoes sun", mode="hybrid")
        return [(h.chunk.text, round(h.score, 9)) for h in hits]

    monkeypatch.setattr(query_embedding, "embed_query", embed_after_the_text_statement)
    with connection.execute_wrapper(watch):
        alongside = run()
    assert waited == [True]
    monkeypatch.setattr(weights, "EMBED_ALONGSIDE", False)
    monkeypatch.setattr(query_embedding, "embed_query", real)
    assert run() == alongside and alongside[0][0] == "Tomatoes need plenty of sun and water."


@pytest.fixture
def pooled() -> Iterator[Any]:
    """Connections from a pool, as `manage.py run`'s web workers take theirs (settings: DB_POOL):
    this thread keeps the connection it has, another thread takes one from the pool."""
    from django.db import connection

    config = connection.settings_dict
    age, options = config["CONN_MAX_AGE"], config.setdefault("OPTIONS", {})
    config["CONN_MAX_AGE"], options["pool"] = 0, {"min_size": 1, "max_size": 2, "timeout": 5.0}
    try:
        yield connection.pool
    finally:
        connection.close_pool()
        config["CONN_MAX_AGE"] = age
        del options["pool"]


def _hybrid(cast: Any, query: str, **options: Any) -> list[tuple[str, float]]:
    hits = hybrid_search(tenant_id=cast.alice_tenant.pk, query=query, mode="hybrid", **options)
    return [(h.chunk.text, round(h.score, 9)) for h in hits]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("given", [False, True], ids=["embedded meanwhile", "query vector given"])
def test_with_a_pool_the_vector_side_runs_on_a_second_connection_beside_the_text_side(
    alice, garden, cast, pooled, monkeypatch, given: bool
) -> None:
    """Where a pool gives a second connection, the vector side's candidate statement runs on it
    while the text side's runs on the search's own, whether the search embeds the query meanwhile
    or is given its vector (context assembly's search): here each side waits for the other to
    have started (in vain, and the barrier breaks, if one ran after the other), on two backends;
    the connection goes back to the pool, and the results are those of the serial path."""
    from django.db import connection

    from retrieval.query_embedding import embed_query
    from retrieval.search import engine

    options = {"query_embedding": embed_query("tomatoes sun")} if given else {}
    both_running = threading.Barrier(2, timeout=5)
    backends: dict[str, int] = {}
    real = engine.fetch_candidates

    def fetch(sources, model, tq, **options):  # type: ignore[no-untyped-def]
        side = "vector" if options.get("vector_search") else "text"
        both_running.wait()
        pool = real(sources, model, tq, **options)
        backends[side] = connection.connection.info.backend_pid
        return pool

    monkeypatch.setattr(engine, "fetch_candidates", fetch)
    apart = _hybrid(cast, "tomatoes sun", **options)
    assert backends["vector"] != backends["text"]
    assert pooled.get_stats()["pool_available"] == pooled.get_stats()["pool_size"]
    monkeypatch.setattr(engine, "fetch_candidates", real)
    monkeypatch.setattr(engine, "apart_possible", lambda: False)
    assert _hybrid(cast, "tomatoes sun", **options) == apart
    assert apart[0][0] == "Tomatoes need plenty of sun and water."


@pytest.mark.django_db(transaction=True)
def test_a_pool_with_no_connection_to_spare_leaves_both_sides_on_the_searchs_own(
    alice, garden, cast, pooled, django_assert_num_queries
) -> None:
    """Every connection the pool may hold is out (other requests'): the vector side does not
    wait for one to come back but runs after the text side on the search's own connection (the
    term statistics, the two sides, the rows; +1: the access counts)."""
    pooled.open()
    held = [pooled.getconn(), pooled.getconn()]
    asked = pooled.get_stats().get("requests_num", 0)
    try:
        with django_assert_num_queries(5):
            found = _hybrid(cast, "tomatoes sun")
    finally:
        for taken in held:
            pooled.putconn(taken)
    assert found[0][0] == "Tomatoes need plenty of sun and water."
    assert pooled.get_stats().get("requests_num", 0) == asked


def test_in_a_transaction_both_sides_run_on_its_connection(
    alice, garden, cast, pooled, django_assert_num_queries
) -> None:
    """Another connection would not see what the transaction wrote (a test's rows here): inside
    one, both candidate statements run on its connection, and the pool gives none (the term
    statistics, the two sides, the rows; +1: the access counts)."""
    with django_assert_num_queries(5):
        found = _hybrid(cast, "tomatoes sun")
    assert found[0][0] == "Tomatoes need plenty of sun and water."
    assert pooled.get_stats().get("requests_num", 0) == 0


@pytest.mark.parametrize("mode", ["text", "hybrid"])
def test_a_small_scope_tests_its_own_rows_instead_of_the_full_text_index(
    alice, garden, cast, settings, mode: str, django_assert_num_queries, monkeypatch
) -> None:
    """The full-text index finds a word's chunks in every tenant's rows before the scope narrows
    them; a scope under sql.TEXT_SCAN_BELOW chunks tests its own rows instead (the match
    written `IS TRUE`, which the index cannot serve). Same results either way."""

    def run(threshold: int) -> tuple[list[tuple[str, float]], str]:
        monkeypatch.setattr("retrieval.search.sql.TEXT_SCAN_BELOW", threshold)
        with django_assert_num_queries(5 if mode == "hybrid" else 4) as captured:
            hits = hybrid_search(tenant_id=cast.alice_tenant.pk, query="tomatoes garden", mode=mode)
        candidates = next(q["sql"] for q in captured.captured_queries if "ANY(ARRAY(" in q["sql"])
        return [(h.chunk.text, round(h.score, 9)) for h in hits], candidates

    scanned, scan_sql = run(5_000)  # the tenant holds 5 chunks
    indexed, index_sql = run(5)
    assert ") IS TRUE" in scan_sql and ") IS TRUE" not in index_sql
    assert scanned == indexed and scanned[0][0] == "I planted tomatoes and basil in the garden."


def test_hybrid_search_under_load_embeds_first_in_one_candidate_statement(
    alice, garden, cast, django_assert_num_queries
) -> None:
    """With another search running in the process the cores are busy: no thread, no split (the
    term statistics, one candidate statement, the rows; +1: the access counts)."""
    from retrieval.search.engine import in_flight

    def run() -> list[tuple[str, float]]:
        hits = hybrid_search(tenant_id=cast.alice_tenant.pk, query="tomatoes sun", mode="hybrid")
        return [(h.chunk.text, round(h.score, 9)) for h in hits]

    with django_assert_num_queries(5):
        alone = run()
    with in_flight, django_assert_num_queries(4):  # another search, running meanwhile
        busy = run()
    assert busy == alone and in_flight.count == 0


def test_ef_search_grows_with_the_chunk_table(
    alice, garden, cast, settings, monkeypatch, django_assert_num_queries
) -> None:
    """HNSW finds a smaller share of the true nearest neighbours as its graph grows: ef_search is
    raised to one per weights.HNSW_ROWS_PER_EF rows of the chunk table (pgvector's ceiling 1000),
    whose estimate the term statistics read along (no statement of its own)."""
    from django.db import connection

    from retrieval.search import statistics
    from retrieval.search.statements import ef_search

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE retrieval_chunk")
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'retrieval_chunk'::regclass")
        estimate = int(cursor.fetchone()[0])
    # statistics (with the estimate), candidates, rows, access counts
    with django_assert_num_queries(4):
        hybrid_search(tenant_id=cast.alice_tenant.pk, query="tomatoes", mode="text")
    assert statistics.table_rows() == max(estimate, 0) and ef_search() == 100
    for rows, expected in ((300_000, 300), (5_000_000, 1000), (50_000, 100)):
        monkeypatch.setattr(statistics, "_table_rows", rows)
        assert ef_search() == expected
    monkeypatch.setattr(weights, "HNSW_ROWS_PER_EF", 0)
    monkeypatch.setattr(statistics, "_table_rows", 5_000_000)
    assert ef_search() == 100
    monkeypatch.setattr(weights, "HNSW_ROWS_PER_EF", 1_000)
    # SET LOCAL in a savepoint (the test's transaction)
    with django_assert_num_queries(6) as captured:
        assert hybrid_search(tenant_id=cast.alice_tenant.pk, query="tomatoes", mode="vector")
    assert any(
        q["sql"].startswith("SET LOCAL hnsw.ef_search = 1000") for q in captured.captured_queries
    )


def test_hnsw_settings_come_with_the_connection_or_per_query(
    alice, index, cast, settings, django_assert_num_queries
) -> None:
    """Every connection starts with search's ef_search and iterative scans (no SET per search); a
    different ef_search (set at run time) is SET LOCAL around the candidate statement."""
    from django.db import connection

    index(alice, "s", {"role": "user", "content": "walrus"})
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.iterative_scan")
        assert cursor.fetchone()[0] == "relaxed_order"
    # (+1 each: the access counts, which tests write at once and a server in batches.)
    with django_assert_num_queries(3) as captured:
        assert hybrid_search(tenant_id=cast.alice_tenant.pk, query="walrus", mode="vector")
    settings.HNSW_EF_SEARCH = 17
    with django_assert_num_queries(6) as captured:  # in a savepoint here: the test's transaction
        assert hybrid_search(tenant_id=cast.alice_tenant.pk, query="walrus", mode="vector")
    statements = [q["sql"] for q in captured.captured_queries]
    assert statements[1].startswith("SET LOCAL hnsw.ef_search = 17") and "halfvec" in statements[2]


@pytest.mark.django_db(transaction=True)
def test_a_raised_ef_search_is_set_once_for_the_connection(cast, settings) -> None:
    """Outside a transaction an ef_search other than the startup one (a table over 100k chunks) is
    SET for the connection's life: one statement on its first search, none after (it was a
    transaction and a SET LOCAL each search). Inside a transaction it stays SET LOCAL, which a
    rollback undoes and the connection's own value outlives; a new connection sets it again."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from tests.base import post_events

    post_events(cast.alice, "s", {"role": "user", "content": "walrus"})
    tenant = cast.alice_tenant.pk

    def sets(ef: int) -> list[str]:
        settings.HNSW_EF_SEARCH = ef
        with CaptureQueriesContext(connection) as captured:
            assert hybrid_search(tenant_id=tenant, query="walrus", mode="vector")
        return [q["sql"] for q in captured.captured_queries if q["sql"].startswith("SET")]

    def shown() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW hnsw.ef_search")
            return cursor.fetchone()[0]

    try:
        assert sets(100) == [] and shown() == "100"  # the startup value
        assert sets(170) == ["SET hnsw.ef_search = 170"] and shown() == "170"
        assert sets(170) == [] and shown() == "170"
        assert sets(100) == ["SET hnsw.ef_search = 100"] and sets(100) == [] and shown() == "100"
        assert sets(170) == ["SET hnsw.ef_search = 170"]
        with transaction.atomic():
            in_transaction = sets(230)
        assert in_transaction == [
            "SET LOCAL hnsw.ef_search = 230; SET LOCAL hnsw.iterative_scan = relaxed_order"
        ]
        assert shown() == "170" and sets(170) == []
        connection.close()
        assert sets(170) == ["SET hnsw.ef_search = 170"] and shown() == "170"
    finally:
        connection.close()  # the next test's connection starts from the startup options


@pytest.mark.parametrize("body", [{"user_id": "ann"}, {}])
def test_one_search_builds_its_where_clause_once(alice, index, monkeypatch, body: dict) -> None:
    """Scope, owner and filters are resolved once per request (plan.plan_search) and read by every
    statement: one POST /search/ (text and vector candidates, a user's two halves) and one POST
    /context/ (critical, relevant and salient memories) each build the scope condition once."""
    from retrieval.search import sql as search_sql

    if body:  # the conversation is ann's: her search reads it
        assert (
            alice.post("/api/v1/sessions/", {"id": "s", **body}, format="json").status_code == 201
        )
    index(alice, "s", *[{"role": "user", "content": f"walrus fact {i}"} for i in range(3)])
    built: list[object] = []
    real = search_sql.scope_clause

    def counted(req):  # type: ignore[no-untyped-def]
        built.append(req)
        return real(req)

    monkeypatch.setattr(search_sql, "scope_clause", counted)
    assert texts(search(alice, query="walrus fact", mode="hybrid", **body))
    assert len(built) == 1
    built.clear()
    response = alice.post(
        "/api/v1/context/", {"session": "s", "query": "walrus fact", **body}, format="json"
    )
    assert response.status_code == 200 and response.json()["items"]
    assert len(built) == 1


def test_a_search_plan_spells_the_where_clause_and_its_owner_halves() -> None:
    """The plan's clauses are where_clause's: the whole view, and a user's two halves (the shared
    one read only when the scope's kept statistics count shared memories)."""
    from retrieval.search import SearchRequest, plan_search
    from retrieval.search.sql import where_clause
    from retrieval.search.statistics import scope_size_sql

    req = SearchRequest(
        tenant_id=7, user_id="ann", tags=["x"], scope="workspace", workspace_ids=[3]
    )
    plan = plan_search(req)
    assert plan.where == where_clause(req)
    shared_sql, shared_params = scope_size_sql(req, owner=False, shared_only=True)
    shared_where, shared_where_params = where_clause(req, "shared")
    assert plan.halves == (
        where_clause(req, "own"),
        (f"{shared_where} AND ({shared_sql}) > 0", [*shared_where_params, *shared_params]),
    )
    assert plan.scope_size == scope_size_sql(req, owner=True)
    assert plan.statistics_size == scope_size_sql(req, owner=False)
    assert plan_search(SearchRequest(tenant_id=7)).halves is None
