"""Re-ranking stages: pure reorderings of the fused ranking (no database; the pair similarities
MMR and dedup need come from sql.pair_similarities / sql.near_duplicate_pairs).

In the order search applies them: summaries give their place to the messages they summarise,
each message keeps its best chunk (request.one_per_message), maximal marginal relevance (when on),
near-duplicate removal and conversation coverage of the last places.
"""

from __future__ import annotations

from retrieval.chunking import word_overlap, word_set
from retrieval.search.fusion import minmax
from retrieval.search.request import Candidate

DEDUP_COSINE = 0.9

PairSimilarities = dict[tuple[int, int], float]  # (low id, high id) -> cosine


def expand_summaries(
    ordered: list[Candidate], replaced: dict[int, int] | None = None
) -> list[Candidate]:
    """A summary in the ranking gives its place to the best-ranked message it summarises (when
    that message is a candidate): the hit is the message itself, found through its summary.
    `replaced`, when given, records each such message's summary (message id -> summary id)."""
    out: list[Candidate] = []
    used: set[int] = set()
    for candidate in ordered:
        if candidate.pk in used:
            continue
        if (
            candidate.kind == "summary"
            and candidate.session_id is not None
            and candidate.sequence_start is not None
        ):
            source = next(
                (
                    c
                    for c in ordered
                    if c.kind == "event"
                    and c.pk not in used
                    and c.session_id == candidate.session_id
                    and c.sequence_end is not None
                    and candidate.sequence_start <= c.sequence_end
                    and (
                        candidate.sequence_end is None
                        or (c.sequence_start or c.sequence_end) <= candidate.sequence_end
                    )
                ),
                None,
            )
            if source is not None:
                if replaced is not None:
                    replaced[source.pk] = candidate.pk
                used.add(source.pk)
                out.append(source)
                continue
        used.add(candidate.pk)
        out.append(candidate)
    return out


def mmr(
    ordered: list[Candidate],
    scores: dict[int, float],
    similarities: PairSimilarities,
    weight: float,
    depth: int,
) -> list[Candidate]:
    """Maximal marginal relevance: the next result maximises weight·score − (1−weight)·its highest
    similarity to a result already taken (1 = plain ranking). Scores are min–max normalised
    first."""
    if weight >= 1.0 or len(ordered) < 2:
        return ordered
    head, tail = list(ordered[:depth]), ordered[depth:]
    norm = minmax({c.pk: scores[c.pk] for c in head})
    result: list[Candidate] = []
    nearest = {c.pk: 0.0 for c in head}
    while head:
        best = max(
            range(len(head)),
            key=lambda i: weight * norm[head[i].pk] - (1 - weight) * nearest[head[i].pk],
        )
        chosen = head.pop(best)
        result.append(chosen)
        for c in head:
            sim = similarities.get((min(c.pk, chosen.pk), max(c.pk, chosen.pk)), 0.0)
            nearest[c.pk] = max(nearest[c.pk], sim)
    return result + tail


def near_duplicates(head: list[Candidate], similarities: PairSimilarities) -> set[tuple[int, int]]:
    """The pairs of `head` with cosine > DEDUP_COSINE, from similarities already computed (for MMR).

    Only chunks embedded from their own text count (see sql.near_duplicate_pairs).
    """
    own = {c.pk for c in head if not c.contextual}
    return {
        pair
        for pair, sim in similarities.items()
        if sim > DEDUP_COSINE and pair[0] in own and pair[1] in own
    }


