"""Ablation of indexing and ranking designs, offline, on both recall benchmarks.

The product's search runs SQL over the stored chunks (bench/locomo.py, bench/longmemeval.py run
it); this script instead rebuilds the same chunks in memory (retrieval.chunking.chunk_text over
each turn's content) and ranks them in numpy, so that one embedding pass serves many designs:

- what a chunk's embedding reads (--embed): `own` (the chunk alone), `ctxN-C` (the N earlier
  messages, C characters each, before the chunk: the product's retrieval.indexing.CONTEXT_MESSAGES
  design with N=2, C=400), `fillN` (the chunk whole, then up to two earlier messages, newest
  first, up to N characters in all: a short turn reads its context, a long chunk mostly itself),
  `turn` (whole turns, the plain baseline's reading);
- how results are counted: one per chunk, or one per turn (its best chunk);
- the text side: BM25 over chunks or over whole turns; the fusion: min-max 0.7 / 0.3.

    .venv/bin/python bench/ablate.py locomo --embed own,ctx2-400,ctx1-200
    .venv/bin/python bench/ablate.py longmemeval --limit 20 --embed own,ctx1-200

Embeddings come through the product's embedder and the shared cache (bench/results/cache/), keyed
by the exact text embedded, so a later product run of the same design reuses them. Prints turn and
session recall@10 overall and per half, for every design.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import common, recall  # noqa: E402
from bench.common import DATA_DIR, turn_content  # noqa: E402
from bench.plain import bm25_scores as bm25  # noqa: E402
from bench.plain import lexeme_counts, minmax  # noqa: E402
from bench.plain import postings_of as bm25_matrix  # noqa: E402

FILES = {
    "locomo": (DATA_DIR / "locomo10.jsonl", "conversations"),
    "longmemeval": (DATA_DIR / "longmemeval_s_dev60.jsonl.gz", "questions"),
}


@dataclass
class Piece:
    turn: int  # index of its turn in the conversation
    text: str


def embed_text(design: str, piece: Piece, previous: list[str]) -> str:
    """What the embedder reads for a chunk under `design`; `previous`: normalised earlier
    messages."""
    if design == "own":
        return piece.text
    if design.startswith("ctx"):
        count, chars = (int(x) for x in design[3:].split("-"))
        context = [p[:chars] for p in previous[-count:]] if count else []
        return "\n".join(context) + "\n" + piece.text if context else piece.text
    if design.startswith("fill"):  # the chunk whole; earlier messages, newest first, fill the rest
        budget = int(design.removeprefix("fill").lstrip("-")) - len(piece.text)
        context: list[str] = []
        for message in reversed(previous[-2:]):
            if budget < 40:
                break
            context.insert(0, message[: min(400, budget)])
            budget -= len(context[0]) + 1
        return "\n".join([*context, piece.text])
    raise ValueError(design)


class Haystack:
    """One conversation's turns and chunks, their BM25 postings and, per design, their vectors."""

    def __init__(self, conv: dict[str, Any], designs: list[str], embed: Any) -> None:
        from retrieval.chunking import chunk_text, normalize_text

        turns = [(t, s["session_id"]) for s in conv["sessions"] for t in s["turns"]]
        self.turn_ids = [t["turn_id"] for t, _ in turns]
        self.session_ids = [s for _, s in turns]
        self.turn_session_start = []
        contents = [turn_content(t) for t, _ in turns]
        self.pieces: list[Piece] = []
        previous_by_piece: list[list[str]] = []
        recent: list[str] = []
        last_session = None
        for i, ((_, session), content) in enumerate(zip(turns, contents, strict=True)):
            if session != last_session:
                recent, last_session = [], session
            for chunk in chunk_text(content):
                self.pieces.append(Piece(i, chunk.text))
                previous_by_piece.append(list(recent[-4:]))
            recent.append(normalize_text(content))
        self.piece_turn = np.asarray([p.turn for p in self.pieces])
        self.turn_post, self.turn_len = bm25_matrix(lexeme_counts(contents))
        chunk_counts = lexeme_counts([p.text for p in self.pieces])
        self.chunk_post, self.chunk_len = bm25_matrix(chunk_counts)
        self.chunk_distinct = np.asarray([len(c) for c in chunk_counts], dtype=np.float32)
        self.turn_distinct = np.asarray([len(c) for c in lexeme_counts(contents)], dtype=np.float32)
        # tf = chunks of the turn holding it
        by_turn: list[Counter[str]] = [Counter() for _ in contents]
        for piece, c in zip(self.pieces, chunk_counts, strict=True):
            by_turn[piece.turn].update(c.keys())
        self.turn_chunk_post, _ = bm25_matrix(by_turn)
        self.turn_chunk_len = np.zeros(len(contents), dtype=np.float32)
        np.add.at(self.turn_chunk_len, self.piece_turn, self.chunk_distinct)
        self.vectors: dict[str, np.ndarray] = {}
        for design in designs:
            if design == "turn":
                texts = contents
            else:
                texts = [
                    embed_text(design, p, prev)
                    for p, prev in zip(self.pieces, previous_by_piece, strict=True)
                ]
            v = np.asarray(embed(texts), dtype=np.float32)
            self.vectors[design] = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def per_turn_max(values: np.ndarray, piece_turn: np.ndarray, turns: int) -> np.ndarray:
    out = np.full(turns, -np.inf, dtype=np.float32)
    np.maximum.at(out, piece_turn, values)
    return out


