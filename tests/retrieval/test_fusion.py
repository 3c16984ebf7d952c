"""Fusion on plain data (retrieval.search.fusion): no database, candidates built by hand."""

from __future__ import annotations

import pytest

from retrieval.search import weights
from retrieval.search.fusion import (
    RRF_K,
    balanced_weights,
    base_scores,
    by_score,
    feedback_documents,
    fuse,
    minmax,
    peakedness,
)
from retrieval.search.request import Candidate, SearchRequest


def cand(
    pk: int,
    session: int | None = 1,
    *,
    ts: float = 0.0,
    seq_end: int | None = None,
    relevance: float = 0.0,
) -> Candidate:
    return Candidate(
        pk=pk,
        session_id=session,
        text=f"t{pk}",
        contextual=False,
        created_ts=ts,
        sequence_end=seq_end,
        importance=0.5,
        relevance=relevance,
    )


CHUNKS = {1: cand(1, 1), 2: cand(2, 2), 3: cand(3, 2)}
VEC = {1: 0.9, 2: 0.5, 3: 0.1}
TXT = {2: 4.0, 3: 2.0}  # 1 has no text match


@pytest.fixture(autouse=True)
def _unbalanced(monkeypatch: pytest.MonkeyPatch) -> None:
    # the request's weights as sent (balance: its own tests)
    monkeypatch.setattr(weights, "BALANCE", 0.0)


def test_minmax_scales_to_the_unit_interval() -> None:
    assert minmax({}) == {}
    assert minmax({1: 3.0, 2: 3.0}) == {1: 1.0, 2: 1.0}  # no spread: every one counts fully
    assert minmax({1: 2.0, 2: 4.0, 3: 3.0}) == {1: 0.0, 2: 1.0, 3: 0.5}


def test_weighted_fusion_adds_the_normalised_scores() -> None:
    fused = fuse(SearchRequest(tenant_id=1, vector_weight=0.7, text_weight=0.3), CHUNKS, VEC, TXT)
    # vec 0.9/0.5/0.1 -> 1/0.5/0; txt 4/2 -> 1/0, missing -> 0.
    assert fused == pytest.approx({1: 0.7, 2: 0.65, 3: 0.0})
    text_heavy = fuse(
        SearchRequest(tenant_id=1, vector_weight=0.3, text_weight=0.7), CHUNKS, VEC, TXT
    )
    assert text_heavy == pytest.approx({1: 0.3, 2: 0.85, 3: 0.0})


def test_rrf_adds_reciprocal_ranks() -> None:
    fused = fuse(SearchRequest(tenant_id=1, fusion="rrf"), CHUNKS, VEC, TXT)
    assert fused == pytest.approx(
        {
            1: 1 / (RRF_K + 1),
            2: 1 / (RRF_K + 2) + 1 / (RRF_K + 1),
            3: 1 / (RRF_K + 3) + 1 / (RRF_K + 2),
        }
    )
    assert sorted(fused, key=lambda pk: -fused[pk]) == [2, 3, 1]


def test_single_signal_modes_rank_on_their_own_score() -> None:
    assert fuse(SearchRequest(tenant_id=1, mode="vector"), CHUNKS, VEC, TXT) == VEC
    assert fuse(SearchRequest(tenant_id=1, mode="text"), CHUNKS, VEC, TXT) == {
        1: 0.0,
        2: 4.0,
        3: 2.0,
    }


def test_memory_profile_adds_the_decayed_relevance_capped_at_one() -> None:
    chunks = {1: cand(1, relevance=2.0), 2: cand(2, relevance=0.5), 3: cand(3, relevance=0.0)}
    fused = fuse(SearchRequest(tenant_id=1, profile="memory"), chunks, VEC, TXT)
    # 0.3 text + 0.3 semantic + 0.4 relevance
    assert fused == pytest.approx({1: 0.3 + 0.4, 2: 0.3 + 0.15 + 0.2, 3: 0.0})


def test_by_score_breaks_ties_by_recency_then_message_then_id() -> None:
    chunks = [
        cand(1, ts=10.0, seq_end=1),
        cand(2, ts=20.0, seq_end=1),
        cand(3, ts=20.0, seq_end=5),
        cand(4, ts=20.0, seq_end=5),
        cand(5, ts=0.0),
    ]
    scores = {1: 0.5, 2: 0.5, 3: 0.5, 4: 0.5, 5: 0.9}
    assert [c.pk for c in by_score(chunks, scores)] == [5, 4, 3, 2, 1]


