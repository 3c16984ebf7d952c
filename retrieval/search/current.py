"""The current fact first (docs/ranking.md#current-fact-first): where a fact and older messages
answer the same query about equally well, the fact ranks above them. "I live in Berlin" said a year
ago and the fact "Ann lives in Lisbon" stored since are both found for "Which city do I live in?";
the fact is what holds now.

The subject is the query's: the two need not be close to each other (MiniLM gives those two
sentences a cosine of 0.24, and the message is closer to the query: 0.50 against 0.26). They are
on the same subject when both say words of the query (full text matched both), or when the
fact's score is within FACT_MARGIN of the message's; the fact must pass the relevance floor.
"""

from __future__ import annotations

from retrieval.search.request import Candidate

# A fact outranks an older message whose score is at most this much above its own (×1/0.8 = +25 %):
# near-ties go to curated, current knowledge; a message much closer to the query keeps its place.
FACT_MARGIN = 0.8


def facts_first(
    ranked: list[Candidate], order: dict[int, float], relevant: set[int], worded: set[int]
) -> list[Candidate]:
    """Each relevant fact moved above the first older message ranked above it on the same subject
    (both in `worded`, the candidates full text matched, or within FACT_MARGIN of its score); its
    score raised to just above that message's, so that scores still fall down the list."""
    facts = [c for c in ranked if c.kind == "fact" and c.pk in relevant]
    if not facts:
        return ranked
    out = list(ranked)
    for fact in facts:
        at = out.index(fact)
        score = order.get(fact.pk, 0.0)
        for i, other in enumerate(out[:at]):
            same_subject = ({fact.pk, other.pk} <= worded) or score >= FACT_MARGIN * order.get(
                other.pk, 0.0
            )
            if other.kind == "event" and other.created_ts < fact.created_ts and same_subject:
                out.insert(i, out.pop(at))
                order[fact.pk] = max(score, order.get(other.pk, 0.0) + 1e-6)
                break
    return out
