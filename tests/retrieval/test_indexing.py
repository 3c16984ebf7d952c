"""The indexing pipeline: extraction, dedup, chunks in the append's transaction, the embed lane,
failures."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from memoryhub.models import Event, Session
from memoryhub.searchable import Searchable
from memoryhub.signals import memory_deleted, memory_saved
from retrieval import embedders, embedding, indexing
from retrieval.models import Chunk
from tests.base import post_events


class FailingEmbedder:
    name = "hash-v1"
    dimensions = 384

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("model is down")


@pytest.fixture
def failing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(embedders._instances, "hash", FailingEmbedder())


def test_events_are_chunked_and_embedded(alice, index, cast) -> None:
    index(
        alice,
        "s1",
        {"role": "user", "content": "I moved to Lisbon in 2021."},
        {"role": "assistant", "content": "Lisbon is lovely."},
    )
    chunks = list(Chunk.objects.order_by("sequence_start"))
    assert [(c.text, c.sequence_start, c.sequence_end, c.role) for c in chunks] == [
        ("I moved to Lisbon in 2021.", 1, 1, "user"),
        ("Lisbon is lovely.", 2, 2, "assistant"),
    ]
    assert all(c.embedding is not None and c.embedding_model == "hash-v1" for c in chunks)
    assert chunks[0].tenant_id == cast.alice_tenant.pk
    assert chunks[0].metadata["schema_version"] == 1 and chunks[0].metadata["role"] == "user"
    assert chunks[1].context == "I moved to Lisbon in 2021."  # contextual embedding input
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_vector::text FROM retrieval_chunk WHERE id = %s", [chunks[0].pk]
        )
        assert "'lisbon'" in cursor.fetchone()[0]


def test_tool_call_without_content_gets_a_synthesised_sentence(alice, index) -> None:
    index(
        alice,
        "s1",
        {
            "role": "assistant",
            "content": "",
            "tool_name": "get_weather",
            "tool_args": {"city": "Oslo"},
        },
    )
    [chunk] = Chunk.objects.all()
    assert chunk.text == 'Called get_weather with {"city": "Oslo"}'


def test_tool_arguments_are_indexed_with_content(alice, index) -> None:
    index(
        alice,
        "s1",
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_name": "lookup",
            "tool_args": {"order": "A-1234"},
        },
    )
    assert "A-1234" in Chunk.objects.get().text


def test_long_event_becomes_several_chunks_of_the_same_sequence(alice, index) -> None:
    index(
        alice,
        "s1",
        {
            "role": "user",
            "content": " ".join(f"Sentence {i} is about item {i}." for i in range(120)),
        },
    )
    chunks = list(Chunk.objects.all())
    assert len(chunks) > 3
    assert all(len(c.text) <= 640 and c.sequence_start == c.sequence_end == 1 for c in chunks)


def test_each_chunk_knows_how_many_chunks_its_message_has(alice, index) -> None:
    long_text = " ".join(f"Sentence {i} is about item {i}." for i in range(120))
    index(alice, "s1", {"role": "user", "content": long_text}, {"role": "user", "content": "short"})
    parts = list(Chunk.objects.filter(sequence_start=1).values_list("message_chunks", flat=True))
    assert len(parts) > 3 and set(parts) == {len(parts)}
    assert Chunk.objects.get(sequence_start=2).message_chunks == 1
    # A piece said before in the session is that earlier chunk's (its sequence_end grows): the
    # message counts only the chunks made for it.
    index(alice, "s1", {"role": "user", "content": "short"})
    assert Chunk.objects.get(text="short").message_chunks == 1


@pytest.mark.parametrize("small_batch", [0, 1000], ids=["bulk statements", "one statement"])
def test_a_message_that_repeats_pieces_of_an_earlier_one_counts_only_its_new_chunks(
    alice,
    index,
    monkeypatch,
    small_batch,
) -> None:
    """The chunk INSERT skips pieces the session has indexed already (one statement for a small
    append, a look-up and bulk_create for a large one); those extend the earlier chunks, and the
    new message's own chunks count only themselves."""
    from memoryhub.plumbing import rows

    monkeypatch.setattr(rows, "SMALL_BATCH", small_batch)
    long_text = " ".join(f"Sentence {i} is about item {i}." for i in range(120))
    index(alice, "s1", {"role": "user", "content": long_text})
    first = Chunk.objects.filter(sequence_start=1).count()
    index(
        alice,
        "s1",
        {
            "role": "user",
            "content": long_text + " " + " ".join(f"Then {i} more." for i in range(80)),
        },
    )
    shared = Chunk.objects.filter(sequence_start=1, sequence_end=2).count()
    own = list(Chunk.objects.filter(sequence_start=2).values_list("message_chunks", flat=True))
    assert shared > 0 and own, "the second message repeats some pieces and adds some"
    assert set(own) == {len(own)}
    assert Chunk.objects.filter(sequence_start=1).count() == first
    assert shared + len(own) == len(
        indexing.chunk_text(
            long_text + " " + " ".join(f"Then {i} more." for i in range(80)),
            max_chars=640,
            overlap=96,
        )
    )


