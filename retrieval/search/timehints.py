"""Calendar references in a query ("in June", "in March 2023", "on 13 October 2023", "during 2022").

A memory is dated (when the message was written); a question that names a date usually asks
about what was said around then. Search turns these references into time hints: a soft
preference for memories written within them (never a filter: the date may be about something
else, and an explicit since/until is the filter). Absolute references are read as they are: a
day, a month with or without a year, a year. Relative ones ("yesterday", "last week", "three
months ago", "last Saturday", "in the past two weeks") are read against the moment the question is
asked: the search's `as_of` (a client replaying or importing a conversation passes the question's
own date), else the time of the search. Vague ones ("recently", "lately") are not read: a window
for them would lift everything of the last weeks over what matches. Dates are read in UTC.

with_time_hints is the ranking stage that applies them, hint_where the SQL that fetches the
best matches written within them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from retrieval.search.request import Candidate
from retrieval.search.statements import select_rows

MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_DAY2 = r"(?P<day2>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
# A month name counts only with a day or year beside it, or after a word that introduces a time
# ("in May", "since March"), so "May I ask" or "march on" are not dates.
_LEAD = r"(?:in|on|of|during|since|until|till|by|before|after|from|early|late|mid|around|last|this|next)"  # noqa: E501
_PATTERNS = [
    # 13 October 2023, 13th of October, 2023
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?(?P<month>{_MONTH})\.?,?\s+{_YEAR}\b", re.IGNORECASE),
    # October 13, 2023 / Oct 13th 2023
    re.compile(rf"\b(?P<month>{_MONTH})\.?\s+{_DAY2},?\s+{_YEAR}\b", re.IGNORECASE),
    # October 2023
    re.compile(rf"\b(?P<month>{_MONTH})\.?,?\s+{_YEAR}\b", re.IGNORECASE),
    # 13 October / October 13 (no year)
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?(?P<month>{_MONTH})\b", re.IGNORECASE),
    re.compile(rf"\b(?P<month>{_MONTH})\.?\s+{_DAY2}\b(?!\s*[:.]\d)", re.IGNORECASE),
    # in June
    re.compile(
        rf"\b{_LEAD}\s+(?:the\s+)?(?:(?:early|late|mid)[\s-]+)?(?P<month>{_MONTH})\b", re.IGNORECASE
    ),
    # in 2023
    re.compile(rf"\b(?:{_LEAD}|year)\s+(?:the\s+year\s+)?{_YEAR}\b", re.IGNORECASE),
]


# Kinds whose created_at is when the memory was made from others, not when what it says was said.
UNDATED_KINDS = ("summary",)


@dataclass(frozen=True)
class TimeHint:
    """Either an interval [start, end) or, when no year is named, a month (and day) of any year."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None
    day: int | None = None
    said: str = ""  # a relative reference: its words, as the query says them ("last week")

    def matches(self, moment: datetime) -> bool:
        if self.start is not None and self.end is not None:
            return self.start <= moment < self.end
        if self.month is not None and moment.month != self.month:
            return False
        return self.day is None or abs(moment.day - self.day) <= 1

    def sql(self, column: str, years: range | None = None) -> tuple[str, list[object]]:
        """The condition on `column`. A month of any year, given the `years` the data spans, is a
        range per year: ranges an index on the column reads, where extract(month) makes any
        filter read every row of the scope."""
        if self.start is not None and self.end is not None:
            return f"({column} >= %s AND {column} < %s)", [self.start, self.end]
        if years is not None and self.month is not None:
            ranges = [
                TimeHint(start=r[0], end=r[1]).sql(column)
                for r in map(self._within, years)
                if r is not None
            ]
            if not ranges:
                return "false", []
            return "(" + " OR ".join(sql for sql, _ in ranges) + ")", [
                p for _, params in ranges for p in params
            ]
        month = f"extract(month FROM {column} AT TIME ZONE 'UTC') = %s"
        if self.day is None:
            return f"({month})", [self.month]
        return f"({month} AND abs(extract(day FROM {column} AT TIME ZONE 'UTC') - %s) <= 1)", [
            self.month,
            self.day,
        ]

    def _within(self, year: int) -> tuple[datetime, datetime] | None:
        """This month (and day, ± 1 within the month) of `year` as [start, end), as matches()
        reads it; None when that month of that year has no such days."""
        assert self.month is not None
        first, after = datetime(year, self.month, 1, tzinfo=UTC), _month_end(year, self.month)
        if self.day is None:
            return first, after
        start = max(first, first + timedelta(days=self.day - 2))
        end = min(after, first + timedelta(days=self.day + 1))
        return (start, end) if start < end else None


def _month_end(year: int, month: int) -> datetime:
    return datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)