def test_feedback_documents_are_the_first_pass_best() -> None:
    req = SearchRequest(tenant_id=1, vector_weight=0.7, text_weight=0.3)
    assert feedback_documents(req, CHUNKS, VEC, TXT, 2) == [1, 2]
    assert feedback_documents(req, CHUNKS, VEC, TXT, 10) == [1, 2, 3]
    text_heavy = SearchRequest(tenant_id=1, vector_weight=0.3, text_weight=0.7)
    assert feedback_documents(text_heavy, CHUNKS, VEC, TXT, 1) == [2]


def msg(pk: int, session: int | None, seq: int | None, kind: str = "event") -> Candidate:
    return Candidate(
        pk=pk,
        session_id=session,
        text=f"t{pk}",
        contextual=False,
        created_ts=0.0,
        sequence_end=seq,
        importance=0.5,
        kind=kind,
        sequence_start=seq,
    )


def test_feedback_reads_one_chunk_of_a_message() -> None:
    # Chunks 1 and 2 are one long message (session 1, message 5), best and second best; 3 another.
    chunks = {1: msg(1, 1, 5), 2: msg(2, 1, 5), 3: msg(3, 1, 6), 4: msg(4, None, None, kind="note")}
    vec = {1: 0.9, 2: 0.8, 3: 0.3, 4: 0.2}
    req = SearchRequest(tenant_id=1, vector_weight=1.0, text_weight=0.0)
    assert feedback_documents(req, chunks, vec, {}, 2) == [1, 3]
    assert feedback_documents(req, chunks, vec, {}, 5) == [1, 3, 4]


def test_peakedness_is_how_far_the_best_stands_out_from_the_next_ten() -> None:
    assert peakedness({i: 1.0 for i in range(12)}, 12) == pytest.approx(0.0)  # all alike: flat
    assert peakedness({1: 1.0, 2: 0.0}, 12) == pytest.approx(1.0)  # one match; the rest count 0
    # mean of 0.95..0.5
    assert peakedness({i: 1.0 - i / 20 for i in range(30)}, 30) == pytest.approx(1.0 - 0.725)
    assert peakedness({1: 1.0, 2: 0.5}, 2) == pytest.approx(0.5)  # fewer than ten after the best
    assert peakedness({1: 1.0}, 1) == 0.0 and peakedness({}, 0) == 0.0


def test_balanced_weights_move_toward_the_peaked_list_and_keep_their_sum(
    settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    req = SearchRequest(tenant_id=1, vector_weight=0.7, text_weight=0.3)
    flat = {i: 1.0 - i / 100 for i in range(20)}  # the next ten all near the best
    peaked = {0: 1.0, 1: 0.1}
    assert balanced_weights(req, 20, flat, peaked) == (0.7, 0.3)  # off: the request's
    monkeypatch.setattr(weights, "BALANCE", 0.25)
    to_text = balanced_weights(req, 20, flat, peaked)
    to_vector = balanced_weights(req, 20, peaked, flat)
    assert to_text[1] > 0.3 and to_vector[0] > 0.7
    assert sum(to_text) == pytest.approx(1.0) and sum(to_vector) == pytest.approx(1.0)
    # A quarter of the way to the peakedness split: vector 0.7 · 0.055 against text 0.3 · 0.955.
    pv, pt = 0.7 * peakedness(flat, 20), 0.3 * peakedness(peaked, 20)
    assert to_text[0] == pytest.approx(0.75 * 0.7 + 0.25 * pv / (pv + pt))
    monkeypatch.setattr(weights, "BALANCE", 1.0)
    assert balanced_weights(req, 20, flat, peaked)[0] == pytest.approx(pv / (pv + pt))
    assert balanced_weights(req, 20, flat, {}) == (0.7, 0.3)  # no text matches: nothing to weigh
    only_vector = SearchRequest(tenant_id=1, vector_weight=1.0, text_weight=0.0)
    # a zero weight stays 0
    assert balanced_weights(only_vector, 20, flat, peaked) == pytest.approx((1.0, 0.0))


def test_a_standout_text_match_outranks_a_vector_best_among_many_alike(
    settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The vectors score chunk 1 best with seventeen others close behind (flat) and chunk 2 halfway
    down; full text finds chunk 2 far ahead of its one other match (peaked)."""
    chunks = {i: cand(i, i) for i in range(1, 21)}
    vec = {1: 0.60, 2: 0.50, 20: 0.40} | {i: 0.595 for i in range(3, 20)}
    txt = {2: 9.0, 3: 1.0}
    req = SearchRequest(tenant_id=1)
    fixed = base_scores(req, chunks, vec, txt)
    assert max(fixed, key=fixed.get) == 1
    monkeypatch.setattr(weights, "BALANCE", 0.25)
    balanced = base_scores(req, chunks, vec, txt)
    assert max(balanced, key=balanced.get) == 2
