"""Sentence vectors: one sentence of a long message is found by a query about it (the message's
own vector is the mean of all it says), written with the chunk's vector and replaced with it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memoryhub.models import SummaryNode
from memoryhub.signals import memory_saved
from retrieval import sentence_vectors
from retrieval.chunking import SENTENCES_PER_CHUNK, sentences
from retrieval.embedders import get_embedder
from retrieval.embedding import EmbedLane, queue_for_embedding
from retrieval.models import Chunk, ChunkSentence
from retrieval.search import weights
from retrieval.search.request import Candidate
from retrieval.search.sql import best_sentences
from retrieval.search.vectors import CandidateVectors
from retrieval.sentence_vectors import embed_sentences
from tests.retrieval.conftest import search

LONG = (
    "We spent the whole afternoon repainting the garage door. The weather was cold but sunny all"
    " day. My grandmother grew prize tulips in Utrecht. Afterwards we ordered pizza and watched a"
    " film together. The neighbours came by to borrow a ladder."
)
SHORT = "My grandmother grew tulips."
QUERY = "my grandmother grew prize tulips in utrecht"


def test_sentences_are_split_at_their_ends_and_at_line_breaks() -> None:
    assert sentences(
        "I moved to Lisbon last spring. Do you know a good bakery there?\nThanks a lot, really!"
    ) == [
        "I moved to Lisbon last spring.",
        "Do you know a good bakery there?",
        "Thanks a lot, really!",
    ]
    # Pieces of fewer than four words say too little alone; one sentence is the chunk itself.
    assert sentences("Great idea. I will book the train tomorrow morning. Thanks!") == []
    assert sentences("Just one sentence with enough words in it.") == []
    assert sentences("") == []
    many = " ".join(f"This is sentence number {i}." for i in range(40))
    assert len(sentences(many)) == SENTENCES_PER_CHUNK


def _post(alice: Any, index: Any, session: str, content: str) -> Chunk:
    index(alice, session, {"role": "user", "content": content})
    return Chunk.objects.get(session__external_id=session, kind="event")


def _vectors(chunk: Chunk) -> list[tuple[int, list[float]]]:
    return [
        (s.pk, [float(x) for x in s.embedding])
        for s in ChunkSentence.objects.filter(chunk=chunk).order_by("pk")
    ]


def test_a_chunk_gets_a_vector_per_sentence_with_its_own(alice, index) -> None:
    long, short = _post(alice, index, "long", LONG), _post(alice, index, "short", SHORT)
    assert long.embedding is not None and long.sentence_vectors == 5
    expected = get_embedder().embed(sentences(long.text))
    stored = [vector for _, vector in _vectors(long)]
    assert np.allclose(np.array(stored), np.array(expected), atol=1e-3)  # halfvec precision
    assert short.sentence_vectors == 0 and not _vectors(short)


def test_re_embedding_a_chunk_replaces_its_sentence_vectors(
    alice, index, settings, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    long = _post(alice, index, "long", LONG)
    before = _vectors(long)
    with django_capture_on_commit_callbacks(execute=True):
        queue_for_embedding([long.pk])
    after = _vectors(long)
    assert len(after) == len(before) == 5 and {pk for pk, _ in after}.isdisjoint(
        pk for pk, _ in before
    )
    # Turned off, a re-embedded chunk keeps none (no vector of an earlier model), left to be split
    # later.
    monkeypatch.setattr(sentence_vectors, "EMBED_SENTENCES", False)
    with django_capture_on_commit_callbacks(execute=True):
        queue_for_embedding([long.pk])
    long.refresh_from_db()
    assert not _vectors(long) and long.sentence_vectors is None and long.embedding is not None


def test_chunks_embedded_without_sentence_vectors_get_them_when_the_lane_is_idle(
    alice, index
) -> None:
    long, short = _post(alice, index, "long", LONG), _post(alice, index, "short", SHORT)
    ChunkSentence.objects.all().delete()
    Chunk.objects.filter(pk__in=[long.pk, short.pk]).update(sentence_vectors=None)
    own = [float(x) for x in Chunk.objects.get(pk=long.pk).embedding]
    result = EmbedLane().step()  # nothing waits to be embedded: the lane splits
    assert result.done == 2
    long.refresh_from_db()
    assert long.sentence_vectors == 5 and len(_vectors(long)) == 5
    assert [float(x) for x in long.embedding] == own  # the chunk's own vector is kept
    assert Chunk.objects.get(pk=short.pk).sentence_vectors == 0
    assert embed_sentences() == {"chunks": 0, "sentences": 0}  # nothing left


def test_a_failing_sentence_batch_is_not_split_again(alice, index, monkeypatch) -> None:
    long = _post(alice, index, "long", LONG)
    ChunkSentence.objects.all().delete()
    Chunk.objects.filter(pk=long.pk).update(sentence_vectors=None)

    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("model fault")

    monkeypatch.setattr(get_embedder(), "embed", broken)
    assert embed_sentences() == {"chunks": 1, "sentences": 0}
    long.refresh_from_db()
    assert long.sentence_vectors == 0 and long.embedding is not None


def test_summaries_are_not_split(alice, index, django_capture_on_commit_callbacks) -> None:
    session = _post(alice, index, "long", LONG).session
    node = SummaryNode.objects.create(
        tenant_id=session.tenant_id,
        session=session,
        workspace_id=session.workspace_id,
        channel_id=session.channel_id,
        level="leaf",
        text=LONG,
        sequence_start=1,
        sequence_end=1,
    )
    with django_capture_on_commit_callbacks(execute=True):
        memory_saved.send(sender=SummaryNode, kind="summary", instance=node)
    summary = Chunk.objects.get(kind="summary", source_id=str(node.pk))
    assert summary.embedding is not None and summary.sentence_vectors == 0
    assert not ChunkSentence.objects.filter(chunk=summary).exists()


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_a_sentence_of_a_long_message_is_found_by_a_query_about_it(
    alice, index, settings, mode: str, monkeypatch
) -> None:
    _post(alice, index, "long", LONG)
    _post(alice, index, "short", SHORT)
    found = search(alice, query=QUERY, mode=mode, top_k=2, explain=True).json()["results"]
    assert [r["session"] for r in found] == ["long", "short"]
    # The message's own vector is the mean of all it says: without its sentences it ranks second.
    vector = found[0]["explain"]["parts"]["vector"]
    assert vector["raw"] == vector["best_sentence"] > 0.9
    # one sentence: its own vector
    assert "best_sentence" not in found[1]["explain"]["parts"]["vector"]
    monkeypatch.setattr(weights, "SENTENCES", False)
    found = search(alice, query=QUERY, mode=mode, top_k=2).json()["results"]
    assert [r["session"] for r in found] == ["short", "long"]


def test_only_candidates_with_a_vector_of_the_search_model_are_compared(alice, index) -> None:
    long = _post(alice, index, "long", LONG)
    vector = np.array(get_embedder().embed([QUERY])[0], np.float32)
    own = CandidateVectors.of({long.pk: np.array([float(x) for x in long.embedding], np.float32)})
    candidate = Candidate(long.pk, long.session_id, long.text, False, 0.0, 1, 0.5, split=True)
    assert best_sentences([candidate], own, vector)[long.pk] > 0.9
    # Its vector (and so its sentences') made by another model: not among the vectors.
    assert best_sentences([candidate], CandidateVectors.of({}), vector) == {}
    unsplit = Candidate(long.pk, long.session_id, long.text, False, 0.0, 1, 0.5, split=False)
    assert best_sentences([unsplit], own, vector) == {}  # no statement for unsplit candidates


def test_sentences_never_reach_another_tenant(alice, bob, index) -> None:
    _post(alice, index, "long", LONG)
    assert search(bob, query=QUERY, mode="vector").json()["results"] == []


def test_sentence_vectors_go_with_their_chunk(alice, index) -> None:
    long = _post(alice, index, "long", LONG)
    other = _post(alice, index, "other", LONG.replace("tulips", "roses"))
    assert ChunkSentence.objects.filter(chunk_id=long.pk).count() == 5
    Chunk.objects.filter(pk=long.pk).delete()  # one statement: the database deletes its sentences
    assert not ChunkSentence.objects.filter(chunk_id=long.pk).exists()
    assert alice.delete("/api/v1/sessions/other/").status_code == 200
    assert not ChunkSentence.objects.filter(chunk_id=other.pk).exists()


ONE = "My grandmother grew prize tulips in Utrecht every spring."


def test_a_one_sentence_chunk_gets_no_sentence_vector_and_is_found_by_its_own(alice, index) -> None:
    """Its one sentence's vector would be its own again: none is written, the lane and the idle
    backfill do not choose it again, and a query about that sentence finds it by its own vector."""
    one = _post(alice, index, "one", ONE)
    assert one.embedding is not None and one.sentence_vectors == 0 and not _vectors(one)
    assert not Chunk.objects.filter(sentence_vectors__isnull=True, embedding__isnull=False).exists()
    assert embed_sentences() == {"chunks": 0, "sentences": 0}
    assert not EmbedLane().step().found_work
    _post(alice, index, "long", LONG.replace("My grandmother grew prize tulips in Utrecht.", ""))
    found = search(alice, query=QUERY, mode="vector", top_k=2, explain=True).json()["results"]
    assert (
        found[0]["session"] == "one"
        and "best_sentence" not in found[0]["explain"]["parts"]["vector"]
    )


def _long_message(topic: str, said: str = "My grandmother grew prize tulips in Utrecht.") -> str:
    """A message of three chunks or more (640 characters each at most) that says `said` once."""
    filler = " ".join(
        f"Step {i} of the {topic} plan takes a little longer than the one before it."
        for i in range(24)
    )
    return f"{filler} {said} {filler}"


def test_the_chunks_of_a_long_assistant_answer_get_no_sentence_vectors_and_are_not_chosen_again(
    alice, index
) -> None:
    index(alice, "answer", {"role": "assistant", "content": _long_message("garden")})
    index(
        alice,
        "asked",
        {
            "role": "user",
            "content": _long_message("kitchen", "My uncle repaired old bicycles in Ghent."),
        },
    )
    answer = list(Chunk.objects.filter(session__external_id="answer", kind="event"))
    asked = list(Chunk.objects.filter(session__external_id="asked", kind="event"))
    assert len(answer) >= 3 and all(c.message_chunks == len(answer) for c in answer)
    assert all(c.embedding is not None and c.sentence_vectors == 0 for c in answer)
    assert not ChunkSentence.objects.filter(chunk__in=answer).exists()
    # A user's long message keeps a vector per sentence.
    assert all(c.sentence_vectors == len(sentences(c.text)) > 0 for c in asked)
    # Neither the lane nor the idle backfill chooses those chunks again.
    assert embed_sentences() == {"chunks": 0, "sentences": 0}
    assert not EmbedLane().step().found_work
    # The answer's sentence is still found, by its chunk's own vector and its words.
    found = search(alice, query=QUERY, top_k=3).json()["results"]
    assert "answer" in {r["session"] for r in found}


def test_a_one_chunk_assistant_answer_keeps_its_sentence_vectors(alice, index) -> None:
    index(alice, "short-answer", {"role": "assistant", "content": LONG})
    chunk = Chunk.objects.get(session__external_id="short-answer", kind="event")
    assert chunk.message_chunks == 1 and chunk.sentence_vectors == 5 and len(_vectors(chunk)) == 5


def test_the_backfill_follows_the_same_rule(alice, index) -> None:
    """Chunks embedded before sentence vectors existed (NULL) are split by the same rule: a long
    assistant answer's chunks get none and are marked done."""
    index(alice, "answer", {"role": "assistant", "content": _long_message("garden")})
    index(alice, "long", {"role": "user", "content": LONG})
    ChunkSentence.objects.all().delete()
    Chunk.objects.update(sentence_vectors=None)
    answer = Chunk.objects.filter(session__external_id="answer", kind="event").count()
    assert embed_sentences() == {"chunks": answer + 1, "sentences": 5}
    assert set(
        Chunk.objects.filter(session__external_id="answer").values_list(
            "sentence_vectors", flat=True
        )
    ) == {0}
    assert embed_sentences() == {"chunks": 0, "sentences": 0}