def test_an_appends_chunk_insert_looks_up_only_its_own_contents(alice) -> None:
    """The one-statement chunk INSERT skips contents the session has indexed through the (session,
    content hash) index, for those contents only: never a scan of the table (a NOT EXISTS per row
    was planned as a hash anti-join over every chunk once a bulk append brought a hundred rows)."""
    import hashlib

    from django.test.utils import CaptureQueriesContext

    post_events(alice, "s1", {"role": "user", "content": "first"})
    session = Session.objects.get(external_id="s1")
    Chunk.objects.bulk_create(
        [
            Chunk(
                tenant_id=session.tenant_id,
                session=session,
                kind="event",
                text=f"old {i}",
                sequence_start=1,
                sequence_end=1,
                content_hash=hashlib.sha256(f"old {i}".encode()).hexdigest(),
            )
            for i in range(5000)
        ]
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE retrieval_chunk")
    with CaptureQueriesContext(connection) as queries:
        response = post_events(
            alice, "s1", *[{"role": "user", "content": f"new message {i}"} for i in range(8)]
        )
    assert response.status_code == 201
    insert = next(
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith('INSERT INTO "retrieval_chunk"')
    )
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + insert)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Seq Scan on retrieval_chunk" not in plan and "Anti Join" not in plan, plan
    assert "chunk_session_hash" in plan, plan
    assert Chunk.objects.filter(session=session, text__startswith="new message").count() == 8


def test_message_chunks_are_counted_for_chunks_made_apart(alice, index) -> None:
    """Chunks made elsewhere than at indexing (an import) are counted after:
    count_message_chunks."""
    index(
        alice,
        "s1",
        {
            "role": "user",
            "content": " ".join(f"Sentence {i} is about item {i}." for i in range(120)),
        },
        {"role": "user", "content": "short"},
    )
    Chunk.objects.update(message_chunks=1)
    indexing.count_message_chunks([Chunk.objects.filter(sequence_start=1).first().pk])
    counted = Chunk.objects.filter(sequence_start=1)
    assert {c.message_chunks for c in counted} == {counted.count()} and counted.count() > 3
    assert Chunk.objects.get(sequence_start=2).message_chunks == 1


def test_duplicate_content_extends_sequence_end(alice, index) -> None:
    index(alice, "s1", {"role": "user", "content": "ok, thanks"})
    index(alice, "s1", {"role": "assistant", "content": "Something else."})
    index(alice, "s1", {"role": "user", "content": "OK,  thanks"})
    chunk = Chunk.objects.get(text="ok, thanks")
    assert (chunk.sequence_start, chunk.sequence_end) == (1, 3)
    assert Chunk.objects.count() == 2