def _hint(month: int | None, day: int | None, year: int | None) -> TimeHint | None:
    try:
        if year is not None and month is not None and day is not None:
            start = datetime(year, month, day, tzinfo=UTC)
            # The day itself, and the day either side (time zones; "on the 13th" said late on the
            # 12th).
            return TimeHint(start=start - timedelta(days=1), end=start + timedelta(days=2))
        if year is not None and month is not None:
            return TimeHint(start=datetime(year, month, 1, tzinfo=UTC), end=_month_end(year, month))
        if year is not None:
            return TimeHint(
                start=datetime(year, 1, 1, tzinfo=UTC), end=datetime(year + 1, 1, 1, tzinfo=UTC)
            )
        if month is not None:
            if day is not None:
                datetime(2000, month, day)  # a real day of that month (2000: leap year)
            return TimeHint(month=month, day=day)
    except ValueError:  # 31 February and the like: not a date
        return None
    return None


def time_hints(query: str, *, as_of: datetime | None = None, limit: int = 4) -> list[TimeHint]:
    """The calendar references of `query`, most specific first, each text span read once; the
    relative ones too when `as_of` (when the question is asked) is given."""
    taken: list[tuple[int, int]] = []
    hints: list[TimeHint] = []
    if as_of is not None:
        hints = _relative_hints(query, utc(as_of), taken)
    for pattern in _PATTERNS:
        for match in pattern.finditer(query):
            span = match.span()
            if _overlaps(span, taken):
                continue
            groups = match.groupdict()
            month = MONTHS.get((groups.get("month") or "").lower().rstrip("."))
            day_text = groups.get("day") or groups.get("day2")
            year_text = groups.get("year")
            hint = _hint(
                month, int(day_text) if day_text else None, int(year_text) if year_text else None
            )
            if hint is not None and hint not in hints:
                taken.append(span)
                hints.append(hint)
    return hints[:limit]


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    """Whether `span` of the query overlaps a span already read as a date."""
    return any(span[0] < end and start < span[1] for start, end in taken)


def utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive one is taken as UTC already."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# --- relative references, read against the moment the question is asked ----------------------

