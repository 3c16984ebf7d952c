"""The embed lane: the chunk table is the queue; tenants in turn; a bad chunk isolated and set
aside."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction

from memoryhub.plumbing.background import LaneBackoff, Waker, notify_work, round_robin_etas
from retrieval import embedders, embedding
from retrieval.embedders import EmbedderUnavailable
from retrieval.embedding import EmbedLane, backlog
from retrieval.models import Chunk
from tests.base import post_events

pytestmark = pytest.mark.django_db


@pytest.fixture
def lane_mode(settings, monkeypatch):  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_TASKS_EAGER = False  # chunks wait in the table
    monkeypatch.setattr("retrieval.indexing.CONTEXT_MESSAGES", 0)
    return settings


class Recording:
    """The hash embedder, remembering each batch; texts containing "poison" break a batch."""

    name = "hash-v1"
    dimensions = 384

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.inner = embedders.HashEmbedder()

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(texts)
        if any("poison" in t for t in texts):
            raise ValueError("this text breaks the model")
        return self.inner.embed(texts)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recording:
    fake = Recording()
    monkeypatch.setitem(embedders._instances, "hash", fake)
    return fake


def test_tenants_take_turns(cast, lane_mode, recorder, monkeypatch) -> None:
    monkeypatch.setattr("retrieval.embedding.BACKFILL_BATCH", 2)
    post_events(cast.alice, "a", *[{"role": "user", "content": f"alice {i}"} for i in range(6)])
    post_events(cast.bob, "b", *[{"role": "user", "content": f"bob {i}"} for i in range(2)])
    lane = EmbedLane()
    while lane.step().found_work:
        pass
    owners = [batch[0].split()[0] for batch in recorder.batches]
    assert owners == ["alice", "bob", "alice", "alice"]  # bob's backlog does not wait for alice's
    assert not Chunk.objects.filter(embedding__isnull=True).exists()
    # each embedded once
    assert set(Chunk.objects.values_list("embedding_attempts", flat=True)) == {1}


def test_a_bad_chunk_is_isolated_and_set_aside(alice, lane_mode, recorder, monkeypatch) -> None:
    monkeypatch.setattr("retrieval.models.EMBED_MAX_ATTEMPTS", 2)
    post_events(
        alice,
        "s",
        *[{"role": "user", "content": f"message {i}"} for i in range(5)],
        {"role": "user", "content": "poison pill"},
    )
    lane = EmbedLane()
    first = lane.step()
    assert (first.done, first.failed) == (5, 1)  # the other five went through at the first try
    assert Chunk.objects.filter(embedding__isnull=False).count() == 5
    bad = Chunk.objects.get(text="poison pill")
    assert bad.embedding_attempts == 1 and "breaks the model" in bad.embedding_error
    assert lane.step().failed == 1
    assert not lane.step().found_work  # set aside after two attempts: the lane has nothing left
    assert backlog() == [
        {
            "tenant_id": bad.tenant_id,
            "tenant": "alice",
            "waiting": 0,
            "set_aside": 1,
            "eta_seconds": None,
            "sentences_waiting": 0,
        }
    ]
    recorder.batches.clear()
    Chunk.objects.filter(pk=bad.pk).update(text="now harmless")
    embedding.queue_for_embedding([bad.pk])  # the admin's retry
    assert lane.step().done == 1


def test_an_unavailable_embedder_backs_off_without_blaming_chunks(
    alice, lane_mode, monkeypatch
) -> None:
    class Down:
        name, dimensions = "hash-v1", 384

        def embed(self, texts: list[str]) -> list[list[float]]:
            raise EmbedderUnavailable("no model here")

    monkeypatch.setitem(embedders._instances, "hash", Down())
    post_events(alice, "s", {"role": "user", "content": "hello"})
    with pytest.raises(LaneBackoff):
        EmbedLane().step()
    chunk = Chunk.objects.get()
    assert chunk.embedding is None and chunk.embedding_attempts == 0  # not the chunk's fault


@pytest.mark.django_db(transaction=True)
def test_two_lanes_claim_different_rows(cast, lane_mode, monkeypatch) -> None:
    monkeypatch.setattr("retrieval.embedding.BACKFILL_BATCH", 5)
    post_events(cast.alice, "s", *[{"role": "user", "content": f"message {i}"} for i in range(10)])
    holding, release = threading.Event(), threading.Event()
    batches: list[list[str]] = []

    class Slow(embedders.HashEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:
            batches.append(texts)
            if threading.current_thread().name == "first":
                holding.set()
                release.wait(10)
            return super().embed(texts)

    monkeypatch.setitem(embedders._instances, "hash", Slow())

    def first() -> None:
        try:
            EmbedLane().step()
        finally:
            connections.close_all()

    thread = threading.Thread(target=first, name="first")
    thread.start()
    assert holding.wait(10)
    assert EmbedLane().step().done == 5  # skips the rows the first lane holds
    release.set()
    thread.join()
    assert len(batches) == 2 and not set(batches[0]) & set(batches[1])
    assert set(Chunk.objects.values_list("embedding_attempts", flat=True)) == {1}


@pytest.mark.django_db(transaction=True)
def test_an_append_wakes_the_lanes_when_it_commits(alice) -> None:
    waker = Waker()
    try:
        assert not waker.wait(0.2)  # listening, nothing yet
        with transaction.atomic():
            notify_work()
            assert not waker.wait(0.3)  # not before the commit
        assert waker.wait(5)
        try:
            with transaction.atomic():
                notify_work()
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        assert not waker.wait(0.3)  # a rolled back write wakes no one
        post_events(alice, "s", {"role": "user", "content": "hello"})
        assert waker.wait(5)
    finally:
        waker.close()


def test_round_robin_etas_finish_small_backlogs_first() -> None:
    # 3 tenants at 10 chunks/s shared in turn: the 10-chunk one is done after 3 s (10 each), the
    # 20-chunk one after 5 s (10 more each for two), the 100-chunk one after 13 s (all 130).
    assert round_robin_etas({1: 100, 2: 10, 3: 20}, 10.0) == {2: 3.0, 3: 5.0, 1: 13.0}
    assert round_robin_etas({1: 5}, 0.0) == {1: None}  # no measured rate, no guess


def test_stats_give_the_tenants_backlog_and_eta(cast, lane_mode) -> None:
    from memoryhub.models import Worker

    post_events(cast.alice, "s", *[{"role": "user", "content": f"message {i}"} for i in range(4)])
    post_events(cast.bob, "s", {"role": "user", "content": "bob's"})
    Worker.objects.create(lane="embed", name="host:1", rate=2.0)
    queue = cast.alice.get("/api/v1/stats/").json()["queue"]
    assert queue["embedding_waiting"] == 4 and queue["embedding_set_aside"] == 0
    assert queue["embedding_rate_per_second"] == 2.0
    # 1 + 1 chunks take 1 s, then alice's last 3 take 1.5 s
    assert queue["embedding_eta_seconds"] == 2.5
    assert cast.bob.get("/api/v1/stats/").json()["queue"]["embedding_eta_seconds"] == 1.0


def test_one_notification_per_transaction(db) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        with transaction.atomic():
            notify_work()
            notify_work()
            try:
                with transaction.atomic():
                    raise RuntimeError("a savepoint rolled back keeps the outer notification")
            except RuntimeError:
                pass
            notify_work()
    assert sum("pg_notify" in q["sql"] for q in queries.captured_queries) == 1


def test_an_append_sends_one_notification_for_both_lanes(alice) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        # wakes the embed and the summarise lane
        post_events(alice, "s", {"role": "user", "content": "hello"})
    assert sum("pg_notify" in q["sql"] for q in queries.captured_queries) == 1
