"""bench/knowledge_updates.py's reading of a ranking: which questions count, and when the newest
evidence is first (no database)."""

from __future__ import annotations

from bench import common
from bench.knowledge_updates import Tally, evidence_order, multi_date_questions

from .test_recall_bench import conversation, question

DATES = {"old": "2023-05-01T10:00:00", "mid": "2023-06-01T10:00:00", "new": "2023-07-01T10:00:00"}


def test_newest_first_when_the_first_evidence_result_is_of_the_newest_date_retrieved() -> None:
    order = evidence_order(DATES, [{"x"}, {"new"}, {"y"}, {"old"}])
    assert (order.ordered, order.newest_first, order.newest_retrieved, order.turns_found) == (
        True,
        True,
        True,
        2,
    )
    order = evidence_order(DATES, [{"old"}, {"new"}, {"mid"}])
    assert (order.ordered, order.newest_first, order.newest_retrieved) == (True, False, True)


def test_only_the_dates_retrieved_are_compared() -> None:
    # The newest turn is missing: mid above old still counts as newest first, but not as newest
    # retrieved.
    order = evidence_order(DATES, [{"mid"}, set(), {"old"}])
    assert (order.ordered, order.newest_first, order.newest_retrieved) == (True, True, False)
    # One date retrieved (or none): not ordered, whatever its place.
    for ranking in ([{"new"}, {"x"}], [{"x"}], []):
        order = evidence_order(DATES, ranking)
        assert not order.ordered and not order.newest_first
    assert evidence_order(DATES, [{"new"}]).newest_retrieved


def test_a_result_counts_at_its_first_place_and_turns_of_one_date_share_it() -> None:
    dates = {"a1": "2023-01-01", "a2": "2023-01-01", "b": "2023-02-01"}
    assert evidence_order(dates, [{"a1"}, {"b"}, {"a2"}]).newest_first is False
    assert evidence_order(dates, [{"b"}, {"a1"}, {"b"}]).newest_first is True
    assert evidence_order(dates, [{"a1", "x"}, {"b", "a2"}]).newest_first is False


def test_questions_with_evidence_in_sessions_of_different_dates_only() -> None:
    conv = conversation(
        "a",
        [
            question("one", ["a_s1_1"], ["a_s1"]),
            question("two", ["a_s1_1", "a_s2_1"], ["a_s1", "a_s2"]),
            question("gone", ["a_s1_1", "nowhere"], ["a_s1"]),
        ],
    )
    found = multi_date_questions([conv], {})
    assert [(q.question["question_id"], dates) for q, dates in found] == [
        ("two", {"a_s1_1": "2023-01-01T10:00:00", "a_s2_1": "2023-02-01T10:00:00"})
    ]


def test_select_keeps_the_category_and_the_conversations_that_ask_it() -> None:
    convs = [
        conversation("a", [question("x", ["a_s1_1"], ["a_s1"], "knowledge-update")]),
        conversation("b", [question("y", ["b_s1_1"], ["b_s1"])]),
    ]
    assert [c["conversation_id"] for c in common.select(convs, ["knowledge-update"])] == ["a"]
    assert common.select(convs, []) == convs


def test_rates_are_over_ordered_questions_and_retrieved_over_all() -> None:
    tally = Tally()
    first = evidence_order(DATES, [{"new"}, {"old"}])
    second = evidence_order(DATES, [{"old"}, {"new"}])
    lone = evidence_order(DATES, [{"old"}])
    tally.add(("overall", "half 1"), first, first, 1.0, 1.0, 1.0)
    tally.add(("overall", "half 1"), second, lone, 2 / 3, 1.0, 1 / 3)
    tally.add(("overall", "half 2"), lone, lone, 1 / 3, 0.5, 1 / 3)
    figures = tally.figures()
    o = figures["overall"]
    assert (
        o["n"],
        o["search ordered"],
        o["search newest-first"],
        o["search newest retrieved"],
    ) == (3, 2, 0.5, 0.667)
    assert (o["ctx ordered"], o["ctx newest-first"], o["ctx newest retrieved"]) == (1, 1.0, 0.333)
    assert (
        figures["half 2"]["search newest-first"] is None and figures["half 2"]["session@10"] == 0.5
    )


def test_newest_within_k_and_a_block_dated_by_each_memory_s_own_session() -> None:
    from types import SimpleNamespace

    from bench.knowledge_updates import newest_within, shows_own_dates

    assert newest_within(DATES, [{"old"}, {"x"}, {"new"}], 3)
    assert not newest_within(DATES, [{"old"}, {"x"}, {"new"}], 2)
    item = SimpleNamespace(source="relevant", session="c-s1", text="I  moved to Lisbon")
    recent = SimpleNamespace(source="recent", session="c-s2", text="hello")
    day_of = {"c-s1": "2023-05-01", "c-s2": "2023-06-01"}
    assert shows_own_dates(
        "- (user, said 2023-05-01) I moved to Lisbon\n- **user**: hello", [item, recent], day_of
    )
    assert shows_own_dates("- (user, said 2023-05-01 10:00) I moved to Lisbon", [item], day_of)
    assert not shows_own_dates("- (user, said 2026-11-29) I moved to Lisbon", [item], day_of)
    assert not shows_own_dates("- (user, said 2026-11-29 10:00) I moved to Lisbon", [item], day_of)
    tally = Tally()
    order = evidence_order(DATES, [{"new"}])
    tally.add(("overall",), order, order, 1.0, 1.0, 1.0, 1.0, True, True)
    tally.add(("overall",), order, order, 1.0, 1.0, 1.0, 1.0, True, False)
    figures = tally.figures()["overall"]
    assert (figures["newest@5"], figures["ctx dated"], figures["newest@5 dated"]) == (1.0, 0.5, 0.5)
