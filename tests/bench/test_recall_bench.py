"""The recall benchmarks' own arithmetic and plumbing (bench/): scoring, halves, the plain
baselines, and the mapping from the product's chunks back to the benchmark's turns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bench import common, plain, recall

LONG_ANSWER = " ".join(
    f"Step {i}: water the basil and check the soil before noon." for i in range(60)
)


def conversation(cid: str, questions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    turns = [
        ("user", "I started guitar lessons last week with a teacher called Marta."),
        ("assistant", "That is great! How do you like your guitar teacher?"),
        ("user", "My basil plant keeps wilting on the balcony."),
        ("assistant", LONG_ANSWER),
    ]
    sessions = [
        {
            "session_id": f"{cid}_s{n}",
            "started_at": f"2023-0{n}-01T10:00:00",
            "turns": [
                {"turn_id": f"{cid}_s{n}_{k}", "speaker": s, "text": t}
                for k, (s, t) in enumerate(turns[2 * n - 2 : 2 * n], start=1)
            ],
        }
        for n in (1, 2)
    ]
    return {"conversation_id": cid, "sessions": sessions, "questions": questions or []}


def question(
    qid: str, evidence: list[str], sessions: list[str], category: str = "multi-session"
) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question": "Who teaches me guitar?",
        "answer": "Marta",
        "category": category,
        "evidence_turn_ids": evidence,
        "evidence_session_ids": sessions,
    }


def test_questions_split_into_halves_by_conversation_and_skip_those_without_evidence() -> None:
    convs = [
        conversation(c, [question(f"q{c}", [f"{c}_s1_1"], [f"{c}_s1"])]) for c in ("a", "b", "c")
    ]
    convs[2]["questions"].append(question("none", [], []))
    qs = recall.questions_of(convs, {"multi-session": "multi"})
    assert [(q.conversation_id, q.buckets) for q in qs] == [
        ("a", ("multi", "overall", "half 1")),
        ("b", ("multi", "overall", "half 1")),
        ("c", ("multi", "overall", "half 2")),
    ]
    assert (
        recall.halves_label(convs, "questions") == "half 1 = questions 1-2, half 2 = questions 3-3"
    )


def test_scorer_counts_turns_and_sessions_within_k_and_distinct_turns() -> None:
    q = recall.Question(
        0, "a", question("q", ["t1", "t2"], ["S1", "S2"]), ("multi", "overall", "half 1")
    )
    found = [
        ({"x"}, "S1"),
        ({"x"}, "S1"),
        (set(), "S3"),
        ({"t1"}, "S1"),
        ({"y"}, "S3"),
        ({"z"}, "S3"),
        ({"t2"}, "S2"),
        ({"w"}, "S3"),
        ({"v"}, "S3"),
        ({"u"}, "S3"),
        ({"t2"}, "S2"),
    ]
    scorer = recall.Scorer()
    scorer.add(q, found)
    figures = scorer.figures()
    assert figures["overall"] == {
        "n": 1,
        "turn@5": 0.5,
        "turn@10": 1.0,
        "session@5": 0.5,
        "session@10": 1.0,
        "uniq@10": 8.0,
        "all@5": 0.0,
        "all@10": 1.0,
    }
    assert figures["half 1"] == figures["overall"] == figures["multi"]


def test_strict_recall_all_needs_every_evidence_session_and_leaves_abstentions_out() -> None:
    buckets = ("multi", "overall", "half 1")
    found = [({"t1"}, "S1"), (set(), "S3"), ({"t2"}, "S2")]
    scorer = recall.Scorer()
    scorer.add(recall.Question(0, "a", question("q1", ["t1", "t2"], ["S1", "S2"]), buckets), found)
    scorer.add(recall.Question(0, "a", question("q2", ["t1", "t4"], ["S1", "S4"]), buckets), found)
    # An abstention's evidence is what was not said: it counts in session recall, not in all@k.
    scorer.add(recall.Question(0, "a", question("q3_abs", ["t5"], ["S5"]), buckets), found)
    figures = scorer.figures()["overall"]
    assert (figures["n"], figures["all@5"], figures["all@10"]) == (3, 0.5, 0.5)
    assert figures["session@10"] == pytest.approx((1.0 + 0.5 + 0.0) / 3, abs=1e-3)


def test_bm25_prefers_the_rarer_word_and_fusion_is_min_max_weighted() -> None:
    h = plain.Haystack(
        turn_ids=["a", "b", "c"],
        session_ids=["S", "S", "T"],
        postings={
            "guitar": (np.array([0, 2]), np.array([1.0, 1.0])),
            "marta": (np.array([2]), np.array([1.0])),
        },
        lengths=np.array([5.0, 5.0, 5.0]),
        vectors=np.eye(3, dtype=np.float32),
    )
    text = plain.bm25(h, ["guitar", "marta", "absent"])
    assert text[2] > text[0] > text[1] == 0.0
    ranked = plain.rankings(h, ["guitar"], [0.0, 1.0, 0.0])
    assert list(ranked["plain-minilm"][:1]) == [1]
    # b: 0.7 * 1 + 0.3 * 0; a and c: 0.7 * 0 + 0.3 * 1, then by position.
    assert list(ranked["plain-hybrid"]) == [1, 0, 2]
    assert list(plain.minmax(np.array([2.0, 2.0]))) == [0.0, 0.0]
    # Over every turn c (text 1, vector 0.5) beats a (text 1, vector 0); in a pool of the top one
    # by each score c is no candidate at all.
    assert list(plain.rankings(h, ["guitar"], [0.0, 1.0, 0.5])["plain-hybrid"]) == [1, 2, 0]
    assert list(plain.rankings(h, ["guitar"], [0.0, 1.0, 0.5], pool=1)["plain-hybrid"]) == [1, 0, 2]


@pytest.mark.django_db
def test_plain_haystack_reads_whole_turns_through_postgres_lexemes() -> None:
    from retrieval.embedders import get_embedder

    h = plain.build(conversation("a"), get_embedder("hash").embed)
    assert h.turn_ids == ["a_s1_1", "a_s1_2", "a_s2_1", "a_s2_2"]
    assert h.session_ids == ["a_s1", "a_s1", "a_s2", "a_s2"]
    assert h.vectors.shape == (4, 384)
    top = plain.bm25(h, plain.query_lexemes("my guitar lessons")).argsort()[::-1]
    assert list(top[:1]) == [0]  # turn 1 has "guitar" and "lesson", turn 2 "guitar" only


@pytest.mark.django_db
def test_ingest_maps_every_chunk_of_a_long_turn_back_to_its_turn(
    django_capture_on_commit_callbacks,
) -> None:  # type: ignore[no-untyped-def]
    from retrieval.models import Chunk

    convs = [conversation("a"), conversation("b")]
    with django_capture_on_commit_callbacks(execute=True):
        ingested = common.ingest(convs, "bench-test")
    census = common.chunk_census(ingested.key.tenant_id, ingested.turn_at)
    # the long answer is split
    assert census["turns_without_chunk"] == 0 and census["event_chunks"] > 8
    long_chunks = Chunk.objects.filter(
        tenant_id=ingested.key.tenant_id, session__external_id="b-b_s2", sequence_start=2
    ).select_related("session")
    assert long_chunks.count() > 1
    hits = [type("Hit", (), {"chunk": c}) for c in long_chunks]
    found, summaries = recall._found(hits, ingested.turn_at, ingested.session_of)
    assert summaries == 0 and found == [({"b_s2_2"}, "b_s2")] * len(hits)
    roles = set(
        Chunk.objects.filter(tenant_id=ingested.key.tenant_id).values_list("role", flat=True)
    )
    assert roles == {"user", "assistant"}
    # A second ingest with the data kept appends nothing.
    again = common.ingest(convs, "bench-test")
    assert again.appended_sessions == 0 and again.turn_at == ingested.turn_at


@pytest.mark.django_db
def test_from_a_new_session_a_question_reaches_its_users_conversations_only(  # type: ignore[no-untyped-def]
    monkeypatch, django_capture_on_commit_callbacks
) -> None:
    """--from-new-session: each conversation has its user; asked from a new, empty session of that
    user with default parameters, the question finds its evidence and never the other user's
    (the same words)."""
    from retrieval.embedders import get_embedder

    monkeypatch.setattr(common, "OWNED", True)
    convs = [conversation(c, [question(f"q{c}", [f"{c}_s1_1"], [f"{c}_s1"])]) for c in ("a", "b")]
    with django_capture_on_commit_callbacks(execute=True):
        ingested = common.ingest(convs, "bench-new-session")
    sessions = recall.new_sessions(ingested, convs)
    assert sessions == {"a": "a-new", "b": "b-new"}
    questions = recall.questions_of(convs, {})
    vectors = get_embedder().embed([q.question["question"] for q in questions])
    recall.PER_QUESTION.clear()
    figures, _ = recall.evaluate(
        ingested, questions, vectors, ["hybrid-weighted"], sessions=sessions
    )
    assert figures["hybrid-weighted new-session"]["overall"]["turn@10"] == 1.0
    for asked in recall.PER_QUESTION:
        assert asked["found_sessions"] and {s[0] for s in asked["found_sessions"]} == {
            asked["conversation"]
        }