_COUNTS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 4,
}
_COUNT = (
    r"(?P<count>\d{1,3}|"
    + "|".join(
        sorted((re.escape(c).replace(r"\ ", r"\s+") for c in _COUNTS), key=len, reverse=True)
    )
    + ")"
)
_UNIT = r"(?P<unit>day|week|month|year)s?"
WEEKDAYS = {
    name: index
    for index, name in enumerate(
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    )
}
_WEEKDAY = "|".join(WEEKDAYS)
# "last week of August", "last weekend before April 10", "last Friday on 23 January": a time
# of a named date, not of the question's (the named date is read as such).
_NOT_OF_A_DATE = rf"(?!\s+(?:of|in|on|before|after|around)\s+(?:the\s+)?(?:\d|(?:{_MONTH})\b))"
_RELATIVE = [
    (
        "days_back",
        re.compile(rf"\b(?:the\s+)?day\s+before\s+yesterday\b{_NOT_OF_A_DATE}", re.IGNORECASE),
        2,
    ),
    ("days_back", re.compile(rf"\b(?:yesterday|last\s+night)\b{_NOT_OF_A_DATE}", re.IGNORECASE), 1),
    (
        "days_back",
        re.compile(
            rf"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b{_NOT_OF_A_DATE}",
            re.IGNORECASE,
        ),
        0,
    ),
    ("ago", re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b{_NOT_OF_A_DATE}", re.IGNORECASE), None),
    (
        "past",
        re.compile(
            rf"\b(?:in|over|during|within|for)\s+the\s+(?:past|last|previous)\s+(?:{_COUNT}\s+)?{_UNIT}\b{_NOT_OF_A_DATE}",
            re.IGNORECASE,
        ),
        None,
    ),
    (
        "weekend",
        re.compile(
            rf"\b(?:last|this\s+past|over\s+the|on\s+the)\s+weekend\b{_NOT_OF_A_DATE}",
            re.IGNORECASE,
        ),
        None,
    ),
    (
        "weekday",
        re.compile(
            rf"\b(?:last|on|this\s+past|past)\s+(?P<weekday>{_WEEKDAY})\b{_NOT_OF_A_DATE}",
            re.IGNORECASE,
        ),
        None,
    ),
    (
        "previous",
        re.compile(
            rf"\b(?:last|previous)\s+(?P<unit>week|month|year)\b{_NOT_OF_A_DATE}", re.IGNORECASE
        ),
        None,
    ),
    (
        "current",
        re.compile(rf"\bthis\s+(?P<unit>week|month|year)\b{_NOT_OF_A_DATE}", re.IGNORECASE),
        None,
    ),
]


def _relative_hints(query: str, now: datetime, taken: list[tuple[int, int]]) -> list[TimeHint]:
    """The relative references of `query` as intervals around `now` (UTC); their spans are added
    to `taken`. A reference whose interval falls outside the calendar gives none."""
    hints: list[TimeHint] = []
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for kind, pattern, days in _RELATIVE:
        for match in pattern.finditer(query):
            span = match.span()
            if _overlaps(span, taken):
                continue
            try:
                interval = _relative(kind, match.groupdict(), days, today)
            except (ValueError, OverflowError):  # before year 1 or after 9999
                interval = None
            if interval is None:
                continue
            hint = TimeHint(
                start=interval[0], end=interval[1], said=" ".join(match.group(0).split()).lower()
            )
            taken.append(span)
            if hint not in hints:
                hints.append(hint)
    return hints


def _relative(
    kind: str, groups: dict[str, str | None], days: int | None, today: datetime
) -> tuple[datetime, datetime] | None:
    """[start, end) of one relative reference. A single day keeps the day either side, as a named
    day does (time zones); "N units ago" is a window around that moment, wider as N grows, since
    people round ("three weeks ago" may be two or four)."""
    day = timedelta(days=1)
    unit = (groups.get("unit") or "").lower()
    count_text = " ".join((groups.get("count") or "").lower().split())
    count = int(count_text) if count_text.isdigit() else _COUNTS.get(count_text, 1)
    if kind == "days_back":
        assert days is not None
        return _around_day(today - days * day)
    if kind == "ago":
        if count == 0:
            return None
        if unit == "day":
            return _around_day(today - count * day, spread=max(1, round(0.15 * count)))
        if unit == "week":
            centre, half = today - 7 * count * day, (3 + count) * day
        elif unit == "month":
            centre, half = _months_back(today, count), (10 + 5 * count) * day
        else:
            centre, half = _months_back(today, 12 * count), 183 * day
        return centre - half, centre + half + day
    if kind == "past":
        start = {
            "day": today - count * day,
            "week": today - 7 * count * day,
            "month": _months_back(today, count),
            "year": _months_back(today, 12 * count),
        }[unit]
        return start, today + day
    if kind == "weekend":
        back = (today.weekday() - 5) % 7 or 7  # the Saturday before today (today's, a week back)
        saturday = today - back * day
        return saturday, saturday + 2 * day
    if kind == "weekday":
        back = (today.weekday() - WEEKDAYS[(groups.get("weekday") or "").lower()]) % 7 or 7
        return _around_day(today - back * day)
    start = {
        "week": today - today.weekday() * day,
        "month": today.replace(day=1),
        "year": today.replace(month=1, day=1),
    }[unit]
    if kind == "current":
        return start, today + day
    return {
        "week": (start - 7 * day, start),
        "month": (_months_back(start, 1), start),
        "year": (start.replace(year=start.year - 1), start),
    }[unit]


def _around_day(start: datetime, spread: int = 1) -> tuple[datetime, datetime]:
    """The day starting at `start`, and `spread` days either side."""
    return start - timedelta(days=spread), start + timedelta(days=1 + spread)


def _months_back(moment: datetime, months: int) -> datetime:
    """`moment` `months` calendar months earlier, its day clipped to that month's last."""
    index = moment.year * 12 + moment.month - 1 - months
    year, month = divmod(index, 12)
    last = (_month_end(year, month + 1) - timedelta(days=1)).day
    return moment.replace(year=year, month=month + 1, day=min(moment.day, last))


def with_time_hints(
    scores: dict[int, float], chunks: dict[int, Candidate], hints: list[TimeHint], weight: float
) -> dict[int, float]:
    """Add `weight` × the best score to results written within a date the query names.

    Scale-free (weighted and rrf scores differ in scale) and additive: a result outside the
    named time still ranks by its match, only ties and near-ties go to the named time. Summaries
    take none: a summary is dated when it was made, not when its messages were written (an
    imported history is summarised today), and its messages take its place when they rank.
    """
    if weight <= 0.0 or not hints or not scores or max(scores.values()) <= 0.0:
        return scores
    bonus = weight * max(scores.values())
    out = dict(scores)
    for pk in scores:
        if chunks[pk].kind in UNDATED_KINDS:
            continue
        moment = datetime.fromtimestamp(chunks[pk].created_ts, UTC)
        if any(hint.matches(moment) for hint in hints):
            out[pk] += bonus
    return out


def hint_where(hints: list[TimeHint], years: range | None = None) -> tuple[str, list[Any]]:
    """The condition on a chunk (alias c) written within any of `hints` (`years`: see TimeHint.sql),
    summaries excepted (with_time_hints)."""
    parts, params = [], []
    for hint in hints:
        sql, hint_params = hint.sql("c.created_at", years)
        parts.append(sql)
        params.extend(hint_params)
    undated = ", ".join(f"'{kind}'" for kind in UNDATED_KINDS)
    return f"(c.kind NOT IN ({undated}) AND (" + " OR ".join(parts) + "))", params


# A month named without a year is read as that month of each of the data's last 30 years at
# most: the hints only lift and fetch, so older years keep their rank, never lose it.
MAX_YEARS = 30


def data_years(tenant_id: int) -> range | None:
    """The years a tenant's memories span (the newest MAX_YEARS), None when it has none: two
    probes of the (tenant, created_at) index."""
    [(first, last)] = select_rows(
        "SELECT extract(year FROM min(created_at) AT TIME ZONE 'UTC')::int, extract(year FROM"
        " max(created_at) AT TIME ZONE 'UTC')::int FROM retrieval_chunk WHERE tenant_id = %s",
        [tenant_id],
    )
    if first is None:
        return None
    return range(max(first, last - MAX_YEARS + 1), last + 1)