def dedup(
    ordered: list[Candidate], near_pairs: set[tuple[int, int]], top_k: int
) -> list[Candidate]:
    """Drop near-identical results (docs/ranking.md): cosine > 0.9 (`near_pairs`, see
    near_duplicates), or near-identical text (word sets, Jaccard > 0.9: also where embeddings are
    missing)."""
    near: dict[int, set[int]] = {}
    for a, b in near_pairs:
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    kept: list[Candidate] = []
    kept_ids: set[int] = set()
    kept_words: list[tuple[frozenset[str], int]] = []  # each kept result's words, and how many
    # Copies of a kept text (the same message stored twice, a repeated reply) are dropped by a
    # lookup, before their words are split and compared with every result kept.
    kept_texts: set[str] = set()
    kept_sets: set[frozenset[str]] = set()
    for chunk in ordered:
        if chunk.pk in near and not near[chunk.pk].isdisjoint(kept_ids):
            continue
        if chunk.text in kept_texts:
            continue
        words = word_set(chunk.text)
        if words in kept_sets:
            continue
        # Jaccard ≤ (fewer words) / (more words): only a kept text of m words with 0.9·n < m and
        # 0.9·m < n can be near-identical to these n words; most are told apart by that alone.
        n = len(words)
        low = DEDUP_COSINE * n
        if any(
            m > low and DEDUP_COSINE * m < n and word_overlap(words, other) > DEDUP_COSINE
            for other, m in kept_words
        ):
            continue
        kept.append(chunk)
        kept_ids.add(chunk.pk)
        kept_words.append((words, n))
        kept_texts.add(chunk.text)
        kept_sets.add(words)
        if len(kept) == top_k:
            break
    return kept


def conversation_evidence(
    ranked: list[Candidate], scores: dict[int, float], norm: float
) -> dict[int, float]:
    """Each conversation's evidence for the query: the p-norm (Σ scoreᵖ)^(1/p) of the scores of its
    candidates (`ranked` holds one chunk per message), with p = `norm`.

    A conversation where several messages match ranks above one with a single match as good as
    their best: the evidence of a conversation is spread over its messages (a question about what
    someone did over several talks). A high p keeps the best match first: it takes several good
    matches to outweigh a better one (p = ∞ would be the best match alone).
    """
    sums: dict[int, float] = {}
    for candidate in ranked:
        if candidate.session_id is not None:
            sums[candidate.session_id] = (
                sums.get(candidate.session_id, 0.0) + max(scores[candidate.pk], 0.0) ** norm
            )
    return {session: total ** (1.0 / norm) for session, total in sums.items()}


def conversation_words(
    ranked: list[Candidate], said: dict[int, int], weights: list[float]
) -> dict[int, float]:
    """Each conversation's words for the query: the summed IDF `weights` of the distinct query
    terms that its candidates' own words say (`said`: a bit per term, TextQuery.said_sql), across
    its messages. Several messages of one conversation that each say a different word of the
    question (who in one, what in another) make it a conversation about the question, which no
    single message shows; a word said twice counts once."""
    masks: dict[int, int] = {}
    for candidate in ranked:
        terms = said.get(candidate.pk, 0)
        if terms and candidate.session_id is not None:
            masks[candidate.session_id] = masks.get(candidate.session_id, 0) | terms
    return {
        session: sum(w for i, w in enumerate(weights) if terms >> i & 1)
        for session, terms in masks.items()
    }


def with_words(
    evidence: dict[int, float], words: dict[int, float], weight: float
) -> dict[int, float]:
    """Evidence and words blended, each divided by its highest: (1 − weight) · evidence + weight ·
    words. A conversation with no candidate saying a query word keeps its share of the evidence."""
    top_evidence = max(evidence.values(), default=0.0) or 1.0
    top_words = max(words.values(), default=0.0) or 1.0
    return {
        session: (1.0 - weight) * value / top_evidence
        + weight * words.get(session, 0.0) / top_words
        for session, value in evidence.items()
    }


