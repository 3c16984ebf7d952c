"""Sentence vectors: which chunks get a vector per sentence (ChunkSentence), and writing them.

Search scores a candidate by the higher of its own cosine and its best sentence's
(retrieval.search.weights.SENTENCES): one sentence of a long message is lost in the mean of all
the message says. A chunk is searchable by meaning as soon as its own vector is written: the embed
lane (retrieval.embedding) writes that first, with `sentence_vectors` NULL when the chunk has
sentences to embed (0 when it has none), and embeds the sentences after (embed_sentences, claiming
over the partial index chunk_pending_sentences: `sentence_vectors IS NULL`); until then the chunk
is scored by its own cosine. Both ask `sentences_of` which sentences a chunk gets, the one
definition of the rule: a chunk it gives none is written with `sentence_vectors = 0`, so it is never
chosen for sentences.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from django.db import connection, transaction

from retrieval.chunking import sentences
from retrieval.embedders import Embedder, EmbedderUnavailable, check_vectors, get_embedder
from retrieval.models import Chunk, ChunkQuerySet, ChunkSentence
from retrieval.vectors import halfvec_text, no_commit_wait

logger = logging.getLogger(__name__)

# Off: chunks are embedded without sentence vectors (left NULL, to be split once it is on again).
EMBED_SENTENCES = True
# Summaries are condensed already, each line a digest of several messages: their messages are
# what a query's one sentence should find.
UNSPLIT_KINDS = ("summary",)
# The chunks of a long message of these roles (a message of several chunks) are found by their own
# vectors and words: their sentence vectors were 37-38 % of LongMemEval's model time and changed no
# question's turn@10 or session@10 in either half on 19 questions, those about what the assistant
# said included (bench/README.md, "What sentence vectors buy": those questions did not move without
# any sentence vector either; the whole file is still to be checked). A user's long message keeps
# them.
UNSPLIT_LONG_MESSAGES_OF = ("assistant",)


class Splittable(Protocol):
    kind: str
    text: str
    role: str
    message_chunks: int


# The columns sentences_of reads (a claim loads only these).
RULE_FIELDS = ("kind", "text", "role", "message_chunks")


def split_into_sentences(row: Splittable) -> bool:
    """Whether this chunk gets a vector per sentence (the one rule the lane and the backfill follow;
    a chunk it refuses is written with sentence_vectors = 0 and never chosen again)."""
    return (
        EMBED_SENTENCES
        and row.kind not in UNSPLIT_KINDS
        and not (row.role in UNSPLIT_LONG_MESSAGES_OF and row.message_chunks > 1)
    )


def sentences_of(rows: Sequence[Splittable]) -> list[list[str]]:
    """Each row's sentences to embed, each alone (none for a chunk split_into_sentences refuses,
    or of fewer than two sentences: retrieval.chunking.sentences)."""
    return [sentences(row.text) if split_into_sentences(row) else [] for row in rows]


def sentence_marks(rows: Sequence[Splittable]) -> list[int | None]:
    """What a chunk's `sentence_vectors` is when its own vector is written: 0 when it gets no
    sentence vectors (sentences_of gives none), None (sentence work waiting) when it gets some, or
    while EMBED_SENTENCES is off (to be split once it is on again)."""
    if not EMBED_SENTENCES:
        return [None for _ in rows]
    return [None if pieces else 0 for pieces in sentences_of(rows)]


def waiting_for_sentences() -> ChunkQuerySet:
    """Chunks whose sentences the lane still has to embed (ChunkQuerySet.sentences_waiting; none
    while EMBED_SENTENCES is off): the one definition the lane's claim, its turn and the backlog
    figures go through."""
    return Chunk.objects.sentences_waiting() if EMBED_SENTENCES else Chunk.objects.none()


def waiting_per_tenant(tenant_ids: list[int]) -> dict[int, int]:
    """Chunks waiting for their sentence vectors per tenant among `tenant_ids` (a tenant with none
    is left out): the dashboard's column."""
    return waiting_for_sentences().filter(tenant_id__in=tenant_ids).per_tenant()


