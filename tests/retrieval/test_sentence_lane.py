"""The embed lane writes a chunk's own vector first (searchable by meaning at once) and its sentence
vectors after; under a steady stream of appends the sentences still get their turn."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from retrieval import embedders, embedding
from retrieval.embedding import SENTENCE_GRACE_SECONDS, EmbedLane, backlog
from retrieval.models import Chunk, ChunkSentence
from tests.base import post_events
from tests.retrieval.conftest import search
from tests.retrieval.test_sentences import LONG, QUERY

pytestmark = pytest.mark.django_db


class Recording(embedders.HashEmbedder):
    """The hash embedder, remembering the texts of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return super().embed(texts)


@pytest.fixture
def recorder(settings, monkeypatch) -> Recording:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_TASKS_EAGER = False  # chunks wait in the table for the lane
    monkeypatch.setattr("retrieval.indexing.CONTEXT_MESSAGES", 0)
    fake = Recording()
    monkeypatch.setitem(embedders._instances, "hash", fake)
    return fake


def _post(client: Any, session: str, content: str) -> Chunk:
    response = post_events(client, session, {"role": "user", "content": content})
    assert response.status_code == 201, response.content
    return Chunk.objects.get(session__external_id=session, kind="event")


def _sentences_of(chunk: Chunk) -> int | None:
    chunk.refresh_from_db()
    assert chunk.sentence_vectors == ChunkSentence.objects.filter(chunk=chunk).count() or (
        chunk.sentence_vectors is None and not ChunkSentence.objects.filter(chunk=chunk).exists()
    )
    return chunk.sentence_vectors


def test_a_claimed_batch_writes_the_chunks_own_vectors_and_their_sentences_follow(
    alice, recorder
) -> None:
    long = _post(alice, "long", LONG)
    lane = EmbedLane()
    assert lane.step().done == 1
    long.refresh_from_db()
    assert long.embedding is not None and _sentences_of(long) is None
    assert recorder.calls == [[long.embedding_input]]  # the chunk alone: no sentence in its call
    # Searchable by meaning at once, scored by its own cosine until its sentences have vectors.
    found = search(alice, query=QUERY, mode="vector", explain=True).json()["results"]
    assert [r["session"] for r in found] == ["long"]
    assert "best_sentence" not in found[0]["explain"]["parts"]["vector"]
    assert backlog() == [
        {
            "tenant_id": long.tenant_id,
            "tenant": "alice",
            "waiting": 0,
            "set_aside": 0,
            "eta_seconds": None,
            "sentences_waiting": 1,
        }
    ]
    result = lane.step()  # no chunk waits: the sentences are the lane's next work
    assert result.done == 1 and result.model_seconds > 0
    assert _sentences_of(long) == 5 and len(recorder.calls[-1]) == 5
    found = search(alice, query=QUERY, mode="vector", explain=True).json()["results"]
    assert found[0]["explain"]["parts"]["vector"]["best_sentence"] > 0.9
    assert backlog() == [] and not lane.step().found_work


def test_a_chunk_with_no_sentences_to_embed_is_never_chosen_for_them(alice, recorder) -> None:
    short = _post(alice, "short", "My grandmother grew tulips.")
    lane = EmbedLane()
    assert lane.step().done == 1
    assert _sentences_of(short) == 0 and backlog() == []
    assert not lane.step().found_work and len(recorder.calls) == 1


def _stream(client: Any, lane: EmbedLane, steps: int, start: int) -> list[bool]:
    """`steps` lane steps, a new message appended before each, so chunks always wait: whether each
    step left a chunk waiting for its own vector."""
    waiting = []
    for i in range(start, start + steps):
        _post(client, f"stream-{i}", f"Message number {i} of a steady stream about trains.")
        _post(client, f"stream-{i}-b", f"Another message {i} of the stream about boats.")
        lane.step()
        waiting.append(embedding.waiting().exists())
    return waiting


def test_sentence_vectors_are_not_starved_by_a_steady_stream(alice, recorder, monkeypatch) -> None:
    monkeypatch.setattr("retrieval.embedding.BACKFILL_BATCH", 1)  # one chunk a step
    long = _post(alice, "long", LONG)
    lane = EmbedLane()
    lane.step()
    assert _sentences_of(long) is None
    # A burst first: chunks appended within the grace after its vector go before its sentences.
    assert all(_stream(alice, lane, 8, 0))
    assert _sentences_of(long) is None
    # Its vector written long before every waiting chunk was appended: its sentences go next,
    # though chunks keep arriving (the lane is never idle).
    Chunk.objects.filter(pk=long.pk).update(
        indexed_at=timezone.now() - timedelta(seconds=SENTENCE_GRACE_SECONDS + 3600)
    )
    assert all(_stream(alice, lane, 1, 100))
    assert _sentences_of(long) == 5
