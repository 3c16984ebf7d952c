"""The candidates fetched within the dates a query names: a month named without a year
is read as index ranges over the years the tenant's memories span, and the nearest vectors within
the dates are searched exactly when few memories fall in them, instead of a filtered HNSW walk
that visits thousands of rows to find them (or none: "in June" when nothing was said in June)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction

from retrieval.models import Chunk
from retrieval.search import SearchRequest, run_search, weights
from retrieval.search.statements import select_rows
from retrieval.search.timehints import MAX_YEARS, TimeHint, data_years, hint_where

MOMENTS = [
    datetime(2019, 6, 1, tzinfo=UTC),
    datetime(2019, 6, 30, 23, 59, tzinfo=UTC),
    datetime(2019, 7, 1, tzinfo=UTC),
    datetime(2020, 2, 28, 12, tzinfo=UTC),
    datetime(2020, 2, 29, 1, tzinfo=UTC),
    datetime(2020, 3, 1, tzinfo=UTC),
    datetime(2021, 2, 28, 5, tzinfo=UTC),
    datetime(2021, 12, 31, 23, tzinfo=UTC),
    datetime(2022, 1, 1, tzinfo=UTC),
    datetime(2022, 6, 14, tzinfo=UTC),
    datetime(2023, 5, 31, 23, 59, tzinfo=UTC),
    datetime(2023, 6, 2, tzinfo=UTC),
]


@pytest.fixture
def dated(alice, index, cast) -> dict[str, Any]:
    """One chunk written at each of MOMENTS (plus one each side of the span's years)."""
    index(
        alice,
        "dated",
        *({"role": "user", "content": f"otter note number {i}"} for i in range(len(MOMENTS))),
    )
    chunks = list(Chunk.objects.filter(tenant_id=cast.alice_tenant.pk).order_by("sequence_start"))
    assert len(chunks) == len(MOMENTS)
    for chunk, moment in zip(chunks, MOMENTS, strict=True):
        Chunk.objects.filter(pk=chunk.pk).update(created_at=moment)
    return {
        "tenant": cast.alice_tenant.pk,
        "ids": {c.pk: m for c, m in zip(chunks, MOMENTS, strict=True)},
    }


HINTS = [
    TimeHint(month=6),
    TimeHint(month=2),
    TimeHint(month=2, day=29),
    TimeHint(month=2, day=30),
    TimeHint(month=6, day=31),
    TimeHint(month=6, day=1),
    TimeHint(month=12, day=31),
    TimeHint(month=1, day=1),
    TimeHint(month=5, day=31),
    TimeHint(month=9),
]


@pytest.mark.parametrize("hint", HINTS, ids=repr)
def test_a_month_without_a_year_as_ranges_selects_what_the_ranking_bonus_matches(
    dated, hint: TimeHint
) -> None:
    years = data_years(dated["tenant"])
    assert years == range(2019, 2024)
    sql, params = hint_where([hint], years)
    assert "extract" not in sql
    found = {
        pk
        for (pk,) in select_rows(
            f"SELECT c.id FROM retrieval_chunk c WHERE c.tenant_id = %s AND {sql}",
            [dated["tenant"], *params],
        )
    }
    assert found == {pk for pk, moment in dated["ids"].items() if hint.matches(moment)}
    # ... and what the month condition (the form without years) selects
    plain, plain_params = hint_where([hint])
    assert "extract" in plain
    assert found == {
        pk
        for (pk,) in select_rows(
            f"SELECT c.id FROM retrieval_chunk c WHERE c.tenant_id = %s AND {plain}",
            [dated["tenant"], *plain_params],
        )
    }


def test_the_years_are_those_of_the_tenant_and_at_most_the_last_thirty(dated, cast) -> None:
    assert data_years(cast.bob_tenant.pk) is None  # no memories: nothing to narrow to
    oldest = min(dated["ids"], key=dated["ids"].get)
    Chunk.objects.filter(pk=oldest).update(created_at=datetime(1950, 6, 1, tzinfo=UTC))
    assert data_years(dated["tenant"]) == range(2023 - MAX_YEARS + 1, 2024)


def _hnsw_loops(sql: str, params: list[Any]) -> list[int]:
    """How many times each HNSW index scan of `sql` ran (0: never executed). The planner would sort
    a dozen rows rather than walk the index: scans and sorts are off for the EXPLAIN."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    loops: list[int] = []

    def walk(node: dict[str, Any]) -> None:
        if node.get("Index Name") == "chunk_embedding_hnsw":
            loops.append(node["Actual Loops"])
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return sorted(loops)


def _candidate_statement(req: SearchRequest) -> tuple[str, list[Any]]:
    captured: list[tuple[str, list[Any]]] = []

    def keep(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        captured.append((sql, list(params or [])))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        run_search(req)
    statements = [(sql, params) for sql, params in captured if "<=> %s::halfvec" in sql]
    assert len(statements) == 1
    return statements[0]


@pytest.mark.parametrize(("june", "walks"), [(0, [0, 1]), (1, [0, 1]), (3, [1, 1])])
def test_dates_few_memories_have_are_searched_exactly(
    dated, settings, june: int, walks: list[int], monkeypatch
) -> None:
    """The scope (12 chunks) is over the threshold (3): HNSW. Within June, 0 or 1 chunk (June of
    2019, 2022 and 2023 moved away) is under it: exact, the narrowed HNSW walk never runs; 3 are
    not."""
    monkeypatch.setattr("retrieval.search.sql.EXACT_BELOW", 3)
    # the threshold is 3 whatever another test's ANALYZE left as the table's row estimate
    # (pg_class.reltuples outlives a rollback; the factor raises the threshold with it)
    monkeypatch.setattr("retrieval.search.sql.EXACT_ROWS_FACTOR", 0)
    monkeypatch.setattr(weights, "EMBED_ALONGSIDE", False)
    in_june = sorted(pk for pk, moment in dated["ids"].items() if moment.month == 6)
    assert len(in_june) == 4
    for pk in in_june[june:]:
        Chunk.objects.filter(pk=pk).update(created_at=dated["ids"][pk] + timedelta(days=40))
    req = SearchRequest(tenant_id=dated["tenant"], query="otter note in June", mode="hybrid")
    sql, params = _candidate_statement(req)
    assert _hnsw_loops(sql, params) == walks
    candidates = {row[0] for row in select_rows(sql, params)}
    assert set(in_june[:june]) <= candidates  # what is within the dates is fetched either way


def test_a_month_in_a_tenant_without_memories_narrows_nothing(cast) -> None:
    req = SearchRequest(
        tenant_id=cast.bob_tenant.pk, query="what did we say in June", mode="hybrid"
    )
    assert run_search(req) == []