def test_same_content_in_another_session_is_not_merged(alice, index) -> None:
    index(alice, "s1", {"role": "user", "content": "ok, thanks"})
    index(alice, "s2", {"role": "user", "content": "ok, thanks"})
    assert Chunk.objects.count() == 2


def test_reindexing_the_same_events_is_harmless(alice, index) -> None:
    index(alice, "s1", {"role": "user", "content": "one"}, {"role": "user", "content": "two"})
    session = Session.objects.get()
    ids = list(Event.objects.values_list("pk", flat=True))
    assert indexing.index_events(session_id=session.pk, event_ids=ids) == []
    assert Chunk.objects.count() == 2


def test_an_append_is_findable_by_text_at_once_and_waits_for_its_vector(alice, settings) -> None:
    from django_q.models import OrmQ

    settings.MEMORYHUB_TASKS_EAGER = False
    response = post_events(alice, "s1", {"role": "user", "content": "The launch code is PELICAN."})
    assert response.status_code == 201
    chunk = Chunk.objects.get()  # written in the append's transaction
    assert chunk.embedding is None and not OrmQ.objects.exists()  # no task: the table is the queue
    results = alice.post("/api/v1/search/", {"query": "launch code"}, format="json").json()[
        "results"
    ]
    assert [(r["chunk_id"], r["embedded"]) for r in results] == [(chunk.pk, False)]


def test_the_embed_lane_takes_waiting_chunks_from_the_table(alice, settings) -> None:
    from retrieval.embedding import EmbedLane

    settings.MEMORYHUB_TASKS_EAGER = False
    post_events(alice, "s1", {"role": "user", "content": "The launch code is PELICAN."})
    lane = EmbedLane()
    assert lane.step().done == 1
    assert lane.step().done == 0  # nothing left
    chunk = Chunk.objects.get()
    assert chunk.embedding is not None and chunk.embedding_model == "hash-v1"
    results = alice.post(
        "/api/v1/search/", {"query": "launch code", "mode": "vector"}, format="json"
    ).json()
    assert [(r["chunk_id"], r["embedded"]) for r in results["results"]] == [(chunk.pk, True)]


def test_embedder_failure_never_fails_the_append_and_is_retried(
    alice, index, failing_embedder
) -> None:
    response = index(alice, "s1", {"role": "user", "content": "remember the blue door"})
    assert response.status_code == 201
    chunk = Chunk.objects.get()
    assert chunk.embedding is None
    assert "model is down" in chunk.embedding_error and chunk.embedding_attempts == 1
    # Full text still finds it while the embedder is down.
    assert alice.post(
        "/api/v1/search/", {"query": "blue door", "mode": "text"}, format="json"
    ).json()["results"]
    embedders._instances.pop("hash")  # the model is back
    assert embedding.backfill_embeddings() == {"embedded": 1, "failed": 0, "remaining": 0}
    chunk.refresh_from_db()
    assert (
        chunk.embedding is not None
        and chunk.embedding_error == ""
        and chunk.embedding_attempts == 2
    )


def test_backfill_counts_failures_and_tries_each_row_once(
    alice, index, failing_embedder, settings, monkeypatch
) -> None:
    monkeypatch.setattr("retrieval.embedding.BACKFILL_BATCH", 2)
    index(alice, "s1", *[{"role": "user", "content": f"message {i}"} for i in range(5)])
    assert embedding.backfill_embeddings() == {"embedded": 0, "failed": 5, "remaining": 5}
    assert embedding.backfill_embeddings(limit=3) == {"embedded": 0, "failed": 3, "remaining": 5}


class RecordingEmbedder:
    name = "hash-v1"
    dimensions = 384

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(texts)
        return [[1.0] + [0.0] * 383 for _ in texts]