def write_sentences(ids: list[int], parts: list[list[str]], vectors: list[list[float]]) -> None:
    """Replace these chunks' sentence vectors with `vectors` (`parts`: each chunk's sentences, in
    order; none: the chunk keeps none, so no vector of an earlier model is left)."""
    table = ChunkSentence._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE chunk_id = ANY(%s)", [ids])
        values, params = [], []
        at = 0
        for pk, pieces in zip(ids, parts, strict=True):
            for vector in vectors[at : at + len(pieces)]:
                values.append("(%s, %s::halfvec)")
                params += [pk, halfvec_text(vector)]
            at += len(pieces)
        if values:
            cursor.execute(
                f"INSERT INTO {table} (chunk_id, embedding) VALUES {', '.join(values)}", params
            )


def clear_sentences(ids: list[int]) -> None:
    """Drop these chunks' sentence vectors (their own vectors are being replaced: none of an
    earlier model or text is left to score them)."""
    write_sentences(ids, [[] for _ in ids], [])


def embed_sentences(*, batch: int = 50, ids: list[int] | None = None) -> dict[str, int]:
    """Sentence vectors for every chunk waiting for them (`ids` only, when given), a batch at a
    time; their own vectors are kept. Returns how many chunks were split and how many sentences
    embedded."""
    chunks = written = 0
    while done := embed_sentence_batch(batch=batch, ids=ids):
        chunks, written = chunks + done.chunks, written + done.sentences
    return {"chunks": chunks, "sentences": written}


class SentenceBatch(NamedTuple):
    chunks: int  # chunks split (0: none waited that no other worker holds)
    sentences: int  # sentence vectors written
    model_seconds: float  # of the batch's time, inside the model


def embed_sentence_batch(*, batch: int = 50, ids: list[int] | None = None) -> SentenceBatch | None:
    """One model call's worth of sentence work: the oldest chunks waiting for their sentences
    (waiting_for_sentences, of the current model) whose sentences come to about `batch` texts.
    None when none waits that no other worker holds."""
    if not EMBED_SENTENCES:
        return None
    embedder = get_embedder()
    with transaction.atomic():
        no_commit_wait()
        claimed = waiting_for_sentences().filter(embedding_model=embedder.name)
        if ids is not None:
            claimed = claimed.filter(pk__in=ids)
        rows = list(
            claimed.select_for_update(skip_locked=True)
            .order_by("id")
            .only("id", *RULE_FIELDS)[:batch]
        )
        if not rows:
            return None
        rows, parts = _about(rows, sentences_of(rows), batch)
        written, model_seconds = _split(embedder, rows, parts)
        return SentenceBatch(len(rows), written, model_seconds)


def _about(
    rows: list[Chunk], parts: list[list[str]], texts: int
) -> tuple[list[Chunk], list[list[str]]]:
    """The first rows whose sentences come to about `texts` (one row at least): a sentence batch
    takes the model about as long as a batch of chunks (the rows left out stay waiting)."""
    total = keep = 0
    while keep < len(rows) and (keep == 0 or total + len(parts[keep]) <= texts):
        total += len(parts[keep])
        keep += 1
    return rows[:keep], parts[:keep]


def _split(embedder: Embedder, rows: list[Chunk], parts: list[list[str]]) -> tuple[int, float]:
    """Embed and write these claimed rows' sentences, and each row's count of them. Returns how
    many sentence vectors were written and the seconds spent in the model."""
    texts = [s for pieces in parts for s in pieces]
    began = time.perf_counter()
    try:
        vectors = embedder.embed(texts) if texts else []
        model_seconds = time.perf_counter() - began
        check_vectors(embedder, vectors, len(texts))
    except EmbedderUnavailable:
        raise
    except Exception as exc:  # these chunks keep their own vectors, and are not split again
        logger.warning("embedding the sentences of chunks %s failed: %s", [r.pk for r in rows], exc)
        parts, vectors, model_seconds = [[] for _ in rows], [], time.perf_counter() - began
    ids = [row.pk for row in rows]
    write_sentences(ids, parts, vectors)
    with connection.cursor() as cursor:  # each chunk's count, of the rows just written
        cursor.execute(
            f"UPDATE {Chunk._meta.db_table} c SET sentence_vectors = (SELECT count(*) FROM"
            f" {ChunkSentence._meta.db_table} s WHERE s.chunk_id = c.id) WHERE c.id = ANY(%s)",
            [ids],
        )
    return len(vectors), model_seconds


def waiting_since() -> datetime | None:
    """When the chunk next in line for its sentences (the oldest waiting) got its own vector
    (None: no chunk waits for them)."""
    return waiting_for_sentences().order_by("id").values_list("indexed_at", flat=True).first()
