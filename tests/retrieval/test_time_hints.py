"""Dates named in a query, read (retrieval.search.timehints): calendar references, and relative ones
against the question's date; how a search ranks with them is test_ranking.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone

from retrieval.search.timehints import TimeHint, time_hints


def _when(**kw: int) -> datetime:
    return datetime(tzinfo=UTC, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("When did Melanie go camping in June?", [TimeHint(month=6)]),
        ("what did we decide in early May", [TimeHint(month=5)]),
        (
            "beach trips in 2023",
            [
                TimeHint(
                    start=_when(year=2023, month=1, day=1), end=_when(year=2024, month=1, day=1)
                )
            ],
        ),
        (
            "What did Mel paint in July 2023?",
            [
                TimeHint(
                    start=_when(year=2023, month=7, day=1), end=_when(year=2023, month=8, day=1)
                )
            ],
        ),
        (
            "budget talk in December 2023",
            [
                TimeHint(
                    start=_when(year=2023, month=12, day=1), end=_when(year=2024, month=1, day=1)
                )
            ],
        ),
        (
            "What painting did she show on October 13, 2023?",
            [
                TimeHint(
                    start=_when(year=2023, month=10, day=12), end=_when(year=2023, month=10, day=15)
                )
            ],
        ),
        (
            "the store on 1st of February, 2023",
            [
                TimeHint(
                    start=_when(year=2023, month=1, day=31), end=_when(year=2023, month=2, day=3)
                )
            ],
        ),
        ("call on Dec 5th", [TimeHint(month=12, day=5)]),
        ("in June and in August", [TimeHint(month=6), TimeHint(month=8)]),
    ],
)
def test_calendar_references_are_read(query: str, expected: list[TimeHint]) -> None:
    assert time_hints(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "May I ask what we decided?",
        "They will march on the capital",
        "the deploy at 10:30",
        "version 2023.1 of the tool",
        "order number 2023",
        "",
        "yesterday and last week",
    ],
)
def test_words_that_are_not_dates_give_no_hint(query: str) -> None:
    assert time_hints(query) == []


# Thursday 26 November 2026, 15:00 UTC: when the questions below are asked.
AS_OF = datetime(2026, 11, 26, 15, tzinfo=UTC)


def _days(start: tuple[int, int, int], end: tuple[int, int, int], said: str) -> TimeHint:
    return TimeHint(start=datetime(*start, tzinfo=UTC), end=datetime(*end, tzinfo=UTC), said=said)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # One day keeps the day either side, as a named day does.
        ("what did we say yesterday?", _days((2026, 11, 24), (2026, 11, 27), "yesterday")),
        ("the movie last night", _days((2026, 11, 24), (2026, 11, 27), "last night")),
        (
            "the day before yesterday",
            _days((2026, 11, 23), (2026, 11, 26), "the day before yesterday"),
        ),
        ("what I cooked today", _days((2026, 11, 25), (2026, 11, 28), "today")),
        ("the call 5 days ago", _days((2026, 11, 20), (2026, 11, 23), "5 days ago")),
        # "N units ago": a window around that moment, wider as N grows.
        ("the talk 20 days ago", _days((2026, 11, 3), (2026, 11, 10), "20 days ago")),
        ("a week ago", _days((2026, 11, 15), (2026, 11, 24), "a week ago")),
        ("the hike three weeks ago", _days((2026, 10, 30), (2026, 11, 12), "three weeks ago")),
        ("a couple of months ago", _days((2026, 9, 6), (2026, 10, 17), "a couple of months ago")),
        ("2 years ago", _days((2024, 5, 27), (2025, 5, 29), "2 years ago")),
        # "in the past N units": from then until the question.
        (
            "what I bought in the past two weeks",
            _days((2026, 11, 12), (2026, 11, 27), "in the past two weeks"),
        ),
        (
            "cuisines I tried over the past few months",
            _days((2026, 8, 26), (2026, 11, 27), "over the past few months"),
        ),
        ("in the last year", _days((2025, 11, 26), (2026, 11, 27), "in the last year")),
        # Calendar units: the one before the question's, or the question's own so far.
        ("the meeting last week", _days((2026, 11, 16), (2026, 11, 23), "last week")),
        ("last month's invoice", _days((2026, 10, 1), (2026, 11, 1), "last month")),
        ("the trip last year", _days((2025, 1, 1), (2026, 1, 1), "last year")),
        ("this week", _days((2026, 11, 23), (2026, 11, 27), "this week")),
        ("this month", _days((2026, 11, 1), (2026, 11, 27), "this month")),
        ("this year", _days((2026, 1, 1), (2026, 11, 27), "this year")),
        # The weekend and weekdays before the question.
        ("what did we do last weekend", _days((2026, 11, 21), (2026, 11, 23), "last weekend")),
        ("the party last Saturday", _days((2026, 11, 20), (2026, 11, 23), "last saturday")),
        ("the standup on Monday", _days((2026, 11, 22), (2026, 11, 25), "on monday")),
        ("the lunch last Thursday", _days((2026, 11, 18), (2026, 11, 21), "last thursday")),
    ],
)
def test_relative_references_are_read_against_the_question_date(
    query: str, expected: TimeHint
) -> None:
    assert time_hints(query, as_of=AS_OF) == [expected]


@pytest.mark.parametrize(
    "query",
    [
        "what did I buy recently",
        "lately I feel tired",
        "How many weeks ago did I attend the workshop?",
        "0 days ago",
        "many years ago",
    ],
)
def test_vague_relative_references_give_no_hint(query: str) -> None:
    assert time_hints(query, as_of=AS_OF) == []


def test_a_week_of_a_named_date_is_not_the_question_dates_week() -> None:
    august = [
        TimeHint(start=_when(year=2023, month=8, day=1), end=_when(year=2023, month=9, day=1))
    ]
    assert time_hints("Where was she during the last week of August 2023?", as_of=AS_OF) == august
    assert time_hints(
        "the project she finished last week before 23 January, 2023", as_of=AS_OF
    ) == [TimeHint(start=_when(year=2023, month=1, day=22), end=_when(year=2023, month=1, day=25))]
    assert time_hints("What did Maria do last weekend before April 10, 2023?", as_of=AS_OF) == [
        TimeHint(start=_when(year=2023, month=4, day=9), end=_when(year=2023, month=4, day=12))
    ]
    assert time_hints("What did she finish last Friday on 23 January, 2022?", as_of=AS_OF) == [
        TimeHint(start=_when(year=2022, month=1, day=22), end=_when(year=2022, month=1, day=25))
    ]
    # Words after the reference that name no date leave it relative.
    assert time_hints("what I planted in the past two weeks in my garden", as_of=AS_OF) == [
        _days((2026, 11, 12), (2026, 11, 27), "in the past two weeks")
    ]


def test_relative_and_absolute_references_together() -> None:
    assert time_hints("yesterday and in March 2023", as_of=AS_OF) == [
        _days((2026, 11, 24), (2026, 11, 27), "yesterday"),
        TimeHint(start=_when(year=2023, month=3, day=1), end=_when(year=2023, month=4, day=1)),
    ]


def test_calendar_edges_of_relative_references() -> None:
    # A month back from 31 March is the end of February; January's last month is December.
    assert time_hints("a month ago", as_of=datetime(2023, 3, 31, 9, tzinfo=UTC)) == [
        _days((2023, 2, 13), (2023, 3, 16), "a month ago")
    ]
    assert time_hints("a year ago", as_of=datetime(2024, 2, 29, tzinfo=UTC)) == [
        _days((2022, 8, 29), (2023, 8, 31), "a year ago")
    ]
    assert time_hints("last month", as_of=datetime(2024, 1, 10, tzinfo=UTC)) == [
        _days((2023, 12, 1), (2024, 1, 1), "last month")
    ]
    # On a Saturday, "last weekend" is the one before; on a Monday, "on Monday" is a week back.
    assert time_hints("last weekend", as_of=datetime(2026, 11, 28, 12, tzinfo=UTC)) == [
        _days((2026, 11, 21), (2026, 11, 23), "last weekend")
    ]
    assert time_hints("on Monday", as_of=datetime(2026, 11, 23, 12, tzinfo=UTC)) == [
        _days((2026, 11, 15), (2026, 11, 18), "on monday")
    ]
    # A naive moment is UTC; another zone is read in UTC (23:30 in New York is the next day there).
    assert time_hints("yesterday", as_of=datetime(2026, 11, 26, 15)) == time_hints(
        "yesterday", as_of=AS_OF
    )
    new_york = datetime(2026, 11, 26, 23, 30, tzinfo=timezone.get_fixed_timezone(-300))
    assert time_hints("yesterday", as_of=new_york) == [
        _days((2026, 11, 25), (2026, 11, 28), "yesterday")
    ]


def test_relative_references_past_the_calendar_give_no_hint() -> None:
    assert time_hints("2 years ago", as_of=datetime(1, 6, 1, tzinfo=UTC)) == []
    assert time_hints("yesterday", as_of=datetime(1, 1, 1, tzinfo=UTC)) == []
    assert time_hints("this year", as_of=datetime(9999, 12, 31, tzinfo=UTC)) == []


def test_an_impossible_day_falls_back_to_its_month() -> None:
    assert time_hints("on 31 February 2023") == [
        TimeHint(start=_when(year=2023, month=2, day=1), end=_when(year=2023, month=3, day=1))
    ]


def test_hints_match_moments() -> None:
    june = TimeHint(month=6)
    assert june.matches(_when(year=2021, month=6, day=30)) and june.matches(
        _when(year=2023, month=6, day=1)
    )
    assert not june.matches(_when(year=2023, month=7, day=1))
    day = time_hints("on 13 October 2023")[0]
    assert day.matches(_when(year=2023, month=10, day=14, hour=23))
    assert not day.matches(_when(year=2023, month=10, day=15))
    assert TimeHint(month=12, day=5).matches(_when(year=2020, month=12, day=6))
    assert not TimeHint(month=12, day=5).matches(_when(year=2020, month=12, day=7))
