"""Sentence vectors: which chunks get a vector per sentence (ChunkSentence), and writing them.

Search scores a candidate by the higher of its own cosine and its best sentence's
(retrieval.search.weights.SENTENCES): one sentence of a long message is lost in the mean of all
the message says. The embed lane (retrieval.embedding) embeds a chunk's sentences in the same call
as the chunk and writes them with its vector; chunks embedded before sentence vectors existed get
them when the lane is idle (embed_sentences). Both ask `sentences_of` which sentences a chunk gets,
the one definition of the rule: a chunk it gives none is written with `sentence_vectors = 0`, so
neither the lane nor the backfill (the partial index chunk_pending_sentences: `sentence_vectors IS
NULL`) chooses it again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from django.db import connection, transaction

from retrieval.chunking import sentences
from retrieval.embedders import Embedder, EmbedderUnavailable, check_vectors, get_embedder
from retrieval.models import Chunk, ChunkSentence
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


def embed_with_sentences(
    embedder: Embedder, rows: list[Chunk], parts: list[list[str]]
) -> list[list[float]]:
    """The vectors of `rows`' embedding inputs, then of their sentences (`parts`, in order), in one
    call (each text alone in the model: its int8 vector does not depend on what is embedded with
    it): what the embed lane stores for a claimed batch."""
    return embedder.embed(
        [row.embedding_input for row in rows] + [s for part in parts for s in part]
    )


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


def embed_sentences(*, limit: int | None = None, batch: int = 50) -> dict[str, int]:
    """Sentence vectors for chunks embedded without them (before they existed, or while
    EMBED_SENTENCES was off), a batch at a time; their own vectors are kept. Returns
    how many chunks were split and how many sentences embedded. `batch`: chunks per model call
    (the lane passes its own, embedding.BACKFILL_BATCH)."""
    if not EMBED_SENTENCES:
        return {"chunks": 0, "sentences": 0}
    embedder = get_embedder()
    chunks = written = 0
    while limit is None or chunks < limit:
        size = batch if limit is None else min(batch, limit - chunks)
        with transaction.atomic():
            no_commit_wait()
            rows = list(
                Chunk.objects.select_for_update(skip_locked=True)
                .filter(
                    sentence_vectors__isnull=True,
                    embedding__isnull=False,
                    embedding_model=embedder.name,
                )
                .order_by("id")
                .only("id", *RULE_FIELDS)[:size]
            )
            if not rows:
                break
            parts = sentences_of(rows)
            texts = [s for pieces in parts for s in pieces]
            try:
                vectors = embedder.embed(texts) if texts else []
                check_vectors(embedder, vectors, len(texts))
            except EmbedderUnavailable:
                raise
            except Exception as exc:  # these chunks keep their own vectors, and are not split again
                logger.warning(
                    "embedding the sentences of chunks %s failed: %s", [r.pk for r in rows], exc
                )
                parts, vectors = [[] for _ in rows], []
            ids = [row.pk for row in rows]
            write_sentences(ids, parts, vectors)
            with connection.cursor() as cursor:  # each chunk's count, of the rows just written
                cursor.execute(
                    f"UPDATE {Chunk._meta.db_table} c SET sentence_vectors = (SELECT count(*) FROM"
                    f" {ChunkSentence._meta.db_table} s WHERE s.chunk_id = c.id) WHERE c.id ="
                    " ANY(%s)",
                    [ids],
                )
        chunks, written = chunks + len(rows), written + sum(len(pieces) for pieces in parts)
    return {"chunks": chunks, "sentences": written}
