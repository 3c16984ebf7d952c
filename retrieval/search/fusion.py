"""Fusion: one score per candidate from its vector and text scores (and, for the "memory" profile,
its decayed relevance), and the order those scores give.

Pure functions of plain data: the scores come from the candidate query (sql.fetch_candidates).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

from retrieval.search import weights
from retrieval.search.request import TEXT_MODES, Candidate, SearchRequest, each_message_once

RRF_K = 60
# text, semantic, decayed relevance (in place of the published 0.3 temporal + 0.1 importance)
MEMORY_WEIGHTS = (0.3, 0.3, 0.4)
# The published relevance, as written: (fts_rank × 0.3) + (semantic_similarity × 0.3) +
# (temporal_score × 0.3) + (importance × 0.1); fts_rank BM25 scaled to 0-1 (min-max over the
# candidates), semantic the cosine (0-1: a negative cosine counts 0), temporal
# retrieval.decay.seed002_temporal, importance the chunk's.
SEED002_WEIGHTS = (0.3, 0.3, 0.3, 0.1)


def minmax(values: dict[int, float]) -> dict[int, float]:
    """Scale to [0, 1]; all equal (or one value) gives 1.0 each."""
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if high - low < 1e-12:
        return {k: 1.0 for k in values}
    return {k: (v - low) / (high - low) for k, v in values.items()}


def _ranks(values: dict[int, float]) -> dict[int, int]:
    return {k: i + 1 for i, k in enumerate(sorted(values, key=lambda k: -values[k]))}


def fuse(
    req: SearchRequest, chunks: dict[int, Candidate], vec: dict[int, float], txt: dict[int, float]
) -> dict[int, float]:
    return with_decay(req, base_scores(req, chunks, vec, txt), chunks)


def with_decay(
    req: SearchRequest, scores: dict[int, float], chunks: dict[int, Candidate]
) -> dict[int, float]:
    """The default profile with a decay_weight w: (1 − w) · score + w · best score · min(decayed
    relevance, 1) (importance · rate(tier)^hours since last use · (1 + ln(1 + accesses)),
    at the request's as_of or now). Added and bounded, as in the memory profile, so an old exact
    match still surfaces; scaled by the best score so that it weighs the same beside rrf's small
    scores as beside weighted fusion's."""
    w = req.decay_weight
    if req.profile != "default" or w <= 0.0 or not scores:
        return scores
    top = max(scores.values())
    return {i: (1.0 - w) * s + w * top * min(chunks[i].relevance, 1.0) for i, s in scores.items()}


def pending_weights(
    weights_: tuple[float, ...], vector_at: int, embedded: bool
) -> tuple[float, ...]:
    """The weights of one candidate's parts: as given when it has a vector; while its vector is
    pending (the embedding backlog), the vector's weight is shared out over the parts it has, in
    proportion to theirs, so that its score is the same weighted mean over the evidence it has.
    A missing vector is not a cosine of 0: counted as one, against the others' min–max scaled
    cosines (the lowest of which reads 0 and the best 1), a message written a moment ago would
    rank below every embedded one however exactly it says the query's words."""
    if embedded:
        return weights_
    rest = sum(w for j, w in enumerate(weights_) if j != vector_at)
    if rest <= 0.0:
        return weights_
    scale = sum(weights_) / rest
    return tuple(0.0 if j == vector_at else w * scale for j, w in enumerate(weights_))


def base_scores(
    req: SearchRequest, chunks: dict[int, Candidate], vec: dict[int, float], txt: dict[int, float]
) -> dict[int, float]:
    """The candidates' scores from their signals alone (before the session prior). fusion_parts
    below spells out the same formulas term by term, for explain. A candidate without a vector
    (still to be embedded) is scored on the parts it has (pending_weights)."""
    ids = list(chunks)
    if req.profile == "memory":
        # The "memory" profile (docs/ranking.md) adds time, importance and reinforcement through ONE
        # term: the lifecycle's decayed relevance, importance · rate(tier)^hours since last use ·
        # (1 + ln(1 + accesses)), computed in the candidate query by retrieval.decay's SQL. It takes
        # the place of the published formula's 0.3·temporal + 0.1·importance together: adding it
        # beside them would discount age twice and count importance twice. The tier weighs in only
        # through its decay rate; scope widening is a filter, never a weight, so a wider memory is
        # not discounted once for its tier and again for its decay (docs/ranking.md#decay). The
        # term is bounded (≤ 1) and added, never multiplied into similarity, so an old but exactly
        # matching memory still surfaces.
        nv, nt = minmax(vec), minmax(txt)
        out = {}
        for i in ids:
            w_text, w_vector, w_relevance = pending_weights(MEMORY_WEIGHTS, 1, i in vec)
            out[i] = (
                w_text * nt.get(i, 0.0)
                + w_vector * nv.get(i, 0.0)
                + w_relevance * min(chunks[i].relevance, 1.0)
            )
        return out
    if req.profile == "seed002":
        nt = minmax(txt)
        out = {}
        for i in ids:
            w_text, w_vector, w_temporal, w_importance = pending_weights(
                SEED002_WEIGHTS, 1, i in vec
            )
            out[i] = (
                w_text * nt.get(i, 0.0)
                + w_vector * max(vec.get(i, 0.0), 0.0)
                + w_temporal * chunks[i].relevance
                + w_importance * chunks[i].importance
            )
        return out
    if req.mode == "vector":
        return {i: vec.get(i, 0.0) for i in ids}
    if req.mode in TEXT_MODES:
        return {i: txt.get(i, 0.0) for i in ids}
    if req.fusion == "rrf":
        rv, rt = _ranks(vec), _ranks(txt)
        return {
            i: sum(part["part"] for part in _rrf_parts(i, vec, txt, rv, rt).values()) for i in ids
        }
    nv, nt = minmax(vec), minmax(txt)
    balanced = balanced_weights(req, len(ids), nv, nt)
    out = {}
    for i in ids:
        w_vector, w_text = pending_weights(balanced, 0, i in vec)
        out[i] = w_vector * nv.get(i, 0.0) + w_text * nt.get(i, 0.0)
    return out


def _rrf_parts(
    i: int, vec: dict[int, float], txt: dict[int, float], rv: dict[int, int], rt: dict[int, int]
) -> dict[str, Part]:
    """Reciprocal rank fusion's two terms for one candidate; one whose vector is pending counts
    its text term twice (both lists, over the one it is in) rather than a vector term of 0."""
    text = 1.0 / (RRF_K + rt[i]) if i in rt else 0.0
    vector = 1.0 / (RRF_K + rv[i]) if i in rv else 0.0
    factor = 1.0 if i in vec else 2.0
    return {
        "vector": {"raw": vec.get(i), "rank": rv.get(i), "part": vector},
        "text": {"raw": txt.get(i), "rank": rt.get(i), "part": factor * text},
    }


BALANCE_DEPTH = 10  # the candidates after a list's best that its peakedness compares it with


def peakedness(normalised: dict[int, float], candidates: int, depth: int = BALANCE_DEPTH) -> float:
    """How far a list's best candidate stands out: 1 − the mean normalised score of the `depth`
    candidates after it (a candidate the list did not score counts 0). A list whose next ten
    score nearly as well as its best tells this query's candidates apart less than one whose
    best stands alone."""
    following = sorted(normalised.values(), reverse=True)[1 : depth + 1]
    count = min(depth, candidates - 1)
    return 1.0 - sum(following) / count if count > 0 else 0.0


def balanced_weights(
    req: SearchRequest, candidates: int, nv: dict[int, float], nt: dict[int, float]
) -> tuple[float, float]:
    """The weighted fusion's (vector, text) weights for this query: the request's, moved by
    weights.BALANCE of the way toward the split the two lists' peakedness gives them
    (each weight times its list's peakedness, over the sum), their sum kept.

    Which signal separates the candidates differs per query: a rare name or word the query says
    makes full text peaked; a question about a long conversation in other words leaves it flat
    while the vectors still single out a few messages. On LoCoMo (short turns) text wins more
    often, on LongMemEval (long answers) vectors: fixed weights cannot suit both
    (bench/README.md, stop 28). With one list empty, the weights are the request's."""
    share = weights.BALANCE
    w_vector, w_text = req.vector_weight, req.text_weight
    if share <= 0.0 or not nv or not nt or req.exact_weights:
        return w_vector, w_text
    pv, pt = w_vector * peakedness(nv, candidates), w_text * peakedness(nt, candidates)
    if pv + pt <= 0.0:
        return w_vector, w_text
    total = w_vector + w_text
    moved = (1.0 - share) * w_vector + share * total * pv / (pv + pt)
    return moved, total - moved


# One term of a fused score, for explain: the signal's raw value, its normalised value (min-max
# over the candidates; for rrf its rank), its weight and the part it adds (normalised × weight).
Part = dict[str, float | int | None]


def fusion_parts(
    req: SearchRequest,
    chunks: dict[int, Candidate],
    vec: dict[int, float],
    txt: dict[int, float],
    ids: list[int],
) -> dict[int, dict[str, Part]]:
    """base_scores' terms for `ids`: the parts of each add up to its base score (tested)."""
    if req.profile == "memory":
        nv, nt = minmax(vec), minmax(txt)
        out: dict[int, dict[str, Part]] = {}
        for i in ids:
            w_text, w_vector, w_relevance = pending_weights(MEMORY_WEIGHTS, 1, i in vec)
            out[i] = {
                "text": _part(txt.get(i), nt.get(i, 0.0), w_text),
                "vector": _part(vec.get(i), nv.get(i, 0.0), w_vector),
                "relevance": _part(chunks[i].relevance, min(chunks[i].relevance, 1.0), w_relevance),
            }
        return out
    if req.profile == "seed002":
        nt = minmax(txt)
        out = {}
        for i in ids:
            w_text, w_vector, w_temporal, w_importance = pending_weights(
                SEED002_WEIGHTS, 1, i in vec
            )
            out[i] = {
                "text": _part(txt.get(i), nt.get(i, 0.0), w_text),
                "vector": _part(vec.get(i), max(vec.get(i, 0.0), 0.0), w_vector),
                "relevance": _part(chunks[i].relevance, chunks[i].relevance, w_temporal),
                "importance": _part(chunks[i].importance, chunks[i].importance, w_importance),
            }
        return out
    if req.mode == "vector" or req.mode in TEXT_MODES:
        name, signal = ("vector", vec) if req.mode == "vector" else ("text", txt)
        return {i: {name: _part(signal.get(i), signal.get(i, 0.0), 1.0)} for i in ids}
    if req.fusion == "rrf":
        rv, rt = _ranks(vec), _ranks(txt)
        return {i: _rrf_parts(i, vec, txt, rv, rt) for i in ids}
    nv, nt = minmax(vec), minmax(txt)
    balanced = balanced_weights(req, len(chunks), nv, nt)
    out = {}
    for i in ids:
        w_vector, w_text = pending_weights(balanced, 0, i in vec)
        out[i] = {
            "vector": _part(vec.get(i), nv.get(i, 0.0), w_vector),
            "text": _part(txt.get(i), nt.get(i, 0.0), w_text),
        }
    return out


def _part(raw: float | None, normalised: float, weight: float) -> Part:
    return {"raw": raw, "normalised": normalised, "weight": weight, "part": weight * normalised}


def by_score(candidates: Iterable[Candidate], scores: dict[int, float]) -> list[Candidate]:
    """Best score first; ties go to the newer chunk, then the later message, then the higher id."""
    return sorted(
        candidates, key=lambda c: (-scores[c.pk], -c.created_ts, -(c.sequence_end or 0), -c.pk)
    )


def feedback_documents(
    req: SearchRequest,
    chunks: dict[int, Candidate],
    vec: dict[int, float],
    txt: dict[int, float],
    count: int,
) -> list[int]:
    """The first pass's best `count` candidates, whose mean vector pseudo-relevance feedback moves
    the query toward (sql.feedback_scores): one chunk of a message at most (its best), so that the
    chunks of one long message, which share its words, do not make the feedback that message's."""
    first = fuse(req, chunks, vec, txt)
    best = each_message_once(chunks[pk] for pk in sorted(first, key=lambda pk: -first[pk]))
    return [c.pk for c in islice(best, count)]
