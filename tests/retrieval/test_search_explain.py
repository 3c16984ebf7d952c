"""POST /search/ with "explain": true: per result, fusion's parts, the fused score
and every step that moved it, adding up to the score and rank it ended with; without explain the
response is what it was."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from retrieval.search import Candidate, SearchRequest, weights
from retrieval.search.explain import Trace
from retrieval.search.fusion import base_scores, fusion_parts
from tests.retrieval.conftest import search

SCORE_STEPS = {"feedback", "date_hint"}


def results(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.content
    return response.json()["results"]


@pytest.fixture
def garden(alice, index) -> None:
    index(
        alice,
        "garden",
        {"role": "user", "content": "I planted tomatoes and basil in the garden."},
        {"role": "assistant", "content": "Tomatoes need plenty of sun and water."},
        {"role": "user", "content": "My sister Ana visits every Sunday."},
    )
    index(
        alice,
        "work",
        {"role": "user", "content": "The quarterly report is due on Friday."},
        {"role": "user", "content": "Tomato soup at the canteen on Friday."},
    )


def _check_chain(result: dict[str, Any], rank: int) -> None:
    """The parts add up to the fused score; each score step starts where the last ended; the
    last ends at the result's score; the rank is where the result is."""
    explain = result["explain"]
    assert explain["rank"] == rank and explain["score"] == pytest.approx(result["score"], abs=1e-5)
    if explain["mode"] in ("hybrid", "text", "vector", "fuzzy"):
        assert sum(p["part"] for p in explain["parts"].values()) == pytest.approx(
            explain["fused"], abs=1e-5
        )
    score = explain["fused"]
    for step in explain["steps"]:
        if step["step"] in SCORE_STEPS:
            assert step["score_before"] == pytest.approx(score, abs=1e-5), step
            score = step["score_after"]
        else:
            assert step["rank_before"] != step["rank_after"], step
    assert score == pytest.approx(result["score"], abs=1e-5)


def test_hybrid_explain(alice, garden) -> None:
    found = results(search(alice, query="tomatoes garden", explain=True))
    assert found
    for rank, result in enumerate(found, start=1):
        _check_chain(result, rank)
        parts = result["explain"]["parts"]
        assert set(parts) == {"vector", "text"}
        assert parts["vector"]["raw"] == pytest.approx(result["scores"]["vector"], abs=1e-5)
        assert parts["text"]["raw"] == result["scores"]["text"] or (
            parts["text"]["raw"] == pytest.approx(result["scores"]["text"], abs=1e-5)
        )
        assert 0.0 <= parts["vector"]["normalised"] <= 1.0
    # The weights this query's fusion used (the request's 0.7 / 0.3, balanced): one pair per search.
    weights = {
        (r["explain"]["parts"]["vector"]["weight"], r["explain"]["parts"]["text"]["weight"])
        for r in found
    }
    assert len(weights) == 1
    ((vector_weight, text_weight),) = weights
    assert vector_weight + text_weight == pytest.approx(1.0)
    top = found[0]["explain"]
    assert top["mode"] == "hybrid" and top["fusion"] == "weighted" and top["profile"] == "default"


