"""Feedback, pair similarities and vector scores computed in Python on the candidates' vectors
agree with what pgvector computed in SQL before."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from pgvector import HalfVector

from retrieval.embedders import DIMENSIONS, get_embedder
from retrieval.models import Chunk
from retrieval.search import statements as search_statements
from retrieval.search.statements import (
    native_placeholders,
    only_placeholders,
    select_binary_rows,
    select_rows,
)
from retrieval.search.vectors import (
    CandidateVectors,
    as_halfvec,
    decode_halfvec,
    decode_halfvecs,
    near_duplicate_pairs,
)


@pytest.fixture
def stored(alice, index) -> tuple[CandidateVectors, list[int]]:
    index(
        alice,
        "s",
        *[
            {"role": "user", "content": text}
            for text in (
                "otters hold hands while they sleep",
                "otters sleep holding hands",
                "the kayak club meets on sunday",
                "a heron stood in the river",
                "river otters eat fish",
                "sunday kayak trip down the river",
            )
        ],
    )
    ids = list(Chunk.objects.order_by("id").values_list("id", flat=True))
    rows = select_rows(
        "SELECT id, halfvec_send(embedding) FROM retrieval_chunk WHERE id = ANY(%s)", [ids]
    )
    return CandidateVectors.of({pk: decode_halfvec(raw) for pk, raw in rows}), ids


def test_halfvec_binary_decodes_to_the_stored_values(stored) -> None:
    vectors, ids = stored
    text = select_rows("SELECT embedding::text FROM retrieval_chunk WHERE id = %s", [ids[0]])[0][0]
    assert np.allclose(
        vectors.matrix[vectors.row[ids[0]]], np.array(HalfVector.from_text(text).to_list()), atol=0
    )
    raws = [
        raw
        for _, raw in select_rows(
            "SELECT id, halfvec_send(embedding) FROM retrieval_chunk WHERE id = ANY(%s) "
            "ORDER BY id",
            [ids],
        )
    ]
    assert np.array_equal(
        decode_halfvecs(raws, DIMENSIONS), np.stack([decode_halfvec(raw) for raw in raws])
    )


def test_cosines_agree_with_pgvector(stored) -> None:
    vectors, ids = stored
    query = get_embedder().embed(["otters sleeping"])[0]
    in_sql = dict(
        select_rows(
            "SELECT id, 1 - (embedding <=> %s::halfvec) FROM retrieval_chunk WHERE id = ANY(%s)",
            [HalfVector(query).to_text(), ids],
        )
    )
    in_python = vectors.cosines(as_halfvec(query))
    assert in_python.keys() == in_sql.keys()
    assert all(abs(in_python[pk] - in_sql[pk]) < 1e-5 for pk in ids)


def test_feedback_agrees_with_the_sql_it_replaces(stored) -> None:
    vectors, ids = stored
    query, weight, top = get_embedder().embed(["otters sleeping"])[0], 0.4, ids[:3]
    in_sql = dict(
        select_rows(  # the statement of sql.feedback_scores before numpy took it over
            "WITH fb AS (SELECT %s::vector + avg(f.embedding::vector) * %s::vector AS q FROM"
            " retrieval_chunk f WHERE f.id = ANY(%s)) SELECT c.id, 1 - (c.embedding <=>"
            " fb.q::halfvec) FROM retrieval_chunk c, fb WHERE fb.q IS NOT NULL AND c.id = ANY(%s)",
            [HalfVector(query).to_text(), HalfVector([weight] * DIMENSIONS).to_text(), top, ids],
        )
    )
    in_python = vectors.feedback(as_halfvec(query), top, weight)
    assert all(abs(in_python[pk] - in_sql[pk]) < 1e-4 for pk in ids)
    # no vector among the top: none
    assert vectors.feedback(as_halfvec(query), [10**9], weight) == {}


def test_pairs_agree_with_pgvector(stored) -> None:
    vectors, ids = stored
    in_sql = {
        (a, b): s
        for a, b, s in select_rows(
            "SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding) FROM retrieval_chunk a JOIN"
            " retrieval_chunk b ON a.id < b.id WHERE a.id = ANY(%s) AND b.id = ANY(%s)",
            [ids, ids],
        )
    }
    in_python = vectors.pairs(ids + [10**9])  # an id without a vector has no pairs
    assert in_python.keys() == in_sql.keys()
    assert all(abs(in_python[p] - in_sql[p]) < 1e-5 for p in in_sql)
    near = near_duplicate_pairs(vectors, ids)
    assert near == {p for p, s in in_sql.items() if s > 0.9}


def test_a_zero_vector_scores_nothing() -> None:
    vectors = CandidateVectors.of({1: np.zeros(4, np.float32), 2: np.ones(4, np.float32)})
    assert vectors.cosines(np.ones(4, np.float32)) == {2: pytest.approx(1.0)}
    assert vectors.pairs([1, 2]) == {}


def test_halfvec_text_is_pgvectors_text_for_every_half_precision_value() -> None:
    """The looked-up text (retrieval.vectors.halfvec_text) is pgvector's own, value for value:
    all 65,536 half-precision bit patterns (NaN and infinities included), and vectors given as
    float lists and as numpy arrays (rounded to half precision the same way)."""
    from retrieval.vectors import halfvec_text

    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    assert halfvec_text(every) == HalfVector(every).to_text()
    rng = np.random.default_rng(7)
    vector = rng.normal(size=DIMENSIONS).astype(np.float32)
    vector /= np.linalg.norm(vector)
    for value in (
        vector,
        vector.tolist(),
        vector.astype(np.float64),
        [1e-8, -60000.0, 0.1, 2.0 / 3.0],
    ):
        assert halfvec_text(value) == HalfVector(value).to_text()


def test_a_vector_written_as_halfvec_text_reads_back_as_the_same_halfvec(db) -> None:  # type: ignore[no-untyped-def]
    from retrieval.vectors import halfvec_text

    vector = np.random.default_rng(3).normal(size=DIMENSIONS).astype(np.float32)
    ((raw,),) = select_rows("SELECT halfvec_send(%s::halfvec)", [halfvec_text(vector)])
    assert np.array_equal(decode_halfvec(bytes(raw)), as_halfvec(vector))


# --- the candidate statement's rows, bound by the server and sent in binary (stop 36) ---------


def _candidate_statement(ids: list[int]) -> tuple[str, list]:  # type: ignore[type-arg]
    """Every type the candidate statement returns, with parameters of each kind it binds."""
    return (
        (
            "SELECT c.id, c.session_id, c.text, c.context <> '', extract(epoch FROM"
            " c.created_at)::float8, c.importance, halfvec_send(c.embedding), (CASE WHEN"
            " c.search_vector @@ %s::tsquery THEN %s::float8 ELSE 0::float8 END), (CASE WHEN"
            " c.search_vector @@ %s::tsquery THEN 1 ELSE 0 END)::bigint, 1 - (c.embedding <=>"
            " %s::halfvec) FROM retrieval_chunk c WHERE c.id = ANY(%s) ORDER BY c.id LIMIT %s"
        ),
        ["'otter':A", 2.5, "'river'", HalfVector([0.5] * DIMENSIONS).to_text(), ids, 10],
    )


def test_binary_rows_are_the_rows_text_gives(stored) -> None:
    _, ids = stored
    sql, params = _candidate_statement(ids)
    binary, text = select_binary_rows(sql, params), select_rows(sql, params)
    assert len(binary) == len(ids) and binary == text  # the vectors' bytes and every float exact
    # the parameters matched
    assert any(row[7] > 0 for row in binary) and any(row[8] == 1 for row in binary)


def test_a_binary_statement_is_logged_runnable_with_its_parameters(stored) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _, ids = stored
    sql, params = _candidate_statement(ids)
    with CaptureQueriesContext(connection) as captured:
        rows = select_binary_rows(sql, params)
    [logged] = captured.captured_queries
    assert (
        logged["binary"] is True and "%s" not in logged["sql"] and "'''otter'':A'" in logged["sql"]
    )
    # what bench/search.py re-runs is the same statement
    assert select_rows(logged["sql"], []) == rows


def test_a_failing_binary_statement_raises_djangos_error_and_the_connection_goes_on(stored) -> None:
    from django.db import ProgrammingError, transaction

    _, ids = stored
    with pytest.raises(ProgrammingError), transaction.atomic():
        select_binary_rows("SELECT no_such_column FROM retrieval_chunk WHERE id = ANY(%s)", [ids])
    assert select_binary_rows("SELECT count(*) FROM retrieval_chunk WHERE id = ANY(%s)", [ids]) == [
        (len(ids),)
    ]


# --- the placeholders numbered for the server, not parsed by psycopg (stop 37) ---------------


def test_native_placeholders_number_each_placeholder_in_order() -> None:
    sql = "SELECT %s, %s::halfvec FROM t WHERE id = ANY(%s)"
    assert (
        only_placeholders(sql)
        and native_placeholders(sql) == "SELECT $1, $2::halfvec FROM t WHERE id = ANY($3)"
    )
    assert only_placeholders("SELECT 1") and native_placeholders("SELECT 1") == "SELECT 1"
    for other in ("SELECT %s LIKE 'a%%'", "SELECT %(name)s", "SELECT %b", "SELECT %%s, %s"):
        assert not only_placeholders(other)  # left to psycopg's own parse


def test_binary_rows_of_a_statement_over_psycopgs_cache_limits_are_the_rows_text_gives(
    stored,
) -> None:
    from django.db import connection

    _, ids = stored
    wanted = [*ids, *range(-60, 0)]  # 60-odd parameters, each its own
    sql = (
        "SELECT c.id, c.text FROM retrieval_chunk c WHERE c.id IN"
        f" ({', '.join(['%s'] * len(wanted))}) ORDER BY c.id"
    )
    seen: list[str] = []

    def keep(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        seen.append(sql)
        return execute(sql, params, many, context)

    with (
        connection.execute_wrapper(keep),
        mock.patch.object(
            search_statements, "native_placeholders", wraps=search_statements.native_placeholders
        ) as numbered,
    ):
        rows = select_binary_rows(sql, wanted)
    assert numbered.call_count == 1  # psycopg was given the numbered statement, not its parse
    assert rows == select_rows(sql, wanted) and [pk for pk, _ in rows] == sorted(ids)
    assert seen == [sql]  # execute wrappers see the statement as written, %s and all


def test_a_binary_statement_with_a_literal_percent_is_parsed_by_psycopg(stored) -> None:
    _, ids = stored
    with mock.patch.object(search_statements, "native_placeholders") as numbered:
        rows = select_binary_rows(
            "SELECT count(*) FROM retrieval_chunk WHERE id = ANY(%s) AND text LIKE '%%otter%%'",
            [ids],
        )
    assert not numbered.called
    assert rows == [(3,)]  # three of the six texts say "otter"