def newer_first(
    ordered: list[Candidate],
    scores: dict[int, float],
    similarities: PairSimilarities,
    margin: float,
    cosine: float,
) -> tuple[list[Candidate], dict[int, float]]:
    """Knowledge updates: of two results about the same subject said in different conversations,
    the newer is listed first. Applied to search's final results (after coverage) it only reorders
    them: the same results, recall@k of the whole list unchanged.

    A result b newer than a result a of another conversation (created later), with cosine ≥
    `cosine` to it (`similarities`) and a score ≥ (1 − `margin`) × a's, moves to just before a
    (before the first listed of those it passes) and is scored just above it, so that a caller
    ordering by score (context assembly) sees the same order. Results are moved oldest first: of
    three versions of one subject the newest ends first. Summaries neither move nor are passed;
    margin 0 is off. Returns the new order and scores (the inputs are kept)."""
    if margin <= 0.0 or len(ordered) < 2:
        return ordered, scores
    out = dict(scores)
    result = list(ordered)
    messages = [c for c in ordered if c.kind != "summary"]
    for b in sorted(messages, key=lambda c: c.created_ts):
        lift, passed = out[b.pk], []
        for a in messages:
            if (
                a.created_ts >= b.created_ts
                or a.session_id == b.session_id
                or similarities.get((min(a.pk, b.pk), max(a.pk, b.pk)), 0.0) < cosine
            ):
                continue
            if out[a.pk] >= out[b.pk] and scores[b.pk] >= (1.0 - margin) * out[a.pk]:
                passed.append(a)
                lift = max(lift, out[a.pk] + NEWER_FIRST_STEP)
        if passed:
            out[b.pk] = lift
            result.remove(b)
            result.insert(min(result.index(a) for a in passed), b)
    return result, out


NEWER_FIRST_STEP = 1e-6  # how far above the older result a newer one is scored


def cover_conversations(
    kept: list[Candidate],
    top_k: int,
    share: float,
    scores: dict[int, float] | None = None,
    floor: float = 0.0,
    evidence: dict[int, float] | None = None,
) -> list[Candidate]:
    """The first share·top_k results by rank; the other places go first to the best results from
    conversations not among the results yet, then by rank again (1 = plain ranking).

    A search over many conversations then names more of the conversations a question touches,
    while the head of the list stays the best matches. With `scores` and `floor`, a result is
    moved up only if it scores at least floor × the score of the result ranked top_k-th: a
    conversation that barely matches does not take the place of a good match in a listed one.
    With `evidence` (conversation_evidence), the unlisted conversations take those places in
    order of their evidence, each with its best result; without, in order of their best result.
    Memories outside any conversation (notes, facts, documents) are never moved up: they keep
    their rank among the rest.
    """
    if share >= 1.0 or len(kept) <= top_k:
        return kept[:top_k]
    head_size = max(1, round(share * top_k))
    head, rest = kept[:head_size], kept[head_size:]
    seen = {c.session_id for c in head if c.session_id is not None}
    least = floor * scores[kept[top_k - 1].pk] if scores is not None and floor > 0.0 else None
    eligible = [
        c
        for c in rest
        if c.session_id is not None
        and c.session_id not in seen
        and (scores is None or least is None or scores[c.pk] >= least)
    ]
    if evidence is not None:
        best: dict[int | None, Candidate] = {}
        for candidate in eligible:
            best.setdefault(candidate.session_id, candidate)
        eligible = sorted(best.values(), key=lambda c: -evidence.get(c.session_id or 0, 0.0))
    fresh: list[Candidate] = []
    for candidate in eligible:
        if head_size + len(fresh) >= top_k:
            break
        if candidate.session_id not in seen:
            fresh.append(candidate)
            seen.add(candidate.session_id)
    chosen = {c.pk for c in fresh}
    return (head + fresh + [c for c in rest if c.pk not in chosen])[:top_k]


def top_sessions(
    ranked: list[Candidate],
    scores: dict[int, float],
    evidence: dict[int, float] | None,
    top_k: int,
    per_session: int,
) -> list[tuple[int, float, list[Candidate]]]:
    """Search grouped by conversation (group_by "session"): the `top_k` conversations with the most
    evidence (conversation_evidence, as coverage orders them; without it, by their best result),
    each with its first `per_session` results in rank order, near-identical texts once (dedup), as
    (session, score, results). Memories outside any conversation are left out; equal scores keep
    the order of their best results. A text that two conversations both say is shown in each."""
    groups: dict[int, list[Candidate]] = {}
    for candidate in ranked:
        if candidate.session_id is not None:
            groups.setdefault(candidate.session_id, []).append(candidate)
    score = evidence if evidence is not None else {s: scores[g[0].pk] for s, g in groups.items()}
    best = sorted(groups, key=lambda s: -score.get(s, 0.0))[:top_k]
    return [(s, score.get(s, 0.0), dedup(groups[s], set(), per_session)) for s in best]