def test_backfill_batches_texts_of_alike_length_and_takes_the_next_in_line_first(
    alice, index, failing_embedder, monkeypatch, settings
) -> None:
    monkeypatch.setattr("retrieval.embedding.BACKFILL_BATCH", 2)
    monkeypatch.setattr("retrieval.indexing.CONTEXT_MESSAGES", 0)
    lengths = [40, 5, 300, 6, 42, 310]
    for i, n in enumerate(lengths):  # one session each: no conversation context in the texts
        index(alice, f"s{i}", {"role": "user", "content": "x" * n})
    recorder = RecordingEmbedder()
    monkeypatch.setitem(embedders._instances, "hash", recorder)
    assert embedding.backfill_embeddings() == {"embedded": 6, "failed": 0, "remaining": 0}
    # Each batch starts from the oldest row left and adds the one nearest its length.
    assert [sorted(len(t) for t in batch) for batch in recorder.batches] == [
        [40, 42],
        [5, 6],
        [300, 310],
    ]


def test_backfill_is_confined_to_a_tenant(alice, bob, index, failing_embedder, cast) -> None:
    index(alice, "s1", {"role": "user", "content": "alice text"})
    index(bob, "s1", {"role": "user", "content": "bob text"})
    embedders._instances.pop("hash")
    result = embedding.backfill_embeddings(tenant_id=cast.bob_tenant.pk)
    assert result["embedded"] == 1 and result["remaining"] == 0
    assert Chunk.objects.get(tenant=cast.alice_tenant).embedding is None


def test_reindex_chunks_recomputes_embeddings(alice, index) -> None:
    index(alice, "s1", {"role": "user", "content": "alpha"}, {"role": "user", "content": "beta"})
    ids = list(Chunk.objects.values_list("pk", flat=True))
    Chunk.objects.update(embedding_model="old-model")
    assert embedding.reindex_chunks(ids) == 2
    assert set(Chunk.objects.values_list("embedding_model", flat=True)) == {"hash-v1"}


def test_vectors_of_the_wrong_width_are_refused(alice, index, monkeypatch) -> None:
    class Narrow:
        name, dimensions = "narrow", 384

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[0.1] * 10 for _ in texts]

    monkeypatch.setitem(embedders._instances, "hash", Narrow())
    index(alice, "s1", {"role": "user", "content": "hello"})
    chunk = Chunk.objects.get()
    assert chunk.embedding is None and "10-dimensional" in chunk.embedding_error


def test_forgetting_a_session_removes_its_chunks(alice, index) -> None:
    index(alice, "s1", {"role": "user", "content": "secret plans"})
    assert Chunk.objects.count() == 1
    assert alice.delete("/api/v1/sessions/s1/").status_code == 200
    assert Chunk.objects.count() == 0


def _searchable(cast: Any, **fields: Any) -> Searchable:
    values = dict(
        kind="note",
        source_id="note-1",
        tenant_id=cast.alice_tenant.pk,
        text="Alice prefers tea over coffee.",
        created_at=timezone.now(),
        tags=("Drinks", "prefs"),
        metadata={"note_id": "note-1"},
    )
    values.update(fields)
    return Searchable(**values)