def _neighbours(fused: np.ndarray, sessions: np.ndarray) -> np.ndarray:
    """Each turn's best adjacent turn's score in the same session (0 where none)."""
    best = np.zeros_like(fused)
    same_prev = sessions[1:] == sessions[:-1]
    best[1:] = np.where(same_prev, fused[:-1], 0.0)
    best[:-1] = np.maximum(best[:-1], np.where(same_prev, fused[1:], 0.0))
    return best


def _session_best(fused: np.ndarray, sessions: np.ndarray) -> np.ndarray:
    """Each turn's session's best score."""
    best: dict[Any, float] = {}
    for s, f in zip(sessions.tolist(), fused.tolist(), strict=True):
        best[s] = max(best.get(s, 0.0), f)
    return np.asarray([best[s] for s in sessions.tolist()], dtype=np.float32)


def rank(
    h: Haystack, design: str, lexemes: list[str], qv: np.ndarray, variant: str
) -> list[tuple[set[str], str]]:
    """Top 10 results (turn ids, session) under one design and one ranking variant:
    chunk-W (a result per chunk, fusion weight W on the vector), turn-W (a result per turn: its best
    chunk's cosine, BM25 over the whole turn), rrf, nbr-W-B (turn-W plus B x the best adjacent
    turn's fused score), sess-W-G (plus G x the session's best), bm25, vec."""
    n_turns = len(h.turn_ids)
    vec = h.vectors[design] @ qv
    if "_" in variant or variant.startswith("w"):
        own = h.vectors["own"] @ qv if "own" in h.vectors else None
        return _pipeline(h, design, vec, lexemes, variant, own)
    name, *nums = variant.split("-")
    args = [float(x) for x in nums]
    if name == "chunk":
        text = bm25(h.chunk_post, h.chunk_len, lexemes)
        fused = args[0] * minmax(vec) + (1 - args[0]) * minmax(text)
        order = np.argsort(-fused, kind="stable")[:10]
        return [({h.turn_ids[h.piece_turn[i]]}, h.session_ids[h.piece_turn[i]]) for i in order]
    turn_vec = vec if design == "turn" else per_turn_max(vec, h.piece_turn, n_turns)
    text = bm25(h.turn_post, h.turn_len, lexemes)
    if name == "vec":
        fused = turn_vec
    elif name == "bm25":
        fused = text
    elif name == "rrf":
        fused = np.zeros(n_turns, dtype=np.float32)
        for scores in (turn_vec, text):
            ranks = np.empty(n_turns, dtype=np.float32)
            ranks[np.argsort(-scores, kind="stable")] = np.arange(1, n_turns + 1)
            fused += 1.0 / (60.0 + ranks)
    else:
        fused = args[0] * minmax(turn_vec) + (1 - args[0]) * minmax(text)
        sessions = np.asarray(h.session_ids)
        if name == "nbr":
            fused = fused + args[1] * _neighbours(fused, sessions)
        elif name == "sess":
            fused = fused + args[1] * _session_best(fused, sessions)
    order = np.argsort(-fused, kind="stable")[:10]
    return [({h.turn_ids[i]}, h.session_ids[i]) for i in order]


def _cover(
    order: np.ndarray,
    sessions: list[str],
    share: float,
    k: int = 10,
    scores: np.ndarray | None = None,
    ratio: float = 0.0,
) -> list[int]:
    """The product's coverage stage: the first share·k by rank, then new sessions first; with
    `ratio`, a new session's result only if its score is at least ratio × the k-th score."""
    head = [int(i) for i in order[: max(1, round(share * k))]]
    seen = {sessions[i] for i in head}
    floor = (
        ratio * float(scores[order[k - 1]])
        if scores is not None and ratio > 0 and len(order) >= k
        else -np.inf
    )
    fresh = []
    for i in order[len(head) :]:
        if len(head) + len(fresh) >= k:
            break
        if sessions[i] not in seen and (scores is None or scores[i] >= floor):
            fresh.append(int(i))
            seen.add(sessions[i])
    rest = [int(i) for i in order[len(head) :] if int(i) not in set(fresh)]
    return (head + fresh + rest)[:k]


