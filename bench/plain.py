"""Plain baselines, computed in the bench itself so that they do not depend on the product's
ranking.

Over the same turns (the events' content, `speaker: text`, one document per whole turn) of the
question's own conversation:

- plain-bm25: BM25 (k1 1.2, b 0.75, Lucene's IDF) over PostgreSQL's `english` lexemes of each
  whole turn (to_tsvector only tokenises and stems here; scoring is ours, in numpy);
- plain-minilm: cosine to the configured model's vector of each whole turn (MiniLM reads the
  first 256 word pieces; no context messages, no chunking);
- plain-hybrid: both min-max normalised over all the conversation's turns and fused
  0.7 vector + 0.3 text; no re-ranking of any kind.

The vectors come through the same embedder (and embedding cache) as the product's, so only the
texts differ: whole turns here, 640-character chunks with two earlier messages there.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.common import turn_content
from bench.recall import Found, Question, Scorer

K1, B = 1.2, 0.75
VECTOR_WEIGHT, TEXT_WEIGHT = 0.7, 0.3
RUNS = ("plain-bm25", "plain-minilm", "plain-hybrid")
LEXEMES_SQL = (
    "SELECT x.i, t.lexeme, coalesce(array_length(t.positions, 1), 1) "
    "FROM unnest(%s::text[]) WITH ORDINALITY AS x(doc, i), "
    "unnest(to_tsvector('pg_catalog.english', x.doc)) AS t"
)


@dataclass
class Haystack:
    turn_ids: list[str]
    session_ids: list[str]
    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # lexeme -> (turn indices, term frequencies)
    lengths: np.ndarray  # lexeme count per turn
    vectors: np.ndarray  # one normalised vector per turn


def lexeme_counts(texts: list[str]) -> list[Counter[str]]:
    from django.db import connection

    counts: list[Counter[str]] = [Counter() for _ in texts]
    with connection.cursor() as cursor:
        cursor.execute(LEXEMES_SQL, [texts])
        for i, lexeme, tf in cursor.fetchall():
            counts[i - 1][lexeme] = tf
    return counts


def query_lexemes(query: str) -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT lexeme FROM unnest(to_tsvector('pg_catalog.english', %s))", [query])
        return [row[0] for row in cursor.fetchall()]


def postings_of(
    counts: list[Counter[str]],
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """Per lexeme, the documents holding it and its counts there; the lexeme count per document."""
    postings: dict[str, tuple[list[int], list[int]]] = {}
    for i, c in enumerate(counts):
        for lexeme, tf in c.items():
            docs, tfs = postings.setdefault(lexeme, ([], []))
            docs.append(i)
            tfs.append(tf)
    lengths = np.asarray([sum(c.values()) for c in counts], dtype=np.float32)
    return {
        k: (np.asarray(d), np.asarray(f, dtype=np.float32)) for k, (d, f) in postings.items()
    }, lengths


def build(conv: dict[str, Any], embed: Any) -> Haystack:
    turns = [(t, s["session_id"]) for s in conv["sessions"] for t in s["turns"]]
    texts = [turn_content(t) for t, _ in turns]
    postings, lengths = postings_of(lexeme_counts(texts))
    vectors = np.asarray(embed(texts), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return Haystack(
        turn_ids=[t["turn_id"] for t, _ in turns],
        session_ids=[s for _, s in turns],
        postings=postings,
        lengths=lengths,
        vectors=vectors,
    )


def bm25(h: Haystack, lexemes: list[str]) -> np.ndarray:
    return bm25_scores(h.postings, h.lengths, lexemes)


def bm25_scores(
    postings: dict[str, tuple[np.ndarray, np.ndarray]],
    lengths: np.ndarray,
    lexemes: list[str],
    *,
    b: float = B,
    avg: float | None = None,
    binary: bool = False,
) -> np.ndarray:
    """BM25 (k1 1.2); `b`, the average length (None: the mean of `lengths`) and tf = 1 (`binary`)
    may be changed for bench/ablate.py's variants."""
    n = len(lengths)
    scores = np.zeros(n, dtype=np.float32)
    norm = K1 * (1 - b + b * lengths / (avg or max(float(lengths.mean()), 1e-9)))
    for lexeme in set(lexemes):
        if lexeme not in postings:
            continue
        docs, tf = postings[lexeme]
        tf = np.ones_like(tf) if binary else tf
        idf = np.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
        scores[docs] += idf * tf * (K1 + 1) / (tf + norm[docs])
    return scores


def minmax(values: np.ndarray) -> np.ndarray:
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else np.zeros_like(values)


def rankings(
    h: Haystack, lexemes: list[str], vector: list[float], pool: int | None = None
) -> dict[str, np.ndarray]:
    """Top 10 turn indices per baseline. `pool`: min-max over the union of the top `pool` turns
    by each score (a candidate pool, as a search engine fetches) instead of over every turn."""
    text = bm25(h, lexemes)
    cosine = h.vectors @ np.asarray(vector, dtype=np.float32)
    if pool:
        by_text = np.argsort(-text, kind="stable")[:pool]
        keep = np.union1d(by_text[text[by_text] > 0], np.argsort(-cosine, kind="stable")[:pool])
    else:
        keep = np.arange(len(text))
    fused = np.full(len(text), -1.0, dtype=np.float32)
    fused[keep] = VECTOR_WEIGHT * minmax(cosine[keep]) + TEXT_WEIGHT * minmax(text[keep])
    return {
        name: np.argsort(-scores, kind="stable")[:10]
        for name, scores in zip(RUNS, (text, cosine, fused), strict=True)
    }


def evaluate_plain(
    conversations: list[dict[str, Any]],
    questions: list[Question],
    vectors: list[list[float]],
    pool: int | None = None,
) -> tuple[dict[str, Any], dict[str, float]]:
    """Every question against the plain baselines over its own conversation's whole turns."""
    from retrieval.embedders import get_embedder

    embed = get_embedder().embed
    by_conv = {conv["conversation_id"]: conv for conv in conversations}
    scorers = {name: Scorer() for name in RUNS}
    build_s = rank_s = 0.0
    haystack: tuple[str, Haystack] | None = None
    for q, vector in zip(questions, vectors, strict=True):
        # questions come grouped by conversation
        if haystack is None or haystack[0] != q.conversation_id:
            started = time.perf_counter()
            haystack = (q.conversation_id, build(by_conv[q.conversation_id], embed))
            build_s += time.perf_counter() - started
        h = haystack[1]
        started = time.perf_counter()
        for name, top in rankings(h, query_lexemes(q.question["question"]), vector, pool).items():
            found: Found = [({h.turn_ids[i]}, h.session_ids[i]) for i in top]
            scorers[name].add(q, found)
        rank_s += time.perf_counter() - started
    n = max(len(questions), 1)
    timings = {"plain_build_s": build_s, "plain_ms_per_query": 1000 * rank_s / n}
    return {name: s.figures() for name, s in scorers.items()}, timings