def test_explain_shows_the_requests_weights_when_unbalanced(
    alice, garden, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(weights, "BALANCE", 0.0)
    for result in results(search(alice, query="tomatoes garden", explain=True)):
        parts = result["explain"]["parts"]
        assert parts["vector"]["weight"] == 0.7 and parts["text"]["weight"] == 0.3


def test_weights_the_caller_sends_are_used_exactly(alice, garden, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """0.5 / 0.5 sent is 0.5 / 0.5 used; no balancing, no feedback step."""
    monkeypatch.setattr(weights, "BALANCE", 0.5)
    monkeypatch.setattr(weights, "FEEDBACK", 0.3)
    found = results(
        search(alice, query="tomatoes garden", explain=True, vector_weight=0.5, text_weight=0.5)
    )
    assert found
    for result in found:
        parts = result["explain"]["parts"]
        assert parts["vector"]["weight"] == 0.5 and parts["text"]["weight"] == 0.5
        assert "feedback" not in {step["step"] for step in result["explain"]["steps"]}
        # The vector part is the cosine to the query as asked, normalised: nothing moved it.
        assert parts["vector"]["raw"] == result["scores"]["vector"]
    balanced = results(search(alice, query="tomatoes garden", explain=True))
    # adaptive without weights
    assert {r["explain"]["parts"]["vector"]["weight"] for r in balanced} != {0.7}


def test_reranking_steps_show_in_a_hybrid_search(alice, index, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # coverage moves up any unlisted conversation's result
    monkeypatch.setattr(weights, "COVERAGE_FLOOR", 0.0)
    monkeypatch.setattr("retrieval.search.weights.COVERAGE", 0.5)  # of four places, two by coverage
    index(
        alice,
        "many",
        *[
            {"role": "user", "content": f"heron nest {i} by the lake {'again ' * i}"}
            for i in range(8)
        ],
    )
    # Each says the query's words (the relevance floor admits them, common as those words are here).
    index(alice, "other", {"role": "user", "content": "a heron flew over the river to its nest"})
    index(alice, "third", {"role": "user", "content": "grey heron chicks in a nest in spring"})
    found = results(search(alice, query="heron nest", explain=True, top_k=4))
    for rank, result in enumerate(found, start=1):
        _check_chain(result, rank)
    # Coverage gives the last places to conversations not listed yet: the other two move up.
    moved = {
        r["session"]: {s["step"]: s for s in r["explain"]["steps"]}
        for r in found
        if r["session"] != "many"
    }
    assert set(moved) == {"other", "third"}
    for steps in moved.values():
        assert steps["coverage"]["rank_after"] < steps["coverage"]["rank_before"]
        assert "feedback" in steps and steps["feedback"]["vector_before"] is not None
        # The unlisted conversations take those places in order of their evidence, which it shows.
        assert steps["coverage"]["detail"].startswith("its conversation's evidence ")
        assert "4-norm" in steps["coverage"]["detail"]


@pytest.mark.parametrize("mode", ["text", "vector", "fuzzy"])
def test_single_signal_explain(alice, garden, mode: str) -> None:
    found = results(search(alice, query="tomatoes garden", mode=mode, explain=True))
    assert found
    signal = "vector" if mode == "vector" else "text"
    for rank, result in enumerate(found, start=1):
        _check_chain(result, rank)
        assert set(result["explain"]["parts"]) == {signal}
        assert result["explain"]["parts"][signal]["raw"] == pytest.approx(
            result["scores"][signal], abs=1e-5
        )
        assert not {s["step"] for s in result["explain"]["steps"]} & {"mmr", "coverage", "feedback"}


def test_rrf_and_memory_profile_explain(alice, garden) -> None:
    for rank, result in enumerate(
        results(search(alice, query="tomatoes", fusion="rrf", explain=True)), start=1
    ):
        _check_chain(result, rank)
        assert {"rank", "part"} <= set(result["explain"]["parts"]["vector"])
    found = results(search(alice, query="tomatoes", profile="memory", explain=True))
    for rank, result in enumerate(found, start=1):
        _check_chain(result, rank)
        relevance = result["explain"]["parts"]["relevance"]
        assert relevance["weight"] == 0.4 and relevance["raw"] > 0.0


def test_a_date_the_query_names_shows_the_date_step(alice, index) -> None:
    index(
        alice,
        "june",
        {
            "role": "user",
            "content": "We hiked the ridge trail.",
            "created_at": "2023-06-10T12:00:00Z",
        },
    )
    index(
        alice,
        "winter",
        {
            "role": "user",
            "content": "Snow on the ridge trail, Sam slipped twice on that hike.",
            "created_at": "2024-01-20T12:00:00Z",
        },
    )
    found = results(search(alice, query="ridge trail hike in June 2023", explain=True))
    by_text = {r["text"]: r for r in found}
    june = by_text["We hiked the ridge trail."]["explain"]
    date_steps = [s for s in june["steps"] if s["step"] == "date_hint"]
    assert len(date_steps) == 1 and "2023-06-01 to 2023-07-01" in date_steps[0]["detail"]
    assert date_steps[0]["score_after"] > date_steps[0]["score_before"]
    winter = by_text["Snow on the ridge trail, Sam slipped twice on that hike."]["explain"]
    assert "date_hint" not in {s["step"] for s in winter["steps"]}
    assert found[0]["text"] == "We hiked the ridge trail."
    for rank, result in enumerate(found, start=1):
        _check_chain(result, rank)


def test_regex_and_exact_explain_say_how_they_order(alice, garden) -> None:
    for mode, query in (("exact", "Friday"), ("regex", "Fri(day)?")):
        found = results(search(alice, query=query, mode=mode, explain=True))
        assert len(found) == 2
        assert [r["explain"]["rank"] for r in found] == [1, 2]
        assert all(
            r["explain"]["steps"] == [] and "newest first" in r["explain"]["note"] for r in found
        )


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"mode": "text"},
        {"mode": "fuzzy"},
        {"mode": "vector"},
        {"fusion": "rrf"},
        {"profile": "memory"},
    ],
)
def test_explain_off_leaves_the_body_as_before(
    alice, garden, monkeypatch, body: dict[str, Any]
) -> None:
    # Every search counts an access, which the memory profile ranks with: hold the counts still
    # so that the three searches below see the same memory.
    monkeypatch.setattr("retrieval.search.engine.reinforce", lambda ids: None)
    plain = search(alice, query="tomatoes garden", **body).json()
    assert _same(plain, search(alice, query="tomatoes garden", explain=False, **body).json())
    assert all("explain" not in r for r in plain["results"])
    assert set(plain) == {"mode", "fusion", "scope", "profile", "results"}
    explained = search(alice, query="tomatoes garden", explain=True, **body).json()
    for result in explained["results"]:
        result.pop("explain")
    assert _same(explained, plain)  # explaining changes no score, no order


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal bodies; the scores to 1e-4 (the memory profile's decay moves with the clock between two
    requests)."""
    a, b = copy.deepcopy(a), copy.deepcopy(b)
    scores_a = [r.pop("score") for r in a["results"]]
    scores_b = [r.pop("score") for r in b["results"]]
    return a == b and scores_a == pytest.approx(scores_b, abs=1e-4)


# --- the trace on plain data (no database) -------------------------------------------------------


def _candidate(
    pk: int, session: int | None = 1, kind: str = "event", seq: int | None = None
) -> Candidate:
    return Candidate(pk, session, f"text {pk}", False, float(pk), seq, 0.5, 0.3, kind, seq)


def test_rank_steps_report_only_what_moved() -> None:
    trace = Trace(SearchRequest(tenant_id=1))
    a, b, c = _candidate(1), _candidate(2), _candidate(3)
    trace.ranks("mmr", [a, b, c], [a, c, b])
    trace.ranks("coverage", [a, c, b], [a, c])
    steps = {pk: trace.explain(pk, 1.0, 1)["steps"] for pk in (1, 2, 3)}
    assert steps[1] == []
    assert steps[3] == [{"step": "mmr", "rank_before": 3, "rank_after": 2, "detail": ""}]
    assert steps[2] == [
        {"step": "mmr", "rank_before": 2, "rank_after": 3, "detail": ""},
        {"step": "coverage", "rank_before": 3, "rank_after": None, "detail": ""},
    ]
    assert Trace.off().explain(1, 1.0, 1) is None


def test_summary_expansion_names_the_summary() -> None:
    from retrieval.search import expand_summaries

    trace = Trace(SearchRequest(tenant_id=1))
    summary = Candidate(10, 1, "summary", False, 10.0, 5, 0.5, 0.0, "summary", 1)
    other, message = _candidate(2, session=2), _candidate(3, seq=3)
    before = [summary, other, message]
    after = expand_summaries(before, trace.replaced)
    trace.ranks("summary_expansion", before, after)
    assert [c.pk for c in after] == [3, 2]
    step = trace.explain(3, 1.0, 1)["steps"][0]
    assert step["step"] == "summary_expansion" and (step["rank_before"], step["rank_after"]) == (
        3,
        1,
    )
    assert "summary chunk 10" in step["detail"]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"fusion": "rrf"},
        {"profile": "memory"},
        {"mode": "text"},
        {"mode": "fuzzy"},
        {"mode": "vector"},
        {"vector_weight": 0.2, "text_weight": 0.9},
    ],
)
def test_fusion_parts_add_up_to_the_base_score(options: dict[str, Any]) -> None:
    req = SearchRequest(tenant_id=1, **options)
    chunks = {i: _candidate(i) for i in range(1, 6)}
    vec = {1: 0.9, 2: 0.5, 3: 0.1, 5: 0.4}
    txt = {1: 2.0, 3: 7.5, 4: 1.0}
    base = base_scores(req, chunks, vec, txt)
    parts = fusion_parts(req, chunks, vec, txt, list(chunks))
    for pk in chunks:
        assert sum(p["part"] for p in parts[pk].values()) == pytest.approx(base[pk])