def text_scores(h: Haystack, lexemes: list[str], code: int) -> np.ndarray:
    """The text side per turn: t0 whole-turn BM25 (the plain baseline's); t1 the product's (each
    chunk, tf 1, b 0.5, distinct lexemes over 12; a turn's best chunk); t2 the same over the whole
    turn; t3 whole turn, tf 1, b 0.75, the mean length; t4 whole turn, tf = chunks holding the word,
    b 0.75, the mean length; t5 whole turn, real tf, b 0.5, distinct lexemes over 12; t6 t2 with
    the length summed over the turn's chunks."""
    n_turns = len(h.turn_ids)
    if code == 0:
        return bm25(h.turn_post, h.turn_len, lexemes)
    if code == 1:
        per_chunk = bm25(h.chunk_post, h.chunk_distinct, lexemes, b=0.5, avg=12.0, binary=True)
        return np.maximum(per_turn_max(per_chunk, h.piece_turn, n_turns), 0.0)
    if code == 2:
        return bm25(h.turn_post, h.turn_distinct, lexemes, b=0.5, avg=12.0, binary=True)
    if code == 3:
        return bm25(h.turn_post, h.turn_distinct, lexemes, b=0.75, avg=None, binary=True)
    if code == 4:
        return bm25(h.turn_chunk_post, h.turn_chunk_len, lexemes, b=0.75, avg=None, binary=False)
    if code == 5:
        return bm25(h.turn_post, h.turn_distinct, lexemes, b=0.5, avg=12.0, binary=False)
    # t2 with the length summed over the turn's chunks (what SQL over them can add up)
    if code == 6:
        return bm25(h.turn_chunk_post, h.turn_chunk_len, lexemes, b=0.5, avg=12.0, binary=True)
    raise ValueError(code)


def _pipeline(
    h: Haystack,
    design: str,
    vec: np.ndarray,
    lexemes: list[str],
    variant: str,
    own: np.ndarray | None = None,
) -> list[tuple[set[str], str]]:
    """A per-turn pipeline from tokens joined by "_": wW (fusion weight on the vector), nB
    (neighbour boost), sG (session boost), cS (coverage share), rR (coverage only for a result
    scoring at least R x the tenth), oO (the vector side: (1 - O) x the design's cosine + O x the
    cosine of the chunk's own text, `own` among the designs embedded)."""
    opts = {t[0]: float(t[1:]) for t in variant.split("_")}
    n_turns = len(h.turn_ids)
    if opts.get("o") and own is not None:
        vec = (1 - opts["o"]) * vec + opts["o"] * own
    turn_vec = vec if design == "turn" else per_turn_max(vec, h.piece_turn, n_turns)
    text = text_scores(h, lexemes, int(opts.get("t", 0)))
    w = opts.get("w", 0.7)
    fused = w * minmax(turn_vec) + (1 - w) * minmax(text)
    sessions = np.asarray(h.session_ids)
    boost = opts.get("n", 0.0) * _neighbours(fused, sessions) + opts.get("s", 0.0) * _session_best(
        fused, sessions
    )
    fused = fused + boost
    order = np.argsort(-fused, kind="stable")[:100]
    top = (
        _cover(order, h.session_ids, opts["c"], scores=fused, ratio=opts.get("r", 0.0))
        if "c" in opts
        else [int(i) for i in order[:10]]
    )
    return [({h.turn_ids[i]}, h.session_ids[i]) for i in top]


VARIANTS = (
    "chunk-0.7",
    "turn-0.7",
    "turn-0.6",
    "turn-0.5",
    "rrf",
    "nbr-0.7-0.2",
    "sess-0.7-0.2",
    "bm25",
    "vec",
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("bench", choices=sorted(FILES))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--embed", default="own,ctx2-400")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    common.setup_django("bench_ablate", "minilm")
    from retrieval.embedders import get_embedder

    path, unit = FILES[args.bench]
    conversations = common.load(path, args.limit)
    categories: dict[str, str] = {}
    if args.bench == "locomo":
        categories = {
            "1": "multi-hop",
            "2": "temporal",
            "3": "open-domain",
            "4": "single-hop",
            "5": "adversarial",
        }
    questions = recall.questions_of(conversations, categories)
    cache = common.EmbeddingCache(get_embedder())
    designs = [d for d in args.embed.split(",") if d]
    variants = [v for v in args.variants.split(",") if v]
    qvecs = np.asarray(cache.embed([q.question["question"] for q in questions]), dtype=np.float32)
    from bench.plain import query_lexemes

    scorers = {
        (d, v): recall.Scorer()
        for d in designs
        for v in variants
        if not (d == "turn" and v.startswith("chunk"))
    }
    started = time.perf_counter()
    by_conv: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        by_conv.setdefault(q.conversation_id, []).append(i)
    try:
        for conv in conversations:
            h = Haystack(conv, designs, cache.embed)
            for i in by_conv.get(conv["conversation_id"], []):
                lexemes = query_lexemes(questions[i].question["question"])
                for (d, v), scorer in scorers.items():
                    scorer.add(questions[i], rank(h, d, lexemes, qvecs[i], v))
    finally:
        cache.save()
    print(f"{len(questions)} questions, {time.perf_counter() - started:.0f} s; {cache.stats()}")
    print(recall.halves_label(conversations, unit))
    recall.print_comparison({f"{d} / {v}": s.figures() for (d, v), s in scorers.items()})


if __name__ == "__main__":
    main()
