"""Knowledge updates: newer_first (off by default) lists the newer of two near-tied results about
one subject from different conversations first; a reorder of search's final results only."""

from __future__ import annotations

from retrieval.search.rerank import newer_first
from tests.retrieval.test_ranking_stages import cand, pks


def test_newer_first_moves_a_newer_same_subject_result_before_the_older_within_the_margin() -> None:
    old, other, new, far = (
        cand(1, 1, ts=100.0),
        cand(4, 4, ts=400.0),
        cand(2, 2, ts=200.0),
        cand(3, 3, ts=300.0),
    )
    scores = {1: 1.0, 2: 0.85, 3: 0.5, 4: 0.9}
    sims = {(1, 2): 0.8, (1, 3): 0.8, (1, 4): 0.2}
    ordered = [old, other, new, far]
    listed, out = newer_first(ordered, scores, sims, 0.2, 0.6)
    # same subject, newer, within 20 %: just before the older one
    assert pks(listed) == [2, 1, 4, 3]
    # far: too far below; other: another subject
    assert out[2] > out[1] == 1.0 and out[3] == 0.5 and out[4] == 0.9
    # the inputs are kept
    assert scores == {1: 1.0, 2: 0.85, 3: 0.5, 4: 0.9} and pks(ordered) == [1, 4, 2, 3]
    # margin 1: any score
    assert pks(newer_first(ordered, scores, sims, 1.0, 0.6)[0]) == [2, 3, 1, 4]
    assert newer_first(ordered, scores, sims, 0.0, 0.6) == (ordered, scores)  # margin 0: off


def test_newer_first_never_moves_an_older_or_same_conversation_result_or_a_summary() -> None:
    new, old = cand(1, 1, ts=200.0), cand(2, 2, ts=100.0)
    same = cand(3, 1, ts=300.0)
    summary = cand(4, 3, ts=400.0, kind="summary")
    scores = {1: 1.0, 2: 0.95, 3: 0.99, 4: 0.98}
    sims = {(1, 2): 0.9, (1, 3): 0.9, (1, 4): 0.9}
    listed, out = newer_first([new, same, summary, old], scores, sims, 1.0, 0.6)
    assert pks(listed) == [1, 3, 4, 2] and out == scores


def test_newer_first_puts_the_newest_of_three_versions_first() -> None:
    v1, v2, v3 = cand(1, 1, ts=100.0), cand(2, 2, ts=200.0), cand(3, 3, ts=300.0)
    scores = {1: 1.0, 2: 0.97, 3: 0.95}
    sims = {(1, 2): 0.9, (1, 3): 0.9, (2, 3): 0.9}
    listed, out = newer_first([v1, v2, v3], scores, sims, 0.1, 0.6)
    assert pks(listed) == [3, 2, 1] and out[3] > out[2] > out[1]


def test_search_lists_the_newer_of_two_near_tied_versions_of_one_subject_first(
    alice, index, monkeypatch
) -> None:
    from retrieval.search import weights
    from tests.retrieval.conftest import search

    older, newer = (
        "Ann lives in Berlin with her cat Luna",
        "Ann lives in Lisbon with her cat Luna now",
    )
    index(alice, "2023", {"role": "user", "content": older, "created_at": "2023-01-10T10:00:00Z"})
    index(alice, "2024", {"role": "user", "content": newer, "created_at": "2024-01-10T10:00:00Z"})
    # a weaker match: the scale of the scores
    other = "Luna the cat sleeps on the sofa all afternoon"
    index(alice, "pets", {"role": "user", "content": other, "created_at": "2023-06-10T10:00:00Z"})

    def found() -> list[str]:
        response = search(alice, query="where does Ann live with Luna", scope="account")
        assert response.status_code == 200, response.content
        return [r["text"] for r in response.json()["results"] if r["text"] != other]

    assert found() == [newer, older]
    monkeypatch.setattr(weights, "NEWER_FIRST", 0.0)
    assert found() == [older, newer]  # by score alone the older, shorter one ranks first