def test_memory_saved_replaces_chunks_and_memory_deleted_removes_them(
    cast, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        memory_saved.send(sender=None, kind="note", searchable=_searchable(cast))
    chunk = Chunk.objects.get()
    assert (chunk.kind, chunk.source_id, chunk.tags) == ("note", "note-1", ["drinks", "prefs"])
    assert chunk.metadata["note_id"] == "note-1" and chunk.embedding is not None
    with django_capture_on_commit_callbacks(execute=True):
        memory_saved.send(
            sender=None, kind="note", searchable=_searchable(cast, text="Alice now prefers coffee.")
        )
    assert list(Chunk.objects.values_list("text", flat=True)) == ["Alice now prefers coffee."]
    memory_deleted.send(
        sender=None, kind="note", tenant_id=cast.alice_tenant.pk, source_id="note-1"
    )
    assert not Chunk.objects.exists()


def test_memory_saved_accepts_an_instance_that_describes_itself(cast) -> None:
    class Note:
        def as_searchable(self) -> Searchable:
            return _searchable(cast, created_at=datetime(2024, 1, 1, tzinfo=UTC))

    memory_saved.send(sender=None, kind="note", instance=Note())
    assert Chunk.objects.get().source_id == "note-1"


def test_memory_deleted_is_confined_to_its_tenant(cast) -> None:
    memory_saved.send(sender=None, kind="note", searchable=_searchable(cast))
    memory_deleted.send(sender=None, kind="note", tenant_id=cast.bob_tenant.pk, source_id="note-1")
    assert Chunk.objects.count() == 1


def test_an_appends_context_comes_from_the_recent_window_when_it_is_cached(
    alice,
    settings,
    django_capture_on_commit_callbacks,
    monkeypatch,
) -> None:  # type: ignore[no-untyped-def]
    """The earlier messages a chunk is embedded with are read from the session's cached recent
    window when it ends just before the append (no statement), and are what the log says."""
    from django.core.cache import cache
    from django.test.utils import CaptureQueriesContext

    from memoryhub import recent

    monkeypatch.setattr("retrieval.indexing.CONTEXT_MESSAGES", 2)
    with django_capture_on_commit_callbacks(execute=True):  # the write-through fills the window
        post_events(
            alice,
            "s1",
            {"role": "user", "content": "I moved to Lisbon in 2021."},
            {
                "role": "assistant",
                "content": "",
                "tool_name": "weather",
                "tool_args": {"city": "Lisbon"},
            },
        )
    session = Session.objects.get(external_id="s1")
    assert recent.get(session.pk, 2, "0.2") is not None
    with django_capture_on_commit_callbacks(), CaptureQueriesContext(connection) as queries:
        assert (
            post_events(alice, "s1", {"role": "user", "content": "Is it sunny there?"}).status_code
            == 201
        )
    reads = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT") and 'FROM "memoryhub_event"' in q["sql"]
    ]
    assert reads == []  # the context came from the window
    chunk = Chunk.objects.get(session=session, sequence_start=3)
    assert chunk.context == 'I moved to Lisbon in 2021.\nCalled weather with {"city": "Lisbon"}'
    cache.clear()  # the same context from the log
    recent.clear_local()
    assert indexing._context_before(session, 3, 2, 0) == chunk.context.split("\n")
    # A gap in the sequences: no window ends just before it, the log is read.
    with CaptureQueriesContext(connection) as queries:
        assert (
            post_events(
                alice, "s1", {"role": "user", "content": "Later.", "sequence": 10}
            ).status_code
            == 201
        )
    assert any(
        q["sql"].startswith("SELECT") and 'FROM "memoryhub_event"' in q["sql"]
        for q in queries.captured_queries
    )
    assert Chunk.objects.get(session=session, sequence_start=10).context == (
        'Called weather with {"city": "Lisbon"}\nIs it sunny there?'
    )


def test_a_short_message_reads_the_messages_before_it_and_a_long_chunk_reads_itself() -> None:
    """A chunk's context fills the room its own text leaves (indexing.CONTEXT_FILL), newest
    earlier message first, each cut to fit: a short reply is embedded with what it answers, a
    chunk that fills the room alone with nothing else (context was most of the model's
    input)."""
    earlier = [
        "I moved to Lisbon in 2021 and love the tiles.",
        "Which part of town do you live in?",
    ]
    assert indexing.fill_context(earlier, len("Alfama, near the river.")) == "\n".join(earlier)
    assert indexing.fill_context(earlier, indexing.CONTEXT_FILL) == ""
    assert (
        indexing.fill_context(earlier, indexing.CONTEXT_FILL - indexing.CONTEXT_MIN_CHARS + 1) == ""
    )
    tight = indexing.fill_context(earlier, indexing.CONTEXT_FILL - 50)  # room for the newest, cut
    assert tight == earlier[1]
    cut = indexing.fill_context(["x" * 1000], 100)
    assert cut == "x" * (indexing.CONTEXT_FILL - 100)
    assert indexing.fill_context([], 10) == ""
