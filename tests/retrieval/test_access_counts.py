"""Access counts written by several processes at once: a flush locks its rows in id
order, so two flushes of overlapping batches queue behind each other instead of deadlocking. The
counts live in ChunkAccess rows of their own (migration 0013): a flush never rewrites a chunk
row."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from retrieval.models import Chunk, ChunkAccess
from retrieval.search.sql import _write_accesses
from tests.base import post_events

pytestmark = pytest.mark.django_db(transaction=True)


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


def test_a_flush_waiting_for_one_row_holds_no_other_row_of_its_batch(cast) -> None:  # type: ignore[no-untyped-def]
    post_events(
        cast.alice,
        "s1",
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
    )
    low, high = sorted(Chunk.objects.values_list("pk", flat=True))
    # The lower chunk's access row written after the higher one's, so that it comes later in the
    # table: a statement that locks in the order it reads rows (a scan) would take the higher first.
    _write_accesses({high: [1.0]})
    _write_accesses({low: [1.0]})
    held, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold_low() -> None:  # another process's flush, holding the lower chunk's access row
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT chunk_id FROM retrieval_chunkaccess WHERE chunk_id = %s FOR UPDATE",
                    [low],
                )
                held.set()
                release.wait(10)
        finally:
            connection.close()

    def flush() -> None:  # this batch names the higher row first
        try:
            with transaction.atomic():
                _write_accesses({high: [1.0], low: [1.0]})
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
        finally:
            connection.close()

    holder, flusher = threading.Thread(target=hold_low), threading.Thread(target=flush)
    holder.start()
    assert held.wait(10)
    flusher.start()
    deadline = time.monotonic() + 10
    while not _waiting_on_a_lock() and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        assert _waiting_on_a_lock()  # the flush waits for the lower row...
        # ...holding nothing else: the higher rows are free
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT chunk_id FROM retrieval_chunkaccess WHERE chunk_id = %s FOR UPDATE NOWAIT",
                [high],
            )
            assert cursor.fetchone() == (high,)
            cursor.execute("SELECT id FROM retrieval_chunk WHERE id = %s FOR UPDATE NOWAIT", [high])
            assert cursor.fetchone() == (high,)
    finally:
        release.set()
        holder.join(10)
        flusher.join(10)
    assert not errors and not flusher.is_alive()
    assert dict(Chunk.objects.with_access().values_list("pk", "access_count")) == {low: 2, high: 2}


def test_a_flush_rewrites_no_chunk_row_and_skips_deleted_chunks(cast) -> None:  # type: ignore[no-untyped-def]
    """Reinforcement writes the narrow access rows only: the chunk rows keep their versions (no
    new entry in any of the chunk table's indexes, HNSW included), and their term statistics'
    trigger does not fire. A chunk deleted before the flush is left out; its row goes with it."""
    post_events(
        cast.alice,
        "s1",
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
    )
    low, high = sorted(Chunk.objects.values_list("pk", flat=True))

    def versions() -> list[tuple[int, str]]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, ctid::text FROM retrieval_chunk ORDER BY id")
            return cursor.fetchall()

    before = versions()
    _write_accesses({high: [2.0], low: [1.0]})
    _write_accesses({high: [1.0]})
    assert versions() == before
    assert dict(Chunk.objects.with_access().values_list("pk", "access_count")) == {low: 1, high: 3}
    Chunk.objects.filter(pk=low).delete()
    assert not ChunkAccess.objects.filter(chunk_id=low).exists()  # deleted with its chunk
    # a hit of a chunk deleted since: no error, not written
    _write_accesses({low: [5.0], high: [1.0]})
    assert dict(ChunkAccess.objects.values_list("chunk_id", "access_count")) == {high: 4}
