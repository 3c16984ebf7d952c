"""Access counts written by several processes at once (issue 19): a flush locks its rows in id
order, so two flushes of overlapping batches queue behind each other instead of deadlocking."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from retrieval.models import Chunk
from retrieval.search.sql import _write_accesses
from tests.base import post_events

pytestmark = pytest.mark.django_db(transaction=True)


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0] > 0


def test_a_flush_waiting_for_one_row_holds_no_other_row_of_its_batch(cast) -> None:  # type: ignore[no-untyped-def]
    post_events(cast.alice, "s1", {"role": "user", "content": "first"}, {"role": "user", "content": "second"})
    low, high = sorted(Chunk.objects.values_list("pk", flat=True))
    # Rewriting the lower row moves it after the higher one in the table: a statement that locks
    # in the order it reads rows (a scan) would then take the higher row first.
    Chunk.objects.filter(pk=low).update(access_count=0)
    held, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold_low() -> None:  # another process's flush, holding the lower row
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT id FROM retrieval_chunk WHERE id = %s FOR UPDATE", [low])
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
        with transaction.atomic(), connection.cursor() as cursor:  # ...holding nothing else: the higher row is free
            cursor.execute("SELECT id FROM retrieval_chunk WHERE id = %s FOR UPDATE NOWAIT", [high])
            assert cursor.fetchone() == (high,)
    finally:
        release.set()
        holder.join(10)
        flusher.join(10)
    assert not errors and not flusher.is_alive()
    assert dict(Chunk.objects.values_list("pk", "access_count")) == {low: 1, high: 1}
