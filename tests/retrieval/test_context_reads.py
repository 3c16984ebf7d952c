"""What POST /context/ reads whatever the query goes by index, not by a scan of every chunk in scope
(three such scans were 150 ms of a context at 100k chunks, bench/README.md): its critical memories
(important or pinned), its salient ones, and the other chunks of a memory of several. Among
thousands of ordinary chunks, each statement's plan must name its partial index: a condition that
no longer implies the index's (the salient line moved below it, the join's repeated condition
dropped) leaves the planner no way to use it, and the test fails."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.db import connection

from retrieval.models import Chunk

# Each read, by a phrase of its statement, and the index its plan must use.
READS = {
    "critical": ("ORDER BY c.importance DESC, c.created_at DESC, c.id DESC", "chunk_pinned"),
    "critical, important": (
        "ORDER BY c.importance DESC, c.created_at DESC, c.id DESC",
        "chunk_important",
    ),
    "salient": ("c.importance >= %s AND NOT", "chunk_important"),
}
SIBLINGS = "JOIN retrieval_chunk s ON s.tenant_id"


@pytest.fixture
def ordinary() -> Iterator[Callable[[int, int], None]]:
    """Make `copies` ordinary messages like chunk `like`, in the same scope (importance 0.5, no
    metadata, no vector), and analyse the table: the planner then weighs reading them against
    each read's index. Afterwards they are deleted and the table analysed again: the row count
    ANALYZE writes outlives the test's rollback, and other tests' plans read it."""
    made: list[int] = []

    def make(like: int, copies: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM retrieval_chunk LIMIT 0")
            columns = [c.name for c in cursor.description if c.name != "id"]
            chosen = {
                "importance": "0.5",
                "metadata": "'{}'::jsonb",
                "embedding": "NULL",
                "sequence_start": "1000 + g",  # each one a message of its own
                "sequence_end": "1000 + g",
            }
            values = [chosen.get(c, c) for c in columns]
            cursor.execute(
                f"INSERT INTO retrieval_chunk ({', '.join(columns)}) SELECT {', '.join(values)}"
                " FROM retrieval_chunk, generate_series(1, %s) AS g WHERE id = %s RETURNING id",
                [copies, like],
            )
            made.extend(row[0] for row in cursor.fetchall())
            cursor.execute("ANALYZE retrieval_chunk")

    yield make
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM retrieval_chunk WHERE id = ANY(%s)", [made])
        cursor.execute("ANALYZE retrieval_chunk")


def context_explained(client, body, reads):  # type: ignore[no-untyped-def]
    """POST /context/ with `body`, and the plan of the first statement of each read (by its
    phrase)."""
    plans: dict[str, str] = {}

    def explain(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        result = execute(sql, params, many, context)
        if not sql.startswith("EXPLAIN"):
            for name, phrase in reads.items():
                if phrase in sql and name not in plans:
                    with connection.cursor() as cursor:
                        cursor.execute("EXPLAIN (COSTS OFF) " + sql, params)
                        plans[name] = "\n".join(row[0] for row in cursor.fetchall())
        return result

    with connection.execute_wrapper(explain):
        response = client.post("/api/v1/context/", body, format="json")
    return response, plans


def test_context_reads_its_important_pinned_and_multi_chunk_memories_by_index(
    alice, index, cast, ordinary
) -> None:
    index(
        alice,
        "chat",
        {"role": "user", "content": "My passport number ends in 4471.", "importance": 0.9},
        {"role": "user", "content": "I am allergic to peanuts.", "importance": 0.75},
        {"role": "user", "content": "The garden needs water.", "metadata": {"pinned": True}},
    )
    note = alice.post(
        "/api/v1/notes/",
        {"content": " ".join(f"Passport renewal step {i} takes a week." for i in range(300))},
        format="json",
    )
    assert note.status_code == 201, note.content
    assert Chunk.objects.filter(kind="note").count() > 1  # a memory of several chunks
    ordinary(Chunk.objects.get(text="I am allergic to peanuts.").pk, 5_000)
    response, plans = context_explained(
        alice,
        {"query": "passport renewal", "session": "chat"},
        {n: p for n, (p, _) in READS.items()},
    )
    assert response.status_code == 200, response.content
    texts = [item["text"] for item in response.json()["items"]]
    assert "My passport number ends in 4471." in texts and "The garden needs water." in texts
    assert any(text.count("Passport renewal step") > 1 for text in texts)  # the note, whole
    for name, (_, index_name) in READS.items():
        assert index_name in plans[name], f"{name}:\n{plans[name]}"


def test_among_messages_only_a_memorys_other_chunks_are_looked_up_without_a_scan(
    alice, index, ordinary
) -> None:
    """Where nearly every chunk is a message (no note, fact or document of several chunks), the
    planner scanned the whole table for the other chunks of the memories found (an index lookup
    by kind and source looked as costly as reading every message): the join repeats the partial
    index's condition, so that the lookup goes by that index."""
    index(alice, "chat", {"role": "user", "content": "I am allergic to peanuts."})
    ordinary(Chunk.objects.get(text="I am allergic to peanuts.").pk, 5_000)
    response, plans = context_explained(
        alice, {"query": "what am I allergic to?", "session": "chat"}, {"siblings": SIBLINGS}
    )
    assert response.status_code == 200, response.content
    assert "Seq Scan" not in plans["siblings"], plans["siblings"]
