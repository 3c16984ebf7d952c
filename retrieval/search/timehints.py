"""Calendar references in a query ("in June", "in March 2023", "on 13 October 2023", "during 2022").

A memory is dated (when the message was written); a question that names a date usually asks
about what was said around then. Search turns these references into time hints: a soft
preference for memories written within them (never a filter: the date may be about something
else, and an explicit since/until is the filter). Only absolute references are read — a day, a
month with or without a year, a year — never relative ones ("last week"), whose anchor is
ambiguous. Dates are read in UTC.

with_time_hints is the ranking stage that applies them, hint_where the SQL that fetches the
best matches written within them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from retrieval.search.request import Candidate
from retrieval.search.sql import select_rows

MONTHS = {
    name: index
    for index, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")],
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
_LEAD = r"(?:in|on|of|during|since|until|till|by|before|after|from|early|late|mid|around|last|this|next)"
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
    re.compile(rf"\b{_LEAD}\s+(?:the\s+)?(?:(?:early|late|mid)[\s-]+)?(?P<month>{_MONTH})\b", re.IGNORECASE),
    # in 2023
    re.compile(rf"\b(?:{_LEAD}|year)\s+(?:the\s+year\s+)?{_YEAR}\b", re.IGNORECASE),
]


@dataclass(frozen=True)
class TimeHint:
    """Either an interval [start, end) or, when no year is named, a month (and day) of any year."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None
    day: int | None = None

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
            ranges = [TimeHint(start=r[0], end=r[1]).sql(column) for r in map(self._within, years) if r is not None]
            if not ranges:
                return "false", []
            return "(" + " OR ".join(sql for sql, _ in ranges) + ")", [p for _, params in ranges for p in params]
        month = f"extract(month FROM {column} AT TIME ZONE 'UTC') = %s"
        if self.day is None:
            return f"({month})", [self.month]
        return f"({month} AND abs(extract(day FROM {column} AT TIME ZONE 'UTC') - %s) <= 1)", [self.month, self.day]

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
            # The day itself, and the day either side (time zones; "on the 13th" said late on the 12th).
            return TimeHint(start=start - timedelta(days=1), end=start + timedelta(days=2))
        if year is not None and month is not None:
            return TimeHint(start=datetime(year, month, 1, tzinfo=UTC), end=_month_end(year, month))
        if year is not None:
            return TimeHint(start=datetime(year, 1, 1, tzinfo=UTC), end=datetime(year + 1, 1, 1, tzinfo=UTC))
        if month is not None:
            if day is not None:
                datetime(2000, month, day)  # a real day of that month (2000: leap year)
            return TimeHint(month=month, day=day)
    except ValueError:  # 31 February and the like: not a date
        return None
    return None


def time_hints(query: str, *, limit: int = 4) -> list[TimeHint]:
    """The calendar references of `query`, most specific first, each text span read once."""
    taken: list[tuple[int, int]] = []
    hints: list[TimeHint] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(query):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            groups = match.groupdict()
            month = MONTHS.get((groups.get("month") or "").lower().rstrip("."))
            day_text = groups.get("day") or groups.get("day2")
            year_text = groups.get("year")
            hint = _hint(month, int(day_text) if day_text else None, int(year_text) if year_text else None)
            if hint is not None and hint not in hints:
                taken.append(span)
                hints.append(hint)
    return hints[:limit]


def with_time_hints(scores: dict[int, float], chunks: dict[int, Candidate], hints: list[TimeHint],
                    weight: float) -> dict[int, float]:
    """Add `weight` × the best score to results written within a date the query names.

    Scale-free (weighted and rrf scores differ in scale) and additive: a result outside the
    named time still ranks by its match, only ties and near-ties go to the named time.
    """
    if weight <= 0.0 or not hints or not scores or max(scores.values()) <= 0.0:
        return scores
    bonus = weight * max(scores.values())
    out = dict(scores)
    for pk in scores:
        moment = datetime.fromtimestamp(chunks[pk].created_ts, UTC)
        if any(hint.matches(moment) for hint in hints):
            out[pk] += bonus
    return out


def hint_where(hints: list[TimeHint], years: range | None = None) -> tuple[str, list[Any]]:
    """The condition on a chunk (alias c) written within any of `hints` (`years`: see TimeHint.sql)."""
    parts, params = [], []
    for hint in hints:
        sql, hint_params = hint.sql("c.created_at", years)
        parts.append(sql)
        params.extend(hint_params)
    return "(" + " OR ".join(parts) + ")", params


# A month named without a year is read as that month of each of the data's last 30 years at
# most: the hints only lift and fetch, so older years keep their rank, never lose it.
MAX_YEARS = 30


def data_years(tenant_id: int) -> range | None:
    """The years a tenant's memories span (the newest MAX_YEARS), None when it has none: two
    probes of the (tenant, created_at) index."""
    [(first, last)] = select_rows(
        "SELECT extract(year FROM min(created_at) AT TIME ZONE 'UTC')::int, "
        "extract(year FROM max(created_at) AT TIME ZONE 'UTC')::int FROM retrieval_chunk WHERE tenant_id = %s",
        [tenant_id],
    )
    if first is None:
        return None
    return range(max(first, last - MAX_YEARS + 1), last + 1)
