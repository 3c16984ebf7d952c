"""Re-ranking stages on plain data (retrieval.search.rerank, the time-hint stage): no database.

MMR, summary expansion and coverage have further cases in test_ranking.py and test_search.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

from retrieval.search.request import Candidate, one_per_message
from retrieval.search.rerank import (
    conversation_evidence,
    conversation_words,
    cover_conversations,
    dedup,
    expand_summaries,
    near_duplicates,
    with_words,
)
from retrieval.search.timehints import TimeHint, hint_where, time_hints, with_time_hints


def cand(
    pk: int,
    session: int | None = 1,
    *,
    text: str | None = None,
    contextual: bool = False,
    ts: float = 0.0,
    kind: str = "event",
    start: int | None = None,
    end: int | None = None,
) -> Candidate:
    return Candidate(
        pk=pk,
        session_id=session,
        text=f"text {pk}" if text is None else text,
        contextual=contextual,
        created_ts=ts,
        sequence_end=end,
        importance=0.5,
        kind=kind,
        sequence_start=start,
    )


def pks(candidates: list[Candidate]) -> list[int]:
    return [c.pk for c in candidates]


# --- near-duplicates ------------------------------------------------------------------------------


def test_dedup_drops_results_near_one_already_kept() -> None:
    ranked = [cand(1), cand(2), cand(3)]
    assert pks(dedup(ranked, {(1, 2)}, 10)) == [1, 3]
    # either side of the pair
    assert pks(dedup([cand(2), cand(1), cand(3)], {(1, 2)}, 10)) == [2, 3]
    # Near only to a result that was itself dropped: kept.
    assert pks(dedup(ranked, {(1, 2), (2, 3)}, 10)) == [1, 3]
    assert pks(dedup(ranked, set(), 2)) == [1, 2]  # stops at top_k


def test_dedup_drops_near_identical_text_without_embeddings() -> None:
    ten = " ".join(f"w{i}" for i in range(10))
    ranked = [
        cand(1, text=ten),
        cand(2, text=ten.upper()),
        cand(3, text=ten + " w10"),
        cand(4, text=" ".join(f"w{i}" for i in range(9))),
        cand(5, text="something else"),
    ]
    # Same words in another case; 10 of 11 words (Jaccard 0.91 > 0.9) go. 9 of 10 (exactly 0.9)
    # stays.
    assert pks(dedup(ranked, set(), 10)) == [1, 4, 5]


def test_near_identical_text_needs_jaccard_above_the_threshold_at_equal_sizes() -> None:
    def words(first: int, last: int) -> str:
        return " ".join(f"w{i}" for i in range(first, last))

    # 19 words each, 18 shared: Jaccard 18/20 = 0.9 exactly, not above: both stay.
    assert pks(dedup([cand(1, text=words(0, 19)), cand(2, text=words(1, 20))], set(), 10)) == [1, 2]
    # 20 words each, 19 shared: Jaccard 19/21 > 0.9: the second goes.
    assert pks(dedup([cand(1, text=words(0, 20)), cand(2, text=words(1, 21))], set(), 10)) == [1]


def test_dedup_by_text_is_jaccard_against_every_result_kept() -> None:
    """The word-count bound that skips most comparisons drops exactly what comparing every pair
    would: random texts of 8–24 words from a small vocabulary, many near each other."""
    import random

    from retrieval.search.rerank import DEDUP_COSINE, word_overlap, word_set

    rng = random.Random(7)
    for _ in range(200):
        base = [f"w{i}" for i in rng.sample(range(40), 20)]
        ranked = []
        for pk in range(1, 40):
            words = base[: rng.randint(8, 20)] + [
                f"x{rng.randrange(30)}" for _ in range(rng.randint(0, 4))
            ]
            ranked.append(cand(pk, text=" ".join(rng.sample(words, len(words)))))
        expected: list[int] = []
        for c in ranked:
            if not any(
                word_overlap(word_set(c.text), word_set(k.text)) > DEDUP_COSINE
                for k in ranked
                if k.pk in expected
            ):
                expected.append(c.pk)
        assert pks(dedup(ranked, set(), 100)) == expected


def test_near_duplicates_from_similarities_skip_contextual_chunks() -> None:
    head = [cand(1), cand(2), cand(3, contextual=True), cand(5)]
    similarities = {(1, 2): 0.95, (1, 3): 0.99, (2, 5): 0.9, (1, 4): 0.99}
    # (1, 3): 3 was embedded with its context; (2, 5): not above 0.9; (1, 4): 4 is not in the head.
    assert near_duplicates(head, similarities) == {(1, 2)}


# --- summaries, coverage ------------------------------------------------------------------------


def test_one_message_takes_the_place_of_one_summary_only() -> None:
    first = cand(10, 1, kind="summary", start=1, end=8)
    second = cand(11, 1, kind="summary", start=1, end=8)
    message = cand(12, 1, start=5, end=5)
    assert pks(expand_summaries([first, second, message])) == [12, 11]


def test_an_open_summary_covers_every_later_message_but_no_earlier_one() -> None:
    rolling = cand(10, 1, kind="summary", start=3, end=None)
    before = cand(11, 1, start=2, end=2)
    after = cand(12, 1, start=7, end=7)
    assert pks(expand_summaries([rolling, before, after])) == [12, 11]
    assert pks(expand_summaries([rolling, before])) == [10, 11]


def test_coverage_keeps_at_least_one_place_by_rank() -> None:
    ranked = [cand(1, 1), cand(2, 1), cand(3, 2), cand(4, 2), cand(5, 3)]
    assert pks(cover_conversations(ranked, 3, 0.0)) == [1, 3, 5]
    # No conversation left to add: the places go by rank.
    assert pks(cover_conversations([cand(1, 1), cand(2, 1), cand(3, 1), cand(4, 1)], 3, 0.0)) == [
        1,
        2,
        3,
    ]


def test_coverage_with_a_floor_moves_up_only_a_near_match() -> None:
    ranked = [cand(1, 1), cand(2, 1), cand(3, 1), cand(4, 2), cand(5, 3)]
    scores = {1: 1.0, 2: 0.9, 3: 0.8, 4: 0.7, 5: 0.3}
    # Two places by coverage: without a floor both go to the unlisted conversations 2 and 3.
    assert pks(cover_conversations(ranked, 3, 0.34, scores)) == [1, 4, 5]
    # Floor 0.8 of the third result's score (0.8 × 0.8 = 0.64): 4 (0.7) is near enough, 5 (0.3) is
    # not.
    assert pks(cover_conversations(ranked, 3, 0.34, scores, 0.8)) == [1, 4, 2]
    # 0.7 < 0.72: by rank
    assert pks(cover_conversations(ranked, 3, 0.34, scores, 0.9)) == [1, 2, 3]


def test_conversation_evidence_is_the_p_norm_of_its_messages_scores() -> None:
    ranked = [cand(1, 1), cand(2, 2), cand(3, 2), cand(4, 2), cand(5, None), cand(6, 3)]
    scores = {1: 0.9, 2: 0.8, 3: 0.8, 4: 0.8, 5: 1.0, 6: -0.2}
    evidence = conversation_evidence(ranked, scores, 4.0)
    assert abs(evidence[1] - 0.9) < 1e-12  # one message: its own score
    # Three matches of 0.8 outweigh one of 0.9: 3^(1/4) · 0.8 ≈ 1.053.
    assert abs(evidence[2] - 3**0.25 * 0.8) < 1e-12
    assert evidence[3] == 0.0  # a negative score adds nothing
    assert None not in evidence  # memories outside a conversation have none
    # A high p comes near the best match alone: one 0.9 outweighs three 0.8.
    high = conversation_evidence(ranked, scores, 32.0)
    assert high[1] > high[2]


def test_conversation_words_count_each_query_word_its_messages_say_once() -> None:
    # Terms 0, 1, 2 weigh 1.0, 2.0, 4.0 (their IDF). Conversation 1's two messages say term 0 and
    # term 1 apart; conversation 2's three messages say term 2, then term 2 and 0, then nothing.
    ranked = [cand(1, 1), cand(2, 1), cand(3, 2), cand(4, 2), cand(5, 2), cand(6, None), cand(7, 3)]
    said = {1: 0b001, 2: 0b010, 3: 0b100, 4: 0b101, 6: 0b111}
    words = conversation_words(ranked, said, [1.0, 2.0, 4.0])
    # term 2 said twice counts once; 3 says none; 6 has no conversation
    assert words == {1: 3.0, 2: 5.0}
    # A bit past the terms given (a long query's later terms) weighs nothing.
    assert conversation_words([cand(1, 1)], {1: 0b1001}, [1.0, 2.0]) == {1: 1.0}


def test_with_words_blends_evidence_and_words_each_divided_by_its_highest() -> None:
    evidence = {1: 0.9, 2: 0.6, 3: 0.3}
    words = {2: 5.0, 3: 2.5}
    blended = with_words(evidence, words, 0.5)
    assert blended[1] == 0.5  # the most evidence, no query word said: only its half
    assert abs(blended[2] - (0.5 * 0.6 / 0.9 + 0.5)) < 1e-12
    assert abs(blended[3] - (0.5 * 0.3 / 0.9 + 0.25)) < 1e-12
    assert blended[2] > blended[1] > blended[3]
    # the order of evidence
    assert with_words(evidence, words, 0.0) == {1: 1.0, 2: 0.6 / 0.9, 3: 0.3 / 0.9}
    assert with_words(evidence, {}, 0.5) == {k: 0.5 * v / 0.9 for k, v in evidence.items()}


def test_coverage_by_evidence_lists_the_conversation_with_most_evidence_first() -> None:
    # Conversation 1 holds the head; 2 has the better single match (4), 3 has three good ones.
    ranked = [cand(1, 1), cand(2, 1), cand(4, 2), cand(5, 3), cand(6, 3), cand(7, 3), cand(8, 4)]
    scores = {1: 1.0, 2: 0.95, 4: 0.8, 5: 0.75, 6: 0.74, 7: 0.73, 8: 0.2}
    evidence = conversation_evidence(ranked, scores, 4.0)
    assert evidence[3] > evidence[2]
    # One coverage place: by best result it goes to 2, by evidence to 3 (its best result, 5).
    assert pks(cover_conversations(ranked, 3, 0.67, scores)) == [1, 2, 4]
    assert pks(cover_conversations(ranked, 3, 0.67, scores, evidence=evidence)) == [1, 2, 5]
    # Two places: 3 then 2; conversation 4 stays below the floor (0.2 < 0.8 × 0.8).
    assert pks(cover_conversations(ranked, 4, 0.5, scores, 0.8, evidence)) == [1, 2, 5, 4]
    # The floor comes first: at 0.95 × 0.8 = 0.76 conversation 3's results (0.75 and below) are
    # not near enough, whatever its evidence, and the place goes to 2.
    assert pks(cover_conversations(ranked, 3, 0.67, scores, 0.95, evidence)) == [1, 2, 4]


# --- dates named in the query -------------------------------------------------------------------


def _at(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()  # type: ignore[misc]


def test_time_hints_add_a_share_of_the_best_score_within_the_interval_only() -> None:
    chunks = {1: cand(1, ts=_at(2023, 4, 1)), 2: cand(2, ts=_at(2023, 3, 31, 23, 59))}
    scores = {1: 1.0, 2: 0.5}
    hints = time_hints("in March 2023")
    assert with_time_hints(scores, chunks, hints, 0.3) == {1: 1.0, 2: 0.8}
    assert scores == {1: 1.0, 2: 0.5}  # a new dict: the fused scores stay as they were
    assert with_time_hints(scores, chunks, hints, 0.0) is scores
    assert with_time_hints(scores, chunks, [], 0.3) is scores


def test_hint_where_ors_the_hints_with_their_parameters_in_order() -> None:
    start, end = datetime(2023, 3, 1, tzinfo=UTC), datetime(2023, 4, 1, tzinfo=UTC)
    sql, params = hint_where([TimeHint(month=6), TimeHint(start=start, end=end)])
    assert (
        sql
        == "(c.kind NOT IN ('summary') AND ((extract(month FROM c.created_at AT TIME ZONE 'UTC') ="
        " %s) OR (c.created_at >= %s AND c.created_at < %s)))"
    )
    assert params == [6, start, end]


def test_summaries_take_no_date_bonus() -> None:
    # A summary is dated when it was made: an old conversation summarised in March 2023 is not "in
    # March 2023".
    march = datetime(2023, 3, 10, tzinfo=UTC).timestamp()
    chunks = {
        1: cand(1, ts=march),
        2: cand(2, ts=march, kind="summary"),
        3: cand(3, ts=march, kind="note"),
    }
    scores = {1: 0.5, 2: 0.5, 3: 0.5}
    assert with_time_hints(scores, chunks, time_hints("in March 2023"), 0.2) == {
        1: 0.6,
        2: 0.5,
        3: 0.6,
    }


# --- one result per message -------------------------------------------------------------------


def test_each_message_is_listed_once_at_its_best_chunk() -> None:
    # 1, 2 and 4 are chunks of message 7 of session 1; 3 is another message; 5, 6 a note's chunks.
    ranked = [
        cand(1, 1, start=7, end=7),
        cand(2, 1, start=7, end=7),
        cand(3, 1, start=8, end=8),
        cand(4, 1, start=7, end=7),
        cand(5, None, kind="note"),
        cand(6, None, kind="note"),
        cand(9, 2, start=7, end=7),
    ]
    # message 7 of session 2 is another message
    assert pks(one_per_message(ranked)) == [1, 3, 5, 6, 9]
